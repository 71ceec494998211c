//! [`CodeMode`], the per-process front: `exec`, `wait` and the store of parked runs
//! (docs/contract/lifecycle.md#s5-2, docs/contract/lifecycle.md#s5-3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::RunScope;
use codemode_runtime::{AbortHandle, Runtime, RuntimeError, VmError};
use codemode_snapshot::{SnapshotStore, MAX_SUSPENDED_RUNS};
use serde_json::Value;

use crate::env::RunEnv;
use crate::messages::RUN_ID_REQUIRED;
use crate::pipeline::{
    after_outer, before_outer_call, generated_call_id, record_call, record_refused, record_result,
    replay_safe_of, unless_aborted, Approver, OuterKind,
};
use crate::result::{CodeModeResult, ErrorCode};
use crate::run::{self, Run};

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
        self.outer_call(env, OuterKind::Exec, input, abort).await
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
        self.outer_call(env, OuterKind::Wait, input, abort).await
    }

    /// The envelope of a model-visible `exec` or `wait` (docs/contract/host.md#h2), shared by
    /// [`CodeMode::exec`] and [`CodeMode::wait_with`]: the call id (`env.parent_tool_call_id`,
    /// or a fresh `<kind>_<uuid>`), the before hooks raced against `abort`, the two refusals
    /// (aborted before the call ran, or blocked / not approved by a hook), `tool_call`, the call
    /// itself, the after hooks raced against `abort`, and `tool_result`.
    async fn outer_call(
        &self,
        env: &RunEnv,
        kind: OuterKind,
        input: &Value,
        abort: &AbortHandle,
    ) -> CodeModeResult {
        let call_id = env
            .parent_tool_call_id
            .clone()
            .unwrap_or_else(|| generated_call_id(kind));
        let call_id = call_id.as_str();
        let started = Instant::now();
        let trajectory = env.scoped_trajectory();
        let approver = env.outer_approver();
        let before = unless_aborted(
            abort,
            before_outer_call(
                &env.hooks,
                approver.as_ref().map(|a| a as &dyn Approver),
                kind,
                call_id,
                input,
                &env.scope,
            ),
        )
        .await;
        let input = match before {
            Some(Ok(input)) => input,
            Some(Err(message)) => {
                let result = match kind {
                    OuterKind::Exec => run::failure(env, ErrorCode::InvalidInput, &message, false),
                    OuterKind::Wait => run::bare_refusal(&message),
                };
                return record_refused(&trajectory, kind, call_id, input, result, started);
            }
            None => {
                let result = match kind {
                    OuterKind::Exec => run::vm_failure(env, &VmError::Aborted),
                    OuterKind::Wait => {
                        // An aborted `wait` disposes of its run (docs/contract/lifecycle.md#s5-9),
                        // also when the abort came before or during the outer hooks:
                        // `wait_inner` sees the fired signal, applies the scope checks (a
                        // foreign run stays parked) and drops the run without resuming it. The
                        // answer is the abort result either way.
                        let disposed = self.wait_inner(&env.scope, input, abort, call_id).await;
                        match disposed {
                            CodeModeResult::Failed {
                                code: Some(ErrorCode::Aborted),
                                ..
                            } => disposed,
                            _ => {
                                run::bare_failure(ErrorCode::Aborted, &VmError::Aborted.to_string())
                            }
                        }
                    }
                };
                return record_refused(&trajectory, kind, call_id, input, result, started);
            }
        };
        record_call(&trajectory, kind, call_id, &input);
        let result = match kind {
            OuterKind::Exec => {
                // The run is named after this call's id, generated or not.
                let mut run_env = env.clone();
                run_env.parent_tool_call_id = Some(call_id.to_string());
                self.exec_inner(run_env, &input, abort, call_id).await
            }
            OuterKind::Wait => self.wait_inner(&env.scope, &input, abort, call_id).await,
        };
        let result = self
            .after_outer_or_abort(env, kind, call_id, &input, result, started, abort)
            .await;
        record_result(&trajectory, kind, call_id, &input, &result, started);
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
