//! One connection to one configured MCP server (rmcp client): connect over stdio or streamable
//! HTTP, list with a page cap, call with a timeout, reconnect when the connection died, shut down
//! cleanly. The child process and its group are `process.rs`, its stderr `stderr.rs`, its stdout
//! filter `stdio.rs`; the resource and prompt requests `client/operations.rs`; errors are
//! [`ClientError`]s.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientNotification, ClientRequest,
    CustomRequest, JsonRpcMessage, RequestId, ServerResult,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{Peer, PeerRequestOptions, RunningService};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{RoleClient, ServiceError};
use serde_json::{json, Map, Value};

mod connect;
mod operations;
pub mod passthrough;
mod rounds;

use crate::config::ServerConfig;
use crate::error::{ClientError, McpRequest};
use crate::forward::Handler;
use crate::lifecycle;
use crate::process::ChildProcess;
use crate::stderr::StderrTail;
use crate::stdio;
use rounds::Next;

/// Limits of the MCP client. Every value is finite: a server can slow a call down to the
/// timeout but never hang it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Budget of one request to a server (`tools/call`, `resources/read`, one list page), in
    /// ms. Default 60,000.
    pub call_timeout: Duration,
    /// Budget of connecting and the initialize handshake, in ms, and of one whole listing of a
    /// server by [`crate::McpHub`] (every page, and the connect it may need). Default 30,000.
    pub connect_timeout: Duration,
    /// Most pages read from one `*/list` listing before it stops (with a warning). Default 32.
    pub max_list_pages: usize,
    /// Most tools cataloged from one server; the rest are dropped with a warning. Default 1,000.
    pub max_tools_per_server: usize,
    /// How long a server that failed to connect or list is left alone before
    /// [`crate::McpHub::retry_failed`] tries it again. Default 30,000 ms.
    pub retry_failed_after: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            call_timeout: Duration::from_millis(60_000),
            connect_timeout: Duration::from_millis(30_000),
            max_list_pages: 32,
            max_tools_per_server: 1_000,
            retry_failed_after: Duration::from_millis(30_000),
        }
    }
}

/// What the client learned from one listing of a server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerListing {
    /// The server's tools as MCP JSON (`{name, description?, inputSchema, …}`), de-duplicated
    /// by name (first wins), at most [`ClientOptions::max_tools_per_server`].
    pub tools: Vec<Value>,
    /// The server advertises the `resources` capability.
    pub resources: bool,
    /// The server advertises the `prompts` capability.
    pub prompts: bool,
    /// What went wrong while listing (page cap, repeated cursor, dropped tools).
    pub warnings: Vec<String>,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    peer: Peer<RoleClient>,
    /// The server's capabilities as JSON (`{"tools": {…}, "resources": {…}, …}`).
    capabilities: Value,
    /// Set (with the server's message) when an HTTP server answered with an error that names no
    /// request, which is how servers reject a session they no longer know (HTTP 400 "No valid
    /// session ID"): every request in flight on it would otherwise wait for its timeout.
    broken: tokio::sync::watch::Receiver<Option<String>>,
    /// The stdio child (its process group is killed when dropped).
    child: Option<ChildProcess>,
}

impl Connection {
    fn usable(&self) -> bool {
        !self.peer.is_transport_closed()
            && !self.service.is_closed()
            && self.broken.borrow().is_none()
    }
}

/// A transport that reports id-less JSON-RPC errors (see [`Connection::broken`]).
struct Watched<T> {
    inner: T,
    broken: Arc<tokio::sync::watch::Sender<Option<String>>>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let broken = self.broken.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Error(error)) = &message {
                if error.id.is_none() {
                    broken.send_replace(Some(error.error.message.to_string()));
                }
            }
            message
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A client for one configured MCP server. Connects lazily and reconnects when the previous
/// connection is gone (dead child, closed HTTP session); calls never wait longer than
/// [`ClientOptions::call_timeout`].
pub struct ServerClient {
    name: String,
    config: ServerConfig,
    options: ClientOptions,
    connection: tokio::sync::Mutex<Option<Connection>>,
    stderr: StderrTail,
    on_tools_changed: Arc<dyn Fn() + Send + Sync>,
    connects: AtomicU64,
    listings: AtomicU64,
    last_problem: stdio::LastProblem,
    /// Cancelled by [`ServerClient::shutdown`]: a connect under way stops (its child is killed)
    /// instead of holding the connection lock for up to the connect timeout.
    closing: tokio_util::sync::CancellationToken,
    /// Where the server's elicitation and sampling requests go (`codemode serve`).
    forward: Option<Arc<crate::forward::Forwarder>>,
    /// Runs for every `notifications/prompts/list_changed` and
    /// `notifications/resources/list_changed` ([`ServerClient::with_on_content_changed`]).
    on_content_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Over a 2026-07-28 connection: the `subscriptions/listen` stream of each subscribed
    /// resource URI (`operations.rs`), ended by aborting its reader.
    resource_listens: std::sync::Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>,
}

