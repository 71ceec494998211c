//! What a nested `tools/call` does after the server's first answer, when that answer is not the
//! tool's result (protocol 2026-07-28; docs/mcp.md, "Protocol revisions"):
//!
//! - **`resultType: "input_required"`** (MRTR): each of its `inputRequests` is answered the way
//!   the connection's handler answers the same request sent the legacy way (an elicitation goes
//!   to the upstream MCP client in `serve`, or is declined with the reason in `exec`/`session`;
//!   sampling likewise; `roots/list` gets no roots), and the call is sent again, under a new
//!   JSON-RPC id, with `inputResponses` and the `requestState` echoed unchanged (none when the
//!   server sent none), at most [`MAX_INPUT_ROUNDS`] times.
//! - **`resultType: "task"`** (Tasks extension): the task is polled with `tasks/get` every
//!   `pollIntervalMs` (clamped to [`MIN_POLL`]..[`MAX_POLL`], [`DEFAULT_POLL`] when absent) until
//!   it is `completed` (its `result` is the call's result), `failed` or `cancelled`; an
//!   `input_required` status is answered once per input request with `tasks/update`; a task
//!   still running after its `ttlMs` fails the call. When the caller gives up first (the run was
//!   cancelled, aborted or expired, and the call's future is dropped) the server gets
//!   `tasks/cancel`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

// Sampling is deprecated by SEP-2577 but still part of the revisions servers speak.
#[allow(deprecated)]
use rmcp::model::CreateMessageRequestParams;
use rmcp::model::{ElicitRequestParams, NumberOrString, RequestId};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Map, Value};

use super::{send_raw, to_json, ServerClient};
use crate::error::{ClientError, McpRequest};

/// Most `input_required` answers one call goes through before it fails
/// ([`ClientError::InputRounds`]); rmcp's and the other SDKs' default.
pub(crate) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The shortest wait between two `tasks/get` of one task, whatever `pollIntervalMs` says.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(10);

/// The longest wait between two `tasks/get` of one task, whatever `pollIntervalMs` says.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(30);

/// The wait between two `tasks/get` when the server gives no `pollIntervalMs`.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// How long the `tasks/cancel` sent for an abandoned task may take.
const CANCEL_BUDGET: Duration = Duration::from_secs(5);

/// Numbers the local request ids handed to the handler for input requests (they never go on
/// the wire).
static INPUT_IDS: AtomicU64 = AtomicU64::new(1);

/// What the caller does with the server's answer to one `tools/call`.
pub(crate) enum Next {
    /// The tool's result.
    Done(Value),
    /// Send the call again with these params (an MRTR retry).
    Retry(Value),
    /// The call became this task (the `CreateTaskResult` JSON).
    Task(Value),
}

/// `pollIntervalMs` of a task or `tasks/get` result, clamped.
fn poll_interval(task: &Value) -> Option<Duration> {
    task.get("pollIntervalMs")
        .and_then(Value::as_u64)
        .map(|ms| Duration::from_millis(ms).clamp(MIN_POLL, MAX_POLL))
}

/// `result` without `resultType: "complete"`, the 2026-07-28 marker of a final result: the
/// guest gets the same result from a server of either revision.
pub(crate) fn without_result_type(mut result: Value) -> Value {
    if let Some(fields) = result.as_object_mut() {
        if fields.get("resultType").and_then(Value::as_str) == Some("complete") {
            fields.remove("resultType");
        }
    }
    result
}

/// Sends `tasks/cancel` for a task when dropped while armed (the caller gave up).
struct CancelTask {
    peer: Peer<RoleClient>,
    task_id: Option<String>,
}

impl Drop for CancelTask {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let params = json!({ "taskId": task_id });
            if let Err(e) = send_raw(peer, "tasks/cancel", Some(params), CANCEL_BUDGET).await {
                tracing::debug!("tasks/cancel of {task_id} not answered: {e}");
            }
        });
    }
}

