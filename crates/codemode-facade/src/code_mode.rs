//! [`CodeMode`], the per-process front: `exec`, `wait` and the store of parked runs
//! (docs/contract/lifecycle.md#s5-2, docs/contract/lifecycle.md#s5-3); the durable run store's
//! side is in [`durable`], approval answers relayed between processes in [`relay`], MCP task
//! records shared between processes in [`task_records`].

mod durable;
mod relay;
mod task_records;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::RunScope;
use codemode_runtime::{AbortHandle, Runtime, RuntimeError, VmError};
use codemode_snapshot::backend::RunStore;
use codemode_snapshot::seal::{KeyError, StateKeys};
use codemode_snapshot::{SnapshotStore, MAX_SUSPENDED_RUNS};
use serde_json::Value;

use crate::env::RunEnv;
use crate::failure;
use crate::messages::RUN_ID_REQUIRED;
use crate::pipeline::{
    after_outer, before_outer_call, generated_call_id, record_call, record_refused, record_result,
    replay_safe_of, unless_aborted, Approver, OuterKind,
};
use crate::prepare;
use crate::result::{CodeModeResult, ErrorCode};
use crate::run::{self, Run};
use durable::Durable;
pub use task_records::SharedTasks;

/// The per-process code-mode front: runtime plus the live table of parked runs
/// (`codemode-snapshot`), and optionally a durable run store every parked run is also written
/// to, sealed, so that another process (or this one after a restart) can resume it
/// (docs/snapshot-store.md, "What is portable").
pub struct CodeMode {
    runtime: Arc<Runtime>,
    runs: SnapshotStore<Run>,
    durable: Option<Arc<Durable>>,
    /// `true` once [`CodeMode::park_in_flight`] was called: every run parks at its next wait.
    park_now: tokio::sync::watch::Sender<bool>,
}

impl CodeMode {
    /// A front over `runtime` with the spec's cap of [`MAX_SUSPENDED_RUNS`] parked runs, kept in
    /// this process only (`--state memory`).
    pub fn new(runtime: Arc<Runtime>) -> Self {
        CodeMode {
            runtime,
            runs: SnapshotStore::new(MAX_SUSPENDED_RUNS),
            durable: None,
            park_now: tokio::sync::watch::channel(false).0,
        }
    }

    /// The same front holding at most `max_runs` parked runs (plus reservations) instead of the
    /// spec's [`MAX_SUSPENDED_RUNS`] (64): for a host process that parks many agents' runs at
    /// once. An idle parked run holds about 24 KB of the process's memory (docs/benchmarks.md,
    /// "Parked runs: memory and restore"); one holding live data, its snapshot's size. Call
    /// before the first `exec`: runs already parked are dropped with the old table.
    pub fn with_suspended_cap(mut self, max_runs: usize) -> Self {
        self.runs = SnapshotStore::new(max_runs);
        self
    }

    /// A front over `runtime` whose parked runs are also written to `store`, sealed with `keys`
    /// (docs/snapshot-store.md). A store that is not durable (`memory`) changes nothing.
    ///
    /// # Errors
    /// [`KeyError::Missing`] (naming the store) when `store` is durable and `keys` is `None`.
    pub fn with_store(
        runtime: Arc<Runtime>,
        store: Arc<dyn RunStore>,
        keys: Option<StateKeys>,
    ) -> Result<Self, KeyError> {
        let mut code_mode = CodeMode::new(runtime);
        if store.is_durable() {
            let keys = keys.ok_or_else(|| KeyError::Missing {
                url: store.describe(),
            })?;
            let guest_sha256 = run::hex(&code_mode.runtime.image_sha256());
            code_mode.durable = Some(Arc::new(Durable::new(store, keys, guest_sha256)));
        }
        Ok(code_mode)
    }

    /// Stopping into the store (docs/deployment.md, "Stopping"): every run in flight, in an
    /// `exec` or a `wait`, parks at its next wait for host work instead of waiting on (a leg of
    /// JavaScript already running finishes first, within its `timeoutMs`), so its call answers
    /// `waiting` and, with a durable store, its sealed record lets another process resume it;
    /// tool calls still running then are lost there, visibly. Runs started later park at their
    /// first wait. Not undone.
    pub fn park_in_flight(&self) {
        self.park_now.send_replace(true);
    }

    /// `true` once [`CodeMode::park_in_flight`] was called.
    pub fn is_parking_in_flight(&self) -> bool {
        *self.park_now.borrow()
    }

