//! `codemode-mcp-fixture`: the server the official MCP conformance suite's fixture scenarios
//! (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, protocol 2026-07-28) are written
//! against, built from the scenarios' own "Server Implementation Requirements", so
//! `tests/conformance.rs` (codemode-cli) can run them against `codemode serve` with code mode off
//! aggregating it (docs/mcp.md, "The fixture scenarios through `serve` with code mode off").
//! Speaks MCP over stdio.
//!
//! Tools (SEP-2322, multi round-trip requests; every one answers `resultType: "input_required"`
//! until the client retries with the `inputResponses` it asks for):
//!
//! - `test_input_required_result_elicitation`: asks `user_name` (`elicitation/create`, "What is
//!   your name?", a form with a required string `name`); an accepted answer with a string
//!   `name` completes with `Hello, <name>!`; anything else (a missing key, a response that is not
//!   an accepted form) asks again. No `requestState`.
//! - `test_input_required_result_sampling`: asks `capital_question` (`sampling/createMessage`,
//!   "What is the capital of France?", `maxTokens` 100); completes with the answer's text.
//! - `test_input_required_result_list_roots`: asks `client_roots` (`roots/list`); completes with
//!   `roots: <uri>, …`.
//! - `test_input_required_result_request_state`: asks `confirm` (a form with a required boolean
//!   `ok`) with a sealed `requestState`; the retry must echo it (else `-32602`) and completes
//!   with `state-ok: ok=<ok>`.
//! - `test_input_required_result_multiple_inputs`: asks `user_name` (elicitation), `greeting`
//!   (sampling) and `client_roots` (roots) at once with a sealed `requestState`; completes when
//!   all three are answered.
//! - `test_input_required_result_multi_round`: asks `step1` (name), then, with a new sealed
//!   `requestState`, `step2` (favourite colour), then completes with `<name> likes <color>`.
//! - `test_input_required_result_tampered_state`: like `…_request_state`; a `requestState` that
//!   fails the HMAC check is the JSON-RPC error `-32602` `requestState failed its integrity
//!   check`.
//! - `test_input_required_result_capabilities`: asks only for what the request's
//!   `_meta["io.modelcontextprotocol/clientCapabilities"]` declares: `user_name` (elicitation)
//!   when it declares `elicitation`, `capital_question` (sampling) when it declares `sampling`;
//!   nothing declared completes at once with `no input requested`.
//!
//! Prompt: `test_input_required_result_prompt` asks `user_context` (a form with a required
//! string `context`), then answers one user message `Context: <context>`.
//!
//! States are sealed with rmcp's `RequestStateCodec` (HMAC-SHA256) under a key made per process
//! and bound to the tool's name.
//!
//! Task tools (SEP-2663, the `tasks-*` scenarios; run on rmcp's `TaskManager`, which answers
//! `tasks/get`, `tasks/update` and `tasks/cancel`). A tool makes a task only when the request
//! declares `io.modelcontextprotocol/tasks` (its `_meta` client capabilities); otherwise a
//! task-supporting tool runs synchronously and a task-required one is the JSON-RPC error `-32021`
//! (Missing Required Client Capability, `data.requiredCapabilities.extensions` naming the tasks
//! extension):
//!
//! - `greet` (sync only): `Hello, <name>!`.
//! - `slow_compute` (task-supporting): sleeps `seconds` (at most 600), then `<label>: computed
//!   in <seconds> s`; `seconds: 0` answers at once without a task; a `tasks/cancel` while it
//!   sleeps settles the task `cancelled`.
//! - `failing_job` (task required): after 1 s, a tool error (`isError: true`, `failing_job
//!   failed on purpose`): the task is `completed`.
//! - `protocol_error_job` (task-supporting): fails with the JSON-RPC error `-32603` `protocol_error_job
//!   failed on purpose`: the task is `failed` (without a task, the call is that error).
//! - `confirm_delete` (task-supporting): asks `confirm` (a form with a required boolean
//!   `confirm`), then `Deleted <filename>` when accepted with `confirm: true`, else `Kept
//!   <filename>`; without a task it asks by MRTR.
//! - `multi_input` (task-supporting): asks `name` (a string) and `confirm` (a boolean) at once, in
//!   parallel, then `<name> confirmed=<confirm>`; without a task it asks both by MRTR.
//! - `test_tool_with_task` (task required): round 1 asks `user_name` by MRTR; the retry with an
//!   accepted `name` becomes a task that completes with `Hello, <name>! (from a task)`.
//!
//! The "everything server" of the suite's other server scenarios (0.1.16's `tools-call-*`,
//! `resources-*`, `prompts-get-*`, `logging-set-level`, `completion-complete`,
//! `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`, and 0.2.0-alpha.12's
//! `json-schema-2020-12`), each as its "Server Implementation Requirements" text says:
//!
//! - Tools: `test_simple_text`, `test_image_content` (a 1x1 red PNG), `test_audio_content` (a
//!   silent 8-sample WAV, `audio/wav`), `test_embedded_resource`, `test_multiple_content_types`,
//!   `test_tool_with_logging` (three `info` log messages 50 ms apart), `test_error_handling`
//!   (`isError: true`), `test_tool_with_progress` (0/100, 50/100, 100/100 50 ms apart when the
//!   call has a `progressToken`), `test_sampling` (`sampling/createMessage` of `prompt`),
//!   `test_elicitation` (`elicitation/create` asking `username` and `email`),
//!   `test_elicitation_sep1034_defaults` (a default for every primitive type),
//!   `test_elicitation_sep1330_enums` (the five enum shapes) and `json_schema_2020_12_tool` (an
//!   input schema with `$schema`, `$defs` with an `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`,
//!   `additionalProperties: false`). Sampling and elicitation are requests to the client on
//!   protocol 2025-11-25 and older, and `input_required` (MRTR, under the keys `sampling` and
//!   `elicitation`) on 2026-07-28, which `codemode serve` speaks to it and answers for a legacy
//!   client with those requests; a client that did not declare the capability gets
//!   `isError: true`.
//! - Resources: `test://static-text`, `test://static-binary` (the PNG), `test://watched-resource`
//!   (subscribable: `resources/subscribe` and `resources/unsubscribe` track it), and the template
//!   `test://template/{id}/data` (JSON naming the id).
//! - Prompts: `test_simple_prompt`, `test_prompt_with_arguments` (`arg1`, `arg2`),
//!   `test_prompt_with_embedded_resource` (`resourceUri`), `test_prompt_with_image`.
//! - `logging/setLevel` (messages below the level are not sent) and `completion/complete`
//!   (`arg1` of `test_prompt_with_arguments` completes from `paris`, `park`, `party`; anything
//!   else completes to no values).

