//! Parked runs as MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663; docs/mcp.md, "Runs as
//! Tasks").
//!
//! A client that declares the tasks extension (per request, in its `_meta` capabilities) and
//! whose `exec` parks (`waiting`) gets a `CreateTaskResult` instead of the `waiting` result: the
//! task id is the run id (random, so unguessable), the task is bound to the caller's code-mode
//! session, and it is created only once the run has parked. From then on the server, not the
//! model, drives the run: a driver task resumes it as `wait` does, again and again, until it
//! ends, and keeps what `tasks/get` reports:
//!
//! - `working` while the run waits on tool calls;
//! - `input_required` with `inputRequests` (one `elicitation/create` per pending approval, keyed
//!   by `approvalId`, as in `crate::mrtr`) while it waits on approvals; `tasks/update` answers
//!   them;
//! - `completed` with the final `CallToolResult` (the shape of an `exec` answer), whose `output`
//!   holds all output since the start of the run (the `exec`'s and every resumption's);
//! - `cancelled` after `tasks/cancel`, which aborts the run (its pending downstream calls are
//!   cancelled with it).
//!
//! A run parked on a ten-minute tool therefore costs the model one `exec` call; the client host
//! polls `tasks/get` (every `pollIntervalMs`). Tasks live for `ttlMs` = the run's
//! `snapshotTtlSeconds` after they end; an unknown task, or one of another session, is
//! `-32602` `Unknown task: <id>`.
//!
//! **Across processes** (a durable run store, [`SharedTasks`]; docs/deployment.md, "Tasks
//! across instances"): the driving process keeps each task's view in the store as a sealed task
//! record (rewritten on every change of status, and at least every half TTL) and holds a driver
//! lease on it, renewed every 1.25 s. A process that gets a `tasks/*` request for a task it
//! does not hold reads the record: `tasks/get` answers from it; `tasks/update` relays the
//! answers to the approvals' holder ([`CodeMode::relay_approval`]); `tasks/cancel` writes the
//! record `cancelled` (an ended record is never replaced by one that has not ended), and the
//! driving process, told of the change, aborts the run. When the driver lease has lapsed (its
//! process died) the process that got the request takes the lease and drives the task itself:
//! it resumes the run from the store as a `wait` would (calls that were in flight in the dead
//! process are lost visibly; approvals asked again under the same ids find relayed answers).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_facade::bridge::RunScope;
use codemode_facade::{ApprovalBroker, CodeMode, RunEnv, SharedTasks};
use codemode_runtime::AbortHandle;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// The `pollIntervalMs` tasks suggest.
pub const POLL_INTERVAL_MS: u64 = 1000;

/// How long a driver waits before resuming again a run another `wait` holds (a process that
/// died in the middle of a `wait` holds it until that wait's lease ends).
const BUSY_RETRY: Duration = Duration::from_secs(1);

/// The error of a task id that is unknown, expired, or another session's.
pub fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown task: {id}"), None)
}

/// The current time as an ISO 8601 timestamp with milliseconds (UTC).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A task's record in a durable run store ([`SharedTasks`]): who may see it, the task as
/// `tasks/get` answers it, and the run's output so far (for a process that takes over driving).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    owner: String,
    task: DetailedTask,
    output: Vec<Value>,
}

/// One task: a parked run the server drives.
struct Entry {
    /// The session key of the caller that created it.
    owner: String,
    /// The caller's scope, which the task's record in a durable store is sealed for.
    scope: RunScope,
    created_at: String,
    ttl_ms: u64,
    /// Aborts the run (tasks/cancel).
    abort: AbortHandle,
    /// The session's MRTR approvals, which `tasks/update` answers.
    approvals: Arc<ApprovalBroker>,
    state: Mutex<State>,
    /// Wakes the task's record writer (with a durable store) after a change.
    dirty: Notify,
}

struct State {
    payload: TaskPayload,
    updated_at: String,
    /// When the task may be forgotten (set once it ended).
    expires: Option<Instant>,
    /// The run's output since its start: the `exec`'s and every resumption's.
    output: Vec<Value>,
    /// Counts changes, so the record writer knows what it wrote.
    version: u64,
    /// The approvals this process's broker asked for this task (only those can be seen
    /// answered here).
    asked_here: HashSet<String>,
    /// Another process drives the task now: the driver stops after its current resumption.
    detached: bool,
}

