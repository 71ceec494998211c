//! The host wiring of `RunEnv` end to end over the real runtime (docs/contract/host.md#h1 to
//! #h4, #h9): policy, hooks (nested and outer), approvals with `pendingApprovals`, and the
//! trajectory of a run checked event by event. Exact values.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::RunScope;
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_config::CodeModeConfig;
use codemode_facade::pipeline::{
    AfterDecision, AfterToolCall, ApprovalBroker, ApprovalDecision, BeforeToolCall, FixedApprover,
    HookChain, HookDecision, HookFuture, ToolHook,
};
use codemode_facade::{CodeMode, CodeModeResult, ErrorCode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use codemode_telemetry::{MemorySink, Trajectory};
use serde_json::{json, Value};

use common::{ops_scope as scope, policy, tool_result, Calls, Recording};

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// The calls of the harness's tools.
struct Tools(Calls);

impl Tools {
    fn calls(&self) -> Vec<(String, Value)> {
        self.0.lock().unwrap().clone()
    }
}

struct Harness {
    cm: CodeMode,
    env: RunEnv,
    tools: Arc<Tools>,
}

const TOOLS: [&str; 6] = ["read", "write", "deploy", "fast", "slow", "secret_tool"];

fn harness(timeout_ms: u64, delays: &[(&str, u64)]) -> Harness {
    harness_from(json!({"enabled": true, "timeoutMs": timeout_ms}), delays)
}

fn harness_from(code_mode: Value, delays: &[(&str, u64)]) -> Harness {
    let config: CodeModeConfig = codemode_config::resolve(&code_mode).config;
    let specs: Vec<ToolSpec> = TOOLS
        .iter()
        .map(|name| ToolSpec::core(*name, "A tool."))
        .collect();
    let limits = SearchLimits {
        max_search_limit: config.max_search_limit() as u32,
        search_default_limit: config.search_default_limit() as u32,
    };
    let catalog = Arc::new(Catalog::build(specs, &limits).unwrap());
    // Returns `{content: [{type: "text", text: "ok"}], details: {name, input}}` after the
    // tool's delay.
    let exec = delays.iter().fold(
        Recording::new(|call| {
            tool_result("ok", json!({"name": call.tool_name, "input": call.input}))
        }),
        |exec, (name, ms)| exec.with_delay(name, Duration::from_millis(*ms)),
    );
    let tools = Arc::new(Tools(exec.calls.clone()));
    let env = RunEnv::new(config, catalog, Arc::new(exec), scope()).with_tool_call_id("call_1");
    Harness {
        cm: CodeMode::new(Runtime::global().unwrap()),
        env,
        tools,
    }
}

impl Harness {
    async fn exec(&self, code: &str) -> CodeModeResult {
        self.exec_input(&json!({ "code": code })).await
    }

    async fn exec_input(&self, input: &Value) -> CodeModeResult {
        self.cm.exec(&self.env, input, &AbortHandle::new()).await
    }

    async fn wait(&self, call_id: &str, run_id: &str) -> CodeModeResult {
        let env = self.env.clone().with_tool_call_id(call_id);
        self.cm
            .wait_with(&env, &json!({ "runId": run_id }), &AbortHandle::new())
            .await
    }
}

fn value(r: &CodeModeResult) -> &Value {
    match r {
        CodeModeResult::Completed { value, .. } => value,
        other => panic!("expected completed: {other:?}"),
    }
}

fn telemetry(calls: u64) -> Value {
    json!({"catalogSize": 6, "sources": {"openclaw": 6, "mcp": 0, "client": 0},
           "searchCount": 0, "describeCount": 0, "callCount": calls,
           "visibleTools": ["exec", "wait"]})
}

/// A Rust hook: blocks `deploy`, rewrites `read`'s input, and for the outer `exec` replaces
/// `code` (and `command`, when `mismatch`) from the rewrite table.
struct Guard {
    exec_rewrite: Option<Value>,
    block_exec: bool,
}

impl ToolHook for Guard {
    fn name(&self) -> &str {
        "guard"
    }

    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        let call = &event.call;
        let answer = match (call.tool_name.as_str(), call.tool_id.as_deref()) {
            ("deploy", Some(_)) => HookDecision::block("deploys are frozen"),
            ("read", Some(_)) => HookDecision::allow().with_input(json!({"path": "rewritten"})),
            ("exec", None) if self.block_exec => HookDecision::block("no code today"),
            ("exec", None) => match &self.exec_rewrite {
                Some(input) => HookDecision::allow().with_input(input.clone()),
                None => HookDecision::allow(),
            },
            _ => HookDecision::allow(),
        };
        Box::pin(async move { Ok(answer) })
    }
}

