//! The `MCP` namespace model (behaviour.md §7): server and tool identifiers, the callable path
//! table, the host checks of a `namespace` bridge request, `$api` answers, the `API` virtual
//! `.d.ts` files and the namespace prompt. Pure functions over a built [`Catalog`]; no I/O, no
//! runtime.
//!
//! Scope: gateway servers only. Node-hosted servers (§7.1 "grouped by `(node id, server
//! name)`", node labels, `<node-id fragment>_<safeServerName>` renames) are not modelled, because
//! [`ToolOrigin::Mcp`] carries no node; every server is grouped by its safe server name.
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

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::catalog::{Catalog, Entry};
use crate::js::{cmp_utf16, is_identifier, js_number, js_trim, json_string, utf16_len};
use crate::spec::{McpOperation, ToolOrigin};

/// The namespace id of the `MCP` global in `namespace` bridge requests.
pub const MCP_NAMESPACE_ID: &str = "mcp";

/// §7.1 keywords: a generated identifier equal to one of these gets a numeric suffix.
pub const KEYWORDS: [&str; 36] = [
    "break",
    "case",
    "catch",
    "continue",
    "debugger",
    "default",
    "do",
    "else",
    "finally",
    "for",
    "function",
    "if",
    "return",
    "switch",
    "throw",
    "try",
    "var",
    "while",
    "with",
    "null",
    "true",
    "false",
    "instanceof",
    "typeof",
    "void",
    "delete",
    "new",
    "in",
    "this",
    "const",
    "class",
    "extends",
    "export",
    "import",
    "super",
    "enum",
];

/// §7.1 reserved globals: a generated identifier equal to one of these gets a numeric suffix.
pub const RESERVED_GLOBALS: [&str; 29] = [
    "ALL_TOOLS",
    "agents",
    "API",
    "Array",
    "Boolean",
    "catalog",
    "clearTimeout",
    "Date",
    "Error",
    "globalThis",
    "log",
    "json",
    "JSON",
    "Map",
    "Math",
    "MCP",
    "namespaces",
    "nodes",
    "Number",
    "Object",
    "Promise",
    "phase",
    "Set",
    "setTimeout",
    "skills",
    "String",
    "text",
    "tools",
    "yield_control",
];

/// Path segments that are never valid (§7.1 step 4, §7.2 step 2).
pub const FORBIDDEN_SEGMENTS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Names reserved inside every server object (§7.1): tools never get these identifiers.
pub const RESERVED_SERVER_MEMBERS: [&str; 3] = ["$api", "resources", "prompts"];

/// `MCP namespace tools accept one object argument.` (§7.2 step 4).
pub const ONE_OBJECT_ARGUMENT: &str = "MCP namespace tools accept one object argument.";

/// `invalid API file path` (§7.4 `API.read`).
pub const INVALID_API_FILE_PATH: &str = "invalid API file path";

/// Most description lines in a JSDoc block (§7.4 "at most 12 trimmed lines").
///
/// The other `MAX_*` constants are the bounds of the `.d.ts` renderer (§7.4 asks for bounded
/// output; the numbers are ours). Every tool block is at most [`MAX_TOOL_BLOCK_BYTES`]; a file is
/// its fixed header plus one block per tool, so its size is bounded by the number of tools.
pub const MAX_DOC_LINES: usize = 12;
/// Longest description line (UTF-16 units) kept in a JSDoc line; longer lines end with `…`.
pub const MAX_DOC_LINE_CHARS: usize = 500;
/// Most top-level parameters rendered per tool; the rest collapse into
/// `[key: string]: unknown; // <n> more parameters omitted`.
pub const MAX_PARAMS: usize = 64;
/// Longest parameter or property name (UTF-16 units) rendered; longer names are omitted like
/// surplus parameters (they stay callable; `$api(..., {schema: true})` shows them).
pub const MAX_NAME_CHARS: usize = 128;
/// Longest rendered type (UTF-16 units) of one parameter; longer types render `unknown`.
pub const MAX_TYPE_CHARS: usize = 1000;
/// Most schema nodes visited while rendering one parameter type; past it, `unknown`.
pub const MAX_TYPE_NODES: usize = 256;
/// Deepest nesting rendered inside a parameter type; deeper schemas render `unknown`.
pub const MAX_TYPE_DEPTH: usize = 8;
/// Properties rendered per nested object type; more add `[key: string]: unknown`.
pub const MAX_NESTED_PROPERTIES: usize = 16;
/// Longest `Default: <json>` value (UTF-16 units); longer defaults are not shown (still filled).
pub const MAX_DEFAULT_CHARS: usize = 200;
/// Largest tool block in bytes; a larger block is replaced by a short block that points at
/// `$api(<method>, { schema: true })`.
pub const MAX_TOOL_BLOCK_BYTES: usize = 16 * 1024;

