//! The MCP client's errors: [`ClientError`], one variant per way connecting to or asking a
//! configured server fails. `Display` is the one-line message hosts show and the guest's promise
//! rejects with (it always names the server); the rmcp, I/O, HTTP-header and serde_json errors
//! underneath stay reachable through [`std::error::Error::source`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use codemode_bridge::{ToolError, ToolErrorKind};
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::ErrorData;

/// The request an error is about: the MCP method and, for requests that name one, what it
/// names (the tool of `tools/call`, the URI of `resources/read`, the prompt of `prompts/get`).
///
/// `Display` is the method followed by the subject as a quoted Rust string literal, e.g.
/// `tools/call "echo"`, or the bare method (`tools/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpRequest {
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: String,
    /// The raw tool name, resource URI or prompt name; `None` for lists.
    pub subject: Option<String>,
}

impl fmt::Display for McpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.method)?;
        match &self.subject {
            Some(subject) => write!(f, " {subject:?}"),
            None => Ok(()),
        }
    }
}

/// Why the client could not connect to a server or get an answer to a request.
///
/// Every message starts with `MCP server "<name>"` (except [`ClientError::NotJson`] and
/// [`ClientError::NotListedYet`]) and fits on one line. `stderr` fields hold the line of a stdio child's stderr that best says what went
/// wrong (at most 300 characters), quoted as ` (stderr: <line>)`; `None` when the child wrote
/// nothing (or the server is reached over HTTP).
///
/// rmcp's errors are boxed (they are up to 544 bytes; a `Result` should stay small), so in the
/// [`std::error::Error::source`] chain they appear as `Box<ServiceError>`, `Box<ErrorData>` or
/// `Box<ClientInitializeError>`; their own sources follow.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting and the `initialize` handshake took longer than
    /// [`crate::ClientOptions::connect_timeout`].
    #[error("MCP server \"{server}\" did not finish connecting within {} ms{}", .timeout.as_millis(), stderr_suffix(.stderr))]
    ConnectTimeout {
        /// The configured server name.
        server: String,
        /// The connect budget that ran out.
        timeout: Duration,
        /// The child's last words, see [`ClientError`].
        stderr: Option<String>,
    },
    /// The transport or the `initialize` handshake failed. The message quotes the innermost
    /// cause, without the transport type names rmcp puts in its own text.
    #[error("MCP server \"{server}\" failed to connect: {}{}", root_cause(.source), stderr_suffix(.stderr))]
    Connect {
        /// The configured server name.
        server: String,
        /// The child's last words, see [`ClientError`].
        stderr: Option<String>,
        /// rmcp's error.
        #[source]
        source: Box<ClientInitializeError>,
    },
    /// The configured `cwd` of a stdio server is not a directory.
    #[error("MCP server \"{server}\": cwd {} is not a directory", .cwd.display())]
    CwdNotDirectory {
        /// The configured server name.
        server: String,
        /// The configured working directory.
        cwd: PathBuf,
    },
    /// The stdio server's command could not be started.
    #[error("MCP server \"{server}\" failed to start {command:?}: {source}")]
    Spawn {
        /// The configured server name.
        server: String,
        /// The configured command.
        command: String,
        /// Why spawning failed.
        #[source]
        source: std::io::Error,
    },
    /// The spawned child came without piped stdin, stdout or stderr (never expected).
    #[error("MCP server \"{server}\": the child's stdio is not piped")]
    StdioNotPiped {
        /// The configured server name.
        server: String,
    },
    /// A configured HTTP header name is not a valid header name.
    #[error("MCP server \"{server}\": header {key:?}: {source}")]
    HeaderName {
        /// The configured server name.
        server: String,
        /// The configured header name.
        key: String,
        /// Why it is invalid.
        #[source]
        source: http::header::InvalidHeaderName,
    },
    /// A configured HTTP header value is not a valid header value.
    #[error("MCP server \"{server}\": header {key:?}: {source}")]
    HeaderValue {
        /// The configured server name.
        server: String,
        /// The configured header name.
        key: String,
        /// Why its value is invalid.
        #[source]
        source: http::header::InvalidHeaderValue,
    },
    /// An HTTP server answered with an error that names no request (how servers reject a session
    /// they no longer know) while the request was in flight; the next request reconnects.
    #[error("MCP server \"{server}\" rejected the session during {request} ({reason}); the next call reconnects")]
    SessionRejected {
        /// The configured server name.
        server: String,
        /// The request in flight.
        request: McpRequest,
        /// The server's error message.
        reason: String,
    },
    /// No answer within [`crate::ClientOptions::call_timeout`].
    #[error("MCP server \"{server}\" did not answer {request} within {} ms{}", .timeout.as_millis(), dropped_suffix(.dropped))]
    Timeout {
        /// The configured server name.
        server: String,
        /// The request that got no answer.
        request: McpRequest,
        /// The call budget that ran out.
        timeout: Duration,
        /// What the stdout filter last had to drop (`crate::stdio`), quoted as
        /// `; it sent nothing usable: <problem>`: probably the lost answer.
        dropped: Option<String>,
    },
    /// The server answered with a JSON-RPC error; the message quotes its `message`.
    #[error("MCP server \"{server}\" refused {request}: {}", .source.message)]
    Refused {
        /// The configured server name.
        server: String,
        /// The refused request.
        request: McpRequest,
        /// The JSON-RPC error.
        #[source]
        source: Box<ErrorData>,
    },
    /// The connection closed (or could not send) during the request. The message quotes the
    /// innermost cause.
    #[error("MCP server \"{server}\" closed the connection during {request}: {}{}", root_cause(.source), stderr_suffix(.stderr))]
    Closed {
        /// The configured server name.
        server: String,
        /// The request in flight.
        request: McpRequest,
        /// The child's last words, see [`ClientError`].
        stderr: Option<String>,
        /// rmcp's error (`TransportClosed` or `TransportSend`).
        #[source]
        source: Box<ServiceError>,
    },
    /// The stdio server's reply to the request could not be passed on (over the 16 MiB limit
    /// of one message, see `crate::stdio`); the call fails at once instead of at its timeout.
    #[error("MCP server \"{server}\" sent a reply to {request} that was dropped: {reason}")]
    ReplyDropped {
        /// The configured server name.
        server: String,
        /// The request the reply answered.
        request: McpRequest,
        /// Why it was dropped, e.g. `it is over the 16777216-byte limit of one message`.
        reason: String,
    },
    /// The streamable HTTP response of the request ended before its answer and reconnecting
    /// to the stream failed: the server stopped or dropped the connection, or sent an event
    /// over rmcp's 16 MiB limit (rmcp does not tell which).
    #[error("MCP server \"{server}\" ended the HTTP response to {request} before answering (the server stopped or dropped the connection, or its reply was over the 16777216-byte limit of one message)")]
    StreamClosed {
        /// The configured server name.
        server: String,
        /// The request in flight.
        request: McpRequest,
    },
    /// Any other rmcp failure of the request.
    #[error("MCP server \"{server}\" failed {request}: {source}")]
    Failed {
        /// The configured server name.
        server: String,
        /// The failed request.
        request: McpRequest,
        /// rmcp's error.
        #[source]
        source: Box<ServiceError>,
    },
    /// A `*/list` page that is not a JSON object.
    #[error("MCP server \"{server}\" answered {method} with a non-object result")]
    NonObjectPage {
        /// The configured server name.
        server: String,
        /// The list method, e.g. `tools/list`.
        method: String,
    },
    /// A result that does not serialise to JSON.
    #[error("MCP result is not JSON: {source}")]
    NotJson {
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// The client is shutting down ([`crate::ServerClient::shutdown`]): a connect under way was
    /// given up and no new one is made.
    #[error("MCP server \"{server}\": codemode is shutting down")]
    ShuttingDown {
        /// The configured server name.
        server: String,
    },
    /// The hub's first listing of the server has not finished yet ([`crate::McpHub::status`]
    /// right after a connect that ran out of time).
    #[error("not connected yet")]
    NotListedYet {
        /// The configured server name.
        server: String,
    },
    /// A 2026-07-28 server asked for input during a request (MRTR `input_required`, or a task's
    /// `input_required` status) that codemode cannot give: an input request of a method other
    /// than `elicitation/create`, `sampling/createMessage` or `roots/list`, malformed params, or
    /// a sampling request nobody can answer (docs/mcp.md, "Protocol revisions").
    #[error("MCP server \"{server}\" asked for input {key:?} during {request} that codemode cannot give: {reason}")]
    InputRequest {
        /// The configured server name.
        server: String,
        /// The request that asked.
        request: McpRequest,
        /// The input request's key in `inputRequests`.
        key: String,
        /// Why it cannot be answered.
        reason: String,
    },
    /// A server kept answering `input_required` for more rounds than the client drives
    /// (`ServerClient::call_tool`: 10).
    #[error("MCP server \"{server}\" still asked for input after {rounds} rounds of {request}; giving up")]
    InputRounds {
        /// The configured server name.
        server: String,
        /// The request.
        request: McpRequest,
        /// The rounds answered.
        rounds: usize,
    },
    /// A result of the 2026-07-28 revision (`input_required`, a task, a `tasks/get` answer)
    /// without the fields it must have.
    #[error("MCP server \"{server}\" answered {request} with a malformed {what}: {reason}")]
    Malformed {
        /// The configured server name.
        server: String,
        /// The request answered.
        request: McpRequest,
        /// What was malformed (`input_required result`, `task`, `tasks/get result`).
        what: &'static str,
        /// What is missing or wrong.
        reason: String,
    },
    /// The task a `tools/call` became (Tasks extension) ended `failed`, `cancelled`, or was
    /// still not done when its `ttlMs` had passed.
    #[error("MCP server \"{server}\": task {task_id:?} of {request} {outcome}")]
    Task {
        /// The configured server name.
        server: String,
        /// The `tools/call` the task belongs to.
        request: McpRequest,
        /// The server's task id.
        task_id: String,
        /// `failed: <the error's message>`, `was cancelled by the server`, or `was not done
        /// within its ttlMs of <n> ms`.
        outcome: String,
    },
    /// Connecting and listing the server together took longer than
    /// [`crate::ClientOptions::connect_timeout`] ([`crate::McpHub`]).
    #[error("MCP server \"{server}\" did not finish connecting and listing within {} ms", .timeout.as_millis())]
    ListingTimeout {
        /// The configured server name.
        server: String,
        /// The listing budget that ran out.
        timeout: Duration,
    },
}

