//! The code-mode model surface: `exec` and `wait` (spec "exec", "wait", "Run and snapshot
//! lifecycle"; behaviour.md §5).
//!
//! [`CodeMode`] is the per-process front: it owns the shared [`Runtime`] and the in-process map
//! of parked runs. A host calls [`CodeMode::exec`] with a [`RunEnv`] (resolved config, run-scoped
//! catalog, tool executor, owner scope) and the model's `exec` arguments, and
//! [`CodeMode::wait`] with the caller's scope and the `wait` arguments. Both return a
//! [`CodeModeResult`]; nothing here panics or returns `Err` on model input (behaviour.md D1).
//!
//! One `exec` runs the cell in a fresh VM, dispatches its bridge requests concurrently to the
//! executor and feeds results back as they settle (auto-drain) until the program completes or
//! the deadline (`timeoutMs`) passes; then the run parks as a snapshot under `runId` while its
//! tool calls keep running, and `wait` resumes it.

mod dispatch;
mod result;
mod run;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::Catalog;
use codemode_config::CodeModeConfig;
use codemode_runtime::{AbortHandle, Runtime, RuntimeError};
use serde_json::Value;

pub use result::{CodeModeResult, ErrorCode, PendingToolCall, Sources, Telemetry, WaitReason};

use run::{Parked, Run};

/// `code mode run is unavailable or expired.` (behaviour.md §5.3).
pub const RUN_UNAVAILABLE: &str = "code mode run is unavailable or expired.";
/// `code mode run belongs to a different agent run.`
pub const RUN_OTHER_AGENT_RUN: &str = "code mode run belongs to a different agent run.";
/// `code mode run belongs to a different session.`
pub const RUN_OTHER_SESSION: &str = "code mode run belongs to a different session.";
/// `code mode run is already being resumed.`
pub const RUN_ALREADY_RESUMING: &str = "code mode run is already being resumed.";
/// `runId must be a non-empty string.`
pub const RUN_ID_REQUIRED: &str = "runId must be a non-empty string.";
/// `too many suspended code mode runs.` (behaviour.md §5.4).
pub const TOO_MANY_SUSPENDED: &str = "too many suspended code mode runs.";
/// `too many pending code mode tool calls` (behaviour.md D4).
pub const TOO_MANY_PENDING: &str = "too many pending code mode tool calls";
/// `code mode promise is pending without host work` (behaviour.md §4.1).
pub const PENDING_WITHOUT_HOST_WORK: &str = "code mode promise is pending without host work";
/// `code mode timeout exceeded` (behaviour.md §5.7).
pub const TIMEOUT_EXCEEDED: &str = "code mode timeout exceeded";
/// `code mode execution aborted` (behaviour.md §5.9).
pub const EXECUTION_ABORTED: &str = "code mode execution aborted";
/// `code mode output limit exceeded` (behaviour.md §5.5).
pub const OUTPUT_LIMIT_EXCEEDED: &str = "code mode output limit exceeded";
/// `code mode snapshot limit exceeded` (behaviour.md §5.6).
pub const SNAPSHOT_LIMIT_EXCEEDED: &str = "code mode snapshot limit exceeded";
/// `restart-safe code mode cannot call side-effecting tools.` (behaviour.md §5.2).
pub const RESTART_SAFE_SIDE_EFFECTS: &str =
    "restart-safe code mode cannot call side-effecting tools.";

/// At most this many runs are parked per process (behaviour.md §5.4).
pub const MAX_SUSPENDED_RUNS: usize = 64;

/// Everything one `exec` needs from the host. The catalog, config and executor are captured
/// when a run parks, so `wait` uses the same ones (behaviour.md §5.3 "Parking").
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
    /// The model-visible tools, for telemetry (`exec`, `wait`, retained direct tools; D3).
    pub visible_tools: Vec<String>,
    /// Core tools the host audited as read-only (replay-safe; behaviour.md §3.6).
    pub read_only_core_tools: Vec<String>,
    /// The host forces restart-safe tools (the effective `restartSafe` is this or the input's).
    pub force_restart_safe: bool,
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
        }
    }
}

/// The per-process code-mode front: runtime plus the map of parked runs (never persisted).
pub struct CodeMode {
    runtime: Arc<Runtime>,
    runs: Arc<Mutex<HashMap<String, Arc<Parked>>>>,
}

impl CodeMode {
    /// A front over `runtime`.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        CodeMode {
            runtime,
            runs: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A front over the process-wide runtime ([`Runtime::global`]). Fails closed when the
    /// runtime cannot load (spec "Configuration": no silent fallback to direct tools).
    pub fn with_global_runtime() -> Result<Self, RuntimeError> {
        Ok(CodeMode::new(Runtime::global()?))
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Number of parked runs.
    pub fn parked_runs(&self) -> usize {
        self.runs.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Drops every parked run and cancels its pending tool calls (host shutdown or session end).
    pub fn clear(&self) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.clear();
        }
    }

