//! The settle loop carried on by the leg thread while a run's calls settle at once
//! (docs/architecture.md, "Legs that stay on their thread"): after a leg's deliveries, the
//! guest's new requests are dispatched there and, when every one settled during its dispatch,
//! delivered there too, so a run of such calls does not hop executor -> leg thread -> executor
//! per call. The checks of `Run::settle` that come before a dispatch are made here the same way;
//! any that would not simply dispatch and deliver hands the run back to the executor, which
//! makes it again and acts on it.

use std::collections::HashSet;
use std::time::Instant;

use codemode_bridge::{BridgeMethod, Delivery, GuestReport, GuestState};
use codemode_runtime::{AbortHandle, LegBudget, Vm, VmError};
use tokio::sync::mpsc::UnboundedSender;

use crate::dispatch::{Dispatched, Dispatcher};

use super::{json_len, settle_floor, Run};

/// What the leg thread needs to go on after a leg: a copy of the run's dispatch state and the
/// limits `Run::settle` checks before each dispatch.
pub(super) struct Continuation {
    pub(super) dispatcher: Dispatcher,
    pub(super) run_id: Option<String>,
    pub(super) tx: UnboundedSender<Delivery>,
    /// The async runtime the run's tasks go to (entered on the leg thread, for work that does
    /// not settle at once).
    pub(super) runtime: tokio::runtime::Handle,
    /// Bridge ids already dispatched (their tasks are running): never dispatched again.
    pub(super) dispatched: HashSet<String>,
    /// `maxPendingToolCalls`.
    pub(super) max_pending: u64,
    /// `maxOutputBytes`, against [`OutputMeasure`].
    pub(super) max_output_bytes: u64,
    /// `maxSnapshotBytes`: past it (as [`Vm::snapshot_bound`]) the executor decides.
    pub(super) max_snapshot_bytes: u64,
    /// The run's output so far, measured as the settle loop measures it.
    pub(super) output: OutputMeasure,
    /// No dispatch at or after this instant: the deadline less the settle loop's floor (near
    /// the deadline the executor decides between parking and a last delivery).
    pub(super) until: Instant,
    pub(super) abort: AbortHandle,
    pub(super) park_now: Option<tokio::sync::watch::Receiver<bool>>,
}

/// What the leg thread dispatched and did not deliver, for the executor to take over.
#[derive(Default)]
pub(super) struct Continued {
    /// Requests dispatched on the leg thread and left to the executor: settled (to deliver)
    /// or running (a task), in dispatch order.
    pub(super) dispatched: Vec<(String, Dispatched)>,
    /// Requests the runtime refused for their size (bridge id, message), to settle with it.
    pub(super) refused: Vec<(String, String)>,
}

/// The UTF-8 length of `JSON.stringify(output)` kept up to date item by item: `count` items
/// whose own lengths sum to `items_bytes` (0 bytes for no items, as the settle loop counts).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct OutputMeasure {
    pub(super) count: u64,
    pub(super) items_bytes: u64,
}

impl OutputMeasure {
    /// Adds one item of `bytes` bytes.
    pub(super) fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.items_bytes = self.items_bytes.saturating_add(bytes);
    }

    /// Bytes of the JSON array: brackets, items, commas.
    fn bytes(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.items_bytes
                .saturating_add(2)
                .saturating_add(self.count - 1)
        }
    }
}

