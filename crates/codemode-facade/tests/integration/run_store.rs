//! Parked runs in a durable run store (docs/snapshot-store.md, "What is portable"): two
//! `CodeMode` fronts on one store stand for two processes (they share the runtime's guest image,
//! as processes sharing a module cache do). A run parked by one is resumed by the other; a live
//! copy the store says ended or moved on is never resumed; a record opened against another
//! catalog or by another scope is refused.

use crate::common;
#[path = "../../../codemode-snapshot/tests/support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use codemode_snapshot::{open, RunStore, StateKeys, StateUrl};
use serde_json::{json, Value};

fn scope() -> RunScope {
    RunScope {
        session_id: Some("s1".into()),
        ..RunScope::default()
    }
}

fn env(tools: &[&str]) -> RunEnv {
    let config = codemode_config::resolve(&json!(true)).config;
    let limits = SearchLimits {
        max_search_limit: config.max_search_limit() as u32,
        search_default_limit: config.search_default_limit() as u32,
    };
    let specs = tools
        .iter()
        .map(|t| ToolSpec::core(*t, "A tool."))
        .collect();
    let catalog = Arc::new(Catalog::build(specs, &limits).unwrap());
    // Every tool echoes `{name, input}` as its details and their JSON text.
    let echo = common::Recording::new(|call| {
        let details = json!({"name": call.tool_name, "input": call.input});
        common::tool_result(&details.to_string(), details)
    });
    RunEnv::new(config, catalog, Arc::new(echo), scope())
}

fn front(store: &Arc<dyn RunStore>) -> CodeMode {
    let keys = StateKeys::new(vec![[5; 32]]);
    CodeMode::with_store(Runtime::global().unwrap(), store.clone(), keys).unwrap()
}

async fn exec(cm: &CodeMode, env: &RunEnv, code: &str) -> CodeModeResult {
    cm.exec(env, &json!({"code": code}), &AbortHandle::new())
        .await
}

async fn wait(cm: &CodeMode, env: &RunEnv, run_id: &str) -> Value {
    cm.wait_with(env, &json!({"runId": run_id}), &AbortHandle::new())
        .await
        .to_json()
}

const TWICE: &str = r#"text("1"); await yield_control("a"); text("2");
const e = await tools.echo({n: 2}); await yield_control("b"); text("3"); return e;"#;

/// The behaviour both durable backends share.
async fn two_fronts_share_runs(store: Arc<dyn RunStore>) {
    let a = front(&store);
    let b = front(&store);
    let env = env(&["echo"]);

    // Parked on A, resumed on B (which never saw it), finished there.
    let parked = exec(&a, &env, TWICE).await;
    let run_id = parked.run_id().unwrap().to_string();
    assert_eq!(a.parked_runs(), 1);
    let again = wait(&b, &env, &run_id).await;
    assert_eq!(again["status"], "waiting", "{again}");
    assert_eq!(again["runId"], json!(run_id));
    assert_eq!(again["output"], json!([{"type": "text", "text": "2"}]));
    assert_eq!(again["telemetry"]["callCount"], 1);
    // A's live copy is stale (B parked the run again): A continues from the stored run.
    let done = wait(&a, &env, &run_id).await;
    assert_eq!(
        done,
        json!({
            "status": "completed",
            "value": {"name": "echo", "input": {"n": 2}},
            "output": [{"type": "text", "text": "3"}],
            "replaySafe": false,
            "telemetry": common::core_telemetry(1, 1)
        })
    );
    // Finished on A: B's copy (parked there after its wait) is dropped, never resumed.
    assert_eq!(b.parked_runs(), 1);
    let gone = wait(&b, &env, &run_id).await;
    assert_eq!(gone["error"], "code mode run is unavailable or expired.");
    assert_eq!(b.parked_runs(), 0);
    assert_eq!(a.parked_runs(), 0);
    assert!(store.list().await.unwrap().is_empty());

    // Another scope is refused with the in-process text; another catalog by the seal.
    let parked = exec(&a, &env, TWICE).await;
    let run_id = parked.run_id().unwrap().to_string();
    let mut stranger = env.clone();
    stranger.scope = RunScope {
        session_id: Some("s2".into()),
        ..RunScope::default()
    };
    let refused = wait(&b, &stranger, &run_id).await;
    assert_eq!(
        refused["error"],
        "code mode run belongs to a different session."
    );
    let other_catalog = self::env(&["echo", "extra"]);
    let refused = wait(&b, &other_catalog, &run_id).await;
    assert_eq!(
        refused["error"],
        format!("stored code mode run {run_id} failed authentication: it was altered, or moved to another run, scope, guest build, catalog or expiry; it is not restored")
    );
    // The refused record is still there for the right caller.
    let resumed = wait(&b, &env, &run_id).await;
    assert_eq!(resumed["status"], "waiting", "{resumed}");
    assert_eq!(store.purge_all().await.unwrap(), 1);
}

