//! The `MCP` namespace model (docs/contract/mcp.md#s7): server and tool identifiers, the callable path
//! table, the host checks of a `namespace` bridge request, `$api` answers, the `API` virtual
//! `.d.ts` files and the namespace prompt. Pure functions over a built [`Catalog`](crate::Catalog); no I/O, no
//! runtime.
//!
//! Scope: gateway servers only. Node-hosted servers (docs/contract/mcp.md#s7-1 "grouped by `(node id, server
//! name)`", node labels, `<node-id fragment>_<safeServerName>` renames) are not modelled, because
//! [`ToolOrigin::Mcp`](crate::spec::ToolOrigin::Mcp) carries no node; every server is grouped by its safe server name.
//!
//! One file per concern: [`ident`] (docs/contract/mcp.md#s7-1 identifiers), [`route`] (building the path table and
//! the docs/contract/mcp.md#s7-2 host checks of a `namespace` request, [`NamespaceError`]), [`api`] (`$api`
//! answers and the `API` files, [`ApiFileError`]), [`dts`] (the docs/contract/mcp.md#s7-4 declarations, whose types
//! come from [`crate::schema_ts`]) and [`prompt`] (docs/contract/mcp.md#s7-5). This file holds the model they share.
//!
//! ```
//! use codemode_catalog::{Catalog, McpNamespace, NamespaceAction, SearchLimits, ToolSpec};
//! use serde_json::json;
//!
//! let tool = ToolSpec::mcp_tool("github", "create_issue", "Create a GitHub issue.")
//!     .with_parameters(json!({"type": "object",
//!         "properties": {"title": {"type": "string"}, "body": {"type": "string", "default": ""}},
//!         "required": ["title"]}));
//! let catalog = Catalog::build(vec![tool], &SearchLimits::default()).unwrap();
//! let ns = McpNamespace::build(&catalog);
//! let path = vec!["github".to_string(), "createIssue".to_string()];
//! assert_eq!(
//!     ns.request("mcp", &path, &[json!({"title": "Ship it"})]).unwrap(),
//!     NamespaceAction::Call {
//!         id: "mcp:github:github__create_issue".into(),
//!         input: json!({"title": "Ship it", "body": ""}),
//!     }
//! );
//! assert_eq!(
//!     ns.request("mcp", &path, &[]).unwrap_err(),
//!     "Missing required MCP namespace argument: title"
//! );
//! assert_eq!(ns.api_files()[1].path, "mcp/github.d.ts");
//! ```
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::spec::McpOperation;

pub mod api;
pub mod dts;
pub mod ident;
pub mod offline;
pub mod prompt;
pub mod route;

pub use api::{
    api_list, api_read, api_server, ApiFile, ApiFileError, INVALID_API_FILE_PATH,
    MAX_API_DESCRIPTION_CHARS, MAX_API_SCHEMA_BYTES,
};
pub use dts::{
    server_declaration, tool_declaration, DECLARATION_RULES, MAX_DEFAULT_CHARS, MAX_DOC_LINES,
    MAX_DOC_LINE_CHARS, MAX_NAME_CHARS, MAX_NESTED_PROPERTIES, MAX_PARAMS, MAX_TOOL_BLOCK_BYTES,
    MAX_TYPE_CHARS, MAX_TYPE_DEPTH, MAX_TYPE_ENUM_VALUES, MAX_TYPE_NODES, MAX_TYPE_UNION_MEMBERS,
};
pub use ident::{
    to_identifier, unique_identifier, FORBIDDEN_SEGMENTS, KEYWORDS, RESERVED_GLOBALS,
    RESERVED_SERVER_MEMBERS,
};
pub use offline::{OfflineMcpServer, OfflineServer, OfflineState};
pub use prompt::namespace_prompt;
pub use route::{map_input, NamespaceError, MCP_NAMESPACE_ID, ONE_OBJECT_ARGUMENT};

/// Defined with the tool spec that carries it; re-exported here, where the namespace renders it.
pub use crate::spec::McpToolDocs;

/// Why a tool whose `execution.taskSupport` is `"required"` is not in the namespace; the
/// `.d.ts` comment and `$api`'s `leftOut` say it.
pub const TASK_REQUIRED_REASON: &str = "the server runs it only as an MCP task (execution.taskSupport \"required\"), which codemode does not support";

