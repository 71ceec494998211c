//! The host side of a nested tool call: who runs it ([`RunScope`]), what is called
//! ([`ToolCall`]), the trait a host implements to run it ([`ToolExecutor`]) and how it fails
//! ([`ToolError`]).

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who is running a nested tool call: the scope of the code-mode run (docs/contract/catalog.md#nested). All fields are optional; hosts fill what they know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunScope {
    /// The agent run id.
    pub run_id: Option<String>,
    /// The session id.
    pub session_id: Option<String>,
    /// The session key.
    pub session_key: Option<String>,
    /// The agent id.
    pub agent_id: Option<String>,
}

/// One nested tool call handed to the host's [`ToolExecutor`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The exact catalog id, e.g. `openclaw:core:read`.
    pub tool_id: String,
    /// The registered tool name, e.g. `read`.
    pub tool_name: String,
    /// The JSON-adapted input object (`{}` when the guest passed none).
    pub input: Value,
    /// The code-mode run's scope.
    pub scope: RunScope,
    /// The bridge id of the guest request (`bridge:callValue:3`).
    pub bridge_id: String,
    /// The nested call's own tool-call id, `tool_search_code:<parent>:<tool name>:<seq>`
    /// (docs/contract/catalog.md#s3-5): `<parent>` is the original `exec` tool-call id, sanitised, and `<seq>`
    /// counts the run's nested calls from 1, across `wait`s.
    pub tool_call_id: String,
    /// The original `exec` tool-call id, when the host gave one.
    pub parent_tool_call_id: Option<String>,
    /// The code-mode run id once the run has parked (`cm_<uuid>`), else `None`.
    pub code_mode_run_id: Option<String>,
}

/// The future a [`ToolExecutor`] returns: a JSON-compatible tool result (usually
/// `{content: [...], details: ...}`) or a [`ToolError`], whose message reaches the guest as
/// `new Error(message)` (docs/contract/guest.md#s4-3, "Settlement").
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// What kind of failure a [`ToolError`] is. The guest sees only the message; the kind is for the
/// host (telemetry, retries, tests) and never changes the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolErrorKind {
    /// The executor has no tool with the call's id (or a policy hides it behind the unknown-tool
    /// error).
    UnknownTool,
    /// The input is not what the tool takes (e.g. not an object, a required string missing).
    InvalidInput,
    /// Something in front of the tool refused the call before it ran: a hook blocked it, approval
    /// was denied, or an after-hook withheld the result.
    Refused,
    /// The tool's backend could not be reached or did not answer (an MCP server that is down,
    /// closed the connection or timed out).
    Unavailable,
    /// The tool ran and failed.
    Failed,
}

/// Why a nested tool call produced no result. `Display` is the message, verbatim: the text of the
/// guest-realm `Error` the call's promise rejects with, and of the trajectory's
/// `nested_tool_result.error` (docs/telemetry.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    kind: ToolErrorKind,
    message: String,
}

impl ToolError {
    /// An error of `kind` whose guest-visible text is `message`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// [`ToolErrorKind::Failed`]: the tool ran and failed with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::new(ToolErrorKind::Failed, message)
    }

    /// [`ToolErrorKind::UnknownTool`] with `message`.
    pub fn unknown_tool(message: impl Into<String>) -> Self {
        ToolError::new(ToolErrorKind::UnknownTool, message)
    }

    /// [`ToolErrorKind::InvalidInput`] with `message`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        ToolError::new(ToolErrorKind::InvalidInput, message)
    }

    /// [`ToolErrorKind::Refused`] with `message`.
    pub fn refused(message: impl Into<String>) -> Self {
        ToolError::new(ToolErrorKind::Refused, message)
    }

    /// [`ToolErrorKind::Unavailable`] with `message`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ToolError::new(ToolErrorKind::Unavailable, message)
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// The guest-visible message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, moved out.
    pub fn into_message(self) -> String {
        self.message
    }
}

/// Runs catalog tools for nested calls. Hosts implement it over their normal tool execution
/// path (policy, approvals, hooks, telemetry: docs/contract/catalog.md#nested).
///
/// Calls may run concurrently and may outlive the `exec` that started them (the run then parks
/// and `wait` picks the result up). The host wraps every call in a timeout, so an executor need
/// not, but it must not block the thread it is polled on.
pub trait ToolExecutor: Send + Sync + 'static {
    /// Starts one tool call.
    fn execute(&self, call: ToolCall) -> ToolFuture;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_kind_is_kept() {
        let e = ToolError::unavailable("MCP server \"s\" did not answer tools/call within 5 ms");
        assert_eq!(
            e.to_string(),
            "MCP server \"s\" did not answer tools/call within 5 ms"
        );
        assert_eq!(e.kind(), ToolErrorKind::Unavailable);
        assert_eq!(e.message(), e.to_string());
        assert_eq!(ToolError::failed("boom").kind(), ToolErrorKind::Failed);
        assert_eq!(ToolError::refused("no").kind(), ToolErrorKind::Refused);
        assert_eq!(
            ToolError::invalid_input("x").kind(),
            ToolErrorKind::InvalidInput
        );
        assert_eq!(ToolError::unknown_tool("y").into_message(), "y");
    }
}
