//! Code mode served as an MCP server: the model-facing surface (`exec` and `wait`, docs/contract/surface.md#s2-2 to #s2-4) over the Model Context Protocol, so any MCP client can drive code mode.
//!
//! One [`CodeModeServer::serve`] call is one MCP session and one code-mode session: it gets its
//! own [`RunScope`](codemode_bridge::RunScope) (`session_id = "mcp-<uuid>"`, `session_key = "mcp:<uuid>"`), so a run parked
//! by `exec` in one session can be resumed by `wait` only from that session (docs/contract/lifecycle.md#s5-3;
//! another session gets `code mode run belongs to a different session.`).
//!
//! - `tools/list` answers exactly `exec` and `wait`, with the description and input schema of
//!   `crate::description::serve_tools` (fitted to the current catalog: the contract's
//!   definitions with its MCP namespace prompt for native tools, docs/contract/surface.md#s2-4,
//!   docs/contract/mcp.md#s7-5; one led by `MCP` for a catalog of MCP tools only).
//! - `tools/call` runs [`CodeMode::exec`] / [`CodeMode::wait`] and answers the result
//!   (docs/contract/lifecycle.md#s5-1) without its `telemetry` as one text block holding its
//!   compact JSON plus the same object as `structuredContent`; `isError` is `true` exactly when
//!   `status` is `"failed"`; the telemetry goes to `_meta` (`codemode/telemetry`).
//! - A `notifications/cancelled` for a running call, or the end of the session, aborts the run
//!   (`failed` / `aborted`, docs/contract/lifecycle.md#s5-9).
//! - When the session ends (the client closes stdio, deletes its HTTP session, or the server
//!   shuts down), the runs it parked are dropped and their pending tool calls cancelled (docs/contract/lifecycle.md#runs; docs/contract/lifecycle.md#s5-3 "dropped when their session ends").
//!
//! - Over HTTP, requests without an `Mcp-Session-Id` (stateless 2026-07-28 clients) share one
//!   code-mode scope (`mcp-stateless`, the same in every process, or one per principal with
//!   `--auth`; `crate::shared_scope`), so a run one of them parks can be resumed by the next, on
//!   any instance sharing the run store (docs/mcp.md, "Stateless HTTP clients";
//!   docs/deployment.md).
//!
//! Nothing here writes to stdout (it is the protocol on stdio); diagnostics go to `tracing`.
//!
//! Modules, one job each: `env` (the [`EnvSource`] and [`ServeHost`] a host gives), `session`
//! (one code-mode session: scope, client, approvals), `results` (the MCP answer of a result),
//! `progress` (nested calls as `notifications/progress`), `calls` (`exec`/`wait`, MRTR and
//! Tasks), `direct` (code mode off: the downstream tools), `content` (prompts and resources),
//! `handler` (the rmcp [`ServerHandler`](rmcp::ServerHandler)), `http` (streamable HTTP).

use std::sync::Arc;

use codemode_facade::CodeMode;
use rmcp::model::Tool;
use rmcp::service::{QuitReason, RoleServer, ServerInitializeError};
use rmcp::transport::IntoTransport;

use crate::drain::Drain;
use crate::http_auth::HttpAuth;
use crate::mrtr::RequestStates;
use crate::shared_scope::SharedSessions;
use crate::tasks::RunTasks;

mod calls;
mod content;
mod direct;
mod direct_tasks;
mod env;
mod handler;
mod http;
mod notices;
mod progress;
mod results;
mod session;

pub use direct::{DirectTools, DIRECT_INSTRUCTIONS};
pub use direct_tasks::{RelayedTasks, MAX_LIFETIME, MAX_RELAYED, MIN_LIFETIME};
pub use env::{disabled_result, EnvSource, ServeHost, CODE_MODE_DISABLED};
pub use http::PARK_DRAIN;
pub use results::{
    unavailable_note, META_TELEMETRY, META_UNAVAILABLE, NOTE_KEY, TOOLS_LIST_TTL_MS,
};
pub use session::SESSION_ENDED;

