//! What the runtime's integration tests share: the process-wide runtime, a leg budget, a VM
//! started on a program, an answer delivered to it, and a completed run's value.

// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{Delivery, GuestReport, GuestState};
use codemode_runtime::{AbortHandle, FreshVm, LegBudget, Runtime, Vm, VmError, VmLimits};
use serde_json::Value;

/// The process-wide runtime.
pub(crate) fn runtime() -> Arc<Runtime> {
    Runtime::global().expect("runtime")
}

/// A leg budget of `ms` milliseconds that nothing aborts.
pub(crate) fn budget(ms: u64) -> LegBudget {
    LegBudget::new(Duration::from_millis(ms), AbortHandle::new())
}

/// A VM of `rt` made `how` with `limits`, started on `code` over an empty catalog within a 5 s
/// leg: the VM and its first report. Panics when the VM cannot be made or started.
pub(crate) fn start_on(
    rt: &Arc<Runtime>,
    how: FreshVm,
    code: &str,
    limits: &VmLimits,
) -> (Vm, GuestReport) {
    let mut vm = rt.fresh_vm_with(limits, how).expect("vm");
    let report = vm
        .start(code, r#"{"tools":[]}"#, limits, &budget(5000))
        .expect("report");
    (vm, report)
}

/// Delivers `outcome` (`Ok(value)` resolves, `Err(message)` rejects) for the request `id` to
/// `vm` within a 5 s leg.
pub(crate) fn deliver(
    vm: &mut Vm,
    id: &str,
    outcome: Result<Value, String>,
) -> Result<GuestReport, VmError> {
    let delivery = Delivery {
        id: id.into(),
        outcome,
    };
    vm.deliver(&delivery, &budget(5000))
}

/// The value of a completed run; panics with the state otherwise.
pub(crate) fn value(report: GuestReport) -> Value {
    match report.state {
        GuestState::Completed { value } => value,
        other => panic!("expected completed, got {other:?}"),
    }
}
