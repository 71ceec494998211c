//! The code-mode model surface: `exec` and `wait` (docs/contract/surface.md#s2-2, docs/contract/surface.md#s2-3, docs/contract/lifecycle.md#runs; docs/contract/lifecycle.md#s5).
//!
//! [`CodeMode`] is the per-process front: it owns the shared [`Runtime`] and the in-process map
//! of parked runs. A host calls [`CodeMode::exec`] with a [`RunEnv`] (resolved config, run-scoped
//! catalog, tool executor, owner scope) and the model's `exec` arguments, and
//! [`CodeMode::wait`] with the caller's scope and the `wait` arguments. Both return a
//! [`CodeModeResult`]; nothing here panics or returns `Err` on model input (docs/contract/decisions.md#d1).
//!
//! One `exec` runs the cell in a fresh VM, dispatches its bridge requests concurrently to the
//! executor and feeds results back as they settle (auto-drain) until the program completes or
//! the deadline (`timeoutMs`) passes; then the run parks as a snapshot under `runId` while its
//! tool calls keep running, and `wait` resumes it.

mod agent;
mod dispatch;
mod missing;
mod nodes;
mod outer_approval;
mod pipeline;
mod process_group;
mod result;
mod run;
mod surface;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::Catalog;
use codemode_config::{CodeModeConfig, ToolPolicy};
use codemode_runtime::{AbortHandle, Runtime, RuntimeError, VmError};
use codemode_telemetry::{
    EventKind, ToolCallEvent, ToolInputKind as InputKind, ToolResultEvent, ToolStatus, Trajectory,
};
use serde_json::Value;

pub use agent::{
    check_payload, direct_only_id, direct_tool_definition, model_cost, resolve_activation,
    resolve_references, Activation, ActivationReport, AgentEnvelope, AgentError, AgentTurn,
    Payload, PayloadCheck, PayloadError, Prepared, ReferenceError, RuntimeStats, Script,
    ScriptError, ScriptToolCall, ScriptTurn, TurnFlags, TurnStep, RESULT_REFERENCE_PREFIX,
};
pub use codemode_catalog::SourceCounts;
pub use nodes::NODES_TOOL_ID;
pub use pipeline::{
    after_outer_call, before_outer_call, blocked_after_message, blocked_message,
    not_approved_message, unknown_tool_message, AfterDecision, AfterToolCall, ApprovalBroker,
    ApprovalDecision, ApprovalFuture, ApprovalRequest, ApprovalVerdict, Approver, BeforeToolCall,
    BeforeVerdict, CallError, CommandHook, Decision, FixedApprover, HookChain, HookDecision,
    HookEvent, HookFuture, HookPhase, OuterKind, PendingApproval, ToolCallInfo, ToolHook,
    ToolInputKind, ToolKind, ToolPipeline, UnknownApproval, APPROVAL_CANCELLED, APPROVAL_EXPIRED,
    DEFAULT_DENIAL_REASON, HOOK_ENVIRONMENT, HOOK_STDOUT_LIMIT,
};
pub use process_group::ProcessGroup;
pub use result::{CodeModeResult, ErrorCode, PendingToolCall, Telemetry, WaitReason};
pub use surface::*;

/// The crates an embedding host may need beyond [`prelude`], re-exported so that one
/// dependency on `codemode-facade` is enough.
pub use codemode_bridge as bridge;
/// See [`bridge`].
pub use codemode_catalog as catalog;
/// See [`bridge`].
pub use codemode_config as config;
/// See [`bridge`].
pub use codemode_runtime as runtime;
/// See [`bridge`].
pub use codemode_telemetry as telemetry;

