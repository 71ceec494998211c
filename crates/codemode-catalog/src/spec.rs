//! Tool specs: what the host hands the catalog (docs/contract/catalog.md#s3-1; docs/contract/catalog.md#s3-1).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One effective tool as the host knows it, before cataloging.
///
/// Serialises with camelCase keys; this is also the element type of the `codemode catalog
/// --tools FILE` JSON array (see [`crate::cli`]), where every field except `name` and
/// `description` may be omitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSpec {
    /// Registered tool name (the last id segment). Must not be empty.
    pub name: String,
    /// Optional human label; searched (+4) and shown as the entry's `label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Tool description; searched (+2), shown in entries, never in the quick index.
    pub description: String,
    /// JSON Schema of the input. `None` renders `input: "unknown"` and describes as
    /// `parameters: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// JSON Schema of the result's `details` (docs/contract/catalog.md#output-contracts). Trusted
    /// (compiled, enforced, hinted) only for core and plugin tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Who owns the tool; decides the id, the group order and trust.
    #[serde(default)]
    pub origin: ToolOrigin,
    /// `direct-only` tools stay model-visible and are never cataloged (docs/contract/surface.md#s2-1).
    #[serde(default)]
    pub catalog_mode: CatalogMode,
    /// Whether the effective host policy allows the tool. Denied tools never enter the catalog.
    #[serde(default = "default_true")]
    pub allowed: bool,
    /// Set for control tools, which never enter the catalog. Control tools are recognised by
    /// this explicit marker only, never by name: the host's shell tool named `exec` has no
    /// marker and is cataloged as `openclaw:core:exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlKind>,
    /// A channel tool (docs/contract/catalog.md#s3-6): never replay-safe.
    #[serde(default, skip_serializing_if = "is_false")]
    pub channel: bool,
    /// What an MCP server declared about the tool beyond its input schema (annotations, an
    /// `outputSchema`, task support). Untrusted documentation for the `MCP` namespace's
    /// `.d.ts` and `$api` only; never compiled, enforced or shown in the quick index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_docs: Option<McpToolDocs>,
}

