//! The tool-call pipeline (docs/contract/host.md#h1 to #h3): policy → before hooks → approval → execute → after
//! hooks, with Rust hooks, real command hooks (`sh -c …`) and approvals. Exact messages.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolError, ToolErrorKind, ToolExecutor};
use codemode_config::{HookConfig, HookSpec};
use codemode_facade::pipeline::{
    after_outer_call, before_outer_call, AfterDecision, AfterToolCall, ApprovalBroker,
    ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver, BeforeToolCall, FixedApprover,
    HookChain, HookDecision, HookFuture, OuterKind, ToolHook, ToolPipeline, UnknownApproval,
};
use codemode_facade::PendingApproval;
use serde_json::{json, Value};

use common::{ops_scope as scope, policy, Calls, Recording};

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Records every call it runs; `fail` errors, `slow` sleeps 300 ms; returns
/// `{content: [], details: {name, input}}`.
fn recorder() -> Recording {
    Recording::fallible(|call| {
        if call.tool_name == "fail" {
            return Err(ToolError::failed("fast failure"));
        }
        Ok(json!({"content": [], "details": {"name": call.tool_name, "input": call.input}}))
    })
    .with_delay("slow", Duration::from_millis(300))
}

/// The calls of a [`recorder`].
struct Recorder(Calls);

impl Recorder {
    fn calls(&self) -> Vec<(String, Value)> {
        self.0.lock().unwrap().clone()
    }
}

fn call(name: &str, input: Value) -> ToolCall {
    ToolCall {
        tool_id: format!("openclaw:core:{name}"),
        tool_name: name.to_string(),
        input,
        scope: scope(),
        bridge_id: "bridge:callValue:1".into(),
        tool_call_id: format!("tool_search_code:call_1:{name}:1"),
        parent_tool_call_id: Some("call_1".into()),
        code_mode_run_id: None,
    }
}

fn pipeline() -> (ToolPipeline, Arc<Recorder>) {
    let exec = recorder();
    let recorder = Arc::new(Recorder(exec.calls.clone()));
    (ToolPipeline::new(Arc::new(exec)), recorder)
}

fn details(name: &str, input: Value) -> Value {
    json!({"content": [], "details": {"name": name, "input": input}})
}

fn command_hook(pattern: &str, script: &str) -> HookSpec {
    HookSpec::new(pattern, &["sh", "-c", script])
}

fn before_hooks(specs: Vec<HookSpec>) -> HookChain {
    HookChain::from_config(&HookConfig {
        before_tool_call: specs,
        after_tool_call: vec![],
    })
}

fn temp_file(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "codemode-pipeline-{tag}-{}-{nanos}",
        std::process::id()
    ))
}

// ---------------------------------------------------------------------------------------------
// Policy
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_denied_tool_gets_the_unknown_tool_error_and_never_runs() {
    let (p, recorder) = pipeline();
    let p = p.with_policy(policy(
        json!({"allow": ["read", "openclaw:core:list"], "deny": ["*:grep"]}),
    ));
    assert_eq!(
        p.execute(call("write", json!({}))).await,
        Err(ToolError::unknown_tool("Unknown tool id: openclaw:core:write. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."))
    );
    assert_eq!(
        p.execute(call("grep", json!({}))).await,
        Err(ToolError::unknown_tool("Unknown tool id: openclaw:core:grep. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."))
    );
    assert_eq!(
        p.execute(call("read", json!({"path": "a"}))).await,
        Ok(details("read", json!({"path": "a"})))
    );
    assert_eq!(
        p.execute(call("list", json!({}))).await,
        Ok(details("list", json!({})))
    );
    assert_eq!(
        recorder.calls(),
        vec![
            ("read".to_string(), json!({"path": "a"})),
            ("list".to_string(), json!({}))
        ]
    );
}

