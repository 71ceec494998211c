//! Trajectory events (docs/contract/host.md#h4): one JSON line each.
//!
//! Every line is an object with `type` first, then `ts` (RFC 3339, UTC, milliseconds), then the
//! scope ids that are known (`agentId`, `sessionId`, `sessionKey`, `runId`), then the fields of
//! the event's kind, camelCase, with absent optional fields left out:
//!
//! ```json
//! {"type":"nested_tool_call","ts":"2026-12-01T10:00:00.010Z","sessionId":"s1",
//!  "toolCallId":"tool_search_code:call_1:weather:1","parentToolCallId":"call_1",
//!  "toolId":"openclaw:core:weather","toolName":"weather","method":"callValue","input":{}}
//! ```
//!
//! `runId` is the scope's **agent** run id (as in `RunScope` and the `before_tool_call` hook
//! event, docs/contract/host.md#h2). The code-mode run id (`cm_<uuid>`) is `codeModeRunId`,
//! also on `tool_result`, where docs/contract/host.md#h4 calls it `runId?`: both can be known at once in an agent turn,
//! and a line cannot hold two values under one key.

use codemode_bridge::RunScope;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::redact::{redact_in_place, redact_string};

/// The scope keys of a line, in the order they are written.
const SCOPE_KEYS: [&str; 4] = ["agentId", "sessionId", "sessionKey", "runId"];

/// The scope ids that are set, as `(key, value)` in [`SCOPE_KEYS`] order.
fn scope_fields(scope: &RunScope) -> [(&'static str, Option<&String>); 4] {
    [
        ("agentId", scope.agent_id.as_ref()),
        ("sessionId", scope.session_id.as_ref()),
        ("sessionKey", scope.session_key.as_ref()),
        ("runId", scope.run_id.as_ref()),
    ]
}

/// What kind of provider-visible tool a call is (`toolKind`, docs/contract/host.md#h2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Code mode's `exec`: `"code_mode_exec"`.
    CodeModeExec,
    /// Code mode's `wait`: `"code_mode_wait"`.
    CodeModeWait,
    /// Any other (direct) tool: `"tool"`.
    Tool,
}

impl ToolKind {
    /// The wire name, as serialised (e.g. `"code_mode_exec"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::CodeModeExec => "code_mode_exec",
            ToolKind::CodeModeWait => "code_mode_wait",
            ToolKind::Tool => "tool",
        }
    }
}

/// The language of an `exec` call (`toolInputKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolInputKind {
    /// `"javascript"`.
    Javascript,
    /// `"typescript"`.
    Typescript,
}

impl ToolInputKind {
    /// The kind of an `exec` input (`{code | command, language?, …}`): its `language`, with an
    /// absent or `null` one meaning `"javascript"`; `None` for a `language` that is neither
    /// (the argument checks of docs/contract/surface.md#s2-2 reject it later).
    pub fn of_exec_input(input: &Value) -> Option<ToolInputKind> {
        match input.get("language") {
            None | Some(Value::Null) => Some(ToolInputKind::Javascript),
            Some(Value::String(s)) if s == "javascript" => Some(ToolInputKind::Javascript),
            Some(Value::String(s)) if s == "typescript" => Some(ToolInputKind::Typescript),
            Some(_) => None,
        }
    }

    /// The wire name, as serialised (e.g. `"javascript"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolInputKind::Javascript => "javascript",
            ToolInputKind::Typescript => "typescript",
        }
    }
}

/// The status of a provider-visible call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// `"completed"`: the call finished (a direct tool that returned, a finished run).
    Completed,
    /// `"waiting"`: the code-mode run parked; continue with `wait`.
    Waiting,
    /// `"failed"`: the call or the run failed.
    Failed,
}

impl ToolStatus {
    /// The wire name, as serialised (e.g. `"completed"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Completed => "completed",
            ToolStatus::Waiting => "waiting",
            ToolStatus::Failed => "failed",
        }
    }
}

/// The bridge method of a nested call (`method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NestedMethod {
    /// `tools.call` and conveniences returning the whole result: `"call"`.
    #[serde(rename = "call")]
    Call,
    /// `tools.callValue` and conveniences returning `details`: `"callValue"`.
    #[serde(rename = "callValue")]
    CallValue,
    /// An `MCP.<server>.<tool>` dispatch: `"namespace"`.
    #[serde(rename = "namespace")]
    Namespace,
    /// A `nodes` dispatch: `"nodes"`.
    #[serde(rename = "nodes")]
    Nodes,
}

