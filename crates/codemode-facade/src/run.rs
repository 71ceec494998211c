//! One code-mode run: its VM or snapshot, in-flight tool calls, and the settle loop
//! (docs/contract/lifecycle.md#s5-2 to #s5-6).

mod events;
mod inline;
mod portable;
mod results;
mod stopping;

pub(crate) use portable::{catalog_fingerprint, hex, waiting_elsewhere, RecordStamp};
use results::wait_reason;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{BridgeMethod, BridgeRequest, Delivery, GuestReport, GuestState, OutputItem};
use codemode_runtime::{run_leg, AbortHandle, LegBudget, Runtime, Snapshot, Vm, VmError, VmLimits};
use codemode_snapshot::{Reservation, SnapshotStore};
use codemode_telemetry::{EventKind, NestedToolResultEvent, RunEndedEvent, Trajectory};
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::dispatch::{Counters, Dispatched, Dispatcher};
use crate::env::RunEnv;
use crate::failure::map_vm_error;
use crate::limits::LimitExceeded;
use crate::messages::{RESTART_SAFE_NAMESPACE, RESTART_SAFE_SIDE_EFFECTS};
use crate::missing::MissingConveniences;
use crate::pipeline::ledger::CallLedger;
use crate::pipeline::{RunApprovals, ToolPipeline};
use crate::prepare::{eager_run_context, lazy_run_context};
use crate::result::{CodeModeResult, ErrorCode};

pub(crate) enum Readiness {
    Ready,
    NotReady,
    Aborted,
}

/// What [`Run::park`] did.
pub(crate) enum Parking {
    /// Parked; the `waiting` result.
    Parked(CodeModeResult),
    /// Could not park; the failure result (the run is over).
    Failed(CodeModeResult),
}

pub(crate) enum Outcome {
    Done(CodeModeResult),
    Park,
}

pub(crate) struct Run {
    pub(crate) env: Arc<RunEnv>,
    restart_safe: bool,
    dispatcher: Dispatcher,
    tx: UnboundedSender<Delivery>,
    rx: UnboundedReceiver<Delivery>,
    /// In-flight host work by bridge id; aborted when the run is dropped.
    tasks: HashMap<String, JoinHandle<()>>,
    /// Settled requests not yet delivered, in the order they settled.
    arrived: Vec<Delivery>,
    /// The deadline of the current `exec` / `wait` (set by [`Run::settle`]); parking must
    /// finish its snapshot by it plus [`SNAPSHOT_GRACE`].
    deadline: Option<Instant>,
    /// Requests the runtime refused for the size of their arguments (bridge id → message):
    /// settled with the message instead of being dispatched (docs/threat-model.md).
    refused: HashMap<String, String>,
    /// Requests the guest waits for (delivered ones removed), in creation order.
    pending: Vec<BridgeRequest>,
    /// The main promise's first settlement.
    main: Option<Result<Value, String>>,
    /// Output since the previous result (docs/contract/decisions.md#d5).
    output: Vec<OutputItem>,
    vm: Option<Vm>,
    snapshot: Option<Snapshot>,
    /// A failure that ends the run at the next step of the settle loop.
    error: Option<(ErrorCode, String)>,
    run_id: Option<String>,
    /// The store parked runs go to, and the slot reserved before auto-draining (docs/contract/lifecycle.md#s5-4).
    store: SnapshotStore<Run>,
    reservation: Option<Reservation<Run>>,
    /// The run's trajectory, stamped with its owner scope.
    trajectory: Trajectory,
    /// The run's view of the host's approval broker (its `pendingApprovals`).
    approvals: Option<RunApprovals>,
    /// True while the run sits in the store: dropping it then means it expired or its session
    /// ended (`run_expired`); a terminal result clears it.
    stored: bool,
    /// Calls of convenience names this catalog lacks, by line, for the failure text.
    missing: MissingConveniences,
    /// Where the program ends, to place a syntax error inside it (docs/contract/decisions.md#d16).
    program_end: codemode_ts::ProgramEnd,
    /// The sealed record last written to a durable run store for this run
    /// (docs/snapshot-store.md, "What is portable").
    record: Option<portable::RecordStamp>,
    /// The process is stopping into a durable store ([`crate::code_mode::CodeMode::park_in_flight`]):
    /// once it reads `true`, the run parks at its next wait instead of waiting on.
    park_now: Option<tokio::sync::watch::Receiver<bool>>,
    /// The `nested_tool_result`s of the calls lost with the process that last held this run
    /// (restored from its record), recorded when a `wait` here resumes it
    /// (`run/portable.rs`).
    lost: Vec<NestedToolResultEvent>,
}

