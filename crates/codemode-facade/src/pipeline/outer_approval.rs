//! The approver of an outer `exec` / `wait` that a `before_tool_call` hook sent to approval
//! (docs/contract/host.md#h3; issue 27 item 3): the environment's broker, with two things a
//! nested call gets from its run and an outer call had not:
//!
//! - **a bound**: the wait lasts at most the call's `timeoutMs` (the config's, as for the run
//!   itself). Unanswered by then, the call is denied with reason
//!   `no answer within <ms> ms (timeoutMs)` and the approval is withdrawn from the broker (a later
//!   `approve` for it is an unknown id). Before, it waited for the broker's TTL
//!   (`snapshotTtlSeconds`, 900 s by default) while nothing else could answer the model.
//!   *Choice:* the run, once approved, still gets its whole `timeoutMs`: a person's answer time is
//!   not the program's time, and a run that starts with no time left would park at once.
//! - **trajectory events**: `approval_requested` and `approval_resolved` are recorded as for a
//!   nested call (no `parentToolCallId` or `codeModeRunId`: no run exists yet), so a host that
//!   drives `codemode session` learns the `approvalId` to answer from the trajectory.

use std::sync::Arc;
use std::time::Duration;

use codemode_telemetry::{ApprovalRequestedEvent, ApprovalResolvedEvent, EventKind, Trajectory};

use super::approvals::{
    denial_reason, ApprovalBroker, ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver,
};

/// The broker of an outer call's approval, bounded by `within` and recording into `trajectory`.
pub(crate) struct OuterApprover {
    pub(crate) broker: Arc<ApprovalBroker>,
    pub(crate) within: Duration,
    pub(crate) trajectory: Trajectory,
}

/// The denial reason of an outer approval nobody answered within `within`.
pub(crate) fn unanswered_reason(within: Duration) -> String {
    format!("no answer within {} ms (timeoutMs)", within.as_millis())
}

impl Approver for OuterApprover {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let trajectory = self.trajectory.clone();
        if trajectory.is_enabled() {
            trajectory.record(EventKind::ApprovalRequested(ApprovalRequestedEvent {
                approval_id: request.approval_id.clone(),
                tool_call_id: request.tool_call_id.clone(),
                parent_tool_call_id: None,
                code_mode_run_id: None,
                tool_id: request.tool_id.clone(),
                tool_name: request.tool_name.clone(),
                input: request.input.clone(),
                reason: request.reason.clone(),
            }));
        }
        let approval_id = request.approval_id.clone();
        let tool_call_id = request.tool_call_id.clone();
        let within = self.within;
        // Dropping the broker's future (at the bound, or on abort) withdraws the approval.
        let answer = self.broker.request(request);
        Box::pin(async move {
            let decision = tokio::time::timeout(within, answer)
                .await
                .unwrap_or_else(|_| ApprovalDecision::deny_because(unanswered_reason(within)));
            if trajectory.is_enabled() {
                trajectory.record(EventKind::ApprovalResolved(ApprovalResolvedEvent {
                    approval_id,
                    tool_call_id,
                    code_mode_run_id: None,
                    decision: decision.decision,
                    reason: denial_reason(&decision).or_else(|| decision.reason.clone()),
                }));
            }
            decision
        })
    }
}
