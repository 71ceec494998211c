//! Fuzz target `snapshot_bytes` (docs/threat-model.md, "Fuzzing"): `Snapshot::from_bytes` on
//! corrupted snapshots (truncated, bit-flipped, spliced) never panics, and a decoded one either
//! restores or fails with a `VmError`: a snapshot's header, host table and zstd frame are all
//! checked before guest memory is touched.

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use std::time::Duration;

use codemode_runtime::{on_leg_stack, AbortHandle, LegBudget, Runtime, Snapshot, VmLimits};

#[test]
fn fuzz_snapshot_bytes() {
    let rt = Runtime::global().unwrap();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let budget = LegBudget::new(Duration::from_secs(10), AbortHandle::new());
    on_leg_stack(|| {
        vm.start(
            "const a = await tools.call('x', {n: 1}); return a;",
            r#"{"tools":[]}"#,
            &limits,
            &budget,
        )
    })
    .unwrap()
    .unwrap();
    let seed = vm.snapshot().unwrap().to_bytes();
    engine::run("snapshot_bytes", &[seed], None, &|bytes| {
        if let Ok(snapshot) = Snapshot::from_bytes(bytes) {
            let _ = on_leg_stack(|| rt.restore(&snapshot, &limits).map(|_| ()));
        }
    });
}
