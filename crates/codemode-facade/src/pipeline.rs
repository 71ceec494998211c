//! The host half of every tool call (docs/contract/host.md#h1 to #h3): **policy → `before_tool_call` hooks →
//! approval → execute → `after_tool_call` hooks**. The facade's dispatcher checks the declared
//! output contract after the executor returns, so the contract is checked on the final result.
//!
//! - [`ToolPipeline`] wraps any [`ToolExecutor`] and is one itself; the facade builds one per run
//!   from `RunEnv`'s policy, hooks, approvals and trajectory (`RunEnv::with_hooks`, …), and
//!   [`ToolPipeline::call`] says how a call ended ([`CallError`], with its trajectory status).
//! - [`ToolHook`] is the hook trait for Rust hosts; [`CommandHook`] runs a configured command
//!   (`hooks.beforeToolCall` / `hooks.afterToolCall`) with the event JSON on stdin and reads its
//!   answer from stdout; [`HookChain`] is an ordered list of hooks.
//! - [`Approver`] answers approvals; [`ApprovalBroker`] records outstanding approvals so a host can
//!   list them ([`PendingApproval`], the `pendingApprovals` entries) and answer them by id later.
//! - [`before_outer_call`] / [`after_outer_call`] run the hooks for the model-visible `exec` and
//!   `wait` calls.
//!
//! Every failure closes: a hook that fails blocks the call, an approval nobody answers within the
//! TTL is denied. A call waiting on a hook or an approval is just a pending future, so other calls
//! and the guest keep running and a run past its deadline parks as usual. No lock is held across
//! an `await`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{ContractError, LookupError};
use codemode_config::{HookConfig, HookSpec, ToolPolicy};
use codemode_telemetry::{
    ApprovalRequestedEvent, ApprovalResolvedEvent, EventKind, NestedStatus, Trajectory,
};
/// `toolKind` and `toolInputKind` of hook events: the trajectory's types (one home, in
/// `codemode-telemetry`), with the same wire names.
pub use codemode_telemetry::{ToolInputKind, ToolKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::process_group::ProcessGroup;

/// A command hook's stdout is read up to this many bytes (1 MiB); a hook printing more blocks.
pub const HOOK_STDOUT_LIMIT: usize = 1024 * 1024;

/// The only environment variables a command hook gets from the host process (when set there).
pub const HOOK_ENVIRONMENT: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// The reason of a denial that gave none: `denied` (docs/contract/host.md#h3).
pub const DEFAULT_DENIAL_REASON: &str = "denied";

/// The reason of an approval nobody answered within the broker's TTL.
pub const APPROVAL_EXPIRED: &str = "approval expired";

/// The reason of an approval withdrawn by [`ApprovalBroker::deny_all`] without a reason of its own.
pub const APPROVAL_CANCELLED: &str = "approval cancelled";

/// `Tool "<id>" was blocked before execution: <reason>` (docs/contract/catalog.md#s3-5, docs/contract/host.md#h2):
/// the `Display` of [`ContractError::BlockedBeforeExecution`], the catalog's one copy of the text.
pub fn blocked_message(tool_id: &str, reason: &str) -> String {
    ContractError::BlockedBeforeExecution {
        id: tool_id.to_string(),
        reason: reason.to_string(),
    }
    .to_string()
}

/// `Tool "<id>" was blocked after execution: <reason>`: an `after_tool_call` hook failed, so the
/// result is withheld (our wording; the spec has none for this case).
pub fn blocked_after_message(tool_id: &str, reason: &str) -> String {
    format!("Tool \"{tool_id}\" was blocked after execution: {reason}")
}

/// `Tool "<id>" was not approved: <reason>` (docs/contract/host.md#h3).
pub fn not_approved_message(tool_id: &str, reason: &str) -> String {
    format!("Tool \"{tool_id}\" was not approved: {reason}")
}

/// The unknown-tool error of docs/contract/catalog.md#s3-4 without suggestions, which a policy-denied tool
/// gets (docs/contract/host.md#h1: no hint that the tool exists): `Unknown tool id: <id>. Use tools.search to
/// find a tool, tools.describe to inspect it, then tools.call with the exact id or name.`
///
/// The `Display` of [`LookupError::UnknownTool`] with no suggestions (the catalog's one copy of
/// the text and of `UNKNOWN_TOOL_RECOVERY`).
pub fn unknown_tool_message(tool_id: &str) -> String {
    LookupError::UnknownTool {
        needle: tool_id.to_string(),
        suggestions: Vec::new(),
    }
    .to_string()
}

// ---------------------------------------------------------------------------------------------
// Events and answers (docs/contract/host.md#h2)
// ---------------------------------------------------------------------------------------------

/// The `event` field: `"before_tool_call"` or `"after_tool_call"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HookEvent {
    /// `"before_tool_call"`.
    #[serde(rename = "before_tool_call")]
    BeforeToolCall,
    /// `"after_tool_call"`.
    #[serde(rename = "after_tool_call")]
    AfterToolCall,
}