    /// Runs one `exec` (behaviour.md §5.2). `input` is the model's argument object
    /// (`{code | command, language?, restartSafe?}`); `abort` cancels the call.
    pub async fn exec(&self, env: &RunEnv, input: &Value, abort: &AbortHandle) -> CodeModeResult {
        let started = Instant::now();
        self.purge_expired();
        let env = Arc::new(env.clone());
        let languages: Vec<codemode_ts::Language> = env
            .config
            .languages
            .iter()
            .filter_map(|l| codemode_ts::Language::from_name(l.as_str()))
            .collect();
        let prepared = match codemode_ts::prepare_exec(input, &languages) {
            Ok(p) => p,
            Err(rejection) => {
                return run::refusal(&env, rejection.message());
            }
        };
        if abort.is_aborted() {
            return run::failure(&env, ErrorCode::Aborted, EXECUTION_ABORTED, false);
        }
        let deadline = started + Duration::from_millis(env.config.timeout_ms);
        let restart_safe = env.force_restart_safe || prepared.restart_safe;
        let mut run = Run::new(env, restart_safe);
        run.start(&self.runtime, &prepared.javascript, deadline, abort)
            .await;
        self.settle_new(run, deadline, abort).await
    }

    /// Runs one `wait` (behaviour.md §5.3). `caller` is the scope of the agent run calling it;
    /// `input` is `{runId}` (or `{run_id}`).
    pub async fn wait(
        &self,
        caller: &RunScope,
        input: &Value,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        self.purge_expired();
        let run_id = input
            .get("runId")
            .or_else(|| input.get("run_id"))
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if run_id.is_empty() {
            return run::bare_refusal(RUN_ID_REQUIRED);
        }
        let parked = match self.runs.lock() {
            Ok(runs) => runs.get(run_id).cloned(),
            Err(_) => None,
        };
        let Some(parked) = parked else {
            return run::bare_refusal(RUN_UNAVAILABLE);
        };
        let owner = &parked.owner;
        if owner.run_id.is_some() && owner.run_id != caller.run_id {
            return run::bare_refusal(RUN_OTHER_AGENT_RUN);
        }
        let same = |o: &Option<String>, c: &Option<String>| o.is_none() || o == c;
        if !(same(&owner.session_id, &caller.session_id)
            && same(&owner.session_key, &caller.session_key)
            && same(&owner.agent_id, &caller.agent_id))
        {
            return run::bare_refusal(RUN_OTHER_SESSION);
        }
        let Ok(mut slot) = parked.run.try_lock() else {
            return run::bare_refusal(RUN_ALREADY_RESUMING);
        };
        let Some(mut run) = slot.take() else {
            return run::bare_refusal(RUN_UNAVAILABLE);
        };
        let deadline = Instant::now() + Duration::from_millis(run.env.config.timeout_ms);
        match run.wait_ready(deadline, abort).await {
            run::Readiness::Aborted => {
                self.remove(run_id);
                return run.fail(ErrorCode::Aborted, EXECUTION_ABORTED);
            }
            run::Readiness::NotReady => {
                let result = run.waiting_result(run_id.to_string());
                *slot = Some(run);
                return result;
            }
            run::Readiness::Ready => {}
        }
        if let Err(result) = run.restore(&self.runtime).await {
            drop(slot);
            self.remove(run_id);
            return *result;
        }
        // The slot stays locked while the run settles: a concurrent `wait` is refused with
        // "already being resumed" and the run stays stored.
        match run.settle(&self.runtime, deadline, abort).await {
            run::Outcome::Done(result) => {
                drop(slot);
                self.remove(run_id);
                result
            }
            run::Outcome::Park => match run.park(run_id) {
                run::Parking::Parked(result) => {
                    *slot = Some(run);
                    result
                }
                run::Parking::Failed(result) => {
                    drop(slot);
                    self.remove(run_id);
                    result
                }
            },
        }
    }

    /// After the first leg of an `exec`: settle, then finish or park under a new `runId`.
    async fn settle_new(
        &self,
        mut run: Run,
        deadline: Instant,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        match run.settle(&self.runtime, deadline, abort).await {
            run::Outcome::Done(result) => result,
            run::Outcome::Park => {
                if self.parked_runs() >= MAX_SUSPENDED_RUNS {
                    return run.fail(ErrorCode::InvalidInput, TOO_MANY_SUSPENDED);
                }
                let id = format!("cm_{}", uuid::Uuid::new_v4());
                match run.park(&id) {
                    run::Parking::Parked(result) => {
                        let parked = Arc::new(Parked::new(run.env.scope.clone(), run));
                        if let Ok(mut runs) = self.runs.lock() {
                            runs.insert(id, parked);
                        }
                        result
                    }
                    run::Parking::Failed(result) => result,
                }
            }
        }
    }

    fn remove(&self, run_id: &str) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.remove(run_id);
        }
    }

    /// Removes parked runs whose expiry has passed (their pending calls are cancelled on drop).
    fn purge_expired(&self) {
        let now = Instant::now();
        if let Ok(mut runs) = self.runs.lock() {
            runs.retain(|_, parked| !parked.expired(now));
        }
    }
}