#[tokio::test]
async fn dir_store_shares_runs_between_fronts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&StateUrl::Dir(dir.path().join("runs"))).await.unwrap();
    two_fronts_share_runs(store).await;
}

#[tokio::test]
async fn redis_store_shares_runs_between_fronts() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = open(&server.url(0).parse().unwrap()).await.unwrap();
    two_fronts_share_runs(store).await;
}

#[tokio::test]
async fn a_durable_store_needs_keys_and_memory_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&StateUrl::Dir(dir.path().join("runs"))).await.unwrap();
    let refused = CodeMode::with_store(Runtime::global().unwrap(), store, None)
        .err()
        .unwrap();
    assert_eq!(
        refused.to_string(),
        format!("--state dir:{} keeps parked runs outside the process and needs a sealing key: set CODEMODE_STATE_KEY (32 bytes, standard base64) or pass --state-key-file FILE", dir.path().join("runs").display())
    );
    let memory = open(&StateUrl::Memory).await.unwrap();
    let cm = CodeMode::with_store(Runtime::global().unwrap(), memory.clone(), None).unwrap();
    assert!(cm.run_store().is_none());
    let env = env(&["echo"]);
    let parked = exec(&cm, &env, TWICE).await;
    assert_eq!(parked.status(), "waiting");
    assert!(
        memory.list().await.unwrap().is_empty(),
        "memory writes no records"
    );
}

/// A tool that answers after 30 s (a call still running when its process stops).
struct Slow;

impl ToolExecutor for Slow {
    fn execute(&self, _call: ToolCall) -> ToolFuture {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            Ok(json!({"details": "late"}))
        })
    }
}

