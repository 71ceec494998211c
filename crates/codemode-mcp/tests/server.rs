//! Code mode served over MCP: a `CodeModeServer` on one end of a `tokio::io::duplex` pipe and
//! rmcp's own client on the other, over a small in-test catalog and executor.

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{namespace_prompt, Catalog, SearchLimits, ToolSpec};
use codemode_facade::{exec_tool, wait_tool, CodeMode, RunEnv, ToolDefinition};
use codemode_mcp::server::{disabled_result, ServeError, SERVER_INSTRUCTIONS, SERVER_NAME};
use codemode_mcp::{CodeModeServer, EnvSource};
use codemode_runtime::Runtime;
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Test tools: `echo` answers `{content: [{type: "text", text: <input JSON>}], details: input}`;
/// `slow` does the same after 300 ms; `hang` never settles and reports when it starts and when
/// its future is dropped (cancelled).
struct Tools {
    started: mpsc::UnboundedSender<()>,
    dropped: mpsc::UnboundedSender<()>,
}

struct DropSignal(mpsc::UnboundedSender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn answer(input: Value) -> Value {
    json!({"content": [{"type": "text", "text": input.to_string()}], "details": input})
}

impl ToolExecutor for Tools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let started = self.started.clone();
        let dropped = self.dropped.clone();
        Box::pin(async move {
            match call.tool_name.as_str() {
                "slow" => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(answer(call.input))
                }
                "hang" => {
                    let _guard = DropSignal(dropped);
                    let _ = started.send(());
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                _ => Ok(answer(call.input)),
            }
        })
    }
}

struct Source {
    config: codemode_config::CodeModeConfig,
    catalog: Arc<Catalog>,
    executor: Arc<dyn ToolExecutor>,
    enabled: bool,
}

impl EnvSource for Source {
    fn run_env(&self, scope: RunScope) -> Option<RunEnv> {
        self.enabled.then(|| {
            RunEnv::new(
                self.config.clone(),
                self.catalog.clone(),
                self.executor.clone(),
                scope,
            )
        })
    }
}

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::core("echo", "Echo."),
        ToolSpec::core("slow", "Echo after 300 ms."),
        ToolSpec::core("hang", "Never settles."),
    ]
}

struct Fixture {
    server: CodeModeServer,
    code_mode: Arc<CodeMode>,
    catalog: Arc<Catalog>,
    started: mpsc::UnboundedReceiver<()>,
    dropped: mpsc::UnboundedReceiver<()>,
}

fn fixture_with(config: Value, specs: Vec<ToolSpec>, enabled: bool) -> Fixture {
    let config = codemode_config::resolve(&config).config;
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let source = Source {
        config,
        catalog: catalog.clone(),
        executor: Arc::new(Tools {
            started: started_tx,
            dropped: dropped_tx,
        }),
        enabled,
    };
    let code_mode = Arc::new(CodeMode::new(Runtime::global().unwrap()));
    Fixture {
        server: CodeModeServer::new(code_mode.clone(), Arc::new(source)),
        code_mode,
        catalog,
        started,
        dropped,
    }
}

fn fixture() -> Fixture {
    fixture_with(json!(true), specs(), true)
}

type Client = RunningService<RoleClient, ()>;

/// Starts one MCP session of `server` on a duplex pipe and connects rmcp's client to it.
async fn connect(server: &CodeModeServer) -> (Client, JoinHandle<Result<(), ServeError>>) {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let serving = tokio::spawn(server.clone().serve(server_end));
    let client = ().serve(client_end).await.expect("client handshake");
    (client, serving)
}

/// `wait` on `run_id` from `client`, a session that did not start the run, is refused, and the
/// run stays parked in `f`.
async fn assert_refused_as_another_sessions(f: &Fixture, client: &Client, run_id: &str) {
    let refused = wait(client, run_id).await;
    assert_eq!(refused["status"], "failed");
    assert_eq!(refused["code"], "invalid_input");
    assert_eq!(
        refused["error"],
        "code mode run belongs to a different session."
    );
    assert_eq!(f.code_mode.parked_runs(), 1, "the refusal keeps the run");
}

/// The default [`fixture`] with one client connected over an in-memory duplex (the serving
/// task ends with the session).
async fn connected() -> (Fixture, Client, JoinHandle<Result<(), ServeError>>) {
    let f = fixture();
    let (client, serving) = connect(&f.server).await;
    (f, client, serving)
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_string());
    match args {
        Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    client
        .call_tool(params(name, args))
        .await
        .expect("tools/call")
}

