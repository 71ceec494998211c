//! The `.d.ts` declarations of the `API` files and `$api` headers (docs/contract/mcp.md#s7-4): the root
//! declaration, server declarations, and one tool block per method (JSDoc from the untrusted
//! descriptions, one `input` object type, the operation's result type). Parameter types are
//! rendered by [`crate::schema_ts`] under [`DECLARATION_RULES`].

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{schema_properties, schema_required, McpMethod, McpNamespace, McpServer};
use crate::js::{cut_utf16, is_identifier, js_trim, json_string, json_stringify, utf16_len};
use crate::schema_ts::{render, KeyOrder, Keywords, ObjectRules, Rules, UNKNOWN};

/// Most description lines in a JSDoc block (docs/contract/mcp.md#s7-4 "at most 12 trimmed lines").
///
/// The other `MAX_*` constants are the bounds of the `.d.ts` renderer (docs/contract/mcp.md#s7-4 asks for bounded
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
/// Most values of an `enum` rendered as a literal union (docs/contract/mcp.md#s7-4 "an enum of up to 16 values");
/// a larger enum renders its `type`.
pub const MAX_TYPE_ENUM_VALUES: usize = 16;
/// Most `oneOf`/`anyOf` members rendered as a union (docs/contract/mcp.md#s7-4 "of up to 8"), and most string
/// members of `type: [...]`.
pub const MAX_TYPE_UNION_MEMBERS: usize = 8;

/// The [`schema_ts`](crate::schema_ts) rules of a parameter type: [`Keywords::Lenient`],
/// properties in schema order, `[key: string]: unknown` for cut properties,
/// `Record<string, unknown>` for an object without properties, depth [`MAX_TYPE_DEPTH`] (a
/// parameter is at depth 1), [`MAX_TYPE_NODES`] nodes, [`MAX_NESTED_PROPERTIES`] properties,
/// [`MAX_TYPE_ENUM_VALUES`] enum values and [`MAX_TYPE_UNION_MEMBERS`] union members.
pub const DECLARATION_RULES: Rules = Rules {
    max_depth: MAX_TYPE_DEPTH,
    max_nodes: MAX_TYPE_NODES,
    max_literals: MAX_TYPE_ENUM_VALUES,
    max_literal_chars: None,
    max_union_members: MAX_TYPE_UNION_MEMBERS,
    keywords: Keywords::Lenient,
    objects: ObjectRules {
        max_properties: MAX_NESTED_PROPERTIES,
        max_name_chars: MAX_NAME_CHARS,
        order: KeyOrder::SchemaOrder,
        more: "[key: string]: unknown",
        open_shows_more: false,
        without_properties: Some("Record<string, unknown>"),
    },
};

impl McpNamespace {
    /// The root declaration (docs/contract/mcp.md#s7-4), also `MCP.$api().header`:
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
}

const SERVER_PREAMBLE: &str =
    "type McpApiHeader = { header: string; tools?: unknown[]; schemas?: Record<string, unknown> };

type McpToolResult = { content: unknown[]; structuredContent?: unknown; isError?: boolean; _meta?: Record<string, unknown>; [key: string]: unknown };
type McpResourcesListResult = { resources: unknown[]; nextCursor?: string };
type McpResourcesReadResult = { contents: unknown[] };
type McpPromptsListResult = { prompts: unknown[]; nextCursor?: string };
type McpPromptsGetResult = { messages: unknown[]; description?: string };
";

/// The server declaration (docs/contract/mcp.md#s7-4) for `methods` of `server` (all of them for the file, the
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
        push_block(&mut out, server, m, "  ", Layout::Contract);
    }
    // The whole server (the file, `$api()` without a selector) also says what is left out.
    if methods.len() == server.methods.len() && !server.left_out.is_empty() {
        out.push('\n');
        for (tool, reason) in server.left_out.iter().take(MAX_PARAMS) {
            out.push_str(&format!(
                "  // Left out: {}: {reason}.\n",
                line_comment_safe(&json_string(&cut_utf16(tool, MAX_NAME_CHARS)))
            ));
        }
        if server.left_out.len() > MAX_PARAMS {
            out.push_str(&format!(
                "  // Left out: {} more tools.\n",
                server.left_out.len() - MAX_PARAMS
            ));
        }
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
            push_block(&mut out, server, m, "    ", Layout::Contract);
        }
        out.push_str("  }\n");
    }
    out.push('}');
    out
}