impl ServerClient {
    /// A client for `config`, named `name` in messages; `on_tools_changed` runs (on an rmcp
    /// task, so it must not block) for every `notifications/tools/list_changed`. The server's
    /// own `timeoutMs` ([`ServerConfig::timeout`]) replaces `options.call_timeout`.
    pub fn new(
        name: &str,
        config: ServerConfig,
        mut options: ClientOptions,
        on_tools_changed: Arc<dyn Fn() + Send + Sync>,
    ) -> Self {
        if let Some(timeout) = config.timeout() {
            options.call_timeout = timeout;
        }
        ServerClient {
            name: name.to_string(),
            config,
            options,
            connection: tokio::sync::Mutex::new(None),
            stderr: StderrTail::default(),
            on_tools_changed,
            connects: AtomicU64::new(0),
            listings: AtomicU64::new(0),
            last_problem: stdio::LastProblem::default(),
            closing: tokio_util::sync::CancellationToken::new(),
            forward: None,
            on_content_changed: None,
            resource_listens: std::sync::Mutex::default(),
        }
    }

    /// The same client forwarding the server's elicitation and sampling requests through
    /// `forward` (see `forward.rs`); it then declares both capabilities when it connects.
    pub fn with_forwarder(mut self, forward: Arc<crate::forward::Forwarder>) -> Self {
        self.forward = Some(forward);
        self
    }

    /// The same client running `on_content_changed` (on an rmcp task, so it must not block)
    /// for every `notifications/prompts/list_changed` and `notifications/resources/list_changed`
    /// of the server (over a 2026-07-28 connection: on its `subscriptions/listen` stream), so
    /// `serve` with code mode off can announce the changes of the lists it aggregates
    /// (docs/mcp.md, "Code mode off").
    pub fn with_on_content_changed(
        mut self,
        on_content_changed: Arc<dyn Fn() + Send + Sync>,
    ) -> Self {
        self.on_content_changed = Some(on_content_changed);
        self
    }

