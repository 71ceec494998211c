//! What codemode's MCP client answers to a server's own requests (elicitation, sampling), and
//! the [`Forwarder`] that hands them to the upstream MCP client in `codemode serve`.
//!
//! - In `serve` (a [`Forwarder`] is given, [`crate::McpHub::start_forwarding`]), every
//!   downstream connection declares the `elicitation` and `sampling` capabilities, and a server's
//!   `elicitation/create` or `sampling/createMessage` goes to the upstream client of the latest
//!   `exec`/`wait` call when that client declared the capability; otherwise an elicitation is
//!   declined and a sampling request refused, each with [`NO_UPSTREAM`]-style reasons.
//! - In `exec` and `session` (no forwarder) neither capability is declared; a server that asks
//!   anyway gets a decline (elicitation, the reason in `_meta["codemode/reason"]`) or a JSON-RPC
//!   error (sampling) saying why.

// Sampling (and its types) is deprecated by SEP-2577 for 2026-07-28, but it is part of the
// 2025-11-25 revision this client speaks, and servers still send it.
#![allow(deprecated)]

mod notices;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::mpsc::Sender;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient, RoleServer};
use serde_json::json;

/// Why a server's elicitation or sampling request is not answered in `exec` and `session`.
pub const NO_USER: &str =
    "codemode exec/session has no user or model to ask; only `codemode serve` forwards elicitation and sampling, to an MCP client that declared them";

/// Why a request is not forwarded in `serve` when the client it would go to did not declare the
/// capability (`{capability}` is `elicitation` or `sampling`).
pub const NO_UPSTREAM: &str = "the MCP client of codemode serve did not declare {capability}";

/// Why a request is not forwarded when no code-mode run has a call to the asking server in
/// flight: there is nobody it could be for.
pub const NO_CALLER: &str = "no code-mode run has a call to this MCP server in flight";

/// Why a request is not forwarded when runs of more than one MCP session have calls to the asking
/// server in flight: a downstream request does not say which call it belongs to, and guessing
/// could show one client's prompt (or data) to another.
pub const AMBIGUOUS_CALLER: &str = "calls from more than one MCP session to this MCP server are in flight, so codemode cannot tell whose client to ask";

/// Hands downstream servers' elicitation and sampling requests to the upstream MCP client of
/// `codemode serve` whose run is waiting on that server: each MCP session's latest client
/// ([`Forwarder::set_upstream`]) and, per downstream server, the sessions with a `tools/call` to
/// it in flight (`Forwarder::call_started`). A request goes to the one such session's client; with
/// none it is declined ([`NO_CALLER`]), and with calls from two or more sessions in flight it is
/// declined too ([`AMBIGUOUS_CALLER`]) rather than risk showing one client another's prompt.
///
/// It also routes a downstream server's `notifications/progress` for a `tools/call` to the
/// `exec`/`wait` that made the nested call, when that request carried a `progressToken`
/// (docs/mcp.md, "Forwarding"): the run's progress sink registers each nested call by its
/// tool-call id ([`Forwarder::watch_call`]) and the client registers the downstream request's
/// progress token under that id while the request is in flight (`Forwarder::track`).
#[derive(Default)]
pub struct Forwarder {
    /// MCP session id → the client of that session's latest `exec`/`wait`.
    upstreams: RwLock<HashMap<String, Peer<RoleServer>>>,
    /// Downstream server name → MCP session id → its `tools/call`s to that server in flight.
    in_flight: Mutex<HashMap<String, HashMap<String, usize>>>,
    progress: Mutex<ProgressRoutes>,
    /// Log levels and resource subscriptions of the clients (`notices.rs`).
    notices: notices::Notices,
}

/// Counts one `tools/call` of a session to a downstream server as in flight until dropped.
pub(crate) struct InFlight {
    forward: Arc<Forwarder>,
    server: String,
    session: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut calls = self
            .forward
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(sessions) = calls.get_mut(&self.server) {
            if let Some(n) = sessions.get_mut(&self.session) {
                *n -= 1;
                if *n == 0 {
                    sessions.remove(&self.session);
                    self.forward.ended(&self.server, &self.session);
                }
            }
            if sessions.is_empty() {
                calls.remove(&self.server);
            }
        }
    }
}

