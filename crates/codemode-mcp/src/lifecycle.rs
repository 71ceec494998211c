//! How codemode's MCP client starts a connection, by protocol revision (docs/mcp.md, "Protocol
//! revisions"): `server/discover` for 2026-07-28 with a legacy `initialize` fallback (rmcp's
//! [`ClientLifecycleMode::Auto`]), and, for a server that speaks 2026-07-28, the
//! `subscriptions/listen` stream that replaces its unsolicited `notifications/tools/list_changed`.

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

/// For a 2026-07-28 server that advertises `tools.listChanged`: opens a `subscriptions/listen`
/// stream for `notifications/tools/list_changed` and runs `on_tools_changed` for each, on a task
/// of its own that ends with the connection (the stream closes) or when the server ends the
/// subscription. A server that refuses the subscription is logged at `debug` and otherwise
/// ignored: its tools are then listed again only when a later connection lists them.
pub(crate) fn listen_for_tool_changes(
    server: &str,
    peer: &Peer<RoleClient>,
    on_tools_changed: Arc<dyn Fn() + Send + Sync>,
) {
    let advertised = peer.peer_info().is_some_and(|info| {
        info.capabilities
            .tools
            .as_ref()
            .is_some_and(|tools| tools.list_changed == Some(true))
    });
    if !advertised || !is_stateless(peer) {
        return;
    }
    let peer = peer.clone();
    let server = server.to_string();
    tokio::spawn(async move {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
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