    /// The configured server name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many connections were made so far (1 after the first connect; more after reconnects).
    pub fn connects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed)
    }

    /// How many times the server was listed ([`ServerClient::list`] calls).
    pub fn listings(&self) -> u64 {
        self.listings.load(Ordering::Relaxed)
    }

    /// The last bytes the child wrote to stderr (lossy UTF-8, trimmed, from at most 2,048
    /// bytes).
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// The live peer, connecting first when there is no connection or its transport closed.
    async fn peer(&self) -> Result<Live, ClientError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            if connection.usable() {
                return Ok(Live::of(connection));
            }
            tracing::info!(server = %self.name, "MCP connection closed; reconnecting");
            if let Some(old) = slot.take() {
                tokio::spawn(async move {
                    let _ = old.service.cancel().await;
                });
            }
        }
        let shutting_down = || ClientError::ShuttingDown {
            server: self.name.clone(),
        };
        if self.closing.is_cancelled() {
            return Err(shutting_down());
        }
        let connection = tokio::select! {
            connected = tokio::time::timeout(self.options.connect_timeout, self.connect()) => connected,
            // Dropping the connect future kills a child it started (kill on drop, process group).
            () = self.closing.cancelled() => return Err(shutting_down()),
        }
        .map_err(|_| ClientError::ConnectTimeout {
            server: self.name.clone(),
            timeout: self.options.connect_timeout,
            stderr: self.stderr.quote(),
        })??;
        self.connects.fetch_add(1, Ordering::Relaxed);
        let live = Live::of(&connection);
        *slot = Some(connection);
        Ok(live)
    }

    /// The live connection's peer (connecting first when needed).
    pub(crate) async fn live_peer(&self) -> Result<Peer<RoleClient>, ClientError> {
        Ok(self.peer().await?.peer)
    }

    /// The budget of one request to this server.
    pub(crate) fn call_timeout(&self) -> Duration {
        self.options.call_timeout
    }

    /// Runs one request against the live connection with the call timeout; turns rmcp errors
    /// into [`ClientError`]s naming the server and the request (`method` and, for requests that
    /// name one, `subject`). When the server rejects the session mid-request (see
    /// [`Connection::broken`]) the request fails at once and the next one reconnects; requests
    /// that change nothing (lists, reads, `prompts/get`) are retried once on the new connection,
    /// `tools/call` never is (it may have had effects).
    pub(crate) async fn request<T, F, Fut>(
        &self,
        method: &str,
        subject: Option<&str>,
        f: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let request = || McpRequest {
            method: method.to_string(),
            subject: subject.map(str::to_string),
        };
        let retries = if method == "tools/call" { 0 } else { 1 };
        for attempt in 0..=retries {
            let mut live = self.peer().await?;
            // Stdio connections have no watcher: their receiver's sender is gone, never broken.
            let broken = async {
                let reason = match live.broken.wait_for(Option::is_some).await {
                    Ok(reason) => Some(reason.clone().unwrap_or_default()),
                    Err(_) => None,
                };
                match reason {
                    Some(reason) => reason,
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                // `send_raw` times the request out itself (and cancels it downstream); this is
                // the backstop for the send itself.
                outcome = tokio::time::timeout(self.options.call_timeout + Duration::from_secs(1), f(live.peer)) => outcome,
                reason = broken => {
                    if attempt < retries {
                        continue;
                    }
                    return Err(ClientError::SessionRejected {
                        server: self.name.clone(),
                        request: request(),
                        reason,
                    });
                }
            };
            return match outcome {
                Err(_) | Ok(Err(ServiceError::Timeout { .. })) => Err(ClientError::Timeout {
                    server: self.name.clone(),
                    request: request(),
                    timeout: self.options.call_timeout,
                    dropped: self.last_problem.lock().ok().and_then(|mut p| p.take()),
                }),
                Ok(Ok(value)) => Ok(value),
                Ok(Err(ServiceError::McpError(source))) if dropped_reason(&source).is_some() => {
                    Err(ClientError::ReplyDropped {
                        server: self.name.clone(),
                        request: request(),
                        reason: dropped_reason(&source).unwrap_or_default(),
                    })
                }
                Ok(Err(ServiceError::TransportClosed))
                    if matches!(self.config, ServerConfig::Http { .. }) =>
                {
                    Err(ClientError::StreamClosed {
                        server: self.name.clone(),
                        request: request(),
                    })
                }
                Ok(Err(ServiceError::McpError(source))) => Err(ClientError::Refused {
                    server: self.name.clone(),
                    request: request(),
                    source: Box::new(source),
                }),
                Ok(Err(
                    source @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)),
                )) => {
                    // A dying child writes its last words to stderr just before stdout closes;
                    // give the drain task a moment to read them (failure path only).
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(ClientError::Closed {
                        server: self.name.clone(),
                        request: request(),
                        stderr: self.stderr.quote(),
                        source: Box::new(source),
                    })
                }
                Ok(Err(source)) => Err(ClientError::Failed {
                    server: self.name.clone(),
                    request: request(),
                    source: Box::new(source),
                }),
            };
        }
        unreachable!("the last attempt returns")
    }

    /// Connects if needed and lists the server's tools (all pages up to the cap) and
    /// capabilities.
    ///
    /// # Errors
    /// Any [`ClientError`] of connecting or of a `tools/list` page.
    pub async fn list(&self) -> Result<ServerListing, ClientError> {
        self.listings.fetch_add(1, Ordering::Relaxed);
        let capabilities = self.peer().await?.capabilities;
        let mut listing = ServerListing {
            resources: capabilities.get("resources").is_some_and(|v| !v.is_null()),
            prompts: capabilities.get("prompts").is_some_and(|v| !v.is_null()),
            ..ServerListing::default()
        };
        if capabilities.get("tools").is_some_and(|v| !v.is_null()) || capabilities.is_null() {
            let (tools, mut warnings) = self.list_all("tools/list", "tools").await?;
            listing.warnings.append(&mut warnings);
            let mut seen = HashSet::new();
            let mut skipped = Vec::new();
            for tool in tools {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                if name.trim().is_empty() || !seen.insert(name.to_string()) {
                    skipped.push(format!("{name:?}"));
                    continue;
                }
                if listing.tools.len() == self.options.max_tools_per_server {
                    listing.warnings.push(format!(
                        "MCP server \"{}\": more than {} tools; the rest are not cataloged",
                        self.name, self.options.max_tools_per_server
                    ));
                    break;
                }
                listing.tools.push(tool);
            }
            if !skipped.is_empty() {
                let count = skipped.len();
                let more = if count > 10 { ", …" } else { "" };
                skipped.truncate(10);
                listing.warnings.push(format!(
                    "MCP server \"{}\": skipped {count} tools with a missing, empty or duplicate name ({}{more})",
                    self.name,
                    skipped.join(", ")
                ));
            }
        }
        Ok(listing)
    }

    /// Reads every page of a `*/list` method: stops at the page cap and at a cursor it has
    /// seen before (both with a warning), so a server cannot keep the client paging forever.
    async fn list_all(
        &self,
        method: &str,
        key: &str,
    ) -> Result<(Vec<Value>, Vec<String>), ClientError> {
        let mut items = Vec::new();
        let mut warnings = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for page in 0.. {
            if page == self.options.max_list_pages {
                warnings.push(format!(
                    "MCP server \"{}\": {method} stopped after {} pages",
                    self.name, self.options.max_list_pages
                ));
                break;
            }
            let result = self.list_page(method, cursor.clone()).await?;
            if let Some(Value::Array(page_items)) = result.get(key) {
                items.extend(page_items.iter().cloned());
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                None => break,
                Some(next) if !seen.insert(next.to_string()) => {
                    warnings.push(format!(
                        "MCP server \"{}\": {method} repeated cursor {next:?}; stopped",
                        self.name
                    ));
                    break;
                }
                Some(next) => cursor = Some(next.to_string()),
            }
        }
        Ok((items, warnings))
    }

    /// One page of a `*/list` method as MCP JSON. Sent as a raw request and read as raw JSON
    /// rather than through rmcp's typed list results: a typed result is all or nothing, so one
    /// malformed entry (say an `inputSchema` that is not an object) would lose the whole page;
    /// here bad entries are skipped one by one by the caller.
    async fn list_page(&self, method: &str, cursor: Option<String>) -> Result<Value, ClientError> {
        let params = cursor.map(|cursor| json!({ "cursor": cursor }));
        let timeout = self.options.call_timeout;
        let result = self
            .request(method, None, |p| {
                send_raw(p, method, params.clone(), timeout)
            })
            .await?;
        let page = to_json(result)?;
        if page.is_object() {
            Ok(page)
        } else {
            Err(ClientError::NonObjectPage {
                server: self.name.clone(),
                method: method.to_string(),
            })
        }
    }

    /// `tools/call` of the raw MCP tool `tool` with `arguments`: the raw MCP result
    /// (`{content, structuredContent?, isError?}`). A tool error (`isError: true`) is a result,
    /// not an `Err`. A 2026-07-28 server's `input_required` answers are answered and the call
    /// sent again (at most rmcp's `DEFAULT_MRTR_MAX_ROUNDS`, 10, times), and a task it answers
    /// with is followed to its end (`tasks/get`, `tasks/cancel` when the caller gives up); see
    /// `client/rounds.rs`.
    ///
    /// # Errors
    /// A [`ClientError`]: the JSON-RPC error ([`ClientError::Refused`]), a timeout, a lost
    /// connection or rejected session, or a failed (re)connect (never retried); input that
    /// cannot be given ([`ClientError::InputRequest`], [`ClientError::InputRounds`]); a task
    /// that failed, was cancelled or outlived its TTL ([`ClientError::Task`]).
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.call_tool_for(tool, arguments, None).await
    }

    /// [`ServerClient::call_tool`] for the nested call `call` of a code-mode run: in `codemode
    /// serve` (a forwarder is set) the server's progress for this request reaches that run's
    /// `exec`/`wait` when it asked for progress, and its elicitation and sampling requests meanwhile
    /// go to that run's MCP client (`forward.rs`). Inside
    /// [`passing_through`](passthrough::passing_through) the round's input goes with the call and
    /// an `input_required` answer is the result (`client/passthrough.rs`).
    ///
    /// # Errors
    /// As [`ServerClient::call_tool`].
    pub async fn call_tool_for(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        call: Option<&codemode_bridge::ToolCall>,
    ) -> Result<Value, ClientError> {
        let tool_call_id = call.map(|c| c.tool_call_id.as_str());
        // While it is in flight, this server's elicitation and sampling requests may go to the
        // client of the calling run's MCP session (`forward.rs`).
        let _in_flight = self
            .forward
            .as_ref()
            .zip(call.and_then(|c| c.scope.session_id.as_deref()))
            .map(|(forward, session)| forward.call_started(&self.name, session));
        // Sent raw and read back raw (rmcp's untagged result falls back to the JSON as is): a
        // typed `CallToolResult` would lose a whole result over one content item of a type rmcp
        // does not know, and the guest gets the raw MCP result anyway.
        let mut params = json!({"name": tool, "arguments": arguments});
        // `serve` with code mode off for a 2026-07-28 client: its input requests go back to it
        // (`passthrough.rs`).
        let pass = passthrough::current();
        if let Some(pass) = &pass {
            pass.apply(&mut params);
        }
        let meta = pass.as_ref().and_then(passthrough::PassThrough::meta);
        let timeout = self.options.call_timeout;
        let track = self
            .forward
            .clone()
            .zip(tool_call_id)
            .map(|(forward, id)| (forward, self.name.clone(), id.to_string()));
        // 2026-07-28: the answer may ask for input (MRTR, sent again with the answers) or be a
        // task to follow (`rounds.rs`).
        for rounds in 0.. {
            let answered = self
                .request("tools/call", Some(tool), |p| {
                    send_raw_tracked(
                        p,
                        "tools/call",
                        Some(params.clone()),
                        timeout,
                        track.clone(),
                        meta.clone(),
                    )
                })
                .await;
            let result = match answered {
                Ok(answer) => to_json(answer)?,
                Err(e) => {
                    if let Some(pass) = &pass {
                        pass.refusal.keep(&e);
                    }
                    return Err(e);
                }
            };
            let kind = result.get("resultType").and_then(Value::as_str);
            if pass.is_some() && kind == Some("input_required") {
                return Ok(result);
            }
            // A Tasks client gets the server's task itself (`serve`, `server/direct_tasks.rs`).
            if pass.as_ref().is_some_and(|p| p.tasks) && kind == Some("task") {
                return Ok(result);
            }
            match self
                .after_answer("tools/call", tool, &params, result, rounds)
                .await?
            {
                Next::Done(result) => return Ok(result),
                Next::Retry(retry) => params = retry,
                Next::Task(created) => return self.follow_task(tool, created).await,
            }
        }
        unreachable!("after_answer ends the rounds")
    }

    /// One Tasks request (`tasks/get`, `tasks/update`, `tasks/cancel`) about a task this
    /// server created, with `params` as they are and `meta`'s keys in the request's `_meta`
    /// (the upstream client's capabilities, when `serve` passes a task through): the raw
    /// result. Sent again once on a new connection when the session was rejected (it is
    /// idempotent for the task).
    ///
    /// # Errors
    /// A [`ClientError`], as for [`ServerClient::call_tool`]: [`ClientError::Refused`] carries
    /// the server's JSON-RPC error.
    pub async fn task_request(
        &self,
        method: &str,
        params: Value,
        meta: Option<rmcp::model::RequestMetaObject>,
    ) -> Result<Value, ClientError> {
        let timeout = self.options.call_timeout;
        let subject = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_string);
        to_json(
            self.request(method, subject.as_deref(), |p| {
                send_raw_tracked(p, method, Some(params.clone()), timeout, None, meta.clone())
            })
            .await?,
        )
    }

    /// Closes the connection: a stdio child gets its stdin closed, up to 3 s to exit, then SIGKILL
    /// and reaping, and whatever is left in its process group gets SIGKILL too (Unix); HTTP
    /// sessions are dropped. A connect under way is given up at once (its child killed) rather
    /// than waited for, and later requests fail with [`ClientError::ShuttingDown`].
    pub async fn shutdown(&self) {
        self.closing.cancel();
        let connection = self.connection.lock().await.take();
        if let Some(connection) = connection {
            // Cancelling closes the transport, so the child reads end of input on stdin.
            let _ = tokio::time::timeout(Duration::from_secs(3), connection.service.cancel()).await;
            if let Some(process) = connection.child {
                process.stop(Duration::from_secs(3)).await;
            }
        }
    }
}