/// `reason` of `run_expired` when the snapshot TTL passed.
pub(crate) const SNAPSHOT_TTL: &str = "snapshot TTL";
/// `reason` of `run_expired` when [`crate::code_mode::CodeMode::end_session`] dropped the run.
pub(crate) const SESSION_ENDED: &str = "session ended";
/// `reason` of `run_expired` when [`crate::code_mode::CodeMode::clear`] dropped the run.
pub(crate) const RUNS_CLEARED: &str = "runs cleared";
/// `reason` of `run_expired` when an outer `after_tool_call` hook withheld (or replaced) the
/// `waiting` result that named the run, so the model never got its `runId`.
pub(crate) const RESULT_WITHHELD: &str = "result withheld";
/// `reason` of `run_expired` when the outer call that parked the run was aborted before its
/// `waiting` result was returned.
pub(crate) const OUTER_ABORTED: &str = "aborted";

thread_local! {
    /// Why parked runs dropped on this thread are being dropped ([`SNAPSHOT_TTL`] when unset):
    /// the store drops payloads synchronously on the thread that removes them.
    static DROP_REASON: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Runs `f` (which removes parked runs from the store) with `reason` as the `run_expired`
/// reason of the runs it drops.
pub(crate) fn dropping_because<T>(reason: &'static str, f: impl FnOnce() -> T) -> T {
    let previous = DROP_REASON.with(|r| r.replace(Some(reason)));
    let out = f();
    DROP_REASON.with(|r| r.set(previous));
    out
}

impl Drop for Run {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
        if self.stored && self.trajectory.is_enabled() {
            let reason = DROP_REASON.with(Cell::get).unwrap_or(SNAPSHOT_TTL);
            self.trajectory.record(EventKind::RunExpired(RunEndedEvent {
                code_mode_run_id: self.run_id.clone(),
                parent_tool_call_id: self.env.parent_tool_call_id.clone(),
                reason: Some(reason.to_string()),
            }));
        }
    }
}

fn limits(env: &RunEnv) -> VmLimits {
    VmLimits {
        memory_limit_bytes: env.config.memory_limit_bytes(),
        max_output_bytes: env.config.max_output_bytes(),
        max_requests: env.config.max_pending_tool_calls(),
    }
}

/// How long after the deadline a parking snapshot may still take (docs/contract/decisions.md#d6's
/// bound on the hard deadline); past it the result is `timeout` (docs/threat-model.md,
/// "Deadlines": a 900 MB heap took 3 s past the deadline to compress).
const SNAPSHOT_GRACE: Duration = Duration::from_millis(250);

/// How close to its deadline the settle loop stops waiting for calls still running and parks
/// (or, when everything settled, delivers with this long to run past the deadline,
/// docs/contract/decisions.md#d16): 250 ms, or half the timeout when that is shorter.
fn settle_floor(config: &codemode_config::CodeModeConfig) -> Duration {
    Duration::from_millis(250.min((config.timeout_ms() / 2).max(1)))
}

/// UTF-8 length of `JSON.stringify(v)`.
fn json_len<T: serde::Serialize>(v: &T) -> u64 {
    serde_json::to_vec(v)
        .map(|b| b.len() as u64)
        .unwrap_or(u64::MAX)
}