/// One callable MCP method of a server (docs/contract/mcp.md#s7-2 path table).
#[derive(Debug, Clone, PartialEq)]
pub struct McpMethod {
    /// The path below the server joined with `.`: `createIssue`, `resources.read`, ….
    pub method: String,
    /// The path below the server: `["createIssue"]`, `["resources", "read"]`.
    pub path: Vec<String>,
    /// The raw MCP tool name from the metadata (`create_issue`).
    pub mcp_tool: String,
    /// The operation.
    pub operation: McpOperation,
    /// The exact catalog id the path dispatches to.
    pub id: String,
    /// The entry's description (untrusted text; shown in `$api` and escaped in `.d.ts`).
    pub description: String,
    /// The entry's input schema, if any.
    pub parameters: Option<Value>,
    /// The server's declarations about the tool (untrusted documentation), if any.
    pub docs: Option<McpToolDocs>,
}

/// One server object `MCP.<identifier>` (docs/contract/mcp.md#s7-1-servers "Servers").
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// The JavaScript identifier (`github`, `chromeDevtools`, `server`, `tools2`, …).
    pub identifier: String,
    /// `$serverName`: the configured server name of the first entry (by id).
    pub server_name: String,
    /// The safe server name the server is grouped by.
    pub safe_server_name: String,
    /// Methods sorted by `method` (UTF-16 code-unit order).
    pub methods: Vec<McpMethod>,
    /// Tools of the server that are not in the namespace, with why: `(raw MCP tool name,
    /// reason)`, in id order.
    pub left_out: Vec<(String, String)>,
}

/// The whole `MCP` namespace of one run (docs/contract/mcp.md#s7-1 to #s7-4).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpNamespace {
    servers: Vec<McpServer>,
    callable: HashMap<Vec<String>, Callable>,
    /// Configured servers that are not connected (docs/mcp.md, "Servers that are not connected").
    offline: Vec<offline::OfflineMcpServer>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Callable {
    RootApi,
    ServerApi(usize),
    Method(usize, usize),
}

/// What a checked `namespace` request asks the host to do (docs/contract/mcp.md#s7-2, docs/contract/mcp.md#s7-3).
#[derive(Debug, Clone, PartialEq)]
pub enum NamespaceAction {
    /// Dispatch the catalog entry `id` with `input` (a JSON object, schema defaults filled in).
    Call {
        /// The exact catalog id.
        id: String,
        /// The final input object.
        input: Value,
    },
    /// Resolve with this `$api` answer without running a tool.
    Api(Value),
}

/// `parameters.properties` when it is an object.
fn schema_properties(schema: Option<&Value>) -> Option<&Map<String, Value>> {
    schema?.get("properties")?.as_object()
}

/// The string members of `parameters.required`, in order (empty when absent or not an array).
fn schema_required(schema: Option<&Value>) -> Vec<&str> {
    schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

impl McpNamespace {
    /// True when no MCP entry with metadata exists (no `MCP` global, no files, no prompt).
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Servers sorted by identifier.
    pub fn servers(&self) -> &[McpServer] {
        &self.servers
    }

    /// The server with this identifier.
    pub fn server(&self, identifier: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.identifier == identifier)
    }

    /// Every published callable path below `MCP` with what it does: `(["github", "createIssue"],
    /// Some("mcp:github:github__create_issue"))`, and `$api` paths (`["$api"]`,
    /// `["github", "$api"]`) with `None`. Sorted by path.
    pub fn callable_paths(&self) -> Vec<(Vec<String>, Option<&str>)> {
        let mut out: Vec<(Vec<String>, Option<&str>)> = self
            .callable
            .iter()
            .map(|(path, c)| {
                let id = match c {
                    Callable::Method(si, mi) => Some(self.servers[*si].methods[*mi].id.as_str()),
                    _ => None,
                };
                (path.clone(), id)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// `$serverName` of each server: `(identifier, serverName)` (docs/contract/mcp.md#s7-2).
    pub fn server_names(&self) -> Vec<(&str, &str)> {
        self.servers
            .iter()
            .map(|s| (s.identifier.as_str(), s.server_name.as_str()))
            .collect()
    }
}
