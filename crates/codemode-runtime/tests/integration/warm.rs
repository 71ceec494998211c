//! Warm VMs (docs/architecture.md, "Warm VMs"): a VM that ended clean is reset in place for the
//! next run, and nothing of one run reaches the next: globals, the heap, prototypes, pending
//! promises and bridge requests, the random seed; a VM that trapped, ran out of memory or
//! timed out is never reused. Each test makes its own runtime, so the reuse counters it reads
//! are its own.

use crate::common;

use std::sync::Arc;

use codemode_bridge::GuestState;
use codemode_runtime::{Runtime, RuntimeOptions, VmError, VmLimits};
use common::{budget, value};
use serde_json::json;

const TOOLS: &str = r#"{"tools":[]}"#;

fn runtime_with(warm_vms: u32) -> Arc<Runtime> {
    Runtime::new(RuntimeOptions {
        max_live_vms: 4,
        warm_vms,
        deterministic_random: Some(vec![7, 1, 200, 33, 5, 90, 14, 250]),
        ..RuntimeOptions::default()
    })
    .expect("runtime")
}

/// Runs `code` to its first report in a VM of `rt` and drops the VM.
fn run(rt: &Arc<Runtime>, code: &str) -> Result<GuestState, VmError> {
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).expect("vm");
    let report = vm.start(code, TOOLS, &limits, &budget(5000));
    report.map(|r| r.state)
}

/// What the probe sees of a run before it: globals, prototypes, built-ins, promise jobs, the
/// random sequence.
const PROBE: &str = "return [typeof leaked, [].evil === undefined, ({}).polluted === undefined, \
    JSON.stringify({a: 1}), typeof late, typeof big, Object.keys(globalThis).length, \
    Math.random(), Math.random()]";

const POLLUTER: &str = "globalThis.leaked = 42; Array.prototype.evil = 1; \
    Object.prototype.polluted = 'x'; JSON.stringify = () => 'hijacked'; \
    Promise.resolve().then(() => { globalThis.late = 1 }); new Promise(() => {}); \
    globalThis.big = 'y'.repeat(10000); Math.random(); return 'polluted'";

#[test]
fn nothing_of_a_run_reaches_the_next_one_on_a_warm_vm() {
    // What a new instance answers (reuse off).
    let cold = runtime_with(0);
    let expected = value_of(run(&cold, PROBE));
    assert_eq!(cold.warm_reuses(), 0);
    assert_eq!(
        expected.as_array().expect("array")[..6],
        json!([
            "undefined",
            true,
            true,
            "{\"a\":1}",
            "undefined",
            "undefined"
        ])
        .as_array()
        .expect("array")[..]
    );

    let rt = runtime_with(16);
    assert_eq!(value_of(run(&rt, POLLUTER)), json!("polluted"));
    assert_eq!(rt.warm_idle(), 1);
    assert_eq!(value_of(run(&rt, PROBE)), expected);
    assert_eq!(rt.warm_reuses(), 1);
    // The same random sequence again: the seed does not carry over either.
    assert_eq!(value_of(run(&rt, PROBE)), expected);
    assert_eq!((rt.warm_reuses(), rt.warm_idle()), (2, 1));
}

fn value_of(state: Result<GuestState, VmError>) -> serde_json::Value {
    match state.expect("report") {
        GuestState::Completed { value } => value,
        other => panic!("expected completed, got {other:?}"),
    }
}

