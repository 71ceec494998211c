//! Code mode served as an MCP server: the model-facing surface (`exec` and `wait`, docs/contract/surface.md#s2-2 to #s2-4) over the Model Context Protocol, so any MCP client can drive code mode.
//!
//! One [`CodeModeServer::serve`] call is one MCP session and one code-mode session: it gets its
//! own [`RunScope`] (`session_id = "mcp-<uuid>"`, `session_key = "mcp:<uuid>"`), so a run parked
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

use std::future::Future;
use std::sync::{Arc, OnceLock};

use codemode_bridge::RunScope;
use codemode_config::ToolPolicy;
use codemode_facade::{ApprovalBroker, CodeMode, HookChain, RunEnv, ToolDefinition};
use codemode_runtime::AbortHandle;
use codemode_telemetry::Trajectory;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{
    NotificationContext, QuitReason, RequestContext, ServerInitializeError, SubscriptionContext,
};
use rmcp::transport::IntoTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

use crate::drain::{Drain, SHUTDOWN_DRAIN, SHUTTING_DOWN};
use crate::elicit::{ElicitationApprover, PeerSlot};
use crate::http_auth::{HttpAuth, Principal};
use crate::mrtr::RequestStates;
use crate::shared_scope::SharedSessions;
use crate::tasks::{Parked, RunTasks};

/// How long a stopping `serve_http` waits for connections to finish the responses they are
/// writing before it ends the MCP sessions (which closes open GET streams).
const CLOSE_WRITTEN: std::time::Duration = std::time::Duration::from_millis(500);

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

/// The error text of the disabled result (docs/contract/config.md#activation "Activation").
pub const CODE_MODE_DISABLED: &str = "code mode is disabled.";

/// The result every `exec` and `wait` gets while the config disables code mode
/// (docs/contract/config.md#activation "Activation"), as `structuredContent`:
/// `{"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"}`.
pub fn disabled_result() -> Value {
    json!({"status": "failed", "error": CODE_MODE_DISABLED, "code": "invalid_input"})
}

/// Where the server gets the environment of each call.
///
/// It is asked once per `tools/list`, `exec` and `wait`, so a refreshed catalog (for example
/// after an upstream MCP `notifications/tools/list_changed`) is picked up by the next call.
/// `scope` is the MCP session's scope (`session_id = "mcp-<uuid>"`, `session_key =
/// "mcp:<uuid>"`, the rest `None`). A source normally puts it into [`RunEnv::scope`] unchanged
/// (it may add an `agent_id`): that scope owns the runs `exec` parks, and is the caller scope of
/// `wait` (docs/contract/lifecycle.md#s5-3).
pub trait EnvSource: Send + Sync + 'static {
    /// The environment for one call in the session `scope`; `None` when the config disables code
    /// mode, and `exec` and `wait` then answer [`disabled_result`].
    fn run_env(&self, scope: RunScope) -> Option<RunEnv>;

    /// Called before each `exec`: names the tool sources a run started now cannot reach (MCP
    /// servers still connecting in the background, or whose attempt failed), with a one-line
    /// reason each. It must not wait for them: `tools/list` and `exec` answer at once and a
    /// source that joins later is announced by `notifications/tools/list_changed`
    /// (docs/mcp.md, "Fast start"). The default has none.
    fn unavailable(&self) -> Vec<crate::hub::Unavailable> {
        Vec::new()
    }

    /// True when MCP servers are configured, even if none has connected yet: an empty catalog
    /// is then described by its `MCP` namespace (`crate::description`). The default: `false`.
    fn mcp_configured(&self) -> bool {
        false
    }

    /// A receiver that changes whenever the catalog behind [`EnvSource::run_env`] may have
    /// changed (an MCP server connected late or re-listed), so the `exec` description (its
    /// namespace prompt and quick index) is out of date: each stateful MCP session then gets
    /// `notifications/tools/list_changed`. `None` (the default): the catalog never changes.
    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// How often a session's `notifications/tools/list_changed` task checks that its transport is
/// still open while the catalog does not change.
const LIST_CHANGED_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// The model-visible note of an `exec` result when configured MCP servers are unavailable:
/// `MCP servers unavailable in this run (their MCP.<server> namespace is missing): "a": <reason>; "b": <reason>.`
/// `None` when every server is reachable.
pub fn unavailable_note(unavailable: &[crate::hub::Unavailable]) -> Option<String> {
    if unavailable.is_empty() {
        return None;
    }
    let list: Vec<String> = unavailable
        .iter()
        .map(|u| format!("{:?}: {}", u.server, u.reason))
        .collect();
    Some(format!(
        "MCP servers unavailable in this run (their MCP.<server> namespace is missing): {}.",
        list.join("; ")
    ))
}

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