#[tokio::test]
async fn an_empty_allow_list_denies_everything() {
    let (p, recorder) = pipeline();
    let p = p.with_policy(policy(json!({"allow": []})));
    let err = p.execute(call("read", json!({}))).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::UnknownTool);
    assert!(err
        .message()
        .starts_with("Unknown tool id: openclaw:core:read. "));
    assert!(recorder.calls().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Rust hooks
// ---------------------------------------------------------------------------------------------

/// Blocks `write`, rewrites `read`'s input to `{path: "safe.txt"}`, records every event.
#[derive(Default)]
struct Guard {
    before: Mutex<Vec<Value>>,
    after: Mutex<Vec<Value>>,
}

struct GuardHook(Arc<Guard>);

impl ToolHook for GuardHook {
    fn name(&self) -> &str {
        "guard"
    }

    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        self.0
            .before
            .lock()
            .unwrap()
            .push(serde_json::to_value(event).unwrap());
        let name = event.call.tool_name.clone();
        Box::pin(async move {
            Ok(match name.as_str() {
                "write" => HookDecision::block("writes are frozen"),
                "read" => HookDecision::allow().with_input(json!({"path": "safe.txt"})),
                "blank" => HookDecision {
                    reason: None,
                    ..HookDecision::block("x")
                },
                "weird" => HookDecision::allow().with_input(json!("not an object")),
                "broken" => return Err("guard is broken".to_string()),
                _ => HookDecision::allow(),
            })
        })
    }

    fn after(&self, event: &AfterToolCall) -> HookFuture<AfterDecision> {
        let mut value = serde_json::to_value(event).unwrap();
        value["durationMs"] = json!("<ms>");
        self.0.after.lock().unwrap().push(value);
        let name = event.call.tool_name.clone();
        Box::pin(async move {
            match name.as_str() {
                "list" => Ok(AfterDecision::replace(
                    json!({"content": [], "details": "replaced"}),
                )),
                "fail" => Ok(AfterDecision::replace(
                    json!({"content": [], "details": "recovered"}),
                )),
                "secret" => Err("the result is withheld".to_string()),
                _ => Ok(AfterDecision::keep()),
            }
        })
    }
}

fn guarded() -> (ToolPipeline, Arc<Recorder>, Arc<Guard>) {
    let (p, recorder) = pipeline();
    let guard = Arc::new(Guard::default());
    let p = p.with_hooks(HookChain::new().with(Arc::new(GuardHook(guard.clone()))));
    (p, recorder, guard)
}

#[tokio::test]
async fn a_rust_hook_blocks_one_tool_and_rewrites_another() {
    let (p, recorder, _) = guarded();
    assert_eq!(
        p.execute(call("write", json!({"path": "x", "content": "y"})))
            .await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was blocked before execution: writes are frozen"
        ))
    );
    assert_eq!(
        p.execute(call("read", json!({"path": "/etc/passwd"})))
            .await,
        Ok(details("read", json!({"path": "safe.txt"})))
    );
    // The executor saw only the rewritten read; the blocked write never ran.
    assert_eq!(
        recorder.calls(),
        vec![("read".to_string(), json!({"path": "safe.txt"}))]
    );
}

#[tokio::test]
async fn hook_failures_block_with_their_reason() {
    let (p, recorder, _) = guarded();
    assert_eq!(
        p.execute(call("blank", json!({}))).await,
        Err(ToolError::refused("Tool \"openclaw:core:blank\" was blocked before execution: hook \"guard\" blocked the call"))
    );
    assert_eq!(
        p.execute(call("weird", json!({}))).await,
        Err(ToolError::refused("Tool \"openclaw:core:weird\" was blocked before execution: hook \"guard\" answered with an input that is not an object"))
    );
    assert_eq!(
        p.execute(call("broken", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:broken\" was blocked before execution: guard is broken"
        ))
    );
    assert!(recorder.calls().is_empty());
}

#[tokio::test]
async fn after_hooks_see_the_outcome_and_may_replace_it() {
    let (p, recorder, guard) = guarded();
    assert_eq!(
        p.execute(call("list", json!({"dir": "."}))).await,
        Ok(json!({"content": [], "details": "replaced"}))
    );
    assert_eq!(
        p.execute(call("fail", json!({}))).await,
        Ok(json!({"content": [], "details": "recovered"}))
    );
    assert_eq!(
        p.execute(call("secret", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:secret\" was blocked after execution: the result is withheld"
        ))
    );
    assert_eq!(recorder.calls().len(), 3);
    let after = guard.after.lock().unwrap().clone();
    assert_eq!(
        after[0],
        json!({
            "event": "after_tool_call",
            "toolCallId": "tool_search_code:call_1:list:1",
            "toolName": "list",
            "toolId": "openclaw:core:list",
            "toolKind": "tool",
            "input": {"dir": "."},
            "parentToolCallId": "call_1",
            "agentId": "ops",
            "sessionId": "session-1",
            "sessionKey": "agent:ops:main",
            "runId": "run-1",
            "result": {"content": [], "details": {"name": "list", "input": {"dir": "."}}},
            "durationMs": "<ms>"
        })
    );
    assert_eq!(after[1]["error"], json!("fast failure"));
    assert_eq!(after[1].get("result"), None);
}