// Sampling, logging and `resources/subscribe` are deprecated by SEP-2577 for 2026-07-28, but the
// suite's 2025-11-25 scenarios need them.
#![allow(deprecated)]

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, ListPromptsResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, RequestStateCodec, Role, SealOptions,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{
    CancelTaskParams, ClientCapabilities, CreateTaskResult, GetTaskParams, GetTaskResult,
    UpdateTaskParams,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, CreateMessageRequestParams,
    ElicitRequestParams, ErrorCode, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceTemplate, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The tools of the fixture (see the module documentation).
mod everything;
use everything::*;

const TOOLS: [(&str, &str); 8] = [
    (
        "test_input_required_result_elicitation",
        "Asks the client's name by elicitation (MRTR), then greets it.",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model for the capital of France (MRTR sampling).",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks the client for its roots (MRTR roots/list).",
    ),
    (
        "test_input_required_result_request_state",
        "Asks a confirmation with a requestState that the retry must echo.",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks an elicitation, a sampling and the roots in one round.",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks two questions in two rounds, each with its own requestState.",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks a confirmation; a tampered requestState is refused.",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for the input the client declared it can give.",
    ),
];

/// The task tools of the fixture (see the module documentation): name, description, input
/// schema properties.
const TASK_TOOLS: [(&str, &str, &str); 7] = [
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
const MAX_SECONDS: f64 = 600.0;

/// The prompt of the fixture.
const PROMPT: &str = "test_input_required_result_prompt";

/// The conformance fixture server.
struct Fixture {
    states: Arc<RequestStateCodec>,
    tasks: TaskManager,
    /// The level `logging/setLevel` asked for (none: every message is sent).
    log_level: Mutex<Option<LoggingLevel>>,
    /// The URIs `resources/subscribe` asked for and `resources/unsubscribe` did not end.
    subscriptions: Mutex<BTreeSet<String>>,
}

/// An input request from its JSON (`{method, params}`).
fn input(value: Value) -> Result<InputRequest, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// An `elicitation/create` form asking `message`, with one required property `name` of `kind`.
fn form(message: &str, name: &str, kind: &str) -> Result<InputRequest, McpError> {
    input(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {name: {"type": kind}},
                "required": [name]
            }
        }
    }))
}

