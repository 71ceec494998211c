//! What the `codemode catalog` subcommand prints (issue 4, "In the CLI"): plugin authors feed it a
//! tools file and see exactly what the model and the guest will see.

use serde_json::Value;

use crate::catalog::{Catalog, CatalogError, SearchLimits};
use crate::spec::ToolSpec;

/// Why a tools file could not be turned into a catalog.
#[derive(Debug, thiserror::Error)]
pub enum ToolsFileError {
    /// Not a JSON array of tool specs (unknown keys are rejected to catch typos).
    #[error("tools file is not a JSON array of tool specs: {0}")]
    Parse(#[from] serde_json::Error),
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

/// Parses a tools file: a JSON array of [`ToolSpec`] objects,
/// `{name, label?, description, parameters?, outputSchema?, origin?, catalogMode?, allowed?,
/// control?, channel?}`, `origin` defaulting to `{"kind": "core"}`.
pub fn parse_tools_file(text: &str) -> Result<Vec<ToolSpec>, ToolsFileError> {
    Ok(serde_json::from_str(text)?)
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
