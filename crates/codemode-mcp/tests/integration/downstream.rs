//! What the client sends downstream, against the test server over stdio and streamable HTTP:
//! the protocol version it offers, `notifications/cancelled` for calls that time out or whose
//! caller gave up, and calls that fail at once (not after the timeout) when a reply is too large
//! or the server dies mid-call.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolError, ToolExecutor};
use codemode_mcp::{McpHub, McpServersConfig};
use serde_json::{json, Value};

use common::{call, connect, log_lines as cancel_log, stdio, text, tool_call, HttpServer};

/// The `initialize` params a legacy server (one that answers `server/discover` with `-32601`)
/// received offer 2025-11-25, the newest revision with the initialize handshake (rmcp's
/// `LATEST_WITH_INITIALIZE`), not 2026-07-28 (tests/integration/revision.rs covers current servers).
async fn offers_a_version_with_initialize(config: McpServersConfig) {
    let hub = connect(&config).await;
    common::assert_initialized_with_2025_11_25(&common::client_info(&hub).await);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_offers_a_protocol_version_with_initialize_over_stdio() {
    offers_a_version_with_initialize(stdio(&["--legacy-only"], None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_offers_a_protocol_version_with_initialize_over_http() {
    let server = HttpServer::start(&["--legacy-only"]);
    offers_a_version_with_initialize(server.config(None)).await;
}

/// One `--cancel-log` line without its request id (`cancelled <id> <tool> <reason>`), after
/// checking that the id is a JSON-RPC number.
fn without_id(line: &str) -> String {
    let mut parts = line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("cancelled"), "{line}");
    let id = parts.next().unwrap_or_default();
    assert!(id.parse::<u64>().is_ok(), "{line}");
    parts.next().unwrap_or_default().to_string()
}

/// A `tools/call` that runs out of its `timeoutMs` fails with the timeout message and the
/// server gets `notifications/cancelled` for it, with the reason.
async fn a_timed_out_call_is_cancelled_downstream(config: McpServersConfig, log: &Path) {
    let hub = connect(&config).await;
    let err = call(&hub, "hang", json!({})).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::unavailable("MCP server \"t\" did not answer tools/call \"hang\" within 300 ms")
    );
    let lines = cancel_log(log).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(without_id(&lines[0]), "hang no answer within 300 ms");
    // The connection is still good.
    let echoed = call(&hub, "echo", json!({"text": "after"})).await.unwrap();
    assert_eq!(text(&echoed), "after");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_is_cancelled_downstream_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let config = stdio(
        &["--cancel-log", log.to_str().unwrap()],
        Some(Duration::from_millis(300)),
    );
    a_timed_out_call_is_cancelled_downstream(config, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_is_cancelled_downstream_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    // A legacy server: on 2026-07-28 rmcp's HTTP transport ends the request's own exchange
    // instead of POSTing notifications/cancelled (docs/mcp.md, "Protocol revisions").
    let server = HttpServer::start(&["--legacy-only", "--cancel-log", log.to_str().unwrap()]);
    let config = server.config(Some(Duration::from_millis(300)));
    a_timed_out_call_is_cancelled_downstream(config, &log).await;
}

/// A call whose caller gives up (the executor future is dropped, as when the facade aborts the
/// tasks of a cancelled, aborted or expired run) is cancelled downstream with that reason.
async fn a_dropped_call_is_cancelled_downstream(config: McpServersConfig, log: &Path) {
    let hub = connect(&config).await;
    let future = hub.executor(None).execute(tool_call("hang", json!({})));
    let task = tokio::spawn(future);
    tokio::time::sleep(Duration::from_millis(300)).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let lines = cancel_log(log).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        without_id(&lines[0]),
        format!("hang {}", codemode_mcp::client::CANCELLED_BY_CALLER)
    );
    assert_eq!(
        without_id(&lines[0]),
        "hang the calling code-mode run was cancelled"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_downstream_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let config = stdio(&["--cancel-log", log.to_str().unwrap()], None);
    a_dropped_call_is_cancelled_downstream(config, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_downstream_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    // A legacy server: on 2026-07-28 rmcp's HTTP transport ends the request's own exchange
    // instead of POSTing notifications/cancelled (docs/mcp.md, "Protocol revisions").
    let server = HttpServer::start(&["--legacy-only", "--cancel-log", log.to_str().unwrap()]);
    a_dropped_call_is_cancelled_downstream(server.config(None), &log).await;
}

/// A call that finishes in time is not cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_call_is_not_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let hub = connect(&stdio(&["--cancel-log", log.to_str().unwrap()], None)).await;
    let result = call(&hub, "slow", json!({"ms": 50})).await.unwrap();
    assert_eq!(text(&result), "slept 50");
    tokio::time::sleep(Duration::from_millis(200)).await;
    hub.shutdown().await;
    assert!(!log.exists(), "{:?}", std::fs::read_to_string(&log));
}

/// Calls `tool` with a 60 s budget and returns its error and how long it took.
async fn fails_fast(hub: &McpHub, tool: &str, input: Value) -> (String, Duration) {
    let started = Instant::now();
    let err = call(hub, tool, input).await.unwrap_err();
    (err.to_string(), started.elapsed())
}

/// A reply over the 16 MiB line limit fails its call at once with the reason, and the
/// connection stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_reply_fails_the_call_at_once_over_stdio() {
    let hub = connect(&stdio(&[], Some(Duration::from_secs(60)))).await;
    let (err, took) = fails_fast(&hub, "big", json!({"bytes": 17 * 1024 * 1024})).await;
    assert_eq!(
        err,
        "MCP server \"t\" sent a reply to tools/call \"big\" that was dropped: it is over the 16777216-byte limit of one message"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    let ok = call(&hub, "big", json!({"bytes": 1000})).await.unwrap();
    assert_eq!(text(&ok).len(), 1000);
    hub.shutdown().await;
}

/// An HTTP server of the 2026-07-28 revision that dies in the middle of a call fails the call
/// at once: the POST itself fails (no SSE stream to resume).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_current_http_server_fails_the_call_at_once() {
    let server = HttpServer::start(&[]);
    let hub = connect(&server.config(Some(Duration::from_secs(60)))).await;
    let (err, took) = fails_fast(&hub, "crash", json!({})).await;
    assert!(
        err.starts_with("MCP server \"t\" closed the connection during tools/call \"crash\": ")
            && err.contains("error sending request"),
        "{err}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    hub.shutdown().await;
}

/// A legacy HTTP server that dies in the middle of a call fails the call at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_http_server_fails_the_call_at_once() {
    let server = HttpServer::start(&["--legacy-only"]);
    let hub = connect(&server.config(Some(Duration::from_secs(60)))).await;
    let (err, took) = fails_fast(&hub, "crash", json!({})).await;
    assert_eq!(
        err,
        "MCP server \"t\" ended the HTTP response to tools/call \"crash\" before answering (the server stopped or dropped the connection, or its reply was over the 16777216-byte limit of one message)"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    hub.shutdown().await;
}

/// An HTTP reply over rmcp's 16 MiB event limit fails its call at once too; the server is
/// still there, so the next call works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_reply_fails_the_call_at_once_over_http() {
    let server = HttpServer::start(&[]);
    let hub = connect(&server.config(Some(Duration::from_secs(60)))).await;
    let (err, took) = fails_fast(&hub, "big", json!({"bytes": 17 * 1024 * 1024})).await;
    assert_eq!(
        err,
        "MCP server \"t\" ended the HTTP response to tools/call \"big\" before answering (the server stopped or dropped the connection, or its reply was over the 16777216-byte limit of one message)"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    let ok = call(&hub, "big", json!({"bytes": 1000})).await.unwrap();
    assert_eq!(text(&ok).len(), 1000);
    hub.shutdown().await;
}

/// A stdio server that dies in the middle of a call fails the call at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stdio_server_fails_the_call_at_once() {
    let hub = connect(&stdio(&[], Some(Duration::from_secs(60)))).await;
    let (err, took) = fails_fast(&hub, "crash", json!({})).await;
    assert_eq!(
        err,
        "MCP server \"t\" closed the connection during tools/call \"crash\": Transport closed"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    hub.shutdown().await;
}

/// End to end through the facade: a code-mode run waiting on `MCP.t.hang()` is aborted; the
/// facade aborts the run's tasks, which drops the executor future, and the server gets
/// `notifications/cancelled` for the `tools/call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_run_cancels_its_downstream_call() {
    use codemode_catalog::{Catalog, SearchLimits};
    use codemode_facade::{CodeMode, RunEnv};
    use codemode_runtime::AbortHandle;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let hub = connect(&stdio(&["--cancel-log", log.to_str().unwrap()], None)).await;
    let catalog = Catalog::build(hub.specs(), &SearchLimits::default()).unwrap();
    let config = codemode_config::resolve(&json!({"timeoutMs": 30000})).config;
    let env = RunEnv::new(
        config,
        Arc::new(catalog),
        Arc::new(hub.executor(None)),
        RunScope::default(),
    );
    let cm = CodeMode::with_global_runtime().unwrap();
    let abort = AbortHandle::new();
    let aborter = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        aborter.abort();
    });
    let result = cm
        .exec(
            &env,
            &json!({"code": "return await MCP.t.hang({});"}),
            &abort,
        )
        .await
        .to_json();
    assert_eq!(result["status"], "failed", "{result}");
    assert_eq!(result["code"], "aborted", "{result}");
    let lines = cancel_log(&log).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        without_id(&lines[0]),
        "hang the calling code-mode run was cancelled"
    );
    hub.shutdown().await;
}