/// The fields both events share (JSON camelCase; absent optional fields are omitted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallInfo {
    /// The call's id: the model's tool-call id, or `tool_search_code:<parent>:<tool>:<seq>` for a
    /// nested call.
    pub tool_call_id: String,
    /// The tool's name (`read`; `exec` / `wait` for the outer calls).
    pub tool_name: String,
    /// The catalog id (`openclaw:core:read`), for catalog tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    /// What kind of call this is.
    pub tool_kind: ToolKind,
    /// For `exec`: the source language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input_kind: Option<ToolInputKind>,
    /// The call's input (after earlier hooks' rewrites).
    pub input: Value,
    /// For nested calls: the outer `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// For nested calls of a parked run: its `cm_<uuid>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// The agent id of the run's scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The session id of the run's scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session key of the run's scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The agent run id of the run's scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl ToolCallInfo {
    /// The info of a nested call as the bridge hands it to the executor (`toolKind: "tool"`).
    pub fn nested(call: &ToolCall) -> Self {
        ToolCallInfo {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            tool_id: Some(call.tool_id.clone()),
            tool_kind: ToolKind::Tool,
            tool_input_kind: None,
            input: call.input.clone(),
            parent_tool_call_id: call.parent_tool_call_id.clone(),
            code_mode_run_id: call.code_mode_run_id.clone(),
            agent_id: call.scope.agent_id.clone(),
            session_id: call.scope.session_id.clone(),
            session_key: call.scope.session_key.clone(),
            run_id: call.scope.run_id.clone(),
        }
    }

    /// The info of a model-visible `exec` or `wait` call with id `tool_call_id`.
    pub fn outer(kind: OuterKind, tool_call_id: &str, input: &Value, scope: &RunScope) -> Self {
        ToolCallInfo {
            tool_call_id: tool_call_id.to_string(),
            tool_name: kind.tool_name().to_string(),
            tool_id: None,
            tool_kind: kind.tool_kind(),
            tool_input_kind: match kind {
                OuterKind::Exec => ToolInputKind::of_exec_input(input),
                OuterKind::Wait => None,
            },
            input: input.clone(),
            parent_tool_call_id: None,
            code_mode_run_id: None,
            agent_id: scope.agent_id.clone(),
            session_id: scope.session_id.clone(),
            session_key: scope.session_key.clone(),
            run_id: scope.run_id.clone(),
        }
    }

    /// The id messages name: the catalog id, else the tool name.
    pub fn display_id(&self) -> &str {
        self.tool_id.as_deref().unwrap_or(&self.tool_name)
    }
}

/// The `before_tool_call` event: `{event: "before_tool_call", toolCallId, toolName, toolId?,
/// toolKind, toolInputKind?, input, parentToolCallId?, codeModeRunId?, agentId?, sessionId?,
/// sessionKey?, runId?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeforeToolCall {
    /// Always [`HookEvent::BeforeToolCall`].
    pub event: HookEvent,
    /// The call.
    #[serde(flatten)]
    pub call: ToolCallInfo,
}

impl BeforeToolCall {
    /// The event for `call`.
    pub fn new(call: ToolCallInfo) -> Self {
        BeforeToolCall {
            event: HookEvent::BeforeToolCall,
            call,
        }
    }
}

/// The `after_tool_call` event: the `before_tool_call` fields (with the input as executed) plus
/// `result` (a success: the whole tool result, e.g. `{content, details}`) or `error` (the
/// failure message), and `durationMs` (the executor's time, milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterToolCall {
    /// Always [`HookEvent::AfterToolCall`].
    pub event: HookEvent,
    /// The call.
    #[serde(flatten)]
    pub call: ToolCallInfo,
    /// The result, when the call succeeded (or an earlier hook replaced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error message, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the executor took, in milliseconds.
    pub duration_ms: u64,
}

impl AfterToolCall {
    /// The event for `call` that ended with `outcome` after `duration`.
    pub fn new(call: ToolCallInfo, outcome: &Result<Value, String>, duration: Duration) -> Self {
        let (result, error) = match outcome {
            Ok(value) => (Some(value.clone()), None),
            Err(message) => (None, Some(message.clone())),
        };
        AfterToolCall {
            event: HookEvent::AfterToolCall,
            call,
            result,
            error,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// A `before_tool_call` hook's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Go on (with the answer's `input`, if any).
    Allow,
    /// Reject the call.
    Block,
    /// Send the call to approval (docs/contract/host.md#h3).
    Ask,
}

/// A `before_tool_call` answer: `{decision: "allow" | "block" | "ask", reason?, input?}`.
/// `input` (an object) replaces the call's input for later hooks, approval and execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDecision {
    /// The verdict.
    pub decision: Decision,
    /// Why (used in the block message and the approval request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A replacement input object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

impl HookDecision {
    /// `{decision: "allow"}`.
    pub fn allow() -> Self {
        HookDecision {
            decision: Decision::Allow,
            reason: None,
            input: None,
        }
    }

    /// `{decision: "block", reason}`.
    pub fn block(reason: impl Into<String>) -> Self {
        HookDecision {
            decision: Decision::Block,
            reason: Some(reason.into()),
            input: None,
        }
    }

    /// `{decision: "ask", reason?}`.
    pub fn ask(reason: Option<String>) -> Self {
        HookDecision {
            decision: Decision::Ask,
            reason,
            input: None,
        }
    }

    /// The same answer with a replacement input.
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }
}

/// An `after_tool_call` answer: `{result?}`; a `result` replaces the call's outcome (also a
/// failed one) with this whole tool result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterDecision {
    /// The replacement result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl AfterDecision {
    /// `{}`: keep the outcome.
    pub fn keep() -> Self {
        AfterDecision { result: None }
    }