/// What `serve` adds to every run of its sessions (docs/contract/host.md#h1 to #h4): the tool
/// policy, the hook chain and the trajectory of the config, given by the host (the CLI resolves
/// them with `codemode_config::resolve_policy` / `resolve_hooks`, `HookChain::from_config` and
/// its `--trajectory` sink).
///
/// With a host, each call's [`RunEnv`] from the [`EnvSource`] gets [`RunEnv::with_policy`],
/// [`RunEnv::with_hooks`] and [`RunEnv::with_trajectory`] with these values (replacing the
/// source's), so nested calls go through policy → hooks → approval and the outer `exec` /
/// `wait` through the hooks. Approvals are the session's in any case (see
/// [`CodeModeServer`]). The default allows every tool, runs no hooks and records nothing.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ServeHost {
    /// The tool policy (`tools.allow` / `deny` / `approvals.require`), applied again at call
    /// time; the host filters the catalog with it as well.
    pub policy: ToolPolicy,
    /// The `before_tool_call` / `after_tool_call` hooks.
    pub hooks: HookChain,
    /// Where the runs' trajectory goes.
    pub trajectory: Trajectory,
}

impl ServeHost {
    /// The default host: every tool allowed, no hooks, no trajectory.
    pub fn new() -> Self {
        ServeHost::default()
    }

    /// The same host with `policy`.
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same host with `hooks`.
    pub fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same host recording into `trajectory`.
    pub fn with_trajectory(mut self, trajectory: Trajectory) -> Self {
        self.trajectory = trajectory;
        self
    }
}

/// Code mode as an MCP server: one value serves one MCP session at a time, with the tools `exec`
/// and `wait` (see the module documentation for the exact answers).
///
/// Approvals (docs/contract/host.md#h3): each MCP session has one [`ApprovalBroker`] (TTL:
/// the `snapshotTtlSeconds` of the session's first run) whose delegate is an
/// [`ElicitationApprover`] for the session's client, and every run of the session whose
/// [`RunEnv::approvals`] the source left unset answers approvals through it: a call that needs
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
}

/// One code-mode session: its scope, its client (for elicitations) and approvals, and the end
/// of it. When the last handle to it is dropped (the MCP session is over and no request of it is
/// still running), the runs it parked are dropped ([`CodeMode::end_session`]) and approvals still
/// outstanding are denied.
struct Session {
    code_mode: Arc<CodeMode>,
    scope: RunScope,
    /// The session's client, learned from its first request.
    peer: PeerSlot,
    /// The session's approvals, made on first use (the TTL comes from the run's config).
    approvals: OnceLock<Arc<ApprovalBroker>>,
    /// The approvals of the session's 2026-07-28 requests, answered by MRTR (`crate::mrtr`):
    /// no delegate, so they stay outstanding until a retry's `inputResponses` answers them.
    mrtr: OnceLock<Arc<ApprovalBroker>>,
    /// A shared scope (stateless HTTP requests, `crate::shared_scope`): when the process lets go
    /// of it, its runs stay in a durable store.
    shared: bool,
    /// For a stateful HTTP session opened with a bearer token: its principal, noted for the cap.
    owner: OnceLock<crate::shared_scope::OwnerNote>,
}

/// The reason of approvals still outstanding when their MCP session ends.
pub const SESSION_ENDED: &str = "the MCP session ended";

impl Session {
    /// A fresh session: `session_id = "mcp-<uuid>"`, `session_key = "mcp:<uuid>"`.
    fn start(code_mode: Arc<CodeMode>) -> Arc<Session> {
        Session::with_prefix(code_mode, "")
    }

    /// A shared session of stateless HTTP requests with `scope` (`crate::shared_scope`).
    fn shared(code_mode: Arc<CodeMode>, scope: RunScope) -> Arc<Session> {
        Session::with_scope(code_mode, scope, true)
    }

    fn with_prefix(code_mode: Arc<CodeMode>, prefix: &str) -> Arc<Session> {
        let id = uuid::Uuid::new_v4();
        let (dash, colon) = if prefix.is_empty() {
            (String::new(), String::new())
        } else {
            (format!("{prefix}-"), format!("{prefix}:"))
        };
        let scope = RunScope {
            session_id: Some(format!("mcp-{dash}{id}")),
            session_key: Some(format!("mcp:{colon}{id}")),
            ..RunScope::default()
        };
        Session::with_scope(code_mode, scope, false)
    }

    fn with_scope(code_mode: Arc<CodeMode>, scope: RunScope, shared: bool) -> Arc<Session> {
        Arc::new(Session {
            code_mode,
            scope,
            peer: PeerSlot::new(),
            approvals: OnceLock::new(),
            mrtr: OnceLock::new(),
            shared,
            owner: OnceLock::new(),
        })
    }

    /// The session's approval broker: outstanding approvals expire after `ttl` (the first
    /// call's `snapshotTtlSeconds`), and each is asked of the client by elicitation.
    fn approvals(&self, ttl: std::time::Duration) -> Arc<ApprovalBroker> {
        self.approvals
            .get_or_init(|| {
                Arc::new(ApprovalBroker::with_delegate(
                    ttl,
                    Arc::new(ElicitationApprover::from_slot(self.peer.clone())),
                ))
            })
            .clone()
    }