fn guard(exec_rewrite: Option<Value>, block_exec: bool) -> HookChain {
    HookChain::new().with(Arc::new(Guard {
        exec_rewrite,
        block_exec,
    }))
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_hook_blocks_one_tool_and_rewrites_another_inside_an_exec() {
    let mut h = harness(5000, &[]);
    h.env = h.env.clone().with_hooks(guard(None, false));
    let r = h
        .exec(
            r#"let blocked;
try { await tools.deploy({ env: "prod" }); } catch (e) { blocked = e.message; }
const read = await tools.read({ path: "a" });
return { blocked, read };"#,
        )
        .await;
    assert_eq!(
        value(&r),
        &json!({
            "blocked": "Tool \"openclaw:core:deploy\" was blocked before execution: deploys are frozen",
            "read": {"name": "read", "input": {"path": "rewritten"}},
        })
    );
    // The blocked call never reached the executor; the rewritten input did.
    assert_eq!(
        h.tools.calls(),
        vec![("read".to_string(), json!({"path": "rewritten"}))]
    );
    assert_eq!(r.telemetry().call_count, 2);
}

#[tokio::test]
async fn an_outer_exec_hook_rewrites_code_and_the_argument_checks_apply() {
    let mut h = harness(5000, &[]);
    h.env = h
        .env
        .clone()
        .with_hooks(guard(Some(json!({"code": "return 40 + 2;"})), false));
    let r = h.exec("return 1;").await;
    assert_eq!(
        r.to_json(),
        json!({"status": "completed", "value": 42, "output": [], "replaySafe": false,
               "telemetry": telemetry(0)})
    );

    // Rewriting code to disagree with command fails rule 1 of docs/contract/surface.md#s2-2.
    h.env = h.env.clone().with_hooks(guard(
        Some(json!({"code": "return 2;", "command": "return 3;"})),
        false,
    ));
    let r = h.exec("return 1;").await;
    assert_eq!(
        r.to_json(),
        json!({"status": "failed", "error": "code and command must match when both are provided.",
               "code": "invalid_input", "output": [], "replaySafe": false,
               "telemetry": telemetry(0)})
    );

    // A block is a failed/invalid_input result with the block text; no VM runs.
    h.env = h.env.clone().with_hooks(guard(None, true));
    let r = h.exec("return 1;").await;
    assert_eq!(
        r.to_json(),
        json!({"status": "failed",
               "error": "Tool \"exec\" was blocked before execution: no code today",
               "code": "invalid_input", "output": [], "replaySafe": false,
               "telemetry": telemetry(0)})
    );
}

// ---------------------------------------------------------------------------------------------
// Approvals
// ---------------------------------------------------------------------------------------------

fn requiring_writes(h: &mut Harness, broker: Arc<ApprovalBroker>) {
    h.env = h
        .env
        .clone()
        .with_policy(policy(json!({"approvals": {"require": ["write"]}})))
        .with_approvals(broker);
}

/// Polls the broker until `n` approvals are outstanding.
async fn outstanding(broker: &ApprovalBroker, n: usize) -> Vec<String> {
    for _ in 0..400 {
        let pending = broker.pending();
        if pending.len() == n {
            return pending.into_iter().map(|r| r.approval_id).collect();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "expected {n} outstanding approvals, got {:?}",
        broker.pending()
    );
}

#[tokio::test]
async fn an_approval_granted_after_the_run_parked_completes_it_on_wait() {
    let mut h = harness(200, &[]);
    let broker = Arc::new(ApprovalBroker::new(Duration::from_secs(60)));
    requiring_writes(&mut h, broker.clone());
    let r = h
        .exec(r#"text("asking"); return await tools.write({ path: "x" });"#)
        .await;
    let run_id = r.run_id().expect("waiting").to_string();
    let ids = outstanding(&broker, 1).await;
    let waiting = |output: Value| {
        json!({"status": "waiting", "runId": run_id, "reason": "pending_tools",
               "pendingToolCalls": [{"id": "bridge:callValue:1", "method": "callValue"}],
               "pendingApprovals": [{"approvalId": ids[0],
                                     "toolCallId": "tool_search_code:call_1:write:1",
                                     "toolId": "openclaw:core:write", "input": {"path": "x"}}],
               "replaySafe": false, "output": output, "telemetry": telemetry(1)})
    };
    assert_eq!(
        r.to_json(),
        waiting(json!([{"type": "text", "text": "asking"}]))
    );
    // A wait while the approval is still outstanding lists it again (docs/contract/host.md#h9).
    let again = h.wait("call_2", &run_id).await;
    assert_eq!(again.to_json(), waiting(json!([])));
    assert!(h.tools.calls().is_empty());

    broker.answer(&ids[0], ApprovalDecision::allow()).unwrap();
    let done = h.wait("call_3", &run_id).await;
    assert_eq!(
        done.to_json(),
        json!({"status": "completed", "value": {"name": "write", "input": {"path": "x"}},
               "output": [], "replaySafe": false, "telemetry": telemetry(1)})
    );
    assert_eq!(
        h.tools.calls(),
        vec![("write".to_string(), json!({"path": "x"}))]
    );
    assert!(broker.pending().is_empty());
}

/// A program that calls `write` and returns `"ran"`, or the message it was rejected with.
const TRY_WRITE: &str =
    r#"try { await tools.write({ path: "x" }); return "ran"; } catch (e) { return e.message; }"#;

/// The run of [`TRY_WRITE`] ended in `result` with `write` not approved for `reason`: the tool
/// never ran and no approval is left pending.
fn assert_not_approved(
    h: &Harness,
    broker: &ApprovalBroker,
    result: &CodeModeResult,
    reason: &str,
) {
    assert_eq!(
        value(result),
        &json!(format!(
            "Tool \"openclaw:core:write\" was not approved: {reason}"
        ))
    );
    assert!(h.tools.calls().is_empty());
    assert!(broker.pending().is_empty());
}

#[tokio::test]
async fn a_denied_approval_rejects_in_the_guest_and_the_tool_never_runs() {
    let mut h = harness(5000, &[]);
    let broker = Arc::new(ApprovalBroker::with_delegate(
        Duration::from_secs(60),
        Arc::new(FixedApprover(ApprovalDecision::deny())),
    ));
    requiring_writes(&mut h, broker.clone());
    let r = h.exec(TRY_WRITE).await;
    assert_not_approved(&h, &broker, &r, "denied");
}

#[tokio::test]
async fn an_approval_outliving_its_ttl_is_denied() {
    let mut h = harness(100, &[]);
    let broker = Arc::new(ApprovalBroker::new(Duration::from_millis(300)));
    requiring_writes(&mut h, broker.clone());
    let r = h.exec(TRY_WRITE).await;
    let run_id = r.run_id().expect("waiting").to_string();
    let CodeModeResult::Waiting {
        pending_approvals, ..
    } = &r
    else {
        unreachable!()
    };
    assert_eq!(pending_approvals.len(), 1);
    let mut last = h.wait("call_2", &run_id).await;
    for n in 3..20 {
        if last.status() != "waiting" {
            break;
        }
        last = h.wait(&format!("call_{n}"), &run_id).await;
    }
    assert_not_approved(&h, &broker, &last, "approval expired");
}

#[tokio::test]
async fn a_denied_tool_called_by_a_guessed_id_is_an_unknown_tool() {
    let mut h = harness(5000, &[]);
    h.env = h
        .env
        .clone()
        .with_policy(policy(json!({"deny": ["secret_tool"]})));
    let r = h
        .exec(
            r#"const out = [];
for (const id of ["openclaw:core:secret_tool", "secret_tool"]) {
  try { await tools.call(id, {}); out.push("ran"); } catch (e) { out.push(e.message); }
}
return out;"#,
        )
        .await;
    let unknown = "Unknown tool id: openclaw:core:secret_tool. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";
    assert_eq!(value(&r), &json!([unknown, unknown]));
    assert!(h.tools.calls().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Trajectory
// ---------------------------------------------------------------------------------------------

/// A trajectory into `sink` with a clock ticking `T0`, `T1`, … so lines compare exactly.
fn ticking(sink: Arc<MemorySink>) -> Trajectory {
    let tick = Arc::new(AtomicU64::new(0));
    Trajectory::new(sink, RunScope::default())
        .with_clock(move || format!("T{}", tick.fetch_add(1, Ordering::Relaxed)))
}

/// Records `h`'s runs into a new [`MemorySink`] through a [`ticking`] trajectory; the sink.
fn record_trajectory(h: &mut Harness) -> Arc<MemorySink> {
    let sink = Arc::new(MemorySink::new());
    h.env = h.env.clone().with_trajectory(ticking(sink.clone()));
    sink
}

/// The type of each event `sink` holds, in order.
fn event_types(sink: &MemorySink) -> Vec<&'static str> {
    sink.events().iter().map(|e| e.kind().type_name()).collect()
}

/// The events as JSON, with `durationMs` and `snapshotBytes` (wall-clock and size dependent)
/// checked to be numbers and replaced by 0, and the code-mode run id by `cm_RUN`.
fn normalised(sink: &MemorySink, run_id: &str) -> Vec<Value> {
    sink.events()
        .iter()
        .map(|e| {
            let mut v = e.to_json();
            let map = v.as_object_mut().unwrap();
            for key in ["durationMs", "snapshotBytes"] {
                if let Some(n) = map.get_mut(key) {
                    assert!(n.is_u64(), "{key} is a number: {n}");
                    *n = json!(0);
                }
            }
            let text = serde_json::to_string(&v).unwrap().replace(run_id, "cm_RUN");
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn the_trajectory_of_a_parallel_run_that_parks_and_resumes_event_by_event() {
    let mut h = harness(500, &[("fast", 20), ("slow", 700)]);
    let sink = record_trajectory(&mut h);
    let code = r#"const long = "x".repeat(10000);
const [a, b] = await Promise.all([tools.fast({ token: "s3cret", note: long }), tools.slow({})]);
return { fast: a.input, slow: b.name };"#;
    let r = h.exec(code).await;
    let run_id = r.run_id().expect("waiting").to_string();
    let done = h.wait("call_2", &run_id).await;
    // The model gets the values as they are; only the trajectory redacts.
    assert_eq!(
        value(&done),
        &json!({"fast": {"token": "s3cret", "note": "x".repeat(10000)}, "slow": "slow"})
    );

    let cut = format!("{}…(5904 more)", "x".repeat(4096));
    let fast_input = json!({"token": "[redacted]", "note": cut});
    let scope = json!({"agentId": "ops", "sessionId": "session-1",
                       "sessionKey": "agent:ops:main", "runId": "run-1"});
    let line = |ts: u64, ty: &str, fields: Value| {
        let mut out = json!({"type": ty, "ts": format!("T{ts}")});
        let map = out.as_object_mut().unwrap();
        map.extend(scope.as_object().unwrap().clone());
        map.extend(fields.as_object().unwrap().clone());
        out
    };
    let fast_id = "tool_search_code:call_1:fast:1";
    let slow_id = "tool_search_code:call_1:slow:2";
    let nested = |id: &str, name: &str, input: Value| {
        json!({"toolCallId": id, "parentToolCallId": "call_1", "toolId": format!("openclaw:core:{name}"),
               "toolName": name, "method": "callValue", "input": input})
    };
    let nested_ok = |id: &str, name: &str, input: Value| {
        json!({"toolCallId": id, "parentToolCallId": "call_1", "toolId": format!("openclaw:core:{name}"),
               "toolName": name, "method": "callValue", "status": "ok", "durationMs": 0,
               "result": {"content": [{"type": "text", "text": "ok"}],
                          "details": {"name": name, "input": input}}})
    };
    let want = vec![
        line(
            0,
            "tool_call",
            json!({"toolCallId": "call_1", "toolName": "exec",
            "toolKind": "code_mode_exec", "toolInputKind": "javascript", "input": {"code": code.replace("\"s3cret\"", "\"[redacted]\"")}}),
        ),
        line(
            1,
            "nested_tool_call",
            nested(fast_id, "fast", fast_input.clone()),
        ),
        line(2, "nested_tool_call", nested(slow_id, "slow", json!({}))),
        line(
            3,
            "nested_tool_result",
            nested_ok(fast_id, "fast", fast_input.clone()),
        ),
        line(
            4,
            "run_parked",
            json!({"codeModeRunId": "cm_RUN", "toolCallId": "call_1",
            "parentToolCallId": "call_1", "reason": "pending_tools", "pendingToolCalls": 1,
            "snapshotBytes": 0}),
        ),
        line(
            5,
            "tool_result",
            json!({"toolCallId": "call_1", "toolName": "exec",
            "toolKind": "code_mode_exec", "toolInputKind": "javascript", "status": "waiting",
            "codeModeRunId": "cm_RUN", "durationMs": 0,
            "result": {"status": "waiting", "runId": "cm_RUN", "reason": "pending_tools",
                       "pendingToolCalls": [{"id": "bridge:callValue:2", "method": "callValue"}],
                       "replaySafe": false, "output": [], "telemetry": telemetry(2)}}),
        ),
        line(
            6,
            "tool_call",
            json!({"toolCallId": "call_2", "toolName": "wait",
            "toolKind": "code_mode_wait", "input": {"runId": "cm_RUN"}}),
        ),
        line(
            7,
            "nested_tool_result",
            nested_ok(slow_id, "slow", json!({})),
        ),
        line(
            8,
            "run_resumed",
            json!({"codeModeRunId": "cm_RUN", "toolCallId": "call_2",
            "parentToolCallId": "call_1", "settledToolCalls": 1}),
        ),
        line(
            9,
            "tool_result",
            json!({"toolCallId": "call_2", "toolName": "wait",
            "toolKind": "code_mode_wait", "status": "completed", "durationMs": 0,
            "result": {"status": "completed", "value": {"fast": fast_input, "slow": "slow"},
                       "output": [], "replaySafe": false, "telemetry": telemetry(2)}}),
        ),
    ];
    let got = normalised(&sink, &run_id);
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "event {i}");
    }
}

#[tokio::test]
async fn approvals_and_blocks_have_their_trajectory_statuses_and_session_end_expires_runs() {
    let mut h = harness(150, &[("slow", 5000)]);
    let sink = Arc::new(MemorySink::new());
    let broker = Arc::new(ApprovalBroker::with_delegate(
        Duration::from_secs(60),
        Arc::new(FixedApprover(ApprovalDecision::deny_because("not today"))),
    ));
    h.env = h
        .env
        .clone()
        .with_policy(policy(
            json!({"deny": ["secret_tool"], "approvals": {"require": ["write"]}}),
        ))
        .with_hooks(guard(None, false))
        .with_approvals(broker)
        .with_trajectory(ticking(sink.clone()));
    let r = h
        .exec(
            r#"for (const id of ["secret_tool", "deploy", "write"]) {
  try { await tools.call(id, {}); } catch (e) {}
}
return await tools.slow({});"#,
        )
        .await;
    let run_id = r.run_id().expect("waiting").to_string();
    assert_eq!(h.cm.end_session(&scope()), 1);
    let events = normalised(&sink, &run_id);
    let summary: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut keep = serde_json::Map::new();
            for key in [
                "type",
                "toolCallId",
                "status",
                "decision",
                "reason",
                "error",
            ] {
                if let Some(v) = e.get(key) {
                    keep.insert(key.into(), v.clone());
                }
            }
            Value::Object(keep)
        })
        .collect();
    let approval_id = events
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .map(|e| e["approvalId"].clone())
        .unwrap();
    assert!(approval_id.as_str().unwrap().starts_with("approval_"));
    let unknown = "Unknown tool id: openclaw:core:secret_tool. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";
    assert_eq!(
        summary,
        vec![
            json!({"type": "tool_call", "toolCallId": "call_1"}),
            json!({"type": "nested_tool_call", "toolCallId": "tool_search_code:call_1:secret_tool:1"}),
            json!({"type": "nested_tool_result", "toolCallId": "tool_search_code:call_1:secret_tool:1",
                   "status": "blocked", "error": unknown}),
            json!({"type": "nested_tool_call", "toolCallId": "tool_search_code:call_1:deploy:2"}),
            json!({"type": "nested_tool_result", "toolCallId": "tool_search_code:call_1:deploy:2",
                   "status": "blocked",
                   "error": "Tool \"openclaw:core:deploy\" was blocked before execution: deploys are frozen"}),
            json!({"type": "nested_tool_call", "toolCallId": "tool_search_code:call_1:write:3"}),
            json!({"type": "approval_requested", "toolCallId": "tool_search_code:call_1:write:3"}),
            json!({"type": "approval_resolved", "toolCallId": "tool_search_code:call_1:write:3",
                   "decision": "deny", "reason": "not today"}),
            json!({"type": "nested_tool_result", "toolCallId": "tool_search_code:call_1:write:3",
                   "status": "denied",
                   "error": "Tool \"openclaw:core:write\" was not approved: not today"}),
            json!({"type": "nested_tool_call", "toolCallId": "tool_search_code:call_1:slow:4"}),
            json!({"type": "run_parked", "toolCallId": "call_1", "reason": "pending_tools"}),
            json!({"type": "tool_result", "toolCallId": "call_1", "status": "waiting"}),
            json!({"type": "run_expired", "reason": "session ended"}),
        ]
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "run_expired", "ts": "T12", "agentId": "ops", "sessionId": "session-1",
                "sessionKey": "agent:ops:main", "runId": "run-1", "codeModeRunId": "cm_RUN",
                "parentToolCallId": "call_1", "reason": "session ended"})
    );
}

