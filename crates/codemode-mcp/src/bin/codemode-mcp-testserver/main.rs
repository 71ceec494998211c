//! `codemode-mcp-testserver`: a small, deliberately misbehaving MCP server (rmcp, stdio transport)
//! used as a fixture by the `codemode-mcp` integration tests, which find it through
//! `env!("CARGO_BIN_EXE_codemode-mcp-testserver")`.
//!
//! Tools (always present):
//!
//! - `echo` `{text: string}` (required): one text content = `text`, `structuredContent`
//!   `{echo: text}`.
//! - `fail` `{}`: a tool-level error: `isError: true`, text `it failed`.
//! - `protocol_error` `{}`: a JSON-RPC error (invalid params, `bad params from testserver`).
//! - `hang` `{}`: never answers.
//! - `slow` `{ms: integer}`: sleeps `ms` milliseconds, then answers `slept <ms>`.
//! - `crash` `{}`: exits the process with status 3 without answering.
//! - `add_tool` `{}`: adds a tool `added_<n>` (n = 1, 2, …; it behaves like `echo`), sends
//!   `notifications/tools/list_changed`, then answers `added added_<n>`.
//! - `env` `{}`: one text content, the server's whole environment as a JSON object (sorted by
//!   name; variables that are not UTF-8 are left out).
//! - `client_info` `{}`: one text content, the client's `initialize` params as JSON
//!   (`{protocolVersion, capabilities, clientInfo}`); on 2026-07-28 the same three taken from
//!   the request's `_meta`.
//! - `big` `{bytes: integer}`: one text content of `bytes` `x` characters (a reply over a
//!   client's line limit).
//! - `ask` `{}` (MRTR, protocol 2026-07-28 only): the first call answers `resultType:
//!   "input_required"` with one input request, `confirm` (an `elicitation/create` form asking
//!   `Proceed?` with a boolean `ok`), and `requestState` `"ask-state-1"`; a retry carrying
//!   `inputResponses.confirm` and that `requestState` answers one text content `answered <the
//!   confirm response as JSON>`; a retry with another or no `requestState` is an invalid-params
//!   error `requestState was not echoed`.
//! - `task_slow` `{ms: integer}` (Tasks extension, when the client declared
//!   `io.modelcontextprotocol/tasks`; otherwise like `slow`): answers a task (`resultType:
//!   "task"`, `pollIntervalMs` 100) that `tasks/get` reports `working` until `ms` milliseconds
//!   have passed, then `completed` with the result `slept <ms> in a task`; `tasks/cancel` makes
//!   it `cancelled` and (with `--cancel-log`) appends `task-cancelled <taskId>`.
//! - `task_polls` `{}`: one text content, how many `tasks/get` requests this process answered.
//!
//! Also one resource, `memo://one` (name `one`, `text/plain`, text `first memo`), and one
//! prompt, `brief` (argument `topic`, required), returning one user message
//! `Brief about <topic>`. Capabilities: tools (`listChanged: true`), resources, prompts.
//!
//! Flags (any combination):
//!
//! - `--pages N`: `tools/list` is paginated into N pages of `ceil(tools / N)` tools; the cursor
//!   is the next page's index as a string (`"1"`, `"2"`, …). An unknown cursor is an
//!   invalid-params error.
//! - `--repeat-cursor`: every `tools/list` page carries `nextCursor: "same"` (a client must
//!   notice the repeated cursor and stop).
//! - `--endless-cursor`: every `tools/list` page carries a new cursor (`"p1"`, `"p2"`, …,
//!   forever; a client must stop at its page cap).
//! - `--flood-stderr`: a background thread writes 64 KiB lines to stderr in a tight loop
//!   forever, and every `tools/call` also writes a line to stderr before answering, so a client
//!   that does not drain the child's stderr sees its calls stall.
//! - `--list-changed-on-list`: every `tools/list` request also sends
//!   `notifications/tools/list_changed` (a client that re-lists on every notification loops).
//! - `--slow-list MS`: every `tools/list` page is answered after `MS` milliseconds.
//! - `--rotating-tools`: every `tools/list` also lists one tool `gen_<n>` (an echo), where `n`
//!   counts the `tools/list` requests, so no two listings are equal.
//! - `--content-list-changed`: advertises `listChanged` for prompts and resources and lists one
//!   more tool, `touch_content` `{}`, which sends `notifications/prompts/list_changed` and
//!   `notifications/resources/list_changed`, then answers `touched`.
//! - `--flood-list-changed`: once initialized, sends `notifications/tools/list_changed` every
//!   10 ms forever.
//! - `--exit-after-init`: exits with status 4 as soon as the client's
//!   `notifications/initialized` arrives, or its first `tools/list` if that is handled first
//!   (a dead child right after the handshake).
//! - `--cancel-log PATH`: every `notifications/cancelled` appends the line
//!   `cancelled <requestId> <tool> <reason>` to `PATH` (`<tool>` is the name of the
//!   `tools/call` it cancels, `-` if unknown; `<reason>` is `-` when none was given).
//! - `--legacy-only`: `server/discover` is answered with `-32601` (method not found), as by
//!   servers of revisions before 2026-07-28; only `initialize` works.
//! - `--old-versions`: the protocol versions it supports end at 2025-11-25, so `server/discover`
//!   offering 2026-07-28 is answered with `-32022` (unsupported protocol version) listing them,
//!   as by an SDK that knows the current revision but was configured without it.
//! - `--modern-only`: `initialize` is refused with `-32022` (unsupported protocol version,
//!   `data.supported: ["2026-07-28"]`); only `server/discover` and per-request `_meta` work.
//! - `--http`: serves streamable HTTP on `127.0.0.1` (a free port) instead of stdio and prints
//!   its URL (`http://127.0.0.1:<port>/mcp`) as the first line of stdout; every session gets a
//!   fresh server state.
//!
//! With `CODEMODE_TESTSERVER_PID_FILE=<path>` in its environment it writes its process id there
//! at start (the shutdown test checks that the process is gone).
//!
//! Every protocol version rmcp knows is accepted (`initialize` negotiates the client's version
//! when it is one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::CancelledNotificationParam;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool, TASKS_EXTENSION_ID,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