/// A `sampling/createMessage` request with one user message `text`.
fn sampling(text: &str, max_tokens: u32) -> Result<InputRequest, McpError> {
    input(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens
        }
    }))
}

/// A `roots/list` request.
fn roots() -> Result<InputRequest, McpError> {
    input(json!({"method": "roots/list", "params": {}}))
}

/// `field` of `response` when it is an accepted elicitation answer (`{action: "accept",
/// content}`); `None` for any other answer (declined, cancelled, not an object).
fn accepted<'a>(response: Option<&'a Value>, field: &str) -> Option<&'a Value> {
    let response = response?;
    if response.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    response.get("content")?.get(field)
}

/// The text of a sampling answer (`{role, content: {type: "text", text}}`).
fn sampled(response: Option<&Value>) -> Option<&str> {
    response?.get("content")?.get("text")?.as_str()
}

/// The root URIs of a `roots/list` answer (`{roots: [{uri}]}`).
fn root_uris(response: Option<&Value>) -> Option<Vec<&str>> {
    let roots = response?.get("roots")?.as_array()?;
    roots
        .iter()
        .map(|root| root.get("uri").and_then(Value::as_str))
        .collect()
}

/// A complete result with one text block.
fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

/// An `input_required` answer asking `requests` with `state`.
fn ask(requests: Vec<(&str, InputRequest)>, state: Option<String>) -> CallToolResponse {
    let requests: InputRequests = requests
        .into_iter()
        .map(|(key, request)| (key.to_string(), request))
        .collect();
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), state))
}

impl Fixture {
    /// A state for `tool` saying the call is at `round`.
    fn seal(&self, tool: &str, round: &str) -> String {
        let options = SealOptions::new().associated_data(tool.as_bytes());
        self.states
            .seal_json_with(&json!({ "round": round }), &options)
            .expect("a JSON object seals")
    }

    /// The round of the state `sealed` for `tool`: `None` without a state, the JSON-RPC error
    /// `-32602` when it fails the integrity check.
    fn round(&self, tool: &str, sealed: Option<&str>) -> Result<Option<String>, McpError> {
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let state: Value = self
            .states
            .open_json_with(sealed, tool.as_bytes())
            .map_err(|e| {
                McpError::invalid_params(
                    "requestState failed its integrity check",
                    Some(json!({ "reason": e.to_string() })),
                )
            })?;
        Ok(state
            .get("round")
            .and_then(Value::as_str)
            .map(str::to_string))
    }

