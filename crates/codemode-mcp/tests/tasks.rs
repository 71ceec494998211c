//! Parked runs as MCP Tasks (issue 23 item 4, docs/mcp.md "Runs as Tasks"): a `CodeModeServer`
//! over streamable HTTP driven by raw 2026-07-28 requests of a client that declares the tasks
//! extension. A run parked on a long tool (3 s here, standing for ten minutes) costs the model
//! exactly one `exec`: the client host polls `tasks/get` until the task completes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_bridge::{ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::CodeMode;
use codemode_mcp::source::FixedSource;
use codemode_mcp::{CodeModeServer, ServeHost};
use codemode_runtime::Runtime;
use serde_json::{json, Value};

/// `slow` answers its input after 3 s, `hang` never; both count how often their future was
/// dropped before answering (cancelled).
struct Tools {
    ran: Arc<Mutex<Vec<String>>>,
    dropped: Arc<AtomicUsize>,
}

struct CountDrop(Arc<AtomicUsize>, bool);

impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl ToolExecutor for Tools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        self.ran.lock().unwrap().push(call.tool_name.clone());
        let dropped = self.dropped.clone();
        Box::pin(async move {
            let mut guard = CountDrop(dropped, false);
            match call.tool_name.as_str() {
                "slow" => tokio::time::sleep(Duration::from_secs(3)).await,
                "hang" => std::future::pending::<()>().await,
                _ => {}
            }
            guard.1 = true;
            Ok(
                json!({"content": [{"type": "text", "text": call.input.to_string()}], "details": call.input}),
            )
        })
    }
}

struct Fixture {
    url: String,
    ran: Arc<Mutex<Vec<String>>>,
    dropped: Arc<AtomicUsize>,
    shutdown: tokio_util::sync::CancellationToken,
    serving: tokio::task::JoinHandle<Result<(), codemode_mcp::server::ServeError>>,
}

/// Tools `slow`, `hang` and `write` (approval required); runs park after 300 ms.
async fn fixture() -> Fixture {
    let config =
        codemode_config::resolve(&json!({"timeoutMs": 300, "snapshotTtlSeconds": 120})).config;
    let specs = ["slow", "hang", "write"]
        .iter()
        .map(|name| ToolSpec::core(*name, "A tool."))
        .collect();
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    let ran = Arc::new(Mutex::new(Vec::new()));
    let dropped = Arc::new(AtomicUsize::new(0));
    let source = FixedSource {
        config,
        catalog,
        executor: Arc::new(Tools {
            ran: ran.clone(),
            dropped: dropped.clone(),
        }),
    };
    let policy = codemode_config::resolve_policy(
        &json!({"tools": {"approvals": {"require": ["write"]}}}),
        None,
    )
    .policy;
    let code_mode = Arc::new(CodeMode::new(Runtime::global().unwrap()));
    let server = CodeModeServer::new(code_mode, Arc::new(source))
        .with_host(ServeHost::new().with_policy(policy));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(server.serve_http(listener, shutdown.clone()));
    Fixture {
        url,
        ran,
        dropped,
        shutdown,
        serving,
    }
}

impl Fixture {
    async fn stop(self) {
        self.shutdown.cancel();
        self.serving.await.unwrap().unwrap();
    }
}

/// One stateless 2026-07-28 request from a client that declares the tasks extension and form
/// elicitation; the JSON-RPC response.
async fn request(url: &str, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    // `Mcp-Name`: the tool of a `tools/call`, the task of a `tasks/*` request.
    let name = params.get("name").or_else(|| params.get("taskId"));
    if let Some(name) = name.and_then(Value::as_str) {
        builder = builder.header("mcp-name", name);
    }
    let text = builder
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str::<Value>(&text)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message.get("id") == Some(&json!(id)))
        })
        .unwrap_or_else(|| panic!("no response with id {id}: {text}"))
}

async fn exec(url: &str, code: &str) -> Value {
    request(
        url,
        1,
        "tools/call",
        json!({"name": "exec", "arguments": {"code": code}}),
    )
    .await
}

