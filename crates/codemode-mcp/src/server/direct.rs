//! `serve` with code mode off: a plain aggregating MCP server (docs/mcp.md, "Code mode off").
//!
//! `tools/list` answers the downstream servers' own tools under their registered names
//! (`<server>__<tool>`, [`McpHub::direct_tools`]) instead of `exec` and `wait`, and `tools/call`
//! of one of them goes through the same host pipeline a nested call of a run goes through
//! (docs/contract/host.md#h1 to #h3: policy → `before_tool_call` hooks → approval → the MCP
//! server → `after_tool_call` hooks), recorded in the trajectory as a `nested_tool_call` /
//! `nested_tool_result` pair. The downstream result is answered as the server gave it.
//!
//! A 2026-07-28 client answers a downstream server's `input_required` itself: the call runs as
//! a round of [`passing_through`] (the client's `inputResponses` and the server's own
//! `requestState` go to the server, the client's capabilities are declared for it), and the
//! server's `input_required` is answered to the client with the server's `requestState` sealed
//! ([`RequestStates::seal_downstream`](crate::mrtr::RequestStates::seal_downstream): bound to
//! the session and the tool, single-use, expiring with `snapshotTtlSeconds`). Each round is one
//! call through the pipeline.
//!
//! A 2026-07-28 client that declares the tasks extension gets a downstream `CreateTaskResult`
//! as it is but for its task id, which `serve` maps to the server's (`direct_tasks.rs`); its
//! `tasks/get`, `tasks/update` and `tasks/cancel` go back to that server. A downstream refusal
//! `-32021` (the server needs a capability the client did not declare, such as a task-required
//! tool called without Tasks) is answered to the client as that JSON-RPC error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_bridge::ToolCall;
use codemode_facade::ToolPipeline;
use codemode_telemetry::{EventKind, NestedMethod, NestedStatus, NestedToolCallEvent, Trajectory};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use super::calls::{is_current_revision, uses_tasks};
use super::direct_tasks::RelayedTasks;
use super::progress::progress_channel;
use super::results::input_required_of;
use super::session::session_owner;
use super::session::Session;
use super::CodeModeServer;
use crate::client::passthrough::{passing_through, PassThrough};
use crate::drain::SHUTTING_DOWN;
use crate::hub::{DirectTool, McpHub};

/// The `instructions` of a server with code mode off.
pub const DIRECT_INSTRUCTIONS: &str =
    "The tools of the configured MCP servers, each named <server>__<tool>.";

/// How long a call with a `progressToken` waits at most after its result for the server's
/// progress notifications still being handled, when its last one fell short of its total (see
/// [`progress_grace`]).
const PROGRESS_GRACE: Duration = Duration::from_millis(100);

/// After the result of the nested call `tool_call_id`: rmcp handles each notification on a task
/// of its own, so the server's last progress, written before its result, may still be on its
/// way. Waits (polling every 2 ms, at most [`PROGRESS_GRACE`]) while the last progress routed
/// for the call is short of its total, or has none; not at all when the server reported no
/// progress for the call, or its last reached the total. So only calls that report progress
/// pay, and those that complete it pay nothing.
async fn progress_grace(forward: &crate::forward::Forwarder, tool_call_id: &str) {
    let until = Instant::now() + PROGRESS_GRACE;
    loop {
        match forward.last_progress(tool_call_id) {
            None => return,
            Some((progress, Some(total))) if progress >= total => return,
            Some(_) if Instant::now() >= until => return,
            Some(_) => tokio::time::sleep(Duration::from_millis(2)).await,
        }
    }
}

/// The `bridge_id` of a call made with code mode off: no guest program asked for it.
const DIRECT_BRIDGE_ID: &str = "mcp:tools/call";

/// What `serve` exposes with code mode off (`tools.codeMode.enabled: false`): the MCP servers of
/// `hub`, tool by tool. Approvals of their calls are asked of the session's client by
/// elicitation and expire after `approval_ttl` (the config's `snapshotTtlSeconds`).
#[derive(Clone)]
pub struct DirectTools {
    hub: McpHub,
    approval_ttl: Duration,
    bare: bool,
    /// The downstream tasks passed through to Tasks clients (every session's).
    relayed: RelayedTasks,
    /// Which server (safe name) last listed a resource URI: where `resources/read` goes
    /// (`content.rs`).
    uri_routes: Arc<Mutex<HashMap<String, String>>>,
    /// The allowed tools as of one [`McpHub::generation`] (`direct_allowed`): every listing
    /// change bumps the generation, so each `tools/call` does not rebuild and clone every
    /// server's tools to find one.
    allowed: Arc<Mutex<Option<AllowedAt>>>,
}

