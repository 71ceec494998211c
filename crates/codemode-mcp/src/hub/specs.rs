//! The catalog entries of one listed MCP server: a `tool` entry per listed tool (its schema,
//! title and documentation kept) and the resource and prompt operations the server advertises
//! (docs/contract/mcp.md#s7-2), each with the route the executor calls.

use codemode_catalog::{McpOperation, ToolOrigin, ToolSpec};
use serde_json::{json, Value};

use crate::client::ServerListing;

/// The `inputSchema` of the resource and prompt operations (docs/contract/mcp.md#s7-2 paths).
fn operation_spec(server: &str, operation: McpOperation) -> (String, Value) {
    match operation {
        McpOperation::ResourcesList => (
            format!(
                "List the resources of MCP server {server}. Without a cursor every page is read."
            ),
            json!({"type": "object", "properties": {"cursor": {"type": "string", "description": "Cursor from a previous page; omit to read every page."}}}),
        ),
        McpOperation::ResourcesRead => (
            format!("Read one resource of MCP server {server} by URI."),
            json!({"type": "object", "properties": {"uri": {"type": "string", "description": "The resource URI, as listed by resources.list()."}}, "required": ["uri"]}),
        ),
        McpOperation::ResourcesTemplates => (
            format!(
                "List the resource templates of MCP server {server} (URI templates such as file:///{{path}}; fill one in and read it with resources.read). Without a cursor every page is read."
            ),
            json!({"type": "object", "properties": {"cursor": {"type": "string", "description": "Cursor from a previous page; omit to read every page."}}}),
        ),
        McpOperation::PromptsList => (
            format!(
                "List the prompts of MCP server {server}. Without a cursor every page is read."
            ),
            json!({"type": "object", "properties": {"cursor": {"type": "string", "description": "Cursor from a previous page; omit to read every page."}}}),
        ),
        McpOperation::PromptsGet => (
            format!("Get one prompt of MCP server {server} with its arguments."),
            json!({"type": "object", "properties": {"name": {"type": "string", "description": "The prompt name, as listed by prompts.list()."}, "arguments": {"type": "object", "description": "Prompt arguments; values are strings.", "additionalProperties": {"type": "string"}}}, "required": ["name"]}),
        ),
        McpOperation::Tool => (String::new(), json!({"type": "object"})),
    }
}

/// The catalog specs of one listed server with their routes.
pub(super) fn server_specs(
    server_name: &str,
    safe_name: &str,
    listing: &ServerListing,
) -> Vec<(ToolSpec, McpOperation, String)> {
    let with_server_name = |mut spec: ToolSpec| {
        if let ToolOrigin::Mcp {
            server_name: name, ..
        } = &mut spec.origin
        {
            *name = server_name.to_string();
        }
        spec
    };
    let mut specs = Vec::new();
    let mut names = std::collections::HashSet::new();
    for tool in &listing.tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut spec = ToolSpec::mcp_operation(safe_name, McpOperation::Tool, name, description);
        if let Some(schema) = tool.get("inputSchema").filter(|s| s.is_object()) {
            spec = spec.with_parameters(schema.clone());
        }
        if let Some(title) = tool.get("title").and_then(Value::as_str) {
            spec = spec.with_label(title);
        }
        if let Some(docs) = codemode_catalog::McpToolDocs::from_tool(tool) {
            spec = spec.with_mcp_docs(docs);
        }
        if names.insert(spec.name.clone()) {
            specs.push((with_server_name(spec), McpOperation::Tool, name.to_string()));
        }
    }
    let mut operations = Vec::new();
    if listing.resources {
        operations.extend([
            McpOperation::ResourcesList,
            McpOperation::ResourcesRead,
            McpOperation::ResourcesTemplates,
        ]);
    }
    if listing.prompts {
        operations.extend([McpOperation::PromptsList, McpOperation::PromptsGet]);
    }
    for operation in operations {
        let (description, parameters) = operation_spec(server_name, operation);
        let spec = ToolSpec::mcp_operation(safe_name, operation, operation.as_str(), description)
            .with_parameters(parameters);
        if names.insert(spec.name.clone()) {
            specs.push((
                with_server_name(spec),
                operation,
                operation.as_str().to_string(),
            ));
        }
    }
    specs
}