#[tokio::test]
async fn an_aborted_run_records_run_aborted() {
    let mut h = harness(5000, &[("slow", 5000)]);
    let sink = record_trajectory(&mut h);
    let abort = abort_after(200);
    let r =
        h.cm.exec(
            &h.env,
            &json!({"code": "return await tools.slow({});"}),
            &abort,
        )
        .await;
    assert_eq!(r.status(), "failed");
    assert_eq!(
        event_types(&sink),
        [
            "tool_call",
            "nested_tool_call",
            "run_aborted",
            "tool_result"
        ]
    );
    let aborted = sink.events()[2].to_json();
    assert_eq!(aborted["parentToolCallId"], json!("call_1"));
    assert!(aborted.get("codeModeRunId").is_none());
}

#[tokio::test]
async fn a_parked_run_dropped_after_its_ttl_records_its_timed_out_call_and_run_expired() {
    let mut h = harness_from(
        json!({"enabled": true, "timeoutMs": 100, "snapshotTtlSeconds": 1}),
        &[("slow", 5000)],
    );
    let sink = record_trajectory(&mut h);
    let r = h.exec("return await tools.slow({});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    // The next call purges the expired run first; the wait then finds nothing.
    let gone =
        h.cm.wait(&scope(), &json!({ "runId": run_id }), &AbortHandle::new())
            .await;
    assert_eq!(gone.status(), "failed");
    // The dispatcher's timeout (the snapshot TTL) fired first: status `timeout`.
    assert_eq!(
        event_types(&sink),
        [
            "tool_call",
            "nested_tool_call",
            "run_parked",
            "tool_result",
            "nested_tool_result",
            "run_expired"
        ]
    );
    let timed_out = sink.events()[4].to_json();
    assert_eq!(timed_out["status"], json!("timeout"));
    assert_eq!(
        timed_out["error"],
        json!("Tool \"openclaw:core:slow\" did not finish within 1000 ms.")
    );
    let last = sink.events().last().unwrap().to_json();
    assert_eq!(
        last,
        json!({"type": "run_expired", "ts": "T5", "agentId": "ops", "sessionId": "session-1",
               "sessionKey": "agent:ops:main", "runId": "run-1", "codeModeRunId": run_id,
               "parentToolCallId": "call_1", "reason": "snapshot TTL"})
    );
}

// ---------------------------------------------------------------------------------------------
// Abort during the outer hooks, withheld waiting results, generated call ids
// ---------------------------------------------------------------------------------------------

/// A hook for the outer calls only: `before` never answers (`Pending`) or asks (`Ask`); `after`
/// fails (`FailAfter`).
enum Outer {
    Pending,
    Ask,
    FailAfter,
}

impl ToolHook for Outer {
    fn name(&self) -> &str {
        "outer"
    }

    fn applies_to(&self, name: &str, id: Option<&str>) -> bool {
        id.is_none() && (name == "exec" || name == "wait")
    }

    fn before(&self, _event: &BeforeToolCall) -> HookFuture<HookDecision> {
        match self {
            Outer::Pending => Box::pin(std::future::pending()),
            Outer::Ask => Box::pin(async { Ok(HookDecision::ask(Some("outer".into()))) }),
            Outer::FailAfter => Box::pin(async { Ok(HookDecision::allow()) }),
        }
    }

    fn after(&self, _event: &AfterToolCall) -> HookFuture<AfterDecision> {
        match self {
            Outer::FailAfter => Box::pin(async { Err("the redactor is down".to_string()) }),
            _ => Box::pin(async { Ok(AfterDecision::keep()) }),
        }
    }
}

fn abort_after(ms: u64) -> AbortHandle {
    let abort = AbortHandle::new();
    let fire = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        fire.abort();
    });
    abort
}