#[derive(Debug, Default, Clone)]
struct Flags {
    cancel_log: Option<std::path::PathBuf>,
    http: bool,
    pages: Option<usize>,
    slow_list_ms: u64,
    repeat_cursor: bool,
    endless_cursor: bool,
    flood_stderr: bool,
    list_changed_on_list: bool,
    rotating_tools: bool,
    flood_list_changed: bool,
    content_list_changed: bool,
    exit_after_init: bool,
    legacy_only: bool,
    old_versions: bool,
    modern_only: bool,
}

fn parse_flags() -> Result<Flags, String> {
    let mut flags = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--pages" => {
                let n = args.next().ok_or("--pages needs a number")?;
                match n.parse::<usize>() {
                    Ok(n) if n > 0 => flags.pages = Some(n),
                    _ => return Err(format!("--pages: not a positive number: {n}")),
                }
            }
            "--repeat-cursor" => flags.repeat_cursor = true,
            "--endless-cursor" => flags.endless_cursor = true,
            "--flood-stderr" => flags.flood_stderr = true,
            "--list-changed-on-list" => flags.list_changed_on_list = true,
            "--slow-list" => {
                let n = args.next().ok_or("--slow-list needs a number")?;
                flags.slow_list_ms = n
                    .parse()
                    .map_err(|_| format!("--slow-list: not a number: {n}"))?;
            }
            "--rotating-tools" => flags.rotating_tools = true,
            "--flood-list-changed" => flags.flood_list_changed = true,
            "--content-list-changed" => flags.content_list_changed = true,
            "--exit-after-init" => flags.exit_after_init = true,
            "--cancel-log" => {
                flags.cancel_log = Some(args.next().ok_or("--cancel-log needs a path")?.into())
            }
            "--http" => flags.http = true,
            "--legacy-only" => flags.legacy_only = true,
            "--modern-only" => flags.modern_only = true,
            "--old-versions" => flags.old_versions = true,
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(flags)
}