fn default_true() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ToolSpec {
    /// A normal, allowed, non-control core tool with no schemas.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        origin: ToolOrigin,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            label: None,
            description: description.into(),
            parameters: None,
            output_schema: None,
            origin,
            catalog_mode: CatalogMode::Normal,
            allowed: true,
            control: None,
            channel: false,
            mcp_docs: None,
        }
    }

    /// A core tool (`openclaw:core:<name>`).
    pub fn core(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolSpec::new(name, description, ToolOrigin::Core)
    }

    /// A plugin tool (`openclaw:<plugin_id>:<name>`), external and not replay-safe.
    pub fn plugin(
        plugin_id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        ToolSpec::new(
            name,
            description,
            ToolOrigin::Plugin {
                plugin_id: plugin_id.into(),
                bundled: false,
                replay_safe: false,
            },
        )
    }

    /// An MCP tool whose server name is also its safe server name (`mcp:<server>:<name>`),
    /// without MCP metadata (so it is cataloged but not in the `MCP` namespace).
    pub fn mcp(
        server: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let server = server.into();
        ToolSpec::new(
            name,
            description,
            ToolOrigin::Mcp {
                server_name: server.clone(),
                safe_server_name: server,
                plugin_id: None,
                tool_name: None,
                operation: McpOperation::Tool,
            },
        )
    }

    /// An MCP server tool with MCP metadata, registered as `<server>__<tool_name>` the way the
    /// MCP bridge does (id `mcp:<server>:<server>__<tool_name>`, docs/contract/catalog.md#s3-1), operation
    /// `tool`; it is reachable as `MCP.<server>.<toolIdentifier>` (docs/contract/mcp.md#s7-2).
    pub fn mcp_tool(
        server: impl Into<String>,
        tool_name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        ToolSpec::mcp_operation(server, McpOperation::Tool, tool_name, description)
    }

    /// An MCP entry with MCP metadata for any operation, registered as `<server>__<tool_name>`.
    /// For the resource and prompt operations the bridge's raw name is conventionally the
    /// operation itself (`resources_read`, …), as in docs/contract/examples.md#e28.
    pub fn mcp_operation(
        server: impl Into<String>,
        operation: McpOperation,
        tool_name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let server = server.into();
        let tool_name = tool_name.into();
        ToolSpec::new(
            format!("{server}__{tool_name}"),
            description,
            ToolOrigin::Mcp {
                server_name: server.clone(),
                safe_server_name: server,
                plugin_id: None,
                tool_name: Some(tool_name),
                operation,
            },
        )
    }

    /// A client tool (`client:<owner>:<name>`, or `client:client:<name>` without an owner).
    pub fn client(
        owner: Option<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        ToolSpec::new(name, description, ToolOrigin::Client { owner })
    }

    /// Sets `label`.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets `parameters`.
    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters = Some(parameters);
        self
    }

    /// Sets the MCP server's declarations about the tool ([`ToolSpec::mcp_docs`]).
    pub fn with_mcp_docs(mut self, docs: McpToolDocs) -> Self {
        self.mcp_docs = Some(docs);
        self
    }

    /// Sets `outputSchema`.
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Sets the catalog mode.
    pub fn with_catalog_mode(mut self, mode: CatalogMode) -> Self {
        self.catalog_mode = mode;
        self
    }

    /// Sets whether policy allows the tool.
    pub fn with_allowed(mut self, allowed: bool) -> Self {
        self.allowed = allowed;
        self
    }

    /// Marks the tool as a control tool (never cataloged).
    pub fn with_control(mut self, control: ControlKind) -> Self {
        self.control = Some(control);
        self
    }

    /// Marks the tool as a channel tool (never replay-safe).
    pub fn with_channel(mut self, channel: bool) -> Self {
        self.channel = channel;
        self
    }

    /// True when the tool enters the catalog: allowed, `normal` catalog mode, no control marker
    /// (docs/contract/catalog.md#s3-1 "Membership").
    pub fn is_catalogable(&self) -> bool {
        self.allowed && self.catalog_mode == CatalogMode::Normal && self.control.is_none()
    }
}

