//! The tool pipeline ([`ToolPipeline`]): policy, `before_tool_call` hooks, approval, the
//! executor and `after_tool_call` hooks around every call, and how a call ended ([`CallError`]).

use std::sync::Arc;
use std::time::Instant;

use codemode_bridge::{ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{ContractError, LookupError};
use codemode_config::ToolPolicy;
use codemode_telemetry::{
    ApprovalRequestedEvent, ApprovalResolvedEvent, EventKind, NestedStatus, Trajectory,
};
use serde_json::Value;

use super::approvals::{
    ask, denial_reason, new_approval_id, ApprovalDecision, ApprovalRequest, Approver,
};
use super::hooks::{HookChain, ToolCallInfo};
use super::ledger::CallLedger;

/// A [`ToolExecutor`] that runs every call through policy, hooks and approval before the wrapped
/// executor, and the after-hooks behind it (docs/contract/host.md#h2):
///
/// 1. **policy**: a tool the [`ToolPolicy`] does not allow fails with
///    [`CallError::NotAllowed`] (the unknown-tool error for its id);
/// 2. **`before_tool_call` hooks** ([`HookChain::run_before`]): a block fails with
///    [`CallError::Blocked`]; a rewritten input replaces the call's input;
/// 3. **approval**, when a hook asked or the tool matches `tools.approvals.require`: the
///    [`Approver`] decides; a denial fails with [`CallError::NotApproved`] (reason `denied` when it
///    gave none; with no approver configured every approval is denied) and the tool never runs;
/// 4. **execute** the wrapped executor with the final input;
/// 5. **`after_tool_call` hooks** ([`HookChain::run_after`]): a `result` replaces the outcome; a
///    failing hook fails the call with [`CallError::BlockedAfter`].
///
/// The facade's dispatcher then checks the declared output contract on the final result's
/// `details`. Cheap to clone.
#[derive(Clone)]
pub struct ToolPipeline {
    executor: Arc<dyn ToolExecutor>,
    policy: Arc<ToolPolicy>,
    hooks: HookChain,
    approver: Option<Arc<dyn Approver>>,
    trajectory: Trajectory,
    /// The run's calls in flight (a run's pipeline only): approval ids are taken from it and
    /// approval stages marked in it (`ledger.rs`).
    ledger: Option<Arc<CallLedger>>,
}

impl ToolPipeline {
    /// A pipeline over `executor` with the default policy (everything allowed), no hooks and no
    /// approver.
    pub fn new(executor: Arc<dyn ToolExecutor>) -> Self {
        ToolPipeline {
            executor,
            policy: Arc::new(ToolPolicy::default()),
            hooks: HookChain::new(),
            approver: None,
            trajectory: Trajectory::disabled(),
            ledger: None,
        }
    }

    /// The same pipeline keeping a run's approval stages in `ledger` (an approval asked again
    /// for a call restored from a record keeps its id).
    pub(crate) fn with_ledger(mut self, ledger: Arc<CallLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// The same pipeline with `policy`.
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// The same pipeline with a shared `policy` (the facade passes its `RunEnv`'s).
    pub fn with_shared_policy(mut self, policy: Arc<ToolPolicy>) -> Self {
        self.policy = policy;
        self
    }

    /// The same pipeline recording `approval_requested` / `approval_resolved` into `trajectory`
    /// (docs/telemetry.md); the default records nothing.
    pub fn with_trajectory(mut self, trajectory: Trajectory) -> Self {
        self.trajectory = trajectory;
        self
    }

    /// The same pipeline with `hooks` (replacing the previous chain).
    pub fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same pipeline with `approver` (e.g. an [`ApprovalBroker`](super::ApprovalBroker)).
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &ToolPolicy {
        &self.policy
    }

    /// The hooks.
    pub fn hooks(&self) -> &HookChain {
        &self.hooks
    }

    /// The approver, if any.
    pub fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.as_ref()
    }

    /// True when a call through this pipeline may ask a person: an approval rule is set, or a
    /// hook runs (its verdict may ask). The dispatch settles calls in their first poll only
    /// when this is false (`dispatch.rs`), so an approval is registered, and listed in a
    /// `waiting` result, at the same point of a run as when every call was a task.
    pub(crate) fn may_ask(&self) -> bool {
        !self.hooks.is_empty() || !self.policy.approvals.require.is_empty()
    }

    /// Runs `call` through every step (see the type's docs) and says how it ended:
    /// `Ok(result)` (the whole tool result, after the after-hooks), or a [`CallError`] whose
    /// `Display` is the message the guest sees and whose [`status`](CallError::status) is the
    /// trajectory's `nested_tool_result` status.
    pub async fn call(&self, mut call: ToolCall) -> Result<Value, CallError> {
        if !self.policy.allows(&call.tool_name, &call.tool_id) {
            return Err(CallError::NotAllowed {
                tool_id: call.tool_id,
            });
        }
        // Without hooks no event is built: each one copies the input (docs/threat-model.md,
        // "Host memory").
        let (ask_hook, ask_reason) = if self.hooks.is_empty() {
            (false, None)
        } else {
            let verdict = self
                .hooks
                .run_before(ToolCallInfo::nested(&call))
                .await
                .map_err(|reason| CallError::Blocked {
                    tool_id: call.tool_id.clone(),
                    reason,
                })?;
            call.input = verdict.input;
            (verdict.ask, verdict.ask_reason)
        };
        if ask_hook
            || self
                .policy
                .requires_approval(&call.tool_name, &call.tool_id)
        {
            let approval_id = match &self.ledger {
                Some(ledger) => ledger.awaiting(&call.bridge_id, new_approval_id),
                None => new_approval_id(),
            };
            let request = ApprovalRequest {
                approval_id,
                tool_call_id: call.tool_call_id.clone(),
                tool_id: call.tool_id.clone(),
                tool_name: call.tool_name.clone(),
                input: call.input.clone(),
                reason: ask_reason,
                parent_tool_call_id: call.parent_tool_call_id.clone(),
                bridge_id: Some(call.bridge_id.clone()),
                scope: call.scope.clone(),
            };
            self.record_requested(&request, call.code_mode_run_id.as_deref());
            let approval_id = request.approval_id.clone();
            let decision = ask(self.approver.as_deref(), request).await;
            if let Some(ledger) = &self.ledger {
                ledger.decided(&call.bridge_id);
            }
            self.record_resolved(
                &approval_id,
                &call.tool_call_id,
                call.code_mode_run_id.as_deref(),
                &decision,
            );
            denial_reason(&decision).map_or(Ok(()), |reason| {
                Err(CallError::NotApproved {
                    tool_id: call.tool_id.clone(),
                    reason,
                })
            })?;
        }
        if self.hooks.is_empty() {
            let tool_id = call.tool_id.clone();
            return self
                .executor
                .execute(call)
                .await
                .map_err(|error| CallError::Failed { tool_id, error });
        }
        let info = ToolCallInfo::nested(&call);
        let tool_id = call.tool_id.clone();
        let started = Instant::now();
        let outcome = self.executor.execute(call).await;
        match self
            .hooks
            .run_after(&info, outcome, started.elapsed())
            .await
        {
            Ok(outcome) => outcome.map_err(|error| CallError::Failed { tool_id, error }),
            Err(reason) => Err(CallError::BlockedAfter { tool_id, reason }),
        }
    }

    fn record_requested(&self, request: &ApprovalRequest, code_mode_run_id: Option<&str>) {
        if !self.trajectory.is_enabled() {
            return;
        }
        self.trajectory
            .record(EventKind::ApprovalRequested(ApprovalRequestedEvent {
                approval_id: request.approval_id.clone(),
                tool_call_id: request.tool_call_id.clone(),
                parent_tool_call_id: request.parent_tool_call_id.clone(),
                code_mode_run_id: code_mode_run_id.map(str::to_string),
                tool_id: request.tool_id.clone(),
                tool_name: request.tool_name.clone(),
                input: request.input.clone(),
                reason: request.reason.clone(),
            }));
    }

    fn record_resolved(
        &self,
        approval_id: &str,
        tool_call_id: &str,
        code_mode_run_id: Option<&str>,
        decision: &ApprovalDecision,
    ) {
        if !self.trajectory.is_enabled() {
            return;
        }
        self.trajectory
            .record(EventKind::ApprovalResolved(ApprovalResolvedEvent {
                approval_id: approval_id.to_string(),
                tool_call_id: tool_call_id.to_string(),
                code_mode_run_id: code_mode_run_id.map(str::to_string),
                decision: decision.decision,
                reason: denial_reason(decision).or_else(|| decision.reason.clone()),
            }));
    }
}

/// Why a call through [`ToolPipeline::call`] did not return a result. `Display` is the exact
/// message the guest's promise rejects with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The [`ToolPolicy`] does not allow the tool (docs/contract/host.md#h1): the unknown-tool
    /// error of docs/contract/catalog.md#s3-4 without suggestions, so nothing hints that the
    /// tool exists: `Unknown tool id: <id>. Use tools.search to find a tool, tools.describe to
    /// inspect it, then tools.call with the exact id or name.` (the `Display` of
    /// [`LookupError::UnknownTool`], the catalog's one copy of the text).
    NotAllowed {
        /// The catalog id called.
        tool_id: String,
    },
    /// A `before_tool_call` hook blocked the call (or failed): `Tool "<id>" was blocked before
    /// execution: <reason>` (docs/contract/catalog.md#s3-5, docs/contract/host.md#h2; the
    /// `Display` of [`ContractError::BlockedBeforeExecution`], the catalog's one copy).
    Blocked {
        /// The catalog id (`exec` / `wait` for the outer calls).
        tool_id: String,
        /// The hook's reason.
        reason: String,
    },
    /// Approval was denied, expired or cancelled; the tool never ran: `Tool "<id>" was not
    /// approved: <reason>` (docs/contract/host.md#h3).
    NotApproved {
        /// The catalog id (`exec` / `wait` for the outer calls).
        tool_id: String,
        /// The denial's reason (`denied` when it gave none).
        reason: String,
    },
    /// The tool ran, but an `after_tool_call` hook failed and withheld the result: `Tool "<id>"
    /// was blocked after execution: <reason>` (our wording; the spec has none for this case).
    BlockedAfter {
        /// The catalog id (`exec` / `wait` for the outer calls).
        tool_id: String,
        /// The hook's reason.
        reason: String,
    },
    /// The wrapped executor failed; `Display` is its error's message, verbatim.
    Failed {
        /// The catalog id.
        tool_id: String,
        /// The executor's error.
        error: ToolError,
    },
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotAllowed { tool_id } => LookupError::UnknownTool {
                needle: tool_id.clone(),
                suggestions: Vec::new(),
            }
            .fmt(f),
            CallError::Blocked { tool_id, reason } => ContractError::BlockedBeforeExecution {
                id: tool_id.clone(),
                reason: reason.clone(),
            }
            .fmt(f),
            CallError::NotApproved { tool_id, reason } => {
                write!(f, "Tool \"{tool_id}\" was not approved: {reason}")
            }
            CallError::BlockedAfter { tool_id, reason } => {
                write!(
                    f,
                    "Tool \"{tool_id}\" was blocked after execution: {reason}"
                )
            }
            CallError::Failed { error, .. } => error.fmt(f),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Failed { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<CallError> for ToolError {
    /// The same message, kept for a caller of the pipeline as a [`ToolExecutor`]: a policy
    /// refusal is [`ToolErrorKind::UnknownTool`](codemode_bridge::ToolErrorKind::UnknownTool)
    /// (its text is the unknown-tool error), a hook block or a denied approval is
    /// [`Refused`](codemode_bridge::ToolErrorKind::Refused), and the executor's own error
    /// passes through unchanged.
    fn from(e: CallError) -> Self {
        match e {
            CallError::Failed { error, .. } => error,
            CallError::NotAllowed { .. } => ToolError::unknown_tool(e.to_string()),
            CallError::Blocked { .. }
            | CallError::NotApproved { .. }
            | CallError::BlockedAfter { .. } => ToolError::refused(e.to_string()),
        }
    }
}

impl CallError {
    /// The trajectory status of this outcome: `blocked` for a policy refusal or a hook block
    /// (before or after execution), `denied` for a refused approval, `error` for a tool failure.
    pub fn status(&self) -> NestedStatus {
        match self {
            CallError::NotAllowed { .. }
            | CallError::Blocked { .. }
            | CallError::BlockedAfter { .. } => NestedStatus::Blocked,
            CallError::NotApproved { .. } => NestedStatus::Denied,
            CallError::Failed { .. } => NestedStatus::Error,
        }
    }

    /// The catalog id of the call.
    pub fn tool_id(&self) -> &str {
        match self {
            CallError::NotAllowed { tool_id }
            | CallError::Blocked { tool_id, .. }
            | CallError::NotApproved { tool_id, .. }
            | CallError::BlockedAfter { tool_id, .. }
            | CallError::Failed { tool_id, .. } => tool_id,
        }
    }
}

impl ToolExecutor for ToolPipeline {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let this = self.clone();
        Box::pin(async move { this.call(call).await.map_err(ToolError::from) })
    }
}