impl Run {
    pub(crate) fn new(env: Arc<RunEnv>, restart_safe: bool, store: SnapshotStore<Run>) -> Run {
        let (tx, rx) = unbounded_channel();
        let trajectory = env.trajectory.with_scope(env.scope.clone());
        let approvals = env.approvals.clone().map(RunApprovals::new);
        let settled = Arc::new(tokio::sync::Notify::new());
        let ledger = Arc::new(CallLedger::new(settled.clone()));
        let mut pipeline = ToolPipeline::new(env.executor.clone())
            .with_ledger(ledger.clone())
            .with_shared_policy(env.policy.clone())
            .with_hooks(env.hooks.clone())
            .with_trajectory(trajectory.clone());
        if let Some(approvals) = &approvals {
            pipeline = pipeline.with_approver(Arc::new(approvals.clone()));
        }
        let dispatcher = Dispatcher {
            catalog: env.catalog.clone(),
            pipeline,
            trajectory: trajectory.clone(),
            scope: env.scope.clone(),
            parent_tool_call_id: env.parent_tool_call_id.clone(),
            namespace: env.catalog.mcp_namespace(),
            counters: Arc::new(Counters::default()),
            tool_timeout: Duration::from_secs(env.config.snapshot_ttl_seconds()),
            settled,
            ledger,
        };
        Run {
            store,
            reservation: None,
            trajectory,
            approvals,
            stored: false,
            env,
            restart_safe,
            dispatcher,
            tx,
            rx,
            tasks: HashMap::new(),
            arrived: Vec::new(),
            refused: HashMap::new(),
            deadline: None,
            pending: Vec::new(),
            main: None,
            output: Vec::new(),
            vm: None,
            snapshot: None,
            error: None,
            run_id: None,
            missing: MissingConveniences::default(),
            program_end: codemode_ts::ProgramEnd::default(),
            record: None,
            park_now: None,
            lost: Vec::new(),
        }
    }

    /// The first leg: a fresh VM evaluates the prepared JavaScript, with the catalog's run
    /// context (built once per catalog, docs/guest-abi.md "Run context").
    pub(crate) async fn start(
        &mut self,
        runtime: &Arc<Runtime>,
        javascript: &str,
        deadline: Instant,
        abort: &AbortHandle,
    ) {
        // The lazy context (built once per catalog) answers "is this a convenience" by hash.
        let lazy = self.env.catalog.run_context(lazy_run_context);
        self.missing =
            MissingConveniences::scan(javascript, |name| lazy.convenience(name).is_some());
        self.program_end = codemode_ts::ProgramEnd::of(javascript);
        // The scans are linear, but they and preparation still count against the deadline
        // (docs/threat-model.md, "Deadlines"): past it no leg starts.
        if Instant::now() >= deadline {
            let message =
                LimitExceeded::preparation_timeout(javascript.len(), self.env.config.timeout_ms());
            self.error = Some((ErrorCode::Timeout, message.to_string()));
            return;
        }
        let limits = limits(&self.env);
        let context = if self.env.install_catalog_eagerly {
            eager_run_context(&self.env.catalog)
        } else {
            lazy
        };
        let budget = LegBudget {
            soft_deadline: deadline,
            abort: abort.clone(),
        };
        let runtime = runtime.clone();
        let javascript = javascript.to_string();
        let leg = run_leg(
            move || -> Result<(Vm, Result<GuestReport, VmError>), String> {
                let mut vm = runtime.fresh_vm(&limits).map_err(|e| e.to_string())?;
                let report = vm.start(&javascript, &context, &limits, &budget);
                Ok((vm, report))
            },
        )
        .await;
        match leg {
            Err(panic) => self.error = Some((ErrorCode::InternalError, panic.to_string())),
            Ok(Err(unavailable)) => self.error = Some((ErrorCode::RuntimeUnavailable, unavailable)),
            Ok(Ok((vm, report))) => self.take_step(vm, vec![report]),
        }
    }