impl State {
    /// A task's state with `payload`, last changed at `updated_at`, no output yet.
    fn new(payload: TaskPayload, updated_at: String) -> State {
        State {
            payload,
            updated_at,
            expires: None,
            output: Vec::new(),
            version: 0,
            asked_here: HashSet::new(),
            detached: false,
        }
    }
}

impl Entry {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn changed(&self, state: &mut State) {
        state.updated_at = now();
        state.version += 1;
        self.dirty.notify_one();
    }

    fn set(&self, payload: TaskPayload) {
        let mut state = self.state();
        if state.payload.status().is_terminal() || state.payload == payload {
            return;
        }
        if payload.status().is_terminal() {
            state.expires = Some(Instant::now() + Duration::from_millis(self.ttl_ms));
        }
        if let TaskPayload::InputRequired { input_requests } = &payload {
            state.asked_here.extend(input_requests.keys().cloned());
        }
        state.payload = payload;
        self.changed(&mut state);
    }

    /// The requests `answered` leave the task's outstanding input requests at once, so a
    /// `tasks/get` right after `tasks/update` does not ask them again (a client would answer
    /// twice); with none left the task is `working` until its run's next step sets its status.
    fn settle_answered<'a>(&self, answered: impl IntoIterator<Item = &'a String>) {
        let answered: HashSet<&String> = answered.into_iter().collect();
        self.settle(|key| answered.contains(key));
    }

    /// Approvals this process asked that are no longer outstanding (answered through another
    /// process, relayed) leave the task's input requests, as in [`Entry::settle_answered`].
    fn settle_decided(&self) {
        let outstanding: HashSet<String> = self
            .approvals
            .pending()
            .into_iter()
            .map(|r| r.approval_id)
            .collect();
        let asked = self.state().asked_here.clone();
        self.settle(|key| asked.contains(key) && !outstanding.contains(key));
    }

    fn settle(&self, gone: impl Fn(&String) -> bool) {
        let mut state = self.state();
        let TaskPayload::InputRequired { input_requests } = &mut state.payload else {
            return;
        };
        let before = input_requests.len();
        input_requests.retain(|key, _| !gone(key));
        if input_requests.len() == before {
            return;
        }
        if input_requests.is_empty() {
            state.payload = TaskPayload::Working;
        }
        self.changed(&mut state);
    }

    fn task(&self, id: &str, state: &State) -> Task {
        let mut task = Task::new(
            id,
            state.payload.status(),
            self.created_at.clone(),
            state.updated_at.clone(),
        )
        .with_ttl_ms(self.ttl_ms);
        if !state.payload.status().is_terminal() {
            task = task.with_poll_interval_ms(POLL_INTERVAL_MS);
        }
        task
    }

    fn detailed(&self, id: &str) -> DetailedTask {
        let state = self.state();
        DetailedTask::new(self.task(id, &state), state.payload.clone())
    }

    /// The task's record as it is now, its version, and whether it ended.
    fn record(&self, id: &str) -> (Record, u64, bool) {
        let state = self.state();
        let record = Record {
            owner: self.owner.clone(),
            task: DetailedTask::new(self.task(id, &state), state.payload.clone()),
            output: state.output.clone(),
        };
        (record, state.version, state.payload.status().is_terminal())
    }

    /// Ends the task `cancelled` and aborts its run.
    fn cancel(&self) {
        self.set(TaskPayload::Cancelled);
        self.abort.abort();
    }
}

/// What drives a run: the front, the environment of each resumption (its approvals: the
/// session's MRTR broker) and how a final result becomes the task's `CallToolResult`.
pub struct Driver {
    /// The shared front.
    pub code_mode: Arc<CodeMode>,
    /// The environment of each resumption.
    pub env: RunEnv,
    /// Turns a final code-mode result into the `CallToolResult` JSON of the task.
    pub answer: Box<dyn Fn(Value) -> JsonObject + Send + Sync>,
}

/// What the driver needs to resume a run: the [`Driver`], the run, its caller and the result of
/// the `exec` that parked it.
pub struct Parked {
    /// Resumes the run.
    pub driver: Driver,
    /// The parked run's id.
    pub run_id: String,
    /// The caller's session key.
    pub owner: String,
    /// The caller's scope.
    pub scope: RunScope,
    /// The `exec` result that parked it (`waiting`), whose `output` starts the task's output.
    pub first: Value,
}

