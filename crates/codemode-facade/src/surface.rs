//! The model-visible surface (docs/contract/surface.md#s2-1 to #s2-5; docs/contract/surface.md#s2-1,
//! docs/contract/surface.md#s2-2, docs/contract/surface.md#s2-3, docs/contract/surface.md#tool-search, docs/contract/catalog.md#names).
//!
//! With code mode engaged the model sees exactly two control tools, `exec` ([`exec_tool`]) and
//! `wait` ([`wait_tool`]), plus the retained direct tools; everything else is reachable only
//! through the run's catalog from guest JavaScript. [`model_surface`] splits the host's effective
//! tools into the visible names and the catalog's specs, so a host can build both the provider
//! payload and a [`crate::RunEnv`] whose `visible_tools` is what the model actually sees
//! (docs/contract/decisions.md#d3).
//!
//! ```
//! use codemode_catalog::{CatalogMode, SearchLimits, ToolSpec};
//! use codemode_facade::{exec_tool, model_surface, wait_tool};
//!
//! let surface = model_surface(
//!     vec![
//!         ToolSpec::core("exec", "Run a shell command."),
//!         ToolSpec::core("computer", "Use the computer.").with_catalog_mode(CatalogMode::DirectOnly),
//!         ToolSpec::plugin("fake-code-mode", "fake_create_ticket", "Create a ticket."),
//!     ],
//!     &[],
//! );
//! assert_eq!(surface.visible_tools, ["exec", "wait", "computer"]);
//! let catalog = surface.build_catalog(&SearchLimits::default()).unwrap();
//! assert!(catalog.entry("openclaw:core:exec").is_some());
//! let exec = exec_tool(Some(&catalog), None);
//! assert!(exec.description.contains("\"openclaw:fake-code-mode:fake_create_ticket\""));
//! assert_eq!(wait_tool().hide_from_channel_progress, Some(true));
//! ```

