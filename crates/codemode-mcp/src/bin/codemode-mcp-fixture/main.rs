//! `codemode-mcp-fixture`: the server the official MCP conformance suite's fixture scenarios
//! (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, protocol 2026-07-28) are written
//! against, built from the scenarios' own "Server Implementation Requirements", so
//! `tests/integration/conformance.rs` (codemode-cli) can run them against `codemode serve` with code mode off
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

/// The everything server's tools, prompts and resources (see the module documentation).
mod everything;
/// The MRTR tools.
mod mrtr;
/// The task tools.
mod tasks;
use everything::*;
use mrtr::*;
use tasks::*;

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