/// Who asks about a task: its session key and scope, and (for a process that may have to take
/// over a task whose driving process died) a [`Driver`] for the caller's session.
pub struct Caller {
    /// The caller's session key.
    pub owner: String,
    /// The caller's scope.
    pub scope: RunScope,
    /// Drives the task here if its driver lease lapsed; `None`: answer from the record only.
    pub driver: Option<Driver>,
}

/// A task as a request finds it: driven here, or driven (or ended) elsewhere.
enum Found {
    Here(Arc<Entry>),
    Elsewhere(Box<Record>),
}

/// The tasks of one server process (every session's), by task id (= run id), and the shared
/// records of a durable run store.
#[derive(Clone, Default)]
pub struct RunTasks {
    tasks: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
    shared: Option<SharedTasks>,
}

impl std::fmt::Debug for RunTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTasks").finish_non_exhaustive()
    }
}

impl RunTasks {
    /// No tasks; with `shared` (a durable run store's, [`CodeMode::shared_tasks`]) their
    /// records are shared with every process on the store (see the module docs).
    pub fn new(shared: Option<SharedTasks>) -> Self {
        RunTasks {
            tasks: Arc::default(),
            shared,
        }
    }

    fn local(&self, id: &str) -> Option<Arc<Entry>> {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        tasks.retain(|_, e| e.state().expires.is_none_or(|t| t > now));
        tasks.get(id).cloned()
    }

    fn forget(&self, id: &str, entry: &Arc<Entry>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        if tasks.get(id).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            tasks.remove(id);
        }
    }

    /// The task `id` as `caller` may see it: here, or its record (taking over driving it when
    /// its driver lease lapsed and `caller` brought a driver). Errors: [`unknown_task`].
    async fn find(&self, id: &str, caller: Caller) -> Result<Found, ErrorData> {
        if let Some(entry) = self.local(id) {
            return if entry.owner == caller.owner {
                Ok(Found::Here(entry))
            } else {
                Err(unknown_task(id))
            };
        }
        let shared = self.shared.as_ref().ok_or_else(|| unknown_task(id))?;
        let record = shared
            .get(id, &caller.scope)
            .await
            .and_then(|value| serde_json::from_value::<Record>(value).ok())
            .filter(|record| record.owner == caller.owner)
            .ok_or_else(|| unknown_task(id))?;
        if record.task.status().is_terminal() {
            return Ok(Found::Elsewhere(Box::new(record)));
        }
        let Some(driver) = caller.driver else {
            return Ok(Found::Elsewhere(Box::new(record)));
        };
        if !shared.take_driver(id).await {
            return Ok(Found::Elsewhere(Box::new(record)));
        }
        // The driving process stopped renewing its lease (it died): drive the task here.
        tracing::info!(
            task = id,
            "taking over a task whose driving process stopped"
        );
        Ok(Found::Here(self.start(
            id.to_string(),
            Entry::new(caller.owner, caller.scope, &driver, &record),
            driver,
            record.output,
        )))
    }

    /// Registers `entry` as task `id`, and spawns its driver (and record writer).
    fn start(&self, id: String, entry: Entry, driver: Driver, output: Vec<Value>) -> Arc<Entry> {
        let entry = Arc::new(entry);
        entry.state().output = output;
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), entry.clone());
        if let Some(shared) = &self.shared {
            tokio::spawn(write_records(
                self.clone(),
                shared.clone(),
                entry.clone(),
                id.clone(),
            ));
        }
        tokio::spawn(drive(entry.clone(), id, driver));
        entry
    }

    /// Makes the parked run a task and starts driving it; the `CreateTaskResult` to answer.
    pub async fn create(&self, parked: Parked) -> CreateTaskResult {
        let Parked {
            driver,
            run_id,
            owner,
            scope,
            first,
        } = parked;
        if let Some(shared) = &self.shared {
            // A fresh run id: nobody else holds its lease (false only with a store that failed:
            // then the writer's first renewal notices).
            shared.take_driver(&run_id).await;
        }
        let ttl_ms =
            u64::try_from(driver.env.config.snapshot_ttl().as_millis()).unwrap_or(u64::MAX);
        let approvals = approvals_of(&driver);
        let created_at = now();
        let entry = Entry {
            owner,
            scope,
            created_at: created_at.clone(),
            ttl_ms,
            abort: AbortHandle::new(),
            approvals,
            state: Mutex::new(State::new(TaskPayload::Working, created_at)),
            dirty: Notify::new(),
        };
        entry.set(payload_of_waiting(&entry.approvals, &first));
        let entry = self.start(run_id.clone(), entry, driver, output_of(&first));
        let state = entry.state();
        CreateTaskResult::new(entry.task(&run_id, &state))
    }

    /// `tasks/get`: the task's status and payload. Errors: [`unknown_task`].
    pub async fn get(&self, id: &str, caller: Caller) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(match self.find(id, caller).await? {
            Found::Here(entry) => entry.detailed(id),
            Found::Elsewhere(record) => record.task,
        }))
    }

    /// `tasks/update`: answers the task's approvals (`inputResponses` keyed by `approvalId`,
    /// each an elicitation answer). An approval this process does not hold is relayed through
    /// the durable store to the process that does (or that asks it again after taking the run
    /// over). Errors: [`unknown_task`].
    pub async fn update(
        &self,
        id: &str,
        caller: Caller,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let code_mode = caller.driver.as_ref().map(|d| d.code_mode.clone());
        let (entry, ttl) = match self.find(id, caller).await? {
            Found::Here(entry) => {
                let ttl = entry.approvals.ttl();
                (Some(entry), ttl)
            }
            Found::Elsewhere(record) => {
                let ttl = record.task.task.ttl_ms.unwrap_or(0);
                (None, Duration::from_millis(ttl))
            }
        };
        for (approval, response) in responses {
            let decision = crate::mrtr::decision_of_response(response);
            let held = entry
                .as_ref()
                .is_some_and(|e| e.approvals.answer(approval, decision.clone()).is_ok());
            if !held {
                // Held by another process, or not asked again yet here; an approval no longer
                // outstanding anywhere lets the relayed answer expire unread.
                if let Some(code_mode) = &code_mode {
                    code_mode.relay_approval(approval, &decision, ttl).await;
                }
            }
        }
        if let Some(entry) = entry {
            entry.settle_answered(responses.keys());
        }
        Ok(())
    }

    /// `tasks/cancel`: aborts the run (and its downstream calls); the task ends `cancelled`.
    /// A task driven by another process is cancelled through its record, which that process
    /// hears of. Errors: [`unknown_task`].
    pub async fn cancel(&self, id: &str, caller: Caller) -> Result<(), ErrorData> {
        let scope = caller.scope.clone();
        match self.find(id, caller).await? {
            Found::Here(entry) => entry.cancel(),
            Found::Elsewhere(mut record) => {
                if record.task.status().is_terminal() {
                    return Ok(());
                }
                let Some(shared) = &self.shared else {
                    return Ok(());
                };
                let ttl = Duration::from_millis(record.task.task.ttl_ms.unwrap_or(0));
                let mut task = record.task.task.clone();
                task.last_updated_at = now();
                task.poll_interval_ms = None;
                record.task = DetailedTask::new(task, TaskPayload::Cancelled);
                let value = serde_json::to_value(&*record).unwrap_or(Value::Null);
                shared.put(id, &scope, value, ttl, true).await;
            }
        }
        Ok(())
    }
}