    /// `{result}`: replace it.
    pub fn replace(result: Value) -> Self {
        AfterDecision {
            result: Some(result),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

/// The future a [`ToolHook`] returns: the answer, or `Err(reason)` when the hook failed (the call
/// is then blocked with that reason: fail closed).
pub type HookFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'static>>;

/// A tool-call hook (docs/contract/host.md#h2) for Rust hosts. Both methods default to "no opinion", so a
/// hook implements the phase it cares about. Hooks may be slow: each call awaits its own hooks,
/// other calls and the guest are not held up.
pub trait ToolHook: Send + Sync + 'static {
    /// The name block reasons use for this hook (`hook "<name>" …`).
    fn name(&self) -> &str {
        "hook"
    }

    /// True when the hook applies to calls of the tool `name` (catalog `id`, when it has one).
    fn applies_to(&self, name: &str, id: Option<&str>) -> bool {
        let _ = (name, id);
        true
    }

    /// Answers a `before_tool_call` event; `Err(reason)` blocks the call.
    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        let _ = event;
        Box::pin(async { Ok(HookDecision::allow()) })
    }

    /// Answers an `after_tool_call` event; `Err(reason)` withholds the result (the call fails).
    fn after(&self, event: &AfterToolCall) -> HookFuture<AfterDecision> {
        let _ = event;
        Box::pin(async { Ok(AfterDecision::keep()) })
    }
}

/// What the `before_tool_call` hooks decided for a call that was not blocked.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeVerdict {
    /// The input after every rewrite.
    pub input: Value,
    /// A hook answered `ask`.
    pub ask: bool,
    /// The reason of the first `ask`, if it gave one.
    pub ask_reason: Option<String>,
}

/// Hooks in order. `before` hooks run one after another (each sees the input the previous ones
/// left) and the first block stops the chain; `after` hooks likewise see the previous
/// replacement. A hook runs only for the calls it [applies to](ToolHook::applies_to).
#[derive(Clone, Default)]
pub struct HookChain {
    hooks: Vec<Arc<dyn ToolHook>>,
}

impl HookChain {
    /// An empty chain.
    pub fn new() -> Self {
        HookChain::default()
    }

    /// The command hooks of `config`: every `beforeToolCall` entry as a before hook and every
    /// `afterToolCall` entry as an after hook, in config order.
    pub fn from_config(config: &HookConfig) -> Self {
        let mut chain = HookChain::new();
        for spec in &config.before_tool_call {
            chain.push(Arc::new(CommandHook::before(spec.clone())));
        }
        for spec in &config.after_tool_call {
            chain.push(Arc::new(CommandHook::after(spec.clone())));
        }
        chain
    }

    /// Appends `hook`.
    pub fn push(&mut self, hook: Arc<dyn ToolHook>) {
        self.hooks.push(hook);
    }

    /// The chain with `hook` appended.
    pub fn with(mut self, hook: Arc<dyn ToolHook>) -> Self {
        self.push(hook);
        self
    }

    /// Number of hooks.
    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    /// True when there is no hook.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Runs the `before_tool_call` hooks for `call`. `Err(reason)` when one blocked or failed; a
    /// block without a reason gets `hook "<name>" blocked the call`, and a replacement input that
    /// is not an object blocks with `hook "<name>" answered with an input that is not an object`.
    pub async fn run_before(&self, call: ToolCallInfo) -> Result<BeforeVerdict, String> {
        let mut event = BeforeToolCall::new(call);
        let mut ask: Option<Option<String>> = None;
        for hook in &self.hooks {
            if !hook.applies_to(&event.call.tool_name, event.call.tool_id.as_deref()) {
                continue;
            }
            let answer = hook.before(&event).await?;
            if let Some(input) = answer.input {
                if !input.is_object() {
                    return Err(format!(
                        "hook {:?} answered with an input that is not an object",
                        hook.name()
                    ));
                }
                event.call.input = input;
            }
            match answer.decision {
                Decision::Allow => {}
                Decision::Block => {
                    return Err(answer
                        .reason
                        .unwrap_or_else(|| format!("hook {:?} blocked the call", hook.name())))
                }
                Decision::Ask => {
                    if ask.is_none() {
                        ask = Some(answer.reason);
                    }
                }
            }
        }
        Ok(BeforeVerdict {
            input: event.call.input,
            ask: ask.is_some(),
            ask_reason: ask.flatten(),
        })
    }

