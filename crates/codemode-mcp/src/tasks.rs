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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_facade::{ApprovalBroker, CodeMode, RunEnv};
use codemode_runtime::AbortHandle;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};

/// The `pollIntervalMs` tasks suggest.
pub const POLL_INTERVAL_MS: u64 = 1000;

/// The error of a task id that is unknown, expired, or another session's.
pub fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown task: {id}"), None)
}

/// The current time as an ISO 8601 timestamp with milliseconds (UTC).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One task: a parked run the server drives.
struct Entry {
    /// The session key of the caller that created it.
    owner: String,
    created_at: String,
    ttl_ms: u64,
    /// Aborts the run (tasks/cancel).
    abort: AbortHandle,
    /// The session's MRTR approvals, which `tasks/update` answers.
    approvals: Arc<ApprovalBroker>,
    state: Mutex<State>,
}

struct State {
    payload: TaskPayload,
    updated_at: String,
    /// When the task may be forgotten (set once it ended).
    expires: Option<Instant>,
}

impl Entry {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, payload: TaskPayload) {
        let mut state = self.state();
        if state.payload.status().is_terminal() {
            return;
        }
        if payload.status().is_terminal() {
            state.expires = Some(Instant::now() + Duration::from_millis(self.ttl_ms));
        }
        state.payload = payload;
        state.updated_at = now();
    }

    /// The requests `answered` leave the task's outstanding input requests at once, so a
    /// `tasks/get` right after `tasks/update` does not ask them again (a client would answer
    /// twice); with none left the task is `working` until its run's next step sets its status.
    fn settle_answered<'a>(&self, answered: impl IntoIterator<Item = &'a String>) {
        let mut state = self.state();
        if let TaskPayload::InputRequired { input_requests } = &mut state.payload {
            for key in answered {
                input_requests.remove(key);
            }
            if input_requests.is_empty() {
                state.payload = TaskPayload::Working;
            }
            state.updated_at = now();
        }
    }

    fn task(&self, id: &str) -> Task {
        let state = self.state();
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
        let payload = self.state().payload.clone();
        DetailedTask::new(self.task(id), payload)
    }
}

/// The tasks of one server process (every session's), by task id (= run id).
#[derive(Clone, Default)]
pub struct RunTasks {
    tasks: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
}

impl std::fmt::Debug for RunTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTasks").finish_non_exhaustive()
    }
}

/// What the driver needs to resume a run: the front, the environment (with the session's MRTR
/// approvals) and the result of the `exec` that parked it.
pub struct Parked {
    /// The shared front.
    pub code_mode: Arc<CodeMode>,
    /// The environment of each resumption (its approvals: the session's MRTR broker).
    pub env: RunEnv,
    /// The parked run's id.
    pub run_id: String,
    /// The caller's session key.
    pub owner: String,
    /// The `exec` result that parked it (`waiting`), whose `output` starts the task's output.
    pub first: Value,
    /// Turns a final code-mode result into the `CallToolResult` JSON of the task.
    pub answer: Box<dyn Fn(Value) -> JsonObject + Send + Sync>,
}

impl RunTasks {
    /// No tasks.
    pub fn new() -> Self {
        RunTasks::default()
    }

    fn entry(&self, id: &str, owner: &str) -> Result<Arc<Entry>, ErrorData> {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        tasks.retain(|_, e| e.state().expires.is_none_or(|t| t > now));
        match tasks.get(id) {
            Some(entry) if entry.owner == owner => Ok(entry.clone()),
            _ => Err(unknown_task(id)),
        }
    }

    /// Makes the parked run a task and starts driving it; the `CreateTaskResult` to answer.
    pub fn create(&self, parked: Parked) -> CreateTaskResult {
        let ttl_ms =
            u64::try_from(parked.env.config.snapshot_ttl().as_millis()).unwrap_or(u64::MAX);
        let approvals = parked
            .env
            .approvals
            .clone()
            .unwrap_or_else(|| Arc::new(ApprovalBroker::new(parked.env.config.snapshot_ttl())));
        let created_at = now();
        let entry = Arc::new(Entry {
            owner: parked.owner.clone(),
            created_at: created_at.clone(),
            ttl_ms,
            abort: AbortHandle::new(),
            approvals,
            state: Mutex::new(State {
                payload: TaskPayload::Working,
                updated_at: created_at,
                expires: None,
            }),
        });
        entry.set(payload_of_waiting(&entry.approvals, &parked.first));
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(parked.run_id.clone(), entry.clone());
        let task = entry.task(&parked.run_id);
        tokio::spawn(drive(entry, parked));
        CreateTaskResult::new(task)
    }

    /// `tasks/get`: the task's status and payload. Errors: [`unknown_task`].
    pub fn get(&self, id: &str, owner: &str) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.entry(id, owner)?.detailed(id)))
    }

    /// `tasks/update`: answers the task's approvals (`inputResponses` keyed by `approvalId`,
    /// each an elicitation answer). Errors: [`unknown_task`].
    pub fn update(
        &self,
        id: &str,
        owner: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let entry = self.entry(id, owner)?;
        for (approval, response) in responses {
            // An approval no longer outstanding (answered, expired) is ignored.
            let _ = entry
                .approvals
                .answer(approval, crate::mrtr::decision_of_response(response));
        }
        entry.settle_answered(responses.keys());
        Ok(())
    }

    /// `tasks/cancel`: aborts the run (and its downstream calls); the task ends `cancelled`.
    /// Errors: [`unknown_task`].
    pub fn cancel(&self, id: &str, owner: &str) -> Result<(), ErrorData> {
        let entry = self.entry(id, owner)?;
        entry.set(TaskPayload::Cancelled);
        entry.abort.abort();
        Ok(())
    }
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

/// Resumes the run until it ends, keeping the task's state.
async fn drive(entry: Arc<Entry>, parked: Parked) {
    let Parked {
        code_mode,
        env,
        run_id,
        first,
        answer,
        ..
    } = parked;
    let mut output: Vec<Value> = output_of(&first);
    let input = json!({"runId": run_id});
    loop {
        // Resumed even after a `tasks/cancel`: the aborted handle then ends the run, which
        // cancels its pending calls (a run left parked would keep them until its TTL).
        let mut result = code_mode
            .wait_with(&env, &input, &entry.abort)
            .await
            .to_json();
        output.extend(output_of(&result));
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

fn output_of(result: &Value) -> Vec<Value> {
    result
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}