/// The two maps downstream progress goes through.
#[derive(Default)]
struct ProgressRoutes {
    /// Nested tool-call id → the progress messages of the `exec`/`wait` that runs it.
    calls: HashMap<String, Sender<String>>,
    /// (server name, the progress token rmcp put on the downstream request) → the nested
    /// tool-call id, and whether the request was answered. An answered request's route stays
    /// while its call is watched: rmcp handles each notification on a task of its own, so the
    /// server's last progress, written before its result, can be routed after the result came
    /// (`server/direct.rs`, `progress_grace`). [`Forwarder::unwatch_call`] removes it.
    requests: HashMap<(String, ProgressToken), (String, bool)>,
    /// Progress that came before its request was tracked: rmcp gives the request its progress
    /// token as it sends it, and a fast server's first notification can be handled before the
    /// sender registers the token ([`Forwarder::track`]). Kept at most [`EARLY_PROGRESS_TTL`],
    /// at most [`EARLY_PROGRESS_MAX`] of them, and passed on when the token is tracked.
    early: Vec<(std::time::Instant, String, ProgressNotificationParam)>,
    /// Nested tool-call id → the last progress routed to its watcher: `(progress, total)`.
    last: HashMap<String, (f64, Option<f64>)>,
}

/// How long progress for a token not tracked yet is kept for it.
const EARLY_PROGRESS_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// Most progress notifications kept for tokens not tracked yet (the oldest go first).
const EARLY_PROGRESS_MAX: usize = 64;

/// [`Forwarder::route_progress`] with the routes locked: the message goes to the call's
/// watcher, or, when the token is not tracked yet, the notification is kept in `early`.
fn route_locked(routes: &mut ProgressRoutes, server: &str, params: &ProgressNotificationParam) {
    let key = (server.to_string(), params.progress_token.clone());
    let Some((call, _)) = routes.requests.get(&key) else {
        // Perhaps its request is not tracked yet: kept for a moment (see `early`).
        if routes.early.len() >= EARLY_PROGRESS_MAX {
            routes.early.remove(0);
        }
        routes.early.push((
            std::time::Instant::now(),
            server.to_string(),
            params.clone(),
        ));
        return;
    };
    let Some(sender) = routes.calls.get(call) else {
        return;
    };
    routes
        .last
        .insert(call.clone(), (params.progress, params.total));
    let mut message = format!("{server}: {}", params.progress);
    if let Some(total) = params.total {
        message.push_str(&format!("/{total}"));
    }
    if let Some(text) = &params.message {
        message.push(' ');
        message.extend(text.chars().filter(|c| !c.is_control()).take(200));
    }
    // Progress is advisory: when the client reads slower than the server sends, the excess is
    // dropped rather than queued without bound.
    let _ = sender.try_send(message);
}

/// Ends a downstream request's progress route when the request ends (answered, timed out or
/// dropped): at once when its nested call is not watched, else when the call is unwatched (see
/// `ProgressRoutes::requests`).
pub(crate) struct Tracked {
    forward: Arc<Forwarder>,
    key: (String, ProgressToken),
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut routes = self.forward.routes();
        let ProgressRoutes {
            calls, requests, ..
        } = &mut *routes;
        match requests.get_mut(&self.key) {
            Some((call, answered)) if calls.contains_key(call.as_str()) => *answered = true,
            Some(_) => {
                requests.remove(&self.key);
            }
            None => {}
        }
    }
}

impl Forwarder {
    /// A forwarder without an upstream client yet.
    pub fn new() -> Arc<Forwarder> {
        Arc::new(Forwarder::default())
    }

    /// Makes `peer` the client that later requests for runs of the MCP session `session` go to
    /// (called for every `exec`/`wait`); clients whose transport closed are forgotten.
    pub fn set_upstream(&self, session: &str, peer: Peer<RoleServer>) {
        let mut upstreams = self.upstreams.write().unwrap_or_else(|e| e.into_inner());
        upstreams.retain(|_, p| !p.is_transport_closed());
        upstreams.insert(session.to_string(), peer);
        self.keep_log_levels(|id| upstreams.contains_key(id));
    }

    /// The client of MCP session `session`'s latest request, if known.
    fn upstream_of(&self, session: &str) -> Option<Peer<RoleServer>> {
        self.upstreams
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .cloned()
    }