#[tokio::test]
async fn the_before_event_has_the_exact_shape_and_the_rewritten_input_flows_on() {
    let (p, _, guard) = guarded();
    let mut c = call("read", json!({"path": "a"}));
    c.code_mode_run_id = Some("cm_1".into());
    p.execute(c).await.unwrap();
    assert_eq!(
        guard.before.lock().unwrap()[0],
        json!({
            "event": "before_tool_call",
            "toolCallId": "tool_search_code:call_1:read:1",
            "toolName": "read",
            "toolId": "openclaw:core:read",
            "toolKind": "tool",
            "input": {"path": "a"},
            "parentToolCallId": "call_1",
            "codeModeRunId": "cm_1",
            "agentId": "ops",
            "sessionId": "session-1",
            "sessionKey": "agent:ops:main",
            "runId": "run-1"
        })
    );
    // The after hook sees the input as executed.
    assert_eq!(
        guard.after.lock().unwrap()[0]["input"],
        json!({"path": "safe.txt"})
    );
}

/// Sleeps before answering for `slow`, immediately for everything else.
struct SlowHook;

impl ToolHook for SlowHook {
    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        let slow = event.call.tool_name == "slow";
        Box::pin(async move {
            if slow {
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            Ok(HookDecision::allow())
        })
    }
}

