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

mod dispatch;
mod pipeline;
mod result;
mod run;
mod surface;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::Catalog;
use codemode_config::CodeModeConfig;
use codemode_runtime::{AbortHandle, Runtime, RuntimeError, VmError};
use serde_json::Value;

pub use pipeline::{
    after_outer_call, before_outer_call, blocked_after_message, blocked_message,
    not_approved_message, unknown_tool_message, AfterDecision, AfterToolCall, ApprovalBroker,
    ApprovalDecision, ApprovalFuture, ApprovalRequest, ApprovalVerdict, Approver, BeforeToolCall,
    BeforeVerdict, CommandHook, Decision, FixedApprover, HookChain, HookDecision, HookEvent,
    HookFuture, HookPhase, OuterKind, PendingApproval, ToolCallInfo, ToolHook, ToolInputKind,
    ToolKind, ToolPipeline, UnknownApproval, APPROVAL_CANCELLED, APPROVAL_EXPIRED,
    DEFAULT_DENIAL_REASON, HOOK_ENVIRONMENT, HOOK_STDOUT_LIMIT,
};
pub use codemode_catalog::SourceCounts;
pub use result::{CodeModeResult, ErrorCode, PendingToolCall, Telemetry, WaitReason};
pub use surface::*;

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
    pub parent_tool_call_id: Option<String>,
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
        }
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
        self.runs.clear();
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
        self.runs.remove_where(|owner| {
            same(&session.session_id, &owner.session_id)
                && same(&session.session_key, &owner.session_key)
        })
    }

    /// Runs one `exec` (docs/contract/lifecycle.md#s5-2). `input` is the model's argument object
    /// (`{code | command, language?, restartSafe?}`); `abort` cancels the call.
    pub async fn exec(&self, env: &RunEnv, input: &Value, abort: &AbortHandle) -> CodeModeResult {
        let started = Instant::now();
        self.runs.purge_expired();
        let env = Arc::new(env.clone());
        let prepared = match codemode_ts::prepare_exec(input, env.config.languages()) {
            Ok(p) => p,
            Err(rejection) => return run::refusal(&env, rejection.message()),
        };
        if abort.is_aborted() {
            return run::vm_failure(&env, &VmError::Aborted);
        }
        let deadline = started + Duration::from_millis(env.config.timeout_ms());
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
                match slot.park(id, scope, ttl, run) {
                    Ok(()) => result,
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
    pub async fn wait(
        &self,
        caller: &RunScope,
        input: &Value,
        abort: &AbortHandle,
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
                match guard.repark(ttl) {
                    Ok(()) => result,
                    Err(rejected) => rejected
                        .value
                        .finish()
                        .fail(ErrorCode::InternalError, &rejected.error.to_string()),
                }
            }
        }
    }
}
