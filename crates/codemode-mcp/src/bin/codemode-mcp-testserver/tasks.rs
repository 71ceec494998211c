//! The tasks of `task_slow`, shared by every session of the process (stateless HTTP requests
//! each get a fresh server).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData as McpError;

struct Entry {
    ms: u64,
    done_at: Instant,
    cancelled: bool,
}

static TASKS: Mutex<Option<HashMap<String, Entry>>> = Mutex::new(None);
static NEXT: AtomicU64 = AtomicU64::new(1);
static POLLS: AtomicU64 = AtomicU64::new(0);
const STAMP: &str = "2026-01-01T00:00:00Z";

fn task(id: &str, status: TaskStatus) -> Task {
    Task::new(id, status, STAMP, STAMP).with_poll_interval_ms(100)
}

pub(super) fn start(ms: u64) -> CreateTaskResult {
    let id = format!("task-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let entry = Entry {
        ms,
        done_at: Instant::now() + Duration::from_millis(ms),
        cancelled: false,
    };
    TASKS
        .lock()
        .expect("tasks lock")
        .get_or_insert_with(HashMap::new)
        .insert(id.clone(), entry);
    CreateTaskResult::new(task(&id, TaskStatus::Working))
}

pub(super) fn polls() -> u64 {
    POLLS.load(Ordering::Relaxed)
}

pub(super) fn get(id: &str) -> Result<GetTaskResult, McpError> {
    POLLS.fetch_add(1, Ordering::Relaxed);
    let tasks = TASKS.lock().expect("tasks lock");
    let entry = tasks
        .as_ref()
        .and_then(|t| t.get(id))
        .ok_or_else(|| McpError::invalid_params(format!("unknown task {id}"), None))?;
    let payload = if entry.cancelled {
        TaskPayload::Cancelled
    } else if Instant::now() >= entry.done_at {
        let result = CallToolResult::success(vec![ContentBlock::text(format!(
            "slept {} in a task",
            entry.ms
        ))]);
        let Ok(serde_json::Value::Object(result)) = serde_json::to_value(result) else {
            return Err(McpError::internal_error("result is not an object", None));
        };
        TaskPayload::Completed { result }
    } else {
        TaskPayload::Working
    };
    Ok(GetTaskResult::new(DetailedTask::new(
        task(id, TaskStatus::Working),
        payload,
    )))
}

pub(super) fn cancel(id: &str) -> Result<(), McpError> {
    let mut tasks = TASKS.lock().expect("tasks lock");
    let entry = tasks
        .as_mut()
        .and_then(|t| t.get_mut(id))
        .ok_or_else(|| McpError::invalid_params(format!("unknown task {id}"), None))?;
    entry.cancelled = true;
    Ok(())
}