    fn call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = request.name.as_ref();
        let responses = request.input_responses.clone().unwrap_or_default();
        let state = request.request_state.as_deref();
        match tool {
            "test_input_required_result_elicitation" => {
                match accepted(responses.get("user_name"), "name").and_then(Value::as_str) {
                    Some(name) => Ok(text(format!("Hello, {name}!"))),
                    None => Ok(ask(
                        vec![("user_name", form("What is your name?", "name", "string")?)],
                        None,
                    )),
                }
            }
            "test_input_required_result_sampling" => {
                match sampled(responses.get("capital_question")) {
                    Some(answer) => Ok(text(format!("The model said: {answer}"))),
                    None => Ok(ask(
                        vec![(
                            "capital_question",
                            sampling("What is the capital of France?", 100)?,
                        )],
                        None,
                    )),
                }
            }
            "test_input_required_result_list_roots" => {
                match root_uris(responses.get("client_roots")) {
                    Some(uris) => Ok(text(format!("roots: {}", uris.join(", ")))),
                    None => Ok(ask(vec![("client_roots", roots()?)], None)),
                }
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let round = self.round(tool, state)?;
                let ok = accepted(responses.get("confirm"), "ok").and_then(Value::as_bool);
                match (round.as_deref(), ok) {
                    (Some("confirm"), Some(ok)) => Ok(text(format!("state-ok: ok={ok}"))),
                    _ => Ok(ask(
                        vec![("confirm", form("Please confirm", "ok", "boolean")?)],
                        Some(self.seal(tool, "confirm")),
                    )),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let round = self.round(tool, state)?;
                let name = accepted(responses.get("user_name"), "name").and_then(Value::as_str);
                let greeting = sampled(responses.get("greeting"));
                let uris = root_uris(responses.get("client_roots"));
                match (round.as_deref(), name, greeting, uris) {
                    (Some("all"), Some(name), Some(greeting), Some(uris)) => Ok(text(format!(
                        "{greeting} {name}; roots: {}",
                        uris.join(", ")
                    ))),
                    _ => Ok(ask(
                        vec![
                            ("user_name", form("What is your name?", "name", "string")?),
                            ("greeting", sampling("Generate a greeting", 50)?),
                            ("client_roots", roots()?),
                        ],
                        Some(self.seal(tool, "all")),
                    )),
                }
            }
            "test_input_required_result_multi_round" => self.multi_round(&responses, state),
            "test_input_required_result_capabilities" => {
                let declared = context.meta.client_capabilities();
                let mut requests = Vec::new();
                if declared.as_ref().is_some_and(|c| c.elicitation.is_some()) {
                    requests.push(("user_name", form("What is your name?", "name", "string")?));
                }
                if declared.as_ref().is_some_and(|c| c.sampling.is_some()) {
                    requests.push((
                        "capital_question",
                        sampling("What is the capital of France?", 100)?,
                    ));
                }
                if requests.is_empty() || !responses.is_empty() {
                    return Ok(text("no input requested"));
                }
                Ok(ask(requests, None))
            }
            name => Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            )),
        }
    }

    /// `test_input_required_result_multi_round`: `step1`, then `step2`, then the result.
    fn multi_round(
        &self,
        responses: &std::collections::BTreeMap<String, Value>,
        state: Option<&str>,
    ) -> Result<CallToolResponse, McpError> {
        const TOOL: &str = "test_input_required_result_multi_round";
        let round = self.round(TOOL, state)?;
        let step1 = || -> Result<CallToolResponse, McpError> {
            Ok(ask(
                vec![(
                    "step1",
                    form("Step 1: What is your name?", "name", "string")?,
                )],
                Some(self.seal(TOOL, "step1")),
            ))
        };
        match round.as_deref() {
            Some("step1") => {
                match accepted(responses.get("step1"), "name").and_then(Value::as_str) {
                    Some(name) => Ok(ask(
                        vec![(
                            "step2",
                            form("Step 2: What is your favorite color?", "color", "string")?,
                        )],
                        Some(self.seal(TOOL, &format!("step2:{name}"))),
                    )),
                    None => step1(),
                }
            }
            Some(round) if round.starts_with("step2:") => {
                let name = &round["step2:".len()..];
                match accepted(responses.get("step2"), "color").and_then(Value::as_str) {
                    Some(color) => Ok(text(format!("{name} likes {color}"))),
                    None => step1(),
                }
            }
            _ => step1(),
        }
    }
}