fn assert_aborted(r: &CodeModeResult) {
    match r {
        CodeModeResult::Failed { error, code, .. } => {
            assert_eq!(error, "code mode execution aborted");
            assert_eq!(*code, Some(ErrorCode::Aborted));
        }
        other => panic!("expected the aborted result: {other:?}"),
    }
}

#[tokio::test]
async fn an_abort_ends_an_exec_whose_outer_hook_never_answers() {
    let mut h = harness(5000, &[]);
    h.env = h
        .env
        .clone()
        .with_hooks(HookChain::new().with(Arc::new(Outer::Pending)));
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        h.cm.exec(&h.env, &json!({"code": "return 1;"}), &abort_after(50)),
    )
    .await
    .expect("the abort ends the exec");
    assert_aborted(&r);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(h.tools.calls().is_empty());

    // The same for `wait_with`.
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        h.cm.wait_with(&h.env, &json!({"runId": "cm_x"}), &abort_after(50)),
    )
    .await
    .expect("the abort ends the wait");
    assert_aborted(&r);
}

#[tokio::test]
async fn an_abort_ends_an_exec_waiting_on_an_outer_approval_and_withdraws_it() {
    let mut h = harness(5000, &[]);
    let broker = Arc::new(ApprovalBroker::new(Duration::from_secs(900)));
    h.env = h
        .env
        .clone()
        .with_hooks(HookChain::new().with(Arc::new(Outer::Ask)))
        .with_approvals(broker.clone());
    let abort = abort_after(50);
    let code = json!({"code": "return 1;"});
    let exec = h.cm.exec(&h.env, &code, &abort);
    let r = tokio::time::timeout(Duration::from_secs(10), exec)
        .await
        .expect("the abort ends the exec");
    assert_aborted(&r);
    assert!(broker.pending().is_empty(), "the approval is withdrawn");
}