impl ServerClient {
    /// Classifies the server's answer `result` to `method` (`tools/call`, `prompts/get`,
    /// `resources/read`) of `subject` (the tool, prompt or URI) sent with `params` after
    /// `rounds` earlier `input_required` answers: a final result, a retry (the input requests
    /// answered), or a task (only `tools/call` may become one; for the others a task answer is
    /// [`ClientError::Malformed`]).
    pub(crate) async fn after_answer(
        &self,
        method: &str,
        subject: &str,
        params: &Value,
        result: Value,
        rounds: usize,
    ) -> Result<Next, ClientError> {
        let request = || McpRequest {
            method: method.to_string(),
            subject: Some(subject.to_string()),
        };
        match result.get("resultType").and_then(Value::as_str) {
            Some("task") if method == "tools/call" => Ok(Next::Task(result)),
            Some("task") => Err(ClientError::Malformed {
                server: self.name().to_string(),
                request: request(),
                what: "result",
                reason: "it is a task, which only tools/call may answer".into(),
            }),
            Some("input_required") if rounds >= MAX_INPUT_ROUNDS => Err(ClientError::InputRounds {
                server: self.name().to_string(),
                request: request(),
                rounds,
            }),
            Some("input_required") => {
                let requests = result
                    .get("inputRequests")
                    .filter(|r| r.as_object().is_some_and(|r| !r.is_empty()));
                let state = result.get("requestState");
                let malformed = |reason: &str| ClientError::Malformed {
                    server: self.name().to_string(),
                    request: request(),
                    what: "input_required result",
                    reason: reason.to_string(),
                };
                if requests.is_none() && state.is_none() {
                    return Err(malformed("it has neither inputRequests nor requestState"));
                }
                if state.is_some_and(|s| !s.is_string()) {
                    return Err(malformed("its requestState is not a string"));
                }
                let mut retry = params.clone();
                let Some(fields) = retry.as_object_mut() else {
                    return Err(malformed("the request's params are not an object"));
                };
                fields.remove("inputResponses");
                fields.remove("requestState");
                match requests {
                    Some(requests) => {
                        let answers = self.answer_input(&request(), requests).await?;
                        fields.insert("inputResponses".into(), Value::Object(answers));
                    }
                    // Only state to carry: the server is working; do not hammer it.
                    None => tokio::time::sleep(Duration::from_millis(250)).await,
                }
                if let Some(state) = state {
                    fields.insert("requestState".into(), state.clone());
                }
                Ok(Next::Retry(retry))
            }
            _ => Ok(Next::Done(without_result_type(result))),
        }
    }

    /// Answers every request of `requests` (an `inputRequests` object: key → `{method,
    /// params}`) through the connection's handler, as `inputResponses` (key → result).
    #[allow(deprecated)]
    pub(crate) async fn answer_input(
        &self,
        request: &McpRequest,
        requests: &Value,
    ) -> Result<Map<String, Value>, ClientError> {
        let peer = self.live_peer().await?;
        let handler = self.handler();
        let mut answers = Map::new();
        let Some(requests) = requests.as_object() else {
            return Err(ClientError::Malformed {
                server: self.name().to_string(),
                request: request.clone(),
                what: "input_required result",
                reason: "inputRequests is not an object".into(),
            });
        };
        for (key, input) in requests {
            let refuse = |reason: String| ClientError::InputRequest {
                server: self.name().to_string(),
                request: request.clone(),
                key: key.clone(),
                reason,
            };
            let method = input.get("method").and_then(Value::as_str).unwrap_or("");
            let params = input.get("params").cloned().unwrap_or_else(|| json!({}));
            let id = RequestId::from(NumberOrString::String(
                format!(
                    "codemode-input-{}",
                    INPUT_IDS.fetch_add(1, Ordering::Relaxed)
                )
                .into(),
            ));
            let context = RequestContext::new(id, peer.clone());
            let answer = match method {
                "elicitation/create" => {
                    let params: ElicitRequestParams = serde_json::from_value(params)
                        .map_err(|e| refuse(format!("its elicitation params are invalid: {e}")))?;
                    let result = handler
                        .create_elicitation(params, context)
                        .await
                        .map_err(|e| refuse(e.message.to_string()))?;
                    to_json(result)?
                }
                "sampling/createMessage" => {
                    let params: CreateMessageRequestParams = serde_json::from_value(params)
                        .map_err(|e| refuse(format!("its sampling params are invalid: {e}")))?;
                    let result = handler
                        .create_message(params, context)
                        .await
                        .map_err(|e| refuse(e.message.to_string()))?;
                    to_json(result)?
                }
                // The client declares no roots: none to give.
                "roots/list" => json!({ "roots": [] }),
                other => {
                    return Err(refuse(format!(
                        "{other:?} is not a method a server may ask for input with"
                    )))
                }
            };
            answers.insert(key.clone(), answer);
        }
        Ok(answers)
    }

