//! The hook model of docs/contract/host.md#h2: the `before_tool_call` / `after_tool_call`
//! events and their answers, the [`ToolHook`] trait, the ordered [`HookChain`], and
//! [`OuterKind`] (the model-visible `exec` / `wait` calls hooks also see).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall};
/// `toolKind` and `toolInputKind` of hook events: the trajectory's types (one home, in
/// `codemode-telemetry`), with the same wire names.
pub use codemode_telemetry::{ToolInputKind, ToolKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub fn new<E: std::fmt::Display>(
        call: ToolCallInfo,
        outcome: &Result<Value, E>,
        duration: Duration,
    ) -> Self {
        let (result, error) = match outcome {
            Ok(value) => (Some(value.clone()), None),
            Err(error) => (None, Some(error.to_string())),
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
    /// The outcome's error is whatever the caller's is (the executor's [`ToolError`](codemode_bridge::ToolError)
    /// for nested calls); hooks see its `Display`.
    pub async fn run_after<E: std::fmt::Display>(
        &self,
        call: &ToolCallInfo,
        mut outcome: Result<Value, E>,
        duration: Duration,
    ) -> Result<Result<Value, E>, String> {
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
