//! How codemode's MCP client starts a connection, by protocol revision (docs/mcp.md, "Protocol
//! revisions"): `server/discover` for 2026-07-28 with a legacy `initialize` fallback (rmcp's
//! [`ClientLifecycleMode::Auto`]), and, for a server that speaks 2026-07-28, the
//! `subscriptions/listen` stream that replaces its unsolicited `notifications/*/list_changed`.

use std::sync::Arc;

use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, Peer};
use rmcp::RoleClient;

/// The lifecycle of every downstream connection: probe with `server/discover` offering
/// 2026-07-28; a server that answers it with a JSON-RPC error that is not one of the revision's
/// own rejections (a legacy server's `-32601`) gets the `initialize` handshake offering
/// 2025-11-25 on the same connection; a server that does not answer the probe within rmcp's 10 s
/// gets `initialize` too. After discovery rmcp puts the revision's `_meta`
/// (`io.modelcontextprotocol/protocolVersion`, `clientInfo`, `clientCapabilities`) on every
/// request, and its streamable HTTP transport sends `MCP-Protocol-Version` and `Mcp-Method`
/// (plus `Mcp-Name`) on every POST.
pub(crate) fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// Whether `error` is the discovery's answer of a server whose versions all have the
/// `initialize` handshake (it knows `server/discover` but not 2026-07-28), so `initialize` may
/// still work.
pub(crate) fn only_legacy(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => !server_supported.is_empty() && server_supported.iter().all(|v| v.has_initialize()),
        _ => false,
    }
}

/// Whether `peer` negotiated a revision without the `initialize` handshake (2026-07-28 or later):
/// such a server sends no request and no unsolicited notification to the client.
pub(crate) fn is_stateless(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize())
}

/// For a 2026-07-28 server that advertises `listChanged` on its tools, prompts or resources:
/// opens one `subscriptions/listen` stream for the list changes it advertises and runs
/// `on_tools_changed` for each `notifications/tools/list_changed`, `on_content_changed` (when
/// given) for each prompts or resources one, on a task of its own that ends with the connection
/// (the stream closes) or when the server ends the subscription. A server that refuses the
/// subscription is logged at `debug` and otherwise ignored: its lists are then listed again only
/// when a later connection lists them.
pub(crate) fn listen_for_list_changes(
    server: &str,
    peer: &Peer<RoleClient>,
    on_tools_changed: Arc<dyn Fn() + Send + Sync>,
    on_content_changed: Option<Arc<dyn Fn() + Send + Sync>>,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    let capabilities = &info.capabilities;
    let tools = capabilities
        .tools
        .as_ref()
        .is_some_and(|tools| tools.list_changed == Some(true));
    let content = on_content_changed.is_some();
    let prompts = content
        && capabilities
            .prompts
            .as_ref()
            .is_some_and(|prompts| prompts.list_changed == Some(true));
    let resources = content
        && capabilities
            .resources
            .as_ref()
            .is_some_and(|resources| resources.list_changed == Some(true));
    if !(tools || prompts || resources) || !is_stateless(peer) {
        return;
    }
    let mut filter = SubscriptionFilter::builder();
    if tools {
        filter = filter.tools_list_changed();
    }
    if prompts {
        filter = filter.prompts_list_changed();
    }
    if resources {
        filter = filter.resources_list_changed();
    }
    let filter = filter.build();
    let peer = peer.clone();
    let server = server.to_string();
    tokio::spawn(async move {
        let mut subscription = match peer.listen(filter).await {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::debug!(%server, "subscriptions/listen refused: {e}");
                return;
            }
        };
        loop {
            match subscription.next().await {
                Ok(Some(ServerNotification::ToolListChangedNotification(_))) => on_tools_changed(),
                Ok(Some(
                    ServerNotification::PromptListChangedNotification(_)
                    | ServerNotification::ResourceListChangedNotification(_),
                )) => {
                    if let Some(on_content_changed) = &on_content_changed {
                        on_content_changed();
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(%server, "subscriptions/listen ended: {e}");
                    break;
                }
            }
        }
    });
}