    /// Whether any MCP session has a request to `server` in flight.
    fn has_calls(&self, server: &str) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .is_some_and(|sessions| !sessions.is_empty())
    }

    /// The one MCP session with a request to `server` in flight, or why there is none
    /// ([`NO_CALLER`], [`AMBIGUOUS_CALLER`]).
    fn caller_session(&self, server: &str) -> Result<String, String> {
        let calls = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let sessions: Vec<&String> = calls
            .get(server)
            .map(|s| s.keys().collect())
            .unwrap_or_default();
        match sessions.as_slice() {
            [] => Err(NO_CALLER.to_string()),
            [one] => Ok((*one).clone()),
            _ => Err(AMBIGUOUS_CALLER.to_string()),
        }
    }

    /// Counts a `tools/call` of a run of MCP session `session` to `server` as in flight while the
    /// guard lives.
    pub(crate) fn call_started(self: &Arc<Self>, server: &str, session: &str) -> InFlight {
        *self
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.to_string())
            .or_default()
            .entry(session.to_string())
            .or_default() += 1;
        InFlight {
            forward: self.clone(),
            server: server.to_string(),
            session: session.to_string(),
        }
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, ProgressRoutes> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Progress of the nested call `tool_call_id` (a downstream server's progress for it) goes
    /// to `messages` until [`Forwarder::unwatch_call`], or until the receiving end of `messages`
    /// is gone (the request was answered while the call still ran, e.g. its run parked and then
    /// expired): such watches are dropped here, so the table holds only live watchers.
    pub fn watch_call(&self, tool_call_id: &str, messages: Sender<String>) {
        let mut routes = self.routes();
        let ProgressRoutes {
            calls,
            last,
            requests,
            ..
        } = &mut *routes;
        calls.retain(|_, sender| !sender.is_closed());
        last.retain(|id, _| calls.contains_key(id));
        requests.retain(|_, (call, answered)| !*answered || calls.contains_key(call.as_str()));
        calls.insert(tool_call_id.to_string(), messages);
    }

    /// Ends [`Forwarder::watch_call`] for `tool_call_id` (the nested call finished), with the
    /// routes of its answered downstream requests.
    pub fn unwatch_call(&self, tool_call_id: &str) {
        let mut routes = self.routes();
        routes.calls.remove(tool_call_id);
        routes.last.remove(tool_call_id);
        routes
            .requests
            .retain(|_, (call, answered)| !*answered || call != tool_call_id);
    }

    /// The last progress a downstream server reported for the watched nested call
    /// `tool_call_id`, as `(progress, total)`; `None` when it reported none (or the call is
    /// not watched).
    pub fn last_progress(&self, tool_call_id: &str) -> Option<(f64, Option<f64>)> {
        self.routes().last.get(tool_call_id).copied()
    }

    /// While the returned guard lives, progress that `server` sends with `token` belongs to the
    /// nested call `tool_call_id`.
    pub(crate) fn track(
        self: &Arc<Self>,
        server: &str,
        token: ProgressToken,
        tool_call_id: &str,
    ) -> Tracked {
        let key = (server.to_string(), token);
        {
            let mut routes = self.routes();
            routes
                .requests
                .insert(key.clone(), (tool_call_id.to_string(), false));
            // Progress that came first goes out now, before any later (same lock: in order).
            let now = std::time::Instant::now();
            let early = std::mem::take(&mut routes.early);
            for (at, early_server, params) in early {
                if now.duration_since(at) > EARLY_PROGRESS_TTL {
                    continue;
                }
                if early_server == key.0 && params.progress_token == key.1 {
                    route_locked(&mut routes, server, &params);
                } else {
                    routes.early.push((at, early_server, params));
                }
            }
        }
        Tracked {
            forward: self.clone(),
            key,
        }
    }

    /// Passes a downstream progress notification of `server` on as a message
    /// (`<server>: <progress>[/<total>][ <message>]`) to the `exec`/`wait` watching its call;
    /// dropped when none is; kept for a moment when its request is not tracked yet (`early`).
    fn route_progress(&self, server: &str, params: &ProgressNotificationParam) {
        route_locked(&mut self.routes(), server, params);
    }

    /// The client a request of `server` that needs `capability` goes to, or why none.
    fn upstream_with(&self, server: &str, capability: &str) -> Result<Peer<RoleServer>, String> {
        let session = self.caller_session(server)?;
        let peer = self.upstream_of(&session);
        let declared = |peer: &Peer<RoleServer>| {
            peer.peer_info().is_some_and(|info| match capability {
                "elicitation" => info.capabilities.elicitation.is_some(),
                _ => info.capabilities.sampling.is_some(),
            })
        };
        match peer {
            Some(peer) if declared(&peer) => Ok(peer),
            _ => Err(NO_UPSTREAM.replace("{capability}", capability)),
        }
    }
}

/// A decline carrying `reason` in `_meta["codemode/reason"]`.
fn decline(reason: String) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Decline);
    if let serde_json::Value::Object(meta) = json!({"codemode/reason": reason}) {
        result.meta = Some(meta.into());
    }
    result
}

