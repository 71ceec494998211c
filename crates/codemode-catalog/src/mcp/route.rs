//! Routing (docs/contract/mcp.md#s7-1, docs/contract/mcp.md#s7-2): building the published path table from the catalog's MCP
//! entries, and the host checks of a `namespace` bridge request that either dispatch a tool by
//! exact catalog id or answer `$api`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::api::api_server;
use super::ident::{
    server_identifiers, to_identifier, unique_identifier, FORBIDDEN_SEGMENTS,
    RESERVED_SERVER_MEMBERS,
};
use super::{
    schema_properties, schema_required, Callable, McpMethod, McpNamespace, McpServer,
    NamespaceAction, TASK_REQUIRED_REASON,
};
use crate::catalog::{Catalog, Entry};
use crate::js::{cmp_utf16, js_trim};
use crate::spec::{McpOperation, ToolOrigin};

/// The namespace id of the `MCP` global in `namespace` bridge requests.
pub const MCP_NAMESPACE_ID: &str = "mcp";

/// `MCP namespace tools accept one object argument.` (docs/contract/mcp.md#s7-2 step 4).
pub const ONE_OBJECT_ARGUMENT: &str = "MCP namespace tools accept one object argument.";

/// Why a `namespace` bridge request was refused (docs/contract/mcp.md#s7-2, checked in this order).
/// `Display` is the exact guest message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// Step 1: `Unknown code mode namespace: <id>` (any id while the namespace is empty).
    #[error("Unknown code mode namespace: {0}")]
    UnknownNamespace(String),
    /// Step 2: `Invalid code mode namespace path segment: <seg>`, with `(empty)` for an empty
    /// segment; the segment is empty, contains NUL or is `__proto__`/`constructor`/`prototype`.
    #[error("Invalid code mode namespace path segment: {}", if .0.is_empty() { "(empty)" } else { .0.as_str() })]
    InvalidSegment(String),
    /// Step 3: `Code mode namespace path is not callable: <a.b>` (the path below `MCP`).
    #[error("Code mode namespace path is not callable: {}", .0.join("."))]
    NotCallable(Vec<String>),
    /// Step 4: [`ONE_OBJECT_ARGUMENT`]: more than one argument, or one that is not an object.
    #[error("{}", ONE_OBJECT_ARGUMENT)]
    OneObjectArgument,
    /// Step 6: required keys missing after defaults, in `required` order:
    /// `Missing required MCP namespace argument: a` (one) or
    /// `Missing required MCP namespace arguments: a, b` (several).
    #[error("Missing required MCP namespace {}: {}", if .0.len() == 1 { "argument" } else { "arguments" }, .0.join(", "))]
    MissingArguments(Vec<String>),
}

crate::error::guest_message!(NamespaceError);

/// The MCP fields of a catalog entry's origin, the safe server name trimmed.
pub(super) struct McpMeta<'a> {
    pub(super) server_name: &'a str,
    pub(super) safe_server_name: &'a str,
    pub(super) tool_name: &'a str,
    pub(super) operation: McpOperation,
}

/// The MCP fields of `entry`, `None` for entries that are not MCP tools.
pub(super) fn mcp_meta(entry: &Entry) -> Option<McpMeta<'_>> {
    match entry.origin() {
        ToolOrigin::Mcp {
            server_name,
            safe_server_name,
            tool_name: Some(tool_name),
            operation,
            ..
        } => Some(McpMeta {
            server_name,
            safe_server_name: js_trim(safe_server_name),
            tool_name,
            operation: *operation,
        }),
        _ => None,
    }
}

fn sorted_mcp_entries(catalog: &Catalog) -> Vec<(&Entry, McpMeta<'_>)> {
    let mut entries: Vec<_> = catalog
        .entries()
        .iter()
        .filter_map(|e| mcp_meta(e).map(|m| (e, m)))
        .collect();
    entries.sort_by(|a, b| cmp_utf16(a.0.id(), b.0.id()));
    entries
}
impl Catalog {
    /// The catalog's MCP namespace ([`McpNamespace::build`]), built once and shared.
    pub fn mcp_namespace(&self) -> Arc<McpNamespace> {
        self.namespace
            .get_or_init(|| Arc::new(McpNamespace::build(self)))
            .clone()
    }
}

