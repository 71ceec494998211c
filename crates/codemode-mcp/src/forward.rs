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

use std::sync::{Arc, RwLock};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient, RoleServer};
use serde_json::json;

/// Why a server's elicitation or sampling request is not answered in `exec` and `session`.
pub const NO_USER: &str =
    "codemode exec/session has no user or model to ask; only `codemode serve` forwards elicitation and sampling, to an MCP client that declared them";

/// Why a request is not forwarded in `serve` when no upstream client is known yet or it did not
/// declare the capability (`{capability}` is `elicitation` or `sampling`).
pub const NO_UPSTREAM: &str = "the MCP client of codemode serve did not declare {capability}";

/// Hands downstream servers' elicitation and sampling requests to the upstream MCP client of
/// `codemode serve`: the client of the latest `exec` or `wait` call ([`Forwarder::set_upstream`]).
/// With several HTTP sessions at once that is the most recent caller.
#[derive(Default)]
pub struct Forwarder {
    upstream: RwLock<Option<Peer<RoleServer>>>,
}

impl Forwarder {
    /// A forwarder without an upstream client yet.
    pub fn new() -> Arc<Forwarder> {
        Arc::new(Forwarder::default())
    }

    /// Makes `peer` the client that later requests go to.
    pub fn set_upstream(&self, peer: Peer<RoleServer>) {
        *self.upstream.write().unwrap_or_else(|e| e.into_inner()) = Some(peer);
    }

    fn upstream_with(&self, capability: &str) -> Result<Peer<RoleServer>, String> {
        let peer = self
            .upstream
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
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
    pub(crate) forward: Option<Arc<Forwarder>>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        (self.on_tools_changed)();
        std::future::ready(())
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
        let peer = match forward.upstream_with("elicitation") {
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
        let peer = forward.upstream_with("sampling").map_err(refused)?;
        tracing::info!(server = %self.server, "forwarding a sampling request to the MCP client");
        peer.create_message(params).await.map_err(|e| {
            ErrorData::internal_error(format!("the MCP client of codemode serve: {e}"), None)
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = Implementation::default();
        info.name = "codemode".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        let capabilities = match self.forward {
            Some(_) => ClientCapabilities::builder()
                .enable_sampling()
                .enable_elicitation()
                .build(),
            None => ClientCapabilities::default(),
        };
        // rmcp's default is `ProtocolVersion::LATEST` (2026-07-28), a revision without the
        // initialize handshake this client performs; offer the newest one that has it and let
        // the server negotiate down (docs/mcp.md, "Client").
        ClientConfig::new(capabilities, info)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