struct TestServer {
    flags: Flags,
    /// Names of the tools added by `add_tool`, in order.
    added: Mutex<Vec<String>>,
    /// Counts `tools/list` requests, for `--endless-cursor`.
    lists: AtomicU64,
    /// Counts `tools/list` requests, for `--rotating-tools`.
    rotations: AtomicU64,
    /// The tool of each `tools/call` in flight, by request id (for `--cancel-log`).
    in_flight: Mutex<std::collections::HashMap<String, String>>,
}

impl TestServer {
    fn new(flags: Flags) -> TestServer {
        TestServer {
            flags,
            added: Mutex::new(Vec::new()),
            lists: AtomicU64::new(0),
            rotations: AtomicU64::new(0),
            in_flight: Mutex::new(std::collections::HashMap::new()),
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks();
        let capabilities = if self.flags.content_list_changed {
            capabilities
                .enable_prompts_list_changed()
                .enable_resources_list_changed()
        } else {
            capabilities
        };
        let mut info = ServerConfig::new(capabilities.build());
        info.server_info =
            Implementation::new("codemode-mcp-testserver", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.flags.exit_after_init {
            std::process::exit(4);
        }
        if self.flags.flood_list_changed {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while peer.notify_tool_list_changed().await.is_ok() {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            });
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // rmcp handles `notifications/initialized` on a task of its own, so under load the
        // client's first `tools/list` can be handled before `on_initialized` exits: exit here
        // too, so the child never answers a request after the handshake.
        if self.flags.exit_after_init {
            std::process::exit(4);
        }
        if self.flags.list_changed_on_list {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        if self.flags.slow_list_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.flags.slow_list_ms)).await;
        }
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let mut tools = self.tools();
        if self.flags.rotating_tools {
            let n = self.rotations.fetch_add(1, Ordering::Relaxed) + 1;
            tools.push(echo_tool(format!("gen_{n}"), "A tool of one listing only."));
        }
        let (tools, next) = self.page(tools, cursor)?;
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.flags.flood_stderr {
            eprintln!("testserver: tools/call {}", request.name);
        }
        let id = context.id.to_string();
        self.in_flight
            .lock()
            .expect("in-flight lock")
            .insert(id.clone(), request.name.to_string());
        let result = self.call(request, context).await;
        self.in_flight.lock().expect("in-flight lock").remove(&id);
        result
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        if self.flags.old_versions {
            std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            ))
        } else if self.flags.modern_only {
            std::borrow::Cow::Owned(vec![ProtocolVersion::V_2026_07_28])
        } else {
            std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if self.flags.modern_only {
            return Err(McpError::unsupported_protocol_version(
                request.protocol_version,
                &[ProtocolVersion::V_2026_07_28],
            ));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        if self.flags.legacy_only {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            ));
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        tasks::get(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tasks::cancel(&request.task_id)?;
        if let Some(path) = &self.flags.cancel_log {
            append_line(path, &format!("task-cancelled {}\n", request.task_id));
        }
        Ok(())
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let Some(path) = &self.flags.cancel_log else {
            return;
        };
        let id = notification
            .request_id
            .map_or_else(|| "-".to_string(), |id| id.to_string());
        let tool = self
            .in_flight
            .lock()
            .expect("in-flight lock")
            .get(&id)
            .cloned()
            .unwrap_or_else(|| "-".into());
        let reason = notification.reason.unwrap_or_else(|| "-".into());
        append_line(path, &format!("cancelled {id} {tool} {reason}\n"));
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "memo://one",
            "one",
        )
        .with_mime_type("text/plain")]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != "memo://one" {
            return Err(McpError::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        let contents =
            ResourceContents::text("first memo", "memo://one").with_mime_type("text/plain");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let topic = PromptArgument::new("topic")
            .with_description("What the brief is about.")
            .with_required(true);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "brief",
            Some("A one-line brief about a topic."),
            Some(vec![topic]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "brief" {
            return Err(McpError::invalid_params(
                format!("unknown prompt {}", request.name),
                None,
            ));
        }
        let topic = text_arg(&request.arguments, "topic")?;
        let message = PromptMessage::new_text(Role::User, format!("Brief about {topic}"));
        Ok(GetPromptResult::new(vec![message]).into())
    }
}

fn append_line(path: &std::path::Path, line: &str) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

fn u64_arg(args: &Option<JsonObject>, key: &str) -> Result<u64, McpError> {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_u64)
        .ok_or_else(|| McpError::invalid_params(format!("missing integer argument {key:?}"), None))
}

