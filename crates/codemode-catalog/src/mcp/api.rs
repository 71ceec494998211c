//! `$api` answers (docs/contract/mcp.md#s7-3) and the `API` virtual files with `API.list` / `API.read`
//! (docs/contract/mcp.md#s7-4). The declaration texts they carry come from [`super::dts`].

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::dts::server_declaration;
use super::{McpMethod, McpNamespace, McpServer};
use crate::js::{cut_utf16, js_trim};

/// Longest tool description (UTF-16 units) in a server `$api()` answer's `tools[]`; longer ones
/// end with `…`. MCP metadata is untrusted, so `$api` output is bounded like the `.d.ts` files.
pub const MAX_API_DESCRIPTION_CHARS: usize = 4000;
/// Largest schema (bytes of JSON) in a `$api(…, {schema: true})` answer; a larger one is replaced
/// by `{"omitted": "schema of <n> bytes is over the <max>-byte limit of $api"}`.
pub const MAX_API_SCHEMA_BYTES: usize = 256 * 1024;

/// `invalid API file path` (docs/contract/mcp.md#s7-4 `API.read`).
pub const INVALID_API_FILE_PATH: &str = "invalid API file path";

/// Why `API.read(path)` failed (docs/contract/mcp.md#s7-4). `Display` is the exact guest message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiFileError {
    /// [`INVALID_API_FILE_PATH`]: an empty path, or an empty, `.` or `..` segment.
    #[error("{}", INVALID_API_FILE_PATH)]
    InvalidPath,
    /// `Unknown API file: <path>` (the path after stripping one leading `/`).
    #[error("Unknown API file: {0}")]
    UnknownFile(String),
}

crate::error::guest_message!(ApiFileError);

/// A virtual `API` file (docs/contract/mcp.md#s7-4). Serialises as `{path, description, bytes, content}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiFile {
    /// `mcp/index.d.ts` or `mcp/<identifier>.d.ts`.
    pub path: String,
    /// `Root MCP namespace declaration and server list.` or
    /// `MCP server declaration for <serverName>.`.
    pub description: String,
    /// UTF-8 length of `content`, in bytes.
    pub bytes: usize,
    /// The declaration text.
    pub content: String,
    /// A per-tool file (`mcp/<identifier>/<method>.d.ts`, [`McpNamespace::tool_files`]):
    /// `API.list` shows it only when asked for its directory (`API.list("mcp/<identifier>")`).
    /// Serialised as `nested: true` only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nested: bool,
}

impl McpNamespace {
    /// `MCP.$api()` (docs/contract/mcp.md#s7-3): `{kind: "mcp_api", scope: "root", header, servers: [{identifier,
    /// serverName, toolCount}], note}`; `toolCount` counts every method of the server.
    pub fn api_root(&self) -> Value {
        json!({
            "kind": "mcp_api",
            "scope": "root",
            "header": self.root_declaration(),
            "servers": self.servers.iter().map(|s| json!({
                "identifier": s.identifier,
                "serverName": s.server_name,
                "toolCount": s.methods.len(),
            })).collect::<Vec<_>>(),
            "note": "Call MCP.<server>.$api() for a TypeScript-style header, then call tools with one object argument matching the shown input type.",
        })
    }

    /// `MCP.<identifier>.$api(selector?, options?)` (docs/contract/mcp.md#s7-3); `None` for an unknown identifier.
    /// See [`api_server`].
    pub fn api_server(
        &self,
        identifier: &str,
        selector: Option<&Value>,
        options: Option<&Value>,
    ) -> Option<Value> {
        self.server(identifier)
            .map(|s| api_server(s, selector, options))
    }