pub mod prelude {
    //! What a Rust host embedding code mode needs, in one import (`crates/codemode-facade/examples/
    //! embed.rs` is a complete program):
    //!
    //! - [`CodeMode`] runs `exec` / `wait` and keeps parked runs; [`CodeModeResult`] is their answer;
    //! - [`RunEnv`] is one run's environment (config, catalog, [`ToolExecutor`], owner scope);
    //! - [`ToolExecutor`] (with [`ToolCall`], [`ToolFuture`]) runs the nested tool calls;
    //! - [`AbortHandle`] cancels a run;
    //! - [`ToolSpec`] and [`Catalog::build`] (with [`SearchLimits`]) build the catalog;
    //! - [`CodeModeConfig`] (or [`resolve_config`] from the spec's JSON shape) is `tools.codeMode`;
    //! - [`surface_tools`] gives the `exec` and `wait` definitions to show the model.
    //!
    //! ```
    //! use codemode_facade::prelude::*;
    //!
    //! let catalog = Catalog::build(
    //!     vec![ToolSpec::core("weather", "Current weather for a city.")],
    //!     &SearchLimits::default(),
    //! )
    //! .unwrap();
    //! let [exec, wait] = surface_tools(&catalog);
    //! assert!(exec.description.contains("\"openclaw:core:weather\""));
    //! assert_eq!(wait.name, "wait");
    //! let config = resolve_config(&serde_json::json!({"timeoutMs": 5000})).config;
    //! assert_eq!(config.timeout_ms(), 5000);
    //! ```

    pub use crate::{
        surface_tools, ApprovalBroker, ApprovalDecision, CodeMode, CodeModeResult, ErrorCode,
        HookChain, RunEnv, ToolDefinition,
    };
    pub use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
    pub use codemode_catalog::{Catalog, CatalogMode, SearchLimits, ToolOrigin, ToolSpec};
    pub use codemode_config::{resolve as resolve_config, CodeModeConfig, ToolPolicy};
    pub use codemode_runtime::AbortHandle;
}

use codemode_snapshot::SnapshotStore;
use run::Run;

/// `runId must be a non-empty string.`
pub const RUN_ID_REQUIRED: &str = "runId must be a non-empty string.";
/// `too many pending code mode tool calls` (docs/contract/decisions.md#d4).
pub const TOO_MANY_PENDING: &str = "too many pending code mode tool calls";
/// `code mode promise is pending without host work` (docs/contract/guest.md#s4-1).
pub const PENDING_WITHOUT_HOST_WORK: &str = "code mode promise is pending without host work";
/// `code mode output limit exceeded` (docs/contract/lifecycle.md#s5-5).
pub const OUTPUT_LIMIT_EXCEEDED: &str = "code mode output limit exceeded";
/// `code mode snapshot limit exceeded` (docs/contract/lifecycle.md#s5-6).
pub const SNAPSHOT_LIMIT_EXCEEDED: &str = "code mode snapshot limit exceeded";
/// `restart-safe code mode cannot call namespace tools.` (docs/contract/lifecycle.md#s5-2).
pub const RESTART_SAFE_NAMESPACE: &str = "restart-safe code mode cannot call namespace tools.";
/// `restart-safe code mode cannot call side-effecting tools.` (docs/contract/lifecycle.md#s5-2).
pub const RESTART_SAFE_SIDE_EFFECTS: &str =
    "restart-safe code mode cannot call side-effecting tools.";

/// `n` in decimal with a comma every three digits, as limit errors print sizes: `65536` →
/// `"65,536"`, `999` → `"999"`.
///
/// ```
/// assert_eq!(codemode_facade::format_count(65_536), "65,536");
/// assert_eq!(codemode_facade::format_count(999), "999");
/// assert_eq!(codemode_facade::format_count(1_000_000), "1,000,000");
/// ```
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A limit error that says how to fix it (issue 16): the contract's message as its first
/// sentence, then what hit the limit, the limit and the setting to change, then optional advice:
///
/// `"<contract>. <measured>; <setting> is <limit> (tools.codeMode.<setting>).<advice>"`
///
/// e.g. `limit_message(OUTPUT_LIMIT_EXCEEDED, "The result is 66,412 bytes", "maxOutputBytes",
/// 65_536, "")` is `"code mode output limit exceeded. The result is 66,412 bytes;
/// maxOutputBytes is 65,536 (tools.codeMode.maxOutputBytes)."`. `advice` is appended as is
/// (start it with a space). Every limit error of the facade is built here; hosts that bound
/// their own buffers by a `tools.codeMode` setting should use it too, so all read alike.
pub fn limit_message(
    contract: &str,
    measured: &str,
    setting: &str,
    limit: u64,
    advice: &str,
) -> String {
    format!(
        "{contract}. {measured}; {setting} is {} (tools.codeMode.{setting}).{advice}",
        format_count(limit)
    )
}