    /// The session's MRTR approvals (2026-07-28 requests): outstanding until a retry answers
    /// them, or `ttl` passes.
    fn mrtr_approvals(&self, ttl: std::time::Duration) -> Arc<ApprovalBroker> {
        self.mrtr
            .get_or_init(|| Arc::new(ApprovalBroker::new(ttl)))
            .clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for approvals in [self.approvals.get(), self.mrtr.get()]
            .into_iter()
            .flatten()
        {
            approvals.deny_all(Some(SESSION_ENDED));
        }
        let dropped = if self.shared {
            self.code_mode.release_session(&self.scope)
        } else {
            self.code_mode.end_session(&self.scope)
        };
        if dropped > 0 {
            tracing::info!(
                session = ?self.scope.session_id,
                dropped,
                "codemode MCP session over; its parked runs were dropped"
            );
        }
    }
}

/// How long a stopping `serve_http` with a durable run store gives its runs in flight to park
/// before the rest of the shutdown drain aborts what is left (within [`SHUTDOWN_DRAIN`]).
pub const PARK_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The first step of stopping with a durable run store (docs/deployment.md, "Stopping"): new
/// calls are refused with [`SHUTTING_DOWN`], every run in flight parks at its next wait
/// ([`CodeMode::park_in_flight`]) so its call answers `waiting` with a run id any instance can
/// resume; waits at most [`PARK_DRAIN`] for those answers. Nothing with the `memory` store.
async fn park_into_store(code_mode: &CodeMode, drain: &Drain) {
    if code_mode.run_store().is_none() {
        return;
    }
    code_mode.park_in_flight();
    let calls = drain.in_flight();
    if drain.answered(PARK_DRAIN).await {
        tracing::info!(
            calls,
            "stopping: the runs in flight parked into the run store"
        );
    } else {
        tracing::warn!(
            left = drain.in_flight(),
            "stopping: calls still running after the park drain; aborting them"
        );
    }
}

