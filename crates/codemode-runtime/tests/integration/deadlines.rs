//! Snapshots within bounds (issue 15 item 4, docs/threat-model.md "Deadlines"): taking a
//! snapshot of a large heap stops at its deadline (`VmError::Timeout`) or as soon as the
//! compressed size passes the limit (`None`), and a bounded snapshot that completes restores
//! like any other.

use std::time::{Duration, Instant};

use codemode_bridge::{Delivery, GuestState};
use codemode_runtime::{AbortHandle, LegBudget, Runtime, VmError, VmLimits};
use serde_json::json;

const CTX: &str = r#"{"tools":[]}"#;

/// A VM parked on one tool call with ~`mib` MiB of incompressible strings on its heap.
fn big_parked_vm(mib: usize) -> codemode_runtime::Vm {
    let limits = VmLimits {
        memory_limit_bytes: 512 * 1024 * 1024,
        ..VmLimits::default()
    };
    let rt = Runtime::global().unwrap();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let code = format!(
        "let x = 12345; const keep = [];
         for (let i = 0; i < {mib} * 16; i++) {{
           let s = '';
           for (let j = 0; j < 4096; j++) {{ x = (x * 69069 + 1) % 4294967296; s += String.fromCharCode(33 + (x >>> 16) % 90); }}
           keep.push(s.repeat(16));
         }}
         const v = await tools.call('x', {{}}); return keep.length + v;"
    );
    let budget = LegBudget::new(Duration::from_secs(120), AbortHandle::new());
    let report = codemode_runtime::on_leg_stack(|| vm.start(&code, CTX, &limits, &budget))
        .unwrap()
        .unwrap();
    assert_eq!(report.state, GuestState::Pending, "{report:?}");
    vm
}

#[test]
fn a_bounded_snapshot_stops_at_its_deadline_and_its_size_limit() {
    let mut vm = big_parked_vm(48);
    // Past the deadline after the first chunk: Timeout, long before the whole heap is done.
    let started = Instant::now();
    assert_eq!(
        vm.snapshot_bounded(u64::MAX, Instant::now()).unwrap_err(),
        VmError::Timeout
    );
    let timed_out = started.elapsed();
    // Over the size limit: None, as soon as the output passes it.
    assert!(vm
        .snapshot_bounded(1024 * 1024, Instant::now() + Duration::from_secs(60))
        .unwrap()
        .is_none());
    // Unbounded: the whole heap, which takes longer than either refusal.
    let started = Instant::now();
    let full = vm
        .snapshot_bounded(u64::MAX, Instant::now() + Duration::from_secs(60))
        .unwrap()
        .unwrap();
    let whole = started.elapsed();
    assert!(
        full.memory_bytes() > 48 * 1024 * 1024,
        "{}",
        full.memory_bytes()
    );
    assert!(
        timed_out * 4 < whole,
        "timeout after {timed_out:?}, whole {whole:?}"
    );
    // The bounded snapshot restores and continues.
    let limits = VmLimits {
        memory_limit_bytes: 512 * 1024 * 1024,
        ..VmLimits::default()
    };
    let mut restored = Runtime::global().unwrap().restore(&full, &limits).unwrap();
    let id = restored.pending()[0].id.clone();
    let budget = LegBudget::new(Duration::from_secs(60), AbortHandle::new());
    let report = codemode_runtime::on_leg_stack(|| {
        restored.deliver(
            &Delivery {
                id,
                outcome: Ok(json!(1)),
            },
            &budget,
        )
    })
    .unwrap()
    .unwrap();
    assert_eq!(
        report.state,
        GuestState::Completed {
            value: json!(48 * 16 + 1)
        }
    );
}