#[tokio::test]
async fn a_failing_after_hook_on_a_waiting_result_drops_the_parked_run() {
    let mut h = harness(100, &[("slow", 5000)]);
    let sink = Arc::new(MemorySink::new());
    h.env = h
        .env
        .clone()
        .with_hooks(HookChain::new().with(Arc::new(Outer::FailAfter)))
        .with_trajectory(ticking(sink.clone()));
    let r = h.exec("return await tools.slow({});").await;
    match &r {
        CodeModeResult::Failed { error, code, .. } => {
            assert_eq!(
                error,
                "Tool \"exec\" was blocked after execution: the redactor is down"
            );
            assert_eq!(*code, Some(ErrorCode::InvalidInput));
        }
        other => panic!("expected failed: {other:?}"),
    }
    assert_eq!(h.cm.parked_runs(), 0);
    assert_eq!(
        event_types(&sink),
        [
            "tool_call",
            "nested_tool_call",
            "run_parked",
            "run_expired",
            "tool_result"
        ]
    );
    let parked = sink.events()[2].to_json();
    let expired = sink.events()[3].to_json();
    assert_eq!(
        expired,
        json!({"type": "run_expired", "ts": "T3", "agentId": "ops", "sessionId": "session-1",
               "sessionKey": "agent:ops:main", "runId": "run-1",
               "codeModeRunId": parked["codeModeRunId"],
               "parentToolCallId": "call_1", "reason": "result withheld"})
    );
}