/// Live copies of runs another front finished are dropped by `reclaim_stale` (and only those);
/// `park_in_flight` parks a run waiting on a slow call at once, and the other front resumes it
/// with the call lost inside the program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_copies_are_reclaimed_and_runs_in_flight_park_on_request() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = open(&server.url(0).parse().unwrap()).await.unwrap();
    let a = Arc::new(front(&store));
    let b = front(&store);
    let env = env(&["echo"]);
    let finished = exec(&a, &env, "await yield_control(); return 1").await;
    let kept = exec(&a, &env, "await yield_control(); return 2").await;
    let done = wait(&b, &env, finished.run_id().unwrap()).await;
    assert_eq!(done["value"], 1);
    assert_eq!(
        a.parked_runs(),
        2,
        "A still holds its copy of the run B finished"
    );
    assert_eq!(a.reclaim_stale().await, 1);
    assert_eq!(a.parked_runs(), 1);
    let done = wait(&a, &env, kept.run_id().unwrap()).await;
    assert_eq!(done["value"], 2);

    let mut slow = self::env(&["echo"]);
    slow.executor = Arc::new(Slow);
    let code = "try { await tools.echo({}); return 'finished'; } catch (e) { return 'caught: ' + e.message; }";
    let running = {
        let (a, slow) = (a.clone(), slow.clone());
        tokio::spawn(async move {
            let input = json!({"code": code, "timeoutMs": 60000});
            a.exec(&slow, &input, &AbortHandle::new()).await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let asked = std::time::Instant::now();
    a.park_in_flight();
    let parked = running.await.unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(parked.status(), "waiting", "{:?}", parked.to_json());
    assert!(a.is_parking_in_flight());
    let run_id = parked.run_id().unwrap().to_string();
    let done = wait(&b, &env, &run_id).await;
    let value = done["value"].as_str().unwrap();
    assert!(
        value.starts_with("caught: tool call \"")
            && value.ends_with("\" was lost: the codemode process running it stopped"),
        "{done}"
    );
}

/// Three fronts on one Redis, each with its own connection (three processes): a run parked on A
/// with a slow call in flight is owned by A; `wait`s on B and C at once follow A and both answer
/// with the run's result once A's call settled; a `wait` with a budget shorter than the call
/// answers `waiting` (the call pending, no output); a later `wait` gets the contract's answer
/// for a finished run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_elsewhere_follow_the_owner_of_a_call_in_flight() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let url = server.url(1);
    let connect = || async {
        let store = codemode_snapshot::backend::redis::RedisRunStore::connect(&url);
        Arc::new(store.await.unwrap()) as Arc<dyn RunStore>
    };
    let (a, b, c) = (
        Arc::new(front(&connect().await)),
        Arc::new(front(&connect().await)),
        Arc::new(front(&connect().await)),
    );
    let mut env = env(&["slow"]);
    let slow = common::Recording::new(|_| common::tool_result("done", json!({"slow": "done"})))
        .with_delay("slow", std::time::Duration::from_millis(2500));
    env.executor = Arc::new(slow);
    // Calls and `wait`s get 300 ms (the exec parks with the call in flight) or 10 s.
    let mut short = env.clone();
    short.config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 300})).config;
    env.config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 10000})).config;
    let code = "text('started'); const r = await tools.slow({}); text('after'); return r;";
    let parked = exec(&a, &short, code).await.to_json();
    assert_eq!(parked["status"], "waiting", "{parked}");
    let run_id = parked["runId"].as_str().unwrap().to_string();

    // A short wait answers `waiting` at the end of its own budget, without touching the run.
    let started = std::time::Instant::now();
    let waiting = wait(&b, &short, &run_id).await;
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    assert_eq!(
        waiting,
        json!({
            "status": "waiting",
            "runId": run_id,
            "reason": "pending_tools",
            "pendingToolCalls": [{"id": "bridge:callValue:1", "method": "callValue"}],
            "replaySafe": false,
            "output": [],
            "telemetry": waiting["telemetry"]
        })
    );
    assert_eq!(waiting["telemetry"]["callCount"], 1);

    let started = std::time::Instant::now();
    let (on_b, on_c) = tokio::join!(wait(&b, &env, &run_id), wait(&c, &env, &run_id));
    let elapsed = started.elapsed();
    let done = json!({
        "status": "completed",
        "value": {"slow": "done"},
        "output": [{"type": "text", "text": "after"}],
        "replaySafe": false,
        "telemetry": common::core_telemetry(1, 1)
    });
    assert_eq!(on_b, done);
    assert_eq!(on_c, done);
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    // A's copy is not resumed again; a later wait anywhere gets the finished run's answer.
    for front in [&a, &b, &c] {
        let late = wait(front, &env, &run_id).await;
        assert_eq!(late["error"], "code mode run is unavailable or expired.");
    }
}

/// A front standing for a process that dies: its calls (and the owner task of a run it parks)
/// run on a tokio runtime of its own, which [`Doomed::kill`] shuts down without waiting, as
/// `kill -9` ends a process: no lease is renewed or dropped, no tool call settles.
struct Doomed {
    front: Arc<CodeMode>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Doomed {
    /// A front with its own connection to the Redis at `url`, made on its own runtime.
    async fn new(url: &str) -> Doomed {
        let url = url.to_string();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let store = runtime.block_on(connect(&url));
            (runtime, front(&store))
        });
        let (runtime, front) = tokio::task::spawn_blocking(move || thread.join().unwrap())
            .await
            .unwrap();
        Doomed {
            front: Arc::new(front),
            runtime: Some(runtime),
        }
    }

    /// `exec` of `code` with `env` on this front's own runtime.
    async fn exec(&mut self, env: &RunEnv, code: &str) -> Value {
        let runtime = self.runtime.take().unwrap();
        let (front, env, code) = (self.front.clone(), env.clone(), code.to_string());
        let thread = std::thread::spawn(move || {
            let input = json!({"code": code, "timeoutMs": 300});
            let result = runtime.block_on(front.exec(&env, &input, &AbortHandle::new()));
            (runtime, result.to_json())
        });
        let (runtime, result) = tokio::task::spawn_blocking(move || thread.join().unwrap())
            .await
            .unwrap();
        self.runtime = Some(runtime);
        result
    }

    fn kill(&mut self) {
        self.runtime.take().unwrap().shutdown_background();
    }
}