impl McpNamespace {
    /// Builds the namespace from the catalog's MCP entries that carry MCP metadata
    /// ([`crate::spec::ToolOrigin::Mcp`] with `tool_name: Some(_)`), in id order (docs/contract/mcp.md#s7-1, docs/contract/mcp.md#s7-2).
    ///
    /// Servers are grouped by trimmed safe server name and get identifiers in safe-name order
    /// (fallback `server`). Tools get identifiers from their raw MCP name in id order (fallback
    /// `tool`), unique per server with `$api`, `resources` and `prompts` reserved. Resource and
    /// prompt operations take their fixed paths; when a server has two entries for the same
    /// fixed path, the first by id wins and the later one is not reachable.
    pub fn build(catalog: &Catalog) -> McpNamespace {
        let entries = sorted_mcp_entries(catalog);
        let ids = server_identifiers(entries.iter().map(|(_, m)| m.safe_server_name).collect());
        let mut servers: Vec<McpServer> = ids
            .iter()
            .map(|(safe, identifier)| McpServer {
                identifier: identifier.clone(),
                server_name: String::new(),
                safe_server_name: (*safe).to_string(),
                methods: Vec::new(),
                left_out: Vec::new(),
            })
            .collect();
        let index_of: HashMap<&str, usize> =
            ids.iter().enumerate().map(|(i, (s, _))| (*s, i)).collect();
        let mut used: Vec<HashSet<String>> = servers
            .iter()
            .map(|_| {
                RESERVED_SERVER_MEMBERS
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            })
            .collect();
        let mut seen_names = vec![false; servers.len()];
        for (entry, meta) in &entries {
            let si = index_of[meta.safe_server_name];
            if !seen_names[si] {
                servers[si].server_name = meta.server_name.to_string();
                seen_names[si] = true;
            }
            let docs = entry.mcp_docs().cloned();
            if docs.as_ref().is_some_and(|d| d.task_required) {
                servers[si]
                    .left_out
                    .push((meta.tool_name.to_string(), TASK_REQUIRED_REASON.to_string()));
                continue;
            }
            let path: Vec<String> = match meta.operation.fixed_path() {
                Some(fixed) => {
                    let path: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
                    if servers[si].methods.iter().any(|m| m.path == path) {
                        continue;
                    }
                    path
                }
                None => vec![unique_identifier(
                    &to_identifier(meta.tool_name, "tool"),
                    &mut used[si],
                )],
            };
            servers[si].methods.push(McpMethod {
                method: path.join("."),
                path,
                mcp_tool: meta.tool_name.to_string(),
                operation: meta.operation,
                id: entry.id().to_string(),
                description: entry.compact().description.clone(),
                parameters: entry.parameters().cloned(),
                docs,
            });
        }
        servers.sort_by(|a, b| cmp_utf16(&a.identifier, &b.identifier));
        let mut callable = HashMap::new();
        if !servers.is_empty() {
            callable.insert(vec!["$api".to_string()], Callable::RootApi);
        }
        for (si, server) in servers.iter_mut().enumerate() {
            server
                .methods
                .sort_by(|a, b| cmp_utf16(&a.method, &b.method));
            callable.insert(
                vec![server.identifier.clone(), "$api".to_string()],
                Callable::ServerApi(si),
            );
            for (mi, method) in server.methods.iter().enumerate() {
                let mut key = vec![server.identifier.clone()];
                key.extend(method.path.iter().cloned());
                callable.insert(key, Callable::Method(si, mi));
            }
        }
        let offline = super::offline::offline_identifiers(
            catalog.offline_mcp_servers(),
            servers.iter().map(|s| s.identifier.clone()),
        );
        McpNamespace {
            servers,
            callable,
            offline,
        }
    }

