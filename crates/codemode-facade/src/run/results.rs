//! What a run answers: the `waiting` result of a parked run, the terminal `completed` and
//! `failed` results, and the output and snapshot limit checks that can turn a step into a
//! failure (docs/contract/lifecycle.md#s5-5, #s5-6, #s5-10).

use codemode_bridge::{BridgeMethod, BridgeRequest};
use codemode_runtime::VmError;
use codemode_telemetry::{EventKind, RunEndedEvent};
use serde_json::Value;

use crate::failure::{map_vm_error, telemetry};
use crate::limits::LimitExceeded;
use crate::messages::PENDING_WITHOUT_HOST_WORK;
use crate::pipeline::RunApprovals;
use crate::result::{CodeModeResult, ErrorCode, PendingToolCall, WaitReason};

use super::{json_len, Run};

impl Run {
    /// The `waiting` result: unsettled requests, output since the previous result.
    pub(crate) fn waiting_result(&mut self, run_id: String) -> CodeModeResult {
        // A yield is settled from the start but still listed until delivered (docs/contract/lifecycle.md#s5-10).
        let unsettled: Vec<&BridgeRequest> = self
            .pending
            .iter()
            .filter(|p| {
                p.method == BridgeMethod::Yield || !self.arrived.iter().any(|d| d.id == p.id)
            })
            .collect();
        let reason = wait_reason(&unsettled);
        let pending_tool_calls = unsettled
            .iter()
            .map(|p| PendingToolCall {
                id: p.id.clone(),
                method: p.method,
            })
            .collect();
        CodeModeResult::Waiting {
            run_id,
            reason,
            pending_tool_calls,
            pending_approvals: self
                .approvals
                .as_ref()
                .map(RunApprovals::pending)
                .unwrap_or_default(),
            replay_safe: self.restart_safe,
            output: std::mem::take(&mut self.output),
            telemetry: telemetry(&self.env, &self.dispatcher.counters),
        }
    }

    /// Output-limit check (docs/contract/lifecycle.md#s5-5) for this result's entries, plus `value` when given:
    /// the failure result when over the limit.
    pub(super) fn output_limit_failure(&mut self, value: Option<&Value>) -> Option<CodeModeResult> {
        let mut measure = if self.output.is_empty() {
            0
        } else {
            json_len(&self.output)
        };
        if let Some(value) = value {
            measure = measure.saturating_add(json_len(value));
        }
        if measure > self.env.config.max_output_bytes() {
            self.output.clear();
            let message = LimitExceeded::output(
                (measure != u64::MAX).then_some(measure),
                self.env.config.max_output_bytes(),
            )
            .to_string();
            return Some(self.fail(ErrorCode::OutputLimitExceeded, &message));
        }
        None
    }

    /// Snapshot-limit check before auto-draining (docs/contract/lifecycle.md#s5-6). The snapshot is only taken
    /// when the memory in use could compress beyond the limit.
    pub(super) fn snapshot_limit_failure(&mut self) -> Option<CodeModeResult> {
        let max = self.env.config.max_snapshot_bytes();
        let vm = self.vm.as_mut()?;
        if vm.snapshot_bound() <= max {
            return None;
        }
        match vm.snapshot() {
            Ok(s) if s.stored_bytes() as u64 <= max => {
                self.snapshot = Some(s);
                None
            }
            Ok(s) => {
                let message = LimitExceeded::snapshot(s.stored_bytes() as u64, max).to_string();
                Some(self.fail(ErrorCode::SnapshotLimitExceeded, &message))
            }
            Err(e) => {
                let (code, message) = map_vm_error(&e, &self.env.config);
                Some(self.fail(code, &message))
            }
        }
    }

    /// The terminal result once nothing is pending.
    pub(super) fn finish(&mut self) -> CodeModeResult {
        self.stored = false;
        match self.main.take() {
            Some(Ok(value)) => {
                if let Some(result) = self.output_limit_failure(Some(&value)) {
                    return result;
                }
                CodeModeResult::Completed {
                    value,
                    output: std::mem::take(&mut self.output),
                    replay_safe: self.restart_safe,
                    telemetry: telemetry(&self.env, &self.dispatcher.counters),
                }
            }
            Some(Err(error)) => {
                if codemode_ts::is_module_access_reference_error(&error) {
                    self.fail(ErrorCode::InvalidInput, codemode_ts::MODULE_ACCESS_DISABLED)
                } else if let Some(message) =
                    codemode_ts::program_syntax_error(&error, self.program_end)
                {
                    // The program did not parse: nothing ran, the model fixes its source.
                    self.fail(ErrorCode::InvalidInput, &message)
                } else {
                    let error = self
                        .missing
                        .explain(&error, &self.env.catalog)
                        .unwrap_or(error);
                    self.fail(ErrorCode::InternalError, &error)
                }
            }
            None => self.fail(ErrorCode::InternalError, PENDING_WITHOUT_HOST_WORK),
        }
    }

    /// A terminal failure for a VM error: its result code and its `Display` as the message.
    pub(crate) fn fail_vm(&mut self, e: &VmError) -> CodeModeResult {
        let (code, message) = map_vm_error(e, &self.env.config);
        self.fail(code, &message)
    }

    /// A terminal failure: cancels leftover host work and disposes of the VM.
    pub(crate) fn fail(&mut self, code: ErrorCode, message: &str) -> CodeModeResult {
        self.stored = false;
        if code == ErrorCode::Aborted {
            self.trajectory.record(EventKind::RunAborted(RunEndedEvent {
                code_mode_run_id: self.run_id.clone(),
                parent_tool_call_id: self.env.parent_tool_call_id.clone(),
                reason: Some(message.to_string()),
            }));
        }
        for task in self.tasks.values() {
            task.abort();
        }
        self.tasks.clear();
        self.vm = None;
        self.snapshot = None;
        CodeModeResult::Failed {
            error: message.to_string(),
            code: Some(code),
            output: std::mem::take(&mut self.output),
            replay_safe: self.restart_safe,
            telemetry: telemetry(&self.env, &self.dispatcher.counters),
        }
    }
}

/// Why a parked run waits, from its unsettled requests: `yield` when every one is a
/// `yield_control` (and there is at least one), else `pending_tools`
/// (docs/contract/lifecycle.md#s5-10).
pub(crate) fn wait_reason(unsettled: &[&BridgeRequest]) -> WaitReason {
    if !unsettled.is_empty() && unsettled.iter().all(|p| p.method == BridgeMethod::Yield) {
        WaitReason::Yield
    } else {
        WaitReason::PendingTools
    }
}
