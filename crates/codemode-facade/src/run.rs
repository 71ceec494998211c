//! One code-mode run: its VM or snapshot, in-flight tool calls, and the settle loop
//! (docs/contract/lifecycle.md#s5-2 to #s5-6).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{BridgeMethod, BridgeRequest, Delivery, GuestReport, GuestState, OutputItem};
use codemode_runtime::{run_leg, AbortHandle, LegBudget, Runtime, Snapshot, Vm, VmError, VmLimits};
use codemode_snapshot::{Reservation, SnapshotStore};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::dispatch::{Counters, Dispatcher};
use crate::result::{CodeModeResult, ErrorCode, PendingToolCall, Telemetry, WaitReason};
use crate::{
    RunEnv, OUTPUT_LIMIT_EXCEEDED, PENDING_WITHOUT_HOST_WORK, RESTART_SAFE_NAMESPACE,
    RESTART_SAFE_SIDE_EFFECTS, SNAPSHOT_LIMIT_EXCEEDED, TOO_MANY_PENDING,
};

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
}

impl Drop for Run {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
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

/// The result code for a VM error; the message is always the error's `Display`.
fn map_vm_error(e: &VmError) -> (ErrorCode, String) {
    let code = match e {
        VmError::Timeout => ErrorCode::Timeout,
        VmError::Aborted => ErrorCode::Aborted,
        VmError::Trap(_) | VmError::Unavailable(_) => ErrorCode::RuntimeUnavailable,
        VmError::Protocol(_) | VmError::Poisoned(_) | VmError::UnknownRequest(_) => {
            ErrorCode::InternalError
        }
    };
    (code, e.to_string())
}

fn telemetry(env: &RunEnv, counters: &Counters) -> Telemetry {
    Telemetry {
        catalog_size: env.catalog.len(),
        sources: env.catalog.source_counts(),
        search_count: counters.search.load(Ordering::Relaxed),
        describe_count: counters.describe.load(Ordering::Relaxed),
        call_count: counters.call.load(Ordering::Relaxed),
        visible_tools: env.visible_tools.clone(),
    }
}

/// A refused `exec` (bad arguments or source): `failed`/`invalid_input`, no run created.
pub(crate) fn refusal(env: &RunEnv, message: String) -> CodeModeResult {
    failure(env, ErrorCode::InvalidInput, &message, false)
}

/// A failure for a VM error (its code and `Display`) with the env's telemetry and no run.
pub(crate) fn vm_failure(env: &RunEnv, e: &VmError) -> CodeModeResult {
    let (code, message) = map_vm_error(e);
    failure(env, code, &message, false)
}

/// A failure with the env's telemetry and no run.
pub(crate) fn failure(
    env: &RunEnv,
    code: ErrorCode,
    message: &str,
    replay_safe: bool,
) -> CodeModeResult {
    CodeModeResult::Failed {
        error: message.to_string(),
        code: Some(code),
        output: Vec::new(),
        replay_safe,
        telemetry: telemetry(env, &Counters::default()),
    }
}

/// A refused `wait` for an unknown or foreign run: no catalog is known, so telemetry is empty.
pub(crate) fn bare_refusal(message: &str) -> CodeModeResult {
    CodeModeResult::Failed {
        error: message.to_string(),
        code: Some(ErrorCode::InvalidInput),
        output: Vec::new(),
        replay_safe: false,
        telemetry: Telemetry {
            catalog_size: 0,
            sources: codemode_catalog::SourceCounts::default(),
            search_count: 0,
            describe_count: 0,
            call_count: 0,
            visible_tools: vec!["exec".into(), "wait".into()],
        },
    }
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
        let dispatcher = Dispatcher {
            catalog: env.catalog.clone(),
            executor: env.executor.clone(),
            scope: env.scope.clone(),
            parent_tool_call_id: env.parent_tool_call_id.clone(),
            namespace: Arc::new(codemode_catalog::McpNamespace::build(&env.catalog)),
            counters: Arc::new(Counters::default()),
            tool_timeout: Duration::from_secs(env.config.snapshot_ttl_seconds()),
        };
        Run {
            store,
            reservation: None,
            env,
            restart_safe,
            dispatcher,
            tx,
            rx,
            tasks: HashMap::new(),
            arrived: Vec::new(),
            pending: Vec::new(),
            main: None,
            output: Vec::new(),
            vm: None,
            snapshot: None,
            error: None,
            run_id: None,
        }
    }

