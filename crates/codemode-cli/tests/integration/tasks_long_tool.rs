//! The Tasks proof of issue 23 (docs/mcp.md, "Runs as Tasks"): a run parked on a long tool costs
//! the model exactly one `exec` call when the client uses Tasks.
//!
//! The real `codemode serve --http` binary aggregates npm's server-everything, whose
//! `trigger-long-running-operation` takes `duration` seconds of wall-clock time (Node timers;
//! time cannot be simulated in that process). The test plays a 2026-07-28 client host that
//! declares the tasks extension: it sends one `tools/call` of `exec`, gets a task, and polls
//! `tasks/get` every `pollIntervalMs` until the task completes, counting its own requests by
//! method. The claim it checks, exactly: for a tool of N seconds, the client sends one
//! `tools/call` (the model's one turn) and at least N/2 `tasks/get` (the host's polls, one per
//! `pollIntervalMs` of 1 s, no model turn),
//! and the final result is the completed run with all its output. N is
//! `CODEMODE_LONG_TOOL_SECONDS` (default 15; `CODEMODE_LONG_TOOL_SECONDS=600` runs the issue's
//! ten minutes); nothing in codemode depends on N except the number of polls.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use codemode_test_support::everything_servers;
use codemode_test_support::mcp::{request_2026, serve_http};
use serde_json::{json, Value};

/// The tool's duration in seconds: `CODEMODE_LONG_TOOL_SECONDS`, default 15.
fn seconds() -> u64 {
    std::env::var("CODEMODE_LONG_TOOL_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n >= 2)
        .unwrap_or(15)
}

/// A client host of the 2026-07-28 revision that declares Tasks and counts what it sends.
struct Host {
    url: String,
    sent: BTreeMap<String, usize>,
    next_id: u64,
}

impl Host {
    /// One stateless request (the revision's `_meta` and headers); the JSON-RPC response.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        *self.sent.entry(method.to_string()).or_default() += 1;
        self.next_id += 1;
        let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        request_2026(&self.url, self.next_id, method, params, capabilities).await
    }
}

/// `codemode serve --http 127.0.0.1:0` over server-everything, its URL once its servers are up.
async fn serve(dir: &std::path::Path, seconds: u64) -> (tokio::process::Child, String) {
    let config = everything_servers(dir);
    // Runs park after 1 s; a parked run is kept, and the nested call allowed, well past N.
    let host = dir.join("host.json");
    std::fs::write(
        &host,
        json!({"tools": {"codeMode": {"timeoutMs": 1000, "snapshotTtlSeconds": seconds + 120}}})
            .to_string(),
    )
    .unwrap();
    let timeout_ms = ((seconds + 60) * 1000).to_string();
    let (child, url) = serve_http(
        Path::new(env!("CARGO_BIN_EXE_codemode")),
        [
            "--mcp-config".as_ref(),
            config.as_os_str(),
            "--config".as_ref(),
            host.as_os_str(),
            "--mcp-timeout-ms".as_ref(),
            timeout_ms.as_ref(),
        ] as [&std::ffi::OsStr; 6],
        &dir.join("serve.log"),
    )
    .await;
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_parked_on_a_long_mcp_tool_costs_the_model_one_exec() {
    let n = seconds();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, url) = serve(dir.path(), n).await;
    let mut settle = Host {
        url: url.clone(),
        sent: BTreeMap::new(),
        next_id: 0,
    };
    // serve connects its servers in the background; wait for server-everything (not counted).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let probe = settle
            .request(
                "tools/call",
                json!({"name": "exec", "arguments": {"code": "return typeof MCP.everything"}}),
            )
            .await;
        if probe["result"]["structuredContent"]["value"] == "object" {
            break;
        }
        assert!(Instant::now() < deadline, "{probe}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let mut host = Host {
        sent: BTreeMap::new(),
        ..settle
    };
    let started = Instant::now();
    let code = format!(
        "console.log('before'); const r = await MCP.everything.triggerLongRunningOperation({{duration: {n}, steps: 5}}); console.log('after'); return r.content[0].text;"
    );
    let created = host
        .request(
            "tools/call",
            json!({"name": "exec", "arguments": {"code": code}}),
        )
        .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    let id = task["taskId"].as_str().unwrap().to_string();
    // The host polls; the model is not asked again.
    let done = loop {
        let got = host.request("tasks/get", json!({"taskId": id})).await;
        let result = got["result"].clone();
        match result["status"].as_str() {
            Some("working") => {}
            Some(_) => break result,
            None => panic!("{got}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(n + 60),
            "still working after {n} + 60 s"
        );
        let interval = result["pollIntervalMs"].as_u64().unwrap_or(1000);
        tokio::time::sleep(Duration::from_millis(interval)).await;
    };
    let took = started.elapsed();
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["status"], "completed", "{done}");
    assert_eq!(
        structured["value"],
        format!("Long running operation completed. Duration: {n} seconds, Steps: 5."),
    );
    // All output since the start: the exec's leg before the park and the resumed leg after.
    let output: Vec<String> = structured["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| {
            line.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| line.to_string())
        })
        .collect();
    let joined = output.join("\n");
    assert!(
        joined.find("before").unwrap() < joined.find("after").unwrap(),
        "{output:?}"
    );
    // The model's cost: one tools/call. The host's: the polls, about one per second of the tool.
    assert_eq!(host.sent.get("tools/call"), Some(&1), "{:?}", host.sent);
    let polls = host.sent.get("tasks/get").copied().unwrap_or(0);
    assert!(polls > 0, "{:?}", host.sent);
    assert!(
        took >= Duration::from_secs(n) && polls as u64 >= n / 2,
        "the tool ran {n} s: {took:?}, {polls} polls"
    );
    assert_eq!(host.sent.len(), 2, "{:?}", host.sent);
    eprintln!("tool of {n} s: 1 tools/call, {polls} tasks/get, {took:?}");
    child.kill().await.unwrap();
}