    /// Absorbs the reports of one leg: output, the main promise's first settlement, pending.
    fn take_step(&mut self, mut vm: Vm, reports: Vec<Result<GuestReport, VmError>>) {
        // Requests refused for their size settle with the refusal, never dispatched.
        self.refused.extend(vm.take_refusals());
        for report in reports {
            match report {
                Ok(report) => {
                    if report.request_overflow {
                        self.error = Some((
                            ErrorCode::InvalidInput,
                            LimitExceeded::pending(None, self.env.config.max_pending_tool_calls())
                                .to_string(),
                        ));
                        self.vm = None;
                        return;
                    }
                    if report.output_overflow {
                        self.output.clear();
                        self.error = Some((
                            ErrorCode::OutputLimitExceeded,
                            LimitExceeded::output(None, self.env.config.max_output_bytes())
                                .to_string(),
                        ));
                        self.vm = None;
                        return;
                    }
                    self.output.extend(report.output);
                    if self.main.is_none() {
                        match report.state {
                            GuestState::Completed { value } => self.main = Some(Ok(value)),
                            GuestState::Failed { error } => self.main = Some(Err(error)),
                            GuestState::Pending => {}
                        }
                    }
                }
                Err(e) => {
                    // Output written before a timeout or abort stays (docs/contract/lifecycle.md#s5-3).
                    self.output.extend(vm.take_output_at_stop());
                    self.error = Some(map_vm_error(&e, &self.env.config));
                    self.vm = None;
                    return;
                }
            }
        }
        self.pending = vm.pending().to_vec();
        self.vm = Some(vm);
        self.snapshot = None;
    }

    /// The slot reserved while auto-draining, for parking a new run.
    pub(crate) fn take_reservation(&mut self) -> Option<Reservation<Run>> {
        self.reservation.take()
    }

    /// Settle loop (docs/contract/lifecycle.md#s5-2) over the live VM.
    pub(crate) async fn settle(&mut self, deadline: Instant, abort: &AbortHandle) -> Outcome {
        self.deadline = Some(deadline);
        let config = self.env.config.clone();
        loop {
            if let Some((code, message)) = self.error.take() {
                return Outcome::Done(self.fail(code, &message));
            }
            if self.pending.is_empty() {
                return Outcome::Done(self.finish());
            }
            if self.pending.len() as u64 > config.max_pending_tool_calls() {
                let message = LimitExceeded::pending(
                    Some(self.pending.len() as u64),
                    config.max_pending_tool_calls(),
                )
                .to_string();
                return Outcome::Done(self.fail(ErrorCode::InvalidInput, &message));
            }
            if self.pending.iter().any(|p| p.method == BridgeMethod::Yield) {
                return Outcome::Park;
            }
            if self.restart_safe {
                if self
                    .pending
                    .iter()
                    .all(|p| p.method == BridgeMethod::Namespace)
                {
                    return Outcome::Done(
                        self.fail(ErrorCode::InvalidInput, RESTART_SAFE_NAMESPACE),
                    );
                }
                return Outcome::Park;
            }
            if Instant::now() >= deadline || self.park_requested() {
                return Outcome::Park;
            }
            if abort.is_aborted() {
                return Outcome::Done(self.fail_vm(&VmError::Aborted));
            }
            if let Some(result) = self.output_limit_failure(None) {
                return Outcome::Done(result);
            }
            if let Some(result) = self.snapshot_limit_failure() {
                return Outcome::Done(result);
            }
            // A new run reserves its suspended-run slot before any host work starts, so work
            // that outlives the deadline can always park (a resumed run keeps its own slot).
            if self.run_id.is_none() && self.reservation.is_none() {
                match self.store.reserve() {
                    Ok(slot) => self.reservation = Some(slot),
                    Err(e) => {
                        return Outcome::Done(self.fail(ErrorCode::InvalidInput, &e.to_string()))
                    }
                }
            }
            self.dispatch_new();
            match self.wait_ready(deadline, abort).await {
                Readiness::Aborted => return Outcome::Done(self.fail_vm(&VmError::Aborted)),
                Readiness::NotReady => return Outcome::Park,
                Readiness::Ready => {}
            }
            let floor = settle_floor(&config);
            if deadline.saturating_duration_since(Instant::now()) < floor {
                if self.arrived.len() < self.pending.len() {
                    return Outcome::Park;
                }
                // Everything settled: parking would leave `wait` nothing to wait for, so the
                // results are delivered now, with `floor` to run in even past the deadline
                // (docs/contract/decisions.md#d16).
                let grace = Instant::now() + floor;
                self.deliver_arrived(deadline.max(grace), abort).await;
                continue;
            }
            self.deliver_arrived(deadline, abort).await;
        }
    }