    /// The `API` virtual files (docs/contract/mcp.md#s7-4): `mcp/index.d.ts` (one `/// <reference path="./<id>.d.ts"
    /// />` line per server, a blank line, the root declaration), then `mcp/<identifier>.d.ts`
    /// per server in identifier order. A server whose identifier is `index` has no file of its
    /// own (it would clash with the index): its declaration is appended to `mcp/index.d.ts`
    /// after a blank line. Configured servers that are not connected add a comment line each to
    /// the index and a file each ([`McpNamespace::offline`], docs/mcp.md "Servers that are not
    /// connected"). Empty when the namespace is empty and no server is offline.
    pub fn api_files(&self) -> Vec<ApiFile> {
        if !self.has_global() {
            return Vec::new();
        }
        let mut index = String::new();
        for s in self.servers.iter().filter(|s| s.identifier != "index") {
            index.push_str(&format!(
                "/// <reference path=\"./{}.d.ts\" />\n",
                s.identifier
            ));
        }
        for s in &self.offline {
            index.push_str(&format!("// MCP.{}: {}.\n", s.identifier, s.message));
        }
        index.push('\n');
        index.push_str(&self.root_declaration());
        if let Some(s) = self.server("index") {
            index.push_str("\n\n");
            index.push_str(&server_declaration(
                s,
                &s.methods.iter().collect::<Vec<_>>(),
            ));
        }
        let mut files = vec![api_file(
            "mcp/index.d.ts".into(),
            "Root MCP namespace declaration and server list.".into(),
            index,
        )];
        for s in self.servers.iter().filter(|s| s.identifier != "index") {
            files.push(api_file(
                format!("mcp/{}.d.ts", s.identifier),
                format!("MCP server declaration for {}.", s.server_name),
                server_declaration(s, &s.methods.iter().collect::<Vec<_>>()),
            ));
        }
        files.extend(self.offline_files());
        files
    }
}

fn api_file(path: String, description: String, content: String) -> ApiFile {
    ApiFile {
        path,
        description,
        bytes: content.len(),
        content,
        nested: false,
    }
}

