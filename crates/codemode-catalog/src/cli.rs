//! What the `codemode catalog` subcommand prints (issue 4, "In the CLI"): plugin authors feed it a
//! tools file and see exactly what the model and the guest will see.

use serde_json::{Map, Value};

use crate::catalog::{Catalog, CatalogError, Entry, SearchLimits};
use crate::contract::OutputContract;
use crate::entry::Source;
use crate::spec::ToolSpec;

/// The keys a tools-file element may carry for `codemode exec --tools` / `session --tools`
/// (what a static tool's call returns, and after how long): `result`, `error`, `echo`,
/// `resultByAction`, `delayMs`. One tools-file format serves every command: where a call never
/// runs (`codemode catalog`, [`parse_tools_file`]) these keys are accepted and ignored.
pub const BEHAVIOUR_KEYS: [&str; 5] = ["result", "error", "echo", "resultByAction", "delayMs"];

/// Why a tools file could not be turned into a catalog.
#[derive(Debug, thiserror::Error)]
pub enum ToolsFileError {
    /// Not JSON, or not an array.
    #[error("tools file is not a JSON array of tool specs: {0}")]
    Parse(#[from] serde_json::Error),
    /// The root is valid JSON but not an array (`got an object`, …).
    #[error("tools file is not a JSON array of tool specs: got {0}")]
    NotArray(&'static str),
    /// One element is not a tool spec; the message names it by 0-based position and name, as
    /// [`parse_tool_entry`] does (unknown keys are rejected to catch typos).
    #[error("tools file: {0}")]
    Entry(String),
    /// The specs parsed but do not form a catalog (e.g. duplicate ids).
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// One view of the catalog, selected by a CLI flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogView {
    /// `--json`: `ALL_TOOLS`, the guest-visible compact entries, as pretty JSON.
    Json,
    /// `--index`: the quick index of the `exec` description (empty when there is none).
    Index,
    /// `--index --explain`: the quick index, then for every core or plugin tool whose output
    /// hint is `?` the rule that made it unknown ([`unknown_output_reason`]).
    IndexExplained,
    /// `--search QUERY [--limit N]`: `tools.search(QUERY, {limit: N})` as pretty JSON. `N` is
    /// read as JSON (so `--limit 2.5` or `--limit 0` shows the guest's error, and a non-number
    /// falls back to the default limit, as in the guest).
    Search {
        /// The query string.
        query: String,
        /// The raw `--limit` argument.
        limit: Option<String>,
    },
    /// `--describe ID`: `tools.describe(ID)` as pretty JSON, or the exact lookup error.
    Describe {
        /// Id or name, as the guest would pass it.
        id: String,
    },
}

/// A short name for a JSON value's type, for error messages (`an object`, `a number`, …).
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How an error names element `index` of a tools file: `tool #<index>`, plus ` ("<name>")` when
/// it has a string `name`.
pub fn tool_label(index: usize, entry: &Map<String, Value>) -> String {
    match entry.get("name").and_then(Value::as_str) {
        Some(name) => format!("tool #{index} ({name:?})"),
        None => format!("tool #{index}"),
    }
}

/// Parses element `index` of a tools file (an object whose [`BEHAVIOUR_KEYS`] the caller has
/// already removed) into a [`ToolSpec`]: `{name, label?, description?, parameters?,
/// outputSchema?, origin?, catalogMode?, allowed?, control?, channel?}`, `description`
/// defaulting to `""` and `origin` to `{"kind": "core"}`. The error is one line naming the
/// element ([`tool_label`]); an unknown key lists the accepted ones, behaviour keys included.
pub fn parse_tool_entry(index: usize, mut entry: Map<String, Value>) -> Result<ToolSpec, String> {
    let who = tool_label(index, &entry);
    entry
        .entry("description")
        .or_insert_with(|| Value::String(String::new()));
    serde_json::from_value(Value::Object(entry)).map_err(|e| {
        let message = e.to_string();
        if message.starts_with("unknown field") {
            let keys: Vec<String> = BEHAVIOUR_KEYS.iter().map(|k| format!("`{k}`")).collect();
            format!("{who}: {message}, or one of {}", keys.join(", "))
        } else {
            format!("{who}: {message}")
        }
    })
}

/// Parses a tools file: a JSON array of tool specs in the one format every command reads
/// ([`parse_tool_entry`]); the static-tool [`BEHAVIOUR_KEYS`] (`result`, `error`, `echo`,
/// `resultByAction`, `delayMs`) are accepted and ignored, so the file `codemode exec --tools`
/// runs is also the file `codemode catalog --tools` shows.
pub fn parse_tools_file(text: &str) -> Result<Vec<ToolSpec>, ToolsFileError> {
    let root: Value = serde_json::from_str(text)?;
    let Value::Array(items) = root else {
        return Err(ToolsFileError::NotArray(json_kind(&root)));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Object(mut entry) = item else {
                return Err(ToolsFileError::Entry(format!(
                    "tool #{index}: expected an object, got {}",
                    json_kind(&item)
                )));
            };
            for key in BEHAVIOUR_KEYS {
                entry.remove(key);
            }
            parse_tool_entry(index, entry).map_err(ToolsFileError::Entry)
        })
        .collect()
}

/// Parses a tools file and builds its catalog.
pub fn load_tools_file(text: &str, limits: &SearchLimits) -> Result<Catalog, ToolsFileError> {
    Ok(Catalog::build(parse_tools_file(text)?, limits)?)
}

fn pretty(value: &impl serde::Serialize) -> String {
    // Serialising plain data (strings, numbers, `Value`s) cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// `ALL_TOOLS` as pretty JSON.
pub fn render_entries_json(catalog: &Catalog) -> String {
    pretty(&catalog.all_tools())
}

/// The quick index, or an empty string when the catalog has no core or plugin tool.
pub fn render_index(catalog: &Catalog) -> String {
    catalog.quick_index().unwrap_or_default().to_string()
}

/// Why `entry`'s output hint is `?` (docs/contract/catalog.md#s3-2), or `None` when it has one:
///
/// - an MCP or client tool: `its output schema is not trusted (MCP and client tools never get
///   output hints)`;
/// - no schema: `it declares no outputSchema`;
/// - a schema that does not compile: `its outputSchema is not valid JSON Schema (the tool cannot
///   be called until it is fixed)`;
/// - a schema without a complete compact form: `its outputSchema has no complete compact form:
///   …` listing the rules of [`crate::output_hint`] (an open object, an unsupported keyword, a
///   mixed union, the hint bounds).
pub fn unknown_output_reason(entry: &Entry) -> Option<&'static str> {
    if entry.compact().output.is_some() {
        return None;
    }
    Some(if entry.source() != Source::Openclaw {
        "its output schema is not trusted (MCP and client tools never get output hints)"
    } else if entry.output_schema().is_none() {
        "it declares no outputSchema"
    } else if matches!(entry.contract(), OutputContract::Invalid) {
        "its outputSchema is not valid JSON Schema (the tool cannot be called until it is fixed)"
    } else {
        "its outputSchema has no complete compact form: an object without \"additionalProperties\": false, an unsupported keyword ($ref, allOf, patternProperties, if, prefixItems, ...), a union mixed with a base shape, or more depth, properties, literal values or characters than a hint may show"
    })
}

/// The quick index, then a blank line, the line ``Why `-> ?`:`` and one line
/// ``- "<id>": <reason>`` per core or plugin tool whose output is unknown, sorted by id ([`unknown_output_reason`];
/// the index alone when every output is known).
pub fn render_index_explained(catalog: &Catalog) -> String {
    let mut text = render_index(catalog);
    let mut reasons: Vec<(&str, &str)> = catalog
        .guest_entries()
        .filter(|entry| entry.source() == Source::Openclaw)
        .filter_map(|entry| Some((entry.id(), unknown_output_reason(entry)?)))
        .collect();
    reasons.sort_by(|a, b| a.0.cmp(b.0));
    if !reasons.is_empty() {
        text.push_str("\n\nWhy `-> ?`:");
        for (id, reason) in reasons {
            text.push_str(&format!("\n- {}: {reason}", serde_json::Value::from(id)));
        }
    }
    text
}

/// Search hits as pretty JSON, or the guest's exact error message.
pub fn render_search(
    catalog: &Catalog,
    query: &str,
    limit: Option<&str>,
) -> Result<String, String> {
    let limit: Option<Value> =
        limit.map(|raw| serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.into())));
    catalog
        .search(&Value::String(query.into()), limit.as_ref())
        .map(|hits| pretty(&hits))
        .map_err(String::from)
}