impl Entry {
    /// A task taken over from `record` (its driving process died), driven with `driver`.
    fn new(owner: String, scope: RunScope, driver: &Driver, record: &Record) -> Entry {
        let task = &record.task.task;
        Entry {
            owner,
            scope,
            created_at: task.created_at.clone(),
            ttl_ms: task.ttl_ms.unwrap_or(0),
            abort: AbortHandle::new(),
            approvals: approvals_of(driver),
            state: Mutex::new(State::new(
                record.task.payload.clone(),
                task.last_updated_at.clone(),
            )),
            dirty: Notify::new(),
        }
    }
}

/// The approvals a driver's runs ask: the environment's (the session's MRTR broker).
fn approvals_of(driver: &Driver) -> Arc<ApprovalBroker> {
    driver
        .env
        .approvals
        .clone()
        .unwrap_or_else(|| Arc::new(ApprovalBroker::new(driver.env.config.snapshot_ttl())))
}

/// The payload of a `waiting` result: `input_required` with the approvals still outstanding,
/// else `working`.
fn payload_of_waiting(approvals: &ApprovalBroker, result: &Value) -> TaskPayload {
    let ids: Vec<&str> = result
        .get("pendingApprovals")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("approvalId").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let outstanding = approvals.pending();
    let asked: Vec<_> = ids
        .iter()
        .filter_map(|id| outstanding.iter().find(|r| r.approval_id == *id).cloned())
        .collect();
    if asked.is_empty() {
        TaskPayload::Working
    } else {
        TaskPayload::InputRequired {
            input_requests: crate::mrtr::input_requests(&asked),
        }
    }
}