use codemode_catalog::{Catalog, CatalogError, CatalogMode, SearchLimits, ToolOrigin, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The name of the code-mode `exec` tool (docs/contract/surface.md#s2-2).
pub const EXEC_TOOL_NAME: &str = "exec";
/// The name of the code-mode `wait` tool (docs/contract/surface.md#s2-3).
pub const WAIT_TOOL_NAME: &str = "wait";

/// Part 1 of the `exec` description, always present (docs/contract/surface.md#s2-4).
pub const EXEC_DESCRIPTION_BASE: &str = "Run JavaScript or TypeScript in OpenClaw code mode. Use `return` to pass the final value back; otherwise the result is `null`. Quick-index arrows show trusted declared output hints; `-> ?` means never guess result field names. For declared fields, process them in the first exec; do not spend another exec inspecting them. Perform dependent reads, checks, and follow-up calls in order; parallelize independent work only. For an unknown output, including a final dependent call after declared-output calls, return the raw tool value unchanged; do not wrap it in the requested answer shape or guess fields; filter or map it only in a later exec. Nested calls enforce normal tool policy and approvals. `ALL_TOOLS` is the complete compact catalog. Select exact ids directly or with `tools.search(query: string, options?)`; use `tools.describe(id: string)` only when needed. Never invent or transform a tool id. `tools.callValue(id: string, args?)` returns its JSON value directly; `tools.call(id: string, args?)` preserves `{ tool, result }`. Example: `const hit = ALL_TOOLS.find((entry) => entry.description.includes('weather')) ?? (await tools.search('weather'))[0]; return await tools.callValue(hit.id, {});`. Node.js modules and `require`/`import` are NOT available; use enabled catalog tools allowed by policy for shell, file, network, or external actions.";
/// Part 2 of the `exec` description (API guidance): only when the catalog is unknown or has an
/// MCP entry (docs/contract/surface.md#s2-4).
pub const EXEC_DESCRIPTION_API: &str =
    " Read TypeScript-style declaration files with `API.list(prefix?)` and `API.read(path)`.";
/// Part 3 of the `exec` description (MCP guidance): only when the catalog is unknown or has an
/// MCP entry (docs/contract/surface.md#s2-4).
pub const EXEC_DESCRIPTION_MCP: &str = " MCP tools are available only through the `MCP` namespace.";
/// Part 4 of the `exec` description, the `nodes` line, exactly once when the catalog is unknown
/// or has `openclaw:core:nodes` ([`crate::NODES_TOOL_ID`]; docs/contract/surface.md#s2-4,
/// docs/contract/nodes.md#s8).
pub const EXEC_DESCRIPTION_NODES: &str =
    "\n- nodes: paired Gateway nodes; nodes.list(), (await nodes.get(id)).invoke(command, params)\n";
/// Part 5 of the `exec` description (language guidance), always present (docs/contract/surface.md#s2-4).
pub const EXEC_DESCRIPTION_LANGUAGE: &str = concat!(
    " The `language` field accepts only \"javascript\" or \"typescript\"; do not pass \"bash\", \"shell\", or other values.",
    " The `code` field contains JavaScript or TypeScript, never a shell command. ",
    "For shell or file operations, call the exact catalog tool from guest JavaScript; do not retry failed shell source.",
);

/// Description of `exec`'s `code` property (docs/contract/surface.md#s2-2): under 320 characters, with the
/// four required phrases and no mention of `API` files or MCP globals (docs/contract/examples.md#e9).
pub const EXEC_CODE_DESCRIPTION: &str = concat!(
    "JavaScript or TypeScript source for one workflow. ",
    "Select exact ids from `ALL_TOOLS` or `tools.search`; never invent ids. ",
    "`tools.search` takes a query string, not an object. ",
    "Run dependent steps in order and never put dependent calls in Promise.all; return the final value. ",
    "Node built-in modules are not available.",
);
/// Description of `exec`'s `command` property (docs/contract/surface.md#s2-2).
pub const EXEC_COMMAND_DESCRIPTION: &str = concat!(
    "Alias for code, provided for exec-compatible hook policies. ",
    "Not a shell command: it holds the same JavaScript or TypeScript source as code.",
);
/// Description of `exec`'s `language` property (docs/contract/surface.md#s2-2).
pub const EXEC_LANGUAGE_DESCRIPTION: &str =
    "Source language. Must be \"javascript\" or \"typescript\". Defaults to javascript.";
/// Description of `exec`'s `restartSafe` property (docs/contract/surface.md#s2-2).
pub const EXEC_RESTART_SAFE_DESCRIPTION: &str = concat!(
    "Set true only when every catalog call is explicitly replay-safe and OpenClaw may reconstruct ",
    "the work after a gateway restart. Leave unset for ordinary calls; true rejects unmarked, ",
    "side-effecting, or namespace tool calls.",
);
/// The values of `exec`'s `language` enum, in schema order (docs/contract/surface.md#s2-2).
pub const EXEC_LANGUAGES: [&str; 2] = ["javascript", "typescript"];

/// The description of the `wait` tool (docs/contract/surface.md#s2-3).
pub const WAIT_DESCRIPTION: &str = "Resume a suspended OpenClaw code mode run returned by exec.";
/// Description of `wait`'s `runId` property (docs/contract/surface.md#s2-3).
pub const WAIT_RUN_ID_DESCRIPTION: &str = "Code mode run id returned by exec.";

/// A model-visible tool definition as a provider payload carries it.
///
/// JSON (camelCase): `{"name", "description", "parameters", "hideFromChannelProgress"?}`, where
/// `parameters` is a JSON Schema object and `hideFromChannelProgress` is omitted when `None`
/// (the `exec` tool never has it; `wait` has `true`; docs/contract/surface.md#s2-2 to #s2-3, docs/contract/examples.md#e7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The tool name the model calls (`exec` or `wait`).
    pub name: String,
    /// The description shown to the model.
    pub description: String,
    /// The input JSON Schema (`{"type": "object", "properties": {...}, ...}`).
    pub parameters: Value,
    /// Keep the tool's calls out of channel progress updates; `None` means the flag is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hide_from_channel_progress: Option<bool>,
}

/// The `exec` description (docs/contract/surface.md#s2-4): the base paragraph; the API and MCP guidance only
/// when `catalog` is `None` (not known yet) or has an MCP entry; the `nodes` line when `catalog`
/// is `None` or has `openclaw:core:nodes` (the `nodes` global reaches only that tool); the language
/// guidance; then `"\n\n"` + `namespace_prompt` (docs/contract/mcp.md#s7-5) when it is non-empty, and `"\n\n"` + the
/// catalog's quick index (docs/contract/surface.md#s2-5) when there is one.
///
/// With `catalog: None` the description is the "unknown catalog" version: parts 2 and 3 but no
/// prompt and no index, so `namespace_prompt` is ignored; hosts rebuild it once the catalog is
/// known. Tool descriptions never appear (the quick index holds ids and hints only).
pub fn exec_description(catalog: Option<&Catalog>, namespace_prompt: Option<&str>) -> String {
    let mut description = String::from(EXEC_DESCRIPTION_BASE);
    if catalog.is_none_or(Catalog::has_mcp) {
        description.push_str(EXEC_DESCRIPTION_API);
        description.push_str(EXEC_DESCRIPTION_MCP);
    }
    if catalog.is_none_or(|c| c.entry(crate::nodes::NODES_TOOL_ID).is_some()) {
        description.push_str(EXEC_DESCRIPTION_NODES);
    }
    description.push_str(EXEC_DESCRIPTION_LANGUAGE);
    if let Some(catalog) = catalog {
        if let Some(prompt) = namespace_prompt.filter(|p| !p.is_empty()) {
            description.push_str("\n\n");
            description.push_str(prompt);
        }
        if let Some(index) = catalog.quick_index().filter(|i| !i.is_empty()) {
            description.push_str("\n\n");
            description.push_str(index);
        }
    }
    description
}

/// The input schema of `exec` (docs/contract/surface.md#s2-2):
///
/// ```json
/// {"type": "object",
///  "properties": {
///    "code": {"type": "string", "description": EXEC_CODE_DESCRIPTION},
///    "command": {"type": "string", "description": EXEC_COMMAND_DESCRIPTION},
///    "language": {"type": "string", "enum": ["javascript", "typescript"],
///                 "description": EXEC_LANGUAGE_DESCRIPTION},
///    "restartSafe": {"type": "boolean", "description": EXEC_RESTART_SAFE_DESCRIPTION}},
///  "required": ["code"]}
/// ```
///
/// `language` is a flat string enum, never `anyOf`/`oneOf` (some providers reject unions; docs/contract/examples.md#e8).
pub fn exec_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": EXEC_CODE_DESCRIPTION},
            "command": {"type": "string", "description": EXEC_COMMAND_DESCRIPTION},
            "language": {
                "type": "string",
                "enum": EXEC_LANGUAGES,
                "description": EXEC_LANGUAGE_DESCRIPTION,
            },
            "restartSafe": {"type": "boolean", "description": EXEC_RESTART_SAFE_DESCRIPTION},
        },
        "required": ["code"],
    })
}