/// The described entry as pretty JSON, or the exact lookup error (unknown or ambiguous).
pub fn render_describe(catalog: &Catalog, id: &str) -> Result<String, String> {
    catalog
        .describe(id)
        .map(|entry| pretty(&entry))
        .map_err(String::from)
}

/// Renders `view` of `catalog`: `Ok(text)` to print on stdout, `Err(message)` (a guest error
/// message) to print on stderr with a failing exit status.
pub fn render_view(catalog: &Catalog, view: &CatalogView) -> Result<String, String> {
    match view {
        CatalogView::Json => Ok(render_entries_json(catalog)),
        CatalogView::Index => Ok(render_index(catalog)),
        CatalogView::IndexExplained => Ok(render_index_explained(catalog)),
        CatalogView::Search { query, limit } => render_search(catalog, query, limit.as_deref()),
        CatalogView::Describe { id } => render_describe(catalog, id),
    }
}

/// The whole subcommand: parse `tools_json`, build with `limits`, render `view`. Every failure
/// (bad file, catalog error, guest error) comes back as the message to print.
pub fn run_catalog_command(
    tools_json: &str,
    limits: &SearchLimits,
    view: &CatalogView,
) -> Result<String, String> {
    let catalog = load_tools_file(tools_json, limits).map_err(|e| e.to_string())?;
    render_view(&catalog, view)
}