#[tokio::test]
async fn a_slow_hook_does_not_hold_up_other_calls() {
    let (p, recorder) = pipeline();
    let p = p.with_hooks(HookChain::new().with(Arc::new(SlowHook)));
    let started = Instant::now();
    let slow = tokio::spawn({
        let p = p.clone();
        async move { (p.execute(call("slow", json!({}))).await, started.elapsed()) }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let fast = p.execute(call("read", json!({}))).await;
    let fast_done = started.elapsed();
    assert!(fast.is_ok());
    assert!(fast_done < Duration::from_millis(300), "{fast_done:?}");
    let (slow_result, slow_done) = slow.await.unwrap();
    assert!(slow_result.is_ok());
    assert!(slow_done >= Duration::from_millis(400));
    assert_eq!(recorder.calls()[0].0, "read");
}

// ---------------------------------------------------------------------------------------------
// Command hooks
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_command_hook_gets_the_event_on_stdin() {
    let file = temp_file("event");
    let (p, _) = pipeline();
    let script = format!(
        "cat > '{}'; echo '{{\"decision\":\"allow\"}}'",
        file.display()
    );
    let p = p.with_hooks(before_hooks(vec![command_hook("*", &script)]));
    p.execute(call("read", json!({"path": "a"}))).await.unwrap();
    let event: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        event,
        json!({
            "event": "before_tool_call",
            "toolCallId": "tool_search_code:call_1:read:1",
            "toolName": "read",
            "toolId": "openclaw:core:read",
            "toolKind": "tool",
            "input": {"path": "a"},
            "parentToolCallId": "call_1",
            "agentId": "ops",
            "sessionId": "session-1",
            "sessionKey": "agent:ops:main",
            "runId": "run-1"
        })
    );
}

#[tokio::test]
async fn command_hooks_block_rewrite_and_match() {
    let (p, recorder) = pipeline();
    // Blocks writes (by reading the event), rewrites reads, only for the tools it matches.
    let decide = r#"if grep -q '"toolName":"write"'; then echo '{"decision":"block","reason":"no writes"}'; else echo '{"decision":"allow","input":{"path":"rewritten"}}'; fi"#;
    let p = p.with_hooks(before_hooks(vec![
        command_hook("openclaw:core:*", decide),
        // Would block everything, but matches no tool here.
        command_hook("mcp:*", "exit 1"),
    ]));
    assert_eq!(
        p.execute(call("write", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was blocked before execution: no writes"
        ))
    );
    assert_eq!(
        p.execute(call("read", json!({"path": "a"}))).await,
        Ok(details("read", json!({"path": "rewritten"})))
    );
    assert_eq!(
        recorder.calls(),
        vec![("read".to_string(), json!({"path": "rewritten"}))]
    );
}

async fn blocked_reason(spec: HookSpec) -> String {
    let (p, recorder) = pipeline();
    let p = p.with_hooks(before_hooks(vec![spec]));
    let err = p.execute(call("write", json!({}))).await.unwrap_err();
    assert!(recorder.calls().is_empty(), "the tool ran");
    assert_eq!(err.kind(), ToolErrorKind::Refused);
    err.into_message()
}

#[tokio::test]
async fn a_hanging_command_hook_times_out_and_blocks() {
    let started = Instant::now();
    let err = blocked_reason(command_hook("*", "sleep 30").with_timeout_ms(200)).await;
    assert_eq!(
        err,
        "Tool \"openclaw:core:write\" was blocked before execution: hook \"sh\" did not answer within 200 ms"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// True while a process whose command line contains `needle` exists.
fn process_exists(needle: &str) -> bool {
    let out = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.contains(needle) && !l.contains("ps -eo"))
}

/// Waits up to 2 s for the process whose command line contains `needle` to be gone; fails
/// naming it when it is still there (a hook's child outlived the hook).
async fn assert_gone_within_2s(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while process_exists(needle) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !process_exists(needle),
        "the hook's child outlived it: {needle}"
    );
}

#[tokio::test]
async fn a_timed_out_hook_takes_its_children_with_it() {
    // `sh` forks `sleep` here (a command follows it), so killing `sh` alone would orphan it.
    let err =
        blocked_reason(command_hook("*", "sleep 31.4159; echo done").with_timeout_ms(300)).await;
    assert!(
        err.ends_with("hook \"sh\" did not answer within 300 ms"),
        "{err}"
    );
    assert_gone_within_2s("sleep 31.4159").await;
}

#[tokio::test]
async fn a_hook_that_answers_takes_its_background_children_with_it() {
    // The background `sleep` stays in the hook's group; it is killed after the answer, while
    // `sh` is exited but not yet reaped (so the group id cannot belong to anyone else).
    let (p, recorder) = pipeline();
    let script = r#"sleep 27.1828 </dev/null >/dev/null 2>&1 & echo '{"decision":"allow"}'"#;
    let p = p.with_hooks(before_hooks(vec![command_hook("*", script)]));
    let out = p.execute(call("write", json!({}))).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(recorder.calls().len(), 1);
    assert_gone_within_2s("sleep 27.1828").await;
}

#[tokio::test]
async fn a_command_hook_that_exits_1_blocks() {
    assert_eq!(
        blocked_reason(command_hook("*", "echo '{\"decision\":\"allow\"}'; exit 1")).await,
        "Tool \"openclaw:core:write\" was blocked before execution: hook \"sh\" exited with status 1"
    );
}

#[tokio::test]
async fn a_command_hook_that_prints_garbage_blocks() {
    let expected = "Tool \"openclaw:core:write\" was blocked before execution: hook \"sh\" printed an invalid answer (expected {\"decision\": \"allow\" | \"block\" | \"ask\", \"reason\"?: string, \"input\"?: object})";
    assert_eq!(
        blocked_reason(command_hook("*", "echo not json")).await,
        expected
    );
    assert_eq!(blocked_reason(command_hook("*", "true")).await, expected);
    assert_eq!(
        blocked_reason(command_hook("*", "echo '[\"allow\"]'")).await,
        expected
    );
    assert_eq!(
        blocked_reason(command_hook("*", "echo '{\"decision\":\"maybe\"}'")).await,
        expected
    );
    assert_eq!(
        blocked_reason(command_hook(
            "*",
            "echo '{\"decision\":\"allow\",\"input\":[1]}'"
        ))
        .await,
        expected
    );
}

#[tokio::test]
async fn a_flooding_command_hook_blocks() {
    assert_eq!(
        blocked_reason(command_hook("*", "yes")).await,
        "Tool \"openclaw:core:write\" was blocked before execution: hook \"sh\" printed more than 1048576 bytes"
    );
}

#[tokio::test]
async fn a_command_hook_that_cannot_start_or_is_killed_blocks() {
    let missing = blocked_reason(HookSpec::new("*", &["/nonexistent/codemode-hook"])).await;
    assert!(
        missing.starts_with("Tool \"openclaw:core:write\" was blocked before execution: hook \"/nonexistent/codemode-hook\" could not start: "),
        "{missing}"
    );
    assert_eq!(
        blocked_reason(command_hook("*", "kill -9 $$")).await,
        "Tool \"openclaw:core:write\" was blocked before execution: hook \"sh\" was killed by signal 9"
    );
}

#[tokio::test]
async fn a_command_hook_sees_no_parent_environment_secret() {
    std::env::set_var("CODEMODE_PIPELINE_TEST_SECRET", "hunter2");
    let file = temp_file("env");
    let (p, _) = pipeline();
    let script = format!(
        "env > '{}'; echo '{{\"decision\":\"allow\"}}'",
        file.display()
    );
    let p = p.with_hooks(before_hooks(vec![command_hook("*", &script)]));
    p.execute(call("read", json!({}))).await.unwrap();
    let env = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(!env.contains("CODEMODE_PIPELINE_TEST_SECRET"), "{env}");
    assert!(!env.contains("hunter2"), "{env}");
    let path = std::env::var("PATH").unwrap();
    assert!(env.lines().any(|l| l == format!("PATH={path}")), "{env}");
    // Nothing else from the parent: every variable is one we pass or one sh sets itself.
    for line in env.lines() {
        let key = line.split('=').next().unwrap();
        assert!(
            ["PATH", "HOME", "LANG", "TERM", "PWD", "SHLVL", "_", "OLDPWD"].contains(&key),
            "unexpected variable {key} in {env}"
        );
    }
}

#[tokio::test]
async fn a_command_after_hook_replaces_the_result_or_withholds_it() {
    let (p, _) = pipeline();
    let p = p.with_hooks(HookChain::from_config(&HookConfig {
        before_tool_call: vec![],
        after_tool_call: vec![
            command_hook("read", r#"grep -q '"durationMs":' && echo '{"result":{"content":[],"details":"redacted"}}'"#),
            command_hook("list", "echo '{}'"),
            command_hook("grep", "exit 3"),
        ],
    }));
    assert_eq!(
        p.execute(call("read", json!({}))).await,
        Ok(json!({"content": [], "details": "redacted"}))
    );
    assert_eq!(
        p.execute(call("list", json!({}))).await,
        Ok(details("list", json!({})))
    );
    assert_eq!(
        p.execute(call("grep", json!({}))).await,
        Err(ToolError::refused("Tool \"openclaw:core:grep\" was blocked after execution: hook \"sh\" exited with status 3"))
    );
}

// ---------------------------------------------------------------------------------------------
// Approvals
// ---------------------------------------------------------------------------------------------

fn requiring_writes(p: ToolPipeline) -> ToolPipeline {
    p.with_policy(policy(json!({"approvals": {"require": ["write"]}})))
}

#[tokio::test]
async fn an_approved_call_runs() {
    let (p, recorder) = pipeline();
    let p = requiring_writes(p).with_approver(Arc::new(FixedApprover(ApprovalDecision::allow())));
    assert_eq!(
        p.execute(call("write", json!({"a": 1}))).await,
        Ok(details("write", json!({"a": 1})))
    );
    assert_eq!(recorder.calls().len(), 1);
}

#[tokio::test]
async fn a_denied_call_never_runs() {
    let (p, recorder) = pipeline();
    let p = requiring_writes(p);
    // No approver: denied.
    assert_eq!(
        p.execute(call("write", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was not approved: denied"
        ))
    );
    let p = p.with_approver(Arc::new(FixedApprover(ApprovalDecision::deny_because(
        "not today",
    ))));
    assert_eq!(
        p.execute(call("write", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was not approved: not today"
        ))
    );
    // Tools that need no approval are not asked about.
    assert!(p.execute(call("read", json!({}))).await.is_ok());
    assert_eq!(recorder.calls(), vec![("read".to_string(), json!({}))]);
}

#[tokio::test]
async fn the_broker_lists_pending_approvals_and_answers_them_by_id() {
    let (p, recorder) = pipeline();
    let broker = ApprovalBroker::new(Duration::from_secs(60));
    let p = requiring_writes(p).with_approver(Arc::new(broker.clone()));
    let first = tokio::spawn({
        let p = p.clone();
        async move { p.execute(call("write", json!({"path": "a"}))).await }
    });
    let mut second_call = call("write", json!({"path": "b"}));
    second_call.tool_call_id = "tool_search_code:call_1:write:2".into();
    let second = tokio::spawn({
        let p = p.clone();
        async move { p.execute(second_call).await }
    });
    let pending = loop {
        let pending = broker.pending_where(|r| r.parent_tool_call_id.as_deref() == Some("call_1"));
        if pending.len() == 2 {
            break pending;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(recorder.calls().is_empty());
    let ids: Vec<String> = pending.iter().map(|p| p.approval_id.clone()).collect();
    assert!(ids
        .iter()
        .all(|id| id.starts_with("approval_") && id.len() == "approval_".len() + 36));
    let mut shapes: Vec<Value> = pending
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap();
            v["approvalId"] = json!("<id>");
            v
        })
        .collect();
    shapes.sort_by_key(|v| v["toolCallId"].as_str().unwrap().to_string());
    assert_eq!(
        shapes,
        vec![
            json!({"approvalId": "<id>", "toolCallId": "tool_search_code:call_1:write:1", "toolId": "openclaw:core:write", "input": {"path": "a"}}),
            json!({"approvalId": "<id>", "toolCallId": "tool_search_code:call_1:write:2", "toolId": "openclaw:core:write", "input": {"path": "b"}}),
        ]
    );
    assert_eq!(
        broker.pending_where(|r| r.parent_tool_call_id.as_deref() == Some("other")),
        Vec::<PendingApproval>::new()
    );
    assert_eq!(
        broker.pending()[0].bridge_id.as_deref(),
        Some("bridge:callValue:1")
    );
    assert_eq!(broker.pending()[0].scope, scope());

    let id_of = |input: &str| {
        pending
            .iter()
            .find(|p| p.input["path"] == input)
            .unwrap()
            .approval_id
            .clone()
    };
    broker
        .answer(&id_of("a"), ApprovalDecision::allow())
        .unwrap();
    broker
        .answer(&id_of("b"), ApprovalDecision::deny())
        .unwrap();
    assert_eq!(
        first.await.unwrap(),
        Ok(details("write", json!({"path": "a"})))
    );
    assert_eq!(
        second.await.unwrap(),
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was not approved: denied"
        ))
    );
    assert_eq!(
        recorder.calls(),
        vec![("write".to_string(), json!({"path": "a"}))]
    );
    // Answered approvals are gone; unknown ids are rejected.
    assert!(broker.pending().is_empty());
    assert_eq!(
        broker.answer(&id_of("a"), ApprovalDecision::allow()),
        Err(UnknownApproval(id_of("a")))
    );
    let unknown = broker
        .answer("approval_nope", ApprovalDecision::allow())
        .unwrap_err();
    assert_eq!(unknown.to_string(), "unknown approvalId: approval_nope");
}