    /// The first leg: a fresh VM evaluates the prepared JavaScript.
    pub(crate) async fn start(
        &mut self,
        runtime: &Arc<Runtime>,
        javascript: &str,
        deadline: Instant,
        abort: &AbortHandle,
    ) {
        let limits = limits(&self.env);
        let namespace = &self.dispatcher.namespace;
        let mcp = json!({
            "paths": namespace.callable_paths().into_iter().map(|(path, _)| path).collect::<Vec<_>>(),
            "serverNames": namespace.server_names(),
        });
        let context = json!({
            "tools": self.env.catalog.all_tools(),
            "apiFiles": namespace.api_files(),
            "mcp": mcp,
        })
        .to_string();
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
    fn take_step(&mut self, vm: Vm, reports: Vec<Result<GuestReport, VmError>>) {
        for report in reports {
            match report {
                Ok(report) => {
                    if report.request_overflow {
                        self.error = Some((ErrorCode::InvalidInput, TOO_MANY_PENDING.into()));
                        self.vm = None;
                        return;
                    }
                    if report.output_overflow {
                        self.output.clear();
                        self.error =
                            Some((ErrorCode::OutputLimitExceeded, OUTPUT_LIMIT_EXCEEDED.into()));
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
                    self.error = Some(map_vm_error(&e));
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
        let config = self.env.config.clone();
        loop {
            if let Some((code, message)) = self.error.take() {
                return Outcome::Done(self.fail(code, &message));
            }
            if self.pending.is_empty() {
                return Outcome::Done(self.finish());
            }
            if self.pending.len() as u64 > config.max_pending_tool_calls() {
                return Outcome::Done(self.fail(ErrorCode::InvalidInput, TOO_MANY_PENDING));
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
            if Instant::now() >= deadline {
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
            let floor = Duration::from_millis(250.min((config.timeout_ms() / 2).max(1)));
            if deadline.saturating_duration_since(Instant::now()) < floor {
                return Outcome::Park;
            }
            self.deliver_arrived(deadline, abort).await;
        }
    }

    /// Delivers every settled request, in the order they settled, on a leg thread.
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
            (vm, reports)
        })
        .await;
        match leg {
            Ok((vm, reports)) => self.take_step(vm, reports),
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
            let handle = self
                .dispatcher
                .dispatch(request, self.run_id.clone(), self.tx.clone());
            self.tasks.insert(request.id.clone(), handle);
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
            tokio::select! {
                settled = self.rx.recv() => match settled {
                    Some(settled) => self.accept(settled),
                    None => return Readiness::NotReady,
                },
                _ = tokio::time::sleep_until(deadline.into()) => return Readiness::NotReady,
                _ = abort.fired() => return Readiness::Aborted,
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
            Ok(Ok(vm)) => {
                self.pending = vm.pending().to_vec();
                self.vm = Some(vm);
                Ok(())
            }
            Ok(Err(e)) => {
                let (code, message) = map_vm_error(&e);
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
        let snapshot = match (self.snapshot.take(), self.vm.as_mut()) {
            (Some(s), _) => s,
            (None, Some(vm)) => match vm.snapshot() {
                Ok(s) => s,
                Err(e) => {
                    let (code, message) = map_vm_error(&e);
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
            return Parking::Failed(
                self.fail(ErrorCode::SnapshotLimitExceeded, SNAPSHOT_LIMIT_EXCEEDED),
            );
        }
        if let Some(result) = self.output_limit_failure(None) {
            return Parking::Failed(result);
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

    /// The `waiting` result: unsettled requests, output since the previous result.
    pub(crate) fn waiting_result(&mut self, run_id: String) -> CodeModeResult {
        // A yield is settled from the start but still listed until delivered (docs/contract/lifecycle.md#s5-10).
        let unsettled: Vec<&BridgeRequest> = self
            .pending
            .iter()
            .filter(|p| {
                p.method == BridgeMethod::Yield || !self.arrived.iter().any(|d| d.id == p.id)
            })
            .collect();
        let reason =
            if !unsettled.is_empty() && unsettled.iter().all(|p| p.method == BridgeMethod::Yield) {
                WaitReason::Yield
            } else {
                WaitReason::PendingTools
            };
        let pending_tool_calls = unsettled
            .iter()
            .map(|p| PendingToolCall {
                id: p.id.clone(),
                method: p.method.as_str().to_string(),
            })
            .collect();
        CodeModeResult::Waiting {
            run_id,
            reason,
            pending_tool_calls,
            replay_safe: self.restart_safe,
            output: std::mem::take(&mut self.output),
            telemetry: telemetry(&self.env, &self.dispatcher.counters),
        }
    }

    /// Output-limit check (docs/contract/lifecycle.md#s5-5) for this result's entries, plus `value` when given:
    /// the failure result when over the limit.
    fn output_limit_failure(&mut self, value: Option<&Value>) -> Option<CodeModeResult> {
        let mut measure = if self.output.is_empty() {
            0
        } else {
            json_len(&self.output)
        };
        if let Some(value) = value {
            measure = measure.saturating_add(json_len(value));
        }
        if measure > self.env.config.max_output_bytes() {
            self.output.clear();
            return Some(self.fail(ErrorCode::OutputLimitExceeded, OUTPUT_LIMIT_EXCEEDED));
        }
        None
    }

    /// Snapshot-limit check before auto-draining (docs/contract/lifecycle.md#s5-6). The snapshot is only taken
    /// when the memory in use could compress beyond the limit.
    fn snapshot_limit_failure(&mut self) -> Option<CodeModeResult> {
        let max = self.env.config.max_snapshot_bytes();
        let vm = self.vm.as_mut()?;
        if vm.snapshot_bound() <= max {
            return None;
        }
        match vm.snapshot() {
            Ok(s) if s.stored_bytes() as u64 <= max => {
                self.snapshot = Some(s);
                None
            }
            Ok(_) => Some(self.fail(ErrorCode::SnapshotLimitExceeded, SNAPSHOT_LIMIT_EXCEEDED)),
            Err(e) => {
                let (code, message) = map_vm_error(&e);
                Some(self.fail(code, &message))
            }
        }
    }

    /// The terminal result once nothing is pending.
    fn finish(&mut self) -> CodeModeResult {
        match self.main.take() {
            Some(Ok(value)) => {
                if let Some(result) = self.output_limit_failure(Some(&value)) {
                    return result;
                }
                CodeModeResult::Completed {
                    value,
                    output: std::mem::take(&mut self.output),
                    replay_safe: self.restart_safe,
                    telemetry: telemetry(&self.env, &self.dispatcher.counters),
                }
            }
            Some(Err(error)) => {
                if codemode_ts::is_module_access_reference_error(&error) {
                    self.fail(ErrorCode::InvalidInput, codemode_ts::MODULE_ACCESS_DISABLED)
                } else {
                    self.fail(ErrorCode::InternalError, &error)
                }
            }
            None => self.fail(ErrorCode::InternalError, PENDING_WITHOUT_HOST_WORK),
        }
    }

    /// A terminal failure for a VM error: its result code and its `Display` as the message.
    pub(crate) fn fail_vm(&mut self, e: &VmError) -> CodeModeResult {
        let (code, message) = map_vm_error(e);
        self.fail(code, &message)
    }

    /// A terminal failure: cancels leftover host work and disposes of the VM.
    pub(crate) fn fail(&mut self, code: ErrorCode, message: &str) -> CodeModeResult {
        for task in self.tasks.values() {
            task.abort();
        }
        self.tasks.clear();
        self.vm = None;
        self.snapshot = None;
        CodeModeResult::Failed {
            error: message.to_string(),
            code: Some(code),
            output: std::mem::take(&mut self.output),
            replay_safe: self.restart_safe,
            telemetry: telemetry(&self.env, &self.dispatcher.counters),
        }
    }
}