/// A connection of its own to the Redis at `url` (one per process).
async fn connect(url: &str) -> Arc<dyn RunStore> {
    let store = codemode_snapshot::backend::redis::RedisRunStore::connect(url);
    Arc::new(store.await.unwrap())
}

/// Every line of `sink` (each with `ts` `"T"`), parsed.
fn trajectory_lines(sink: &codemode_telemetry::MemorySink) -> Vec<Value> {
    sink.lines()
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A trajectory into `sink` with every `ts` `"T"`.
fn fixed_trajectory(sink: &Arc<codemode_telemetry::MemorySink>) -> codemode_telemetry::Trajectory {
    codemode_telemetry::Trajectory::new(sink.clone(), RunScope::default())
        .with_clock(|| "T".to_string())
}

/// An owner that dies mid-call (issue 24: "the trajectory shows it"): the run is restored by the
/// process whose `wait` claims it after the lease lapsed, the call rejects inside the program,
/// and that process's trajectory records the call's `nested_tool_result` (status `error`, the
/// message the program saw) under the `toolCallId` the dead process gave it, between the
/// `wait`'s `tool_call` and `run_resumed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_lost_with_its_owner_is_recorded_by_the_process_that_restores_the_run() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let url = server.url(2);
    let mut a = Doomed::new(&url).await;
    let b = front(&connect(&url).await);
    let mut on_a = env(&["slow"]).with_tool_call_id("call_1");
    on_a.executor = Arc::new(Slow);
    let code = "try { await tools.slow({n: 1}); return 'finished'; } catch (e) { return 'caught: ' + e.message; }";
    let parked = a.exec(&on_a, code).await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    let run_id = parked["runId"].as_str().unwrap().to_string();
    let killed = std::time::Instant::now();
    a.kill();

    let sink = Arc::new(codemode_telemetry::MemorySink::new());
    let mut on_b = env(&["slow"])
        .with_tool_call_id("call_2")
        .with_trajectory(fixed_trajectory(&sink));
    on_b.config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 10000})).config;
    let done = wait(&b, &on_b, &run_id).await;
    let lost = "tool call \"bridge:callValue:1\" was lost: the codemode process running it stopped";
    assert_eq!(
        done,
        json!({
            "status": "completed",
            "value": format!("caught: {lost}"),
            "output": [],
            "replaySafe": false,
            "telemetry": common::core_telemetry(1, 1)
        })
    );
    let waited = killed.elapsed();
    // The lease lapses 5 s after A's last renewal (every 1.25 s): at least 3.75 s after the kill.
    assert!(
        waited >= std::time::Duration::from_millis(3700),
        "{waited:?}"
    );

    let mut lines = trajectory_lines(&sink);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "tool_call",
            "nested_tool_result",
            "run_resumed",
            "tool_result"
        ]
    );
    // From the call's start in A to the restore in B: at least the lease's lapse.
    let duration = lines[1]["durationMs"].as_u64().unwrap();
    assert!((3700..30_000).contains(&duration), "{duration}");
    lines[1]["durationMs"] = json!(0);
    assert_eq!(
        lines[1],
        json!({
            "type": "nested_tool_result",
            "ts": "T",
            "sessionId": "s1",
            "toolCallId": "tool_search_code:call_1:slow:1",
            "parentToolCallId": "call_1",
            "codeModeRunId": run_id,
            "toolId": "openclaw:core:slow",
            "toolName": "slow",
            "method": "callValue",
            "status": "error",
            "durationMs": 0,
            "error": lost
        })
    );
    assert_eq!(
        lines[2],
        json!({"type": "run_resumed", "ts": "T", "sessionId": "s1", "codeModeRunId": run_id,
               "toolCallId": "call_2", "parentToolCallId": "call_1", "settledToolCalls": 1})
    );
}