#[tokio::test]
async fn an_approval_outstanding_past_the_ttl_is_denied() {
    let (p, recorder) = pipeline();
    let broker = ApprovalBroker::new(Duration::from_millis(150));
    let p = requiring_writes(p).with_approver(Arc::new(broker.clone()));
    let started = Instant::now();
    assert_eq!(
        p.execute(call("write", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was not approved: approval expired"
        ))
    );
    // A tenth of the TTL early, so that it comes before a nested call's timeout of the same
    // TTL (pipeline/approvals.rs, `expiry`).
    assert!(started.elapsed() >= Duration::from_millis(135));
    assert!(broker.pending().is_empty());
    assert!(recorder.calls().is_empty());
}

/// Answers after a delay with a fixed decision, counting requests.
struct SlowApprover {
    delay: Duration,
    decision: ApprovalDecision,
    asked: Arc<AtomicUsize>,
    reasons: Arc<Mutex<Vec<Option<String>>>>,
}

impl Approver for SlowApprover {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.reasons.lock().unwrap().push(request.reason.clone());
        let (delay, decision) = (self.delay, self.decision.clone());
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            decision
        })
    }
}

#[tokio::test]
async fn a_hook_ask_goes_to_the_broker_delegate_or_an_answer_by_id() {
    struct Ask;
    impl ToolHook for Ask {
        fn before(&self, _event: &BeforeToolCall) -> HookFuture<HookDecision> {
            Box::pin(async { Ok(HookDecision::ask(Some("touches prod".into()))) })
        }
    }
    let asked = Arc::new(AtomicUsize::new(0));
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let delegate = SlowApprover {
        delay: Duration::from_millis(50),
        decision: ApprovalDecision::deny_because("the delegate said no"),
        asked: asked.clone(),
        reasons: reasons.clone(),
    };
    let broker = ApprovalBroker::with_delegate(Duration::from_secs(60), Arc::new(delegate));
    let (p, recorder) = pipeline();
    let p = p
        .with_hooks(HookChain::new().with(Arc::new(Ask)))
        .with_approver(Arc::new(broker.clone()));
    // The delegate answers first.
    assert_eq!(
        p.execute(call("read", json!({}))).await,
        Err(ToolError::refused(
            "Tool \"openclaw:core:read\" was not approved: the delegate said no"
        ))
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        *reasons.lock().unwrap(),
        vec![Some("touches prod".to_string())]
    );

    // An answer by id before the delegate wins.
    let slow_delegate = SlowApprover {
        delay: Duration::from_secs(30),
        decision: ApprovalDecision::deny(),
        asked: asked.clone(),
        reasons,
    };
    let broker = ApprovalBroker::with_delegate(Duration::from_secs(60), Arc::new(slow_delegate));
    let p = p.with_approver(Arc::new(broker.clone()));
    let pending_call = tokio::spawn({
        let p = p.clone();
        async move { p.execute(call("read", json!({"x": 1}))).await }
    });
    let id = loop {
        if let Some(r) = broker.pending().first() {
            break r.approval_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    broker.answer(&id, ApprovalDecision::allow()).unwrap();
    assert_eq!(
        pending_call.await.unwrap(),
        Ok(details("read", json!({"x": 1})))
    );
    assert_eq!(recorder.calls().len(), 1);
}

#[tokio::test]
async fn a_dropped_call_leaves_the_broker_and_deny_all_clears_it() {
    let (p, _) = pipeline();
    let broker = ApprovalBroker::new(Duration::from_secs(60));
    let p = requiring_writes(p).with_approver(Arc::new(broker.clone()));
    // The dispatcher's tool timeout drops the future.
    let timed_out = tokio::time::timeout(
        Duration::from_millis(50),
        p.execute(call("write", json!({}))),
    )
    .await;
    assert!(timed_out.is_err());
    assert!(broker.pending().is_empty());

    let waiting = tokio::spawn({
        let p = p.clone();
        async move { p.execute(call("write", json!({}))).await }
    });
    while broker.pending().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(broker.deny_all(None), 1);
    assert_eq!(
        waiting.await.unwrap(),
        Err(ToolError::refused(
            "Tool \"openclaw:core:write\" was not approved: approval cancelled"
        ))
    );
}

// ---------------------------------------------------------------------------------------------
// Outer calls
// ---------------------------------------------------------------------------------------------

/// Records the event and rewrites `code` to `return 2;`; blocks `wait`.
struct OuterHook(Arc<Mutex<Vec<Value>>>);

impl ToolHook for OuterHook {
    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(event).unwrap());
        let name = event.call.tool_name.clone();
        Box::pin(async move {
            Ok(match name.as_str() {
                "exec" => HookDecision::allow()
                    .with_input(json!({"code": "return 2;", "language": "typescript"})),
                _ => HookDecision::block("no waiting"),
            })
        })
    }
}