impl NestedMethod {
    /// The wire name, as serialised (e.g. `"call"`).
    pub fn as_str(self) -> &'static str {
        match self {
            NestedMethod::Call => "call",
            NestedMethod::CallValue => "callValue",
            NestedMethod::Namespace => "namespace",
            NestedMethod::Nodes => "nodes",
        }
    }
}

/// How a nested call ended (`status` of `nested_tool_result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NestedStatus {
    /// `"ok"`: the tool returned a result.
    Ok,
    /// `"error"`: the tool failed (or its output contract did not hold).
    Error,
    /// `"blocked"`: policy or a `before_tool_call` hook blocked it before execution, or an
    /// `after_tool_call` hook failed and withheld its result.
    Blocked,
    /// `"denied"`: approval was refused (or expired).
    Denied,
    /// `"timeout"`: the host's timeout around the call fired.
    Timeout,
}

impl NestedStatus {
    /// The wire name, as serialised (e.g. `"ok"`).
    pub fn as_str(self) -> &'static str {
        match self {
            NestedStatus::Ok => "ok",
            NestedStatus::Error => "error",
            NestedStatus::Blocked => "blocked",
            NestedStatus::Denied => "denied",
            NestedStatus::Timeout => "timeout",
        }
    }
}

/// An approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// `"allow"`.
    Allow,
    /// `"deny"` (also a TTL expiry or a client without elicitation).
    Deny,
}

/// Why a run parked: the wire names of the `waiting` result's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParkReason {
    /// `"pending_tools"`.
    PendingTools,
    /// `"yield"`.
    Yield,
}

/// `tool_call`: the model called a provider-visible tool (`exec`, `wait` or a direct tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    /// The provider's tool-call id.
    pub tool_call_id: String,
    /// The tool name the model used (`exec`, `wait`, …).
    pub tool_name: String,
    /// What kind of tool it is.
    pub tool_kind: ToolKind,
    /// The language, for `exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input_kind: Option<ToolInputKind>,
    /// The arguments (after any hook rewrote them), redacted.
    pub input: Value,
}

/// `tool_result`: a provider-visible call returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    /// The provider's tool-call id (as on the `tool_call`).
    pub tool_call_id: String,
    /// The tool name.
    pub tool_name: String,
    /// What kind of tool it is.
    pub tool_kind: ToolKind,
    /// The language, for `exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input_kind: Option<ToolInputKind>,
    /// `completed`, `waiting` or `failed`.
    pub status: ToolStatus,
    /// The code-mode run id of a `waiting` result (docs/contract/host.md#h4's `runId?`; see the module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// Wall time of the call, in milliseconds.
    pub duration_ms: u64,
    /// The result the model receives (for `exec`/`wait`, the code-mode result object), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error text of a failed direct tool, cut like any string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `nested_tool_call`: guest code started a tool call through the bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCallEvent {
    /// `tool_search_code:<parent>:<tool name>:<seq>` (docs/contract/catalog.md#s3-5).
    pub tool_call_id: String,
    /// The original `exec` call's id, even during a `wait`; absent when the host gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The code-mode run id, once the run has parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// The catalog id, e.g. `openclaw:core:read`.
    pub tool_id: String,
    /// The registered tool name, e.g. `read`.
    pub tool_name: String,
    /// The bridge method.
    pub method: NestedMethod,
    /// The JSON-adapted input, redacted.
    pub input: Value,
}