    /// Runs the `after_tool_call` hooks for `call`, which ended with `outcome` after `duration`.
    /// Returns the final outcome, or `Err(reason)` when a hook failed (the result is withheld).
    pub async fn run_after(
        &self,
        call: &ToolCallInfo,
        mut outcome: Result<Value, String>,
        duration: Duration,
    ) -> Result<Result<Value, String>, String> {
        for hook in &self.hooks {
            if !hook.applies_to(&call.tool_name, call.tool_id.as_deref()) {
                continue;
            }
            let event = AfterToolCall::new(call.clone(), &outcome, duration);
            if let Some(result) = hook.after(&event).await?.result {
                outcome = Ok(result);
            }
        }
        Ok(outcome)
    }
}

/// Which event a [`CommandHook`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPhase {
    /// `hooks.beforeToolCall`.
    Before,
    /// `hooks.afterToolCall`.
    After,
}

/// A configured command hook (docs/contract/host.md#h2).
///
/// Protocol: the command (`command[0]` with the other entries as arguments, no shell) starts
/// with the event as one JSON document on stdin (then closed), in its own process group, with an
/// environment of [`HOOK_ENVIRONMENT`] only, the host's working directory and stderr. Its
/// stdout, at most [`HOOK_STDOUT_LIMIT`] bytes, is the answer: a [`HookDecision`] object for
/// `before_tool_call`, an [`AfterDecision`] object for `after_tool_call`.
///
/// Fail closed: the hook blocks the call, with a reason naming it, when it cannot start
/// (`hook "<name>" could not start: <error>`), exits non-zero (`hook "<name>" exited with status
/// <n>` / `was killed by signal <n>`), prints too much (`hook "<name>" printed more than 1048576
/// bytes`), prints something that is not an answer (`hook "<name>" printed an invalid answer
/// (expected …)`), or outlives `timeoutMs` (`hook "<name>" did not answer within <ms> ms`). The
/// process group is killed once the hook has answered, failed or been abandoned.
#[derive(Debug, Clone)]
pub struct CommandHook {
    spec: HookSpec,
    phase: HookPhase,
}

impl CommandHook {
    /// A `before_tool_call` hook running `spec`.
    pub fn before(spec: HookSpec) -> Self {
        CommandHook {
            spec,
            phase: HookPhase::Before,
        }
    }

    /// An `after_tool_call` hook running `spec`.
    pub fn after(spec: HookSpec) -> Self {
        CommandHook {
            spec,
            phase: HookPhase::After,
        }
    }

    /// The hook's configuration.
    pub fn spec(&self) -> &HookSpec {
        &self.spec
    }

    /// The event it answers.
    pub fn phase(&self) -> HookPhase {
        self.phase
    }
}

const BEFORE_ANSWER_SHAPE: &str =
    r#"expected {"decision": "allow" | "block" | "ask", "reason"?: string, "input"?: object}"#;
const AFTER_ANSWER_SHAPE: &str = r#"expected {"result"?: any}"#;

impl ToolHook for CommandHook {
    fn name(&self) -> &str {
        self.spec.name()
    }

    fn applies_to(&self, name: &str, id: Option<&str>) -> bool {
        self.spec.applies_to(name, id)
    }

    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        if self.phase != HookPhase::Before {
            return Box::pin(async { Ok(HookDecision::allow()) });
        }
        let spec = self.spec.clone();
        let stdin = serde_json::to_vec(event);
        Box::pin(async move {
            let stdin = stdin.map_err(|e| format!("hook {:?} failed: {e}", spec.name()))?;
            let stdout = run_hook_command(&spec, stdin).await?;
            let invalid = || {
                format!(
                    "hook {:?} printed an invalid answer ({BEFORE_ANSWER_SHAPE})",
                    spec.name()
                )
            };
            let value = answer_object(&stdout).ok_or_else(invalid)?;
            let answer: HookDecision = serde_json::from_value(value).map_err(|_| invalid())?;
            if answer.input.as_ref().is_some_and(|i| !i.is_object()) {
                return Err(invalid());
            }
            Ok(answer)
        })
    }

    fn after(&self, event: &AfterToolCall) -> HookFuture<AfterDecision> {
        if self.phase != HookPhase::After {
            return Box::pin(async { Ok(AfterDecision::keep()) });
        }
        let spec = self.spec.clone();
        let stdin = serde_json::to_vec(event);
        Box::pin(async move {
            let stdin = stdin.map_err(|e| format!("hook {:?} failed: {e}", spec.name()))?;
            let stdout = run_hook_command(&spec, stdin).await?;
            let invalid = || {
                format!(
                    "hook {:?} printed an invalid answer ({AFTER_ANSWER_SHAPE})",
                    spec.name()
                )
            };
            let value = answer_object(&stdout).ok_or_else(invalid)?;
            serde_json::from_value(value).map_err(|_| invalid())
        })
    }
}