    /// The durable run store parked runs are written to, if any.
    pub fn run_store(&self) -> Option<&Arc<dyn RunStore>> {
        self.durable.as_ref().map(|d| &d.store)
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
    /// Records in a durable run store stay: another process (or this one restarted) resumes
    /// them.
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
        fn same(wanted: &Option<String>, owned: &Option<String>) -> bool {
            wanted.is_none() || wanted.as_deref() == owned.as_deref()
        }
        if let (Some(durable), Ok(handle)) = (&self.durable, tokio::runtime::Handle::try_current())
        {
            // The session's stored records go too (in the background: this call is not async).
            let store = durable.store.clone();
            let session = session.clone();
            handle.spawn(async move {
                let Ok(metas) = store.list().await else {
                    return;
                };
                for meta in metas {
                    let owned = &meta.owner;
                    if same(&session.session_id, &owned.session_id)
                        && same(&session.session_key, &owned.session_key)
                    {
                        let _ = store.remove(&meta.run_id).await;
                    }
                }
            });
        }
        run::dropping_because(run::SESSION_ENDED, || {
            self.runs.remove_where(|owner| {
                same(&session.session_id, &owner.session_id)
                    && same(&session.session_key, &owner.session_key)
            })
        })
    }

    /// How many runs this process holds parked (or is resuming) whose owner `owned` selects:
    /// what a per-principal cap counts (docs/deployment.md, "Bearer tokens and principals").
    pub fn parked_runs_where(&self, owned: impl Fn(&RunScope) -> bool) -> usize {
        self.runs.count_where(owned)
    }