/// A `-32601` (method not found) error carrying `reason`: sampling is not offered here.
fn refused(reason: String) -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, reason, None)
}

/// The rmcp client handler: names the client, turns `notifications/tools/list_changed` into a
/// callback (the hub re-lists; see `hub.rs`), and answers or forwards the server's elicitation
/// and sampling requests (see the module documentation).
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) on_tools_changed: Arc<dyn Fn() + Send + Sync>,
    /// For `notifications/prompts/list_changed` and `notifications/resources/list_changed`.
    pub(crate) on_content_changed: Option<Arc<dyn Fn() + Send + Sync>>,
    pub(crate) forward: Option<Arc<Forwarder>>,
}

impl Handler {
    fn content_changed(&self) {
        if let Some(on_content_changed) = &self.on_content_changed {
            on_content_changed();
        }
    }
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        (self.on_tools_changed)();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.content_changed();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.content_changed();
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        if let Some(forward) = &self.forward {
            forward.route_progress(&self.server, &params);
        }
        std::future::ready(())
    }

    fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        // A server's log lines are for the operator, not the model (docs/mcp.md, "Forwarding"),
        // and an operator's log is no place for a secret either: redacted like the trajectory.
        let data = log_data(&params.data);
        tracing::debug!(server = %self.server, level = ?params.level, %data, "MCP server log message");
        // With code mode off, also to the client whose request it came during, if that client
        // asked for log messages (`notices.rs`).
        async move {
            if let Some(forward) = &self.forward {
                forward.route_log(&self.server, params).await;
            }
        }
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(forward) = &self.forward {
            forward.route_resource_updated(&self.server, params).await;
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(forward) = &self.forward else {
            tracing::info!(server = %self.server, "MCP server asked for elicitation: declined ({NO_USER})");
            return Ok(decline(NO_USER.to_string()));
        };
        let peer = match forward.upstream_with(&self.server, "elicitation") {
            Ok(peer) => peer,
            Err(reason) => {
                tracing::info!(server = %self.server, "MCP server asked for elicitation: declined ({reason})");
                return Ok(decline(reason));
            }
        };
        tracing::info!(server = %self.server, "forwarding an elicitation to the MCP client");
        peer.create_elicitation(request).await.map_err(|e| {
            ErrorData::internal_error(format!("the MCP client of codemode serve: {e}"), None)
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(forward) = &self.forward else {
            return Err(refused(NO_USER.to_string()));
        };
        let peer = forward
            .upstream_with(&self.server, "sampling")
            .map_err(refused)?;
        tracing::info!(server = %self.server, "forwarding a sampling request to the MCP client");
        peer.create_message(params).await.map_err(|e| {
            ErrorData::internal_error(format!("the MCP client of codemode serve: {e}"), None)
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = Implementation::default();
        info.name = "codemode".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        // Every connection declares the Tasks extension: a server may answer a `tools/call`
        // with a task, which the client follows to its end (`rounds.rs`).
        let capabilities = match self.forward {
            Some(_) => ClientCapabilities::builder()
                .enable_sampling()
                .enable_elicitation()
                .enable_tasks()
                .build(),
            None => ClientCapabilities::builder().enable_tasks().build(),
        };
        // rmcp's default is `ProtocolVersion::LATEST` (2026-07-28), a revision without the
        // initialize handshake this client performs; offer the newest one that has it and let
        // the server negotiate down (docs/mcp.md, "Client").
        ClientConfig::new(capabilities, info)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A downstream server's `notifications/message` data as codemode logs it: secrets redacted
/// and long strings cut by the trajectory's rules (`codemode_telemetry::redact_value`), as one
/// JSON text.
fn log_data(data: &serde_json::Value) -> String {
    codemode_telemetry::redact_value(data).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(forward: &Forwarder, server: &str) -> String {
        match forward.upstream_with(server, "elicitation") {
            Ok(_) => panic!("no upstream client is known in these tests"),
            Err(reason) => reason,
        }
    }

    #[test]
    fn a_request_goes_only_to_the_one_session_with_a_call_in_flight() {
        let forward = Forwarder::new();
        assert_eq!(reason(&forward, "docs"), NO_CALLER);
        let a = forward.call_started("docs", "mcp-a");
        // One session's call is in flight, but that session never made an exec/wait here.
        assert_eq!(
            reason(&forward, "docs"),
            "the MCP client of codemode serve did not declare elicitation"
        );
        let a2 = forward.call_started("docs", "mcp-a");
        let b = forward.call_started("docs", "mcp-b");
        assert_eq!(reason(&forward, "docs"), AMBIGUOUS_CALLER);
        // Another server's calls do not count.
        assert_eq!(reason(&forward, "other"), NO_CALLER);
        drop(b);
        drop(a);
        assert_ne!(reason(&forward, "docs"), AMBIGUOUS_CALLER);
        drop(a2);
        assert_eq!(reason(&forward, "docs"), NO_CALLER);
        assert!(forward.in_flight.lock().unwrap().is_empty());
    }

    #[test]
    fn watches_whose_request_was_answered_are_dropped_and_progress_is_bounded() {
        let forward = Forwarder::new();
        // A request answered while its nested call still ran: its receiver is gone, and the
        // call never finished (no unwatch_call).
        let (answered, receiver) = tokio::sync::mpsc::channel(1);
        drop(receiver);
        forward.watch_call("call-1", answered);
        let (live, mut received) = tokio::sync::mpsc::channel(1);
        forward.watch_call("call-2", live);
        assert_eq!(
            forward.routes().calls.keys().collect::<Vec<_>>(),
            vec!["call-2"]
        );
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let _tracked = forward.track("docs", token.clone(), "call-2");
        for step in 1..=3 {
            let param = ProgressNotificationParam::new(token.clone(), f64::from(step));
            forward.route_progress("docs", &param);
        }
        // The queue holds one message; the other two were dropped, not queued.
        assert_eq!(received.try_recv().as_deref(), Ok("docs: 1"));
        assert!(received.try_recv().is_err());
    }

    #[test]
    fn the_last_progress_of_a_watched_call_is_known_until_it_is_unwatched() {
        let forward = Forwarder::new();
        let (sender, _received) = tokio::sync::mpsc::channel(8);
        forward.watch_call("call-1", sender);
        assert_eq!(forward.last_progress("call-1"), None);
        let token = ProgressToken(rmcp::model::NumberOrString::Number(3));
        let _tracked = forward.track("docs", token.clone(), "call-1");
        let mut param = ProgressNotificationParam::new(token.clone(), 50.0);
        param.total = Some(100.0);
        forward.route_progress("docs", &param);
        assert_eq!(forward.last_progress("call-1"), Some((50.0, Some(100.0))));
        forward.route_progress("docs", &ProgressNotificationParam::new(token, 60.0));
        assert_eq!(forward.last_progress("call-1"), Some((60.0, None)));
        // Progress of a call nobody watches is not recorded.
        assert_eq!(forward.last_progress("call-2"), None);
        forward.unwatch_call("call-1");
        assert_eq!(forward.last_progress("call-1"), None);
        assert!(forward.routes().last.is_empty());
    }

    #[test]
    fn progress_after_the_answer_reaches_a_call_still_watched() {
        let forward = Forwarder::new();
        let (sender, mut received) = tokio::sync::mpsc::channel(8);
        forward.watch_call("call-1", sender);
        let token = ProgressToken(rmcp::model::NumberOrString::Number(5));
        let tracked = forward.track("docs", token.clone(), "call-1");
        // The answer came (the request ended) before rmcp handled the last notification.
        drop(tracked);
        let mut param = ProgressNotificationParam::new(token.clone(), 100.0);
        param.total = Some(100.0);
        forward.route_progress("docs", &param);
        assert_eq!(received.try_recv().as_deref(), Ok("docs: 100/100"));
        assert_eq!(forward.last_progress("call-1"), Some((100.0, Some(100.0))));
        // Unwatched, the route is gone: later progress is kept as early, not passed on.
        forward.unwatch_call("call-1");
        assert!(forward.routes().requests.is_empty());
        forward.route_progress("docs", &param);
        assert!(received.try_recv().is_err());
        // A request of a call nobody watches ends its route when it is answered.
        let tracked = forward.track(
            "docs",
            ProgressToken(rmcp::model::NumberOrString::Number(6)),
            "call-2",
        );
        assert_eq!(forward.routes().requests.len(), 1);
        drop(tracked);
        assert!(forward.routes().requests.is_empty());
    }

    #[test]
    fn log_data_is_redacted_like_the_trajectory() {
        let data = json!({
            "message": "connected",
            "apiKey": "sk-live-123456",
            "detail": "retrying with token: abcdef0123456789",
        });
        assert_eq!(
            log_data(&data),
            r#"{"message":"connected","apiKey":"[redacted]","detail":"retrying with token: [redacted]"}"#
        );
    }
}