/// Longest tool description (UTF-16 units) in a server `$api()` answer's `tools[]`; longer ones
/// end with `…`. MCP metadata is untrusted, so `$api` output is bounded like the `.d.ts` files.
pub const MAX_API_DESCRIPTION_CHARS: usize = 4000;
/// Largest schema (bytes of JSON) in a `$api(…, {schema: true})` answer; a larger one is replaced
/// by `{"omitted": "schema of <n> bytes is over the <max>-byte limit of $api"}`.
pub const MAX_API_SCHEMA_BYTES: usize = 256 * 1024;

/// One callable MCP method of a server (§7.2 path table).
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
}

/// One server object `MCP.<identifier>` (§7.1 "Servers").
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
}

/// The whole `MCP` namespace of one run (behaviour.md §7.1–§7.4).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpNamespace {
    servers: Vec<McpServer>,
    callable: HashMap<Vec<String>, Callable>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Callable {
    RootApi,
    ServerApi(usize),
    Method(usize, usize),
}

/// What a checked `namespace` request asks the host to do (§7.2, §7.3).
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

/// A virtual `API` file (§7.4). Serialises as `{path, description, bytes, content}`.
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
}

struct McpMeta<'a> {
    server_name: &'a str,
    safe_server_name: &'a str,
    tool_name: &'a str,
    operation: McpOperation,
}

fn mcp_meta(entry: &Entry) -> Option<McpMeta<'_>> {
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

/// §7.1 steps 1–3: camel-case the `[A-Za-z0-9]+` words of `name`, strip leading characters
/// outside `[A-Za-z_$]`, and fall back to `fallback` when nothing is left.
///
/// `create_issue` → `createIssue`, `take-snapshot` → `takeSnapshot`, `2fa` → `fa`, `""` →
/// `fallback`.
pub fn to_identifier(name: &str, fallback: &str) -> String {
    let mut out = String::new();
    for (i, word) in name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.push(first.to_ascii_lowercase());
            } else {
                out.push(first.to_ascii_uppercase());
            }
            out.push_str(chars.as_str());
        }
    }
    let stripped =
        out.trim_start_matches(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '$'));
    if is_identifier(stripped) {
        stripped.to_string()
    } else {
        fallback.to_string()
    }
}

fn is_reserved(candidate: &str) -> bool {
    KEYWORDS.contains(&candidate)
        || RESERVED_GLOBALS.contains(&candidate)
        || FORBIDDEN_SEGMENTS.contains(&candidate)
}

/// §7.1 step 4: `base`, else `base2`, `base3`, … — the first candidate that is not in `used`,
/// not a keyword, not a reserved global and not `__proto__`/`constructor`/`prototype`. The
/// result is added to `used`.
pub fn unique_identifier(base: &str, used: &mut HashSet<String>) -> String {
    let mut candidate = base.to_string();
    let mut n = 2u64;
    while used.contains(&candidate) || is_reserved(&candidate) {
        candidate = format!("{base}{n}");
        n += 1;
    }
    used.insert(candidate.clone());
    candidate
}