impl Continuation {
    /// Goes on after a leg whose reports are `reports`: while the main promise is pending and
    /// nothing calls for the executor, dispatches the guest's new requests and, when all of them
    /// settled at once, delivers them, appending the reports. Returns what it dispatched but did
    /// not deliver.
    pub(super) fn run(
        mut self,
        vm: &mut Vm,
        reports: &mut Vec<Result<GuestReport, VmError>>,
        budget: &LegBudget,
    ) -> Continued {
        let _runtime = self.runtime.enter();
        let mut continued = Continued::default();
        let mut measured = 0;
        loop {
            for report in reports[measured..].iter().flatten() {
                for item in &report.output {
                    self.output.add(json_len(item));
                }
            }
            measured = reports.len();
            let going_on = reports.iter().all(|r| {
                r.as_ref().is_ok_and(|r| {
                    matches!(r.state, GuestState::Pending)
                        && !r.output_overflow
                        && !r.request_overflow
                })
            });
            if !going_on {
                return continued;
            }
            continued.refused = vm.take_refusals();
            if !continued.refused.is_empty() {
                return continued;
            }
            let pending = vm.pending();
            if pending.is_empty()
                || pending.len() as u64 > self.max_pending
                || pending.iter().any(|p| p.method == BridgeMethod::Yield)
                || Instant::now() >= self.until
                || self.abort.is_aborted()
                || self.park_now.as_ref().is_some_and(|park| *park.borrow())
                || self.output.bytes() > self.max_output_bytes
                || vm.snapshot_bound() > self.max_snapshot_bytes
            {
                return continued;
            }
            let new: Vec<_> = pending
                .iter()
                .filter(|p| !self.dispatched.contains(&p.id))
                .cloned()
                .collect();
            if new.is_empty() {
                return continued;
            }
            let mut settled = Vec::with_capacity(new.len());
            let mut running = false;
            for request in &new {
                self.dispatched.insert(request.id.clone());
                match self
                    .dispatcher
                    .dispatch(request, self.run_id.clone(), self.tx.clone())
                {
                    Dispatched::Settled(delivery) => settled.push(delivery),
                    running_task @ Dispatched::Running(_) => {
                        running = true;
                        continued
                            .dispatched
                            .push((request.id.clone(), running_task));
                    }
                }
            }
            if running {
                continued.dispatched.extend(
                    settled
                        .into_iter()
                        .map(|d| (d.id.clone(), Dispatched::Settled(d))),
                );
                return continued;
            }
            for delivery in &settled {
                let report = vm.deliver(delivery, budget);
                let stop = report.is_err();
                reports.push(report);
                if stop {
                    return continued;
                }
            }
        }
    }
}

impl Run {
    /// What the leg thread needs to go on after a delivery leg; `None` where the settle loop
    /// must see every step: a restart-safe run (it parks at every wait), a run whose main
    /// promise settled (draining), or one with no parking slot yet. It dispatches nothing
    /// within the settle floor of `deadline`.
    pub(super) fn continuation(
        &self,
        deadline: Instant,
        abort: &AbortHandle,
    ) -> Option<Continuation> {
        if self.restart_safe
            || self.main.is_some()
            || (self.run_id.is_none() && self.reservation.is_none())
        {
            return None;
        }
        let config = &self.env.config;
        let until = deadline.checked_sub(settle_floor(config))?;
        let mut output = OutputMeasure::default();
        for item in &self.output {
            output.add(json_len(item));
        }
        Some(Continuation {
            dispatcher: self.dispatcher.clone(),
            run_id: self.run_id.clone(),
            tx: self.tx.clone(),
            runtime: tokio::runtime::Handle::try_current().ok()?,
            // Refused requests are settled by `dispatch_new`, never dispatched.
            dispatched: self
                .tasks
                .keys()
                .chain(self.refused.keys())
                .cloned()
                .collect(),
            max_pending: config.max_pending_tool_calls(),
            max_output_bytes: config.max_output_bytes(),
            max_snapshot_bytes: config.max_snapshot_bytes(),
            output,
            until,
            abort: abort.clone(),
            park_now: self.park_now.clone(),
        })
    }

    /// Takes over what the leg thread dispatched and did not deliver: settled requests to
    /// deliver next, running ones as tasks, refused ones to settle with their message.
    pub(super) fn take_over(&mut self, continued: Continued) {
        self.refused.extend(continued.refused);
        for (id, dispatched) in continued.dispatched {
            match dispatched {
                Dispatched::Settled(delivery) => self.arrived.push(delivery),
                Dispatched::Running(handle) => {
                    self.tasks.insert(id, handle);
                }
            }
        }
    }
}
