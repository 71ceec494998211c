//! Parked VMs kept alive (docs/architecture.md, "Parked VMs kept alive"): restoring a snapshot
//! whose VM the runtime kept continues that VM, once, with exactly the result a restore from
//! the snapshot's bytes gives; a second restore, a dropped snapshot, the count bound and a full
//! pool all fall back to the snapshot. Each test makes its own runtime, so the counters it
//! reads are its own.

use crate::common;

use std::sync::Arc;

use codemode_bridge::{GuestReport, GuestState};
use codemode_runtime::{FreshVm, Runtime, RuntimeOptions, Snapshot, Vm, VmLimits};
use common::{deliver, start_on, value};
use serde_json::json;

fn runtime(max_live_vms: u32, parked_vms: u32) -> Arc<Runtime> {
    Runtime::new(RuntimeOptions {
        max_live_vms,
        parked_vms,
        deterministic_random: Some(vec![3, 141, 59, 26, 5, 35, 89, 79]),
        ..RuntimeOptions::default()
    })
    .expect("runtime")
}

/// State built before the yield and used after it, a random number drawn on each side.
const PROGRAM: &str = "const a = [1, 2, 3]; globalThis.x = 'kept'; const r1 = Math.random(); \
    const got = await yield_control('pause'); \
    return [a.concat([4]), x, got, r1, Math.random(), Object.keys(globalThis).length]";

/// A VM of `rt` started on [`PROGRAM`], parked at its yield: the VM, its snapshot and the
/// yield's request id.
fn parked(rt: &Arc<Runtime>) -> (Vm, Snapshot, String) {
    let (mut vm, report) = start_on(rt, FreshVm::PreInit, PROGRAM, &VmLimits::default());
    assert_eq!(report.state, GuestState::Pending, "{report:?}");
    let id = report.requests[0].id.clone();
    let snapshot = vm.snapshot().expect("snapshot");
    (vm, snapshot, id)
}

/// Restores `snapshot` in `rt` and delivers `got` to the yield `id`: the run's value.
fn resume(rt: &Arc<Runtime>, snapshot: &Snapshot, id: &str, got: &str) -> serde_json::Value {
    let mut vm = rt.restore(snapshot, &VmLimits::default()).expect("restore");
    let report: GuestReport = deliver(&mut vm, id, Ok(json!(got))).expect("deliver");
    value(report)
}

/// What the run answers when restored from its snapshot's bytes (nothing kept alive).
fn expected(got: &str) -> serde_json::Value {
    let rt = runtime(4, 0);
    let (vm, snapshot, id) = parked(&rt);
    drop(vm);
    let from_bytes = Snapshot::from_bytes(&snapshot.to_bytes()).expect("bytes");
    let v = resume(&rt, &from_bytes, &id, got);
    assert_eq!(rt.parked_resumes(), 0);
    v
}

#[test]
fn a_kept_vm_continues_the_run_as_a_restore_would() {
    let want = expected("go");
    assert_eq!(want[0], json!([1, 2, 3, 4]));
    assert_eq!(want[1], "kept");
    assert_eq!(want[2], "go");

    let rt = runtime(4, 8);
    let (vm, mut snapshot, id) = parked(&rt);
    let bytes_before = snapshot.to_bytes();
    vm.keep_parked(&mut snapshot, &VmLimits::default());
    assert_eq!(rt.parked_kept(), 1);
    // Keeping the VM changes nothing of the snapshot's value or bytes.
    assert_eq!(snapshot.to_bytes(), bytes_before);
    assert_eq!(
        Snapshot::from_bytes(&bytes_before).expect("bytes"),
        snapshot
    );

    assert_eq!(resume(&rt, &snapshot, &id, "go"), want);
    assert_eq!((rt.parked_resumes(), rt.parked_kept()), (1, 0));
    // The kept VM is taken once: a second restore of the same snapshot (another delivery)
    // restores from the snapshot, which still holds the state at the yield.
    assert_eq!(resume(&rt, &snapshot, &id, "again"), expected("again"));
    assert_eq!(rt.parked_resumes(), 1);
}

#[test]
fn dropping_the_last_clone_of_the_snapshot_drops_the_kept_vm() {
    let rt = runtime(4, 8);
    let (vm, mut snapshot, _) = parked(&rt);
    vm.keep_parked(&mut snapshot, &VmLimits::default());
    let clone = snapshot.clone();
    drop(snapshot);
    assert_eq!(rt.parked_kept(), 1, "a clone still refers to it");
    drop(clone);
    assert_eq!(rt.parked_kept(), 0);
    assert_eq!(rt.parked_resumes(), 0);
}

#[test]
fn at_most_parked_vms_are_kept_the_oldest_going_first() {
    let want = expected("go");
    let rt = runtime(8, 2);
    let mut runs: Vec<(Snapshot, String)> = Vec::new();
    for _ in 0..3 {
        let (vm, mut snapshot, id) = parked(&rt);
        vm.keep_parked(&mut snapshot, &VmLimits::default());
        runs.push((snapshot, id));
    }
    assert_eq!(rt.parked_kept(), 2);
    // The oldest was dropped: it restores from its snapshot; the other two continue in place.
    assert_eq!(resume(&rt, &runs[0].0, &runs[0].1, "go"), want);
    assert_eq!(rt.parked_resumes(), 0);
    for (snapshot, id) in &runs[1..] {
        assert_eq!(resume(&rt, snapshot, id, "go"), want);
    }
    assert_eq!((rt.parked_resumes(), rt.parked_kept()), (2, 0));
}

#[test]
fn a_full_pool_takes_the_slot_of_a_kept_vm() {
    let rt = runtime(1, 8);
    let (vm, mut snapshot, id) = parked(&rt);
    vm.keep_parked(&mut snapshot, &VmLimits::default());
    assert_eq!(rt.parked_kept(), 1);
    // The kept VM holds the only slot; a new run gets it.
    let other = rt.fresh_vm(&VmLimits::default()).expect("a slot");
    assert_eq!(rt.parked_kept(), 0);
    drop(other);
    assert_eq!(resume(&rt, &snapshot, &id, "go"), expected("go"));
    assert_eq!(rt.parked_resumes(), 0);
}

#[test]
fn a_vm_is_kept_only_for_its_own_snapshot_and_limits() {
    let rt = runtime(4, 8);
    // A snapshot taken before the VM ran on is not this VM's state: not kept.
    let (mut vm, report) = start_on(
        &rt,
        FreshVm::PreInit,
        "await yield_control('a'); await yield_control('b'); return 1",
        &VmLimits::default(),
    );
    let mut early = vm.snapshot().expect("snapshot");
    let next = deliver(&mut vm, &report.requests[0].id, Ok(json!(null))).expect("deliver");
    assert_eq!(next.state, GuestState::Pending);
    vm.keep_parked(&mut early, &VmLimits::default());
    assert_eq!(rt.parked_kept(), 0);

    // Kept under other limits than the restore's: dropped, and the restore uses the snapshot.
    let (vm, mut snapshot, id) = parked(&rt);
    let other = VmLimits {
        max_output_bytes: VmLimits::default().max_output_bytes + 1,
        ..VmLimits::default()
    };
    vm.keep_parked(&mut snapshot, &other);
    assert_eq!(rt.parked_kept(), 1);
    assert_eq!(resume(&rt, &snapshot, &id, "go"), expected("go"));
    assert_eq!((rt.parked_resumes(), rt.parked_kept()), (0, 0));
}
