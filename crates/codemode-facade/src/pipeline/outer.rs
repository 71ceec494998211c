//! The model-visible `exec` and `wait` calls (docs/contract/host.md#h2): their before and
//! after hooks, and the trajectory records that frame them.

use std::time::{Duration, Instant};

use codemode_bridge::RunScope;
use codemode_runtime::AbortHandle;
use codemode_telemetry::{
    EventKind, ToolCallEvent, ToolInputKind, ToolResultEvent, ToolStatus, Trajectory,
};
use serde_json::Value;

use crate::result::{CodeModeResult, ErrorCode};

use super::approvals::{approve, new_approval_id, ApprovalRequest, Approver};
use super::hooks::{HookChain, OuterKind, ToolCallInfo};
use super::tool::CallError;

/// Runs the `before_tool_call` hooks for a model-visible `exec` or `wait` call
/// (`toolKind: "code_mode_exec"` with `toolInputKind` from the input's `language`, or
/// `"code_mode_wait"`), before the facade sees the call. Returns the input to use (possibly
/// rewritten by a hook), or `Err(message)`: `Tool "exec" was blocked before execution: <reason>`,
/// or `Tool "exec" was not approved: <reason>` when a hook answered `ask` and `approver` (none:
/// denied) denied it. `tools.approvals.require` does not apply to the outer calls.
///
/// The facade must check the returned input as it checks any `exec` input (docs/contract/surface.md#s2-2:
/// a hook that rewrote `code` but not `command` fails rule 1); `CodeMode::exec` does so when it
/// receives the input, so passing the returned value on is enough.
pub async fn before_outer_call(
    hooks: &HookChain,
    approver: Option<&dyn Approver>,
    kind: OuterKind,
    tool_call_id: &str,
    input: &Value,
    scope: &RunScope,
) -> Result<Value, String> {
    let name = kind.tool_name();
    let verdict = hooks
        .run_before(ToolCallInfo::outer(kind, tool_call_id, input, scope))
        .await
        .map_err(|reason| {
            CallError::Blocked {
                tool_id: name.to_string(),
                reason,
            }
            .to_string()
        })?;
    if verdict.ask {
        let request = ApprovalRequest {
            approval_id: new_approval_id(),
            tool_call_id: tool_call_id.to_string(),
            tool_id: name.to_string(),
            tool_name: name.to_string(),
            input: verdict.input.clone(),
            reason: verdict.ask_reason,
            parent_tool_call_id: None,
            bridge_id: None,
            scope: scope.clone(),
        };
        approve(approver, request).await.map_err(|reason| {
            CallError::NotApproved {
                tool_id: name.to_string(),
                reason,
            }
            .to_string()
        })?;
    }
    Ok(verdict.input)
}

/// Runs the `after_tool_call` hooks for a model-visible `exec` or `wait` call that took
/// `duration` and produced `result` (the `CodeModeResult` as JSON). Returns the result to give
/// the model (possibly replaced by a hook), or `Err(message)` (`Tool "exec" was blocked after
/// execution: <reason>`) when a hook failed.
pub async fn after_outer_call(
    hooks: &HookChain,
    kind: OuterKind,
    tool_call_id: &str,
    input: &Value,
    scope: &RunScope,
    result: Value,
    duration: Duration,
) -> Result<Value, String> {
    let info = ToolCallInfo::outer(kind, tool_call_id, input, scope);
    // The outer call itself succeeded: its outcome has no error side.
    let outcome: Result<Value, std::convert::Infallible> = Ok(result);
    match hooks.run_after(&info, outcome, duration).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(never)) => match never {},
        Err(reason) => Err(CallError::BlockedAfter {
            tool_id: kind.tool_name().to_string(),
            reason,
        }
        .to_string()),
    }
}

/// An outer call that ends before it runs (aborted or refused by its hooks): its `tool_call` and
/// `tool_result` are recorded together, and `result` is handed back.
pub(crate) fn record_refused(
    trajectory: &Trajectory,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    result: CodeModeResult,
    started: Instant,
) -> CodeModeResult {
    record_call(trajectory, kind, call_id, input);
    record_result(trajectory, kind, call_id, input, &result, started);
    result
}

