//! How codemode's MCP client starts a connection, by protocol revision (docs/mcp.md, "Protocol
//! revisions"): `server/discover` for 2026-07-28 with a legacy `initialize` fallback (rmcp's
//! [`ClientLifecycleMode::Auto`]), and, for a server that speaks 2026-07-28, the
//! `subscriptions/listen` stream that replaces its unsolicited `notifications/*/list_changed`.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    JsonRpcMessage, ProtocolVersion, RequestId, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, Peer};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
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

/// A transport that drops a late answer to the `server/discover` probe once the `initialize`
/// fallback has gone out. rmcp sends `initialize` when the probe is unanswered after 10 s; a
/// server that was only slow to start (an `npx -y` download on a cold npm cache) then answers
/// the probe (a legacy server's `-32601`) before `initialize`, and rmcp, waiting for the
/// `initialize` answer, would take the probe's as an uncorrelated error and abort the
/// connection (docs/mcp.md, "Protocol revisions").
pub(crate) struct ProbeGuard<T> {
    inner: T,
    probes: Arc<Mutex<Probes>>,
}

/// The ids of the probes sent, and whether the fallback went out.
#[derive(Default)]
struct Probes {
    ids: Vec<RequestId>,
    fell_back: bool,
}

impl<T> ProbeGuard<T> {
    pub(crate) fn new(inner: T) -> Self {
        ProbeGuard {
            inner,
            probes: Arc::default(),
        }
    }
}

/// Whether `message` answers one of `probes` after the fallback went out.
fn late_probe_answer(probes: &Mutex<Probes>, message: &RxJsonRpcMessage<RoleClient>) -> bool {
    let id = match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    };
    let probes = probes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    probes.fell_back && id.is_some_and(|id| probes.ids.contains(id))
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProbeGuard<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            let mut probes = self
                .probes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match request.request.method() {
                "server/discover" => probes.ids.push(request.id.clone()),
                "initialize" => probes.fell_back = true,
                _ => {}
            }
        }
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let probes = self.probes.clone();
        let inner = &mut self.inner;
        async move {
            loop {
                let message = inner.receive().await?;
                if late_probe_answer(&probes, &message) {
                    tracing::debug!("dropped a late answer to server/discover after initialize");
                    continue;
                }
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
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