/// What a request needs of the live connection.
struct Live {
    peer: Peer<RoleClient>,
    capabilities: Value,
    broken: tokio::sync::watch::Receiver<Option<String>>,
}

impl Live {
    fn of(connection: &Connection) -> Live {
        Live {
            peer: connection.peer.clone(),
            capabilities: connection.capabilities.clone(),
            broken: connection.broken.clone(),
        }
    }
}

pub(crate) fn to_json<T: serde::Serialize>(value: T) -> Result<Value, ClientError> {
    serde_json::to_value(value).map_err(|source| ClientError::NotJson { source })
}

/// Why a request in flight was given up, as told to the server in `notifications/cancelled`.
#[derive(Clone, Copy)]
enum GiveUp {
    /// The call budget ran out.
    Timeout(Duration),
    /// The caller dropped the call: the run was cancelled, aborted or expired.
    Caller,
}

/// The reason text of `notifications/cancelled` for a call given up because the caller went
/// away (its run was cancelled, aborted or expired, or the host dropped the call).
pub const CANCELLED_BY_CALLER: &str = "the calling code-mode run was cancelled";

/// Sends `notifications/cancelled` for a request in flight when dropped while armed: the
/// caller's future was dropped, or the call budget ran out (docs/mcp.md, "Cancellation").
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    why: GiveUp,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let reason = match self.why {
            GiveUp::Timeout(timeout) => {
                format!("no answer within {} ms", timeout.as_millis())
            }
            GiveUp::Caller => CANCELLED_BY_CALLER.to_string(),
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notification =
                CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason)));
            if let Err(e) = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await
            {
                tracing::debug!("notifications/cancelled not sent: {e}");
            }
        });
    }
}