/// Records `tool_call` for an outer `exec` / `wait` with the input the facade runs.
pub(crate) fn record_call(trajectory: &Trajectory, kind: OuterKind, call_id: &str, input: &Value) {
    if !trajectory.is_enabled() {
        return;
    }
    trajectory.record(EventKind::ToolCall(ToolCallEvent {
        tool_call_id: call_id.to_string(),
        tool_name: kind.tool_name().to_string(),
        tool_kind: kind.tool_kind(),
        tool_input_kind: input_kind(kind, input),
        input: input.clone(),
    }));
}

/// Records `tool_result` for an outer `exec` / `wait`: status, `codeModeRunId` of a `waiting`
/// result, wall time since `started` in milliseconds, and the result object.
pub(crate) fn record_result(
    trajectory: &Trajectory,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    result: &CodeModeResult,
    started: Instant,
) {
    if !trajectory.is_enabled() {
        return;
    }
    let status = match result {
        CodeModeResult::Completed { .. } => ToolStatus::Completed,
        CodeModeResult::Waiting { .. } => ToolStatus::Waiting,
        CodeModeResult::Failed { .. } => ToolStatus::Failed,
    };
    trajectory.record(EventKind::ToolResult(ToolResultEvent {
        tool_call_id: call_id.to_string(),
        tool_name: kind.tool_name().to_string(),
        tool_kind: kind.tool_kind(),
        tool_input_kind: input_kind(kind, input),
        status,
        code_mode_run_id: result.run_id().map(str::to_string),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        result: Some(result.to_json()),
        error: None,
    }));
}

/// A fresh tool-call id for an outer call the host gave none: `exec_<uuid>` / `wait_<uuid>`
/// (the UUID as 32 lowercase hex digits), unique per call.
pub(crate) fn generated_call_id(kind: OuterKind) -> String {
    format!("{}_{}", kind.tool_name(), uuid::Uuid::new_v4().simple())
}

/// Runs `step` unless `abort` fires first (or has fired): `None` when aborted. Dropping the
/// step cancels its hooks (their process groups are killed) and withdraws its approval.
pub(crate) async fn unless_aborted<T>(
    abort: &AbortHandle,
    step: impl std::future::Future<Output = T>,
) -> Option<T> {
    if abort.is_aborted() {
        return None;
    }
    tokio::select! {
        biased;
        _ = abort.fired() => None,
        out = step => Some(out),
    }
}

pub(crate) fn replay_safe_of(result: &CodeModeResult) -> bool {
    match result {
        CodeModeResult::Completed { replay_safe, .. }
        | CodeModeResult::Waiting { replay_safe, .. }
        | CodeModeResult::Failed { replay_safe, .. } => *replay_safe,
    }
}

fn input_kind(kind: OuterKind, input: &Value) -> Option<ToolInputKind> {
    match kind {
        OuterKind::Exec => ToolInputKind::of_exec_input(input),
        OuterKind::Wait => None,
    }
}

/// Runs the `after_tool_call` hooks on an outer call's result (skipped without hooks); a hook
/// may replace it with another code-mode result. A hook that fails, or replaces the result with
/// JSON that is not a code-mode result, turns it into a `failed` / `invalid_input` result with
/// `Tool "<exec|wait>" was blocked after execution: <reason>` as its error, no output, and the
/// original result's `replaySafe` and telemetry. (The caller drops a run whose `waiting` result
/// this withheld.)
pub(crate) async fn after_outer(
    hooks: &HookChain,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    scope: &RunScope,
    result: CodeModeResult,
    started: Instant,
) -> CodeModeResult {
    if hooks.is_empty() {
        return result;
    }
    let replaced = after_outer_call(
        hooks,
        kind,
        call_id,
        input,
        scope,
        result.to_json(),
        started.elapsed(),
    )
    .await
    .and_then(|value| {
        serde_json::from_value::<CodeModeResult>(value).map_err(|_| {
            CallError::BlockedAfter {
                tool_id: kind.tool_name().to_string(),
                reason: "a hook replaced the result with one that is not a code mode result"
                    .to_string(),
            }
            .to_string()
        })
    });
    match replaced {
        Ok(replacement) => replacement,
        Err(message) => CodeModeResult::Failed {
            error: message,
            code: Some(ErrorCode::InvalidInput),
            output: Vec::new(),
            replay_safe: replay_safe_of(&result),
            telemetry: result.telemetry().clone(),
        },
    }
}
