//! Parked runs as MCP Tasks (issue 23 item 4, docs/mcp.md "Runs as Tasks"): a `CodeModeServer`
//! over streamable HTTP driven by raw 2026-07-28 requests of a client that declares the tasks
//! extension. A run parked on a long tool (3 s here, standing for ten minutes) costs the model
//! exactly one `exec`: the client host polls `tasks/get` until the task completes.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use codemode_test_support::mcp::request_2026;
use common::serve::HttpFixture;

/// Tools `slow` (3 s), `hang` (never answers) and `write` (approval required); runs park after
/// 300 ms.
async fn fixture() -> HttpFixture {
    HttpFixture::start(
        &json!({"timeoutMs": 300, "snapshotTtlSeconds": 120}),
        &["slow", "hang", "write"],
        &["write"],
    )
    .await
}

/// One stateless 2026-07-28 request from a client that declares the tasks extension and form
/// elicitation; the JSON-RPC response.
async fn request(url: &str, id: u64, method: &str, params: Value) -> Value {
    let capabilities = json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    });
    request_2026(url, id, method, params, capabilities).await
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

/// Sends `exec` of `code` and returns the id of the task it created.
async fn exec_task(url: &str, code: &str) -> String {
    let created = exec(url, code).await;
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string()
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
    assert_eq!(*f.recorded.ran.lock().unwrap(), ["slow"]);
    f.stop().await;
}

/// Approvals of a task: `tasks/get` reports `input_required` with one elicitation per pending
/// approval; `tasks/update` answers them and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_approval_is_answered_by_tasks_update() {
    let f = fixture().await;
    let id = exec_task(&f.url, "return await tools.write({path: 'a'});").await;
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
    assert!(f.recorded.ran.lock().unwrap().is_empty());

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
    assert_eq!(*f.recorded.ran.lock().unwrap(), ["write"]);
    f.stop().await;
}

/// `tasks/cancel` aborts the run and cancels its pending downstream call; an unknown task id is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_aborts_the_run_and_its_calls() {
    let f = fixture().await;
    let id = exec_task(&f.url, "return await tools.hang({});").await;
    let ack = request(&f.url, 60, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let got = request(&f.url, 61, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while f.recorded.dropped.load(Ordering::SeqCst) == 0 {
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