/// `true` for the refusal of a `wait` whose run another `wait` holds.
fn held_elsewhere(result: &Value) -> bool {
    result.get("status").and_then(Value::as_str) == Some("failed")
        && result.get("error").and_then(Value::as_str)
            == Some("code mode run is already being resumed.")
}

/// Resumes the run until it ends, keeping the task's state.
async fn drive(entry: Arc<Entry>, run_id: String, driver: Driver) {
    let Driver {
        code_mode,
        env,
        answer,
    } = driver;
    let input = json!({"runId": run_id});
    loop {
        // Resumed even after a `tasks/cancel`: the aborted handle then ends the run, which
        // cancels its pending calls (a run left parked would keep them until its TTL).
        let mut result = code_mode
            .wait_with(&env, &input, &entry.abort)
            .await
            .to_json();
        if held_elsewhere(&result) {
            // A process that died in the middle of a `wait` holds the run until that wait's
            // lease ends (its timeout and 30 s); taken over, the task waits it out.
            tokio::time::sleep(BUSY_RETRY).await;
            continue;
        }
        let output = {
            let mut state = entry.state();
            state.output.extend(output_of(&result));
            if state.detached {
                return;
            }
            state.output.clone()
        };
        if entry.state().payload.status() == TaskStatus::Cancelled {
            break;
        }
        match result.get("status").and_then(Value::as_str) {
            Some("waiting") => entry.set(payload_of_waiting(&entry.approvals, &result)),
            _ => {
                if let Some(object) = result.as_object_mut() {
                    object.insert("output".into(), Value::Array(output));
                }
                entry.set(TaskPayload::Completed {
                    result: answer(result),
                });
                break;
            }
        }
    }
}

/// Keeps task `id`'s record in the durable store current while this process drives it (see
/// the module docs): writes it after every change (and at least every half TTL), renews the
/// driver lease, settles approvals answered through other processes, and takes a cancellation
/// (or an end) another process wrote. Ends with the task (dropping the lease), or when the lease
/// was lost (another process drives the task now: this one forgets it).
async fn write_records(tasks: RunTasks, shared: SharedTasks, entry: Arc<Entry>, id: String) {
    let ttl = Duration::from_millis(entry.ttl_ms);
    let mut changes = shared.changes(&id).await;
    let mut written: Option<(u64, Instant)> = None;
    let mut renew = tokio::time::interval(SharedTasks::RENEW);
    renew.tick().await;
    loop {
        entry.settle_decided();
        let (record, version, ended) = entry.record(&id);
        let stale = written.is_none_or(|(v, at)| v != version || at.elapsed() > ttl / 2);
        if stale {
            let value = serde_json::to_value(&record).unwrap_or(Value::Null);
            match shared.put(&id, &entry.scope, value, ttl, ended).await {
                Some(true) => written = Some((version, Instant::now())),
                // The stored task ended elsewhere (cancelled): take its end.
                Some(false) => take_stored_end(&shared, &entry, &id).await,
                None => {}
            }
        }
        if ended && written.is_some_and(|(v, _)| v == version) {
            shared.drop_driver(&id).await;
            return;
        }
        let change = async {
            match changes.as_mut() {
                Some(changes) => changes.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = entry.dirty.notified() => {}
            _ = renew.tick() => {
                if !shared.renew_driver(&id).await {
                    tracing::warn!(task = %id, "lost a task's driver lease; another process drives it");
                    entry.state().detached = true;
                    tasks.forget(&id, &entry);
                    return;
                }
            }
            () = change => take_stored_end(&shared, &entry, &id).await,
        }
    }
}

/// When task `id`'s stored record ended (another process cancelled it), ends it here too: a
/// cancellation aborts the run.
async fn take_stored_end(shared: &SharedTasks, entry: &Entry, id: &str) {
    let Some(stored) = shared
        .get(id, &entry.scope)
        .await
        .and_then(|value| serde_json::from_value::<Record>(value).ok())
    else {
        return;
    };
    match stored.task.payload {
        TaskPayload::Cancelled => entry.cancel(),
        payload if payload.status().is_terminal() => entry.set(payload),
        _ => {}
    }
}

fn output_of(result: &Value) -> Vec<Value> {
    result
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}