impl ClientError {
    /// The error a nested call through [`crate::McpExecutor`] rejects with: this message, with
    /// the kind [`ToolErrorKind::Failed`] when the server answered (a JSON-RPC error, a failed
    /// task, a result or input request codemode cannot use) and [`ToolErrorKind::Unavailable`]
    /// when it could not be reached or gave no answer (connect, spawn, timeout, closed
    /// connection, shutdown).
    pub fn tool_error(&self) -> ToolError {
        let kind = match self {
            ClientError::Refused { .. }
            | ClientError::ReplyDropped { .. }
            | ClientError::Failed { .. }
            | ClientError::NonObjectPage { .. }
            | ClientError::NotJson { .. }
            | ClientError::InputRequest { .. }
            | ClientError::InputRounds { .. }
            | ClientError::Malformed { .. }
            | ClientError::Task { .. } => ToolErrorKind::Failed,
            ClientError::ConnectTimeout { .. }
            | ClientError::Connect { .. }
            | ClientError::CwdNotDirectory { .. }
            | ClientError::Spawn { .. }
            | ClientError::StdioNotPiped { .. }
            | ClientError::HeaderName { .. }
            | ClientError::HeaderValue { .. }
            | ClientError::SessionRejected { .. }
            | ClientError::Timeout { .. }
            | ClientError::Closed { .. }
            | ClientError::StreamClosed { .. }
            | ClientError::ShuttingDown { .. }
            | ClientError::NotListedYet { .. }
            | ClientError::ListingTimeout { .. } => ToolErrorKind::Unavailable,
        };
        ToolError::new(kind, self.to_string())
    }
}