/// An MCP tool from a code-mode tool definition (name, description, input schema).
fn mcp_tool(definition: ToolDefinition) -> Tool {
    let schema: JsonObject = match definition.parameters {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(definition.name, definition.description, Arc::new(schema))
}

/// The `_meta` key of a result's telemetry (`{catalogSize, sources, searchCount, …}`,
/// docs/contract/lifecycle.md#s5-1), which the model-visible text leaves out.
pub const META_TELEMETRY: &str = "codemode/telemetry";

/// How long a `tools/list` answer may be reused (its 2026-07-28 `ttlMs`, with `cacheScope:
/// "private"`) when every configured MCP server is reachable: a catalog change is announced by
/// `notifications/tools/list_changed` and on `subscriptions/listen`, so a client that listens
/// never serves a stale list, and one that does not refetches after a minute. While a server is
/// connecting or failed the answer's `ttlMs` is 0.
pub const TOOLS_LIST_TTL_MS: u64 = 60_000;

/// The `structuredContent` key of the [`unavailable_note`] (the text block after the result
/// says the same): `{"status": …, …, "note": "MCP servers unavailable in this run …"}`.
pub const NOTE_KEY: &str = "note";

/// The `_meta` key of the servers an `exec` could not reach: `[{server, reason}]`.
pub const META_UNAVAILABLE: &str = "codemode/unavailableServers";

/// The MCP answer for one code-mode result (`result` is its JSON, docs/contract/lifecycle.md#s5-1):
/// the result without its `telemetry` as one text block of compact JSON and as
/// `structuredContent`, `isError` exactly when `status` is `failed`, and the telemetry in
/// `_meta` under [`META_TELEMETRY`], where clients and logs see it and the model does not pay
/// for it. A second text block names the MCP servers the run could not reach
/// ([`unavailable_note`]; also in `structuredContent` under [`NOTE_KEY`], and as a list in
/// `_meta` under [`META_UNAVAILABLE`]).
fn call_result(mut result: Value, unavailable: &[crate::hub::Unavailable]) -> CallToolResult {
    let failed = result.get("status").and_then(Value::as_str) == Some("failed");
    let telemetry = result
        .as_object_mut()
        .and_then(|object| object.remove("telemetry"));
    let text = serde_json::to_string(&result).unwrap_or_default();
    let mut content = vec![ContentBlock::text(text)];
    if let Some(note) = unavailable_note(unavailable) {
        content.push(ContentBlock::text(note));
    }
    let mut meta = JsonObject::new();
    if let Some(telemetry) = telemetry {
        meta.insert(META_TELEMETRY.to_string(), telemetry);
    }
    if !unavailable.is_empty() {
        meta.insert(
            META_UNAVAILABLE.to_string(),
            serde_json::to_value(unavailable).unwrap_or(Value::Null),
        );
    }
    if let (Some(note), Some(object)) = (unavailable_note(unavailable), result.as_object_mut()) {
        // Some clients hand the model `structuredContent` only (Claude Code).
        object.insert(NOTE_KEY.to_string(), Value::String(note));
    }
    let mut answer = CallToolResult::success(content);
    answer.structured_content = Some(result);
    answer.is_error = Some(failed);
    if !meta.is_empty() {
        answer.meta = Some(meta.into());
    }
    answer
}

/// True when the request of `context` is on protocol 2026-07-28 or later (its own `_meta`
/// version, else the session's) and its client declared elicitation: it gets approvals by MRTR
/// (`crate::mrtr`), since the revision has no server-to-client requests. A 2026-07-28 client
/// without elicitation is denied as a legacy one is (`the client cannot elicit`).
fn uses_mrtr(context: &RequestContext<RoleServer>) -> bool {
    let current = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    current
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// True when the request of `context` declared the tasks extension
/// (`io.modelcontextprotocol/tasks`): its `exec`s that park become tasks (`crate::tasks`).
fn uses_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// Who owns the tasks a session creates: its session key.
fn session_owner(session: &Session) -> String {
    session.scope.session_key.clone().unwrap_or_default()
}

/// Runs `run` with an [`AbortHandle`] that fires when `cancelled` resolves (the request's
/// cancellation token: the client's `notifications/cancelled`, or the session ending), and still
/// awaits the run's result (then `failed` / `aborted`, docs/contract/lifecycle.md#s5-9).
async fn abortable<C, F, Fut>(cancelled: C, run: F) -> Value
where
    C: Future<Output = ()>,
    F: FnOnce(AbortHandle) -> Fut,
    Fut: Future<Output = Value>,
{
    let abort = AbortHandle::new();
    let fut = run(abort.clone());
    tokio::pin!(fut);
    tokio::select! {
        biased;
        value = &mut fut => value,
        () = cancelled => {
            tracing::debug!("codemode MCP call cancelled; aborting the run");
            abort.abort();
            fut.await
        }
    }
}

/// Progress messages queued per request before the excess is dropped (notifications are advisory;
/// a client that reads them slower than a run makes calls must not grow the host's memory).
const PROGRESS_QUEUE: usize = 256;

/// The message of a `notifications/progress` for a nested call: `started <tool>` /
/// `finished <tool>` (the tool's registered name).
fn progress_message(kind: &codemode_telemetry::EventKind) -> Option<String> {
    use codemode_telemetry::EventKind;
    match kind {
        EventKind::NestedToolCall(e) => Some(format!("started {}", e.tool_name)),
        EventKind::NestedToolResult(e) => Some(format!("finished {}", e.tool_name)),
        _ => None,
    }
}

/// A trajectory sink that passes every event on to the run's own trajectory and turns nested
/// calls started/finished into progress messages, in order, on a channel.
/// With a forwarder, each nested call is watched while it runs, so a downstream MCP server's
/// own progress for it comes out on the same channel (`forward.rs`).
struct ProgressSink {
    inner: Trajectory,
    messages: tokio::sync::mpsc::Sender<String>,
    forward: Option<Arc<crate::forward::Forwarder>>,
}

impl codemode_telemetry::TrajectorySink for ProgressSink {
    fn record(&self, event: &codemode_telemetry::TrajectoryEvent) {
        use codemode_telemetry::EventKind;
        if self.inner.is_enabled() {
            self.inner.record(event.kind().clone());
        }
        if let Some(message) = progress_message(event.kind()) {
            // Bounded: a run making calls faster than the client takes notifications loses
            // the excess messages, never memory.
            let _ = self.messages.try_send(message);
        }
        if let Some(forward) = &self.forward {
            match event.kind() {
                EventKind::NestedToolCall(e) => {
                    forward.watch_call(&e.tool_call_id, self.messages.clone());
                }
                EventKind::NestedToolResult(e) => forward.unwatch_call(&e.tool_call_id),
                _ => {}
            }
        }
    }
}

/// With a `progressToken` on the request, `env` reports the run's nested calls started and
/// finished to the client as `notifications/progress` (`progress` counts them, `message` is
/// `started <tool>` / `finished <tool>`); the timeouts stay as they are. Returns the env and a
/// guard: notifications stop when it is dropped (the request is answered), even if a parked
/// run keeps the trajectory.
fn with_progress(
    env: RunEnv,
    context: &RequestContext<RoleServer>,
    forward: Option<Arc<crate::forward::Forwarder>>,
) -> (RunEnv, Option<tokio_util::sync::DropGuard>) {
    let Some(token) = context.meta.get_progress_token() else {
        return (env, None);
    };
    let (messages, mut received) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
    let peer = context.peer.clone();
    let answered = tokio_util::sync::CancellationToken::new();
    let stop = answered.clone();
    tokio::spawn(async move {
        let mut progress = 0u32;
        loop {
            // Messages already sent by the run go out before the stop is seen.
            let message = tokio::select! {
                biased;
                message = received.recv() => message,
                () = stop.cancelled() => None,
            };
            let Some(message) = message else { return };
            progress += 1;
            let mut param =
                rmcp::model::ProgressNotificationParam::new(token.clone(), f64::from(progress));
            param.message = Some(message);
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    let scope = env.trajectory.scope().clone();
    let sink = ProgressSink {
        inner: env.trajectory.clone(),
        messages,
        forward,
    };
    (
        env.with_trajectory(Trajectory::new(Arc::new(sink), scope)),
        Some(answered.drop_guard()),
    )
}

impl CodeModeServer {
    /// A server over the shared front `code_mode` that takes each call's environment from
    /// `source`.
    pub fn new(code_mode: Arc<CodeMode>, source: Arc<dyn EnvSource>) -> Self {
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
            tasks: RunTasks::new(),
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
    /// abort its run and answer the JSON-RPC error [`SHUTTING_DOWN`] (docs/mcp.md,
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

    /// Serves code mode over streamable HTTP (MCP 2025-11-25 transport) on `listener` until
    /// `shutdown` is cancelled: every HTTP session gets its own [`CodeModeServer`] and so its own
    /// scope; stateless requests (no `Mcp-Session-Id`) share one scope, the same in every process
    /// (one per principal with [`CodeModeServer::with_http_auth`]; `crate::shared_scope`), whose
    /// parked runs this process drops when it returns (a durable store keeps their records).
    /// With `with_http_auth`, a request without a valid bearer token gets `401` before rmcp sees
    /// it (`crate::http_auth`). rmcp's defaults guard the endpoint: only `Host` headers naming `localhost`,
    /// `127.0.0.1` or `::1` are accepted (DNS-rebinding protection), request bodies are capped,
    /// and sessions live in memory. A request whose `Origin` is not a loopback origin
    /// ([`LOOPBACK_ORIGINS`]; any port) is refused with `403 Forbidden` (the MCP transport's
    /// MUST); a request without `Origin` (not from a browser) is served. A session `DELETE` is
    /// answered `204 No Content` (rmcp answers `202`). Hosts should bind a loopback address (the CLI refuses
    /// others); every path is served (clients use `/mcp`). Accepted sockets get `TCP_NODELAY`.
    ///
    /// When `shutdown` is cancelled the server stops accepting; with a durable run store its runs
    /// in flight first park into the store (`park_into_store`, at most [`PARK_DRAIN`]); then it
    /// [`Drain::stop`]s: every call still in flight aborts its run and answers the JSON-RPC error
    /// [`SHUTTING_DOWN`], and the call returns once the answers are written and the connections
    /// closed, at most [`SHUTDOWN_DRAIN`] after the park step.
    ///
    /// Errors: [`ServeError::Io`] when accepting a connection fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<(), ServeError> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        let mut config = StreamableHttpServerConfig::default();
        // Cancelled at the end of the shutdown drain, not at its start, so the calls' last
        // answers can still be written.
        let sessions = tokio_util::sync::CancellationToken::new();
        config.cancellation_token = sessions.clone();
        let _end_sessions = sessions.clone().drop_guard();
        config.allowed_origins = LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).collect();
        let (code_mode, source, host, forward, drain, states, tasks, auth) = (
            self.code_mode,
            self.source,
            self.host,
            self.forward,
            self.drain,
            self.states,
            self.tasks,
            self.auth,
        );
        if auth.is_some() {
            config.allowed_hosts.clear();
        }
        // rmcp calls the factory once per stateful session (at `initialize`) and once per
        // stateless request; which one a call belongs to is decided per request (see
        // `session_for`), so every server made here carries the shared stateless sessions.
        let stateless = {
            let code_mode = code_mode.clone();
            let cap = auth.as_ref().and_then(|(_, cap)| *cap);
            Arc::new(SharedSessions::new(
                move |scope| Session::shared(code_mode.clone(), scope),
                cap,
            ))
        };
        let checker = auth.as_ref().map(|(check, _)| check.clone());
        let parker = code_mode.clone();
        let sessions_drain = drain.clone();
        let service = StreamableHttpService::new(
            move || {
                Ok(CodeModeServer {
                    session: Session::start(code_mode.clone()),
                    code_mode: code_mode.clone(),
                    source: source.clone(),
                    host: host.clone(),
                    stateless: Some(stateless.clone()),
                    auth: auth.clone(),
                    forward: forward.clone(),
                    drain: sessions_drain.clone(),
                    states: states.clone(),
                    tasks: tasks.clone(),
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        // Connections in flight, so the shutdown can wait for their last answers.
        let open = Drain::new();
        let closing = tokio_util::sync::CancellationToken::new();
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => accepted.map_err(ServeError::Io)?,
                () = shutdown.cancelled() => break,
            };
            // Answers go out at once: with Nagle's algorithm an answer written in two segments
            // waits for the client's delayed ACK (~40 ms per call for Node clients).
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
            }
            let service = service.clone();
            let checker = checker.clone();
            let service = hyper::service::service_fn(move |mut request: http::Request<_>| {
                let service = service.clone();
                let checker = checker.clone();
                async move {
                    if let Some(refused) = crate::origin::refuse_foreign_origin(request.headers()) {
                        return Ok::<_, std::convert::Infallible>(refused);
                    }
                    let principal = match &checker {
                        Some(checker) => match checker.admit(&mut request, peer) {
                            Ok(principal) => Some(principal),
                            Err(refused) => return Ok(*refused),
                        },
                        None => None,
                    };
                    let session = request
                        .headers()
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let delete = request.method() == http::Method::DELETE;
                    let mut response = service.handle::<hyper::body::Incoming>(request).await;
                    if let (Some(checker), Some(principal)) = (&checker, &principal) {
                        let deleted = delete && response.status().is_success();
                        checker.note_session(
                            principal,
                            session.as_deref(),
                            response.headers(),
                            deleted,
                        );
                    }
                    if delete && response.status() == http::StatusCode::ACCEPTED {
                        *response.status_mut() = http::StatusCode::NO_CONTENT;
                    }
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let closing = closing.clone();
            let guard = open.enter();
            tokio::spawn(async move {
                let _guard = guard;
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::pin!(connection);
                let result = tokio::select! {
                    result = connection.as_mut() => result,
                    () = closing.cancelled() => {
                        // The response being written (a call's last answer) still goes out;
                        // then the connection closes.
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(%peer, "MCP HTTP connection ended: {e}");
                }
            });
        }
        // Stopping (docs/mcp.md, "Shutdown"): calls in flight abort their runs and answer
        // `SHUTTING_DOWN`; once answered (or after `SHUTDOWN_DRAIN`) the connections finish the
        // responses they are writing and close, then the MCP sessions (and the open GET
        // streams) end.
        let deadline = tokio::time::Instant::now() + SHUTDOWN_DRAIN;
        park_into_store(&parker, &drain).await;
        drain.stop();
        if !drain.answered(SHUTDOWN_DRAIN).await {
            tracing::warn!(
                calls = drain.in_flight(),
                "calls still running after the shutdown drain; closing their connections"
            );
        }
        closing.cancel();
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        open.answered(left.min(CLOSE_WRITTEN)).await;
        sessions.cancel();
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        open.answered(left).await;
        Ok(())
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

    /// The `input_required` answer asking `approvals` of `run` (`crate::mrtr`): one elicitation
    /// per approval and a `requestState` bound to `binding`, expiring after `ttl`.
    fn input_required(
        &self,
        binding: &str,
        run: &str,
        approvals: &[codemode_facade::ApprovalRequest],
        ttl: std::time::Duration,
    ) -> InputRequiredResult {
        let ids = approvals.iter().map(|r| r.approval_id.clone()).collect();
        let state = self.states.seal(binding, run, ids, ttl);
        InputRequiredResult::new(Some(crate::mrtr::input_requests(approvals)), Some(state))
    }

    /// For a 2026-07-28 request whose result (`result`, docs/contract/lifecycle.md#s5-1) is
    /// `waiting` with `pendingApprovals`: the `input_required` answer asking all of them, if they
    /// are still outstanding in the session's MRTR approvals. `None` otherwise (the result is
    /// answered as it is).
    fn ask_approvals(
        &self,
        session: &Session,
        binding: &str,
        result: &Value,
    ) -> Option<InputRequiredResult> {
        if result.get("status").and_then(Value::as_str) != Some("waiting") {
            return None;
        }
        let run = result.get("runId").and_then(Value::as_str)?;
        let ids: Vec<&str> = result
            .get("pendingApprovals")
            .and_then(Value::as_array)?
            .iter()
            .filter_map(|p| p.get("approvalId").and_then(Value::as_str))
            .collect();
        let broker = session.mrtr.get()?;
        let outstanding = broker.pending();
        let approvals: Vec<_> = ids
            .iter()
            .filter_map(|id| outstanding.iter().find(|r| r.approval_id == *id).cloned())
            .collect();
        if approvals.is_empty() {
            return None;
        }
        Some(self.input_required(binding, run, &approvals, broker.ttl()))
    }

    /// For a Tasks client's `exec` whose run parked (`result` is `waiting`): the run becomes a
    /// task the server drives (`crate::tasks`), and the `CreateTaskResult` to answer. `None`
    /// when the run did not park (the result is answered as it is).
    fn park_as_task(
        &self,
        session: &Session,
        result: &Value,
    ) -> Option<rmcp::model::CreateTaskResult> {
        if result.get("status").and_then(Value::as_str) != Some("waiting") {
            return None;
        }
        let run_id = result.get("runId").and_then(Value::as_str)?.to_string();
        let env = self.run_env(session, true)?;
        Some(self.tasks.create(Parked {
            code_mode: self.code_mode.clone(),
            env,
            run_id,
            owner: session_owner(session),
            first: result.clone(),
            answer: Box::new(|result: Value| {
                match serde_json::to_value(call_result(result, &[])) {
                    Ok(Value::Object(object)) => object,
                    _ => JsonObject::new(),
                }
            }),
        }))
    }

    /// Resolves when the call of `context` must stop: the client cancelled it (or its session
    /// ended), or the server is shutting down ([`Drain::stop`]).
    async fn cancelled(&self, context: &RequestContext<RoleServer>) {
        tokio::select! {
            () = context.ct.cancelled() => {}
            () = self.drain.stopped() => {}
        }
    }

    /// The environment of one `exec` or `wait` of this session: the source's, with the host's
    /// policy, hooks and trajectory when there is a host, and the session's approvals unless the
    /// source set its own.
    fn run_env(&self, session: &Session, mrtr: bool) -> Option<RunEnv> {
        let mut env = self.source.run_env(session.scope.clone())?;
        if let Some(host) = &self.host {
            env = env
                .with_policy(host.policy.clone())
                .with_hooks(host.hooks.clone())
                .with_trajectory(host.trajectory.clone());
        }
        if env.approvals.is_none() {
            let ttl = env.config.snapshot_ttl();
            let approvals = if mrtr {
                session.mrtr_approvals(ttl)
            } else {
                session.approvals(ttl)
            };
            env = env.with_approvals(approvals);
        }
        Some(env)
    }

    /// The code-mode session a request belongs to: for an HTTP request that carries no
    /// `Mcp-Session-Id` (a 2026-07-28 stateless request, or a legacy client that never
    /// initialized a session), the shared session of its principal (anonymous without
    /// `--auth`; `crate::shared_scope`), else this MCP session's own (noted as its principal's).
    fn session_for(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        let Some(stateless) = &self.stateless else {
            return self.session.clone();
        };
        let parts = context.extensions.get::<http::request::Parts>();
        let principal = self.principal_of(context);
        match parts {
            Some(parts) if !parts.headers.contains_key("mcp-session-id") => {
                stateless.session(principal)
            }
            _ => {
                if let (Some(principal), Some(key)) = (principal, &self.session.scope.session_key) {
                    self.session
                        .owner
                        .get_or_init(|| stateless.note_owner(key, principal));
                }
                self.session.clone()
            }
        }
    }

    /// The request's principal (`--auth`), if any.
    fn principal_of<'a>(&self, context: &'a RequestContext<RoleServer>) -> Option<&'a Principal> {
        self.auth.as_ref()?;
        context
            .extensions
            .get::<http::request::Parts>()?
            .extensions
            .get::<Principal>()
    }

    /// The refusal of an `exec` when the request's principal already holds its cap of parked
    /// runs in this process (`crate::shared_scope`); `None` otherwise.
    /// Live copies of runs another instance finished are dropped first
    /// ([`CodeMode::reclaim_stale`]).
    async fn over_principal_cap(&self, context: &RequestContext<RoleServer>) -> Option<Value> {
        let principal = self.principal_of(context)?;
        let stateless = self.stateless.as_ref()?;
        if !stateless.over_cap(&self.code_mode, principal) {
            return None;
        }
        self.code_mode.reclaim_stale().await;
        stateless
            .over_cap(&self.code_mode, principal)
            .then(|| codemode_facade::too_many_suspended().to_json())
    }

    /// One `exec`: runs over the catalog of this moment, without waiting for MCP servers still
    /// connecting. Returns the result and the servers the run could not reach.
    async fn exec(
        &self,
        session: &Session,
        input: Value,
        context: &RequestContext<RoleServer>,
        mrtr: bool,
    ) -> (Value, Vec<crate::hub::Unavailable>) {
        let Some(env) = self.run_env(session, mrtr) else {
            return (disabled_result(), Vec::new());
        };
        let unavailable = self.source.unavailable();
        let (env, _progress) = with_progress(env, context, self.forward.clone());
        let code_mode = &self.code_mode;
        let value = abortable(self.cancelled(context), |abort| async move {
            code_mode.exec(&env, &input, &abort).await.to_json()
        })
        .await;
        (value, unavailable)
    }

    async fn wait(
        &self,
        session: &Session,
        input: Value,
        context: &RequestContext<RoleServer>,
        mrtr: bool,
    ) -> Value {
        let Some(env) = self.run_env(session, mrtr) else {
            return disabled_result();
        };
        let (env, _progress) = with_progress(env, context, self.forward.clone());
        let code_mode = &self.code_mode;
        abortable(self.cancelled(context), |abort| async move {
            code_mode.wait_with(&env, &input, &abort).await.to_json()
        })
        .await
    }
}

impl ServerHandler for CodeModeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(SERVER_INSTRUCTIONS)
    }

    /// After the handshake of a stateful session: while the session's transport is open, every
    /// change of the catalog ([`EnvSource::catalog_changes`]) is announced with
    /// `notifications/tools/list_changed`, so a client that listed `exec` before a late MCP
    /// server connected lists it again and sees that server in the description.
    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(mut changes) = self.source.catalog_changes() {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                changes.mark_unchanged();
                loop {
                    // Woken at least every few seconds, so a session that closed while the
                    // catalog stayed the same does not keep this task.
                    let changed = tokio::time::timeout(LIST_CHANGED_POLL, changes.changed()).await;
                    if peer.is_transport_closed() {
                        return;
                    }
                    match changed {
                        Err(_) => continue,
                        Ok(Err(_)) => return,
                        Ok(Ok(())) => {
                            if peer.notify_tool_list_changed().await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
        std::future::ready(())
    }

    /// `subscriptions/listen` (2026-07-28 clients, which have no session to receive
    /// `notifications/tools/list_changed` on): `toolsListChanged` is accepted, other
    /// categories are not offered (serve has no prompts or resources of its own).
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// One `subscriptions/listen` stream: every change of the catalog
    /// ([`EnvSource::catalog_changes`]) is sent as `notifications/tools/list_changed` on it,
    /// until the client cancels it (or drops the HTTP response) or the server stops, which ends
    /// it gracefully with the final `SubscriptionsListenResult`.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(mut changes) = self.source.catalog_changes() else {
            tokio::select! {
                () = context.cancelled() => {}
                () = self.drain.stopped() => {}
            }
            return Ok(());
        };
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.drain.stopped() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The catalog can no longer change: keep the stream until it ends.
                        tokio::select! {
                            () = context.cancelled() => {}
                            () = self.drain.stopped() => {}
                        }
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!("subscriptions/listen stream closed: {e}");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let session = self.session_for(&context);
        self.tasks.get(&request.task_id, &session_owner(&session))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = self.session_for(&context);
        self.tasks.update(
            &request.task_id,
            &session_owner(&session),
            &request.input_responses,
        )
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = self.session_for(&context);
        self.tasks
            .cancel(&request.task_id, &session_owner(&session))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Cacheable (2026-07-28 `ttlMs`/`cacheScope`) while every configured source is
        // reachable: the list changes only with the catalog, which is announced. While a
        // server is still connecting or failed, it is about to change: `ttlMs: 0`.
        let ttl = if self.source.unavailable().is_empty() {
            TOOLS_LIST_TTL_MS
        } else {
            0
        };
        Ok(ListToolsResult::with_all_items(self.tools())
            .with_ttl_ms(ttl)
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Absent arguments go through as `null`, so the facade's own argument checks answer.
        let input = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let session = self.session_for(&context);
        // Elicitations for this session's approvals go to the client that sent this request.
        session.peer.set(context.peer.clone());
        if let Some(forward) = &self.forward {
            let id = session.scope.session_id.as_deref().unwrap_or_default();
            forward.set_upstream(id, context.peer.clone());
        }
        let name = request.name.as_ref();
        tracing::debug!(tool = name, session = ?session.scope.session_id, "codemode MCP call");
        let _in_flight = self.drain.enter();
        if self.drain.is_stopping() || self.code_mode.is_parking_in_flight() {
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        // A 2026-07-28 request: approvals go out as `input_required` (MRTR), not elicitation.
        let mrtr = uses_mrtr(&context);
        let binding = format!(
            "{}|{name}",
            session.scope.session_key.as_deref().unwrap_or_default()
        );
        if !matches!(name, "exec" | "wait") {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        if name == "exec" && request.request_state.is_none() {
            if let Some(refused) = self.over_principal_cap(&context).await {
                return Ok(call_result(refused, &[]).into());
            }
        }
        let (result, unavailable) = match request.request_state.as_deref() {
            // A retry: answer the approvals it carries, then resume the run as `wait` does.
            Some(sealed) => {
                let state = self.states.open(&binding, sealed)?;
                let Some(broker) = self.run_env(&session, true).and_then(|env| env.approvals)
                else {
                    return Ok(call_result(disabled_result(), &[]).into());
                };
                let responses = request.input_responses.unwrap_or_default();
                let mut missing = false;
                for id in &state.approvals {
                    match responses.get(id) {
                        Some(response) => {
                            // Unknown when it expired or its call ended meanwhile: nothing to do.
                            let _ = broker.answer(id, crate::mrtr::decision_of_response(response));
                        }
                        None => missing = true,
                    }
                }
                if missing {
                    // Ask again at once for what is still pending, without resuming.
                    let pending: Vec<_> = broker
                        .pending()
                        .into_iter()
                        .filter(|r| {
                            state.approvals.contains(&r.approval_id)
                                || r.scope.run_id.as_deref() == Some(state.run.as_str())
                        })
                        .collect();
                    if !pending.is_empty() {
                        return Ok(self
                            .input_required(&binding, &state.run, &pending, broker.ttl())
                            .into());
                    }
                }
                let input = json!({"runId": state.run});
                (self.wait(&session, input, &context, true).await, Vec::new())
            }
            None if name == "exec" && uses_tasks(&context) => {
                // Approvals of a task are answered by `tasks/update`: the MRTR broker.
                let (result, unavailable) = self.exec(&session, input, &context, true).await;
                if let Some(created) = self.park_as_task(&session, &result) {
                    return Ok(created.into());
                }
                (result, unavailable)
            }
            None if name == "exec" => self.exec(&session, input, &context, mrtr).await,
            None => (self.wait(&session, input, &context, mrtr).await, Vec::new()),
        };
        if mrtr && !self.drain.is_stopping() {
            if let Some(asked) = self.ask_approvals(&session, &binding, &result) {
                return Ok(asked.into());
            }
        }
        if self.drain.is_stopping() {
            // The run was aborted by the shutdown: the client gets an answer it cannot mistake
            // for the program's own failure.
            return Err(ErrorData::internal_error(SHUTTING_DOWN, None));
        }
        Ok(call_result(result, &unavailable).into())
    }
}