/// Server identifiers for a list of safe server names, sorted and de-duplicated first (§7.1):
/// returns `(safe name, identifier)` in safe-name order.
fn server_identifiers(mut safe_names: Vec<&str>) -> Vec<(&str, String)> {
    safe_names.sort_by(|a, b| cmp_utf16(a, b));
    safe_names.dedup();
    let mut used = HashSet::new();
    safe_names
        .into_iter()
        .map(|safe| {
            (
                safe,
                unique_identifier(&to_identifier(safe, "server"), &mut used),
            )
        })
        .collect()
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

impl McpNamespace {
    /// Builds the namespace from the catalog's MCP entries that carry MCP metadata
    /// ([`ToolOrigin::Mcp`] with `tool_name: Some(_)`), in id order (§7.1, §7.2).
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
        McpNamespace { servers, callable }
    }

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

    /// `$serverName` of each server: `(identifier, serverName)` (§7.2).
    pub fn server_names(&self) -> Vec<(&str, &str)> {
        self.servers
            .iter()
            .map(|s| (s.identifier.as_str(), s.server_name.as_str()))
            .collect()
    }

    /// The host checks of a `namespace` bridge request, in the order of §7.2:
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
    /// `$api` paths answer with [`NamespaceAction::Api`] (§7.3) after steps 1–3.
    ///
    /// `args` is the JSON form of the guest's argument list; JavaScript `undefined` has no JSON
    /// form, so the runtime passes `[]` for `f()` and `f(undefined)`, and object keys whose value
    /// is `undefined` are simply absent (and so filled by defaults / reported missing).
    pub fn request(
        &self,
        namespace_id: &str,
        path: &[String],
        args: &[Value],
    ) -> Result<NamespaceAction, String> {
        if namespace_id != MCP_NAMESPACE_ID || self.is_empty() {
            return Err(format!("Unknown code mode namespace: {namespace_id}"));
        }
        for seg in path {
            if seg.is_empty() || seg.contains('\0') || FORBIDDEN_SEGMENTS.contains(&seg.as_str()) {
                let shown = if seg.is_empty() {
                    "(empty)"
                } else {
                    seg.as_str()
                };
                return Err(format!("Invalid code mode namespace path segment: {shown}"));
            }
        }
        let Some(callable) = self.callable.get(path) else {
            return Err(format!(
                "Code mode namespace path is not callable: {}",
                path.join(".")
            ));
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

    /// `MCP.$api()` (§7.3): `{kind: "mcp_api", scope: "root", header, servers: [{identifier,
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

    /// `MCP.<identifier>.$api(selector?, options?)` (§7.3); `None` for an unknown identifier.
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

    /// The root declaration (§7.4), also `MCP.$api().header`:
    ///
    /// ```text
    /// type McpApiHeader = { header: string; servers?: unknown[] };
    ///
    /// declare const MCP: {
    ///   /** List visible MCP servers and request server-specific headers. */
    ///   $api(): Promise<McpApiHeader>;
    ///   readonly github: typeof MCP.github;
    /// };
    /// ```
    pub fn root_declaration(&self) -> String {
        let mut out = String::from(
            "type McpApiHeader = { header: string; servers?: unknown[] };\n\ndeclare const MCP: {\n  /** List visible MCP servers and request server-specific headers. */\n  $api(): Promise<McpApiHeader>;\n",
        );
        for s in &self.servers {
            out.push_str(&format!("  readonly {0}: typeof MCP.{0};\n", s.identifier));
        }
        out.push_str("};");
        out
    }

    /// The `API` virtual files (§7.4): `mcp/index.d.ts` (one `/// <reference path="./<id>.d.ts"
    /// />` line per server, a blank line, the root declaration), then `mcp/<identifier>.d.ts`
    /// per server in identifier order. A server whose identifier is `index` has no file of its
    /// own (it would clash with the index): its declaration is appended to `mcp/index.d.ts`
    /// after a blank line. Empty when the namespace is empty.
    pub fn api_files(&self) -> Vec<ApiFile> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut index = String::new();
        for s in self.servers.iter().filter(|s| s.identifier != "index") {
            index.push_str(&format!(
                "/// <reference path=\"./{}.d.ts\" />\n",
                s.identifier
            ));
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
        files
    }

    /// The namespace prompt (§7.5), `None` when the namespace is empty. Built from server
    /// identifiers only; see [`namespace_prompt`], which does not even build the method table.
    pub fn prompt(&self) -> Option<String> {
        prompt_for(self.servers.iter().map(|s| s.identifier.as_str()).collect())
    }
}

fn api_file(path: String, description: String, content: String) -> ApiFile {
    ApiFile {
        path,
        description,
        bytes: content.len(),
        content,
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

/// The namespace prompt of §7.5 straight from a catalog: the server identifiers (in identifier
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

/// `MCP.<server>.$api(selector?, options?)` for one server (§7.3).
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
                    json!({
                        "method": m.method,
                        "path": m.path,
                        "mcpTool": m.mcp_tool,
                        "operation": m.operation.as_str(),
                        "description": cut_chars(&m.description, MAX_API_DESCRIPTION_CHARS),
                    })
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
    }
    out.insert(
        "note".into(),
        json!("Call MCP tools with one object argument, for example MCP.server.tool({ requiredField: value })."),
    );
    Value::Object(out)
}

fn schema_properties(schema: Option<&Value>) -> Option<&Map<String, Value>> {
    schema?.get("properties")?.as_object()
}

fn schema_required(schema: Option<&Value>) -> Vec<&str> {
    schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// §7.2 steps 4–6 for a tool whose input schema is `parameters`: the argument list must be
/// empty (→ `{}`) or one JSON object; every property whose schema has a `default` and that is
/// missing from the input is set to that default; then every `required` key must be present.
///
/// Errors: [`ONE_OBJECT_ARGUMENT`]; `Missing required MCP namespace argument: a` (one key) or
/// `Missing required MCP namespace arguments: a, b` (several, in `required` order).
pub fn map_input(parameters: Option<&Value>, args: &[Value]) -> Result<Value, String> {
    if args.len() > 1 {
        return Err(ONE_OBJECT_ARGUMENT.into());
    }
    let mut input = match args.first() {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(ONE_OBJECT_ARGUMENT.into()),
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
    let mut missing: Vec<&str> = Vec::new();
    for key in schema_required(parameters) {
        if !input.contains_key(key) && !missing.contains(&key) {
            missing.push(key);
        }
    }
    match missing.len() {
        0 => Ok(Value::Object(input)),
        1 => Err(format!(
            "Missing required MCP namespace argument: {}",
            missing[0]
        )),
        _ => Err(format!(
            "Missing required MCP namespace arguments: {}",
            missing.join(", ")
        )),
    }
}

/// `API.list(prefix?)` over `files` (§7.4): `{files: [{path, description, bytes}]}`. A string
/// prefix is trimmed and one trailing `/` removed; a file matches when its path equals the
/// prefix or starts with `prefix + "/"`. No prefix, a non-string or an empty one lists all.
pub fn api_list(files: &[ApiFile], prefix: Option<&Value>) -> Value {
    let prefix = prefix.and_then(Value::as_str).map(js_trim).unwrap_or("");
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    let listed: Vec<Value> = files
        .iter()
        .filter(|f| {
            prefix.is_empty()
                || f.path == prefix
                || (f.path.starts_with(prefix) && f.path[prefix.len()..].starts_with('/'))
        })
        .map(|f| json!({"path": f.path, "description": f.description, "bytes": f.bytes}))
        .collect();
    json!({ "files": listed })
}

/// `API.read(path)` over `files` (§7.4): one leading `/` is stripped; an empty path or an empty,
/// `.` or `..` segment gives [`INVALID_API_FILE_PATH`]; an unknown file gives
/// `Unknown API file: <path>` (the path after stripping). The `Ok` file serialises as
/// `{path, description, bytes, content}`.
pub fn api_read<'a>(files: &'a [ApiFile], path: &str) -> Result<&'a ApiFile, String> {
    let path = path.strip_prefix('/').unwrap_or(path);
    if path.is_empty()
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(INVALID_API_FILE_PATH.into());
    }
    files
        .iter()
        .find(|f| f.path == path)
        .ok_or_else(|| format!("Unknown API file: {path}"))
}

// ---------------------------------------------------------------------------------------------
// .d.ts rendering (§7.4)

const SERVER_PREAMBLE: &str =
    "type McpApiHeader = { header: string; tools?: unknown[]; schemas?: Record<string, unknown> };

type McpToolResult = { content: unknown[]; structuredContent?: unknown; isError?: boolean };
type McpResourcesListResult = { resources: unknown[]; nextCursor?: string };
type McpResourcesReadResult = { contents: unknown[] };
type McpPromptsListResult = { prompts: unknown[]; nextCursor?: string };
type McpPromptsGetResult = { messages: unknown[]; description?: string };
";

/// The server declaration (§7.4) for `methods` of `server` (all of them for the file, the
/// selection for `$api`): the fixed preamble, then `declare namespace MCP.<identifier> {` with
/// `$api`, the top-level tool blocks, then `namespace prompts { … }` and
/// `namespace resources { … }` when they have methods. Methods keep the given order (sorted by
/// method in [`McpServer::methods`]).
pub fn server_declaration(server: &McpServer, methods: &[&McpMethod]) -> String {
    let mut out = String::from(SERVER_PREAMBLE);
    out.push_str(&format!(
        "\ndeclare namespace MCP.{} {{\n  /** Return this TypeScript-style API header. */\n  function $api(toolName?: string, options?: {{ schema?: boolean }}): Promise<McpApiHeader>;\n",
        server.identifier
    ));
    for m in methods.iter().filter(|m| m.path.len() == 1) {
        out.push('\n');
        push_block(&mut out, server, m, "  ");
    }
    for group in ["prompts", "resources"] {
        let nested: Vec<&&McpMethod> = methods
            .iter()
            .filter(|m| m.path.len() == 2 && m.path[0] == group)
            .collect();
        if nested.is_empty() {
            continue;
        }
        out.push_str(&format!("\n  namespace {group} {{\n"));
        for (i, m) in nested.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            push_block(&mut out, server, m, "    ");
        }
        out.push_str("  }\n");
    }
    out.push('}');
    out
}