/// An approval pending in a run whose owner dies is not lost (issue 24: approvals are
/// portable): the process that restores the run asks it again under the same `approvalId` and
/// nested `toolCallId` (the tool never ran, so nothing runs twice); that process then owns the
/// run, so a third one follows it instead of restoring it again; the approval answered there
/// runs the tool once and completes the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pending_in_a_dead_owner_is_asked_again_where_the_run_is_restored() {
    use codemode_facade::pipeline::{ApprovalBroker, ApprovalDecision};
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let url = server.url(3);
    let mut a = Doomed::new(&url).await;
    let (b, c) = (front(&connect(&url).await), front(&connect(&url).await));
    let requiring = |broker: &Arc<ApprovalBroker>, call_id: &str| {
        let tools = env(&["write"]);
        let executor = common::Recording::new(|call| {
            let details = json!({"name": call.tool_name, "input": call.input});
            common::tool_result(&details.to_string(), details)
        });
        let calls = executor.calls.clone();
        let mut env = tools
            .with_policy(common::policy(json!({"approvals": {"require": ["write"]}})))
            .with_approvals(broker.clone())
            .with_tool_call_id(call_id);
        env.executor = Arc::new(executor);
        (env, calls)
    };
    let ttl = std::time::Duration::from_secs(900);
    let broker_a = Arc::new(ApprovalBroker::new(ttl));
    let (on_a, calls_a) = requiring(&broker_a, "call_1");
    let parked = a
        .exec(
            &on_a,
            r#"text("asking"); return await tools.write({path: "x"});"#,
        )
        .await;
    assert_eq!(parked["status"], "waiting", "{parked}");
    let run_id = parked["runId"].as_str().unwrap().to_string();
    let approval_id = parked["pendingApprovals"][0]["approvalId"]
        .as_str()
        .unwrap()
        .to_string();
    let pending = json!([{"approvalId": approval_id,
                          "toolCallId": "tool_search_code:call_1:write:1",
                          "toolId": "openclaw:core:write", "input": {"path": "x"}}]);
    assert_eq!(parked["pendingApprovals"], pending);
    a.kill();

    // B's wait follows the dead owner until its lease lapses, restores the run and asks the
    // approval again; its budget ends before anyone answers.
    let broker_b = Arc::new(ApprovalBroker::new(ttl));
    let sink = Arc::new(codemode_telemetry::MemorySink::new());
    let (on_b, calls_b) = requiring(&broker_b, "call_2");
    let mut on_b = on_b.with_trajectory(fixed_trajectory(&sink));
    on_b.config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 9000})).config;
    let waiting = wait(&b, &on_b, &run_id).await;
    assert_eq!(
        waiting,
        json!({
            "status": "waiting",
            "runId": run_id,
            "reason": "pending_tools",
            "pendingToolCalls": [{"id": "bridge:callValue:1", "method": "callValue"}],
            "pendingApprovals": pending,
            "replaySafe": false,
            "output": [],
            "telemetry": common::core_telemetry(1, 1)
        })
    );
    let asked: Vec<Value> = trajectory_lines(&sink)
        .into_iter()
        .filter(|l| l["type"] == "approval_requested")
        .collect();
    assert_eq!(
        asked,
        [
            json!({"type": "approval_requested", "ts": "T", "sessionId": "s1",
                "approvalId": approval_id, "toolCallId": "tool_search_code:call_1:write:1",
                "parentToolCallId": "call_1", "codeModeRunId": run_id,
                "toolId": "openclaw:core:write", "toolName": "write", "input": {"path": "x"}})
        ]
    );

    // B owns the run now: C follows it (answers `waiting` at the end of its budget) and holds
    // no copy.
    let broker_c = Arc::new(ApprovalBroker::new(ttl));
    let (mut on_c, calls_c) = requiring(&broker_c, "call_3");
    on_c.config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 300})).config;
    let followed = wait(&c, &on_c, &run_id).await;
    assert_eq!(followed["status"], "waiting", "{followed}");
    assert_eq!(c.parked_runs(), 0);
    assert!(broker_c.pending().is_empty());

    broker_b
        .answer(&approval_id, ApprovalDecision::allow())
        .unwrap();
    let done = wait(&b, &on_b.clone().with_tool_call_id("call_4"), &run_id).await;
    assert_eq!(
        done,
        json!({
            "status": "completed",
            "value": {"name": "write", "input": {"path": "x"}},
            "output": [],
            "replaySafe": false,
            "telemetry": common::core_telemetry(1, 1)
        })
    );
    assert!(calls_a.lock().unwrap().is_empty());
    assert!(calls_c.lock().unwrap().is_empty());
    assert_eq!(
        *calls_b.lock().unwrap(),
        vec![("write".to_string(), json!({"path": "x"}))]
    );
}