    /// Delivers every settled request, in the order they settled, on a leg thread; there the
    /// run goes on while its new requests settle at once ([`inline::Continuation`]).
    pub(crate) async fn deliver_arrived(&mut self, deadline: Instant, abort: &AbortHandle) {
        let Some(mut vm) = self.vm.take() else {
            self.error = Some((ErrorCode::InternalError, "code mode VM is missing".into()));
            return;
        };
        let deliveries = std::mem::take(&mut self.arrived);
        let budget = LegBudget {
            soft_deadline: deadline,
            abort: abort.clone(),
        };
        let continuation = self.continuation(deadline, abort);
        let leg = run_leg(move || {
            let mut reports = Vec::with_capacity(deliveries.len());
            for delivery in &deliveries {
                let report = vm.deliver(delivery, &budget);
                let stop = report.is_err();
                reports.push(report);
                if stop {
                    break;
                }
            }
            let continued = match continuation {
                Some(continuation) if reports.last().is_some_and(Result::is_ok) => {
                    continuation.run(&mut vm, &mut reports, &budget)
                }
                _ => inline::Continued::default(),
            };
            (vm, reports, continued)
        })
        .await;
        match leg {
            Ok((vm, reports, continued)) => {
                self.take_step(vm, reports);
                self.take_over(continued);
            }
            Err(panic) => self.error = Some((ErrorCode::InternalError, panic.to_string())),
        }
    }

    /// Starts host work for pending requests that have not started (creation order).
    fn dispatch_new(&mut self) {
        for request in &self.pending {
            if self.tasks.contains_key(&request.id)
                || self.arrived.iter().any(|d| d.id == request.id)
            {
                continue;
            }
            if let Some(message) = self.refused.remove(&request.id) {
                self.arrived.push(Delivery {
                    id: request.id.clone(),
                    outcome: Err(message),
                });
                continue;
            }
            match self
                .dispatcher
                .dispatch(request, self.run_id.clone(), self.tx.clone())
            {
                Dispatched::Settled(delivery) => self.arrived.push(delivery),
                Dispatched::Running(handle) => {
                    self.tasks.insert(request.id.clone(), handle);
                }
            }
        }
    }

    fn accept(&mut self, delivery: Delivery) {
        self.tasks.remove(&delivery.id);
        if self.pending.iter().any(|p| p.id == delivery.id)
            && !self.arrived.iter().any(|a| a.id == delivery.id)
        {
            self.arrived.push(delivery);
        }
    }

    fn ready(&self) -> bool {
        if self.main.is_none() {
            !self.arrived.is_empty()
        } else {
            self.arrived.len() == self.pending.len()
        }
    }

    /// Waits until the run can resume: any request settled while the main promise is pending
    /// ("awaiting"), all of them once it settled ("draining").
    pub(crate) async fn wait_ready(&mut self, deadline: Instant, abort: &AbortHandle) -> Readiness {
        loop {
            while let Ok(settled) = self.rx.try_recv() {
                self.accept(settled);
            }
            if self.ready() {
                return Readiness::Ready;
            }
            if abort.is_aborted() {
                return Readiness::Aborted;
            }
            if self.park_requested() {
                return Readiness::NotReady;
            }
            let parking = self.parking();
            tokio::select! {
                settled = self.rx.recv() => match settled {
                    Some(settled) => self.accept(settled),
                    None => return Readiness::NotReady,
                },
                _ = tokio::time::sleep_until(deadline.into()) => return Readiness::NotReady,
                _ = abort.fired() => return Readiness::Aborted,
                () = parking => return Readiness::NotReady,
            }
        }
    }