/// What to do instead of returning too much (the model reads this).
const OUTPUT_ADVICE: &str = " Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).";

/// The output-limit error (docs/contract/lifecycle.md#s5-5) for a result of `size` bytes
/// (`JSON.stringify` of the output entries plus the value), or `None` when the guest stopped
/// buffering output once it passed `limit` (the exact size is then unknown).
pub fn output_limit_message(size: Option<u64>, limit: u64) -> String {
    let measured = match size {
        Some(size) => format!("The result is {} bytes", format_count(size)),
        None => "The output grew past the limit".to_string(),
    };
    limit_message(
        OUTPUT_LIMIT_EXCEEDED,
        &measured,
        "maxOutputBytes",
        limit,
        OUTPUT_ADVICE,
    )
}

/// The snapshot-limit error (docs/contract/lifecycle.md#s5-6) for a compressed snapshot of
/// `size` bytes against `limit`.
pub fn snapshot_limit_message(size: u64, limit: u64) -> String {
    limit_message(
        SNAPSHOT_LIMIT_EXCEEDED,
        &format!(
            "The run's snapshot is {} bytes compressed",
            format_count(size)
        ),
        "maxSnapshotBytes",
        limit,
        " Keep less data alive while tool calls are pending.",
    )
}

/// The pending-calls error (docs/contract/decisions.md#d4) for `count` pending bridge requests,
/// or `None` when the guest stopped queueing once it passed `limit`.
pub fn pending_limit_message(count: Option<u64>, limit: u64) -> String {
    let measured = match count {
        Some(count) => format!(
            "The program had {} tool calls pending at once",
            format_count(count)
        ),
        None => "The program started more tool calls at once than the limit".to_string(),
    };
    limit_message(
        TOO_MANY_PENDING,
        &measured,
        "maxPendingToolCalls",
        limit,
        " Start them in batches and await each batch before the next.",
    )
}

/// The timeout error (docs/contract/lifecycle.md#s5-7): `code mode timeout exceeded`, then the
/// budget `timeout_ms` of one `exec` or `wait` call and its setting.
pub fn timeout_message(timeout_ms: u64) -> String {
    limit_message(
        &VmError::Timeout.to_string(),
        "The program computed without waiting on a tool until the call's budget ran out",
        "timeoutMs",
        timeout_ms,
        "",
    )
}

/// At most this many runs are parked per process (docs/contract/lifecycle.md#s5-4).
pub use codemode_snapshot::MAX_SUSPENDED_RUNS;

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
    /// For [`CodeMode::wait_with`] it is the `wait` call's own id. When `None`, every call gets a
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
    /// of [`CodeMode::wait_with`]), used unchanged. Without one, each call generates its own
    /// (`exec_<uuid>` / `wait_<uuid>`; see [`RunEnv::parent_tool_call_id`]).
    pub fn with_tool_call_id(mut self, tool_call_id: impl Into<String>) -> Self {
        self.parent_tool_call_id = Some(tool_call_id.into());
        self
    }

    /// The trajectory stamped with this environment's scope.
    fn scoped_trajectory(&self) -> Trajectory {
        self.trajectory.with_scope(self.scope.clone())
    }

    /// The approver for outer `ask` answers: the broker, if any, with the wait bounded by
    /// `timeoutMs` and recorded in the trajectory (`outer_approval.rs`, issue 27 item 3).
    fn outer_approver(&self) -> Option<outer_approval::OuterApprover> {
        self.approvals
            .clone()
            .map(|broker| outer_approval::OuterApprover {
                broker,
                within: Duration::from_millis(self.config.timeout_ms()),
                trajectory: self.scoped_trajectory(),
            })
    }
}

/// The per-process code-mode front: runtime plus the store of parked runs (in memory only,
/// never persisted; `codemode-snapshot`).
pub struct CodeMode {
    runtime: Arc<Runtime>,
    runs: SnapshotStore<Run>,
}