/// `nested_tool_result`: a nested call settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolResultEvent {
    /// The nested call's id (as on its `nested_tool_call`).
    pub tool_call_id: String,
    /// The original `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The code-mode run id, once the run has parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// The catalog id.
    pub tool_id: String,
    /// The registered tool name.
    pub tool_name: String,
    /// The bridge method.
    pub method: NestedMethod,
    /// How it ended.
    pub status: NestedStatus,
    /// Wall time from dispatch to settlement, in milliseconds.
    pub duration_ms: u64,
    /// The tool result (status `ok`), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error message the guest sees (any other status), cut like any string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `approval_requested`: a nested call waits for a person's decision (docs/contract/host.md#h3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequestedEvent {
    /// The approval id (as in `pendingApprovals`).
    pub approval_id: String,
    /// The nested call's id.
    pub tool_call_id: String,
    /// The original `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The code-mode run id, once the run has parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// The catalog id.
    pub tool_id: String,
    /// The registered tool name.
    pub tool_name: String,
    /// The input to approve, redacted.
    pub input: Value,
    /// Why approval is needed (a hook's reason, or the matching `tools.approvals.require` rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `approval_resolved`: the decision on an approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResolvedEvent {
    /// The approval id.
    pub approval_id: String,
    /// The nested call's id.
    pub tool_call_id: String,
    /// The code-mode run id, once the run has parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// `allow` or `deny`.
    pub decision: ApprovalDecision,
    /// The reason given with the decision (a denial's reason reaches the guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `run_parked`: a code-mode run was snapshotted and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunParkedEvent {
    /// `cm_<uuid>`.
    pub code_mode_run_id: String,
    /// The provider call (`exec` or `wait`) whose result is this `waiting`.
    pub tool_call_id: String,
    /// The original `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Why it parked.
    pub reason: ParkReason,
    /// Unsettled bridge requests at the park.
    pub pending_tool_calls: usize,
    /// The stored snapshot's size, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_bytes: Option<u64>,
}

/// `run_resumed`: a `wait` restored a parked run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResumedEvent {
    /// `cm_<uuid>`.
    pub code_mode_run_id: String,
    /// The `wait` call's id.
    pub tool_call_id: String,
    /// The original `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Settled tool results delivered on resume.
    pub settled_tool_calls: usize,
}

/// `run_expired` / `run_aborted`: a parked or running code-mode run was dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEndedEvent {
    /// `cm_<uuid>`, when the run had parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mode_run_id: Option<String>,
    /// The original `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Free text: `snapshot TTL`, `session ended`, an abort reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The kind of a trajectory event and its fields; `type` is the snake_case variant name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// `tool_call`.
    ToolCall(ToolCallEvent),
    /// `tool_result`.
    ToolResult(ToolResultEvent),
    /// `nested_tool_call`.
    NestedToolCall(NestedToolCallEvent),
    /// `nested_tool_result`.
    NestedToolResult(NestedToolResultEvent),
    /// `approval_requested`.
    ApprovalRequested(ApprovalRequestedEvent),
    /// `approval_resolved`.
    ApprovalResolved(ApprovalResolvedEvent),
    /// `run_parked`.
    RunParked(RunParkedEvent),
    /// `run_resumed`.
    RunResumed(RunResumedEvent),
    /// `run_expired`.
    RunExpired(RunEndedEvent),
    /// `run_aborted`.
    RunAborted(RunEndedEvent),
}

/// A free-text field (an error, a reason): its secrets redacted, then cut (crate `redact`).
fn cut(s: &mut Option<String>) {
    if let Some(s) = s {
        *s = redact_string(s);
    }
}