fn push_block(out: &mut String, server: &McpServer, m: &McpMethod, indent: &str) {
    let block = tool_block(m);
    let block = if block.len() > MAX_TOOL_BLOCK_BYTES {
        fallback_block(server, m)
    } else {
        block
    };
    for line in block.lines() {
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
}

fn fallback_block(server: &McpServer, m: &McpMethod) -> String {
    let name = m.path.last().map(String::as_str).unwrap_or("tool");
    format!(
        "/** Declaration too large to show; call MCP.{}.$api({}, {{ schema: true }}) for the schema. */\nfunction {name}(\n  input?: Record<string, unknown>\n): Promise<{}>;",
        server.identifier,
        json_string(&m.method),
        m.operation.result_type()
    )
}

/// Escapes a comment line: `*/` becomes `*\/` so untrusted text cannot close the comment.
fn escape_comment(s: &str) -> String {
    s.replace("*/", "*\\/")
}

fn cut_chars(s: &str, max: usize) -> String {
    if utf16_len(s) <= max {
        return s.to_string();
    }
    let mut units = 0;
    let mut out = String::new();
    for c in s.chars() {
        units += c.len_utf16();
        if units > max - 1 {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// Description lines: split on newlines, trimmed, blanks dropped, at most `max`, each cut.
fn doc_lines(text: &str, max: usize) -> Vec<String> {
    text.split('\n')
        .map(js_trim)
        .filter(|l| !l.is_empty())
        .take(max)
        .map(|l| cut_chars(l, MAX_DOC_LINE_CHARS))
        .collect()
}

struct Param<'a> {
    name: &'a str,
    required: bool,
    ty: String,
    description: String,
    default: Option<String>,
}

fn prop_name(name: &str) -> String {
    if is_identifier(name) {
        name.to_string()
    } else {
        json_string(name)
    }
}

/// `JSON.stringify(value)`, with JavaScript number formatting.
fn js_json(v: &Value) -> String {
    match v {
        Value::Number(n) => js_number(n),
        Value::String(s) => json_string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(js_json).collect::<Vec<_>>().join(",")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}:{}", json_string(k), js_json(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

fn tool_block(m: &McpMethod) -> String {
    let schema = m.parameters.as_ref();
    let props = schema_properties(schema);
    let required = schema_required(schema);
    // Names: required keys first (in `required` order), then the remaining properties.
    let mut names: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let empty = Map::new();
    let props = props.unwrap_or(&empty);
    let total = {
        let mut n = 0usize;
        for k in required
            .iter()
            .copied()
            .chain(props.keys().map(String::as_str))
        {
            if seen.insert(k) {
                n += 1;
                if names.len() < MAX_PARAMS && utf16_len(k) <= MAX_NAME_CHARS {
                    names.push(k);
                }
            }
        }
        n
    };
    let omitted = total - names.len();
    let mut params: Vec<Param> = names
        .into_iter()
        .map(|name| {
            let descriptor = props.get(name);
            let default = descriptor
                .and_then(|d| d.get("default"))
                .map(js_json)
                .filter(|d| utf16_len(d) <= MAX_DEFAULT_CHARS);
            let has_default = descriptor.and_then(|d| d.get("default")).is_some();
            let mut nodes = 0usize;
            let ty = match descriptor {
                Some(d) => schema_type(d, 1, &mut nodes),
                None => "unknown".to_string(),
            };
            let ty = if utf16_len(&ty) > MAX_TYPE_CHARS {
                "unknown".to_string()
            } else {
                ty
            };
            Param {
                name,
                required: required.contains(&name) && !has_default,
                ty,
                description: descriptor
                    .and_then(|d| d.get("description"))
                    .and_then(Value::as_str)
                    .map(|d| doc_lines(d, MAX_DOC_LINES).join(" "))
                    .unwrap_or_default(),
                default,
            }
        })
        .collect();
    // Required first (stable).
    params.sort_by_key(|p| !p.required);

    let mut lines: Vec<String> = Vec::new();
    let summary = doc_lines(&m.description, MAX_DOC_LINES);
    let described: Vec<&Param> = params
        .iter()
        .filter(|p| !p.description.is_empty())
        .collect();
    if !summary.is_empty() || !described.is_empty() {
        lines.push("/**".into());
        for l in &summary {
            lines.push(format!(" * {}", escape_comment(l)));
        }
        if !summary.is_empty() && !described.is_empty() {
            lines.push(" *".into());
        }
        for p in &described {
            lines.push(format!(
                " * {}",
                escape_comment(&format!(
                    "@param {}{} {}",
                    p.name,
                    if p.required { "" } else { "?" },
                    p.description
                ))
            ));
        }
        lines.push(" */".into());
    }
    let name = m.path.last().map(String::as_str).unwrap_or("tool");
    lines.push(format!("function {name}("));
    if params.is_empty() && omitted == 0 {
        lines.push("  input?: Record<string, never>".into());
    } else {
        let optional = if params.iter().any(|p| p.required) {
            ""
        } else {
            "?"
        };
        lines.push(format!("  input{optional}: {{"));
        for p in &params {
            let mut comment = p.description.clone();
            if let Some(d) = &p.default {
                if !comment.is_empty() {
                    comment.push(' ');
                }
                comment.push_str(&format!("Default: {d}."));
            }
            if !comment.is_empty() {
                lines.push(format!("    /** {} */", escape_comment(&comment)));
            }
            lines.push(format!(
                "    {}{}: {};",
                prop_name(p.name),
                if p.required { "" } else { "?" },
                p.ty
            ));
        }
        if omitted > 0 {
            lines.push(format!(
                "    [key: string]: unknown; // {omitted} more parameters omitted"
            ));
        }
        lines.push("  }".into());
    }
    lines.push(format!("): Promise<{}>;", m.operation.result_type()));
    lines.join("\n")
}

/// The §7.4 type of a schema: enums of up to 16 primitive values → JSON literals; `oneOf` /
/// `anyOf` of up to 8 → a union; `number`/`integer` → `number`; `string`, `boolean`, `null`;
/// arrays → `Array<T>`; objects → `{ k: T; k2?: U }`; everything else (including `$ref`, which
/// is never followed) → `unknown`. Depth and node budgets keep it bounded.
fn schema_type(schema: &Value, depth: usize, nodes: &mut usize) -> String {
    *nodes += 1;
    if *nodes > MAX_TYPE_NODES || depth > MAX_TYPE_DEPTH {
        return "unknown".into();
    }
    let Some(obj) = schema.as_object() else {
        return "unknown".into();
    };
    if obj.contains_key("$ref") {
        return "unknown".into();
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        if !values.is_empty()
            && values.len() <= 16
            && values.iter().all(|v| !v.is_array() && !v.is_object())
        {
            return union(values.iter().map(js_json).collect());
        }
    }
    if let Some(c) = obj.get("const") {
        if !c.is_array() && !c.is_object() {
            return js_json(c);
        }
    }
    let members = obj
        .get("oneOf")
        .and_then(Value::as_array)
        .or_else(|| obj.get("anyOf").and_then(Value::as_array));
    if let Some(members) = members {
        if !members.is_empty() && members.len() <= 8 {
            return union(
                members
                    .iter()
                    .map(|m| schema_type(m, depth + 1, nodes))
                    .collect(),
            );
        }
    }
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).take(8).collect(),
        _ if obj.contains_key("properties") => vec!["object"],
        _ => vec![],
    };
    let mut rendered: Vec<String> = types
        .into_iter()
        .map(|t| match t {
            "integer" | "number" => "number".to_string(),
            "string" | "boolean" | "null" => t.to_string(),
            "array" => format!(
                "Array<{}>",
                obj.get("items")
                    .map(|i| schema_type(i, depth + 1, nodes))
                    .unwrap_or_else(|| "unknown".into())
            ),
            "object" => object_type(obj, depth, nodes),
            _ => "unknown".to_string(),
        })
        .collect();
    if obj.get("nullable") == Some(&Value::Bool(true)) {
        rendered.push("null".into());
    }
    if rendered.is_empty() {
        return "unknown".into();
    }
    union(rendered)
}

fn union(mut members: Vec<String>) -> String {
    let mut seen = HashSet::new();
    members.retain(|m| seen.insert(m.clone()));
    if members.iter().any(|m| m == "unknown") {
        return "unknown".into();
    }
    members.join(" | ")
}

fn object_type(obj: &Map<String, Value>, depth: usize, nodes: &mut usize) -> String {
    let Some(props) = obj.get("properties").and_then(Value::as_object) else {
        return "Record<string, unknown>".into();
    };
    if props.is_empty() {
        return "Record<string, unknown>".into();
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    let mut cut = false;
    for (k, v) in props {
        if fields.len() >= MAX_NESTED_PROPERTIES || utf16_len(k) > MAX_NAME_CHARS {
            cut = true;
            continue;
        }
        if *nodes > MAX_TYPE_NODES {
            cut = true;
            break;
        }
        let ty = schema_type(v, depth + 1, nodes);
        let opt = if required.contains(&k.as_str()) {
            ""
        } else {
            "?"
        };
        fields.push(format!("{}{opt}: {ty}", prop_name(k)));
    }
    if cut {
        fields.push("[key: string]: unknown".into());
    }
    format!("{{ {} }}", fields.join("; "))
}
