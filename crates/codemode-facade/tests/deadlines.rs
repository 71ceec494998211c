//! Deadlines held outside the VM (issue 15 item 4, docs/threat-model.md "Deadlines"): the source
//! cap and a preparation that cannot outlast `timeoutMs` by more than the answer's own latency.
//! The bounds here are generous correctness bounds (debug build, shared machine), not
//! performance measurements; those are in docs/benchmarks.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits};
use codemode_facade::{CodeMode, CodeModeResult, ErrorCode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::json;

struct NoTools;

impl ToolExecutor for NoTools {
    fn execute(&self, _call: ToolCall) -> ToolFuture {
        Box::pin(async { Err("no tools".to_string()) })
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
    let (code_, _) = failure(&result);
    assert_eq!(code_, Some(ErrorCode::Timeout), "{result:?}");
    assert!(
        elapsed < Duration::from_millis(400),
        "answered after {elapsed:?}"
    );
}