impl CodeMode {
    /// A front over `runtime` with the spec's cap of [`MAX_SUSPENDED_RUNS`] parked runs.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        CodeMode {
            runtime,
            runs: SnapshotStore::new(MAX_SUSPENDED_RUNS),
        }
    }

    /// A front over the process-wide runtime ([`Runtime::global`]). Fails closed when the
    /// runtime cannot load (docs/contract/config.md#configuration: no silent fallback to direct tools).
    pub fn with_global_runtime() -> Result<Self, RuntimeError> {
        Ok(CodeMode::new(Runtime::global()?))
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Number of parked runs (including one being resumed).
    pub fn parked_runs(&self) -> usize {
        self.runs.len()
    }

    /// Suspended-run slots held by running cells that may park (docs/contract/lifecycle.md#s5-4).
    pub fn reserved_slots(&self) -> usize {
        self.runs.reserved()
    }

    /// Drops every parked run and cancels its pending tool calls (host shutdown or session end).
    pub fn clear(&self) {
        run::dropping_because(run::RUNS_CLEARED, || self.runs.clear());
    }

    /// Ends the session `session`: drops every parked run it owns and cancels its pending tool
    /// calls (docs/contract/lifecycle.md#runs: snapshots are dropped on session end;
    /// docs/contract/lifecycle.md#s5-3). A run belongs to the session when `session` sets `session_id` or
    /// `session_key` and every one of the two it sets equals the run owner's; other runs are
    /// untouched, and a scope that sets neither ends nothing. A run being resumed by a `wait`
    /// that is still in flight is detached: that `wait` finishes, but the run is not parked
    /// again. Returns how many runs were dropped.
    pub fn end_session(&self, session: &RunScope) -> usize {
        if session.session_id.is_none() && session.session_key.is_none() {
            return 0;
        }
        let same = |wanted: &Option<String>, owned: &Option<String>| {
            wanted.is_none() || wanted.as_deref() == owned.as_deref()
        };
        run::dropping_because(run::SESSION_ENDED, || {
            self.runs.remove_where(|owner| {
                same(&session.session_id, &owner.session_id)
                    && same(&session.session_key, &owner.session_key)
            })
        })
    }

    /// Runs one `exec` (docs/contract/lifecycle.md#s5-2). `input` is the model's argument object
    /// (`{code | command, language?, restartSafe?}`); `abort` cancels the call.
    ///
    /// With host wiring on `env` ([`RunEnv::with_hooks`], [`RunEnv::with_trajectory`], …) the
    /// call is the model-visible `exec` of docs/contract/host.md#h2: the `before_tool_call`
    /// hooks see it first (`toolKind: "code_mode_exec"`); a block (or a denied `ask`) is a
    /// `failed` result with code `invalid_input` and the block text as `error`; a rewritten
    /// input goes through the usual argument checks (docs/contract/surface.md#s2-2); the
    /// `after_tool_call` hooks see the result JSON and may replace it. `tool_call` /
    /// `tool_result` frame the call in the trajectory. The tool-call id is
    /// `env.parent_tool_call_id`, or a fresh `exec_<uuid>` when unset.
    ///
    /// An outer `ask` waits for `env`'s broker at most the config's `timeoutMs`; unanswered by
    /// then, the call is denied (`Tool "exec" was not approved: no answer within <ms> ms
    /// (timeoutMs)`) and the approval withdrawn. Its `approval_requested` / `approval_resolved`
    /// events are recorded like a nested call's.
    ///
    /// `abort` also ends the wait for the outer hooks and an outer approval: the call then
    /// returns the aborted result at once (`failed`, `code mode execution aborted`, code
    /// `aborted`). A run that parked but whose `waiting` result the model never gets (an after
    /// hook withheld or replaced it, or the call was aborted during the after hooks) is removed
    /// from the store at once, cancelling its pending calls (`run_expired` with reason
    /// `result withheld` / `aborted`), instead of holding a suspended-run slot until its TTL.
    pub async fn exec(&self, env: &RunEnv, input: &Value, abort: &AbortHandle) -> CodeModeResult {
        let call_id = env
            .parent_tool_call_id
            .clone()
            .unwrap_or_else(|| generated_call_id(OuterKind::Exec));
        let call_id = call_id.as_str();
        let started = Instant::now();
        let trajectory = env.scoped_trajectory();
        let approver = env.outer_approver();
        let before = unless_aborted(
            abort,
            before_outer_call(
                &env.hooks,
                approver.as_ref().map(|a| a as &dyn Approver),
                OuterKind::Exec,
                call_id,
                input,
                &env.scope,
            ),
        )
        .await;
        let before = match before {
            Some(before) => before,
            None => {
                let result = run::vm_failure(env, &VmError::Aborted);
                return record_refused(
                    &trajectory,
                    OuterKind::Exec,
                    call_id,
                    input,
                    result,
                    started,
                );
            }
        };
        let input = match before {
            Ok(input) => input,
            Err(message) => {
                let result = run::failure(env, ErrorCode::InvalidInput, &message, false);
                return record_refused(
                    &trajectory,
                    OuterKind::Exec,
                    call_id,
                    input,
                    result,
                    started,
                );
            }
        };
        record_call(&trajectory, OuterKind::Exec, call_id, &input);
        // The run is named after this call's id, generated or not.
        let mut run_env = env.clone();
        run_env.parent_tool_call_id = Some(call_id.to_string());
        let result = self.exec_inner(run_env, &input, abort, call_id).await;
        let result = self
            .after_outer_or_abort(
                env,
                OuterKind::Exec,
                call_id,
                &input,
                result,
                started,
                abort,
            )
            .await;
        record_result(
            &trajectory,
            OuterKind::Exec,
            call_id,
            &input,
            &result,
            started,
        );
        result
    }

    /// `exec` without the outer hooks and events: checks, the first leg, the settle loop, park.
    async fn exec_inner(
        &self,
        env: RunEnv,
        input: &Value,
        abort: &AbortHandle,
        call_id: &str,
    ) -> CodeModeResult {
        let started = Instant::now();
        self.runs.purge_expired();
        let env = Arc::new(env);
        let deadline = started + Duration::from_millis(env.config.timeout_ms());
        let prepared = match run::prepare(&env, input, deadline).await {
            Ok(p) => p,
            Err(result) => return *result,
        };
        if abort.is_aborted() {
            return run::vm_failure(&env, &VmError::Aborted);
        }
        // Preparation counts against the cell's deadline (docs/contract/guest.md#s4-4).
        if Instant::now() >= deadline {
            return run::vm_failure(&env, &VmError::Timeout);
        }
        let restart_safe = env.force_restart_safe || prepared.restart_safe;
        let mut run = Run::new(env, restart_safe, self.runs.clone());
        run.start(&self.runtime, &prepared.javascript, deadline, abort)
            .await;
        match run.settle(deadline, abort).await {
            run::Outcome::Done(result) => result,
            run::Outcome::Park => {
                // The cap is checked first (a slot reserved before auto-draining is reused).
                let slot = match run.take_reservation() {
                    Some(slot) => slot,
                    None => match self.runs.reserve() {
                        Ok(slot) => slot,
                        Err(e) => return run.fail(ErrorCode::InvalidInput, &e.to_string()),
                    },
                };
                let id = format!("cm_{}", uuid::Uuid::new_v4());
                let result = match run.park(&id) {
                    run::Parking::Parked(result) => result,
                    run::Parking::Failed(result) => return result,
                };
                let ttl = Duration::from_secs(run.env.config.snapshot_ttl_seconds());
                let scope = run.env.scope.clone();
                let parked = run.parked_event(call_id, &result);
                let trajectory = run.trajectory().clone();
                run.set_stored(true);
                match slot.park(id, scope, ttl, run) {
                    Ok(()) => {
                        if let Some(event) = parked {
                            trajectory.record(event);
                        }
                        result
                    }
                    Err(rejected) => {
                        let mut run = rejected.value;
                        run.fail(ErrorCode::InternalError, &rejected.error.to_string())
                    }
                }
            }
        }
    }

    /// Runs one `wait` (docs/contract/lifecycle.md#s5-3). `caller` is the scope of the agent run calling it;
    /// `input` is `{runId}` (or `{run_id}`).
    ///
    /// No outer hooks or `tool_call` / `tool_result` events run here (see
    /// [`CodeMode::wait_with`]); the run's own events (`run_resumed`, nested calls, …) are still
    /// recorded into the trajectory of the `exec` that started it, with a fresh `wait_<uuid>` as
    /// this call's id.
    pub async fn wait(
        &self,
        caller: &RunScope,
        input: &Value,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        let call_id = generated_call_id(OuterKind::Wait);
        self.wait_inner(caller, input, abort, &call_id).await
    }

    /// Runs one `wait` as the model-visible call of docs/contract/host.md#h2: `env.scope` is the
    /// caller, `env.parent_tool_call_id` this `wait`'s tool-call id (a fresh `wait_<uuid>` when
    /// unset), and
    /// `env`'s hooks, approvals and trajectory apply to the outer call exactly as for
    /// [`CodeMode::exec`] (`toolKind: "code_mode_wait"`; a block is a `failed` /
    /// `invalid_input` result). The run itself keeps the config, catalog, executor and wiring of
    /// the `exec` that started it; `env`'s are not used for it. `abort` ends the outer hooks
    /// and approval too, as for [`CodeMode::exec`] (an abort during the after hooks ends the
    /// run); a `waiting` result an after hook withholds leaves the run parked, since the model
    /// knows its `runId` from the `exec` and may `wait` again.
    pub async fn wait_with(
        &self,
        env: &RunEnv,
        input: &Value,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        let call_id = env
            .parent_tool_call_id
            .clone()
            .unwrap_or_else(|| generated_call_id(OuterKind::Wait));
        let call_id = call_id.as_str();
        let started = Instant::now();
        let trajectory = env.scoped_trajectory();
        let approver = env.outer_approver();
        let before = unless_aborted(
            abort,
            before_outer_call(
                &env.hooks,
                approver.as_ref().map(|a| a as &dyn Approver),
                OuterKind::Wait,
                call_id,
                input,
                &env.scope,
            ),
        )
        .await;
        let before = match before {
            Some(before) => before,
            None => {
                // An aborted `wait` disposes of its run (docs/contract/lifecycle.md#s5-9), also
                // when the abort came before or during the outer hooks: `wait_inner` sees the
                // fired signal, applies the scope checks (a foreign run stays parked) and drops
                // the run without resuming it. The answer is the abort result either way.
                let disposed = self.wait_inner(&env.scope, input, abort, call_id).await;
                let result = match disposed {
                    CodeModeResult::Failed {
                        code: Some(ErrorCode::Aborted),
                        ..
                    } => disposed,
                    _ => run::bare_failure(ErrorCode::Aborted, &VmError::Aborted.to_string()),
                };
                return record_refused(
                    &trajectory,
                    OuterKind::Wait,
                    call_id,
                    input,
                    result,
                    started,
                );
            }
        };
        let input = match before {
            Ok(input) => input,
            Err(message) => {
                let result = run::bare_refusal(&message);
                return record_refused(
                    &trajectory,
                    OuterKind::Wait,
                    call_id,
                    input,
                    result,
                    started,
                );
            }
        };
        record_call(&trajectory, OuterKind::Wait, call_id, &input);
        let result = self.wait_inner(&env.scope, &input, abort, call_id).await;
        let result = self
            .after_outer_or_abort(
                env,
                OuterKind::Wait,
                call_id,
                &input,
                result,
                started,
                abort,
            )
            .await;
        record_result(
            &trajectory,
            OuterKind::Wait,
            call_id,
            &input,
            &result,
            started,
        );
        result
    }

    /// The after hooks of an outer call ([`after_outer`]) raced against `abort` (then the
    /// aborted result). When an `exec`'s `waiting` result does not reach the model unchanged (a
    /// hook withheld or replaced it, or the call was aborted), its run is removed from the store
    /// at once: the model never learnt its `runId`, and it would hold a suspended-run slot until
    /// its TTL. After a `wait` the model knows the `runId` already, so a withheld result leaves
    /// the run parked (it can `wait` again); an abort ends it, as an abort during the `wait`
    /// itself does.
    #[allow(clippy::too_many_arguments)]
    async fn after_outer_or_abort(
        &self,
        env: &RunEnv,
        kind: OuterKind,
        call_id: &str,
        input: &Value,
        result: CodeModeResult,
        started: Instant,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        let parked = match &result {
            CodeModeResult::Waiting { run_id, .. } => Some(run_id.clone()),
            _ => None,
        };
        let telemetry = result.telemetry().clone();
        let replay_safe = replay_safe_of(&result);
        let after = unless_aborted(
            abort,
            after_outer(
                &env.hooks, kind, call_id, input, &env.scope, result, started,
            ),
        )
        .await;
        let (result, reason) = match after {
            Some(result) if kind == OuterKind::Exec => (result, Some(run::RESULT_WITHHELD)),
            Some(result) => (result, None),
            None => {
                let result = CodeModeResult::Failed {
                    error: VmError::Aborted.to_string(),
                    code: Some(ErrorCode::Aborted),
                    output: Vec::new(),
                    replay_safe,
                    telemetry,
                };
                (result, Some(run::OUTER_ABORTED))
            }
        };
        if let (Some(parked), Some(reason)) = (parked, reason) {
            if result.run_id() != Some(parked.as_str()) {
                run::dropping_because(reason, || self.runs.remove(&parked));
            }
        }
        result
    }

    /// `wait` without the outer hooks and events.
    async fn wait_inner(
        &self,
        caller: &RunScope,
        input: &Value,
        abort: &AbortHandle,
        call_id: &str,
    ) -> CodeModeResult {
        self.runs.purge_expired();
        let run_id = input
            .get("runId")
            .or_else(|| input.get("run_id"))
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if run_id.is_empty() {
            return run::bare_refusal(RUN_ID_REQUIRED);
        }
        // Scope checks and the in-flight guard, in the spec's order; refusals leave the run as is.
        let mut guard = match self.runs.resume(run_id, caller) {
            Ok(guard) => guard,
            Err(e) => return run::bare_refusal(&e.to_string()),
        };
        let deadline = Instant::now() + Duration::from_millis(guard.env.config.timeout_ms());
        match guard.wait_ready(deadline, abort).await {
            run::Readiness::Aborted => {
                return guard.finish().fail_vm(&VmError::Aborted);
            }
            // Dropping the guard keeps the run parked with its expiry unchanged.
            run::Readiness::NotReady => return guard.waiting_result(run_id.to_string()),
            run::Readiness::Ready => {}
        }
        if let Err(result) = guard.restore(&self.runtime).await {
            guard.finish();
            return *result;
        }
        guard.record_resumed(call_id);
        // Resume: deliver what settled (in settlement order), then continue the settle loop.
        guard.deliver_arrived(deadline, abort).await;
        match guard.settle(deadline, abort).await {
            run::Outcome::Done(result) => {
                guard.finish();
                result
            }
            run::Outcome::Park => {
                let result = match guard.park(run_id) {
                    run::Parking::Parked(result) => result,
                    run::Parking::Failed(result) => {
                        guard.finish();
                        return result;
                    }
                };
                let ttl = Duration::from_secs(guard.env.config.snapshot_ttl_seconds());
                let parked = guard.parked_event(call_id, &result);
                let trajectory = guard.trajectory().clone();
                guard.set_stored(true);
                match guard.repark(ttl) {
                    Ok(()) => {
                        if let Some(event) = parked {
                            trajectory.record(event);
                        }
                        result
                    }
                    Err(rejected) => rejected
                        .value
                        .finish()
                        .fail(ErrorCode::InternalError, &rejected.error.to_string()),
                }
            }
        }
    }
}

