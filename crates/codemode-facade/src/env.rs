//! [`RunEnv`]: everything one `exec` needs from the host, and the builder that wires it.

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::Catalog;
use codemode_config::{CodeModeConfig, ToolPolicy};
use codemode_telemetry::Trajectory;

use crate::pipeline::{ApprovalBroker, HookChain, OuterApprover};

/// Everything one `exec` needs from the host. The catalog, config and executor are captured
/// when a run parks, so `wait` uses the same ones (docs/contract/lifecycle.md#s5-3-parking "Parking").
#[derive(Clone)]
pub struct RunEnv {
    /// The resolved `tools.codeMode` config (limits, languages).
    pub config: CodeModeConfig,
    /// The run-scoped catalog (`ALL_TOOLS` shows its guest-visible entries).
    pub catalog: Arc<Catalog>,
    /// Runs nested tool calls.
    pub executor: Arc<dyn ToolExecutor>,
    /// The owner of runs this `exec` creates; `wait` must come from the same scope.
    pub scope: RunScope,
    /// The model-visible tools, for telemetry (`exec`, `wait`, retained direct tools; docs/contract/decisions.md#d3).
    pub visible_tools: Vec<String>,
    /// Core tools the host audited as read-only (replay-safe; docs/contract/catalog.md#s3-6).
    pub read_only_core_tools: Vec<String>,
    /// The host forces restart-safe tools (the effective `restartSafe` is this or the input's).
    pub force_restart_safe: bool,
    /// The model's tool-call id of this `exec`; nested calls are named after it
    /// (`tool_search_code:<parent>:<tool>:<seq>`, docs/contract/catalog.md#s3-5), also after `wait`s.
    /// For [`CodeMode::wait_with`](crate::CodeMode::wait_with) it is the `wait` call's own id. When `None`, every call gets a
    /// fresh unique id of its own (`exec_<uuid>` / `wait_<uuid>`, 32 lowercase hex digits), so
    /// nested call ids, hook events, approvals and trajectory spans of concurrent runs never
    /// collide; an id the host sets is used unchanged.
    pub parent_tool_call_id: Option<String>,
    /// The tool policy applied again at call time to every nested call (docs/contract/host.md#h1;
    /// the host filters the catalog with it before building it). Default: every tool allowed.
    pub policy: Arc<ToolPolicy>,
    /// The `before_tool_call` / `after_tool_call` hooks, for nested calls and for the outer
    /// `exec` / `wait` (docs/contract/host.md#h2). Default: none.
    pub hooks: HookChain,
    /// Who answers approvals (docs/contract/host.md#h3); `None` (the default) denies every call
    /// that needs one. A run's outstanding approvals are listed in its `waiting` results.
    pub approvals: Option<Arc<ApprovalBroker>>,
    /// Where the run's trajectory goes (docs/contract/host.md#h4); every event is stamped with
    /// [`scope`](Self::scope). Default: [`Trajectory::disabled`].
    pub trajectory: Trajectory,
    /// Build the guest's catalog globals the way every exec did before they were installed
    /// lazily: the whole run context as JSON for each exec, parsed and built in full before the
    /// program runs (docs/guest-abi.md, "Run context"). Default `false`; the `catalog_scale`
    /// benchmark sets it to measure the difference. Behaviour is the same either way (but for
    /// one error text docs/guest-abi.md names).
    pub install_catalog_eagerly: bool,
}

impl RunEnv {
    /// An environment with the default visible tools (`exec`, `wait`), the default read-only core
    /// tools (`read`, `grep`, `find`) and no forced restart safety.
    pub fn new(
        config: CodeModeConfig,
        catalog: Arc<Catalog>,
        executor: Arc<dyn ToolExecutor>,
        scope: RunScope,
    ) -> Self {
        RunEnv {
            config,
            catalog,
            executor,
            scope,
            visible_tools: vec!["exec".into(), "wait".into()],
            read_only_core_tools: codemode_catalog::DEFAULT_READ_ONLY_CORE_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            force_restart_safe: false,
            parent_tool_call_id: None,
            policy: Arc::new(ToolPolicy::default()),
            hooks: HookChain::new(),
            approvals: None,
            trajectory: Trajectory::disabled(),
            install_catalog_eagerly: false,
        }
    }

    /// The same environment with `policy`: a nested call of a tool it does not allow fails with
    /// the unknown-tool error without suggestions (docs/contract/host.md#h1), and calls of tools
    /// matching `tools.approvals.require` go to approval. Filter the catalog's specs with
    /// [`ToolPolicy::allows`] too, so denied tools are absent from `ALL_TOOLS` and `MCP`.
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// The same environment with `hooks` (replacing the previous chain): they run for every
    /// nested call and for the outer `exec` / `wait` (docs/contract/host.md#h2).
    pub fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same environment answering approvals through `broker` (docs/contract/host.md#h3):
    /// a call that needs approval stays pending until the broker answers (its delegate, or
    /// [`ApprovalBroker::answer`] by id), and every `waiting` result of the run lists the
    /// outstanding ones as `pendingApprovals`. Use the config's snapshot TTL as the broker's TTL.
    pub fn with_approvals(mut self, broker: Arc<ApprovalBroker>) -> Self {
        self.approvals = Some(broker);
        self
    }

    /// The same environment recording its trajectory into `trajectory` (docs/telemetry.md):
    /// `tool_call` / `tool_result` around `exec` and `wait`, `nested_tool_call` /
    /// `nested_tool_result`, `approval_requested` / `approval_resolved`, `run_parked`,
    /// `run_resumed`, `run_expired` and `run_aborted`.
    pub fn with_trajectory(mut self, trajectory: Trajectory) -> Self {
        self.trajectory = trajectory;
        self
    }

    /// The same environment with the model's tool-call id of this call (`exec`, or the `wait`
    /// of [`CodeMode::wait_with`](crate::CodeMode::wait_with)), used unchanged. Without one, each call generates its own
    /// (`exec_<uuid>` / `wait_<uuid>`; see [`RunEnv::parent_tool_call_id`]).
    pub fn with_tool_call_id(mut self, tool_call_id: impl Into<String>) -> Self {
        self.parent_tool_call_id = Some(tool_call_id.into());
        self
    }

    /// The trajectory stamped with this environment's scope.
    pub(crate) fn scoped_trajectory(&self) -> Trajectory {
        self.trajectory.with_scope(self.scope.clone())
    }

    /// The approver for outer `ask` answers: the broker, if any, with the wait bounded by
    /// `timeoutMs` and recorded in the trajectory (`pipeline/outer_approval.rs`, issue 27
    /// item 3).
    pub(crate) fn outer_approver(&self) -> Option<OuterApprover> {
        self.approvals.clone().map(|broker| OuterApprover {
            broker,
            within: Duration::from_millis(self.config.timeout_ms()),
            trajectory: self.scoped_trajectory(),
        })
    }
}