/// The `exec` tool definition (docs/contract/surface.md#s2-2, docs/contract/surface.md#s2-4): name `exec`, the description of
/// [`exec_description`], the schema of [`exec_parameters`], and no `hideFromChannelProgress`.
///
/// Build it with `catalog: None` before the catalog exists and again once it is known.
pub fn exec_tool(catalog: Option<&Catalog>, namespace_prompt: Option<&str>) -> ToolDefinition {
    ToolDefinition {
        name: EXEC_TOOL_NAME.into(),
        description: exec_description(catalog, namespace_prompt),
        parameters: exec_parameters(),
        hide_from_channel_progress: None,
    }
}

/// The `wait` tool definition (docs/contract/surface.md#s2-3): name `wait`, description
/// [`WAIT_DESCRIPTION`], schema
/// `{"type": "object", "properties": {"runId": {"type": "string", "description": "Code mode run id returned by exec."}}, "required": ["runId"]}`,
/// and `hideFromChannelProgress: true`.
pub fn wait_tool() -> ToolDefinition {
    ToolDefinition {
        name: WAIT_TOOL_NAME.into(),
        description: WAIT_DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "runId": {"type": "string", "description": WAIT_RUN_ID_DESCRIPTION},
            },
            "required": ["runId"],
        }),
        hide_from_channel_progress: Some(true),
    }
}