/// ` (stderr: <line>)`, or nothing.
fn stderr_suffix(stderr: &Option<String>) -> String {
    stderr
        .as_deref()
        .map(|line| format!(" (stderr: {line})"))
        .unwrap_or_default()
}

/// `; it sent nothing usable: <problem>`, or nothing.
fn dropped_suffix(dropped: &Option<String>) -> String {
    dropped
        .as_deref()
        .map(|problem| format!("; it sent nothing usable: {problem}"))
        .unwrap_or_default()
}

/// The innermost error of a chain: rmcp's transport errors name generic transport types in their
/// own text, the cause underneath is what a user can act on.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    without_type_names(&cause.to_string())
}

/// Drops the `[path::to::Type<…>]` segments rmcp puts in transport error texts.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("] ").or_else(|| rest[open..].rfind(']')) else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        if inside.contains("::") {
            rest = rest[open + close + 1..].trim_start();
            out = out.trim_end().to_string();
            out.push(' ');
        } else {
            out.push('[');
            rest = &rest[open + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn type_names_are_dropped_from_transport_errors() {
        assert_eq!(
            without_type_names("Send message error Transport [a::B<c::D<e::F>>] error: Client error: refused, when send initialize request"),
            "Send message error Transport error: Client error: refused, when send initialize request"
        );
        assert_eq!(without_type_names("plain [1] text"), "plain [1] text");
        assert_eq!(without_type_names("no brackets"), "no brackets");
    }

    fn request(method: &str, subject: Option<&str>) -> McpRequest {
        McpRequest {
            method: method.into(),
            subject: subject.map(str::to_string),
        }
    }

    #[test]
    fn messages_name_the_server_and_the_request() {
        assert_eq!(request("tools/list", None).to_string(), "tools/list");
        assert_eq!(
            request("tools/call", Some("say \"hi\"")).to_string(),
            r#"tools/call "say \"hi\"""#
        );
        let timeout = ClientError::Timeout {
            server: "t".into(),
            request: request("tools/call", Some("hang")),
            timeout: Duration::from_millis(2_000),
            dropped: None,
        };
        assert_eq!(
            timeout.to_string(),
            "MCP server \"t\" did not answer tools/call \"hang\" within 2000 ms"
        );
        let dropped = ClientError::Timeout {
            server: "t".into(),
            request: request("tools/list", None),
            timeout: Duration::from_millis(5),
            dropped: Some("a line over 16 MiB was dropped".into()),
        };
        assert_eq!(
            dropped.to_string(),
            "MCP server \"t\" did not answer tools/list within 5 ms; it sent nothing usable: a line over 16 MiB was dropped"
        );
        let connect = ClientError::ConnectTimeout {
            server: "t".into(),
            timeout: Duration::from_millis(1_500),
            stderr: Some("TypeError: no config".into()),
        };
        assert_eq!(
            connect.to_string(),
            "MCP server \"t\" did not finish connecting within 1500 ms (stderr: TypeError: no config)"
        );
        let listing = ClientError::ListingTimeout {
            server: "t".into(),
            timeout: Duration::from_millis(1_000),
        };
        assert_eq!(
            listing.to_string(),
            "MCP server \"t\" did not finish connecting and listing within 1000 ms"
        );
        let cwd = ClientError::CwdNotDirectory {
            server: "t".into(),
            cwd: "/nope".into(),
        };
        assert_eq!(
            cwd.to_string(),
            "MCP server \"t\": cwd /nope is not a directory"
        );
    }

    #[test]
    fn sources_stay_reachable() {
        let spawn = ClientError::Spawn {
            server: "ghost".into(),
            command: "/nonexistent/mcp-server".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(
            spawn.to_string(),
            "MCP server \"ghost\" failed to start \"/nonexistent/mcp-server\": entity not found"
        );
        let io = spawn
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io::Error is the source");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);

        let refused = ClientError::Refused {
            server: "t".into(),
            request: request("tools/call", Some("protocol_error")),
            source: Box::new(ErrorData::invalid_params(
                "bad params from testserver",
                None,
            )),
        };
        assert_eq!(
            refused.to_string(),
            "MCP server \"t\" refused tools/call \"protocol_error\": bad params from testserver"
        );
        let data = refused
            .source()
            .and_then(|s| s.downcast_ref::<Box<ErrorData>>())
            .expect("the JSON-RPC error is the source");
        assert_eq!(data.message, "bad params from testserver");

        let closed = ClientError::Closed {
            server: "t".into(),
            request: request("tools/call", Some("explode")),
            stderr: Some("TypeError: explode went off".into()),
            source: Box::new(ServiceError::TransportClosed),
        };
        assert_eq!(
            closed.to_string(),
            "MCP server \"t\" closed the connection during tools/call \"explode\": Transport closed (stderr: TypeError: explode went off)"
        );
        assert!(closed
            .source()
            .is_some_and(|s| s.downcast_ref::<Box<ServiceError>>().is_some()));

        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let not_json = ClientError::NotJson { source: json };
        assert_eq!(
            not_json.to_string(),
            "MCP result is not JSON: EOF while parsing an object at line 1 column 1"
        );
        assert!(not_json.source().is_some());
    }
}