/// A run that ended with a bridge request outstanding and a continuation waiting on it leaves
/// neither to the next run, and the next run's ids start again.
#[test]
fn a_pending_request_and_its_continuation_do_not_survive_reuse() {
    let rt = runtime_with(16);
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).expect("vm");
    let report = vm
        .start(
            "tools.call('x', {}).then(() => { globalThis.resumed = 1 }); return 'left'",
            TOOLS,
            &limits,
            &budget(5000),
        )
        .expect("report");
    assert_eq!(value(report), json!("left"));
    assert_eq!(vm.pending().len(), 1);
    let first_id = vm.pending()[0].id.clone();
    drop(vm);
    assert_eq!(rt.warm_idle(), 1);

    let mut vm = rt.fresh_vm(&limits).expect("vm");
    assert_eq!(rt.warm_reuses(), 1);
    assert!(vm.pending().is_empty());
    let report = vm
        .start(
            "const p = tools.call('y', {}); return typeof resumed",
            TOOLS,
            &limits,
            &budget(5000),
        )
        .expect("report");
    assert_eq!(value(report), json!("undefined"));
    assert_eq!(vm.pending().len(), 1);
    assert_eq!(
        vm.pending()[0].id,
        first_id,
        "request numbering starts again"
    );
    // The old request id is unknown to the reused VM.
    let delivered = common::deliver(&mut vm, "nope", Ok(json!(1)));
    assert!(matches!(delivered, Err(VmError::UnknownRequest(id)) if id == "nope"));
}

/// A reused VM's memory is the image exactly: a snapshot of it has no dirty page.
#[test]
fn a_reused_vm_snapshots_like_a_new_one() {
    let rt = runtime_with(16);
    let limits = VmLimits::default();
    let mut new = rt.fresh_vm(&limits).expect("vm");
    let clean = new.snapshot().expect("snapshot");
    assert_eq!(clean.dirty_pages(), 0);
    drop(new);
    assert_eq!(
        value_of(run(
            &rt,
            "const a = []; for (let i = 0; i < 1000; i++) a.push({i}); return a.length"
        )),
        json!(1000)
    );
    let mut reused = rt.fresh_vm(&limits).expect("vm");
    assert_eq!(rt.warm_reuses(), 2);
    let snapshot = reused.snapshot().expect("snapshot");
    assert_eq!((snapshot.dirty_pages(), snapshot.memory_bytes()), (0, 0));
    assert_eq!(snapshot.to_bytes(), clean.to_bytes());
}

/// A VM stopped by its deadline, one that ran out of memory and one that failed a protocol
/// check are never kept; the run after each is clean and runs in a new instance.
#[test]
fn a_timed_out_or_out_of_memory_vm_is_never_reused() {
    let rt = runtime_with(16);
    let limits = VmLimits::default();

    // Deadline: the interrupt stops the loop; the VM is poisoned.
    let mut vm = rt.fresh_vm(&limits).expect("vm");
    let stopped = vm.start(
        "globalThis.leaked = 1; while (true) {}",
        TOOLS,
        &limits,
        &budget(50),
    );
    assert!(matches!(stopped, Err(VmError::Timeout)), "{stopped:?}");
    assert!(vm.is_poisoned());
    drop(vm);
    assert_eq!(rt.warm_idle(), 0);
    assert_eq!(
        value_of(run(&rt, "return typeof leaked")),
        json!("undefined")
    );
    assert_eq!(rt.warm_reuses(), 0);
    assert_eq!(rt.warm_idle(), 1);

    // Out of memory: the heap grew linear memory past the image, which cannot shrink.
    let small = VmLimits {
        memory_limit_bytes: 8 * 1024 * 1024,
        ..VmLimits::default()
    };
    let mut vm = rt.fresh_vm(&small).expect("vm");
    assert_eq!(rt.warm_reuses(), 1);
    let report = vm
        .start(
            "globalThis.leaked = 1; const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
            TOOLS,
            &small,
            &budget(10000),
        )
        .expect("report");
    assert!(
        matches!(&report.state, GuestState::Failed { error } if error.contains("out of memory")),
        "{:?}",
        report.state
    );
    drop(vm);
    assert_eq!(rt.warm_idle(), 0);
    assert_eq!(
        value_of(run(&rt, "return typeof leaked")),
        json!("undefined")
    );
    assert_eq!(rt.warm_reuses(), 1);
}

/// With reuse off, no VM is kept.
#[test]
fn warm_vms_zero_keeps_nothing() {
    let rt = runtime_with(0);
    for _ in 0..3 {
        assert_eq!(value_of(run(&rt, "return 1 + 2")), json!(3));
    }
    assert_eq!((rt.warm_reuses(), rt.warm_idle()), (0, 0));
}