/// The allowed tools (`direct_allowed`) and the [`McpHub::generation`] they were made at.
type AllowedAt = (u64, Arc<Vec<DirectTool>>);

impl DirectTools {
    /// The tools of `hub`, with approvals outstanding at most `approval_ttl`, each named
    /// `<server>__<tool>`.
    pub fn new(hub: McpHub, approval_ttl: Duration) -> Self {
        DirectTools {
            hub,
            approval_ttl,
            bare: false,
            relayed: RelayedTasks::new(),
            uri_routes: Arc::default(),
            allowed: Arc::default(),
        }
    }

    /// The same tools under their servers' own names (`serve --bare-names`, meant for one
    /// server: of two tools of one name, the first server's in name order is served). Policy,
    /// hooks and the trajectory still see `<server>__<tool>`.
    pub fn with_bare_names(mut self) -> Self {
        self.bare = true;
        self
    }

    /// The hub of the downstream servers.
    pub(super) fn hub(&self) -> &McpHub {
        &self.hub
    }

    /// The downstream tasks passed through to Tasks clients.
    pub(super) fn relayed(&self) -> &RelayedTasks {
        &self.relayed
    }

    /// How long an approval of a call stays outstanding (`snapshotTtlSeconds`).
    pub(super) fn approval_ttl(&self) -> Duration {
        self.approval_ttl
    }

    /// `true` with `--bare-names`: servers' own tool and prompt names.
    pub(super) fn is_bare(&self) -> bool {
        self.bare
    }

    /// The URI routes of `resources/read` (`content.rs`).
    pub(super) fn uri_routes(&self) -> &Mutex<HashMap<String, String>> {
        &self.uri_routes
    }

    /// The name the client sees for `tool`.
    fn exposed<'a>(&self, tool: &'a DirectTool) -> &'a str {
        if self.bare {
            &tool.server_tool
        } else {
            &tool.name
        }
    }
}

/// An MCP tool from a downstream tool's JSON, named `name`; a definition rmcp cannot read
/// (hostile or malformed metadata) keeps its description and input schema when those can be
/// read, else an object schema.
fn mcp_tool(direct: &DirectTool, name: &str) -> Tool {
    if let Ok(mut tool) = serde_json::from_value::<Tool>(Value::Object(direct.tool.clone())) {
        tool.name = name.to_string().into();
        return tool;
    }
    let description = direct
        .tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let schema = match direct.tool.get("inputSchema") {
        Some(Value::Object(schema)) => schema.clone(),
        _ => serde_json::Map::from_iter([("type".to_string(), Value::from("object"))]),
    };
    Tool::new(name.to_string(), description, Arc::new(schema))
}

/// A downstream result as an MCP answer: the server's own `CallToolResult` (the client already
/// dropped a 2026-07-28 `resultType: "complete"`), or, when rmcp cannot read it, its JSON as
/// one text block.
fn call_result(value: Value) -> CallToolResult {
    match serde_json::from_value::<CallToolResult>(value.clone()) {
        Ok(result) => result,
        Err(_) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
    }
}

impl CodeModeServer {
    /// The same server with code mode off: `tools/list` and `tools/call` serve the tools of
    /// `direct` instead of `exec` and `wait` (docs/mcp.md, "Code mode off"). The host's
    /// policy, hooks and trajectory ([`super::ServeHost`]) apply to every call.
    pub fn with_direct_tools(mut self, direct: DirectTools) -> Self {
        self.direct = Some(Arc::new(direct));
        self
    }