/// The provider-facing definitions of the two code-mode tools for `catalog`, in order:
/// `[exec, wait]`, where `exec` is [`exec_tool`] with the catalog's MCP namespace prompt
/// ([`codemode_catalog::namespace_prompt`], docs/contract/mcp.md#s7-5) and its quick index, and
/// `wait` is [`wait_tool`]. This is what a host puts in its model request (and what `codemode
/// serve` answers to `tools/list`, `codemode session` to `{"tool": "surface"}` and `codemode
/// catalog --surface` prints); retained direct tools, if the host has any, come after them.
pub fn surface_tools(catalog: &Catalog) -> [ToolDefinition; 2] {
    let prompt = codemode_catalog::namespace_prompt(catalog);
    [exec_tool(Some(catalog), prompt.as_deref()), wait_tool()]
}

/// The model surface of one code-mode run (docs/contract/surface.md#s2-1), from [`model_surface`].
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    /// The tool names the model sees, in order: `exec`, `wait`, then the retained direct tools
    /// in their original order (no duplicates). This is also `RunEnv::visible_tools` and
    /// `telemetry.visibleTools` (docs/contract/decisions.md#d3).
    pub visible_tools: Vec<String>,
    /// The specs that enter the run's catalog, in their original order: every allowed,
    /// non-control, non-direct-only tool, required direct tools included. Build the catalog with
    /// [`Surface::build_catalog`] (or [`Catalog::build`]).
    pub catalog_specs: Vec<ToolSpec>,
}

impl Surface {
    /// Builds the run-scoped catalog from [`Surface::catalog_specs`] (docs/contract/catalog.md#s3-1); the
    /// shell `exec` becomes `openclaw:core:exec`. Errors are [`Catalog::build`]'s.
    pub fn build_catalog(&self, limits: &SearchLimits) -> Result<Catalog, CatalogError> {
        Catalog::build(self.catalog_specs.clone(), limits)
    }
}

/// True for MCP tools: MCP origin, or a plugin tool of plugin `bundle-mcp` (an MCP tool without
/// MCP metadata, docs/contract/catalog.md#s3-1).
fn is_mcp(spec: &ToolSpec) -> bool {
    match &spec.origin {
        ToolOrigin::Mcp { .. } => true,
        ToolOrigin::Plugin { plugin_id, .. } => plugin_id.trim() == "bundle-mcp",
        ToolOrigin::Core | ToolOrigin::Client { .. } => false,
    }
}

/// Splits the host's effective tools into the model-visible names and the catalog
/// (docs/contract/surface.md#s2-1; docs/contract/surface.md#s2-1, docs/contract/surface.md#tool-search, docs/contract/catalog.md#names).
///
/// - Control tools, recognised only by their [`ControlKind`](codemode_catalog::ControlKind)
///   mark (code mode's own `exec`/`wait`, and the Tool Search controls `tool_search_code`,
///   `tool_search`, `tool_describe`, `tool_call`), are dropped from both lists. A tool named
///   `tool_search` without the mark is an ordinary tool.
/// - Tools the policy denies (`allowed: false`) are dropped from both.
/// - Direct-only tools ([`CatalogMode::DirectOnly`]) are visible and not cataloged.
/// - Tools whose name is in `required_direct` are visible and cataloged; an MCP tool never
///   matches a required name (it stays hidden and cataloged).
/// - Everything else is hidden and cataloged; the shell `exec` (an unmarked tool named `exec`)
///   becomes `openclaw:core:exec` in the catalog.
///
/// The visible list is `exec`, `wait`, then the retained tools in their original order. A
/// retained tool named `exec` or `wait`, or a second retained tool with a name already listed,
/// is never shown (a provider payload holds exactly one `exec`, one `wait` and unique names);
/// it stays cataloged when it is catalogable.
pub fn model_surface(tools: Vec<ToolSpec>, required_direct: &[&str]) -> Surface {
    let mut visible_tools = vec![EXEC_TOOL_NAME.to_string(), WAIT_TOOL_NAME.to_string()];
    let mut catalog_specs = Vec::new();
    for spec in tools {
        if spec.control.is_some() || !spec.allowed {
            continue;
        }
        let direct_only = spec.catalog_mode == CatalogMode::DirectOnly;
        let retained =
            direct_only || (!is_mcp(&spec) && required_direct.contains(&spec.name.as_str()));
        if retained && !visible_tools.contains(&spec.name) {
            visible_tools.push(spec.name.clone());
        }
        if spec.is_catalogable() {
            catalog_specs.push(spec);
        }
    }
    Surface {
        visible_tools,
        catalog_specs,
    }
}