/// Who owns a tool (docs/contract/catalog.md#s3-1; docs/contract/catalog.md#s3-1 "Ids").
///
/// JSON form (tools file): `{"kind": "core"}`,
/// `{"kind": "plugin", "pluginId": "browser", "bundled": true, "replaySafe": false}`,
/// `{"kind": "mcp", "serverName": "GitHub", "safeServerName": "github", "pluginId": "bundle-mcp",
/// "toolName": "create_issue", "operation": "tool"}`,
/// `{"kind": "client", "owner": "app"}`; optional fields default to `false` / absent.
// `remote = "Self"`: the derives become inherent `ToolOrigin::serialize`/`deserialize`, which
// the trait impls below wrap (the `Deserialize` impl adds the `core` unknown-key check).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    remote = "Self",
    tag = "kind",
    rename_all = "camelCase",
    deny_unknown_fields
)]
pub enum ToolOrigin {
    /// An OpenClaw core tool: `openclaw:core:<name>`, group 0.
    #[default]
    Core,
    /// A plugin tool: `openclaw:<plugin_id>:<name>`, group 1 when `bundled`, else 2. A plugin
    /// tool of plugin `bundle-mcp` (an MCP tool without MCP metadata) is cataloged as MCP:
    /// `mcp:bundle-mcp:<name>`.
    #[serde(rename_all = "camelCase")]
    Plugin {
        /// Owning plugin id (trimmed; must not be blank).
        plugin_id: String,
        /// Shipped with the host (orders before external plugins).
        #[serde(default)]
        bundled: bool,
        /// The plugin marks the tool `replaySafe: true` (docs/contract/catalog.md#s3-6).
        #[serde(default)]
        replay_safe: bool,
    },
    /// An MCP tool: `mcp:<safe server name | plugin id | "mcp">:<name>`, group 3. Never in guest
    /// views, never trusted.
    #[serde(rename_all = "camelCase")]
    Mcp {
        /// The server's configured name.
        #[serde(default)]
        server_name: String,
        /// The server name made safe for ids and identifiers; the id owner when not blank.
        #[serde(default)]
        safe_server_name: String,
        /// The plugin that bridged the server, the id owner when the safe name is blank.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plugin_id: Option<String>,
        /// The raw MCP tool name (e.g. `create_issue` for the registered `github__create_issue`).
        /// `Some` means the entry carries MCP metadata and enters the `MCP` namespace
        /// (docs/contract/mcp.md#s7-1); `None` keeps it out of the namespace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_name: Option<String>,
        /// What the entry does on its server (docs/contract/mcp.md#s7-1); `tool` by default.
        #[serde(default, skip_serializing_if = "McpOperation::is_tool")]
        operation: McpOperation,
    },
    /// A client-provided tool: `client:<owner>:<name>`, or `client:client:<name>` when the owner
    /// is absent or blank (docs/contract/decisions.md#d11), group 4. Never trusted.
    #[serde(rename_all = "camelCase")]
    Client {
        /// The client's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
}

impl Serialize for ToolOrigin {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolOrigin::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for ToolOrigin {
    /// The derived form, plus one check serde skips: unknown keys next to `"kind": "core"` are
    /// rejected too (serde ignores them for unit variants of internally tagged enums).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        if let Some(map) = value.as_object() {
            if map.get("kind").and_then(Value::as_str) == Some("core") {
                if let Some(key) = map.keys().find(|k| *k != "kind") {
                    return Err(D::Error::unknown_field(key, &["kind"]));
                }
            }
        }
        ToolOrigin::deserialize(value).map_err(D::Error::custom)
    }
}

/// What an MCP catalog entry does on its server (docs/contract/mcp.md#s7-1), and so where it appears in
/// the `MCP` namespace (docs/contract/mcp.md#s7-2). JSON form: `"tool"`, `"resources_list"`, `"resources_read"`,
/// `"resources_templates"`, `"prompts_list"`, `"prompts_get"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpOperation {
    /// A server tool: `MCP.<server>.<tool>`.
    #[default]
    Tool,
    /// `resources/list`: `MCP.<server>.resources.list`.
    ResourcesList,
    /// `resources/read`: `MCP.<server>.resources.read`.
    ResourcesRead,
    /// `resources/templates/list`: `MCP.<server>.resources.templates` (an extension of
    /// docs/contract/mcp.md#s7-2's fixed paths; docs/mcp.md, "Declarations").
    ResourcesTemplates,
    /// `prompts/list`: `MCP.<server>.prompts.list`.
    PromptsList,
    /// `prompts/get`: `MCP.<server>.prompts.get`.
    PromptsGet,
}