    /// Restores the parked snapshot into a fresh VM (for `wait`).
    pub(crate) async fn restore(
        &mut self,
        runtime: &Arc<Runtime>,
    ) -> Result<(), Box<CodeModeResult>> {
        let Some(snapshot) = self.snapshot.clone() else {
            return Err(Box::new(
                self.fail(ErrorCode::InternalError, "code mode snapshot is missing"),
            ));
        };
        let limits = limits(&self.env);
        let runtime = runtime.clone();
        let restored = run_leg(move || runtime.restore(&snapshot, &limits)).await;
        match restored {
            Ok(Ok(mut vm)) => {
                // The program may first touch `tools` or `ALL_TOOLS` after this `wait`.
                vm.set_context(self.env.catalog.run_context(lazy_run_context));
                self.pending = vm.pending().to_vec();
                self.vm = Some(vm);
                Ok(())
            }
            Ok(Err(e)) => {
                let (code, message) = map_vm_error(&e, &self.env.config);
                Err(Box::new(self.fail(code, &message)))
            }
            Err(panic) => Err(Box::new(
                self.fail(ErrorCode::InternalError, &panic.to_string()),
            )),
        }
    }

    /// Parks the run under `run_id` (docs/contract/lifecycle.md#s5-3): replay-safety, snapshot and output
    /// checks, then the snapshot replaces the VM and pending work starts in the background.
    /// Returns the `waiting` result, or the failure that prevented parking.
    pub(crate) fn park(&mut self, run_id: &str) -> Parking {
        self.run_id = Some(run_id.to_string());
        if self.restart_safe && self.pending.iter().any(|p| !self.replay_safe(p)) {
            return Parking::Failed(self.fail(ErrorCode::InvalidInput, RESTART_SAFE_SIDE_EFFECTS));
        }
        // Only a snapshot taken here, of the VM as it stops, may keep that VM alive.
        let mut captured_here = false;
        let mut snapshot = match (self.snapshot.take(), self.vm.as_mut()) {
            (Some(s), _) => s,
            (None, Some(vm)) => match vm.snapshot_bounded(
                u64::MAX,
                self.deadline.unwrap_or_else(Instant::now) + SNAPSHOT_GRACE,
            ) {
                Ok(Some(s)) => {
                    captured_here = true;
                    s
                }
                Ok(None) => {
                    return Parking::Failed(
                        self.fail(ErrorCode::InternalError, "code mode snapshot is missing"),
                    )
                }
                Err(e) => {
                    let (code, message) = map_vm_error(&e, &self.env.config);
                    return Parking::Failed(self.fail(code, &message));
                }
            },
            (None, None) => {
                return Parking::Failed(
                    self.fail(ErrorCode::InternalError, "code mode VM is missing"),
                );
            }
        };
        if snapshot.stored_bytes() as u64 > self.env.config.max_snapshot_bytes() {
            let message = LimitExceeded::snapshot(
                snapshot.stored_bytes() as u64,
                self.env.config.max_snapshot_bytes(),
            )
            .to_string();
            return Parking::Failed(self.fail(ErrorCode::SnapshotLimitExceeded, &message));
        }
        if let Some(result) = self.output_limit_failure(None) {
            return Parking::Failed(result);
        }
        // The runtime may keep the VM alive, so a `wait` here continues it instead of
        // restoring the snapshot (docs/architecture.md, "Parked VMs kept alive").
        if let (true, Some(vm)) = (captured_here, self.vm.take()) {
            vm.keep_parked(&mut snapshot, &limits(&self.env));
        }
        self.snapshot = Some(snapshot);
        self.vm = None;
        self.dispatch_new();
        Parking::Parked(self.waiting_result(run_id.to_string()))
    }

    fn replay_safe(&self, request: &BridgeRequest) -> bool {
        match request.method {
            BridgeMethod::Search | BridgeMethod::Describe | BridgeMethod::Yield => true,
            BridgeMethod::Namespace | BridgeMethod::Nodes => false,
            BridgeMethod::Call | BridgeMethod::CallValue => {
                let read_only: Vec<&str> = self
                    .env
                    .read_only_core_tools
                    .iter()
                    .map(String::as_str)
                    .collect();
                request
                    .args
                    .get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| self.env.catalog.is_replay_safe(id, &read_only))
            }
        }
    }

    /// The run's trajectory (stamped with its owner scope).
    pub(crate) fn trajectory(&self) -> &Trajectory {
        &self.trajectory
    }

    /// Marks the run as sitting in the store (set just before it is parked there).
    pub(crate) fn set_stored(&mut self, stored: bool) {
        self.stored = stored;
    }
}
