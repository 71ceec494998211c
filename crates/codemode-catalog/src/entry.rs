//! Compact catalog entries as the guest sees them (docs/contract/guest.md#runtime-api;
//! docs/contract/catalog.md#s3-2).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An entry's `source` (docs/contract/catalog.md#s3-2). Plugins use `openclaw`; there is no `"plugin"`
/// source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Core and plugin tools: trusted, in guest views and the quick index.
    Openclaw,
    /// MCP tools: only through the `MCP` namespace, never in guest views.
    Mcp,
    /// Client-provided tools: in guest views, untrusted.
    Client,
}

impl Source {
    /// The JSON string (`"openclaw"`, `"mcp"`, `"client"`), also the id's first segment.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Openclaw => "openclaw",
            Source::Mcp => "mcp",
            Source::Client => "client",
        }
    }
}

/// `ToolCatalogEntry`: one element of `ALL_TOOLS`, of `tools.search` results and `call`'s
/// `tool` field.
///
/// Serialises exactly as `{id, name, label?, description, source, sourceName?, input, output?}`
/// (keys in that order; `label` and `output` omitted when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactEntry {
    /// `<source>:<owner>:<name>`.
    pub id: String,
    /// Registered tool name.
    pub name: String,
    /// Optional label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Tool description.
    pub description: String,
    /// `openclaw`, `mcp` or `client`.
    pub source: Source,
    /// The plugin id for plugin tools, otherwise the id's owner segment. Always set by
    /// [`crate::Catalog::build`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    /// Compact TypeScript-style input hint (≤ 300 UTF-16 units); `"unknown"` for MCP and client
    /// entries.
    pub input: String,
    /// Complete output hint (≤ 850 UTF-16 units) of a trusted `outputSchema`; only on `openclaw`
    /// entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// `ToolCatalogEntryWithSchema`: what `tools.describe` returns (docs/contract/catalog.md#s3-2).
///
/// Serialises as the compact entry's keys followed by `parameters` (`{}` when the tool has none)
/// and `outputSchema` (only for a trusted tool that declares one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribedEntry {
    /// The compact entry.
    #[serde(flatten)]
    pub entry: CompactEntry,
    /// Full input JSON Schema.
    pub parameters: Value,
    /// Full output JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}