    /// Lets go of the session `session` in this process only: its parked runs are dropped here
    /// as by [`CodeMode::end_session`], but their records in a durable run store stay, because
    /// the scope is shared with other processes (the anonymous or per-principal scope of
    /// stateless HTTP requests, docs/deployment.md). With the `memory` store it is
    /// [`CodeMode::end_session`]. Returns how many runs were dropped here.
    pub fn release_session(&self, session: &RunScope) -> usize {
        if self.durable.is_none() {
            return self.end_session(session);
        }
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
        self.reclaim_if_full().await;
        let env = Arc::new(env);
        let deadline = started + Duration::from_millis(env.config.timeout_ms());
        let prepared = match prepare::prepare(&env, input, deadline).await {
            Ok(p) => p,
            Err(result) => return *result,
        };
        if abort.is_aborted() {
            return failure::vm_failure(&env, &VmError::Aborted);
        }
        // Preparation counts against the cell's deadline (docs/contract/guest.md#s4-4).
        if Instant::now() >= deadline {
            return failure::preparation_timeout(&env, prepared.javascript.len());
        }
        let restart_safe = env.force_restart_safe || prepared.restart_safe;
        let mut run = Run::new(env, restart_safe, self.runs.clone());
        run.set_park_signal(self.park_now.subscribe());
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
                let owned = match self.save(&mut run, &id, &scope, ttl).await {
                    Ok(owned) => owned,
                    Err(failure) => return failure,
                };
                let parked = run.parked_event(call_id, &result);
                let trajectory = run.trajectory().clone();
                let settled = run.settled_signal();
                run.set_stored(true);
                match slot.park(id.clone(), scope.clone(), ttl, run) {
                    Ok(()) => {
                        if owned {
                            self.own(&id, &scope, settled);
                        }
                        if let Some(event) = parked {
                            trajectory.record(event);
                        }
                        result
                    }
                    Err(rejected) => {
                        self.forget(&rejected.value.run_id_or_empty()).await;
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
        self.wait_inner(caller, None, input, abort, &call_id).await
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
                    OuterKind::Exec => {
                        failure::failure(env, ErrorCode::InvalidInput, &message, false)
                    }
                    OuterKind::Wait => failure::bare_refusal(&message),
                };
                return record_refused(&trajectory, kind, call_id, input, result, started);
            }
            None => {
                let result = match kind {
                    OuterKind::Exec => failure::vm_failure(env, &VmError::Aborted),
                    OuterKind::Wait => {
                        // An aborted `wait` disposes of its run (docs/contract/lifecycle.md#s5-9),
                        // also when the abort came before or during the outer hooks:
                        // `wait_inner` sees the fired signal, applies the scope checks (a
                        // foreign run stays parked) and drops the run without resuming it. The
                        // answer is the abort result either way.
                        let disposed = self
                            .wait_inner(&env.scope, Some(env), input, abort, call_id)
                            .await;
                        match disposed {
                            CodeModeResult::Failed {
                                code: Some(ErrorCode::Aborted),
                                ..
                            } => disposed,
                            _ => failure::bare_failure(
                                ErrorCode::Aborted,
                                &VmError::Aborted.to_string(),
                            ),
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
            OuterKind::Wait => {
                self.wait_inner(&env.scope, Some(env), &input, abort, call_id)
                    .await
            }
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
                self.forget(&parked).await;
            }
        }
        result
    }

    /// With a durable run store, when the live table is full (parked runs plus reservations at
    /// the cap): [`CodeMode::reclaim_stale`], dropping the idle live copies whose record is no longer in the store, because
    /// another process completed, failed or purged the run (docs/deployment.md, "Several
    /// processes"). Behind a round-robin balancer most runs a process parks are finished
    /// elsewhere; without this their copies would hold the process's slots until their TTL. A
    /// store that cannot be listed changes nothing.
    async fn reclaim_if_full(&self) {
        if self.runs.len() + self.runs.reserved() >= self.runs.max_runs() {
            self.reclaim_stale().await;
        }
    }

    /// Drops the idle live copies of runs whose record is no longer in the durable run store
    /// (completed, failed or purged by another process; see `reclaim_if_full`): what a host's
    /// per-caller cap calls before refusing. Returns how many were dropped; 0 without a durable
    /// store or when the store cannot be listed.
    pub async fn reclaim_stale(&self) -> usize {
        let Some(durable) = &self.durable else {
            return 0;
        };
        let Ok(metas) = durable.store.list().await else {
            return 0;
        };
        let stored: std::collections::HashSet<String> =
            metas.into_iter().map(|meta| meta.run_id).collect();
        let dropped = run::dropping_because(run::SNAPSHOT_TTL, || {
            self.runs.remove_idle_where(|id| !stored.contains(id))
        });
        if dropped > 0 {
            tracing::debug!(dropped, "dropped live copies of runs that ended elsewhere");
        }
        dropped
    }

    /// `wait` without the outer hooks and events. With a durable run store and the `wait`'s
    /// `env`, a run this process does not hold is restored from the store, and a run it holds is
    /// checked against the store first (docs/snapshot-store.md, "What is portable").
    async fn wait_inner(
        &self,
        caller: &RunScope,
        env: Option<&RunEnv>,
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
            return failure::bare_refusal(RUN_ID_REQUIRED);
        }
        self.reclaim_if_full().await;
        // Scope checks and the in-flight guard, in the spec's order; refusals leave the run as is.
        let resumed = match self.resume(run_id, caller, env, abort).await {
            Ok(resumed) => resumed,
            Err(answer) => return *answer,
        };
        let (mut guard, claim) = (resumed.guard, resumed.claim);
        guard.set_park_signal(self.park_now.subscribe());
        let timeout = Duration::from_millis(guard.env.config.timeout_ms());
        // A `wait` that followed the run's owner keeps the budget it started with.
        let deadline = resumed.deadline.unwrap_or_else(|| Instant::now() + timeout);
        match guard.wait_ready(deadline, abort).await {
            run::Readiness::Aborted => {
                self.forget(run_id).await;
                return guard.finish().fail_vm(&VmError::Aborted);
            }
            // Dropping the guard keeps the run parked with its expiry unchanged.
            run::Readiness::NotReady => {
                let result = guard.waiting_result(run_id.to_string());
                let owned = self.adopt(&mut guard, run_id).await;
                let (owner, settled) = (guard.env.scope.clone(), guard.settled_signal());
                drop(guard);
                self.release(claim.as_ref()).await;
                if owned {
                    self.own(run_id, &owner, settled);
                }
                return result;
            }
            run::Readiness::Ready => {}
        }
        if let Err(result) = guard.restore(&self.runtime).await {
            self.conclude(&mut guard, run_id, &result).await;
            guard.finish();
            return *result;
        }
        guard.record_resumed(call_id);
        // Resume: deliver what settled (in settlement order), then continue the settle loop.
        guard.deliver_arrived(deadline, abort).await;
        let result = match guard.settle(deadline, abort).await {
            run::Outcome::Done(result) => result,
            run::Outcome::Park => match guard.park(run_id) {
                run::Parking::Failed(result) => result,
                run::Parking::Parked(result) => {
                    let ttl = Duration::from_secs(guard.env.config.snapshot_ttl_seconds());
                    let owner = guard.env.scope.clone();
                    match self.save(&mut guard, run_id, &owner, ttl).await {
                        Err(failure) => failure,
                        Ok(owned) => {
                            let parked = guard.parked_event(call_id, &result);
                            let trajectory = guard.trajectory().clone();
                            let settled = guard.settled_signal();
                            guard.set_stored(true);
                            return match guard.repark(ttl) {
                                Ok(()) => {
                                    if owned {
                                        self.own(run_id, &owner, settled);
                                    }
                                    if let Some(event) = parked {
                                        trajectory.record(event);
                                    }
                                    result
                                }
                                Err(rejected) => rejected
                                    .value
                                    .finish()
                                    .fail(ErrorCode::InternalError, &rejected.error.to_string()),
                            };
                        }
                    }
                }
            },
        };
        // Completed or failed: the followers elsewhere get the same result.
        self.conclude(&mut guard, run_id, &result).await;
        guard.finish();
        result
    }
}