use results::mcp_tool;
use session::Session;

/// The `Origin`s [`CodeModeServer::serve_http`] accepts (every port): browser pages served from
/// this machine's loopback names. Others get `403 Forbidden`. rmcp's allowlist; the stricter
/// parsed check ([`crate::origin::is_loopback_origin`]) runs first.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The `serverInfo.name` this server reports in its `initialize` answer.
pub const SERVER_NAME: &str = "codemode";

/// The `instructions` this server reports in its `initialize` answer.
pub const SERVER_INSTRUCTIONS: &str = "Use exec to run a JavaScript or TypeScript program over the hidden tool catalog, and wait to resume a run that exec (or an earlier wait) left waiting.";

/// Errors of [`CodeModeServer::serve`] and [`CodeModeServer::serve_stdio`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP handshake did not complete: the transport closed or failed before `initialize`,
    /// the first message was not `initialize`, or the versions could not be negotiated.
    #[error("MCP session did not start: {0}")]
    Initialize(Box<ServerInitializeError>),
    /// The task running the session panicked or was cancelled by the runtime.
    #[error("MCP session task failed: {0}")]
    Session(#[from] tokio::task::JoinError),
    /// The HTTP listener failed to accept a connection.
    #[error("MCP HTTP listener failed: {0}")]
    Io(std::io::Error),
}

impl From<ServerInitializeError> for ServeError {
    fn from(e: ServerInitializeError) -> Self {
        ServeError::Initialize(Box::new(e))
    }
}

/// Code mode as an MCP server: one value serves one MCP session at a time, with the tools `exec`
/// and `wait` (see the module documentation for the exact answers).
///
/// Approvals (docs/contract/host.md#h3): each MCP session has one [`ApprovalBroker`](codemode_facade::ApprovalBroker) (TTL:
/// the `snapshotTtlSeconds` of the session's first run) whose delegate is an
/// [`ElicitationApprover`](crate::elicit::ElicitationApprover) for the session's client, and every run of the session whose
/// [`RunEnv::approvals`](codemode_facade::RunEnv::approvals) the source left unset answers approvals through it: a call that needs
/// approval sends `elicitation/create` to the client and stays pending until it answers (the
/// run parks meanwhile, listing it in `pendingApprovals`). When the session ends its outstanding
/// approvals are denied with [`SESSION_ENDED`].
///
/// Cloning is cheap and shares the [`CodeMode`] front (its runtime and parked runs), the
/// [`EnvSource`] and the [`ServeHost`]; each [`CodeModeServer::serve`] call starts a new session
/// with a new scope and its own approvals.
#[derive(Clone)]
pub struct CodeModeServer {
    code_mode: Arc<CodeMode>,
    source: Arc<dyn EnvSource>,
    host: Option<Arc<ServeHost>>,
    session: Arc<Session>,
    /// Over HTTP: the shared sessions of stateless requests, anonymous or one per principal
    /// (`crate::shared_scope`); `None` on other transports.
    stateless: Option<Arc<SharedSessions<Session>>>,
    /// Over HTTP with `--auth`: the bearer-token check and the per-principal run cap.
    auth: Option<(Arc<HttpAuth>, Option<usize>)>,
    /// Where downstream servers' elicitation and sampling go: told the client of every call.
    forward: Option<Arc<crate::forward::Forwarder>>,
    /// The calls in flight of every session, and the signal that the server stops.
    drain: Drain,
    /// Seals and opens the `requestState` of MRTR approvals (`crate::mrtr`), shared by every
    /// session of the process.
    states: Arc<RequestStates>,
    /// The parked runs of Tasks clients (`crate::tasks`), every session's.
    tasks: RunTasks,
    /// With code mode off: the downstream tools served instead of `exec` and `wait`.
    direct: Option<Arc<DirectTools>>,
}

