//! Result shapes of `exec` and `wait` (docs/contract/surface.md#s2-2, docs/contract/lifecycle.md#s5-1 and docs/contract/telemetry.md#s9).

use codemode_bridge::{BridgeMethod, OutputItem};
pub use codemode_telemetry::Telemetry;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a run failed (docs/contract/lifecycle.md#error-codes; `aborted` from docs/contract/decisions.md#d9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Bad arguments, disabled language, rejected source, bad or foreign `runId`, caps.
    InvalidInput,
    /// The VM could not be created, restored, or it trapped.
    RuntimeUnavailable,
    /// The deadline passed while the guest ran.
    Timeout,
    /// A result's output exceeded `maxOutputBytes`.
    OutputLimitExceeded,
    /// A snapshot exceeded `maxSnapshotBytes`.
    SnapshotLimitExceeded,
    /// The guest threw, or broke the protocol.
    InternalError,
    /// The run was aborted.
    Aborted,
}

/// Why a run waits (docs/contract/lifecycle.md#s5-1): `yield` iff every unsettled request is a `yield`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// Bridge tool calls are still pending.
    PendingTools,
    /// The guest called `yield_control`.
    Yield,
}

/// One unsettled bridge request of a waiting run: `{id: "bridge:callValue:1", method: "callValue"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingToolCall {
    /// The bridge id.
    pub id: String,
    /// The bridge method (JSON: its wire name, `"callValue"`).
    pub method: BridgeMethod,
}

/// The result of `exec` or `wait` (spec `CodeModeResult`). Serialises with `status` first and
/// camelCase fields, e.g. `{"status":"completed","value":3,"output":[],"replaySafe":false,
/// "telemetry":{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum CodeModeResult {
    /// The program returned and nothing is pending.
    #[serde(rename_all = "camelCase")]
    Completed {
        /// The JSON-adapted return value (`null` without `return`).
        value: Value,
        /// Output since the previous result of this run (docs/contract/decisions.md#d5).
        output: Vec<OutputItem>,
        /// The run's effective `restartSafe`.
        replay_safe: bool,
        /// Counters.
        telemetry: Telemetry,
    },
    /// The run is parked; continue it with `wait({runId})`.
    #[serde(rename_all = "camelCase")]
    Waiting {
        /// `cm_<uuid>`.
        run_id: String,
        /// Why it waits.
        reason: WaitReason,
        /// Unsettled requests.
        pending_tool_calls: Vec<PendingToolCall>,
        /// The run's outstanding approvals, oldest first (docs/contract/host.md#h3,
        /// docs/contract/host.md#h9): `[{approvalId, toolCallId, toolId, input}]`. Left out of the
        /// JSON when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending_approvals: Vec<PendingApproval>,
        /// The run's effective `restartSafe`.
        replay_safe: bool,
        /// Output since the previous result of this run.
        output: Vec<OutputItem>,
        /// Counters.
        telemetry: Telemetry,
    },
    /// The run failed, or the call was refused.
    #[serde(rename_all = "camelCase")]
    Failed {
        /// The message (exact texts in docs/contract/README.md).
        error: String,
        /// The error code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<ErrorCode>,
        /// Output since the previous result of this run (`[]` on output-limit failures).
        output: Vec<OutputItem>,
        /// The run's effective `restartSafe`; `false` when there is no run.
        replay_safe: bool,
        /// Counters.
        telemetry: Telemetry,
    },
}

impl CodeModeResult {
    /// `"completed"`, `"waiting"` or `"failed"`.
    pub fn status(&self) -> &'static str {
        match self {
            CodeModeResult::Completed { .. } => "completed",
            CodeModeResult::Waiting { .. } => "waiting",
            CodeModeResult::Failed { .. } => "failed",
        }
    }

    /// The run id of a waiting result.
    pub fn run_id(&self) -> Option<&str> {
        match self {
            CodeModeResult::Waiting { run_id, .. } => Some(run_id),
            _ => None,
        }
    }

    /// The output items of this result.
    pub fn output(&self) -> &[OutputItem] {
        match self {
            CodeModeResult::Completed { output, .. }
            | CodeModeResult::Waiting { output, .. }
            | CodeModeResult::Failed { output, .. } => output,
        }
    }

    /// The telemetry of this result.
    pub fn telemetry(&self) -> &Telemetry {
        match self {
            CodeModeResult::Completed { telemetry, .. }
            | CodeModeResult::Waiting { telemetry, .. }
            | CodeModeResult::Failed { telemetry, .. } => telemetry,
        }
    }

    /// The result as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The tool-result envelope both control tools return (docs/contract/surface.md#s2-1):
    /// `{content: [{type: "text", text: JSON.stringify(result, null, 2)}], details: result}`.
    pub fn to_tool_result(&self) -> Value {
        let details = self.to_json();
        let text = serde_json::to_string_pretty(&details).unwrap_or_default();
        serde_json::json!({"content": [{"type": "text", "text": text}], "details": details})
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