/// The `-32021` error of a task-required tool called without the tasks extension.
fn task_required() -> McpError {
    McpError::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

/// A tool's text result.
fn done(text: impl Into<String>) -> rmcp::model::CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

/// Waits for the client's answer to `request` under `key` (`tasks/update`); a `tasks/cancel`
/// meanwhile ends the task `cancelled`.
async fn ask_in_task(
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
    fn spawn(&self, work: impl FnOnce(TaskContext) -> TaskFuture) -> CallToolResponse {
        let task = self.tasks.spawn(TaskOptions::new(), work);
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// A call of one of the task tools (module documentation).
    async fn task_call(
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

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tasks()
                .build(),
        );
        info.server_info = Implementation::new("codemode-mcp-fixture", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema: JsonObject = Map::from_iter([("type".to_string(), json!("object"))]);
        let schema = Arc::new(schema);
        let mut tools: Vec<Tool> = TOOLS
            .iter()
            .map(|(name, description)| Tool::new(*name, *description, schema.clone()))
            .collect();
        for (name, description, properties) in TASK_TOOLS {
            let properties: Value =
                serde_json::from_str(properties).expect("the fixture's schemas are JSON");
            let schema: JsonObject = Map::from_iter([
                ("type".to_string(), json!("object")),
                ("properties".to_string(), properties),
            ]);
            tools.push(Tool::new(name, description, Arc::new(schema)));
        }
        for (name, description, schema) in EVERYTHING_TOOLS {
            let schema: JsonObject =
                serde_json::from_str(schema).expect("the fixture's schemas are JSON objects");
            tools.push(Tool::new(name, description, Arc::new(schema)));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if TASK_TOOLS.iter().any(|(name, _, _)| *name == request.name) {
            return self.task_call(&request, &context).await;
        }
        if EVERYTHING_TOOLS
            .iter()
            .any(|(name, _, _)| *name == request.name)
        {
            return self.everything_call(&request, &context).await;
        }
        self.call(&request, &context)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = vec![Prompt::new(
            PROMPT,
            Some("Asks the client for context (MRTR), then answers a prompt using it."),
            None,
        )];
        for (name, description, arguments) in EVERYTHING_PROMPTS {
            let arguments = arguments
                .iter()
                .map(|(name, description)| {
                    let mut argument = PromptArgument::new(*name);
                    argument.description = Some(description.to_string());
                    argument.required = Some(true);
                    argument
                })
                .collect::<Vec<_>>();
            prompts.push(Prompt::new(
                name,
                Some(description),
                (!arguments.is_empty()).then_some(arguments),
            ));
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        if let Some(prompt) = self.everything_prompt(&request.name, &arguments) {
            return Ok(prompt?.into());
        }
        if request.name != PROMPT {
            return Err(McpError::invalid_params(
                format!("Unknown prompt: {}", request.name),
                None,
            ));
        }
        let responses = request.input_responses.unwrap_or_default();
        match accepted(responses.get("user_context"), "context").and_then(Value::as_str) {
            Some(context) => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Context: {context}"),
            )])
            .into()),
            None => {
                let asked = form("What context should the prompt use?", "context", "string")?;
                let requests = InputRequests::from([("user_context".to_string(), asked)]);
                Ok(GetPromptResponse::InputRequired(
                    InputRequiredResult::from_input_requests(requests),
                ))
            }
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources: Vec<Resource> = from_json(json!([
            {
                "uri": "test://static-text",
                "name": "static-text",
                "description": "A static text resource.",
                "mimeType": "text/plain"
            },
            {
                "uri": "test://static-binary",
                "name": "static-binary",
                "description": "A static binary resource (a 1x1 red PNG).",
                "mimeType": "image/png"
            },
            {
                "uri": "test://watched-resource",
                "name": "watched-resource",
                "description": "A resource clients can subscribe to.",
                "mimeType": "text/plain"
            }
        ]))?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates: Vec<ResourceTemplate> = from_json(json!([{
            "uriTemplate": TEMPLATE,
            "name": "template-data",
            "description": "JSON data for the id in the URI.",
            "mimeType": "application/json"
        }]))?;
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(self.everything_resource(&request.uri)?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri);
        Ok(())
    }

    /// A 2026-07-28 client subscribes to resources with `subscriptions/listen` (the revision has
    /// no `resources/subscribe`): its `resourceSubscriptions` are accepted.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris = requested.resource_subscriptions.clone().unwrap_or_default();
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    /// Tracks a listen's resources as `resources/subscribe` does, until the client ends it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let subscriptions = || self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        subscriptions().extend(uris.iter().cloned());
        context.cancelled().await;
        let mut subscribed = subscriptions();
        for uri in &uris {
            subscribed.remove(uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let reference = serde_json::to_value(&request.r#ref).unwrap_or_default();
        let values: Vec<String> = if reference["type"] == "ref/prompt"
            && reference["name"] == "test_prompt_with_arguments"
            && request.argument.name == "arg1"
        {
            COMPLETIONS
                .iter()
                .filter(|value| value.starts_with(&request.argument.value))
                .map(|value| value.to_string())
                .collect()
        } else {
            Vec::new()
        };
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }
}

#[tokio::main]
async fn main() {
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let states = RequestStateCodec::try_new(key).expect("32 bytes is a long enough key");
    let server = Fixture {
        states: Arc::new(states),
        tasks: TaskManager::new(),
        log_level: Mutex::new(None),
        subscriptions: Mutex::new(BTreeSet::new()),
    };
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("codemode-mcp-fixture: the connection did not start: {e}");
            std::process::exit(1);
        }
    };
    let _ = running.waiting().await;
    // A pending read on stdin would keep the runtime alive; leave at once.
    std::process::exit(0);
}
