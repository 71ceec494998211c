//! `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe` of `serve` with code
//! mode off: passed on to the downstream servers, and their log messages and resource updates
//! passed back (`crate::forward` and its `notices.rs`; docs/mcp.md, "Logging and resource
//! subscriptions"). With code mode on none of the three is offered (`-32601`): the model reaches
//! the servers through the catalog, and their logs are the operator's.

// Logging is deprecated by SEP-2577 for 2026-07-28, but it is part of the 2025-11-25 revision
// whose clients use it.
#![allow(deprecated)]

use rmcp::model::{
    LoggingLevel, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use std::sync::Arc;

use crate::forward::Forwarder;
use crate::hub::DirectServer;

use super::content::resource_not_found;
use super::CodeModeServer;

/// The JSON-RPC error of a method serve offers only with code mode off.
fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("{method} is offered by codemode serve only with code mode off"),
        None,
    )
}

/// `level` as its JSON name (`"debug"` … `"emergency"`).
fn level_name(level: LoggingLevel) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "info".to_string())
}

impl CodeModeServer {
    /// `logging/setLevel`: notes the session's level and sets every connected downstream
    /// server that offers logging to the most verbose level any session asked for (a server
    /// that fails is logged and skipped; the client still gets `{}`).
    pub(super) async fn set_log_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (Some(direct), Some(forward)) = (&self.direct, &self.forward) else {
            return Err(not_offered("logging/setLevel"));
        };
        let session = self.session_for(&context);
        self.attach_upstream(&session, &context);
        let id = session.scope.session_id.as_deref().unwrap_or_default();
        let level = level_name(forward.set_log_level(id, request.level));
        let servers = direct.hub().direct_servers(|_, _| true);
        let sets = servers.iter().map(|server| {
            let level = level.clone();
            async move {
                if let Err(e) = server.client.set_log_level(&level).await {
                    tracing::debug!(server = %server.client.name(), error = %e, "logging/setLevel not passed on");
                }
            }
        });
        futures::future::join_all(sets).await;
        Ok(())
    }

    /// What a `method` (`resources/subscribe` or `/unsubscribe`) of `uri` acts on: the server
    /// that owns the URI, the forwarder, and the caller's MCP session id (its client noted as
    /// the session's upstream). Errors: `-32601` with code mode on, `-32002` for a URI no
    /// allowed server owns.
    async fn subscription_target(
        &self,
        method: &str,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(DirectServer, Arc<Forwarder>, String), ErrorData> {
        let (Some(direct), Some(forward)) = (&self.direct, &self.forward) else {
            return Err(not_offered(method));
        };
        let Some(server) = self.resource_owner(direct, uri).await else {
            return Err(resource_not_found(uri));
        };
        let session = self.session_for(context);
        self.attach_upstream(&session, context);
        let id = session.scope.session_id.clone().unwrap_or_default();
        Ok((server, forward.clone(), id))
    }

    /// `resources/subscribe`: subscribes at the server that owns the URI (routed as
    /// `resources/read`) when this is its first subscriber. Errors: `-32002` `Resource not
    /// found` for a URI no allowed server owns; the server's own error when it refuses.
    pub(super) async fn subscribe_resource(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, forward, id) = self
            .subscription_target("resources/subscribe", &request.uri, &context)
            .await?;
        let name = server.client.name();
        if forward.subscribe(name, &request.uri, &id, context.peer.clone()) {
            if let Err(e) = server.client.subscribe_resource(&request.uri).await {
                forward.unsubscribe(name, &request.uri, &id);
                return Err(ErrorData::internal_error(e.to_string(), None));
            }
        }
        Ok(())
    }

    /// `resources/unsubscribe`: ends the session's subscription, and the server's when it was
    /// the last. Errors: `-32002` for a URI no allowed server owns.
    pub(super) async fn unsubscribe_resource(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, forward, id) = self
            .subscription_target("resources/unsubscribe", &request.uri, &context)
            .await?;
        let name = server.client.name();
        if forward.unsubscribe(name, &request.uri, &id) {
            if let Err(e) = server.client.unsubscribe_resource(&request.uri).await {
                tracing::debug!(server = %name, error = %e, "resources/unsubscribe not passed on");
            }
        }
        Ok(())
    }
}