/// Records `tool_call` for an outer `exec` / `wait` with the input the facade runs.
/// An outer call that ends before it runs (aborted or refused by its hooks): its `tool_call` and
/// `tool_result` are recorded together, and `result` is handed back.
fn record_refused(
    trajectory: &Trajectory,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    result: CodeModeResult,
    started: Instant,
) -> CodeModeResult {
    record_call(trajectory, kind, call_id, input);
    record_result(trajectory, kind, call_id, input, &result, started);
    result
}

fn record_call(trajectory: &Trajectory, kind: OuterKind, call_id: &str, input: &Value) {
    if !trajectory.is_enabled() {
        return;
    }
    trajectory.record(EventKind::ToolCall(ToolCallEvent {
        tool_call_id: call_id.to_string(),
        tool_name: kind.tool_name().to_string(),
        tool_kind: kind.tool_kind(),
        tool_input_kind: input_kind(kind, input),
        input: input.clone(),
    }));
}

/// Records `tool_result` for an outer `exec` / `wait`: status, `codeModeRunId` of a `waiting`
/// result, wall time since `started` in milliseconds, and the result object.
fn record_result(
    trajectory: &Trajectory,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    result: &CodeModeResult,
    started: Instant,
) {
    if !trajectory.is_enabled() {
        return;
    }
    let status = match result {
        CodeModeResult::Completed { .. } => ToolStatus::Completed,
        CodeModeResult::Waiting { .. } => ToolStatus::Waiting,
        CodeModeResult::Failed { .. } => ToolStatus::Failed,
    };
    trajectory.record(EventKind::ToolResult(ToolResultEvent {
        tool_call_id: call_id.to_string(),
        tool_name: kind.tool_name().to_string(),
        tool_kind: kind.tool_kind(),
        tool_input_kind: input_kind(kind, input),
        status,
        code_mode_run_id: result.run_id().map(str::to_string),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        result: Some(result.to_json()),
        error: None,
    }));
}

