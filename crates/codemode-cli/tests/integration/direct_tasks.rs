//! `serve` with code mode off passes a downstream task through to a 2026-07-28 client that
//! declares `io.modelcontextprotocol/tasks` (issue 23; docs/mcp.md, "Code mode off: a plain
//! aggregating server", "Tasks passed through"): the real `codemode serve --http` binary
//! aggregates `codemode-mcp-fixture` (built beside `codemode`; its task tools run on rmcp's
//! `TaskManager`) under `--auth` with two principals, and the test plays stateless clients with
//! raw requests. The client gets the server's `CreateTaskResult` under a task id of serve's, and
//! `tasks/get`, `tasks/update` and `tasks/cancel` go back to the server; another principal's
//! requests for that id are refused.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use codemode_test_support::mcp::{jsonrpc_response, post_2026, serve_http};

/// The fixture's tools (8 MRTR tools, 7 task tools, the everything server's 13).
const FIXTURE_TOOLS: usize = 28;

/// The capabilities of a client that takes tasks and answers elicitations.
fn tasks_client() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// One principal's stateless 2026-07-28 client of one `serve` URL.
struct Client {
    url: String,
    token: &'static str,
    next_id: u64,
}

impl Client {
    /// One request declaring `capabilities`; the JSON-RPC response.
    async fn request(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        self.next_id += 1;
        let reply = post_2026(
            &self.url,
            self.next_id,
            method,
            params,
            capabilities,
            Some(self.token),
        )
        .await;
        jsonrpc_response(&reply.text, self.next_id)
            .unwrap_or_else(|| panic!("no response to {method}: {} {}", reply.status, reply.text))
    }

    /// `tools/call` of `name` with `arguments` from a Tasks client; the JSON-RPC response.
    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        self.request("tools/call", params, tasks_client()).await
    }

    /// `tasks/<method>` of task `id` with `extra` params from a Tasks client.
    async fn task(&mut self, method: &str, id: &str, extra: Value) -> Value {
        let mut params = json!({"taskId": id});
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        self.request(&format!("tasks/{method}"), params, tasks_client())
            .await
    }

    /// Polls `tasks/get` of `id` until its status is not in `states` (at most 20 s); the
    /// last result.
    async fn until_not(&mut self, id: &str, states: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.task("get", id, json!({})).await;
            let status = got["result"]["status"]
                .as_str()
                .unwrap_or_else(|| panic!("{got}"));
            if !states.contains(&status) {
                return got["result"].clone();
            }
            assert!(Instant::now() < deadline, "still {status}: {got}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `codemode serve --http --auth` with code mode off over the fixture (named `fixture`) and a
/// trajectory in `dir/trajectory.jsonl`, once it lists the fixture's tools; the child and the
/// clients of principals `alice` and `bob`.
async fn serve(dir: &Path) -> (tokio::process::Child, Client, Client) {
    let codemode = Path::new(env!("CARGO_BIN_EXE_codemode"));
    let fixture = codemode.with_file_name("codemode-mcp-fixture");
    assert!(
        fixture.exists(),
        "{} is missing: `cargo test --workspace --no-run` builds it",
        fixture.display()
    );
    let servers = dir.join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"fixture": {"command": fixture}}}).to_string(),
    )
    .unwrap();
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"tools": {"codeMode": false}}"#).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        format!(
            "{} alice\n{} bob\n",
            codemode_mcp::http_auth::token_hash("tok-alice"),
            codemode_mcp::http_auth::token_hash("tok-bob"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let trajectory = dir.join("trajectory.jsonl");
    let args: [&std::ffi::OsStr; 8] = [
        "--mcp-config".as_ref(),
        servers.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--auth".as_ref(),
        tokens.as_os_str(),
        "--trajectory".as_ref(),
        trajectory.as_os_str(),
    ];
    let (child, url) = serve_http(codemode, args, &dir.join("serve.log")).await;
    let mut alice = Client {
        url: url.clone(),
        token: "tok-alice",
        next_id: 0,
    };
    let bob = Client {
        url,
        token: "tok-bob",
        next_id: 1000,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = alice.request("tools/list", json!({}), json!({})).await;
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == FIXTURE_TOOLS)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the fixture never listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, alice, bob)
}

/// The id of the task a `tools/call` response created, after checking the
/// `CreateTaskResult`'s shape.
fn created_task(created: &Value) -> String {
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working", "{created}");
    assert_eq!(result["ttlMs"], 300_000, "{created}");
    assert_eq!(result["pollIntervalMs"], 1000, "{created}");
    assert_eq!(result.get("requestState"), None, "{created}");
    let id = result["taskId"].as_str().unwrap().to_string();
    // serve's own id: a random UUID, not the server's.
    assert_eq!(uuid_version(&id), Some(4), "{created}");
    id
}