/// One method's declaration alone (the per-tool file `mcp/<identifier>/<method>.d.ts`,
/// docs/mcp.md "One tool's declaration"): `declare namespace MCP.<identifier> {`
/// (`MCP.<identifier>.<group>` for `resources.*` and `prompts.*`) around the method's **lean**
/// block, without the server file's preamble of shared result types (`McpToolResult` and the
/// rest are declared in `mcp/<identifier>.d.ts`).
///
/// The lean block carries what a direct `tools/list` entry shows a model (the description, each
/// parameter's name, type, optionality, description and default) plus the call form, and costs
/// at most about that entry's tokens: the description is one `/** … */` comment (one line when it
/// has one line), each parameter's description is said once (on the parameter, not again as an
/// `@param`), `input: {` opens on the `function` line and `}): Promise<…>;` closes it. The
/// server's hints and declared `outputSchema`, which a `tools/list` entry shown to a model does
/// not carry either, stay in the server file and in `$api(<method>, { schema: true })`.
///
/// ```text
/// declare namespace MCP.memory {
///   /** Delete multiple entities and their associated relations from the knowledge graph */
///   function deleteEntities(input: {
///     /** An array of entity names to delete */
///     entityNames: Array<string>;
///   }): Promise<McpToolResult>;
/// }
/// ```
pub fn tool_declaration(server: &McpServer, m: &McpMethod) -> String {
    let scope = match m.path.as_slice() {
        [group, _] => format!("{}.{group}", server.identifier),
        _ => server.identifier.clone(),
    };
    let mut out = format!("declare namespace MCP.{scope} {{\n");
    push_block(&mut out, server, m, "  ", Layout::Lean);
    out.push('}');
    out
}

/// How a tool block is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// The contract's block (docs/contract/mcp.md#s7-4 "A tool block"): the server file and
    /// `$api` headers.
    Contract,
    /// The per-tool file's block ([`tool_declaration`]).
    Lean,
}