/// Polls `tasks/get` as a client host does (every `pollIntervalMs`) until the task leaves
/// `states`; the last `tasks/get` result and how many polls it took.
async fn poll_while(url: &str, task: &str, states: &[&str]) -> (Value, usize) {
    let mut polls = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        polls += 1;
        let got = request(
            url,
            100 + polls as u64,
            "tasks/get",
            json!({"taskId": task}),
        )
        .await;
        let result = got["result"].clone();
        let status = result["status"].as_str().unwrap_or_else(|| panic!("{got}"));
        if !states.contains(&status) {
            return (result, polls);
        }
        assert!(std::time::Instant::now() < deadline, "{got}");
        let interval = result["pollIntervalMs"].as_u64().unwrap_or(1000);
        tokio::time::sleep(Duration::from_millis(interval)).await;
    }
}

/// The "done when": the run parks on a long tool, the model's one `exec` gets a task,
/// and the host's polling (no further model turn) ends with the final result, whose `output`
/// holds the output from before and after the park.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_parked_on_a_long_tool_costs_one_exec() {
    let f = fixture().await;
    let created = exec(
        &f.url,
        "console.log('before'); const r = await tools.slow({n: 7}); console.log('after'); return r.n * 6;",
    )
    .await;
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    // The task's fields are inlined in the result.
    let task = result;
    let id = task["taskId"].as_str().unwrap().to_string();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttlMs"], 120_000);
    assert_eq!(task["pollIntervalMs"], 1000);

    let (done, polls) = poll_while(&f.url, &id, &["working"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(polls >= 2, "{polls}");
    let final_result = &done["result"];
    assert_eq!(final_result["isError"], false, "{done}");
    let structured = &final_result["structuredContent"];
    assert_eq!(structured["status"], "completed", "{done}");
    assert_eq!(structured["value"], 42);
    let output = serde_json::to_string(&structured["output"]).unwrap();
    assert!(
        output.find("before").unwrap() < output.find("after").unwrap(),
        "{output}"
    );
    assert_eq!(*f.ran.lock().unwrap(), ["slow"]);
    f.stop().await;
}

/// Approvals of a task: `tasks/get` reports `input_required` with one elicitation per pending
/// approval; `tasks/update` answers them and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_approval_is_answered_by_tasks_update() {
    let f = fixture().await;
    let created = exec(&f.url, "return await tools.write({path: 'a'});").await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let (asking, _) = poll_while(&f.url, &id, &["working"]).await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let requests = asking["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asking}");
    let (approval, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");
    assert!(question["params"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Code mode asks to run the tool \"openclaw:core:write\"."));
    assert!(f.ran.lock().unwrap().is_empty());

    let ack = request(
        &f.url,
        50,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {approval.clone(): {"action": "accept", "content": {"approve": true}}}}),
    )
    .await;
    assert!(ack.get("error").is_none(), "{ack}");
    // At once, before the run has taken the answer: the answered request is no longer asked.
    let after = request(&f.url, 51, "tasks/get", json!({"taskId": id})).await;
    assert!(
        matches!(
            after["result"]["status"].as_str(),
            Some("working" | "completed")
        ),
        "{after}"
    );
    let (done, _) = poll_while(&f.url, &id, &["working", "input_required"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["value"],
        json!({"path": "a"})
    );
    assert_eq!(*f.ran.lock().unwrap(), ["write"]);
    f.stop().await;
}

/// `tasks/cancel` aborts the run and cancels its pending downstream call; an unknown task id is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_aborts_the_run_and_its_calls() {
    let f = fixture().await;
    let created = exec(&f.url, "return await tools.hang({});").await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let ack = request(&f.url, 60, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let got = request(&f.url, 61, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while f.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the hanging call was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let unknown = request(&f.url, 62, "tasks/get", json!({"taskId": "run_nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["message"], "Unknown task: run_nope");
    f.stop().await;
}