/// The hook's stdout as a JSON object (surrounding whitespace allowed), else `None`.
fn answer_object(stdout: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(stdout)
        .ok()
        .filter(Value::is_object)
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a hook command with `stdin` and returns its stdout, or the block reason.
async fn run_hook_command(spec: &HookSpec, stdin: Vec<u8>) -> Result<Vec<u8>, String> {
    let name = spec.name();
    let Some((program, args)) = spec.command.split_first() else {
        return Err(format!("hook {name:?} has no command"));
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    for key in HOOK_ENVIRONMENT {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("hook {name:?} could not start: {e}"))?;
    // Killed before the hook is reaped, never after (see `ProcessGroup`): on a timeout or an
    // error by the guard's drop, after a normal exit right before `child.wait()`.
    let mut group = ProcessGroup::of(&child);
    let stdin_pipe = child.stdin.take();
    // Written on its own task so a hook that floods stdout without reading stdin is still seen.
    let _writer = AbortOnDrop(tokio::spawn(async move {
        if let Some(mut pipe) = stdin_pipe {
            // A hook that exits without reading its input is fine (EPIPE is ignored).
            let _ = pipe.write_all(&stdin).await;
            let _ = pipe.shutdown().await;
        }
    }));
    let stdout = child.stdout.take();
    let work = async {
        let mut out = Vec::new();
        if let Some(stdout) = stdout {
            stdout
                .take(HOOK_STDOUT_LIMIT as u64 + 1)
                .read_to_end(&mut out)
                .await
                .map_err(|e| format!("hook {name:?} failed: {e}"))?;
        }
        if out.len() > HOOK_STDOUT_LIMIT {
            return Err(format!(
                "hook {name:?} printed more than {HOOK_STDOUT_LIMIT} bytes"
            ));
        }
        // The answer is complete: wait for the exit without reaping, kill what the hook left
        // behind while its group id is still ours, then reap.
        group.leader_exited().await;
        group.kill();
        let status = child
            .wait()
            .await
            .map_err(|e| format!("hook {name:?} failed: {e}"))?;
        if !status.success() {
            return Err(exit_reason(name, status));
        }
        Ok(out)
    };
    match tokio::time::timeout(spec.timeout(), work).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!(
            "hook {name:?} did not answer within {} ms",
            spec.timeout_ms
        )),
    }
}

fn exit_reason(name: &str, status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("hook {name:?} exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("hook {name:?} was killed by signal {signal}");
        }
    }
    format!("hook {name:?} exited with {status}")
}

// ---------------------------------------------------------------------------------------------
// Approvals (docs/contract/host.md#h3)
// ---------------------------------------------------------------------------------------------

/// An approval the pipeline asks for: one per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// `approval_<uuid>`, unique per request.
    pub approval_id: String,
    /// The call's id (`tool_search_code:…` for nested calls).
    pub tool_call_id: String,
    /// The catalog id (`exec` / `wait` for the outer calls).
    pub tool_id: String,
    /// The tool name.
    pub tool_name: String,
    /// The input the tool would run with (after hook rewrites).
    pub input: Value,
    /// Why approval is needed: the hook's `ask` reason, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For nested calls: the outer `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// For nested calls: the guest request's bridge id (`bridge:call:1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge_id: Option<String>,
    /// The scope of the run the call belongs to.
    pub scope: RunScope,
}

impl ApprovalRequest {
    /// The `pendingApprovals` entry of this request.
    pub fn pending(&self) -> PendingApproval {
        PendingApproval {
            approval_id: self.approval_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            tool_id: self.tool_id.clone(),
            input: self.input.clone(),
        }
    }
}

/// One entry of a `waiting` result's `pendingApprovals` (docs/contract/host.md#h3):
/// `{approvalId, toolCallId, toolId, input}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The id to answer.
    pub approval_id: String,
    /// The waiting call's id.
    pub tool_call_id: String,
    /// The tool's catalog id.
    pub tool_id: String,
    /// The input it would run with.
    pub input: Value,
}

/// `"allow"` or `"deny"`: the trajectory's decision type (one home, in `codemode-telemetry`;
/// `approval_resolved` carries it as `decision`).
pub use codemode_telemetry::ApprovalDecision as ApprovalVerdict;

