//! Configured MCP servers that a run cannot reach: still connecting, or failed
//! (docs/mcp.md, "Servers that are not connected").
//!
//! The contract's namespace (docs/contract/mcp.md#s7) is built from catalog entries, so a server
//! without a listing has no `MCP.<server>` at all and a program sees `undefined` (or, with no
//! server up, `ReferenceError: MCP is not defined`). A host that knows its configured servers
//! attaches the missing ones to the catalog ([`crate::Catalog::with_offline_mcp_servers`]); the
//! guest then has `MCP` whenever a server is configured, `MCP.<server>` of an offline server
//! throws [`OfflineMcpServer::message`], and `API.list()` lists one file per offline server whose
//! description says the same.

use std::collections::HashSet;
use std::time::Duration;

use super::api::ApiFile;
use super::ident::{to_identifier, unique_identifier};
use super::McpNamespace;

/// Why a configured server has no listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfflineState {
    /// Its first connection attempt is under way, for this long so far.
    Connecting {
        /// Time since the host started connecting.
        elapsed: Duration,
    },
    /// Its last connect or listing attempt failed, with this one-line reason.
    Failed {
        /// The connect or listing error, one line.
        reason: String,
    },
}

/// A configured MCP server that is not connected, as a host reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineServer {
    /// The configured server name (`$serverName` once it connects).
    pub server_name: String,
    /// Its safe server name (the name catalog ids use); the identifier comes from it as for a
    /// connected server (docs/contract/mcp.md#s7-1).
    pub safe_server_name: String,
    /// Connecting, or failed and why.
    pub state: OfflineState,
}

impl OfflineServer {
    /// `MCP server "<name>" is not connected: still connecting for <n> s` (whole seconds,
    /// rounded down) or `MCP server "<name>" is not connected: failed: <reason>`.
    pub fn message(&self) -> String {
        let why = match &self.state {
            OfflineState::Connecting { elapsed } => {
                format!("still connecting for {} s", elapsed.as_secs())
            }
            OfflineState::Failed { reason } => format!("failed: {reason}"),
        };
        format!(
            "MCP server {} is not connected: {why}",
            serde_json::Value::String(self.server_name.clone())
        )
    }
}

/// An offline server as the namespace shows it: `MCP.<identifier>` throws `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineMcpServer {
    /// The JavaScript identifier, unique among connected and offline servers.
    pub identifier: String,
    /// The configured server name.
    pub server_name: String,
    /// [`OfflineServer::message`].
    pub message: String,
}

/// The identifiers of `offline`, unique against `taken` (the connected servers' identifiers),
/// each other and `index` (whose file would clash with `mcp/index.d.ts`), in the order given.
pub(super) fn offline_identifiers(
    offline: &[OfflineServer],
    taken: impl IntoIterator<Item = String>,
) -> Vec<OfflineMcpServer> {
    let mut used: HashSet<String> = taken.into_iter().collect();
    used.insert("index".to_string());
    offline
        .iter()
        .map(|server| OfflineMcpServer {
            identifier: unique_identifier(
                &to_identifier(&server.safe_server_name, "server"),
                &mut used,
            ),
            server_name: server.server_name.clone(),
            message: server.message(),
        })
        .collect()
}

impl McpNamespace {
    /// The configured servers that are not connected, in the order the host gave them.
    pub fn offline(&self) -> &[OfflineMcpServer] {
        &self.offline
    }

    /// True when the guest gets an `MCP` global: a server is connected or configured but offline.
    pub fn has_global(&self) -> bool {
        !self.is_empty() || !self.offline.is_empty()
    }

    /// `[[identifier, serverName, message]]` of the offline servers, for the guest's run
    /// context (`MCP.<identifier>` throws `new Error(message)`).
    pub fn offline_context(&self) -> Vec<[&str; 3]> {
        self.offline
            .iter()
            .map(|s| {
                [
                    s.identifier.as_str(),
                    s.server_name.as_str(),
                    s.message.as_str(),
                ]
            })
            .collect()
    }

    /// One `API` file per offline server, `mcp/<identifier>.d.ts`, whose description is
    /// `<message>.` and whose content is that sentence as a comment: `API.list()` says which
    /// servers are missing and why.
    pub(super) fn offline_files(&self) -> Vec<ApiFile> {
        self.offline
            .iter()
            .map(|s| {
                let content = format!(
                    "// {}. Its declarations appear here once it connects (a later exec sees them).\n",
                    s.message
                );
                ApiFile {
                    path: format!("mcp/{}.d.ts", s.identifier),
                    description: format!("{}.", s.message),
                    bytes: content.len(),
                    content,
                    nested: false,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_connecting_or_failed() {
        let connecting = OfflineServer {
            server_name: "memory".into(),
            safe_server_name: "memory".into(),
            state: OfflineState::Connecting {
                elapsed: Duration::from_millis(12_900),
            },
        };
        assert_eq!(
            connecting.message(),
            "MCP server \"memory\" is not connected: still connecting for 12 s"
        );
        let failed = OfflineServer {
            server_name: "a \"b\"".into(),
            safe_server_name: "a_b".into(),
            state: OfflineState::Failed {
                reason: "exited with status 1".into(),
            },
        };
        assert_eq!(
            failed.message(),
            "MCP server \"a \\\"b\\\"\" is not connected: failed: exited with status 1"
        );
    }

    #[test]
    fn identifiers_avoid_connected_servers() {
        let offline = [OfflineServer {
            server_name: "fs".into(),
            safe_server_name: "fs".into(),
            state: OfflineState::Failed { reason: "x".into() },
        }];
        let shown = offline_identifiers(&offline, ["fs".to_string()]);
        assert_eq!(shown[0].identifier, "fs2");
    }
}