#[tokio::test]
async fn outer_exec_and_wait_go_through_the_hooks() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let hooks = HookChain::new().with(Arc::new(OuterHook(events.clone())));
    let input = json!({"code": "return 1;", "language": "typescript"});
    assert_eq!(
        before_outer_call(&hooks, None, OuterKind::Exec, "call_9", &input, &scope()).await,
        Ok(json!({"code": "return 2;", "language": "typescript"}))
    );
    assert_eq!(
        before_outer_call(
            &hooks,
            None,
            OuterKind::Wait,
            "call_10",
            &json!({"runId": "cm_1"}),
            &scope()
        )
        .await,
        Err("Tool \"wait\" was blocked before execution: no waiting".to_string())
    );
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events[0],
        json!({
            "event": "before_tool_call",
            "toolCallId": "call_9",
            "toolName": "exec",
            "toolKind": "code_mode_exec",
            "toolInputKind": "typescript",
            "input": {"code": "return 1;", "language": "typescript"},
            "agentId": "ops",
            "sessionId": "session-1",
            "sessionKey": "agent:ops:main",
            "runId": "run-1"
        })
    );
    assert_eq!(events[1]["toolKind"], json!("code_mode_wait"));
    assert_eq!(events[1].get("toolInputKind"), None);
}

#[tokio::test]
async fn outer_exec_without_language_is_javascript_and_ask_needs_an_approver() {
    let file = temp_file("outer");
    let script = format!(
        "cat > '{}'; echo '{{\"decision\":\"ask\",\"reason\":\"check it\"}}'",
        file.display()
    );
    let hooks = before_hooks(vec![command_hook("exec", &script)]);
    let input = json!({"command": "return 1;"});
    assert_eq!(
        before_outer_call(
            &hooks,
            None,
            OuterKind::Exec,
            "call_1",
            &input,
            &RunScope::default()
        )
        .await,
        Err("Tool \"exec\" was not approved: denied".to_string())
    );
    let event: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        event,
        json!({"event": "before_tool_call", "toolCallId": "call_1", "toolName": "exec",
               "toolKind": "code_mode_exec", "toolInputKind": "javascript", "input": {"command": "return 1;"}})
    );
    let approve = FixedApprover(ApprovalDecision::allow());
    assert_eq!(
        before_outer_call(
            &hooks,
            Some(&approve as &dyn Approver),
            OuterKind::Exec,
            "call_1",
            &input,
            &RunScope::default()
        )
        .await,
        Ok(input.clone())
    );
    // after_tool_call for the outer call.
    let after = HookChain::from_config(&HookConfig {
        before_tool_call: vec![],
        after_tool_call: vec![command_hook(
            "exec",
            r#"echo '{"result":{"status":"completed","value":"hidden"}}'"#,
        )],
    });
    assert_eq!(
        after_outer_call(
            &after,
            OuterKind::Exec,
            "call_1",
            &input,
            &RunScope::default(),
            json!({"status": "completed", "value": 1}),
            Duration::from_millis(3)
        )
        .await,
        Ok(json!({"status": "completed", "value": "hidden"}))
    );
    // A hook that does not match `wait` leaves it alone.
    assert_eq!(
        after_outer_call(
            &after,
            OuterKind::Wait,
            "call_2",
            &json!({"runId": "cm_1"}),
            &RunScope::default(),
            json!({"status": "waiting"}),
            Duration::ZERO
        )
        .await,
        Ok(json!({"status": "waiting"}))
    );
}