/// An answer to an approval: `{decision: "allow" | "deny", reason?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    /// The verdict.
    pub decision: ApprovalVerdict,
    /// Why (a denial without one reads `denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalDecision {
    /// `{decision: "allow"}`.
    pub fn allow() -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Allow,
            reason: None,
        }
    }

    /// `{decision: "deny"}`.
    pub fn deny() -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Deny,
            reason: None,
        }
    }

    /// `{decision: "deny", reason}`.
    pub fn deny_because(reason: impl Into<String>) -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Deny,
            reason: Some(reason.into()),
        }
    }

    /// True for `allow`.
    pub fn is_allowed(&self) -> bool {
        self.decision == ApprovalVerdict::Allow
    }
}

/// The future an [`Approver`] returns.
pub type ApprovalFuture = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'static>>;

/// Answers approvals (docs/contract/host.md#h3): a terminal prompt, an MCP elicitation, a fixed policy, or the
/// [`ApprovalBroker`] that waits for the host to answer by id. The future may take as long as a
/// person needs; the call stays pending meanwhile.
pub trait Approver: Send + Sync + 'static {
    /// Asks for one approval.
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture;
}

/// An approver that always gives the same answer (`--approve all` / `--approve none`).
#[derive(Debug, Clone)]
pub struct FixedApprover(pub ApprovalDecision);

impl Approver for FixedApprover {
    fn request(&self, _request: ApprovalRequest) -> ApprovalFuture {
        let decision = self.0.clone();
        Box::pin(async move { decision })
    }
}

/// [`ApprovalBroker::answer`] was given an id that is not outstanding (never issued, already
/// answered, expired, or its call was cancelled).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approvalId: {0}")]
pub struct UnknownApproval(pub String);

struct Outstanding {
    seq: u64,
    request: ApprovalRequest,
    answer: oneshot::Sender<ApprovalDecision>,
}

#[derive(Default)]
struct BrokerState {
    next_seq: u64,
    outstanding: HashMap<String, Outstanding>,
}

struct BrokerInner {
    ttl: Duration,
    delegate: Option<Arc<dyn Approver>>,
    state: Mutex<BrokerState>,
}

impl BrokerInner {
    fn state(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The registry of outstanding approvals, itself an [`Approver`].
///
/// Each request is recorded until it is answered, either by [`answer`](Self::answer) (a
/// session's `approve` request) or by the optional delegate approver (a terminal prompt, an MCP
/// elicitation), whichever comes first; one still outstanding after the broker's TTL (use the
/// config's `snapshotTtlSeconds`) is denied with reason `approval expired`. A request whose call
/// is dropped (timed out, run dropped) leaves the registry. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct ApprovalBroker {
    inner: Arc<BrokerInner>,
}

impl ApprovalBroker {
    /// A broker whose approvals expire after `ttl`, answered only through [`answer`](Self::answer).
    pub fn new(ttl: Duration) -> Self {
        ApprovalBroker {
            inner: Arc::new(BrokerInner {
                ttl,
                delegate: None,
                state: Mutex::new(BrokerState::default()),
            }),
        }
    }

    /// A broker that also asks `delegate` for every request; the first answer (delegate or
    /// [`answer`](Self::answer)) wins.
    pub fn with_delegate(ttl: Duration, delegate: Arc<dyn Approver>) -> Self {
        ApprovalBroker {
            inner: Arc::new(BrokerInner {
                ttl,
                delegate: Some(delegate),
                state: Mutex::new(BrokerState::default()),
            }),
        }
    }

    /// How long an approval may stay outstanding.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// Every outstanding request, oldest first.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let state = self.inner.state();
        let mut all: Vec<&Outstanding> = state.outstanding.values().collect();
        all.sort_by_key(|o| o.seq);
        all.into_iter().map(|o| o.request.clone()).collect()
    }

    /// The `pendingApprovals` entries of the outstanding requests that satisfy `keep`, oldest
    /// first.
    pub fn pending_where(&self, keep: impl Fn(&ApprovalRequest) -> bool) -> Vec<PendingApproval> {
        self.pending()
            .iter()
            .filter(|r| keep(r))
            .map(ApprovalRequest::pending)
            .collect()
    }

    /// Answers the outstanding approval `approval_id`; the waiting call then goes on (allow) or
    /// fails (deny).
    ///
    /// # Errors
    /// [`UnknownApproval`] when no such approval is outstanding.
    pub fn answer(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), UnknownApproval> {
        let outstanding = self.inner.state().outstanding.remove(approval_id);
        match outstanding {
            Some(o) => o
                .answer
                .send(decision)
                .map_err(|_| UnknownApproval(approval_id.to_string())),
            None => Err(UnknownApproval(approval_id.to_string())),
        }
    }

    /// Denies every outstanding approval with `reason` (session end, shutdown); returns how many.
    pub fn deny_all(&self, reason: Option<&str>) -> usize {
        let drained: Vec<Outstanding> = self
            .inner
            .state()
            .outstanding
            .drain()
            .map(|(_, o)| o)
            .collect();
        let count = drained.len();
        for o in drained {
            let _ = o.answer.send(ApprovalDecision::deny_because(
                reason.unwrap_or(APPROVAL_CANCELLED),
            ));
        }
        count
    }
}