impl McpNamespace {
    /// One file per method, `mcp/<identifier>/<method>.d.ts` (`mcp/github/createIssue.d.ts`,
    /// `mcp/github/resources.read.d.ts`), holding only that method's declaration
    /// ([`super::dts::tool_declaration`]), in server then method order; described as
    /// `Declaration of MCP.<identifier>.<method> (<serverName>).`. A model that needs one tool
    /// reads about what `tools/list` would have shown for it, instead of the whole server file
    /// (docs/mcp.md, "One tool's declaration"). Not part of [`McpNamespace::api_files`]: they are
    /// `nested`, listed only under their server's directory.
    pub fn tool_files(&self) -> Vec<ApiFile> {
        let mut files = Vec::new();
        for s in &self.servers {
            for m in &s.methods {
                let mut file = api_file(
                    format!("mcp/{}/{}.d.ts", s.identifier, m.method),
                    format!(
                        "Declaration of MCP.{}.{} ({}).",
                        s.identifier, m.method, s.server_name
                    ),
                    super::dts::tool_declaration(s, m),
                );
                file.nested = true;
                files.push(file);
            }
        }
        files
    }
}
/// `MCP.<server>.$api(selector?, options?)` for one server (docs/contract/mcp.md#s7-3).
///
/// A string selector is trimmed; a non-empty one selects the methods whose `method` (e.g.
/// `createIssue`, `resources.read`), full dotted path (`MCP.github.createIssue`) or raw MCP name
/// (`create_issue`) equals it; no selector, a non-string or a blank one selects all. Answer:
/// `{kind: "mcp_api", scope: "tool" | "server", server: {identifier, serverName}, header,
/// tools: [{method, path, mcpTool, operation, description}], schemas?, note}` where `scope` is
/// `tool` exactly when one method is selected, `path` is the array below the server
/// (`["resources", "read"]`), and `schemas` (method → `parameters`, `{}` when absent) is present
/// only when `options.schema === true`.
pub fn api_server(server: &McpServer, selector: Option<&Value>, options: Option<&Value>) -> Value {
    let selector = selector.and_then(Value::as_str).map(js_trim).unwrap_or("");
    let selected: Vec<&McpMethod> = if selector.is_empty() {
        server.methods.iter().collect()
    } else {
        server
            .methods
            .iter()
            .filter(|m| {
                m.method == selector
                    || m.mcp_tool == selector
                    || format!("MCP.{}.{}", server.identifier, m.method) == selector
            })
            .collect()
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("mcp_api"));
    out.insert(
        "scope".into(),
        json!(if selected.len() == 1 {
            "tool"
        } else {
            "server"
        }),
    );
    out.insert(
        "server".into(),
        json!({"identifier": server.identifier, "serverName": server.server_name}),
    );
    out.insert(
        "header".into(),
        json!(server_declaration(server, &selected)),
    );
    out.insert(
        "tools".into(),
        Value::Array(
            selected
                .iter()
                .map(|m| {
                    let mut tool = json!({
                        "method": m.method,
                        "path": m.path,
                        "mcpTool": m.mcp_tool,
                        "operation": m.operation.as_str(),
                        "description": cut_utf16(&m.description, MAX_API_DESCRIPTION_CHARS),
                    });
                    let hints = m.docs.as_ref().map(|d| d.hints()).unwrap_or_default();
                    if !hints.is_empty() {
                        tool["annotations"] = Value::Object(hints);
                    }
                    tool
                })
                .collect(),
        ),
    );
    if options.and_then(|o| o.get("schema")) == Some(&Value::Bool(true)) {
        let schemas: Map<String, Value> = selected
            .iter()
            .map(|m| {
                let schema = m.parameters.clone().unwrap_or_else(|| json!({}));
                let bytes = serde_json::to_string(&schema).map_or(0, |t| t.len());
                let schema = if bytes > MAX_API_SCHEMA_BYTES {
                    json!({"omitted": format!("schema of {bytes} bytes is over the {MAX_API_SCHEMA_BYTES}-byte limit of $api")})
                } else {
                    schema
                };
                (m.method.clone(), schema)
            })
            .collect();
        out.insert("schemas".into(), Value::Object(schemas));
        let outputs: Map<String, Value> = selected
            .iter()
            .filter_map(|m| {
                let schema = m.docs.as_ref()?.output_schema.clone()?;
                let bytes = serde_json::to_string(&schema).map_or(0, |t| t.len());
                let schema = if bytes > MAX_API_SCHEMA_BYTES {
                    json!({"omitted": format!("schema of {bytes} bytes is over the {MAX_API_SCHEMA_BYTES}-byte limit of $api")})
                } else {
                    schema
                };
                Some((m.method.clone(), schema))
            })
            .collect();
        if !outputs.is_empty() {
            out.insert("outputSchemas".into(), Value::Object(outputs));
        }
    }
    if selector.is_empty() && !server.left_out.is_empty() {
        out.insert(
            "leftOut".into(),
            Value::Array(
                server
                    .left_out
                    .iter()
                    .take(super::dts::MAX_PARAMS)
                    .map(|(tool, reason)| {
                        json!({"mcpTool": cut_utf16(tool, super::dts::MAX_NAME_CHARS), "reason": reason})
                    })
                    .collect(),
            ),
        );
    }
    out.insert(
        "note".into(),
        json!("Call MCP tools with one object argument, for example MCP.server.tool({ requiredField: value })."),
    );
    Value::Object(out)
}
/// `API.list(prefix?)` over `files` (docs/contract/mcp.md#s7-4): `{files: [{path, description, bytes}]}`. A string
/// prefix is trimmed and one trailing `/` removed; a file matches when its path equals the
/// prefix or starts with `prefix + "/"`. No prefix, a non-string or an empty one lists all.
pub fn api_list(files: &[ApiFile], prefix: Option<&Value>) -> Value {
    let prefix = prefix.and_then(Value::as_str).map(js_trim).unwrap_or("");
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    let listed: Vec<Value> = files
        .iter()
        .filter(|f| {
            if f.nested {
                // Per-tool files: only under their own directory, or by their own path.
                let dir = f.path.rsplit_once('/').map_or("", |(dir, _)| dir);
                return !prefix.is_empty() && (f.path == prefix || dir == prefix);
            }
            prefix.is_empty()
                || f.path == prefix
                || (f.path.starts_with(prefix) && f.path[prefix.len()..].starts_with('/'))
        })
        .map(|f| json!({"path": f.path, "description": f.description, "bytes": f.bytes}))
        .collect();
    json!({ "files": listed })
}

/// `API.read(path)` over `files` (docs/contract/mcp.md#s7-4): one leading `/` is stripped; an empty path or an empty,
/// `.` or `..` segment gives [`ApiFileError::InvalidPath`]; an unknown file gives
/// [`ApiFileError::UnknownFile`] (`Unknown API file: <path>`, the path after stripping). The `Ok` file serialises as
/// `{path, description, bytes, content}`.
pub fn api_read<'a>(files: &'a [ApiFile], path: &str) -> Result<&'a ApiFile, ApiFileError> {
    let path = path.strip_prefix('/').unwrap_or(path);
    if path.is_empty()
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(ApiFileError::InvalidPath);
    }
    files
        .iter()
        .find(|f| f.path == path)
        .ok_or_else(|| ApiFileError::UnknownFile(path.to_string()))
}