    /// Follows the task `created` (a `CreateTaskResult`) of `tools/call` `tool` to its end (see
    /// the module documentation) and returns the call's result.
    pub(crate) async fn follow_task(
        &self,
        tool: &str,
        created: Value,
    ) -> Result<Value, ClientError> {
        let request = || McpRequest {
            method: "tools/call".into(),
            subject: Some(tool.to_string()),
        };
        let malformed = |what, reason: String| ClientError::Malformed {
            server: self.name().to_string(),
            request: request(),
            what,
            reason,
        };
        let Some(task_id) = created.get("taskId").and_then(Value::as_str) else {
            return Err(malformed("task", "it has no taskId".into()));
        };
        let task_error = |outcome: String| ClientError::Task {
            server: self.name().to_string(),
            request: request(),
            task_id: task_id.to_string(),
            outcome,
        };
        let started = Instant::now();
        let ttl = created
            .get("ttlMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis);
        let mut interval = poll_interval(&created).unwrap_or(DEFAULT_POLL);
        let mut cancel = CancelTask {
            peer: self.live_peer().await?,
            task_id: Some(task_id.to_string()),
        };
        let mut answered = HashSet::new();
        let timeout = self.call_timeout();
        loop {
            tokio::time::sleep(interval).await;
            let params = json!({ "taskId": task_id });
            let got = to_json(
                self.request("tasks/get", Some(task_id), |p| {
                    send_raw(p, "tasks/get", Some(params.clone()), timeout)
                })
                .await?,
            )?;
            interval = poll_interval(&got).unwrap_or(interval);
            match got.get("status").and_then(Value::as_str) {
                Some("working") => {}
                Some("input_required") => {
                    let Some(Value::Object(requests)) = got.get("inputRequests") else {
                        return Err(malformed(
                            "tasks/get result",
                            "status input_required without inputRequests".into(),
                        ));
                    };
                    // Keys are unique over a task's life: a status that still lists requests
                    // already answered (tasks/update is eventually consistent) asks nothing new.
                    let fresh: Map<String, Value> = requests
                        .iter()
                        .filter(|(key, _)| !answered.contains(*key))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect();
                    if !fresh.is_empty() {
                        let answers = self.answer_input(&request(), &Value::Object(fresh)).await?;
                        answered.extend(answers.keys().cloned());
                        let update = json!({ "taskId": task_id, "inputResponses": answers });
                        self.request("tasks/update", Some(task_id), |p| {
                            send_raw(p, "tasks/update", Some(update.clone()), timeout)
                        })
                        .await?;
                    }
                }
                Some("completed") => {
                    cancel.task_id = None;
                    return match got.get("result") {
                        Some(result @ Value::Object(_)) => Ok(without_result_type(result.clone())),
                        _ => Err(malformed(
                            "tasks/get result",
                            "status completed without a result object".into(),
                        )),
                    };
                }
                Some("failed") => {
                    cancel.task_id = None;
                    let message = got
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("no error message");
                    return Err(task_error(format!("failed: {message}")));
                }
                Some("cancelled") => {
                    cancel.task_id = None;
                    return Err(task_error("was cancelled by the server".into()));
                }
                other => {
                    return Err(malformed(
                        "tasks/get result",
                        format!("unknown status {other:?}"),
                    ))
                }
            }
            if let Some(ttl) = ttl.filter(|ttl| started.elapsed() > *ttl) {
                // `cancel` is still armed: dropping it sends tasks/cancel.
                return Err(task_error(format!(
                    "was not done within its ttlMs of {} ms",
                    ttl.as_millis()
                )));
            }
        }
    }
}
