//! What a host gives `serve`: the [`EnvSource`] of each call's environment, the [`ServeHost`]
//! (policy, hooks, trajectory) added to every run, and the disabled result.

use codemode_bridge::RunScope;
use codemode_config::ToolPolicy;
use codemode_facade::{HookChain, RunEnv};
use codemode_telemetry::Trajectory;
use serde_json::{json, Value};

/// The error text of the disabled result (docs/contract/config.md#activation "Activation").
pub const CODE_MODE_DISABLED: &str = "code mode is disabled.";

/// The result every `exec` and `wait` gets while the config disables code mode
/// (docs/contract/config.md#activation "Activation"), as `structuredContent`:
/// `{"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"}`.
pub fn disabled_result() -> Value {
    json!({"status": "failed", "error": CODE_MODE_DISABLED, "code": "invalid_input"})
}

/// Where the server gets the environment of each call.
///
/// It is asked once per `tools/list`, `exec` and `wait`, so a refreshed catalog (for example
/// after an upstream MCP `notifications/tools/list_changed`) is picked up by the next call.
/// `scope` is the MCP session's scope (`session_id = "mcp-<uuid>"`, `session_key =
/// "mcp:<uuid>"`, the rest `None`). A source normally puts it into [`RunEnv::scope`] unchanged
/// (it may add an `agent_id`): that scope owns the runs `exec` parks, and is the caller scope of
/// `wait` (docs/contract/lifecycle.md#s5-3).
pub trait EnvSource: Send + Sync + 'static {
    /// The environment for one call in the session `scope`; `None` when the config disables code
    /// mode, and `exec` and `wait` then answer [`disabled_result`].
    fn run_env(&self, scope: RunScope) -> Option<RunEnv>;

    /// Called before each `exec`: names the tool sources a run started now cannot reach (MCP
    /// servers still connecting in the background, or whose attempt failed), with a one-line
    /// reason each. It must not wait for them: `tools/list` and `exec` answer at once and a
    /// source that joins later is announced by `notifications/tools/list_changed`
    /// (docs/mcp.md, "Fast start"). The default has none.
    fn unavailable(&self) -> Vec<crate::hub::Unavailable> {
        Vec::new()
    }

    /// True when MCP servers are configured, even if none has connected yet: an empty catalog
    /// is then described by its `MCP` namespace (`crate::description`). The default: `false`.
    fn mcp_configured(&self) -> bool {
        false
    }

    /// A receiver that changes whenever the catalog behind [`EnvSource::run_env`] may have
    /// changed (an MCP server connected late or re-listed), so the `exec` description (its
    /// namespace prompt and quick index) is out of date: each stateful MCP session then gets
    /// `notifications/tools/list_changed`. `None` (the default): the catalog never changes.
    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// What `serve` adds to every run of its sessions (docs/contract/host.md#h1 to #h4): the tool
/// policy, the hook chain and the trajectory of the config, given by the host (the CLI resolves
/// them with `codemode_config::resolve_policy` / `resolve_hooks`, `HookChain::from_config` and
/// its `--trajectory` sink).
///
/// With a host, each call's [`RunEnv`] from the [`EnvSource`] gets [`RunEnv::with_policy`],
/// [`RunEnv::with_hooks`] and [`RunEnv::with_trajectory`] with these values (replacing the
/// source's), so nested calls go through policy → hooks → approval and the outer `exec` /
/// `wait` through the hooks. Approvals are the session's in any case (see
/// [`CodeModeServer`](super::CodeModeServer)). The default allows every tool, runs no hooks and records nothing.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ServeHost {
    /// The tool policy (`tools.allow` / `deny` / `approvals.require`), applied again at call
    /// time; the host filters the catalog with it as well.
    pub policy: ToolPolicy,
    /// The `before_tool_call` / `after_tool_call` hooks.
    pub hooks: HookChain,
    /// Where the runs' trajectory goes.
    pub trajectory: Trajectory,
}

impl ServeHost {
    /// The default host: every tool allowed, no hooks, no trajectory.
    pub fn new() -> Self {
        ServeHost::default()
    }

    /// The same host with `policy`.
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same host with `hooks`.
    pub fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same host recording into `trajectory`.
    pub fn with_trajectory(mut self, trajectory: Trajectory) -> Self {
        self.trajectory = trajectory;
        self
    }
}