impl McpOperation {
    /// The wire name: `tool`, `resources_list`, `resources_read`, `resources_templates`,
    /// `prompts_list`, `prompts_get`.
    pub fn as_str(self) -> &'static str {
        match self {
            McpOperation::Tool => "tool",
            McpOperation::ResourcesList => "resources_list",
            McpOperation::ResourcesRead => "resources_read",
            McpOperation::ResourcesTemplates => "resources_templates",
            McpOperation::PromptsList => "prompts_list",
            McpOperation::PromptsGet => "prompts_get",
        }
    }

    /// True for [`McpOperation::Tool`] (serde helper).
    pub fn is_tool(&self) -> bool {
        *self == McpOperation::Tool
    }

    /// The fixed path below the server for the resource and prompt operations
    /// (`["resources", "list"]`, …); `None` for `tool`, whose path is its identifier.
    pub fn fixed_path(self) -> Option<[&'static str; 2]> {
        match self {
            McpOperation::Tool => None,
            McpOperation::ResourcesList => Some(["resources", "list"]),
            McpOperation::ResourcesRead => Some(["resources", "read"]),
            McpOperation::ResourcesTemplates => Some(["resources", "templates"]),
            McpOperation::PromptsList => Some(["prompts", "list"]),
            McpOperation::PromptsGet => Some(["prompts", "get"]),
        }
    }

    /// The declared result type in `.d.ts` files (docs/contract/mcp.md#s7-4).
    pub fn result_type(self) -> &'static str {
        match self {
            McpOperation::Tool => "McpToolResult",
            McpOperation::ResourcesList => "McpResourcesListResult",
            McpOperation::ResourcesRead => "McpResourcesReadResult",
            // Inline rather than a preamble type: the preamble is fixed by the contract.
            McpOperation::ResourcesTemplates => {
                "{ resourceTemplates: unknown[]; nextCursor?: string }"
            }
            McpOperation::PromptsList => "McpPromptsListResult",
            McpOperation::PromptsGet => "McpPromptsGetResult",
        }
    }
}

/// How a tool is exposed (docs/contract/surface.md#s2-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatalogMode {
    /// Hidden from the model and cataloged (or visible and cataloged when the host requires it
    /// as a direct tool; visibility is the host's decision).
    #[default]
    Normal,
    /// Model-visible and never cataloged (e.g. `computer`, the native-vision `image` loader).
    DirectOnly,
}

/// The explicit control-tool marker (docs/contract/surface.md#s2-1, docs/contract/catalog.md#s3-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlKind {
    /// Code mode's own `exec` and `wait`.
    CodeMode,
    /// Tool Search controls: `tool_search_code`, `tool_search`, `tool_describe`, `tool_call`.
    ToolSearch,
}

/// What an MCP server declared about one of its tools beyond the input schema: the
/// `annotations` hints, the `outputSchema`, and whether `execution.taskSupport` is
/// `"required"`. Untrusted: rendered as documentation in `mcp/<server>.d.ts` and `$api`
/// (escaped and bounded like descriptions), never compiled, enforced or put in the quick index
/// (docs/mcp.md, "Declarations").
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpToolDocs {
    /// `annotations.readOnlyHint`: the tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// `annotations.destructiveHint`: the tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// `annotations.idempotentHint`: calling it again with the same input has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// `annotations.openWorldHint`: the tool talks to an open world (the web, other people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// The declared `outputSchema` (a JSON Schema object of `structuredContent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `execution.taskSupport` is `"required"`: the tool can only run as an MCP task, which
    /// codemode does not support, so it is left out of the namespace with a reason comment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_required: bool,
}

impl McpToolDocs {
    /// Reads the declarations of an MCP tool (`{annotations?, outputSchema?, execution?}`
    /// JSON); `None` when it declares none of them. Non-boolean hints and a non-object
    /// `outputSchema` are ignored.
    pub fn from_tool(tool: &Value) -> Option<McpToolDocs> {
        let hint = |key: &str| tool.get("annotations")?.get(key)?.as_bool();
        let docs = McpToolDocs {
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            idempotent_hint: hint("idempotentHint"),
            open_world_hint: hint("openWorldHint"),
            output_schema: tool.get("outputSchema").filter(|s| s.is_object()).cloned(),
            task_required: tool
                .get("execution")
                .and_then(|e| e.get("taskSupport"))
                .and_then(Value::as_str)
                == Some("required"),
        };
        (docs != McpToolDocs::default()).then_some(docs)
    }

    /// The hints that are set, as `{readOnlyHint?, destructiveHint?, idempotentHint?,
    /// openWorldHint?}` (empty when none is).
    pub fn hints(&self) -> Map<String, Value> {
        [
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), Value::Bool(v?))))
        .collect()
    }
}