/// A fresh tool-call id for an outer call the host gave none: `exec_<uuid>` / `wait_<uuid>`
/// (the UUID as 32 lowercase hex digits), unique per call.
fn generated_call_id(kind: OuterKind) -> String {
    format!("{}_{}", kind.tool_name(), uuid::Uuid::new_v4().simple())
}

/// Runs `step` unless `abort` fires first (or has fired): `None` when aborted. Dropping the
/// step cancels its hooks (their process groups are killed) and withdraws its approval.
async fn unless_aborted<T>(
    abort: &AbortHandle,
    step: impl std::future::Future<Output = T>,
) -> Option<T> {
    if abort.is_aborted() {
        return None;
    }
    tokio::select! {
        biased;
        _ = abort.fired() => None,
        out = step => Some(out),
    }
}

fn replay_safe_of(result: &CodeModeResult) -> bool {
    match result {
        CodeModeResult::Completed { replay_safe, .. }
        | CodeModeResult::Waiting { replay_safe, .. }
        | CodeModeResult::Failed { replay_safe, .. } => *replay_safe,
    }
}

fn input_kind(kind: OuterKind, input: &Value) -> Option<InputKind> {
    match kind {
        OuterKind::Exec => InputKind::of_exec_input(input),
        OuterKind::Wait => None,
    }
}

