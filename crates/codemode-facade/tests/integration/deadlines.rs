//! Deadlines held outside the VM (issue 15 item 4, docs/threat-model.md "Deadlines"): the source
//! cap and a preparation that cannot outlast `timeoutMs` by more than the answer's own latency.
//! The bounds here are generous correctness bounds (debug build, shared machine), not
//! performance measurements; those are in docs/benchmarks.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits};
use codemode_facade::{CodeMode, CodeModeResult, ErrorCode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::json;

struct NoTools;

impl ToolExecutor for NoTools {
    fn execute(&self, _call: ToolCall) -> ToolFuture {
        Box::pin(async { Err(ToolError::unknown_tool("no tools")) })
    }
}

fn harness(timeout_ms: u64) -> (CodeMode, RunEnv) {
    let config =
        codemode_config::resolve(&json!({"enabled": true, "timeoutMs": timeout_ms})).config;
    let limits = SearchLimits {
        max_search_limit: 50,
        search_default_limit: 8,
    };
    let catalog = Arc::new(Catalog::build(Vec::new(), &limits).unwrap());
    let env = RunEnv::new(config, catalog, Arc::new(NoTools), RunScope::default());
    (CodeMode::new(Runtime::global().unwrap()), env)
}

fn failure(result: &CodeModeResult) -> (Option<ErrorCode>, String) {
    match result {
        CodeModeResult::Failed { code, error, .. } => (*code, error.clone()),
        other => panic!("expected failed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_mb_cell_is_refused_at_once_naming_the_cap() {
    let (cm, env) = harness(100);
    let code = "x = 1;\n".repeat(30 * 1024 * 1024 / 7);
    let started = Instant::now();
    let result = cm
        .exec(&env, &json!({ "code": code }), &AbortHandle::new())
        .await;
    let (code_, error) = failure(&result);
    assert_eq!(code_, Some(ErrorCode::InvalidInput));
    assert_eq!(
        error,
        "code mode source is too large: 31457279 bytes (at most 1048576 bytes)."
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}

/// A cell just under the cap whose preparation (swc parse, TypeScript strip) takes longer than
/// `timeoutMs` in a debug build: the answer is `timeout` close to the deadline, not after the
/// parse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preparation_does_not_outlast_the_deadline() {
    let (cm, env) = harness(100);
    let line = "const a: number = (1 + 2) * 3 as number;\n";
    let code = line.repeat((1024 * 1024 - 16) / line.len());
    let started = Instant::now();
    let result = cm
        .exec(
            &env,
            &json!({"code": code, "language": "typescript"}),
            &AbortHandle::new(),
        )
        .await;
    let elapsed = started.elapsed();
    let (code_, error) = failure(&result);
    assert_eq!(code_, Some(ErrorCode::Timeout), "{result:?}");
    // The host ran out of time, not the program (issue 27 item 5): none of it ran.
    assert_eq!(
        error,
        format!(
            "code mode timeout exceeded. The host was still preparing the program's source ({} bytes) when the call's budget ran out; none of the program ran; timeoutMs is 100 (tools.codeMode.timeoutMs).",
            codemode_facade::limits::format_count(code.len() as u64)
        )
    );
    assert!(
        elapsed < Duration::from_millis(400),
        "answered after {elapsed:?}"
    );
}

/// Runs `code` under a `timeout_ms` deadline and returns the result and how long the answer
/// took.
async fn timed(code: &str, timeout_ms: u64) -> (CodeModeResult, Duration) {
    let (cm, env) = harness(timeout_ms);
    let started = Instant::now();
    let result = cm
        .exec(&env, &json!({ "code": code }), &AbortHandle::new())
        .await;
    (result, started.elapsed())
}

/// Issue 27 item 5: 1 MB of `tools.nope(1);` on one line. The missing-convenience scan before
/// the first leg recounted the line for every call (quadratic: 6 s for 100k calls in a release
/// build, minutes in a debug one, outside the deadline); one pass leaves the answer to the
/// program, whose first call fails. The deadline is 3 s because a debug build needs several
/// hundred milliseconds to prepare 1 MB (a release build ~1 ms: docs/benchmarks.md,
/// "Preparation scale").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_of_calls_on_one_line_is_answered_by_the_program() {
    let code = "tools.nope(1);".repeat(1_000_000 / 14);
    let (result, elapsed) = timed(&code, 3000).await;
    let (code_, error) = failure(&result);
    assert_eq!(code_, Some(ErrorCode::InternalError), "{result:?}");
    assert_eq!(
        error.lines().next().unwrap(),
        "TypeError: not a function: tools.nope is not a convenience function. Unknown tool id: nope. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."
    );
    assert!(
        elapsed < Duration::from_millis(3000),
        "answered after {elapsed:?}"
    );
}

/// The same text inside a string literal (the old scan counted each `tools.a(` in it as a
/// call), then a loop that never ends: the answer is the program's own timeout, at the
/// deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_string_literal_of_calls_times_out_at_the_deadline() {
    let code = format!(
        "const s = \"{}\";\nwhile (s.length > 0) {{}}",
        "tools.a(".repeat(1_000_000 / 8)
    );
    let (result, elapsed) = timed(&code, 1500).await;
    let (code_, error) = failure(&result);
    assert_eq!(code_, Some(ErrorCode::Timeout), "{result:?}");
    assert_eq!(
        error,
        codemode_facade::LimitExceeded::timeout(1500).to_string()
    );
    assert!(
        elapsed < Duration::from_millis(1500 + 400),
        "answered after {elapsed:?}"
    );
}
