//! [`CodeModeServer::serve_http`]: code mode over streamable HTTP on a loopback listener, with
//! the Origin check, `TCP_NODELAY` and the bounded shutdown drain (docs/mcp.md, "Shutdown").

use std::sync::Arc;

use codemode_facade::CodeMode;

use super::session::Session;
use super::{CodeModeServer, ServeError, LOOPBACK_ORIGINS};
use crate::drain::{Drain, SHUTDOWN_DRAIN};
use crate::shared_scope::SharedSessions;

/// How long a stopping `serve_http` waits for connections to finish the responses they are
/// writing before it ends the MCP sessions (which closes open GET streams).
const CLOSE_WRITTEN: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a stopping `serve_http` with a durable run store gives its runs in flight to park
/// before the rest of the shutdown drain aborts what is left (within [`SHUTDOWN_DRAIN`]).
pub const PARK_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The first step of stopping with a durable run store (docs/deployment.md, "Stopping"): new
/// calls are refused with [`SHUTTING_DOWN`](crate::drain::SHUTTING_DOWN), every run in flight parks at its next wait
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

impl CodeModeServer {
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
    /// [`SHUTTING_DOWN`](crate::drain::SHUTTING_DOWN), and the call returns once the answers are written and the connections
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
        let (code_mode, source, host, forward, drain, states, tasks, direct, auth) = (
            self.code_mode,
            self.source,
            self.host,
            self.forward,
            self.drain,
            self.states,
            self.tasks,
            self.direct,
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
                    direct: direct.clone(),
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
}