/// The version digit of a UUID string (`xxxxxxxx-xxxx-Vxxx-…`).
fn uuid_version(id: &str) -> Option<u32> {
    let parts: Vec<&str> = id.split('-').collect();
    if parts.len() != 5 || id.len() != 36 {
        return None;
    }
    parts[2].chars().next()?.to_digit(16)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_task_reaches_a_tasks_client_and_its_methods_go_back_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut alice, mut bob) = serve(dir.path()).await;

    // Created, then completed with the server's result.
    let created = alice
        .call(
            "fixture__slow_compute",
            json!({"seconds": 1, "label": "sum"}),
        )
        .await;
    let id = created_task(&created);
    let done = alice.until_not(&id, &["working"]).await;
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "sum: computed in 1 s"}]),
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(done["resultType"], "complete", "{done}");

    // Another principal cannot name it; an id never made is refused the same way.
    for (client, task) in [(&mut bob, id.as_str()), (&mut alice, "not-a-task")] {
        for method in ["get", "cancel"] {
            let refused = client.task(method, task, json!({})).await;
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert_eq!(
                refused["error"]["message"],
                format!("Unknown task: {task}"),
                "{refused}"
            );
        }
        let refused = client
            .task("update", task, json!({"inputResponses": {}}))
            .await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }

    // Cancelled while it runs: an empty ack, then `cancelled`.
    let created = alice
        .call(
            "fixture__slow_compute",
            json!({"seconds": 60, "label": "long"}),
        )
        .await;
    let long = created_task(&created);
    let ack = alice.task("cancel", &long, json!({})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let cancelled = alice.until_not(&long, &["working"]).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled.get("result"), None, "{cancelled}");

    // Input asked inside the task: `input_required`, answered by `tasks/update`.
    let created = alice
        .call("fixture__confirm_delete", json!({"filename": "a.txt"}))
        .await;
    let asking = created_task(&created);
    let asked = alice.until_not(&asking, &["working"]).await;
    assert_eq!(asked["status"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["confirm"]["method"], "elicitation/create",
        "{asked}"
    );
    // Bob cannot answer it.
    let refused = bob
        .task(
            "update",
            &asking,
            json!({"inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let ack = alice
        .task(
            "update",
            &asking,
            json!({"inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}),
        )
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let deleted = alice
        .until_not(&asking, &["working", "input_required"])
        .await;
    assert_eq!(deleted["status"], "completed", "{deleted}");
    assert_eq!(
        deleted["result"]["content"][0]["text"], "Deleted a.txt",
        "{deleted}"
    );

    // A protocol error of the server's task: `failed` with its error.
    let created = alice.call("fixture__protocol_error_job", json!({})).await;
    let failing = created_task(&created);
    let failed = alice.until_not(&failing, &["working"]).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(
        failed["error"]["message"], "protocol_error_job failed on purpose",
        "{failed}"
    );

    // The trajectory records each call once, its result the task the client got.
    let trajectory = std::fs::read_to_string(dir.path().join("trajectory.jsonl")).unwrap();
    let events: Vec<Value> = trajectory
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "nested_tool_result")
        .collect();
    assert_eq!(results.len(), 4, "{trajectory}");
    assert_eq!(results[0]["toolName"], "fixture__slow_compute");
    assert_eq!(results[0]["status"], "ok");
    assert_eq!(results[0]["result"]["resultType"], "task", "{trajectory}");
    assert_eq!(results[0]["result"]["taskId"], id.as_str(), "{trajectory}");
    assert_eq!(
        results[1]["result"]["taskId"],
        long.as_str(),
        "{trajectory}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_gets_results_and_a_task_required_tool_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut alice, _bob) = serve(dir.path()).await;

    // A task-supporting tool runs to its end for a client that did not declare Tasks.
    let params =
        json!({"name": "fixture__slow_compute", "arguments": {"seconds": 1, "label": "sync"}});
    let sync = alice
        .request("tools/call", params, json!({"elicitation": {}}))
        .await;
    assert_eq!(
        sync["result"]["content"],
        json!([{"type": "text", "text": "sync: computed in 1 s"}]),
        "{sync}"
    );
    assert_eq!(sync["result"]["resultType"], "complete", "{sync}");
    assert_eq!(sync["result"].get("taskId"), None, "{sync}");

    // A task-required tool: the server's -32021 reaches the client as that error.
    let params = json!({"name": "fixture__failing_job", "arguments": {}});
    let refused = alice.request("tools/call", params, json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}}),
        "{refused}"
    );

    // Without the extension, tasks/get is refused by serve itself (SEP-2575).
    let params = json!({"taskId": "any"});
    let gated = alice.request("tasks/get", params, json!({})).await;
    assert_eq!(gated["error"]["code"], -32021, "{gated}");
}