impl EventKind {
    /// The wire name of the `type` field, e.g. `"nested_tool_result"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::ToolCall(_) => "tool_call",
            EventKind::ToolResult(_) => "tool_result",
            EventKind::NestedToolCall(_) => "nested_tool_call",
            EventKind::NestedToolResult(_) => "nested_tool_result",
            EventKind::ApprovalRequested(_) => "approval_requested",
            EventKind::ApprovalResolved(_) => "approval_resolved",
            EventKind::RunParked(_) => "run_parked",
            EventKind::RunResumed(_) => "run_resumed",
            EventKind::RunExpired(_) => "run_expired",
            EventKind::RunAborted(_) => "run_aborted",
        }
    }

    /// The tool-call id the event is about: the provider call for `tool_*` and `run_parked` /
    /// `run_resumed`, the nested call for `nested_*` and `approval_*`, `None` for expiry and abort.
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            EventKind::ToolCall(e) => Some(&e.tool_call_id),
            EventKind::ToolResult(e) => Some(&e.tool_call_id),
            EventKind::NestedToolCall(e) => Some(&e.tool_call_id),
            EventKind::NestedToolResult(e) => Some(&e.tool_call_id),
            EventKind::ApprovalRequested(e) => Some(&e.tool_call_id),
            EventKind::ApprovalResolved(e) => Some(&e.tool_call_id),
            EventKind::RunParked(e) => Some(&e.tool_call_id),
            EventKind::RunResumed(e) => Some(&e.tool_call_id),
            EventKind::RunExpired(_) | EventKind::RunAborted(_) => None,
        }
    }

    /// The original `exec` call's id, on the events that carry it.
    pub fn parent_tool_call_id(&self) -> Option<&str> {
        match self {
            EventKind::NestedToolCall(e) => e.parent_tool_call_id.as_deref(),
            EventKind::NestedToolResult(e) => e.parent_tool_call_id.as_deref(),
            EventKind::ApprovalRequested(e) => e.parent_tool_call_id.as_deref(),
            EventKind::RunParked(e) => e.parent_tool_call_id.as_deref(),
            EventKind::RunResumed(e) => e.parent_tool_call_id.as_deref(),
            EventKind::RunExpired(e) | EventKind::RunAborted(e) => e.parent_tool_call_id.as_deref(),
            EventKind::ToolCall(_) | EventKind::ToolResult(_) | EventKind::ApprovalResolved(_) => {
                None
            }
        }
    }

    /// The code-mode run id, on the events that know it.
    pub fn code_mode_run_id(&self) -> Option<&str> {
        match self {
            EventKind::ToolResult(e) => e.code_mode_run_id.as_deref(),
            EventKind::NestedToolCall(e) => e.code_mode_run_id.as_deref(),
            EventKind::NestedToolResult(e) => e.code_mode_run_id.as_deref(),
            EventKind::ApprovalRequested(e) => e.code_mode_run_id.as_deref(),
            EventKind::ApprovalResolved(e) => e.code_mode_run_id.as_deref(),
            EventKind::RunParked(e) => Some(&e.code_mode_run_id),
            EventKind::RunResumed(e) => Some(&e.code_mode_run_id),
            EventKind::RunExpired(e) | EventKind::RunAborted(e) => e.code_mode_run_id.as_deref(),
            EventKind::ToolCall(_) => None,
        }
    }

    /// Applies the redaction rules (crate `redact` module) to every input, result, error and
    /// reason in the event. Ids and names are left alone.
    pub fn redact(&mut self) {
        match self {
            EventKind::ToolCall(e) => redact_in_place(&mut e.input),
            EventKind::ToolResult(e) => {
                if let Some(r) = &mut e.result {
                    redact_in_place(r);
                }
                cut(&mut e.error);
            }
            EventKind::NestedToolCall(e) => redact_in_place(&mut e.input),
            EventKind::NestedToolResult(e) => {
                if let Some(r) = &mut e.result {
                    redact_in_place(r);
                }
                cut(&mut e.error);
            }
            EventKind::ApprovalRequested(e) => {
                redact_in_place(&mut e.input);
                cut(&mut e.reason);
            }
            EventKind::ApprovalResolved(e) => cut(&mut e.reason),
            EventKind::RunExpired(e) | EventKind::RunAborted(e) => cut(&mut e.reason),
            EventKind::RunParked(_) | EventKind::RunResumed(_) => {}
        }
    }
}

/// One trajectory line: a kind with its fields, its timestamp and its scope.
///
/// Built with [`TrajectoryEvent::new`] (timestamp now) or [`TrajectoryEvent::at`] (given
/// timestamp); both redact the kind's values, so no sink ever sees an unredacted input. The
/// kind is reachable read-only through [`TrajectoryEvent::kind`] for that reason.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryEvent {
    ts: String,
    scope: RunScope,
    kind: EventKind,
}