    /// The downstream tools the host's policy allows, the first of each exposed name; made
    /// once per [`McpHub::generation`] (read before the listings, so a change while it is made
    /// makes the next call build it again).
    fn direct_allowed(&self, direct: &DirectTools) -> Arc<Vec<DirectTool>> {
        let generation = direct.hub.generation();
        let cached = |slot: &Option<AllowedAt>| {
            slot.as_ref()
                .filter(|(seen, _)| *seen == generation)
                .map(|(_, tools)| tools.clone())
        };
        if let Some(tools) = cached(
            &direct
                .allowed
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ) {
            return tools;
        }
        let tools = match &self.host {
            Some(host) => direct
                .hub
                .direct_tools(|name, id| host.policy.allows(name, id)),
            None => direct.hub.direct_tools(|_, _| true),
        };
        let mut seen = std::collections::HashSet::new();
        let tools: Arc<Vec<DirectTool>> = Arc::new(
            tools
                .into_iter()
                .filter(|tool| seen.insert(direct.exposed(tool).to_string()))
                .collect(),
        );
        *direct
            .allowed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((generation, tools.clone()));
        tools
    }

    /// `tools/list` with code mode off: the allowed downstream tools, servers in name order.
    pub(super) fn direct_list(&self, direct: &DirectTools) -> Vec<Tool> {
        direct.hub.retry_failed();
        self.direct_allowed(direct)
            .iter()
            .map(|tool| mcp_tool(tool, direct.exposed(tool)))
            .collect()
    }

    /// The downstream `input_required` answer `asked` passed to the client: its
    /// `inputRequests` as they are, its `requestState` sealed for `binding`. A server asking
    /// with a request a client may not be asked answers `isError: true`.
    fn pass_input_required(
        &self,
        direct: &DirectTools,
        binding: &str,
        tool: &str,
        asked: &Value,
    ) -> CallToolResponse {
        let ttl = direct.approval_ttl;
        match input_required_of(asked, |state| {
            self.states.seal_downstream(binding, state, ttl)
        }) {
            Ok(asked) => CallToolResponse::InputRequired(asked),
            Err(e) => {
                CallToolResult::error(vec![ContentBlock::text(format!("Tool \"{tool}\" {e}"))])
                    .into()
            }
        }
    }