/// The structured result, after checking the MCP envelope: one text block holding its compact
/// JSON, and `isError` exactly when the status is `failed`.
fn structured(result: &CallToolResult) -> Value {
    let value = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(result.content.len(), 1);
    let text = &result.content[0].as_text().expect("text content").text;
    assert_eq!(text, &serde_json::to_string(&value).unwrap());
    let failed = value["status"] == "failed";
    assert_eq!(result.is_error, Some(failed));
    // Telemetry is for clients and logs, in `_meta`, never in what the model reads.
    assert!(value.get("telemetry").is_none(), "{value}");
    if value.get("status").is_some() && value != disabled_result() {
        let meta = result.meta.as_ref().expect("_meta");
        assert!(meta.get("codemode/telemetry").is_some(), "{meta:?}");
    }
    value
}

/// The `_meta` telemetry of a result (`codemode/telemetry`).
fn telemetry(result: &CallToolResult) -> Value {
    result.meta.as_ref().expect("_meta")["codemode/telemetry"].clone()
}

async fn exec(client: &Client, code: &str) -> Value {
    structured(&call(client, "exec", json!({"code": code})).await)
}

async fn wait(client: &Client, run_id: &str) -> Value {
    structured(&call(client, "wait", json!({"runId": run_id})).await)
}

/// `result` is a `waiting` result for `reason` whose one pending call is the bridge request
/// `id` (`bridge:<method>:<n>`).
fn assert_waiting(result: &Value, reason: &str, id: &str) {
    assert_eq!(result["status"], "waiting", "{result}");
    assert_eq!(result["reason"], reason);
    let method = id.split(':').nth(1).unwrap();
    assert_eq!(
        result["pendingToolCalls"],
        json!([{"id": id, "method": method}])
    );
}