/// The current UTC time as RFC 3339 with milliseconds, e.g. `2026-12-01T10:00:00.123Z`.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl TrajectoryEvent {
    /// An event stamped with [`now_rfc3339`]; `kind` is redacted.
    pub fn new(scope: RunScope, kind: EventKind) -> TrajectoryEvent {
        TrajectoryEvent::at(now_rfc3339(), scope, kind)
    }

    /// An event with the given `ts` (an RFC 3339 timestamp; not checked); `kind` is redacted.
    pub fn at(ts: impl Into<String>, scope: RunScope, mut kind: EventKind) -> TrajectoryEvent {
        kind.redact();
        TrajectoryEvent {
            ts: ts.into(),
            scope,
            kind,
        }
    }

    /// The timestamp (`ts`).
    pub fn ts(&self) -> &str {
        &self.ts
    }

    /// The scope ids.
    pub fn scope(&self) -> &RunScope {
        &self.scope
    }

    /// The kind and its (redacted) fields.
    pub fn kind(&self) -> &EventKind {
        &self.kind
    }

    /// The event as one JSON object: `type`, `ts`, the known scope ids, then the kind's fields.
    pub fn to_json(&self) -> Value {
        let kind = match serde_json::to_value(&self.kind) {
            Ok(Value::Object(map)) => map,
            // The kinds are plain structs of strings, numbers and JSON values: never reached.
            _ => Map::new(),
        };
        let mut out = Map::with_capacity(kind.len() + 6);
        out.insert("type".into(), Value::String(self.kind.type_name().into()));
        out.insert("ts".into(), Value::String(self.ts.clone()));
        for (key, value) in scope_fields(&self.scope) {
            if let Some(value) = value {
                out.insert(key.into(), Value::String(value.clone()));
            }
        }
        out.extend(kind.into_iter().filter(|(k, _)| k != "type"));
        Value::Object(out)
    }

    /// The event as one JSON line, without the trailing newline.
    pub fn to_json_line(&self) -> String {
        self.to_json().to_string()
    }

    /// Parses one line written by [`TrajectoryEvent::to_json_line`]. The values are taken as
    /// they are (a written line is already redacted; redacting again would cut the cut strings).
    pub fn from_json_line(line: &str) -> Result<TrajectoryEvent, ParseError> {
        let value: Value = serde_json::from_str(line).map_err(ParseError::Json)?;
        TrajectoryEvent::from_json(value)
    }

    /// [`TrajectoryEvent::from_json_line`] on a parsed value.
    pub fn from_json(value: Value) -> Result<TrajectoryEvent, ParseError> {
        let Value::Object(mut map) = value else {
            return Err(ParseError::NotAnObject);
        };
        let ts = match map.remove("ts") {
            Some(Value::String(ts)) => ts,
            _ => return Err(ParseError::MissingTs),
        };
        let mut scope = Map::new();
        for key in SCOPE_KEYS {
            if let Some(v) = map.remove(key) {
                scope.insert(key.into(), v);
            }
        }
        let scope: RunScope =
            serde_json::from_value(Value::Object(scope)).map_err(ParseError::Json)?;
        let kind: EventKind =
            serde_json::from_value(Value::Object(map)).map_err(ParseError::Json)?;
        Ok(TrajectoryEvent { ts, scope, kind })
    }
}

impl Serialize for TrajectoryEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TrajectoryEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        TrajectoryEvent::from_json(value).map_err(D::Error::custom)
    }
}

/// Why a trajectory line could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not JSON, or a field of the wrong shape (including an unknown `type`).
    #[error("invalid trajectory line: {0}")]
    Json(serde_json::Error),
    /// The line is JSON but not an object.
    #[error("invalid trajectory line: not a JSON object")]
    NotAnObject,
    /// The line has no string `ts`.
    #[error("invalid trajectory line: missing \"ts\"")]
    MissingTs,
}

