//! Host RSS after many large payloads (issue 15 item 12, docs/benchmarks.md "Allocator
//! retention"): RSS after warm-up, after 100 `exec`s that each move ~1 MB of arguments through a
//! tool and return a 4 MB string, and after `malloc_trim(0)`; then 100 more runs, to see whether
//! trimmed memory comes straight back. Prints one table; not criterion (it measures memory).
#![allow(missing_docs)]

use std::sync::Arc;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::json;

#[path = "support/rss.rs"]
mod rss;
use rss::rss_mib;

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"content": [], "details": call.input})) })
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let config =
        codemode_config::resolve(&json!({"enabled": true, "maxOutputBytes": 10485760})).config;
    let limits = SearchLimits {
        max_search_limit: 50,
        search_default_limit: 8,
    };
    let catalog = Arc::new(Catalog::build(vec![ToolSpec::core("echo", "Echo.")], &limits).unwrap());
    let env = RunEnv::new(config, catalog, Arc::new(Echo), RunScope::default());
    let cm = CodeMode::new(Runtime::global().unwrap());
    let code = r#"const r = await tools.callValue("echo", {a: new Array(4e5).fill(1)});
                  return "x".repeat(4e6) + r.a.length;"#;
    let batch = |n: usize| {
        rt.block_on(async {
            for _ in 0..n {
                let r = cm
                    .exec(&env, &json!({ "code": code }), &AbortHandle::new())
                    .await;
                assert!(matches!(r, CodeModeResult::Completed { .. }), "{r:?}");
            }
        })
    };
    batch(2);
    let warm = rss_mib();
    batch(100);
    let after = rss_mib();
    let started = std::time::Instant::now();
    // SAFETY: malloc_trim only returns free heap pages to the kernel; no pointer is touched.
    unsafe { libc::malloc_trim(0) };
    let trim_ms = started.elapsed().as_secs_f64() * 1000.0;
    let trimmed = rss_mib();
    batch(100);
    let again = rss_mib();
    println!(
        "| after warm-up | after 100 runs | after malloc_trim(0) | trim took | after 100 more |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| {warm:.0} MiB | {after:.0} MiB | {trimmed:.0} MiB | {trim_ms:.1} ms | {again:.0} MiB |"
    );
}