/// `<prefix>_` followed by 32 lowercase hex digits.
fn is_generated(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|hex| {
            hex.len() == 32
                && hex
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        })
}

#[tokio::test]
async fn without_a_tool_call_id_each_exec_gets_its_own_and_nested_ids_never_collide() {
    let mut h = harness(5000, &[("read", 50)]);
    h.env.parent_tool_call_id = None;
    let sink = record_trajectory(&mut h);
    let code = json!({"code": "return await tools.read({});"});
    let (abort_a, abort_b) = (AbortHandle::new(), AbortHandle::new());
    let (a, b) = tokio::join!(
        h.cm.exec(&h.env, &code, &abort_a),
        h.cm.exec(&h.env, &code, &abort_b)
    );
    assert_eq!(a.status(), "completed");
    assert_eq!(b.status(), "completed");
    let events: Vec<Value> = sink.events().iter().map(|e| e.to_json()).collect();
    let outer: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| e["toolCallId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outer.len(), 2);
    assert!(outer.iter().all(|id| is_generated(id, "exec")), "{outer:?}");
    assert_ne!(outer[0], outer[1]);
    let mut nested: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "nested_tool_call")
        .map(|e| {
            (
                e["toolCallId"].as_str().unwrap().to_string(),
                e["parentToolCallId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    nested.sort();
    let mut expected: Vec<(String, String)> = outer
        .iter()
        .map(|id| (format!("tool_search_code:{id}:read:1"), id.clone()))
        .collect();
    expected.sort();
    assert_eq!(nested, expected);

    // An explicit id is used unchanged; a `wait` without one gets `wait_<uuid>`.
    let r =
        h.cm.exec(
            &h.env.clone().with_tool_call_id("call_9"),
            &json!({"code": "return 1;"}),
            &AbortHandle::new(),
        )
        .await;
    assert_eq!(r.status(), "completed");
    let last_call = sink
        .events()
        .iter()
        .rev()
        .map(|e| e.to_json())
        .find(|e| e["type"] == "tool_call")
        .unwrap();
    assert_eq!(last_call["toolCallId"], json!("call_9"));
    h.cm.wait_with(&h.env, &json!({"runId": "cm_x"}), &AbortHandle::new())
        .await;
    let wait_call = sink.events().last().unwrap().to_json();
    assert_eq!(wait_call["type"], json!("tool_result"));
    assert!(is_generated(
        wait_call["toolCallId"].as_str().unwrap(),
        "wait"
    ));
}

#[tokio::test]
async fn a_failing_after_hook_on_a_wait_leaves_the_run_parked() {
    let h = harness(100, &[("slow", 5000)]);
    let r = h.exec("return await tools.slow({});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    let env = h
        .env
        .clone()
        .with_hooks(HookChain::new().with(Arc::new(Outer::FailAfter)))
        .with_tool_call_id("call_2");
    let r =
        h.cm.wait_with(&env, &json!({ "runId": run_id }), &AbortHandle::new())
            .await;
    match &r {
        CodeModeResult::Failed { error, .. } => assert_eq!(
            error,
            "Tool \"wait\" was blocked after execution: the redactor is down"
        ),
        other => panic!("expected failed: {other:?}"),
    }
    // The model has the runId from the exec: the run stays parked for another wait.
    assert_eq!(h.cm.parked_runs(), 1);
    let again = h.wait("call_3", &run_id).await;
    assert_eq!(again.status(), "waiting");
    assert_eq!(again.run_id(), Some(run_id.as_str()));
}
