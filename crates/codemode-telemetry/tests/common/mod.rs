//! Events the telemetry crate's integration tests record in more than one file.

// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use codemode_telemetry::{EventKind, ToolCallEvent, ToolKind};
use serde_json::json;

/// The `tool_call` of the model's `wait` call `call_2` for run `cm_1`.
pub(crate) fn wait_call_2() -> EventKind {
    EventKind::ToolCall(ToolCallEvent {
        tool_call_id: "call_2".into(),
        tool_name: "wait".into(),
        tool_kind: ToolKind::CodeModeWait,
        tool_input_kind: None,
        input: json!({"runId": "cm_1"}),
    })
}