/// One run's view of an [`ApprovalBroker`]: forwards every request to the broker and remembers
/// the ids it forwarded while they are outstanding, so a `waiting` result lists exactly that
/// run's `pendingApprovals` (docs/contract/host.md#h9), whatever else the broker holds.
#[derive(Clone)]
pub(crate) struct RunApprovals {
    broker: Arc<ApprovalBroker>,
    asked: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl RunApprovals {
    /// A view over `broker` that has asked nothing yet.
    pub(crate) fn new(broker: Arc<ApprovalBroker>) -> Self {
        RunApprovals {
            broker,
            asked: Arc::default(),
        }
    }

    /// The outstanding approvals this run asked for, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.is_empty() {
            return Vec::new();
        }
        self.broker
            .pending_where(|request| asked.contains(&request.approval_id))
    }
}

/// Forgets a forwarded approval id when its request's future ends or is dropped.
struct Asked {
    asked: Arc<Mutex<std::collections::HashSet<String>>>,
    approval_id: String,
}

impl Drop for Asked {
    fn drop(&mut self) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.approval_id);
    }
}

impl Approver for RunApprovals {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let approval_id = request.approval_id.clone();
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(approval_id.clone());
        let asked = Asked {
            asked: self.asked.clone(),
            approval_id,
        };
        let answer = self.broker.request(request);
        Box::pin(async move {
            let _asked = asked;
            answer.await
        })
    }
}

/// Removes an approval from its broker when its call's future ends or is dropped.
struct Registration {
    inner: Arc<BrokerInner>,
    approval_id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.inner.state().outstanding.remove(&self.approval_id);
    }
}

