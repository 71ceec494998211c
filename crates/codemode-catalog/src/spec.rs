//! Tool specs: what the host hands the catalog (code-mode.md "Tool catalog"; behaviour.md §3.1).

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// JSON Schema of the result's `details` (code-mode.md "Declared output contracts"). Trusted
    /// (compiled, enforced, hinted) only for core and plugin tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Who owns the tool; decides the id, the group order and trust.
    #[serde(default)]
    pub origin: ToolOrigin,
    /// `direct-only` tools stay model-visible and are never cataloged (behaviour.md §2.1).
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
    /// A channel tool (behaviour.md §3.6): never replay-safe.
    #[serde(default, skip_serializing_if = "is_false")]
    pub channel: bool,
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

    /// An MCP tool whose server name is also its safe server name (`mcp:<server>:<name>`).
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
    /// (behaviour.md §3.1 "Membership").
    pub fn is_catalogable(&self) -> bool {
        self.allowed && self.catalog_mode == CatalogMode::Normal && self.control.is_none()
    }
}

/// Who owns a tool (code-mode.md "Tool catalog"; behaviour.md §3.1 "Ids").
///
/// JSON form (tools file): `{"kind": "core"}`,
/// `{"kind": "plugin", "pluginId": "browser", "bundled": true, "replaySafe": false}`,
/// `{"kind": "mcp", "serverName": "GitHub", "safeServerName": "github", "pluginId": "bundle-mcp"}`,
/// `{"kind": "client", "owner": "app"}`; optional fields default to `false` / absent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    deny_unknown_fields,
    from = "OriginRepr"
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
        /// The plugin marks the tool `replaySafe: true` (behaviour.md §3.6).
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
    },
    /// A client-provided tool: `client:<owner>:<name>`, or `client:client:<name>` when the owner
    /// is absent or blank (behaviour.md D11), group 4. Never trusted.
    #[serde(rename_all = "camelCase")]
    Client {
        /// The client's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
}

/// Deserialisation form of [`ToolOrigin`]: identical, except that `core` is a struct variant so
/// that unknown keys next to `"kind": "core"` are rejected too (serde ignores them for unit
/// variants of internally tagged enums).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
enum OriginRepr {
    Core {},
    #[serde(rename_all = "camelCase")]
    Plugin {
        plugin_id: String,
        #[serde(default)]
        bundled: bool,
        #[serde(default)]
        replay_safe: bool,
    },
    #[serde(rename_all = "camelCase")]
    Mcp {
        #[serde(default)]
        server_name: String,
        #[serde(default)]
        safe_server_name: String,
        #[serde(default)]
        plugin_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Client {
        #[serde(default)]
        owner: Option<String>,
    },
}

impl From<OriginRepr> for ToolOrigin {
    fn from(repr: OriginRepr) -> Self {
        match repr {
            OriginRepr::Core {} => ToolOrigin::Core,
            OriginRepr::Plugin {
                plugin_id,
                bundled,
                replay_safe,
            } => ToolOrigin::Plugin {
                plugin_id,
                bundled,
                replay_safe,
            },
            OriginRepr::Mcp {
                server_name,
                safe_server_name,
                plugin_id,
            } => ToolOrigin::Mcp {
                server_name,
                safe_server_name,
                plugin_id,
            },
            OriginRepr::Client { owner } => ToolOrigin::Client { owner },
        }
    }
}

/// How a tool is exposed (behaviour.md §2.1).
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

/// The explicit control-tool marker (behaviour.md §2.1, §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlKind {
    /// Code mode's own `exec` and `wait`.
    CodeMode,
    /// Tool Search controls: `tool_search_code`, `tool_search`, `tool_describe`, `tool_call`.
    ToolSearch,
}