    /// `tools/call` with code mode off: the call of `request` through the host pipeline to its
    /// MCP server (see the module documentation). A name that is not an allowed downstream tool
    /// is a JSON-RPC `invalid params` error `Unknown tool: <name>`; a call the pipeline refuses
    /// (a hook's block, a denied approval) or the server fails answers `isError: true` with the
    /// message a run's program would see. A `notifications/cancelled` (or the session's end)
    /// drops the downstream request; a server shutdown answers [`SHUTTING_DOWN`]. For a
    /// 2026-07-28 client the server's `input_required` is passed through (module
    /// documentation); a `requestState` that is not one this server sealed for the session and
    /// tool is the JSON-RPC error [`crate::mrtr::invalid_request_state`].
    pub(super) async fn direct_call(
        &self,
        direct: &DirectTools,
        session: &Session,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(tool) = self
            .direct_allowed(direct)
            .iter()
            .find(|tool| direct.exposed(tool) == name)
            .cloned()
        else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        let binding = format!(
            "{}|{name}",
            session.scope.session_key.as_deref().unwrap_or_default()
        );
        let round = if is_current_revision(context) {
            let request_state = match request.request_state.as_deref() {
                Some(sealed) => Some(self.states.open_downstream(&binding, sealed)?),
                None => None,
            };
            Some(PassThrough {
                input_responses: request
                    .input_responses
                    .clone()
                    .map(|responses| responses.into_iter().collect()),
                request_state,
                client_capabilities: context.client_capabilities(),
                tasks: uses_tasks(context),
                refusal: Default::default(),
            })
        } else {
            None
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        let host = self.host.as_deref().cloned().unwrap_or_default();
        let trajectory = Trajectory::clone(&host.trajectory);
        let call = ToolCall {
            tool_id: tool.id.clone(),
            tool_name: tool.name.clone(),
            input,
            scope: session.scope.clone(),
            bridge_id: DIRECT_BRIDGE_ID.to_string(),
            tool_call_id: format!("mcp:{}:{}", tool.name, uuid::Uuid::new_v4()),
            parent_tool_call_id: None,
            code_mode_run_id: None,
        };
        let pipeline = ToolPipeline::new(Arc::new(direct.hub.executor(None)))
            .with_policy(host.policy.clone())
            .with_hooks(host.hooks.clone())
            .with_trajectory(trajectory.clone())
            .with_approver(session.approvals(direct.approval_ttl));
        // Downstream progress for this call reaches the client when it asked for progress.
        let progress = progress_channel(context);
        if let (Some(progress), Some(forward)) = (&progress, &self.forward) {
            forward.watch_call(&call.tool_call_id, progress.messages().clone());
        }
        if trajectory.is_enabled() {
            trajectory.record(EventKind::NestedToolCall(NestedToolCallEvent {
                tool_call_id: call.tool_call_id.clone(),
                parent_tool_call_id: None,
                code_mode_run_id: None,
                tool_id: call.tool_id.clone(),
                tool_name: call.tool_name.clone(),
                method: NestedMethod::Call,
                input: call.input.clone(),
            }));
        }
        let tool_call_id = call.tool_call_id.clone();
        let started = Instant::now();
        let called = async {
            match round.clone() {
                Some(round) => passing_through(round, pipeline.call(call)).await,
                None => pipeline.call(call).await,
            }
        };
        let outcome = tokio::select! {
            outcome = called => Some(outcome),
            () = self.cancelled(context) => None,
        };
        if let (Some(_), Some(_), Some(forward)) = (&outcome, &progress, &self.forward) {
            // The server's last progress notification was written before its result, but rmcp
            // handles notifications in tasks of their own: give one still being routed the time
            // to go out before the call's answer (docs/mcp.md, "The everything-server scenarios
            // through `serve` with code mode off": `tools-call-with-progress` lost its third
            // notification in 1 of 3 runs without this).
            progress_grace(forward, &tool_call_id).await;
        }
        if let Some(forward) = &self.forward {
            forward.unwatch_call(&tool_call_id);
        }
        if let Some(progress) = progress {
            // What reached the channel goes out before the answer.
            progress.finish().await;
        }
        let Some(outcome) = outcome else {
            return Err(if self.drain.is_stopping() {
                ErrorData::internal_error(SHUTTING_DOWN, None)
            } else {
                ErrorData::internal_error("the request was cancelled", None)
            });
        };
        // A downstream task for a Tasks client: the client knows it by an id of serve's.
        let outcome = match outcome {
            Ok(value)
                if round.as_ref().is_some_and(|r| r.tasks)
                    && value.get("resultType").and_then(Value::as_str) == Some("task") =>
            {
                match direct
                    .relayed
                    .relay(&session_owner(session), &tool.server, value)
                {
                    Some(created) => Ok(created),
                    None => Err(codemode_facade::CallError::Failed {
                        tool_id: tool.id.clone(),
                        error: codemode_bridge::ToolError::failed(format!(
                            "Tool \"{name}\" answered a task without a taskId"
                        )),
                    }),
                }
            }
            outcome => outcome,
        };
        if trajectory.is_enabled() {
            let (status, result, error) = match &outcome {
                Ok(value) => (NestedStatus::Ok, Some(value.clone()), None),
                Err(e) => (e.status(), None, Some(e.to_string())),
            };
            trajectory.record(EventKind::NestedToolResult(
                codemode_telemetry::NestedToolResultEvent {
                    tool_call_id,
                    parent_tool_call_id: None,
                    code_mode_run_id: None,
                    tool_id: tool.id,
                    tool_name: tool.name,
                    method: NestedMethod::Call,
                    status,
                    duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    result,
                    error,
                },
            ));
        }
        if outcome.is_err() {
            if let Some(refusal) = round.as_ref().and_then(|r| r.refusal.take()) {
                return Err(refusal);
            }
        }
        Ok(match outcome {
            Ok(value)
                if round.as_ref().is_some_and(|r| r.tasks)
                    && value.get("resultType").and_then(Value::as_str) == Some("task") =>
            {
                match serde_json::from_value::<CreateTaskResult>(value) {
                    Ok(created) => CallToolResponse::Task(created),
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "Tool \"{name}\" answered a task that is not an MCP task: {e}"
                    ))])
                    .into(),
                }
            }
            Ok(value)
                if round.is_some()
                    && value.get("resultType").and_then(Value::as_str)
                        == Some("input_required") =>
            {
                self.pass_input_required(direct, &binding, name, &value)
            }
            Ok(value) => call_result(value).into(),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into(),
        })
    }
}