/// Sends `method` with `params` as a raw request and waits up to `timeout` for its answer (raw
/// JSON: rmcp's untagged result falls back to the JSON as is, so an entry rmcp would not parse
/// costs nothing). When the time runs out, or the returned future is dropped first (the caller
/// gave up), the server gets `notifications/cancelled` for the request, so it can stop work
/// nobody waits for.
pub(crate) async fn send_raw(
    peer: Peer<RoleClient>,
    method: &str,
    params: Option<Value>,
    timeout: Duration,
) -> Result<ServerResult, ServiceError> {
    send_raw_tracked(peer, method, params, timeout, None, None).await
}

/// [`send_raw`], routing the server's progress for the request to the nested call of `track`
/// (forwarder, server name, tool-call id) while the request is in flight, with `meta`'s keys
/// replacing those rmcp puts in the request's `_meta`.
async fn send_raw_tracked(
    peer: Peer<RoleClient>,
    method: &str,
    params: Option<Value>,
    timeout: Duration,
    track: Option<(Arc<crate::forward::Forwarder>, String, String)>,
    meta: Option<rmcp::model::RequestMetaObject>,
) -> Result<ServerResult, ServiceError> {
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, params));
    let mut options = PeerRequestOptions::no_options();
    options.meta = meta;
    let handle = peer.send_request_with_option(request, options).await?;
    let _tracked = track.map(|(forward, server, call)| {
        forward.track(&server, handle.progress_token.clone(), &call)
    });
    let mut guard = CancelOnDrop {
        peer: handle.peer.clone(),
        id: Some(handle.id.clone()),
        why: GiveUp::Caller,
    };
    match tokio::time::timeout(timeout, handle.await_response()).await {
        Ok(response) => {
            guard.disarm();
            response
        }
        Err(_) => {
            guard.why = GiveUp::Timeout(timeout);
            drop(guard);
            Err(ServiceError::Timeout { timeout })
        }
    }
}

/// How often a streamable HTTP response stream that broke is resumed (SSE `Last-Event-ID`)
/// before its request fails: 3 times, 250 ms, 500 ms, 1 s apart (a server's `retry:` field
/// can change the delay). rmcp's default retries forever, so a request whose server died
/// waited for its whole timeout (docs/mcp.md, "Client").
fn sse_retry() -> rmcp::transport::common::client_side_sse::ExponentialBackoff {
    let mut retry = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
    retry.max_times = Some(3);
    retry.base_duration = Duration::from_millis(250);
    retry.max_delay = Some(Duration::from_secs(1));
    retry
}

/// The reason of a JSON-RPC error the stdout filter made up for a reply it dropped
/// ([`stdio::DROPPED_REPLY_MARKER`]).
fn dropped_reason(error: &rmcp::ErrorData) -> Option<String> {
    error
        .data
        .as_ref()?
        .get(stdio::DROPPED_REPLY_MARKER)?
        .as_str()
        .map(str::to_string)
}