impl Approver for ApprovalBroker {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (tx, rx) = oneshot::channel();
        let approval_id = request.approval_id.clone();
        {
            let mut state = self.inner.state();
            let seq = state.next_seq;
            state.next_seq += 1;
            state.outstanding.insert(
                approval_id.clone(),
                Outstanding {
                    seq,
                    request: request.clone(),
                    answer: tx,
                },
            );
        }
        let registration = Registration {
            inner: self.inner.clone(),
            approval_id,
        };
        let delegate = self.inner.delegate.as_ref().map(|d| d.request(request));
        let ttl = self.inner.ttl;
        Box::pin(async move {
            let _registration = registration;
            let by_id = async move {
                rx.await
                    .unwrap_or_else(|_| ApprovalDecision::deny_because(APPROVAL_CANCELLED))
            };
            let answered = async move {
                match delegate {
                    Some(delegate) => tokio::select! {
                        decision = delegate => decision,
                        decision = by_id => decision,
                    },
                    None => by_id.await,
                }
            };
            tokio::time::timeout(ttl, answered)
                .await
                .unwrap_or_else(|_| ApprovalDecision::deny_because(APPROVAL_EXPIRED))
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The pipeline
// ---------------------------------------------------------------------------------------------

/// A [`ToolExecutor`] that runs every call through policy, hooks and approval before the wrapped
/// executor, and the after-hooks behind it (docs/contract/host.md#h2):
///
/// 1. **policy**: a tool the [`ToolPolicy`] does not allow fails with
///    [`unknown_tool_message`] for its id;
/// 2. **`before_tool_call` hooks** ([`HookChain::run_before`]): a block fails with
///    [`blocked_message`]; a rewritten input replaces the call's input;
/// 3. **approval**, when a hook asked or the tool matches `tools.approvals.require`: the
///    [`Approver`] decides; a denial fails with [`not_approved_message`] (reason `denied` when it
///    gave none; with no approver configured every approval is denied) and the tool never runs;
/// 4. **execute** the wrapped executor with the final input;
/// 5. **`after_tool_call` hooks** ([`HookChain::run_after`]): a `result` replaces the outcome; a
///    failing hook fails the call with [`blocked_after_message`].
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
        }
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

    /// The same pipeline with `approver` (e.g. an [`ApprovalBroker`]).
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

    /// Runs `call` through every step (see the type's docs) and says how it ended:
    /// `Ok(result)` (the whole tool result, after the after-hooks), or a [`CallError`] whose
    /// `Display` is the message the guest sees and whose [`status`](CallError::status) is the
    /// trajectory's `nested_tool_result` status.
    pub async fn call(&self, mut call: ToolCall) -> Result<Value, CallError> {
        if !self.policy.allows(&call.tool_name, &call.tool_id) {
            return Err(CallError::NotAllowed(unknown_tool_message(&call.tool_id)));
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
                .map_err(|reason| CallError::Blocked(blocked_message(&call.tool_id, &reason)))?;
            call.input = verdict.input;
            (verdict.ask, verdict.ask_reason)
        };
        if ask_hook
            || self
                .policy
                .requires_approval(&call.tool_name, &call.tool_id)
        {
            let request = ApprovalRequest {
                approval_id: new_approval_id(),
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
            self.record_resolved(
                &approval_id,
                &call.tool_call_id,
                call.code_mode_run_id.as_deref(),
                &decision,
            );
            denial_reason(&decision).map_or(Ok(()), |reason| {
                Err(CallError::NotApproved(not_approved_message(
                    &call.tool_id,
                    &reason,
                )))
            })?;
        }
        if self.hooks.is_empty() {
            return self.executor.execute(call).await.map_err(CallError::Failed);
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
            Ok(outcome) => outcome.map_err(CallError::Failed),
            Err(reason) => Err(CallError::BlockedAfter(blocked_after_message(
                &tool_id, &reason,
            ))),
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The [`ToolPolicy`] does not allow the tool: [`unknown_tool_message`] (docs/contract/host.md#h1).
    #[error("{0}")]
    NotAllowed(String),
    /// A `before_tool_call` hook blocked the call (or failed): [`blocked_message`].
    #[error("{0}")]
    Blocked(String),
    /// Approval was denied, expired or cancelled: [`not_approved_message`]; the tool never ran.
    #[error("{0}")]
    NotApproved(String),
    /// The tool ran, but an `after_tool_call` hook failed and withheld the result:
    /// [`blocked_after_message`].
    #[error("{0}")]
    BlockedAfter(String),
    /// The wrapped executor failed (its message, verbatim).
    #[error("{0}")]
    Failed(String),
}

impl CallError {
    /// The trajectory status of this outcome: `blocked` for a policy refusal or a hook block
    /// (before or after execution), `denied` for a refused approval, `error` for a tool failure.
    pub fn status(&self) -> NestedStatus {
        match self {
            CallError::NotAllowed(_) | CallError::Blocked(_) | CallError::BlockedAfter(_) => {
                NestedStatus::Blocked
            }
            CallError::NotApproved(_) => NestedStatus::Denied,
            CallError::Failed(_) => NestedStatus::Error,
        }
    }

    /// The message (the same text as `Display`).
    pub fn message(&self) -> &str {
        match self {
            CallError::NotAllowed(m)
            | CallError::Blocked(m)
            | CallError::NotApproved(m)
            | CallError::BlockedAfter(m)
            | CallError::Failed(m) => m,
        }
    }
}

impl From<CallError> for String {
    fn from(e: CallError) -> String {
        match e {
            CallError::NotAllowed(m)
            | CallError::Blocked(m)
            | CallError::NotApproved(m)
            | CallError::BlockedAfter(m)
            | CallError::Failed(m) => m,
        }
    }
}

impl ToolExecutor for ToolPipeline {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let this = self.clone();
        Box::pin(async move { this.call(call).await.map_err(String::from) })
    }
}

fn new_approval_id() -> String {
    format!("approval_{}", uuid::Uuid::new_v4())
}

/// Asks `approver` (none: denied).
async fn ask(approver: Option<&dyn Approver>, request: ApprovalRequest) -> ApprovalDecision {
    match approver {
        Some(approver) => approver.request(request).await,
        None => ApprovalDecision::deny(),
    }
}

/// The reason of a denial (`denied` when it gave none or a blank one); `None` for an allow.
pub(crate) fn denial_reason(decision: &ApprovalDecision) -> Option<String> {
    if decision.is_allowed() {
        return None;
    }
    Some(
        decision
            .reason
            .clone()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_DENIAL_REASON.to_string()),
    )
}

/// Asks `approver` (none: denied); `Err(reason)` on a denial.
async fn approve(approver: Option<&dyn Approver>, request: ApprovalRequest) -> Result<(), String> {
    match denial_reason(&ask(approver, request).await) {
        None => Ok(()),
        Some(reason) => Err(reason),
    }
}

// ---------------------------------------------------------------------------------------------
// Outer calls: the model-visible exec and wait
// ---------------------------------------------------------------------------------------------

/// A model-visible code-mode call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OuterKind {
    /// `exec` (`toolKind: "code_mode_exec"`).
    Exec,
    /// `wait` (`toolKind: "code_mode_wait"`).
    Wait,
}

impl OuterKind {
    /// `"exec"` or `"wait"`: the tool name hooks match against and messages name.
    pub fn tool_name(self) -> &'static str {
        match self {
            OuterKind::Exec => "exec",
            OuterKind::Wait => "wait",
        }
    }

    /// The event's `toolKind`.
    pub fn tool_kind(self) -> ToolKind {
        match self {
            OuterKind::Exec => ToolKind::CodeModeExec,
            OuterKind::Wait => ToolKind::CodeModeWait,
        }
    }
}

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
        .map_err(|reason| blocked_message(name, &reason))?;
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
        approve(approver, request)
            .await
            .map_err(|reason| not_approved_message(name, &reason))?;
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
    match hooks.run_after(&info, Ok(result), duration).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(message)) => Err(message),
        Err(reason) => Err(blocked_after_message(kind.tool_name(), &reason)),
    }
}