/// Parses a whole JSON-lines trajectory (blank lines skipped). The error names the 1-based line.
pub fn parse_json_lines(text: &str) -> Result<Vec<TrajectoryEvent>, (usize, ParseError)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| TrajectoryEvent::from_json_line(l).map_err(|e| (i + 1, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope() -> RunScope {
        RunScope {
            agent_id: Some("main".into()),
            session_id: Some("s1".into()),
            session_key: None,
            run_id: Some("run-1".into()),
        }
    }

    #[test]
    fn line_shape_type_ts_scope_then_fields() {
        let e = TrajectoryEvent::at(
            "2026-12-01T10:00:00.000Z",
            scope(),
            EventKind::ToolResult(ToolResultEvent {
                tool_call_id: "call_1".into(),
                tool_name: "exec".into(),
                tool_kind: ToolKind::CodeModeExec,
                tool_input_kind: Some(ToolInputKind::Typescript),
                status: ToolStatus::Waiting,
                code_mode_run_id: Some("cm_1".into()),
                duration_ms: 1002,
                result: Some(json!({"status": "waiting", "runId": "cm_1"})),
                error: None,
            }),
        );
        let line = e.to_json_line();
        assert_eq!(
            line,
            r#"{"type":"tool_result","ts":"2026-12-01T10:00:00.000Z","agentId":"main","sessionId":"s1","runId":"run-1","toolCallId":"call_1","toolName":"exec","toolKind":"code_mode_exec","toolInputKind":"typescript","status":"waiting","codeModeRunId":"cm_1","durationMs":1002,"result":{"status":"waiting","runId":"cm_1"}}"#
        );
        assert_eq!(TrajectoryEvent::from_json_line(&line).unwrap(), e);
        assert_eq!(serde_json::to_string(&e).unwrap(), line);
        assert_eq!(serde_json::from_str::<TrajectoryEvent>(&line).unwrap(), e);
    }

    #[test]
    fn every_kind_has_its_exact_type_and_fields() {
        let kinds = vec![
            (
                EventKind::ApprovalRequested(ApprovalRequestedEvent {
                    approval_id: "ap_1".into(),
                    tool_call_id: "tool_search_code:call_1:deploy:1".into(),
                    parent_tool_call_id: Some("call_1".into()),
                    code_mode_run_id: None,
                    tool_id: "openclaw:core:deploy".into(),
                    tool_name: "deploy".into(),
                    input: json!({"env": "prod", "apiKey": "k"}),
                    reason: Some("tools.approvals.require: deploy".into()),
                }),
                r#"{"type":"approval_requested","ts":"T","approvalId":"ap_1","toolCallId":"tool_search_code:call_1:deploy:1","parentToolCallId":"call_1","toolId":"openclaw:core:deploy","toolName":"deploy","input":{"env":"prod","apiKey":"[redacted]"},"reason":"tools.approvals.require: deploy"}"#,
            ),
            (
                EventKind::ApprovalResolved(ApprovalResolvedEvent {
                    approval_id: "ap_1".into(),
                    tool_call_id: "tool_search_code:call_1:deploy:1".into(),
                    code_mode_run_id: Some("cm_1".into()),
                    decision: ApprovalDecision::Deny,
                    reason: Some("denied".into()),
                }),
                r#"{"type":"approval_resolved","ts":"T","approvalId":"ap_1","toolCallId":"tool_search_code:call_1:deploy:1","codeModeRunId":"cm_1","decision":"deny","reason":"denied"}"#,
            ),
            (
                EventKind::RunParked(RunParkedEvent {
                    code_mode_run_id: "cm_1".into(),
                    tool_call_id: "call_1".into(),
                    parent_tool_call_id: Some("call_1".into()),
                    reason: ParkReason::Yield,
                    pending_tool_calls: 0,
                    snapshot_bytes: None,
                }),
                r#"{"type":"run_parked","ts":"T","codeModeRunId":"cm_1","toolCallId":"call_1","parentToolCallId":"call_1","reason":"yield","pendingToolCalls":0}"#,
            ),
            (
                EventKind::RunResumed(RunResumedEvent {
                    code_mode_run_id: "cm_1".into(),
                    tool_call_id: "call_2".into(),
                    parent_tool_call_id: None,
                    settled_tool_calls: 2,
                }),
                r#"{"type":"run_resumed","ts":"T","codeModeRunId":"cm_1","toolCallId":"call_2","settledToolCalls":2}"#,
            ),
            (
                EventKind::RunExpired(RunEndedEvent {
                    code_mode_run_id: Some("cm_1".into()),
                    parent_tool_call_id: Some("call_1".into()),
                    reason: Some("snapshot TTL".into()),
                }),
                r#"{"type":"run_expired","ts":"T","codeModeRunId":"cm_1","parentToolCallId":"call_1","reason":"snapshot TTL"}"#,
            ),
            (
                EventKind::RunAborted(RunEndedEvent {
                    code_mode_run_id: None,
                    parent_tool_call_id: None,
                    reason: None,
                }),
                r#"{"type":"run_aborted","ts":"T"}"#,
            ),
            (
                EventKind::NestedToolResult(NestedToolResultEvent {
                    tool_call_id: "tool_search_code:call_1:mcp_fs:2".into(),
                    parent_tool_call_id: Some("call_1".into()),
                    code_mode_run_id: None,
                    tool_id: "mcp:fs:read_text_file".into(),
                    tool_name: "read_text_file".into(),
                    method: NestedMethod::Namespace,
                    status: NestedStatus::Timeout,
                    duration_ms: 60000,
                    result: None,
                    error: Some("timed out".into()),
                }),
                r#"{"type":"nested_tool_result","ts":"T","toolCallId":"tool_search_code:call_1:mcp_fs:2","parentToolCallId":"call_1","toolId":"mcp:fs:read_text_file","toolName":"read_text_file","method":"namespace","status":"timeout","durationMs":60000,"error":"timed out"}"#,
            ),
        ];
        for (kind, want) in kinds {
            let e = TrajectoryEvent::at("T", RunScope::default(), kind);
            assert_eq!(e.to_json_line(), want);
            assert_eq!(TrajectoryEvent::from_json_line(want).unwrap(), e);
        }
    }

    #[test]
    fn errors_and_results_are_redacted_too() {
        let long = "x".repeat(5000);
        let e = TrajectoryEvent::at(
            "T",
            RunScope::default(),
            EventKind::ToolResult(ToolResultEvent {
                tool_call_id: "c".into(),
                tool_name: "direct".into(),
                tool_kind: ToolKind::Tool,
                tool_input_kind: None,
                status: ToolStatus::Failed,
                code_mode_run_id: None,
                duration_ms: 0,
                result: Some(json!({"details": {"session_cookie": "c=1"}})),
                error: Some(long),
            }),
        );
        let EventKind::ToolResult(r) = e.kind() else {
            unreachable!()
        };
        assert_eq!(
            r.result,
            Some(json!({"details": {"session_cookie": "[redacted]"}}))
        );
        assert_eq!(
            r.error.as_deref(),
            Some(format!("{}…(904 more)", "x".repeat(4096)).as_str())
        );
    }

    /// Issue 25: a secret repeated as text reaches no trajectory line, on each path.
    #[test]
    fn secrets_inside_text_are_redacted_on_every_path() {
        let nested_result = |result: Option<Value>, error: Option<&str>| {
            EventKind::NestedToolResult(NestedToolResultEvent {
                tool_call_id: "tool_search_code:call_1:echo:1".into(),
                parent_tool_call_id: Some("call_1".into()),
                code_mode_run_id: None,
                tool_id: "openclaw:core:echo".into(),
                tool_name: "echo".into(),
                method: NestedMethod::CallValue,
                status: if error.is_some() {
                    NestedStatus::Error
                } else {
                    NestedStatus::Ok
                },
                duration_ms: 1,
                result,
                error: error.map(str::to_string),
            })
        };
        let line =
            |kind: EventKind| TrajectoryEvent::at("T", RunScope::default(), kind).to_json_line();
        // A result's content text that repeats the input as JSON.
        let got = line(nested_result(
            Some(json!({
                "content": [{"type": "text", "text": "{\"input\":{\"token\":\"s3cr3t\"}}"}],
                "details": {"input": {"token": "s3cr3t"}},
            })),
            None,
        ));
        assert_eq!(
            got,
            r#"{"type":"nested_tool_result","ts":"T","toolCallId":"tool_search_code:call_1:echo:1","parentToolCallId":"call_1","toolId":"openclaw:core:echo","toolName":"echo","method":"callValue","status":"ok","durationMs":1,"result":{"content":[{"type":"text","text":"{\"input\":{\"token\":\"[redacted]\"}}"}],"details":{"input":{"token":"[redacted]"}}}}"#
        );
        // A tool error text quoting its request.
        let got = line(nested_result(
            None,
            Some("HTTP 401 for {\"apiKey\": \"s3cr3t\", \"q\": 1}; Authorization: Bearer s3cr3t"),
        ));
        assert!(
            got.ends_with(r#""error":"HTTP 401 for {\"apiKey\":\"[redacted]\",\"q\":1}; Authorization: [redacted]"}"#),
            "{got}"
        );
        // A direct tool's error text.
        let got = line(EventKind::ToolResult(ToolResultEvent {
            tool_call_id: "c".into(),
            tool_name: "direct".into(),
            tool_kind: ToolKind::Tool,
            tool_input_kind: None,
            status: ToolStatus::Failed,
            code_mode_run_id: None,
            duration_ms: 0,
            result: None,
            error: Some("login failed: password=s3cr3t".into()),
        }));
        assert!(
            got.ends_with(r#""error":"login failed: password=[redacted]"}"#),
            "{got}"
        );
        // An approval's input holding JSON text, and a hook's reason.
        let got = line(EventKind::ApprovalRequested(ApprovalRequestedEvent {
            approval_id: "ap_1".into(),
            tool_call_id: "tool_search_code:call_1:deploy:1".into(),
            parent_tool_call_id: None,
            code_mode_run_id: None,
            tool_id: "openclaw:core:deploy".into(),
            tool_name: "deploy".into(),
            input: json!({"env": "prod", "config": "{\"secret\": \"s3cr3t\"}"}),
            reason: Some("hook: refusing {\"cookie\": \"s3cr3t\"}".into()),
        }));
        assert!(
            got.ends_with(r#""input":{"env":"prod","config":"{\"secret\":\"[redacted]\"}"},"reason":"hook: refusing {\"cookie\":\"[redacted]\"}"}"#),
            "{got}"
        );
        // A decision's reason.
        let got = line(EventKind::ApprovalResolved(ApprovalResolvedEvent {
            approval_id: "ap_1".into(),
            tool_call_id: "t".into(),
            code_mode_run_id: None,
            decision: ApprovalDecision::Deny,
            reason: Some("denied: token 's3cr3t' is not allowed, token: 's3cr3t'".into()),
        }));
        assert!(!got.contains("token: 's3cr3t'"), "{got}");
        assert!(got.contains("token: '[redacted]'"), "{got}");
    }

    #[test]
    fn as_str_is_the_wire_name() {
        fn wire<T: Serialize>(v: T) -> String {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        }
        for k in [
            ToolKind::CodeModeExec,
            ToolKind::CodeModeWait,
            ToolKind::Tool,
        ] {
            assert_eq!(k.as_str(), wire(k));
        }
        for k in [ToolInputKind::Javascript, ToolInputKind::Typescript] {
            assert_eq!(k.as_str(), wire(k));
        }
        for k in [
            ToolStatus::Completed,
            ToolStatus::Waiting,
            ToolStatus::Failed,
        ] {
            assert_eq!(k.as_str(), wire(k));
        }
        for k in [
            NestedMethod::Call,
            NestedMethod::CallValue,
            NestedMethod::Namespace,
            NestedMethod::Nodes,
        ] {
            assert_eq!(k.as_str(), wire(k));
        }
        for k in [
            NestedStatus::Ok,
            NestedStatus::Error,
            NestedStatus::Blocked,
            NestedStatus::Denied,
            NestedStatus::Timeout,
        ] {
            assert_eq!(k.as_str(), wire(k));
        }
    }

    #[test]
    fn bad_lines() {
        assert!(matches!(
            TrajectoryEvent::from_json_line("[]"),
            Err(ParseError::NotAnObject)
        ));
        assert!(matches!(
            TrajectoryEvent::from_json_line(r#"{"type":"run_aborted"}"#),
            Err(ParseError::MissingTs)
        ));
        assert!(matches!(
            TrajectoryEvent::from_json_line(r#"{"type":"nope","ts":"T"}"#),
            Err(ParseError::Json(_))
        ));
        let text = "{\"type\":\"run_aborted\",\"ts\":\"T\"}\n\n{";
        assert_eq!(parse_json_lines(text).unwrap_err().0, 3);
        assert_eq!(parse_json_lines(&text[..31]).unwrap().len(), 1);
    }

    #[test]
    fn now_is_rfc3339_utc_millis() {
        let ts = now_rfc3339();
        assert_eq!(ts.len(), "2026-12-01T10:00:00.123Z".len());
        assert!(ts.ends_with('Z'));
        assert!(chrono::DateTime::parse_from_rfc3339(&ts).is_ok());
    }
}