/// Runs the `after_tool_call` hooks on an outer call's result (skipped without hooks); a hook
/// may replace it with another code-mode result. A hook that fails, or replaces the result with
/// JSON that is not a code-mode result, turns it into a `failed` / `invalid_input` result with
/// `Tool "<exec|wait>" was blocked after execution: <reason>` as its error, no output, and the
/// original result's `replaySafe` and telemetry. (The caller drops a run whose `waiting` result
/// this withheld.)
async fn after_outer(
    hooks: &HookChain,
    kind: OuterKind,
    call_id: &str,
    input: &Value,
    scope: &RunScope,
    result: CodeModeResult,
    started: Instant,
) -> CodeModeResult {
    if hooks.is_empty() {
        return result;
    }
    let replaced = after_outer_call(
        hooks,
        kind,
        call_id,
        input,
        scope,
        result.to_json(),
        started.elapsed(),
    )
    .await
    .and_then(|value| {
        serde_json::from_value::<CodeModeResult>(value).map_err(|_| {
            blocked_after_message(
                kind.tool_name(),
                "a hook replaced the result with one that is not a code mode result",
            )
        })
    });
    match replaced {
        Ok(replacement) => replacement,
        Err(message) => CodeModeResult::Failed {
            error: message,
            code: Some(ErrorCode::InvalidInput),
            output: Vec::new(),
            replay_safe: replay_safe_of(&result),
            telemetry: result.telemetry().clone(),
        },
    }
}