impl CodeModeServer {
    /// A server over the shared front `code_mode` that takes each call's environment from
    /// `source`.
    pub fn new(code_mode: Arc<CodeMode>, source: Arc<dyn EnvSource>) -> Self {
        let tasks = RunTasks::new(code_mode.shared_tasks());
        CodeModeServer {
            session: Session::start(code_mode.clone()),
            code_mode,
            source,
            host: None,
            stateless: None,
            auth: None,
            forward: None,
            drain: Drain::new(),
            states: Arc::new(RequestStates::per_process()),
            tasks,
            direct: None,
        }
    }

    /// The same server sealing MRTR `requestState`s with `states` (for example
    /// [`RequestStates::with_key`] with a key from config, so that several processes accept
    /// each other's states); the default is a key made for this process.
    pub fn with_request_states(mut self, states: Arc<RequestStates>) -> Self {
        self.states = states;
        self
    }

    /// The server's [`Drain`]: [`Drain::stop`] makes every call in flight, in every session,
    /// abort its run and answer the JSON-RPC error [`SHUTTING_DOWN`](crate::drain::SHUTTING_DOWN) (docs/mcp.md,
    /// "Shutdown"); `serve_http` calls it when its `shutdown` token is cancelled.
    pub fn drain(&self) -> &Drain {
        &self.drain
    }

    /// The same server requiring bearer tokens over HTTP (`auth`, `crate::http_auth`), with at
    /// most `cap` parked runs per principal in this process (`None`: only the process-wide
    /// cap). Stateless requests of each principal share its scope (`crate::shared_scope`), and
    /// any `Host` header is accepted (the bind may be non-loopback; the token is the guard).
    pub fn with_http_auth(mut self, auth: Arc<HttpAuth>, cap: Option<usize>) -> Self {
        self.auth = Some((auth, cap));
        self
    }

    /// The same server with `host`: the policy, hooks and trajectory of every run of its
    /// sessions (see [`ServeHost`]).
    pub fn with_host(mut self, host: ServeHost) -> Self {
        self.host = Some(Arc::new(host));
        self
    }

    /// The same server making the client of each `exec`/`wait` the upstream of `forward`, so
    /// the MCP servers behind it can ask that client for elicitation and sampling
    /// (`crate::forward`).
    pub fn with_forwarder(mut self, forward: Arc<crate::forward::Forwarder>) -> Self {
        self.forward = Some(forward);
        self
    }

    /// Serves one MCP session over stdin/stdout until the client closes it (end of input) or
    /// the session fails. Errors: [`ServeError`].
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves one MCP session over any rmcp transport (a `(reader, writer)` pair, a duplex
    /// stream, a [`rmcp::transport::Transport`], …) until the client closes it. The session gets
    /// a new scope (`mcp-<uuid>`), so runs parked by other sessions are out of its reach.
    ///
    /// Errors: [`ServeError::Initialize`] when the handshake fails, [`ServeError::Session`] when
    /// the session task dies. A client that disconnects after the handshake is a normal end.
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), ServeError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let server = CodeModeServer {
            session: Session::start(self.code_mode.clone()),
            ..self
        };
        let session = server.session.scope.session_id.clone().unwrap_or_default();
        tracing::info!(%session, "codemode MCP session starting");
        let running = rmcp::serve_server(server, transport).await?;
        let reason = running.waiting().await?;
        tracing::info!(%session, ?reason, "codemode MCP session ended");
        match reason {
            QuitReason::JoinError(e) => Err(ServeError::Session(e)),
            _ => Ok(()),
        }
    }

    /// `exec` and `wait` as MCP tools for the current catalog, fitted to it
    /// (`crate::description::serve_tools`; the contract's "unknown catalog" `exec` while code
    /// mode is disabled). Answered at once: MCP servers still connecting are not waited for
    /// (they are announced by `notifications/tools/list_changed` when they join).
    fn tools(&self) -> Vec<Tool> {
        let env = self.source.run_env(self.session.scope.clone());
        let [exec, wait] = crate::description::serve_tools(
            env.as_ref().map(|env| env.catalog.as_ref()),
            self.source.mcp_configured(),
        );
        vec![mcp_tool(exec), mcp_tool(wait)]
    }
}
