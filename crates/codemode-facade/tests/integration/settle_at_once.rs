//! Calls that settle at once (docs/architecture.md, "Calls that settle at once" and "Legs that
//! stay on their thread"): a tool whose executor answers without waiting is run during
//! dispatch: by the thread that drives the run for requests of the first leg, by the leg thread
//! for those made in a delivery leg, which then delivers them itself; one that waits runs as a
//! task on the runtime's workers. Both settle with their own values, in the program's order,
//! count the same, and meet every limit with the same result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use crate::common;

use codemode_catalog::ToolSpec;
use codemode_facade::CodeModeResult;
use codemode_runtime::LEG_THREAD_NAME;
use serde_json::{json, Value};

use common::{summary, tool_result, value, Harness, Recording};

/// The threads each tool's answers were computed on, by tool name: (id, name).
type Threads = Arc<Mutex<HashMap<String, Vec<(ThreadId, String)>>>>;

/// `fast` answers at once, `slow` after 5 ms, `later` after 1 ms; all answer
/// `{"n": <input.n>}`.
fn harness(config: Value) -> (Harness, Threads) {
    let threads: Threads = Arc::default();
    let seen = threads.clone();
    let exec = Recording::new(move |call| {
        let thread = std::thread::current();
        seen.lock()
            .unwrap()
            .entry(call.tool_name.clone())
            .or_default()
            .push((thread.id(), thread.name().unwrap_or_default().to_string()));
        tool_result("ok", json!({"n": call.input["n"]}))
    })
    .with_delay("slow", Duration::from_millis(5))
    .with_delay("later", Duration::from_millis(1));
    let specs = vec![
        ToolSpec::core("fast", "Answers at once."),
        ToolSpec::core("slow", "Answers after 5 ms."),
        ToolSpec::core("later", "Answers after 1 ms."),
    ];
    (Harness::new(&config, specs, exec), threads)
}

fn call_count(r: &CodeModeResult) -> u64 {
    match r {
        CodeModeResult::Completed { telemetry, .. }
        | CodeModeResult::Waiting { telemetry, .. }
        | CodeModeResult::Failed { telemetry, .. } => telemetry.call_count,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_answers_at_once_runs_where_the_run_is() {
    let (h, threads) = harness(json!(true));
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
    assert_eq!(call_count(&r), 5);
    let names: Vec<String> = h.calls().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["fast", "slow", "fast", "slow", "fast"]);
    // The test body, and so the exec future, runs on this thread (`block_on`): the first leg's
    // call is dispatched here. The calls made in the leg that delivered `b` are dispatched by
    // that leg's thread. Spawned tasks run on the two workers.
    let here = std::thread::current().id();
    let threads = threads.lock().unwrap();
    let fast = &threads["fast"];
    assert_eq!(fast[0].0, here);
    assert_eq!(fast[1].1, LEG_THREAD_NAME);
    assert_eq!(fast[2].0, fast[1].0, "one leg dispatched both");
    let slow = &threads["slow"];
    assert_eq!(slow.len(), 2);
    assert!(slow
        .iter()
        .all(|(id, name)| *id != here && name != LEG_THREAD_NAME));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_that_settle_at_once_stay_on_one_leg_thread() {
    let (h, threads) = harness(json!(true));
    let r = h
        .exec(
            r#"let sum = 0;
               for (let i = 1; i <= 10; i++) sum += (await tools.callValue("fast", {n: i})).n;
               return sum;"#,
        )
        .await;
    assert_eq!(value(&r), json!(55));
    assert_eq!(call_count(&r), 10);
    let inputs: Vec<Value> = h.calls().into_iter().map(|(_, input)| input).collect();
    assert_eq!(
        inputs,
        (1..=10).map(|n| json!({"n": n})).collect::<Vec<_>>()
    );
    let here = std::thread::current().id();
    let threads = threads.lock().unwrap();
    let fast = &threads["fast"];
    assert_eq!(fast.len(), 10);
    assert_eq!(fast[0].0, here);
    // Calls 2 to 10 were made, answered and delivered by the thread that delivered call 1.
    assert_eq!(fast[1].1, LEG_THREAD_NAME);
    assert!(fast[1..].iter().all(|t| t.0 == fast[1].0), "{fast:?}");
}

/// `program` run twice: calling `fast` (settled on the leg thread) and, with every `fast`
/// replaced by `later`, calling a tool whose every call is a task. The two results' summaries.
async fn both_paths(config: Value, program: &str) -> (Value, Value, u64, u64) {
    let (h, _) = harness(config.clone());
    let on_leg = h.exec(program).await;
    let (h, _) = harness(config);
    let as_tasks = h.exec(&program.replace("\"fast\"", "\"later\"")).await;
    (
        summary(&on_leg),
        summary(&as_tasks),
        call_count(&on_leg),
        call_count(&as_tasks),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_past_its_limit_between_calls_fails_as_it_does_between_tasks() {
    let (on_leg, as_tasks, calls_on_leg, calls_as_tasks) = both_paths(
        json!({"enabled": true, "maxOutputBytes": 1024}),
        r#"for (let i = 0; i < 100; i++) {
             console.log("x".repeat(50));
             await tools.callValue("fast", {n: i});
           }
           return "done";"#,
    )
    .await;
    assert_eq!(on_leg, as_tasks);
    assert_eq!(
        on_leg,
        json!({"status": "failed", "code": "output_limit_exceeded", "output": [],
               "error": "code mode output limit exceeded. The result is 1,065 bytes; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`)."})
    );
    assert_eq!((calls_on_leg, calls_as_tasks), (13, 13));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_calls_past_their_limit_fail_as_they_do_between_tasks() {
    let (on_leg, as_tasks, calls_on_leg, calls_as_tasks) = both_paths(
        json!({"enabled": true, "maxPendingToolCalls": 2}),
        r#"const a = tools.callValue("slow", {n: 1});
           await tools.callValue("fast", {n: 2});
           const b = tools.callValue("slow", {n: 3});
           const c = tools.callValue("slow", {n: 4});
           return await Promise.all([a, b, c]);"#,
    )
    .await;
    assert_eq!(on_leg, as_tasks);
    assert_eq!(
        on_leg,
        json!({"status": "failed", "code": "invalid_input", "output": [],
               "error": "too many pending code mode tool calls. The program had 3 tool calls pending at once; maxPendingToolCalls is 2 (tools.codeMode.maxPendingToolCalls). Start them in batches and await each batch before the next."})
    );
    assert_eq!((calls_on_leg, calls_as_tasks), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_calls_that_settle_at_once_park_at_the_deadline() {
    let (h, _) = harness(json!({"enabled": true, "timeoutMs": 600}));
    // The deadline holds on the leg thread: without it this never ends (10 s is only a guard).
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        h.exec(r#"for (let i = 0; ; i++) await tools.callValue("fast", {n: i});"#),
    )
    .await
    .expect("the run parks at its deadline");
    let CodeModeResult::Waiting { run_id, .. } = &r else {
        panic!("expected waiting, got {}", summary(&r));
    };
    assert!(run_id.starts_with("cm_"));
    assert!(call_count(&r) > 10, "{}", call_count(&r));
}
