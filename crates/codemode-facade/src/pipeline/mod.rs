//! The host half of every tool call (docs/contract/host.md#h1 to #h3): **policy → `before_tool_call` hooks →
//! approval → execute → `after_tool_call` hooks**. The facade's dispatcher checks the declared
//! output contract after the executor returns, so the contract is checked on the final result.
//!
//! - [`ToolPipeline`] wraps any [`ToolExecutor`](codemode_bridge::ToolExecutor) and is one itself; the facade builds one per run
//!   from `RunEnv`'s policy, hooks, approvals and trajectory (`RunEnv::with_hooks`, …), and
//!   [`ToolPipeline::call`] says how a call ended ([`CallError`], with its trajectory status).
//! - [`ToolHook`] is the hook trait for Rust hosts; [`CommandHook`] runs a configured command
//!   (`hooks.beforeToolCall` / `hooks.afterToolCall`) with the event JSON on stdin and reads its
//!   answer from stdout; [`HookChain`] is an ordered list of hooks.
//! - [`Approver`] answers approvals; [`ApprovalBroker`] records outstanding approvals so a host can
//!   list them ([`PendingApproval`](crate::result::PendingApproval), the `pendingApprovals` entries) and answer them by id later.
//! - [`before_outer_call`] / [`after_outer_call`] run the hooks for the model-visible `exec` and
//!   `wait` calls.
//!
//! Every failure closes: a hook that fails blocks the call, an approval nobody answers within the
//! TTL is denied. A call waiting on a hook or an approval is just a pending future, so other calls
//! and the guest keep running and a run past its deadline parks as usual. No lock is held across
//! an `await`.
//!
//! Modules, depending in one direction: `hooks` (events, answers, the [`ToolHook`] trait and
//! [`HookChain`]) ← `command` ([`CommandHook`]) ; `approvals` ([`Approver`],
//! [`ApprovalBroker`]) ← `tool` ([`ToolPipeline`], [`CallError`]) ← `outer` (the model-visible
//! calls); `approvals` ← `outer_approval` (an outer call's approver: the broker, bounded by
//! `timeoutMs` and recorded in the trajectory); `ledger` (a run's calls in flight and their approval
//! stages, written in its portable record) ← `tool`.

mod approvals;
mod command;
mod hooks;
pub(crate) mod ledger;
mod outer;
mod outer_approval;
mod tool;

pub(crate) use approvals::RunApprovals;
pub use approvals::{
    ApprovalBroker, ApprovalDecision, ApprovalFuture, ApprovalRequest, ApprovalVerdict, Approver,
    FixedApprover, UnknownApproval, APPROVAL_CANCELLED, APPROVAL_EXPIRED, DEFAULT_DENIAL_REASON,
};
pub use command::{CommandHook, HookPhase, HOOK_ENVIRONMENT, HOOK_STDOUT_LIMIT};
pub use hooks::{
    AfterDecision, AfterToolCall, BeforeToolCall, BeforeVerdict, Decision, HookChain, HookDecision,
    HookEvent, HookFuture, OuterKind, ToolCallInfo, ToolHook, ToolInputKind, ToolKind,
};
pub(crate) use outer::{
    after_outer, generated_call_id, record_call, record_refused, record_result, replay_safe_of,
    unless_aborted,
};
pub use outer::{after_outer_call, before_outer_call};
pub(crate) use outer_approval::OuterApprover;
pub use tool::{CallError, ToolPipeline};
