//! The fixture's task tools (`tasks-*` scenarios): their list and what each does as a task
//! (module documentation of `main.rs`).

use super::*;

/// The task tools of the fixture (see the module documentation): name, description, input
/// schema properties.
pub(super) const TASK_TOOLS: [(&str, &str, &str); 7] = [
    (
        "greet",
        "Greets `name` (sync only).",
        r#"{"name": {"type": "string"}}"#,
    ),
    (
        "slow_compute",
        "Sleeps `seconds`, then answers (task-supporting).",
        r#"{"seconds": {"type": "number"}, "label": {"type": "string"}}"#,
    ),
    (
        "failing_job",
        "Fails with a tool error after 1 s (task required).",
        "{}",
    ),
    (
        "protocol_error_job",
        "Fails with a JSON-RPC error (task-supporting).",
        "{}",
    ),
    (
        "confirm_delete",
        "Asks a confirmation, then deletes `filename` (task-supporting).",
        r#"{"filename": {"type": "string"}}"#,
    ),
    (
        "multi_input",
        "Asks two questions at once (task-supporting).",
        "{}",
    ),
    (
        "test_tool_with_task",
        "Asks a name by MRTR, then greets it from a task (task required).",
        "{}",
    ),
];

/// The longest `slow_compute` sleep.
pub(super) const MAX_SECONDS: f64 = 600.0;

/// The `-32021` error of a task-required tool called without the tasks extension.
pub(super) fn task_required() -> McpError {
    McpError::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

/// A tool's text result.
pub(super) fn done(text: impl Into<String>) -> rmcp::model::CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

/// Waits for the client's answer to `request` under `key` (`tasks/update`); a `tasks/cancel`
/// meanwhile ends the task `cancelled`.
pub(super) async fn ask_in_task(
    context: &TaskContext,
    key: &str,
    request: InputRequest,
) -> Result<Value, TaskExit> {
    tokio::select! {
        answer = context.request_input(key, request) => answer,
        () = context.cancelled() => Err(TaskExit::Cancelled),
    }
}

impl Fixture {
    /// Starts `work` as a task and answers its `CreateTaskResult`.
    pub(super) fn spawn(&self, work: impl FnOnce(TaskContext) -> TaskFuture) -> CallToolResponse {
        let task = self.tasks.spawn(TaskOptions::new(), work);
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// A call of one of the task tools (module documentation).
    pub(super) async fn task_call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let arguments = request.arguments.clone().unwrap_or_default();
        let string = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let responses = request.input_responses.clone().unwrap_or_default();
        match request.name.as_ref() {
            "greet" => Ok(text(format!("Hello, {}!", string("name")))),
            "slow_compute" => {
                let seconds = arguments
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    .clamp(0.0, MAX_SECONDS);
                let answer = format!("{}: computed in {seconds} s", string("label"));
                if seconds == 0.0 {
                    return Ok(text(answer));
                }
                let sleep = Duration::from_secs_f64(seconds);
                if !tasks {
                    tokio::time::sleep(sleep).await;
                    return Ok(text(answer));
                }
                Ok(self.spawn(move |task| {
                    Box::pin(async move {
                        tokio::select! {
                            () = tokio::time::sleep(sleep) => Ok(done(answer)),
                            () = task.cancelled() => Err(TaskExit::Cancelled),
                        }
                    })
                }))
            }
            "failing_job" => {
                if !tasks {
                    return Err(task_required());
                }
                Ok(self.spawn(|_| {
                    Box::pin(async {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Ok(CallToolResult::error(vec![ContentBlock::text(
                            "failing_job failed on purpose",
                        )]))
                    })
                }))
            }
            "protocol_error_job" => {
                let error = McpError::internal_error("protocol_error_job failed on purpose", None);
                if !tasks {
                    return Err(error);
                }
                Ok(self.spawn(|_| {
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Err(TaskExit::Error(error))
                    })
                }))
            }
            "confirm_delete" => {
                let filename = string("filename");
                let question = form("Delete the file?", "confirm", "boolean")?;
                let outcome = move |answer: Option<&Value>| {
                    if accepted(answer, "confirm").and_then(Value::as_bool) == Some(true) {
                        format!("Deleted {filename}")
                    } else {
                        format!("Kept {filename}")
                    }
                };
                if !tasks {
                    return Ok(match responses.get("confirm") {
                        Some(answer) => text(outcome(Some(answer))),
                        None => ask(vec![("confirm", question)], None),
                    });
                }
                Ok(self.spawn(move |task| {
                    Box::pin(async move {
                        let answer = ask_in_task(&task, "confirm", question).await?;
                        Ok(done(outcome(Some(&answer))))
                    })
                }))
            }
            "multi_input" => {
                let name_question = form("What is your name?", "name", "string")?;
                let confirm_question = form("Please confirm", "confirm", "boolean")?;
                let outcome = |name: Option<&Value>, confirm: Option<&Value>| {
                    let name = accepted(name, "name")
                        .and_then(Value::as_str)
                        .unwrap_or("nobody")
                        .to_string();
                    let confirm = accepted(confirm, "confirm")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    format!("{name} confirmed={confirm}")
                };
                if !tasks {
                    return Ok(match (responses.get("name"), responses.get("confirm")) {
                        (Some(name), Some(confirm)) => text(outcome(Some(name), Some(confirm))),
                        _ => ask(
                            vec![("name", name_question), ("confirm", confirm_question)],
                            None,
                        ),
                    });
                }
                Ok(self.spawn(move |task| {
                    Box::pin(async move {
                        let (name, confirm) = tokio::try_join!(
                            ask_in_task(&task, "name", name_question),
                            ask_in_task(&task, "confirm", confirm_question),
                        )?;
                        Ok(done(outcome(Some(&name), Some(&confirm))))
                    })
                }))
            }
            "test_tool_with_task" => {
                if !tasks {
                    return Err(task_required());
                }
                match accepted(responses.get("user_name"), "name").and_then(Value::as_str) {
                    None => Ok(ask(
                        vec![("user_name", form("What is your name?", "name", "string")?)],
                        None,
                    )),
                    Some(name) => {
                        let greeting = format!("Hello, {name}! (from a task)");
                        Ok(self.spawn(|_| {
                            Box::pin(async move {
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                Ok(done(greeting))
                            })
                        }))
                    }
                }
            }
            name => Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            )),
        }
    }
}
