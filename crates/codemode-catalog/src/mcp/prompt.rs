//! The namespace prompt (docs/contract/mcp.md#s7-5): built from server identifiers only, never from tool
//! names, descriptions or schemas.

use super::ident::server_identifiers;
use super::route::mcp_meta;
use super::McpNamespace;
use crate::catalog::Catalog;
use crate::js::cmp_utf16;

impl McpNamespace {
    /// The namespace prompt (docs/contract/mcp.md#s7-5), `None` when the namespace is empty. Built from server
    /// identifiers only; see [`namespace_prompt`], which does not even build the method table.
    pub fn prompt(&self) -> Option<String> {
        prompt_for(self.servers.iter().map(|s| s.identifier.as_str()).collect())
    }
}

fn prompt_for(identifiers: Vec<&str>) -> Option<String> {
    if identifiers.is_empty() {
        return None;
    }
    Some(format!(
        "MCP namespace globals are available in code mode:\n- MCP: MCP server tools grouped by server.\nRead API files such as mcp/index.d.ts and mcp/<server>.d.ts for TypeScript-style MCP headers; visible servers: {}. Node-backed name collisions use a sanitized node-id fragment prefix.\nCall MCP tools as MCP.<server>.<tool>({{ ...input }}) with one object argument matching the header.",
        identifiers.join(", ")
    ))
}

/// The namespace prompt of docs/contract/mcp.md#s7-5 straight from a catalog: the server identifiers (in identifier
/// order) of the MCP entries with metadata, joined with `, `. It reads only server names, never
/// tool names, descriptions or schemas. `None` when there is no such entry.
pub fn namespace_prompt(catalog: &Catalog) -> Option<String> {
    let safe: Vec<&str> = catalog
        .entries()
        .iter()
        .filter_map(mcp_meta)
        .map(|m| m.safe_server_name)
        .collect();
    let mut ids: Vec<String> = server_identifiers(safe)
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    ids.sort_by(|a, b| cmp_utf16(a, b));
    prompt_for(ids.iter().map(String::as_str).collect())
}