/// The tool `served` lists is `definition`: the same description and input schema.
fn assert_served_as(served: &rmcp::model::Tool, definition: &ToolDefinition) {
    assert_eq!(
        served.description.as_deref(),
        Some(definition.description.as_str())
    );
    assert_eq!(
        Value::Object((*served.input_schema).clone()),
        definition.parameters
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_exactly_exec_and_wait_with_the_spec_definitions() {
    let (f, client, _serving) = connected().await;

    let info = client.peer_info().expect("server info");
    let implementation = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(implementation.name, SERVER_NAME);
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.instructions.as_deref(), Some(SERVER_INSTRUCTIONS));
    assert!(info.capabilities.tools.is_some());
    // Declared, with empty lists: `code_mode_on_lists_no_prompts_or_resources_cacheably`.
    assert!(info.capabilities.resources.is_some());
    assert!(info.capabilities.prompts.is_some());

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["exec", "wait"]);
    let exec = exec_tool(Some(&f.catalog), None);
    assert_served_as(&tools[0], &exec);
    assert!(exec.description.contains("\"openclaw:core:echo\""));
    assert_served_as(&tools[1], &wait_tool());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_description_carries_the_mcp_namespace_prompt() {
    let mut specs = specs();
    specs.push(ToolSpec::mcp_tool(
        "github",
        "create_issue",
        "Create an issue.",
    ));
    let f = fixture_with(json!(true), specs, true);
    let (client, _serving) = connect(&f.server).await;
    let tools = client.list_all_tools().await.unwrap();
    let prompt = namespace_prompt(&f.catalog).expect("MCP prompt");
    let exec = exec_tool(Some(&f.catalog), Some(&prompt));
    assert_served_as(&tools[0], &exec);
    assert!(exec.description.contains("visible servers: github"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_completes_with_the_result_as_structured_content() {
    let (_f, client, _serving) = connected().await;
    let answer = call(&client, "exec", json!({"code": "return 1 + 1"})).await;
    let result = structured(&answer);
    assert_eq!(
        result,
        json!({"status": "completed", "value": 2, "output": [], "replaySafe": false})
    );
    assert_eq!(
        answer.content[0].as_text().unwrap().text,
        r#"{"status":"completed","value":2,"output":[],"replaySafe":false}"#
    );
    assert_eq!(
        telemetry(&answer),
        json!({"catalogSize": 3, "sources": {"openclaw": 3, "mcp": 0, "client": 0},
               "searchCount": 0, "describeCount": 0, "callCount": 0,
               "visibleTools": ["exec", "wait"]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_calls_catalog_tools() {
    let (_f, client, _serving) = connected().await;
    let answer = call(
        &client,
        "exec",
        json!({"code": "text('hi'); const r = await tools.callValue('openclaw:core:echo', {x: 1}); return [r, (await tools.echo({y: 2}))];"}),
    )
    .await;
    let result = structured(&answer);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["value"], json!([{"x": 1}, {"y": 2}]));
    assert_eq!(result["output"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(telemetry(&answer)["callCount"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_program_is_an_error_result() {
    let (_f, client, _serving) = connected().await;
    let result = exec(&client, "text(\"before\"); throw new Error(\"boom\");").await;
    assert_eq!(result["status"], "failed");
    assert_eq!(result["code"], "internal_error");
    assert!(
        result["error"].as_str().unwrap().starts_with("Error: boom"),
        "{result}"
    );
    assert_eq!(
        result["output"],
        json!([{"type": "text", "text": "before"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_get_the_facade_messages() {
    let (_f, client, _serving) = connected().await;
    for (tool, args, message) in [
        (
            "exec",
            json!({}),
            "code or command must be a non-empty string.",
        ),
        (
            "exec",
            Value::Null,
            "code or command must be a non-empty string.",
        ),
        (
            "exec",
            json!({"code": "return 1", "language": "bash"}),
            "language must be javascript or typescript.",
        ),
        ("wait", json!({}), "runId must be a non-empty string."),
        ("wait", Value::Null, "runId must be a non-empty string."),
        (
            "wait",
            json!({"runId": "cm_missing"}),
            "code mode run is unavailable or expired.",
        ),
    ] {
        let result = structured(&call(&client, tool, args.clone()).await);
        assert_eq!(result["status"], "failed", "{tool} {args}");
        assert_eq!(result["code"], "invalid_input", "{tool} {args}");
        assert_eq!(result["error"], message, "{tool} {args}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_is_a_protocol_error() {
    let (_f, client, _serving) = connected().await;
    match client.call_tool(params("echo", json!({}))).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(e.message, "Unknown tool: echo");
        }
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yielded_run_resumes_with_wait() {
    let (f, client, _serving) = connected().await;
    let first = exec(
        &client,
        "text(\"before\"); await yield_control(\"pause\"); text(\"after\"); return \"done\";",
    )
    .await;
    assert_waiting(&first, "yield", "bridge:yield:1");
    assert_eq!(first["output"], json!([{"type": "text", "text": "before"}]));
    let run_id = first["runId"].as_str().unwrap();
    assert!(run_id.starts_with("cm_"));
    assert_eq!(f.code_mode.parked_runs(), 1);

    let second = wait(&client, run_id).await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(second["value"], "done");
    assert_eq!(second["output"], json!([{"type": "text", "text": "after"}]));
    assert_eq!(f.code_mode.parked_runs(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_a_slow_tool_resumes_with_wait() {
    let f = fixture_with(json!({"enabled": true, "timeoutMs": 100}), specs(), true);
    let (client, _serving) = connect(&f.server).await;
    let mut result = exec(
        &client,
        "const r = await tools.callValue('openclaw:core:slow', {n: 7}); return r.n * 6;",
    )
    .await;
    assert_waiting(&result, "pending_tools", "bridge:callValue:1");
    let run_id = result["runId"].as_str().unwrap().to_string();
    for _ in 0..50 {
        if result["status"] != "waiting" {
            break;
        }
        assert_eq!(result["runId"], run_id.as_str());
        result = wait(&client, &run_id).await;
    }
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["value"], 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_session_cannot_wait_on_a_run() {
    let f = fixture();
    let (owner, _serving_owner) = connect(&f.server).await;
    let (other, _serving_other) = connect(&f.server).await;
    let first = exec(&owner, "await yield_control(); return 'mine';").await;
    assert_eq!(first["status"], "waiting", "{first}");
    let run_id = first["runId"].as_str().unwrap();

    assert_refused_as_another_sessions(&f, &other, run_id).await;

    let done = wait(&owner, run_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_config_answers_the_disabled_result() {
    let f = fixture_with(json!(false), specs(), false);
    let (client, _serving) = connect(&f.server).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["exec", "wait"]);
    let exec_def = exec_tool(None, None);
    assert_eq!(
        tools[0].description.as_deref(),
        Some(exec_def.description.as_str())
    );
    assert_eq!(
        Value::Object((*tools[0].input_schema).clone()),
        exec_def.parameters
    );

    let disabled =
        json!({"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"});
    assert_eq!(disabled_result(), disabled);
    assert_eq!(exec(&client, "return 1").await, disabled);
    assert_eq!(wait(&client, "cm_x").await, disabled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_aborts_its_run() {
    let mut f = fixture_with(json!({"enabled": true, "timeoutMs": 60000}), specs(), true);
    let (client, _serving) = connect(&f.server).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move {
        peer.call_tool(params(
            "exec",
            json!({"code": "return await tools.callValue('openclaw:core:hang', {});"}),
        ))
        .await
    });
    tokio::time::timeout(Duration::from_secs(10), f.started.recv())
        .await
        .expect("the hanging tool starts")
        .unwrap();
    // Dropping the request future sends `notifications/cancelled`.
    call.abort();
    tokio::time::timeout(Duration::from_secs(5), f.dropped.recv())
        .await
        .expect("the abort cancels the pending tool call")
        .unwrap();
    assert_eq!(f.code_mode.parked_runs(), 0);

    // The session carries on.
    let result = exec(&client, "return 'still here'").await;
    assert_eq!(result["value"], "still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_ends_when_the_client_closes() {
    let f = fixture();
    let (client, serving) = connect(&f.server).await;
    assert_eq!(exec(&client, "return 1").await["value"], 1);
    client.cancel().await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serve returns")
        .unwrap();
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_parked_runs_are_dropped_when_it_ends() {
    let mut f = fixture_with(json!({"enabled": true, "timeoutMs": 100}), specs(), true);
    let (ending, serving) = connect(&f.server).await;
    let (staying, _serving_staying) = connect(&f.server).await;
    let hanging = exec(
        &ending,
        "return await tools.callValue('openclaw:core:hang', {});",
    )
    .await;
    assert_eq!(hanging["status"], "waiting", "{hanging}");
    assert_eq!(hanging["reason"], "pending_tools");
    tokio::time::timeout(Duration::from_secs(10), f.started.recv())
        .await
        .expect("the hanging tool starts")
        .unwrap();
    let yielded = exec(&ending, "await yield_control(); return 1;").await;
    assert_eq!(yielded["status"], "waiting", "{yielded}");
    let kept = exec(&staying, "await yield_control(); return 'kept';").await;
    assert_eq!(kept["status"], "waiting", "{kept}");
    assert_eq!(f.code_mode.parked_runs(), 3);

    ending.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), f.dropped.recv())
        .await
        .expect("the session end cancels the pending tool call")
        .unwrap();
    assert_eq!(
        f.code_mode.parked_runs(),
        1,
        "only the other session's run stays"
    );
    let done = wait(&staying, kept["runId"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], "kept");
}

/// Over streamable HTTP a session ends when the client deletes it (rmcp's client sends `DELETE`
/// when it closes): its parked runs go with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_sessions_parked_runs_are_dropped_when_the_client_closes() {
    let f = fixture();
    let (url, shutdown, serving) = serve_http(&f).await;
    let client = connect_http(&url).await;
    let first = exec(&client, "await yield_control(); return 1;").await;
    assert_eq!(first["status"], "waiting", "{first}");
    assert_close_drops_the_run(&f, client, shutdown, serving).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transport_closed_before_the_handshake_is_an_error() {
    let f = fixture();
    let (server_end, client_end) = tokio::io::duplex(1024);
    drop(client_end);
    let served = f.server.clone().serve(server_end).await;
    assert!(
        matches!(served, Err(ServeError::Initialize(_))),
        "{served:?}"
    );
}

/// The runs `f` keeps parked once none is left, waiting at most 5 s for that (a run dropped
/// with its session goes on a task of its own).
async fn parked_runs_once_dropped(f: &Fixture) -> usize {
    let mut left = f.code_mode.parked_runs();
    for _ in 0..100 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = f.code_mode.parked_runs();
    }
    left
}

/// rmcp's streamable HTTP client (a session) connected to `url`.
async fn connect_http(url: &str) -> Client {
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
        url.to_string(),
    ))
    .await
    .expect("client handshake")
}

/// With one run parked in `f` by `client`'s HTTP session: closing `client` (rmcp's client
/// deletes the session) drops the run, and the server then stops cleanly.
async fn assert_close_drops_the_run(
    f: &Fixture,
    client: Client,
    shutdown: tokio_util::sync::CancellationToken,
    serving: JoinHandle<Result<(), ServeError>>,
) {
    assert_eq!(f.code_mode.parked_runs(), 1);
    client.cancel().await.unwrap();
    let left = parked_runs_once_dropped(f).await;
    assert_eq!(left, 0, "the deleted session's run is dropped");
    shutdown.cancel();
    serving.await.unwrap().unwrap();
}

/// Serves `f` over streamable HTTP on a loopback port: (URL, shutdown, serving task).
async fn serve_http(
    f: &Fixture,
) -> (
    String,
    tokio_util::sync::CancellationToken,
    JoinHandle<Result<(), ServeError>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(f.server.clone().serve_http(listener, shutdown.clone()));
    (url, shutdown, serving)
}

/// Runs `tests/python/stateless_client.py URL CODE PAUSE` (the Python SDK's default,
/// stateless 2026-07-28 client): one `exec`, then `wait` while waiting. Its `RESULT` lines,
/// or `None` without a Python `mcp` SDK.
async fn python_stateless(url: &str, code: &str, pause_s: f64) -> Option<Vec<Value>> {
    let Some(python) = codemode_test_support::python_with_mcp() else {
        eprintln!("skipped: no Python with the mcp SDK (set CODEMODE_PYTHON_MCP)");
        return None;
    };
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/stateless_client.py");
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python)
            .arg(script)
            .arg(url)
            .arg(code)
            .arg(pause_s.to_string())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client ends within 60 s")
    .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        stdout
            .lines()
            .filter_map(|line| line.strip_prefix("RESULT "))
            .map(|json| serde_json::from_str(json).unwrap())
            .collect(),
    )
}

/// Issue 14 item 1: the Python SDK's default client is stateless (2026-07-28, every POST on
/// its own); a run it parks with `exec` outlives that request and its `wait` resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_http_client_resumes_its_run_with_wait() {
    let f = fixture();
    let (url, shutdown, serving) = serve_http(&f).await;
    let code = "text(\"before\"); await yield_control(\"pause\"); text(\"after\"); return 42;";
    let Some(results) = python_stateless(&url, code, 0.0).await else {
        return;
    };
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["tool"], "exec");
    assert_eq!(results[0]["protocol"], "2026-07-28");
    let first = &results[0]["structured"];
    assert_waiting(first, "yield", "bridge:yield:1");
    assert_eq!(first["output"], json!([{"type": "text", "text": "before"}]));
    assert_eq!(results[0]["isError"], false);
    let second = &results[1]["structured"];
    assert_eq!(results[1]["tool"], "wait");
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(second["value"], 42);
    assert_eq!(second["output"], json!([{"type": "text", "text": "after"}]));
    assert_eq!(results[1]["isError"], false);
    assert_eq!(f.code_mode.parked_runs(), 0);
    shutdown.cancel();
    serving.await.unwrap().unwrap();
}

/// Stateless runs share one scope of their own: a stateful HTTP session cannot `wait` on them
/// (the session check), and they still expire after `snapshotTtlSeconds`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_runs_are_out_of_a_sessions_reach_and_expire() {
    let f = fixture_with(
        json!({"enabled": true, "snapshotTtlSeconds": 1}),
        specs(),
        true,
    );
    let (url, shutdown, serving) = serve_http(&f).await;
    // A pause past the TTL: the parked run has expired when the wait arrives.
    let Some(results) = python_stateless(&url, "await yield_control(); return 1;", 2.5).await
    else {
        return;
    };
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["structured"]["status"], "waiting");
    let expired = &results[1]["structured"];
    assert_eq!(expired["status"], "failed", "{expired}");
    assert_eq!(expired["code"], "invalid_input");
    assert_eq!(expired["error"], "code mode run is unavailable or expired.");
    assert_eq!(results[1]["isError"], true);

    // A run parked by a stateless request, then a stateful client asking for it.
    let stateless_run = {
        let Some(results) = python_stateless(
            &url,
            // Park and keep parked: the script's waits would resume it, so the program yields
            // more times than the script waits (20).
            "for (let i = 0; i < 30; i++) await yield_control(); return 'never';",
            0.0,
        )
        .await
        else {
            return;
        };
        assert_eq!(results.len(), 21, "{results:?}");
        assert_eq!(results[20]["structured"]["status"], "waiting");
        results[20]["structured"]["runId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(f.code_mode.parked_runs(), 1);
    let stateful = connect_http(&url).await;
    assert_refused_as_another_sessions(&f, &stateful, &stateless_run).await;
    // Ending the stateful session leaves the stateless run alone; shutting down drops it.
    stateful.cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(f.code_mode.parked_runs(), 1);
    shutdown.cancel();
    serving.await.unwrap().unwrap();
    let left = parked_runs_once_dropped(&f).await;
    assert_eq!(left, 0, "the server's end drops the stateless runs");
}

/// One raw HTTP/1.1 request to `url`'s host (`Connection: close`): the status code and the
/// response headers (lower-case names).
async fn raw_http(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte))
            .await
            .expect("a response head within 10 s")
            .unwrap();
        assert_eq!(
            n,
            1,
            "connection closed mid-head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_string()))
        .collect();
    (status, headers)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Issue 14 item 10: a foreign `Origin` is refused with 403; none, or a loopback one, is served;
/// a session `DELETE` is answered 204 and ends the session (its parked runs are dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_validates_origin_and_answers_delete_with_204() {
    let f = fixture();
    let (url, shutdown, serving) = serve_http(&f).await;
    let post = |origin: Option<&'static str>| {
        let url = url.clone();
        async move {
            let mut headers = vec![
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ];
            if let Some(origin) = origin {
                headers.push(("Origin", origin));
            }
            raw_http(&url, "POST", &headers, INITIALIZE).await
        }
    };
    for origin in [
        "https://evil.example",
        "http://localhost.evil.example:8080",
        "null",
        // Issue 27 item 10: parsed, not matched as text.
        "http://evil.example@localhost",
        "http://[::1].evil",
        "http://localhost:3000/x",
    ] {
        let (status, _) = post(Some(origin)).await;
        assert_eq!(status, 403, "Origin {origin}");
    }
    for origin in [
        None,
        Some("http://localhost:3000"),
        Some("http://127.0.0.1:6274"),
        Some("http://[::1]:5173"),
        Some("https://localhost"),
    ] {
        let (status, headers) = post(origin).await;
        assert_eq!(status, 200, "Origin {origin:?}");
        assert!(
            headers.iter().any(|(name, _)| name == "mcp-session-id"),
            "{headers:?}"
        );
    }

    // A real session parks a run; deleting the session answers 204 and drops the run.
    let client = connect_http(&url).await;
    let parked = exec(&client, "await yield_control(); return 1;").await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    let (status, headers) = post(None).await;
    assert_eq!(status, 200);
    let session = headers
        .iter()
        .find(|(name, _)| name == "mcp-session-id")
        .unwrap()
        .1
        .clone();
    let (status, _) = raw_http(&url, "DELETE", &[("Mcp-Session-Id", &session)], "").await;
    assert_eq!(status, 204);
    let (status, _) = raw_http(
        &url,
        "DELETE",
        &[
            ("Mcp-Session-Id", &session),
            ("Origin", "https://evil.example"),
        ],
        "",
    )
    .await;
    assert_eq!(status, 403, "DELETE checks the Origin too");
    // rmcp's client closes with DELETE as well, and takes the 204.
    assert_close_drops_the_run(&f, client, shutdown, serving).await;
}

/// A client that records every `notifications/progress` as `(token, progress, message)`.
#[derive(Clone)]
struct ProgressClient(mpsc::UnboundedSender<(Value, f64, Option<String>)>);

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let token = serde_json::to_value(&params.progress_token).unwrap();
        let _ = self.0.send((token, params.progress, params.message));
    }
}

/// Issue 14 item 7: an `exec` carrying a `progressToken` gets one `notifications/progress` per
/// nested call started and finished, in order (rmcp's client puts a token on every request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_with_a_progress_token_reports_its_nested_calls() {
    let f = fixture();
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let _serving = tokio::spawn(f.server.clone().serve(server_end));
    let (tx, mut progress) = mpsc::unbounded_channel();
    let client = ProgressClient(tx).serve(client_end).await.unwrap();
    let code = "await tools.echo({a: 1}); await tools.slow({b: 2}); return 'ok';";
    let mut request = params("exec", json!({"code": code}));
    request.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("p1".into())),
    ));
    let answer = client.call_tool(request).await.unwrap();
    assert_eq!(structured(&answer)["value"], "ok");
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let next = tokio::time::timeout(Duration::from_secs(5), progress.recv())
            .await
            .unwrap_or_else(|_| panic!("only {seen:?}"))
            .unwrap();
        seen.push(next);
    }
    // rmcp's client puts its own token (derived from the request id) on the wire; the server
    // answers with the token it received, the same on every notification.
    // rmcp runs a client's notification handlers as separate tasks, so they may arrive here out
    // of order; `progress` (1, 2, …) is the order the server sent them in.
    seen.sort_by(|a, b| a.1.total_cmp(&b.1));
    let token = seen[0].0.clone();
    assert!(seen.iter().all(|(t, _, _)| *t == token), "{seen:?}");
    let steps: Vec<(f64, Option<String>)> = seen.into_iter().map(|(_, p, m)| (p, m)).collect();
    assert_eq!(
        steps,
        [
            (1.0, Some("started echo".to_string())),
            (2.0, Some("finished echo".to_string())),
            (3.0, Some("started slow".to_string())),
            (4.0, Some("finished slow".to_string())),
        ]
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        progress.try_recv().is_err(),
        "one notification per call start and end"
    );
}

/// Issue 23 item 5: stopping `serve_http` while an `exec` runs answers that call with a JSON-RPC
/// error (`SHUTTING_DOWN`) before the connection closes, within the bounded drain; the run is
/// aborted, not left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_http_answers_calls_in_flight_with_an_error() {
    use codemode_mcp::drain::{SHUTDOWN_DRAIN, SHUTTING_DOWN};
    let f = fixture();
    let (url, shutdown, serving) = serve_http(&f).await;
    let client = connect_http(&url).await;
    let peer = client.peer().clone();
    let running = tokio::spawn(async move {
        peer.call_tool(params("exec", json!({"code": "while (true) {}"})))
            .await
    });
    // Let the busy loop start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!running.is_finished());
    let stopped = std::time::Instant::now();
    shutdown.cancel();
    let answer = tokio::time::timeout(Duration::from_secs(2), running)
        .await
        .expect("the call is answered within 2 s of the stop")
        .unwrap();
    match answer {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
            assert_eq!(e.message, SHUTTING_DOWN);
        }
        other => panic!("expected the shutdown error, got {other:?}"),
    }
    tokio::time::timeout(SHUTDOWN_DRAIN + Duration::from_secs(1), serving)
        .await
        .expect("serve_http returns within the drain")
        .unwrap()
        .unwrap();
    assert!(stopped.elapsed() <= SHUTDOWN_DRAIN + Duration::from_secs(1));
    assert_eq!(f.server.drain().in_flight(), 0);
}

/// A source whose catalog the test changes: `catalog_changes` ticks on every [`Changing::set`].
struct Changing {
    config: codemode_config::CodeModeConfig,
    catalog: std::sync::Mutex<Arc<Catalog>>,
    executor: Arc<dyn ToolExecutor>,
    generation: tokio::sync::watch::Sender<u64>,
}

impl Changing {
    fn set(&self, specs: Vec<ToolSpec>) {
        *self.catalog.lock().unwrap() =
            Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
        self.generation.send_modify(|g| *g += 1);
    }
}

/// The [`EnvSource`] over a shared [`Changing`].
struct ChangingSource(Arc<Changing>);

impl EnvSource for ChangingSource {
    fn run_env(&self, scope: RunScope) -> Option<RunEnv> {
        let catalog = self.0.catalog.lock().unwrap().clone();
        Some(RunEnv::new(
            self.0.config.clone(),
            catalog,
            self.0.executor.clone(),
            scope,
        ))
    }

    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.0.generation.subscribe())
    }
}

/// Issue 23 item 2: a 2026-07-28 client (the Python SDK's `Client`, stateless) hears of a
/// catalog change on `subscriptions/listen` (before: -32601 while `tools.listChanged` was
/// advertised), and its `tools/list` answers carry `ttlMs`/`cacheScope`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_hears_of_catalog_changes_on_subscriptions_listen() {
    use tokio::io::AsyncBufReadExt;
    let Some(python) = codemode_test_support::python_with_mcp() else {
        eprintln!("skipped: no Python with the mcp SDK (set CODEMODE_PYTHON_MCP)");
        return;
    };
    let (started, _) = mpsc::unbounded_channel();
    let (dropped, _) = mpsc::unbounded_channel();
    let source = Arc::new(Changing {
        config: codemode_config::resolve(&json!(true)).config,
        catalog: std::sync::Mutex::new(Arc::new(
            Catalog::build(
                vec![ToolSpec::core("echo", "Echo.")],
                &SearchLimits::default(),
            )
            .unwrap(),
        )),
        executor: Arc::new(Tools { started, dropped }),
        generation: tokio::sync::watch::channel(0).0,
    });
    let code_mode = Arc::new(CodeMode::new(Runtime::global().unwrap()));
    let server = CodeModeServer::new(code_mode, Arc::new(ChangingSource(source.clone())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(server.serve_http(listener, shutdown.clone()));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/listen_client.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> (String, Value) {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("a line from the client within 30 s")
            .unwrap()
            .expect("the client printed a line");
        let (tag, value) = line.split_once(' ').unwrap();
        (tag.to_string(), serde_json::from_str(value).unwrap())
    };
    let (tag, before) = next().await;
    assert_eq!(tag, "TOOLS");
    assert_eq!(before["protocol"], "2026-07-28");
    assert_eq!(before["names"], json!(["exec", "wait"]));
    assert_eq!(before["ttlMs"], 60_000);
    assert_eq!(before["cacheScope"], "private");
    assert!(!before["exec"]
        .as_str()
        .unwrap()
        .contains("openclaw:core:late"));
    let (tag, ack) = next().await;
    assert_eq!(tag, "ACK");
    assert_eq!(ack, json!({"toolsListChanged": true}));

    source.set(vec![
        ToolSpec::core("echo", "Echo."),
        ToolSpec::core("late", "Joined late."),
    ]);
    assert_eq!(
        next().await,
        ("EVENT".to_string(), json!("ToolsListChanged"))
    );
    let (tag, after) = next().await;
    assert_eq!(tag, "TOOLS");
    assert!(
        after["exec"]
            .as_str()
            .unwrap()
            .contains("\"openclaw:core:late\""),
        "{after}"
    );
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    shutdown.cancel();
    serving.await.unwrap().unwrap();
}

/// The accepted socket of `serve_http` (run by this test process) whose peer is `client`: each
/// socket descriptor of this process (`/proc/self/fd`) duplicated with `pidfd_getfd`, the one
/// whose local address is `server` and whose peer is `client`. Polled up to 5 s (the listener
/// accepts on its own task).
#[cfg(target_os = "linux")]
async fn accepted_socket(
    server: std::net::SocketAddr,
    client: std::net::SocketAddr,
) -> std::net::TcpStream {
    use rustix::process::{pidfd_getfd, pidfd_open, Pid, PidfdFlags, PidfdGetfdFlags};
    let pid = Pid::from_raw(i32::try_from(std::process::id()).unwrap()).unwrap();
    let pidfd = pidfd_open(pid, PidfdFlags::empty()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            let is_socket = std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
            let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if !is_socket {
                continue;
            }
            let Ok(dup) = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) else {
                continue;
            };
            let stream = std::net::TcpStream::from(dup);
            if stream.local_addr().ok() == Some(server) && stream.peer_addr().ok() == Some(client) {
                return stream;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve_http did not accept the connection within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every connection `serve_http` accepts has `TCP_NODELAY` (issue 23: without it an answer
/// written in two segments waits for a Node client's delayed ACK, ≈40 ms per call), read back
/// from the accepted socket itself, deterministically; Linux's default is off, as the client's
/// own socket shows.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn accepted_http_connections_have_tcp_nodelay() {
    let f = fixture();
    let (url, shutdown, serving) = serve_http(&f).await;
    let server: std::net::SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let client = std::net::TcpStream::connect(server).unwrap();
    assert!(!client.nodelay().unwrap(), "the default is Nagle on");
    let accepted = accepted_socket(server, client.local_addr().unwrap()).await;
    assert!(
        accepted.nodelay().unwrap(),
        "the accepted socket has TCP_NODELAY"
    );
    drop((client, accepted));
    shutdown.cancel();
    serving.await.unwrap().unwrap();
}

/// With code mode on, `serve` lists no prompts, resources or templates, cacheably (the
/// revision's hints, as `tools/list`): the model reaches MCP prompts and resources through the
/// catalog (docs/mcp.md, "Prompts and resources"). Getting or reading anything is the spec's
/// error.
#[tokio::test]
async fn code_mode_on_lists_no_prompts_or_resources_cacheably() {
    use rmcp::model::{CacheScope, GetPromptRequestParams, ReadResourceRequestParams};
    let (_f, client, _serving) = connected().await;
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.prompts.is_some() && info.capabilities.resources.is_some());
    let prompts = client.list_prompts(None).await.unwrap();
    assert!(prompts.prompts.is_empty());
    assert_eq!(
        (prompts.ttl_ms, prompts.cache_scope),
        (
            Some(codemode_mcp::server::TOOLS_LIST_TTL_MS),
            Some(CacheScope::Private)
        )
    );
    let resources = client.list_resources(None).await.unwrap();
    assert!(resources.resources.is_empty());
    assert_eq!(resources.cache_scope, Some(CacheScope::Private));
    let templates = client.list_resource_templates(None).await.unwrap();
    assert!(templates.resource_templates.is_empty());
    assert_eq!(
        templates.ttl_ms,
        Some(codemode_mcp::server::TOOLS_LIST_TTL_MS)
    );
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("anything"))
        .await
        .unwrap_err()
        .to_string();
    assert!(prompt.contains("Unknown prompt: anything"), "{prompt}");
    let read = client
        .read_resource(ReadResourceRequestParams::new("memo://one"))
        .await
        .unwrap_err()
        .to_string();
    assert!(read.contains("Resource not found"), "{read}");
    client.cancel().await.unwrap();
}