// ---------------------------------------------------------------------------------------------
// End to end: an approval is pending host work, so the run parks and `wait` picks it up
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_run_waiting_for_approval_parks_and_resumes_after_the_answer() {
    use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
    use codemode_facade::{CodeMode, RunEnv};
    use codemode_runtime::{AbortHandle, Runtime};

    let specs = vec![
        ToolSpec::core("write", "Write a file."),
        ToolSpec::core("read", "Read a file."),
        ToolSpec::core("grep", "Search files."),
    ];
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    let config = codemode_config::resolve(&json!({"enabled": true, "timeoutMs": 300})).config;
    let broker = ApprovalBroker::new(Duration::from_secs(60));
    let (p, recorder) = pipeline();
    let p = p
        .with_policy(policy(
            json!({"deny": ["grep"], "approvals": {"require": ["write"]}}),
        ))
        .with_approver(Arc::new(broker.clone()));
    let mut env = RunEnv::new(config, catalog, Arc::new(p), scope());
    env.parent_tool_call_id = Some("call_e2e".into());
    let cm = CodeMode::new(Runtime::global().unwrap());
    let code = r#"
        const r = await tools.callValue("openclaw:core:read", {path: "a"});
        let denied;
        try { await tools.call("openclaw:core:grep", {}); } catch (e) { denied = e.message; }
        const w = await tools.callValue("write", {path: "b"});
        return {r, w, denied};
    "#;
    let first = cm
        .exec(&env, &json!({"code": code}), &AbortHandle::new())
        .await;
    let first = serde_json::to_value(&first).unwrap();
    assert_eq!(first["status"], json!("waiting"), "{first}");
    let run_id = first["runId"].as_str().unwrap().to_string();
    // Seq 3: the policy-denied grep call (this catalog still lists it) was nested call 2.
    let pending = broker.pending_where(|r| r.parent_tool_call_id.as_deref() == Some("call_e2e"));
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call_id, "tool_search_code:call_e2e:write:3");
    assert_eq!(pending[0].tool_id, "openclaw:core:write");
    assert_eq!(pending[0].input, json!({"path": "b"}));
    assert_eq!(
        recorder.calls(),
        vec![("read".to_string(), json!({"path": "a"}))]
    );

    broker
        .answer(&pending[0].approval_id, ApprovalDecision::allow())
        .unwrap();
    let done = cm
        .wait(&scope(), &json!({"runId": run_id}), &AbortHandle::new())
        .await;
    let done = serde_json::to_value(&done).unwrap();
    assert_eq!(done["status"], json!("completed"), "{done}");
    assert_eq!(
        done["value"],
        json!({
            "r": {"name": "read", "input": {"path": "a"}},
            "w": {"name": "write", "input": {"path": "b"}},
            "denied": "Unknown tool id: openclaw:core:grep. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."
        })
    );
}
