//! Config files in the spec's shape, and the report `codemode config` prints.

use crate::agents::resolve_for_agent;
use crate::config::CodeModeConfig;
use crate::hooks::{resolve_hooks, HookConfig};
use crate::policy::{resolve_policy, ToolPolicy};
use crate::resolution::Resolved;
use crate::warning::Warning;
use codemode_files::{FileError, LimitedValue, Rules, MAX_FILE_BYTES};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A resolved config with its warnings, for one agent (or the global value): what
/// `codemode config` prints. JSON (camelCase):
///
/// ```json
/// {"agentId": "ops", "config": {"enabled": true, "runtime": "quickjs-wasi", …}, "warnings": [ … ]}
/// ```
///
/// `agentId` is `null` for the global value. See [`Warning`] for the warning shape.
///
/// When configured, the report also carries `toolPolicy` (docs/contract/host.md#h1: `{allow, deny, approvals:
/// {require}}`), `hooks` (docs/contract/host.md#h2: `{beforeToolCall, afterToolCall}`) and `hostWarnings` (the
/// warnings about those values, same shape as `warnings`); each is omitted while it is the
/// default (every tool allowed, no hooks, no warnings), so older reports read the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReport {
    /// The agent the config was resolved for, if any.
    pub agent_id: Option<String>,
    /// The resolved config.
    pub config: CodeModeConfig,
    /// Every ignored or clamped value (see [`crate::resolve_for_agent`]).
    pub warnings: Vec<Warning>,
    /// The effective tool policy for the agent (see [`crate::resolve_policy`]).
    #[serde(default, skip_serializing_if = "ToolPolicy::is_default")]
    pub tool_policy: ToolPolicy,
    /// The command hooks (see [`crate::resolve_hooks`]).
    #[serde(default, skip_serializing_if = "HookConfig::is_empty")]
    pub hooks: HookConfig,
    /// Warnings about `tools.allow`/`deny`/`approvals` and `hooks`; a warning already in
    /// `warnings` (a config root or `tools` of the wrong shape, an unknown agent) is not repeated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_warnings: Vec<Warning>,
}

impl ConfigReport {
    /// Resolves `root` (a whole config, `{"tools": {"codeMode": …}, "agents": {"list": […]}}`)
    /// for `agent_id`.
    pub fn from_root(root: &Value, agent_id: Option<&str>) -> Self {
        let Resolved { config, warnings } = resolve_for_agent(root, agent_id);
        let policy = resolve_policy(root, agent_id);
        let hooks = resolve_hooks(root);
        let mut host_warnings = policy.warnings;
        host_warnings.extend(hooks.warnings);
        host_warnings.retain(|h| {
            !warnings
                .iter()
                .any(|w| w.path == h.path && w.kind == h.kind)
        });
        ConfigReport {
            agent_id: agent_id.map(str::to_string),
            config,
            warnings,
            tool_policy: policy.policy,
            hooks: hooks.hooks,
            host_warnings,
        }
    }

    /// Pretty JSON, as `codemode config` prints it.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("ConfigReport always serialises")
    }
}

/// Why a config file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read, or was refused by the checked path for operator files
    /// (`codemode_files::read_to_string` with `Rules::READ`: a symbolic link, a FIFO or other
    /// non-regular file, another user's file, a file others can write, more than 64 MiB).
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: FileError,
    },
    /// The file is neither JSON nor JSON5.
    #[error("config file {} is not valid JSON or JSON5: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON5 parser's message (JSON5 is a superset of JSON), with line and column.
        message: String,
    },
}

/// Parses config text: JSON, or JSON5 (comments, unquoted keys, single quotes, trailing commas,
/// hexadecimal numbers). Errors carry the JSON5 parser's message, with line and column. Nesting
/// is limited to [`codemode_files::MAX_DEPTH`] (127) arrays/objects in both syntaxes: deeper
/// text is the error `nested deeper than 127 levels at line L column C`, never a stack overflow
/// (docs/threat-model.md, "Files an operator names").
pub fn parse_config_text(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => json5::from_str::<LimitedValue>(text)
            .map(|value| value.0)
            .map_err(|e| e.to_string()),
    }
}

/// Reads and parses a config file (JSON or JSON5) into a [`Value`], for hosts that need more of
/// it than `tools.codeMode`. The file goes through the checked path for operator files
/// ([`LoadError::Read`] says what it refuses).
pub fn load_config_value(path: &Path) -> Result<Value, LoadError> {
    let text =
        codemode_files::read_to_string(path, &Rules::READ, MAX_FILE_BYTES).map_err(|source| {
            LoadError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    parse_config_text(&text).map_err(|message| LoadError::Parse {
        path: path.to_path_buf(),
        message,
    })
}

/// Loads a config file in the spec's shape (JSON or JSON5,
/// `{"tools": {"codeMode": …}, "agents": {"list": [{"id", "tools": {"codeMode": …}}]}}`) and
/// resolves `tools.codeMode` for `agent_id` (or the global value for `None`). Only reading and
/// parsing can fail; every unusable value is a warning in the report.
pub fn load_config_file(path: &Path, agent_id: Option<&str>) -> Result<ConfigReport, LoadError> {
    let root = load_config_value(path)?;
    Ok(ConfigReport::from_root(&root, agent_id))
}