/// The `requestState` of the `ask` tool's input request.
const ASK_STATE: &str = "ask-state-1";

/// The `ask` tool: an MRTR round trip (see the module documentation).
fn ask(request: &CallToolRequestParams) -> Result<CallToolResponse, McpError> {
    let Some(responses) = &request.input_responses else {
        let elicit: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Proceed?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
            }
        }))
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert("confirm".to_string(), elicit);
        return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(ASK_STATE.to_string()),
        )));
    };
    if request.request_state.as_deref() != Some(ASK_STATE) {
        return Err(McpError::invalid_params(
            "requestState was not echoed",
            None,
        ));
    }
    let confirm = serde_json::to_value(responses)
        .ok()
        .and_then(|r| r.get("confirm").cloned())
        .unwrap_or(Value::Null);
    Ok(text_result(format!("answered {confirm}")).into())
}

/// Whether the client of this request declared the Tasks extension (per-request `_meta` on
/// 2026-07-28, else its `initialize` capabilities).
fn client_has_tasks(context: &RequestContext<RoleServer>) -> bool {
    let declared = |capabilities: &rmcp::model::ClientCapabilities| {
        capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(TASKS_EXTENSION_ID))
    };
    context
        .meta
        .client_capabilities()
        .is_some_and(|c| declared(&c))
        || context
            .peer
            .peer_info()
            .is_some_and(|info| declared(&info.capabilities))
}

mod tasks;
mod tools;

use tools::{echo_tool, text_arg, text_result};

fn flood_stderr() {
    let mut line = vec![b'x'; 64 * 1024];
    *line.last_mut().expect("non-empty") = b'\n';
    loop {
        if std::io::stderr().write_all(&line).is_err() {
            return;
        }
    }
}

#[tokio::main]
async fn main() {
    let flags = match parse_flags() {
        Ok(flags) => flags,
        Err(e) => {
            eprintln!("codemode-mcp-testserver: {e}");
            std::process::exit(2);
        }
    };
    if flags.flood_stderr {
        std::thread::spawn(flood_stderr);
    }
    if let Some(path) = std::env::var_os("CODEMODE_TESTSERVER_PID_FILE") {
        let _ = std::fs::write(path, std::process::id().to_string());
    }
    if flags.http {
        serve_http(flags).await;
        return;
    }
    let server = TestServer::new(flags);
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("codemode-mcp-testserver: initialize failed: {e}");
            std::process::exit(1);
        }
    };
    let _ = running.waiting().await;
    // A pending read on stdin would keep the runtime alive; leave at once.
    std::process::exit(0);
}

/// `--http`: streamable HTTP on a free loopback port, its URL on stdout, until killed.
async fn serve_http(flags: Flags) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("codemode-mcp-testserver: bind failed: {e}");
            std::process::exit(1);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    println!("http://127.0.0.1:{port}/mcp");
    let _ = std::io::stdout().flush();
    let service = StreamableHttpService::new(
        move || Ok(TestServer::new(flags.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}