fn push_block(out: &mut String, server: &McpServer, m: &McpMethod, indent: &str, layout: Layout) {
    let block = tool_block(m, layout);
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

/// A JSON string literal made safe for a `//` comment: JSON escapes `\n` and `\r`, but
/// JavaScript also ends a line at U+2028 and U+2029.
fn line_comment_safe(s: &str) -> String {
    s.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The documentation lines of a tool's declarations (hints, declared output), unescaped.
fn docs_lines(m: &McpMethod) -> Vec<String> {
    let Some(docs) = &m.docs else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let hints = docs.hints();
    if !hints.is_empty() {
        let hints: Vec<String> = hints.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        lines.push(format!("Server hints (unverified): {}.", hints.join(", ")));
    }
    if let Some(schema) = &docs.output_schema {
        let ty = render(schema, 1, usize::MAX, &DECLARATION_RULES).text();
        let ty = if utf16_len(&ty) > MAX_TYPE_CHARS {
            "too large to show; MCP.$api shows it with { schema: true }".to_string()
        } else {
            ty
        };
        lines.push(format!("Declared structuredContent (unverified): {ty}"));
    }
    lines
}

/// Escapes a comment line: `*/` becomes `*\/` so untrusted text cannot close the comment.
fn escape_comment(s: &str) -> String {
    s.replace("*/", "*\\/")
}

/// Description lines: split on newlines, trimmed, blanks dropped, at most `max`, each cut.
fn doc_lines(text: &str, max: usize) -> Vec<String> {
    text.split('\n')
        .map(js_trim)
        .filter(|l| !l.is_empty())
        .take(max)
        .map(|l| cut_utf16(l, MAX_DOC_LINE_CHARS))
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

fn tool_block(m: &McpMethod, layout: Layout) -> String {
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
                .map(json_stringify)
                .filter(|d| utf16_len(d) <= MAX_DEFAULT_CHARS);
            let has_default = descriptor.and_then(|d| d.get("default")).is_some();
            let ty = match descriptor {
                Some(d) => render(d, 1, usize::MAX, &DECLARATION_RULES).text(),
                None => UNKNOWN.to_string(),
            };
            let ty = if utf16_len(&ty) > MAX_TYPE_CHARS {
                UNKNOWN.to_string()
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
    let name = m.path.last().map(String::as_str).unwrap_or("tool");
    let summary = doc_lines(&m.description, MAX_DOC_LINES);
    let lines = match layout {
        Layout::Contract => {
            let mut summary = summary;
            summary.extend(docs_lines(m));
            contract_block(name, &summary, &params, omitted, m.operation.result_type())
        }
        Layout::Lean => lean_block(name, &summary, &params, omitted, m.operation.result_type()),
    };
    lines.join("\n")
}

/// A parameter's comment: its description, then `Default: <json>.` when it has a shown default.
fn param_comment(p: &Param) -> String {
    let mut comment = p.description.clone();
    if let Some(d) = &p.default {
        if !comment.is_empty() {
            comment.push(' ');
        }
        comment.push_str(&format!("Default: {d}."));
    }
    comment
}

/// `name: T;` or `name?: T;`.
fn param_line(p: &Param) -> String {
    format!(
        "{}{}: {};",
        prop_name(p.name),
        if p.required { "" } else { "?" },
        p.ty
    )
}

/// `input` when a parameter is required, else `input?`.
fn input_name(params: &[Param]) -> &'static str {
    if params.iter().any(|p| p.required) {
        "input"
    } else {
        "input?"
    }
}

/// The contract's tool block (docs/contract/mcp.md#s7-4): JSDoc with the description lines and
/// an `@param` per described parameter, then the signature with one parameter per line, each
/// after its own `/** … */` comment.
fn contract_block(
    name: &str,
    summary: &[String],
    params: &[Param],
    omitted: usize,
    result: &str,
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let described: Vec<&Param> = params
        .iter()
        .filter(|p| !p.description.is_empty())
        .collect();
    if !summary.is_empty() || !described.is_empty() {
        lines.push("/**".into());
        for l in summary {
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
    lines.push(format!("function {name}("));
    if params.is_empty() && omitted == 0 {
        lines.push("  input?: Record<string, never>".into());
    } else {
        lines.push(format!("  {}: {{", input_name(params)));
        for p in params {
            let comment = param_comment(p);
            if !comment.is_empty() {
                lines.push(format!("    /** {} */", escape_comment(&comment)));
            }
            lines.push(format!("    {}", param_line(p)));
        }
        if omitted > 0 {
            lines.push(format!(
                "    [key: string]: unknown; // {omitted} more parameters omitted"
            ));
        }
        lines.push("  }".into());
    }
    lines.push(format!("): Promise<{result}>;"));
    lines
}

/// The per-tool file's block ([`tool_declaration`]): the description as one comment
/// (`/** line */` for one line), then `function <name>(input: {`, each parameter after its own
/// `/** <description> Default: <json>. */` comment when it has one, and `}): Promise<…>;`. No
/// `@param` lines: each description is said once.
fn lean_block(
    name: &str,
    summary: &[String],
    params: &[Param],
    omitted: usize,
    result: &str,
) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    match summary {
        [] => {}
        [one] => lines.push(format!("/** {} */", escape_comment(one))),
        many => {
            lines.push("/**".into());
            for l in many {
                lines.push(format!(" * {}", escape_comment(l)));
            }
            lines.push(" */".into());
        }
    }
    if params.is_empty() && omitted == 0 {
        lines.push(format!(
            "function {name}(input?: Record<string, never>): Promise<{result}>;"
        ));
        return lines;
    }
    lines.push(format!("function {name}({}: {{", input_name(params)));
    for p in params {
        let comment = param_comment(p);
        if !comment.is_empty() {
            lines.push(format!("  /** {} */", escape_comment(&comment)));
        }
        lines.push(format!("  {}", param_line(p)));
    }
    if omitted > 0 {
        lines.push(format!(
            "  [key: string]: unknown; // {omitted} more parameters omitted"
        ));
    }
    lines.push(format!("}}): Promise<{result}>;"));
    lines
}
