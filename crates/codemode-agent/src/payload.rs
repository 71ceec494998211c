//! The provider payload ([`Payload`]) and its fail-closed check on an engaged run
//! ([`check_payload`], docs/contract/surface.md#s2-1).

use std::collections::HashSet;
use std::sync::Arc;

use codemode_catalog::{Catalog, CatalogMode, SearchLimits, ToolSpec};
use codemode_facade::surface::{ToolDefinition, EXEC_TOOL_NAME, WAIT_TOOL_NAME};
use serde::Serialize;
use serde_json::json;

/// The tool definitions a model would receive: `{"tools": [{name, description, parameters,
/// hideFromChannelProgress?}, …]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payload {
    /// The definitions, in payload order.
    pub tools: Vec<ToolDefinition>,
}

impl Payload {
    /// The tool names, in payload order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The definition of a tool exposed directly: its name, description and input schema (`{"type":
/// "object", "properties": {}}` when it declares none).
pub fn direct_tool_definition(spec: &ToolSpec) -> ToolDefinition {
    ToolDefinition {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        hide_from_channel_progress: None,
    }
}

/// Why an engaged run's payload failed the check of docs/contract/surface.md#s2-1; the run fails
/// closed with this message (code [`PayloadError::CODE`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// `exec` or `wait` does not appear exactly once.
    #[error("code mode payload check failed: the provider payload has {count} {name:?} tools (expected exactly one)")]
    ControlCount {
        /// `exec` or `wait`.
        name: &'static str,
        /// How many there are.
        count: usize,
    },
    /// A tool that is not an approved direct tool.
    #[error("code mode payload check failed: {name:?} is not an approved direct tool")]
    Unapproved {
        /// Its name.
        name: String,
    },
    /// A direct tool listed twice.
    #[error("code mode payload check failed: {name:?} appears more than once")]
    Duplicate {
        /// Its name.
        name: String,
    },
}

impl PayloadError {
    /// The error code of a failed payload check: `"payload_check_failed"`.
    pub const CODE: &'static str = "payload_check_failed";
}

/// The fail-closed payload check of an engaged run (docs/contract/surface.md#s2-1): exactly one
/// `exec`, exactly one `wait`, and every other tool an approved direct tool, each once. Checked
/// in this order; the first failure is returned.
pub fn check_payload(payload: &Payload, approved_direct: &[String]) -> Result<(), PayloadError> {
    for name in [EXEC_TOOL_NAME, WAIT_TOOL_NAME] {
        let count = payload.tools.iter().filter(|t| t.name == name).count();
        if count != 1 {
            return Err(PayloadError::ControlCount { name, count });
        }
    }
    let mut seen = HashSet::new();
    for tool in &payload.tools {
        if tool.name == EXEC_TOOL_NAME || tool.name == WAIT_TOOL_NAME {
            continue;
        }
        if !approved_direct.contains(&tool.name) {
            return Err(PayloadError::Unapproved {
                name: tool.name.clone(),
            });
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(PayloadError::Duplicate {
                name: tool.name.clone(),
            });
        }
    }
    Ok(())
}

/// What [`AgentTurn::prepare`] built.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The provider payload.
    pub payload: Payload,
    /// The specs the policy allows (empty for a run without tools).
    pub specs: Vec<ToolSpec>,
    /// The run's catalog (code mode on) or a catalog of the direct tools (off; used for ids).
    pub catalog: Arc<Catalog>,
    /// The specs `catalog` was built from (its entries' `spec_index` points into this list).
    pub catalog_specs: Vec<ToolSpec>,
    /// `exec`, `wait` and the retained direct tools when engaged; empty otherwise.
    pub visible_tools: Vec<String>,
    /// Whether the fail-closed check ran.
    pub payload_check: PayloadCheck,
}

/// Whether the fail-closed payload check applied to the turn. JSON: `"passed"`, `"not_engaged"`
/// or `"no_tools"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadCheck {
    /// Code mode engaged and the payload passed.
    Passed,
    /// Code mode did not engage for a run with tools: normal exposure, no check.
    NotEngaged,
    /// The run has no tools (raw call, `disableTools`, empty allow list): no surface, no check.
    NoTools,
}

/// The id a direct-only tool (never cataloged) is called under: what the catalog would assign
/// from its origin (`openclaw:core:<name>`, `openclaw:<plugin>:<name>`, `client:<owner>:<name>`,
/// `mcp:<server>:<name>`).
pub fn direct_only_id(spec: &ToolSpec) -> String {
    let mut probe = spec.clone();
    probe.catalog_mode = CatalogMode::Normal;
    probe.allowed = true;
    probe.control = None;
    Catalog::build(vec![probe], &SearchLimits::default())
        .ok()
        .and_then(|c| c.entries().first().map(|e| e.id().to_string()))
        .unwrap_or_else(|| format!("openclaw:core:{}", spec.name))
}
