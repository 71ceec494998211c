//! The trajectory events a run records when it parks and when a `wait` resumes it
//! (`run_parked`, `run_resumed`; docs/contract/host.md#h4).

use codemode_telemetry::{EventKind, ParkReason, RunParkedEvent, RunResumedEvent};

use super::Run;
use crate::result::{CodeModeResult, WaitReason};

impl Run {
    /// The `run_parked` event for the `waiting` result `result` returned by the call
    /// `call_id`; `None` without a trajectory or for a result that is not `waiting`.
    pub(crate) fn parked_event(&self, call_id: &str, result: &CodeModeResult) -> Option<EventKind> {
        if !self.trajectory.is_enabled() {
            return None;
        }
        let CodeModeResult::Waiting {
            run_id,
            reason,
            pending_tool_calls,
            ..
        } = result
        else {
            return None;
        };
        Some(EventKind::RunParked(RunParkedEvent {
            code_mode_run_id: run_id.clone(),
            tool_call_id: call_id.to_string(),
            parent_tool_call_id: self.env.parent_tool_call_id.clone(),
            reason: match reason {
                WaitReason::PendingTools => ParkReason::PendingTools,
                WaitReason::Yield => ParkReason::Yield,
            },
            pending_tool_calls: pending_tool_calls.len(),
            snapshot_bytes: self.snapshot.as_ref().map(|s| s.stored_bytes() as u64),
        }))
    }

    /// Records `run_resumed` for the `wait` `call_id` that restored the run, with the number of
    /// settled results about to be delivered; before it, the `nested_tool_result`s of the calls
    /// lost with the process that last held a run restored from its record
    /// ([`Run::record_lost`]).
    pub(crate) fn record_resumed(&mut self, call_id: &str) {
        self.record_lost();
        let Some(run_id) = &self.run_id else {
            return;
        };
        self.trajectory
            .record(EventKind::RunResumed(RunResumedEvent {
                code_mode_run_id: run_id.clone(),
                tool_call_id: call_id.to_string(),
                parent_tool_call_id: self.env.parent_tool_call_id.clone(),
                settled_tool_calls: self.arrived.len(),
            }));
    }
}