    /// The host checks of a `namespace` bridge request, in the order of docs/contract/mcp.md#s7-2:
    ///
    /// 1. `namespace_id` other than `mcp` (or any id when the namespace is empty) →
    ///    `Unknown code mode namespace: <id>`;
    /// 2. a segment that is empty, contains NUL or is `__proto__`/`constructor`/`prototype` →
    ///    `Invalid code mode namespace path segment: <seg>` (`(empty)` for an empty segment);
    /// 3. a path (below `MCP`, e.g. `["github", "createIssue"]`) that is not in the published
    ///    table → `Code mode namespace path is not callable: <a.b>`;
    /// 4. for tools: more than one argument or a non-object argument →
    ///    [`ONE_OBJECT_ARGUMENT`]; no argument means `{}`;
    /// 5. schema `default`s fill missing keys as own properties;
    /// 6. missing required keys → `Missing required MCP namespace argument: a` /
    ///    `Missing required MCP namespace arguments: a, b`.
    ///
    /// `$api` paths answer with [`NamespaceAction::Api`] (docs/contract/mcp.md#s7-3) after steps 1–3.
    ///
    /// `args` is the JSON form of the guest's argument list; JavaScript `undefined` has no JSON
    /// form, so the runtime passes `[]` for `f()` and `f(undefined)`, and object keys whose value
    /// is `undefined` are simply absent (and so filled by defaults / reported missing).
    pub fn request(
        &self,
        namespace_id: &str,
        path: &[String],
        args: &[Value],
    ) -> Result<NamespaceAction, NamespaceError> {
        if namespace_id != MCP_NAMESPACE_ID || self.is_empty() {
            return Err(NamespaceError::UnknownNamespace(namespace_id.to_string()));
        }
        if let Some(seg) = path.iter().find(|seg| {
            seg.is_empty() || seg.contains('\0') || FORBIDDEN_SEGMENTS.contains(&seg.as_str())
        }) {
            return Err(NamespaceError::InvalidSegment(seg.clone()));
        }
        let Some(callable) = self.callable.get(path) else {
            return Err(NamespaceError::NotCallable(path.to_vec()));
        };
        match *callable {
            Callable::RootApi => Ok(NamespaceAction::Api(self.api_root())),
            Callable::ServerApi(si) => Ok(NamespaceAction::Api(api_server(
                &self.servers[si],
                args.first(),
                args.get(1),
            ))),
            Callable::Method(si, mi) => {
                let method = &self.servers[si].methods[mi];
                let input = map_input(method.parameters.as_ref(), args)?;
                Ok(NamespaceAction::Call {
                    id: method.id.clone(),
                    input,
                })
            }
        }
    }
}

/// docs/contract/mcp.md#s7-2 steps 4–6 for a tool whose input schema is `parameters`: the argument list must be
/// empty (→ `{}`) or one JSON object; every property whose schema has a `default` and that is
/// missing from the input is set to that default; then every `required` key must be present.
///
/// Errors: [`NamespaceError::OneObjectArgument`]; [`NamespaceError::MissingArguments`]
/// (`Missing required MCP namespace argument: a` for one key, `… arguments: a, b` for several,
/// in `required` order).
pub fn map_input(parameters: Option<&Value>, args: &[Value]) -> Result<Value, NamespaceError> {
    if args.len() > 1 {
        return Err(NamespaceError::OneObjectArgument);
    }
    let mut input = match args.first() {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(NamespaceError::OneObjectArgument),
    };
    if let Some(props) = schema_properties(parameters) {
        for (key, descriptor) in props {
            if let Some(default) = descriptor.as_object().and_then(|d| d.get("default")) {
                if !input.contains_key(key) {
                    input.insert(key.clone(), default.clone());
                }
            }
        }
    }
    let mut missing: Vec<String> = Vec::new();
    for key in schema_required(parameters) {
        if !input.contains_key(key) && !missing.iter().any(|m| m == key) {
            missing.push(key.to_string());
        }
    }
    if missing.is_empty() {
        Ok(Value::Object(input))
    } else {
        Err(NamespaceError::MissingArguments(missing))
    }
}
