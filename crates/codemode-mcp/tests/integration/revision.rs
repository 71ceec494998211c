//! The client against servers of both protocol revisions (docs/mcp.md, "Protocol revisions"),
//! over stdio and streamable HTTP, with the test server: a server that speaks only 2026-07-28
//! (`--modern-only`: it refuses `initialize`) is reached by `server/discover` with per-request
//! `_meta`; a legacy one (`--legacy-only`: `server/discover` is `-32601`) by `initialize`; a
//! 2026-07-28 server's `input_required` is answered and the call retried (MRTR); a tool that
//! answers with a task is polled at the server's `pollIntervalMs` to its result, and cancelled
//! with `tasks/cancel` when the caller gives up; `tools/list_changed` arrives through
//! `subscriptions/listen`.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use codemode_bridge::ToolExecutor;
use codemode_mcp::McpServersConfig;
use serde_json::json;

use common::{
    assert_initialized_with_2025_11_25, call, client_info, connect, log_lines, text, tool_call,
    HttpServer,
};

/// The test server over stdio with `flags` and no per-server timeout.
fn stdio(flags: &[&str]) -> McpServersConfig {
    common::stdio(flags, None)
}

/// A server that refuses `initialize` and speaks only 2026-07-28 is connected with
/// `server/discover`, sees the revision, codemode's name and capabilities (the Tasks extension)
/// in every request's `_meta`, lists and calls.
async fn a_modern_only_server_works(config: McpServersConfig) {
    let hub = connect(&config).await;
    let info = client_info(&hub).await;
    assert_eq!(info["protocolVersion"], "2026-07-28", "{info}");
    assert_eq!(
        info["clientInfo"],
        json!({"name": "codemode", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(
        info["capabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    let echoed = call(&hub, "echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(text(&echoed), "hi");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_only_2026_07_28_works_over_stdio() {
    a_modern_only_server_works(stdio(&["--modern-only"])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_only_2026_07_28_works_over_http() {
    let server = HttpServer::start(&["--modern-only"]);
    a_modern_only_server_works(server.config(None)).await;
}

/// A server that answers `server/discover` with `-32601` gets `initialize` offering
/// 2025-11-25 (the newest revision with the handshake) on the same connection, at once.
async fn a_legacy_server_gets_initialize(config: McpServersConfig) {
    let started = Instant::now();
    let hub = connect(&config).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_initialized_with_2025_11_25(&client_info(&hub).await);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_gets_initialize_over_stdio() {
    a_legacy_server_gets_initialize(stdio(&["--legacy-only"])).await;
}

/// A legacy server that starts reading its input only after rmcp gave up waiting for the
/// `server/discover` probe (10 s; an `npx -y` download on a cold npm cache) answers the probe's
/// `-32601` just before `initialize`: the late answer is dropped and the connection is made
/// (before, rmcp aborted it: "uncorrelated error response: expected id 1, error response
/// carried 0").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_slower_than_the_discovery_probe_still_connects() {
    let server = common::testserver();
    let script = format!("/bin/sleep 11; exec {} --legacy-only", server.display());
    let config = common::stdio_config("/bin/sh", vec!["-c".into(), script], None);
    let hub = connect(&config).await;
    assert_initialized_with_2025_11_25(&client_info(&hub).await);
    let echoed = call(&hub, "echo", json!({"text": "late"})).await.unwrap();
    assert_eq!(text(&echoed), "late");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_gets_initialize_over_http() {
    let server = HttpServer::start(&["--legacy-only"]);
    a_legacy_server_gets_initialize(server.config(None)).await;
}

/// A server that knows `server/discover` but supports only revisions up to 2025-11-25 answers
/// it with `-32022`; rmcp stops there, so the client connects again with `initialize`.
async fn a_server_of_old_versions_gets_initialize(config: McpServersConfig) {
    let hub = connect(&config).await;
    let info = client_info(&hub).await;
    assert_eq!(info["protocolVersion"], "2025-11-25", "{info}");
    assert_eq!(hub.status()[0].connects, 1);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_old_versions_gets_initialize_over_stdio() {
    a_server_of_old_versions_gets_initialize(stdio(&["--old-versions"])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_old_versions_gets_initialize_over_http() {
    let server = HttpServer::start(&["--old-versions"]);
    a_server_of_old_versions_gets_initialize(server.config(None)).await;
}

/// MRTR: the `ask` tool answers `input_required` with an elicitation; `exec` has nobody to ask,
/// so the elicitation is declined with the reason, and the retry carries that answer and the
/// echoed `requestState` (the server checks it) and gets the tool's result.
async fn input_required_is_answered_and_retried(config: McpServersConfig) {
    let hub = connect(&config).await;
    let result = call(&hub, "ask", json!({})).await.unwrap();
    let answered = json!({
        "action": "decline",
        "_meta": {"codemode/reason": codemode_mcp::forward::NO_USER}
    });
    assert_eq!(text(&result), format!("answered {answered}"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_answered_and_retried_over_stdio() {
    input_required_is_answered_and_retried(stdio(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_answered_and_retried_over_http() {
    let server = HttpServer::start(&[]);
    input_required_is_answered_and_retried(server.config(None)).await;
}

/// A tool that answers with a task is polled with `tasks/get` at the server's
/// `pollIntervalMs` (100 ms) until it completes: 600 ms of work is 5 to 9 polls, not a busy
/// loop, and the call's result is the task's.
async fn a_task_is_polled_to_its_result(config: McpServersConfig) {
    let hub = connect(&config).await;
    let started = Instant::now();
    let result = call(&hub, "task_slow", json!({"ms": 600})).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "slept 600 in a task"}])
    );
    assert!(took >= Duration::from_millis(600), "{took:?}");
    let polls: u64 = text(&call(&hub, "task_polls", json!({})).await.unwrap())
        .parse()
        .unwrap();
    assert!((5..=9).contains(&polls), "{polls} polls in {took:?}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_polled_to_its_result_over_stdio() {
    a_task_is_polled_to_its_result(stdio(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_polled_to_its_result_over_http() {
    let server = HttpServer::start(&[]);
    a_task_is_polled_to_its_result(server.config(None)).await;
}

/// A caller that gives up on a call that became a task (the run ended) makes the client send
/// `tasks/cancel` for it.
async fn a_dropped_task_is_cancelled(config: McpServersConfig, log: &Path) {
    let hub = connect(&config).await;
    let future = hub
        .executor(None)
        .execute(tool_call("task_slow", json!({"ms": 60_000})));
    let task = tokio::spawn(future);
    tokio::time::sleep(Duration::from_millis(500)).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let lines = log_lines(log).await;
    let cancelled: Vec<&String> = lines.iter().filter(|l| l.starts_with("task-")).collect();
    assert_eq!(cancelled.len(), 1, "{lines:?}");
    assert!(
        cancelled[0].starts_with("task-cancelled task-"),
        "{lines:?}"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_task_is_cancelled_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let config = stdio(&["--cancel-log", log.to_str().unwrap()]);
    a_dropped_task_is_cancelled(config, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_task_is_cancelled_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let server = HttpServer::start(&["--cancel-log", log.to_str().unwrap()]);
    a_dropped_task_is_cancelled(server.config(None), &log).await;
}

/// A 2026-07-28 server sends no unsolicited notifications: its `tools/list_changed` comes on
/// the `subscriptions/listen` stream the client opens, and the catalog is refreshed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_arrives_through_subscriptions_listen() {
    let hub = connect(&stdio(&["--modern-only"])).await;
    let seen = hub.generation();
    assert_eq!(
        text(&call(&hub, "add_tool", json!({})).await.unwrap()),
        "added added_1"
    );
    let now = hub.changed_since(seen, Duration::from_secs(5)).await;
    assert_eq!(now, seen + 1);
    let echoed = call(&hub, "added_1", json!({"text": "new"})).await.unwrap();
    assert_eq!(text(&echoed), "new");
    hub.shutdown().await;
}

/// A server's `notifications/prompts/list_changed` and `notifications/resources/list_changed`
/// bump the hub's generation, so `serve` with code mode off announces them to its clients
/// (docs/mcp.md, "Code mode off"): on a 2026-07-28 connection through `subscriptions/listen`
/// (asked for because the server advertises them), on a legacy one as plain notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_and_resource_list_changes_bump_the_generation() {
    for flags in [
        ["--modern-only", "--content-list-changed"],
        ["--legacy-only", "--content-list-changed"],
    ] {
        let hub = connect(&stdio(&flags)).await;
        let seen = hub.generation();
        assert_eq!(
            text(&call(&hub, "touch_content", json!({})).await.unwrap()),
            "touched"
        );
        // One bump per notification: the prompts one and the resources one.
        let mut now = hub.changed_since(seen, Duration::from_secs(5)).await;
        if now < seen + 2 {
            now = hub.changed_since(now, Duration::from_secs(5)).await;
        }
        assert_eq!(now, seen + 2, "{flags:?}");
        hub.shutdown().await;
    }
}
