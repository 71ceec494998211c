//! Calls that settle at once (docs/architecture.md, "Calls that settle at once"): a tool whose
//! executor answers without waiting is run during dispatch, on the thread that drives the run;
//! one that waits runs as a task on the runtime's workers. Both settle with their own values, in
//! the program's order, and count the same.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use crate::common;

use codemode_catalog::ToolSpec;
use codemode_facade::CodeModeResult;
use serde_json::json;

use common::{tool_result, value, Harness, Recording};

/// The threads each tool's answers were computed on, by tool name.
type Threads = Arc<Mutex<HashMap<String, Vec<ThreadId>>>>;

/// `fast` answers at once, `slow` after 5 ms; both answer `{"n": <input.n>}`.
fn harness() -> (Harness, Threads) {
    let threads: Threads = Arc::default();
    let seen = threads.clone();
    let exec = Recording::new(move |call| {
        seen.lock()
            .unwrap()
            .entry(call.tool_name.clone())
            .or_default()
            .push(std::thread::current().id());
        tool_result("ok", json!({"n": call.input["n"]}))
    })
    .with_delay("slow", Duration::from_millis(5));
    let specs = vec![
        ToolSpec::core("fast", "Answers at once."),
        ToolSpec::core("slow", "Answers after 5 ms."),
    ];
    (Harness::new(&json!(true), specs, exec), threads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_answers_at_once_runs_on_the_thread_driving_the_run() {
    let (h, threads) = harness();
    let r = h
        .exec(
            r#"const a = await tools.callValue("fast", {n: 1});
               const b = await tools.callValue("slow", {n: 2});
               const c = await Promise.all([tools.callValue("fast", {n: 3}),
                                            tools.callValue("slow", {n: 4}),
                                            tools.callValue("fast", {n: 5})]);
               return [a, b, c];"#,
        )
        .await;
    assert_eq!(
        value(&r),
        json!([{"n": 1}, {"n": 2}, [{"n": 3}, {"n": 4}, {"n": 5}]])
    );
    let CodeModeResult::Completed { telemetry, .. } = &r else {
        unreachable!()
    };
    assert_eq!(telemetry.call_count, 5);
    let names: Vec<String> = h.calls().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["fast", "slow", "fast", "slow", "fast"]);
    // The test body, and so the exec future, runs on this thread (`block_on`); spawned tasks
    // run on the two workers, never here.
    let here = std::thread::current().id();
    let threads = threads.lock().unwrap();
    assert_eq!(threads["fast"], [here, here, here]);
    assert_eq!(threads["slow"].len(), 2);
    assert!(threads["slow"].iter().all(|t| *t != here));
}
