//! Agent turns (docs/contract/host.md#h6): activation, the provider payload, the fail-closed
//! payload check, the runtime's fail-closed load, `$result:` references, the script format, and
//! whole turns through the real runtime with exact envelope values.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use codemode_agent::{
    check_payload, direct_tool_definition, model_cost, resolve_activation, resolve_references,
    Activation, AgentError, AgentTurn, Payload, PayloadCheck, PayloadError, ReferenceError, Script,
    ScriptError, TurnFlags, TurnStep,
};
use codemode_bridge::{ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{CatalogMode, ToolSpec};
use codemode_config::{ActivationReason, ProviderCatalogs};
use codemode_facade::surface::{exec_tool, wait_tool, ToolDefinition};
use codemode_facade::CodeMode;
use codemode_runtime::Runtime;
use codemode_telemetry::{ModelCost, TokenUsage};
use serde_json::{json, Value};

const CATALOG: &str = r#"{"catalogs": [{"provider": "e2e", "models": [
  {"id": "preferred-model", "compat": {"codeMode": "preferred"},
   "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}},
  {"id": "capable-model", "compat": {"codeMode": "capable"}},
  {"id": "no-tools", "compat": {"supportsTools": false, "codeMode": "preferred"}}
]}]}"#;

fn catalogs() -> ProviderCatalogs {
    ProviderCatalogs::from_json(CATALOG).unwrap()
}

fn activation(
    root: Value,
    agent: Option<&str>,
    model: Option<&str>,
    flags: TurnFlags,
) -> Activation {
    resolve_activation(&root, agent, model, &catalogs(), flags)
}

fn reason(
    root: Value,
    agent: Option<&str>,
    model: Option<&str>,
    flags: TurnFlags,
) -> (bool, ActivationReason) {
    let a = activation(root, agent, model, flags);
    (a.decision.engaged, a.decision.reason)
}

/// (config root, agent, model ref, flags, (engaged, reason)).
type Case = (
    Value,
    Option<&'static str>,
    Option<&'static str>,
    TurnFlags,
    (bool, ActivationReason),
);

#[test]
fn activation_follows_enabled_tiers_agents_and_no_tool_runs() {
    let none = TurnFlags::default();
    let cases: Vec<Case> = vec![
        (
            json!({"tools": {"codeMode": false}}),
            None,
            Some("e2e/preferred-model"),
            none,
            (false, ActivationReason::Disabled),
        ),
        (
            json!({"tools": {"codeMode": {"timeoutMs": 500}}}),
            None,
            Some("e2e/capable-model"),
            none,
            (false, ActivationReason::AutoCapable),
        ),
        (
            json!({"tools": {"codeMode": true}}),
            None,
            Some("e2e/capable-model"),
            none,
            (true, ActivationReason::Forced),
        ),
        (
            json!({"tools": {"codeMode": "auto"}}),
            None,
            Some("e2e/preferred-model"),
            none,
            (true, ActivationReason::AutoPreferred),
        ),
        (
            json!({"tools": {"codeMode": "auto"}}),
            None,
            Some("e2e/capable-model"),
            none,
            (false, ActivationReason::AutoCapable),
        ),
        (
            json!({}),
            None,
            Some("e2e/unlisted"),
            none,
            (false, ActivationReason::AutoUnflagged),
        ),
        (
            json!({}),
            None,
            None,
            none,
            (false, ActivationReason::AutoUnflagged),
        ),
        (
            json!({"tools": {"codeMode": true}}),
            None,
            Some("e2e/no-tools"),
            none,
            (false, ActivationReason::NoToolSupport),
        ),
        (
            json!({"tools": {"codeMode": true}}),
            None,
            None,
            TurnFlags {
                disable_tools: true,
                ..none
            },
            (false, ActivationReason::DisableTools),
        ),
        (
            json!({"tools": {"codeMode": true}}),
            None,
            None,
            TurnFlags {
                raw_model_call: true,
                ..none
            },
            (false, ActivationReason::RawModelCall),
        ),
        (
            json!({"tools": {"codeMode": true}}),
            None,
            None,
            TurnFlags {
                native_harness: true,
                ..none
            },
            (false, ActivationReason::NativeHarness),
        ),
        (
            json!({"tools": {"codeMode": true, "allow": []}}),
            None,
            None,
            none,
            (false, ActivationReason::EmptyAllowList),
        ),
        (
            json!({"tools": {"codeMode": true}, "agents": {"list": [{"id": "ops", "tools": {"codeMode": false}}]}}),
            Some("ops"),
            None,
            none,
            (false, ActivationReason::Disabled),
        ),
        (
            json!({"tools": {"codeMode": false}, "agents": {"list": [{"id": "ops", "tools": {"codeMode": "auto"}}]}}),
            Some("ops"),
            Some("e2e/preferred-model"),
            none,
            (true, ActivationReason::AutoPreferred),
        ),
        (
            json!({"tools": {"codeMode": true}, "agents": {"list": [{"id": "ops", "tools": {"allow": []}}]}}),
            Some("ops"),
            None,
            none,
            (false, ActivationReason::EmptyAllowList),
        ),
    ];
    for (i, (root, agent, model, flags, want)) in cases.into_iter().enumerate() {
        assert_eq!(reason(root, agent, model, flags), want, "case {i}");
    }
    // The bundled catalogs flag anthropic/claude-opus-5 "preferred".
    let bundled = resolve_activation(
        &json!({}),
        None,
        Some("anthropic/claude-opus-5"),
        ProviderCatalogs::bundled(),
        TurnFlags::default(),
    );
    assert_eq!(bundled.decision.reason, ActivationReason::AutoPreferred);
}

#[test]
fn model_cost_reads_the_catalog_row() {
    let json: Value = serde_json::from_str(CATALOG).unwrap();
    assert_eq!(
        model_cost(&json, "e2e/preferred-model"),
        Some(ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75
        })
    );
    assert_eq!(model_cost(&json, "e2e/capable-model"), None);
    assert_eq!(model_cost(&json, "other/preferred-model"), None);
    assert_eq!(model_cost(&json, "no-slash"), None);
}

/// Static tools for the turns: each returns `{content, details}` with `details` from the table,
/// `echo` returns its input, `slow` settles after 1500 ms.
struct Tools;

impl ToolExecutor for Tools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move {
            let details = match call.tool_name.as_str() {
                "weather" => json!({"city": "Oslo", "tempC": 4}),
                "image" => json!({"mimeType": "image/png", "toolId": call.tool_id}),
                "echo" => json!({"input": call.input}),
                "slow" => {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    json!("ready")
                }
                "deploy" => json!("deployed"),
                other => return Err(ToolError::unknown_tool(format!("no tool {other}"))),
            };
            Ok(
                json!({"content": [{"type": "text", "text": details.to_string()}], "details": details}),
            )
        })
    }
}

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::core("weather", "Current weather.")
            .with_parameters(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
        ToolSpec::core("exec", "Run a shell command."),
        ToolSpec::core("image", "Load an image.").with_catalog_mode(CatalogMode::DirectOnly),
        ToolSpec::plugin("demo", "echo", "Echo the input."),
        ToolSpec::core("slow", "A slow report."),
        ToolSpec::core("deploy", "Deploy."),
    ]
}

fn turn(root: Value, model: Option<&str>, flags: TurnFlags) -> AgentTurn {
    AgentTurn::new(
        activation(root, None, model, flags),
        specs(),
        Arc::new(Tools),
    )
}

fn no_runtime() -> Result<Arc<CodeMode>, String> {
    Err("no runtime in this test".into())
}

#[test]
fn disabled_payload_is_the_direct_tool_set() {
    let turn = turn(
        json!({"tools": {"codeMode": false, "deny": ["deploy"]}}),
        None,
        TurnFlags::default(),
    );
    let prepared = turn.prepare().unwrap();
    let want: Vec<ToolDefinition> = specs()
        .iter()
        .filter(|s| s.name != "deploy")
        .map(direct_tool_definition)
        .collect();
    assert_eq!(prepared.payload.tools, want);
    assert_eq!(
        prepared.payload.names(),
        ["weather", "exec", "image", "echo", "slow"]
    );
    assert_eq!(
        prepared.payload.tools[1].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(prepared.payload_check, PayloadCheck::NotEngaged);
    assert!(prepared.visible_tools.is_empty());
}

#[test]
fn engaged_payload_is_exec_wait_and_direct_only_tools() {
    let turn = turn(
        json!({"tools": {"codeMode": true, "deny": ["deploy"]}}),
        None,
        TurnFlags::default(),
    );
    let prepared = turn.prepare().unwrap();
    assert_eq!(prepared.payload.names(), ["exec", "wait", "image"]);
    let prompt = codemode_catalog::namespace_prompt(&prepared.catalog);
    assert_eq!(
        prepared.payload.tools[0],
        exec_tool(Some(&prepared.catalog), prompt.as_deref())
    );
    assert_eq!(prepared.payload.tools[1], wait_tool());
    assert_eq!(
        prepared.payload.tools[2],
        direct_tool_definition(&specs()[2])
    );
    assert_eq!(prepared.visible_tools, ["exec", "wait", "image"]);
    assert_eq!(prepared.payload_check, PayloadCheck::Passed);
    let ids: Vec<&str> = prepared.catalog.entries().iter().map(|e| e.id()).collect();
    assert_eq!(
        ids,
        [
            "openclaw:core:exec",
            "openclaw:core:slow",
            "openclaw:core:weather",
            "openclaw:demo:echo"
        ]
    );

    // A required direct tool is visible and cataloged.
    let mut required = self::turn(
        json!({"tools": {"codeMode": true}}),
        None,
        TurnFlags::default(),
    );
    required.required_direct = vec!["weather".into()];
    let prepared = required.prepare().unwrap();
    assert_eq!(
        prepared.payload.names(),
        ["exec", "wait", "weather", "image"]
    );
    assert!(prepared.catalog.entry("openclaw:core:weather").is_some());
}

#[test]
fn the_payload_check_fails_closed() {
    let payload = |names: &[&str]| Payload {
        tools: names
            .iter()
            .map(|n| ToolDefinition {
                name: n.to_string(),
                description: String::new(),
                parameters: json!({}),
                hide_from_channel_progress: None,
            })
            .collect(),
    };
    let approved = vec!["image".to_string()];
    assert_eq!(
        check_payload(&payload(&["exec", "wait", "image"]), &approved),
        Ok(())
    );
    assert_eq!(
        check_payload(&payload(&["exec", "wait"]), &approved),
        Ok(())
    );
    let cases: Vec<(&[&str], &str)> = vec![
        (&["wait", "image"], "code mode payload check failed: the provider payload has 0 \"exec\" tools (expected exactly one)"),
        (&["exec", "exec", "wait"], "code mode payload check failed: the provider payload has 2 \"exec\" tools (expected exactly one)"),
        (&["exec"], "code mode payload check failed: the provider payload has 0 \"wait\" tools (expected exactly one)"),
        (&["exec", "wait", "weather"], "code mode payload check failed: \"weather\" is not an approved direct tool"),
        (&["exec", "wait", "image", "image"], "code mode payload check failed: \"image\" appears more than once"),
    ];
    for (names, message) in cases {
        let err = check_payload(&payload(names), &approved).unwrap_err();
        assert_eq!(err.to_string(), message, "{names:?}");
    }

    // A tool a host adds after the surface is built fails the engaged run.
    let mut late = turn(
        json!({"tools": {"codeMode": true}}),
        None,
        TurnFlags::default(),
    );
    late.late_tools = vec![direct_tool_definition(&ToolSpec::core(
        "weather",
        "Current weather.",
    ))];
    match late.prepare() {
        Err(AgentError::Payload(PayloadError::Unapproved { name })) => assert_eq!(name, "weather"),
        other => panic!(
            "expected a payload failure, got {:?}",
            other.map(|p| p.payload.names().join(","))
        ),
    }
    // Not engaged: the same late tool is ordinary direct exposure.
    let mut direct = turn(
        json!({"tools": {"codeMode": false}}),
        None,
        TurnFlags::default(),
    );
    direct.late_tools = late.late_tools.clone();
    assert_eq!(
        direct.prepare().unwrap().payload.names(),
        ["weather", "exec", "image", "echo", "slow", "deploy", "weather"]
    );
}

#[test]
fn runs_without_tools_skip_the_surface_and_the_check() {
    for (root, flags, why) in [
        (
            json!({"tools": {"codeMode": true}}),
            TurnFlags {
                disable_tools: true,
                ..TurnFlags::default()
            },
            ActivationReason::DisableTools,
        ),
        (
            json!({"tools": {"codeMode": true, "allow": []}}),
            TurnFlags::default(),
            ActivationReason::EmptyAllowList,
        ),
    ] {
        let mut t = turn(root, None, flags);
        // Even a late tool does not trigger the check: the run has no tools at all.
        t.late_tools = vec![direct_tool_definition(&ToolSpec::core("weather", "w"))];
        assert_eq!(t.activation.decision.reason, why);
        let prepared = t.prepare().unwrap();
        assert_eq!(prepared.payload.tools, vec![]);
        assert_eq!(prepared.payload_check, PayloadCheck::NoTools);
    }
}

#[tokio::test]
async fn an_engaged_run_whose_runtime_cannot_load_fails_closed() {
    let script = Script::from_json(r#"{"turns": [{"text": "hi"}]}"#).unwrap();
    let t = turn(
        json!({"tools": {"codeMode": true}}),
        None,
        TurnFlags::default(),
    );
    let err = t.run(&script, no_runtime).await.unwrap_err();
    assert_eq!(err.code(), "runtime_unavailable");
    assert_eq!(
        err.to_json(),
        json!({"status": "failed", "code": "runtime_unavailable", "error": "code mode is engaged for this run (tools.codeMode.enabled is true) but the quickjs-wasi runtime could not load: no runtime in this test; the run fails instead of exposing its tools directly"})
    );
    // Not engaged: the loader is never called and the turn runs with direct tools.
    let t = turn(
        json!({"tools": {"codeMode": false}}),
        None,
        TurnFlags::default(),
    );
    let envelope = t.run(&script, no_runtime).await.unwrap();
    assert_eq!(envelope.final_text.as_deref(), Some("hi"));
    assert!(!envelope.meta.agent_meta.code_mode_engaged);
}

#[test]
fn result_references_resolve_dotted_paths() {
    let mut results = HashMap::new();
    results.insert(
        "c1".to_string(),
        json!({"status": "waiting", "runId": "cm_1", "value": {"items": [{"n": 7}]}}),
    );
    let args = json!({"runId": "$result:c1.runId", "nested": ["$result:c1.value.items.0.n", {"all": "$result:c1"}], "plain": "$results", "n": 1});
    assert_eq!(
        resolve_references(&args, &results).unwrap(),
        json!({"runId": "cm_1", "nested": [7, {"all": results["c1"]}], "plain": "$results", "n": 1})
    );
    let err = resolve_references(&json!("$result:c2.runId"), &results).unwrap_err();
    assert_eq!(
        err,
        ReferenceError::NoResult {
            reference: "$result:c2.runId".into(),
            call_id: "c2".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "\"$result:c2.runId\": call \"c2\" has no result yet"
    );
    let err = resolve_references(&json!("$result:c1.value.items.3"), &results).unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"$result:c1.value.items.3\": the result of call \"c1\" has no value at \"value.items.3\""
    );
}

#[test]
fn script_format() {
    let script = Script::from_json(
        r#"{"turns": [
            {"toolCalls": [{"id": "c1", "name": "exec", "arguments": {"code": "return 1"}}, {"id": "c2", "name": "image", "abort": true}],
             "usage": {"input": 10, "output": 2, "cacheRead": 5}, "delayMs": 3},
            {"text": "done", "usage": {"input": 1, "output": 1}}
        ]}"#,
    )
    .unwrap();
    assert_eq!(script.turns.len(), 2);
    assert_eq!(
        script.turns[0].usage,
        Some(TokenUsage {
            input: 10,
            output: 2,
            cache_read: 5,
            cache_write: 0
        })
    );
    assert_eq!(script.turns[0].delay, Duration::from_millis(3));
    let calls: Vec<(&str, &str, &Value, bool)> = script
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments, c.abort))
        .collect();
    assert_eq!(
        calls,
        [
            ("c1", "exec", &json!({"code": "return 1"}), false),
            ("c2", "image", &json!({}), true)
        ]
    );
    assert_eq!(script.turns[1].step, TurnStep::Text("done".into()));

    let errors = [
        (r#"[]"#, "script: expected an object {\"turns\": [...]}"),
        (r#"{"turns": [], "model": 1}"#, "script: the script: unknown key \"model\" (expected \"turns\")"),
        (r#"{"turns": [{}]}"#, "script: turn #0: needs exactly one of \"toolCalls\" or \"text\""),
        (r#"{"turns": [{"text": "a", "toolCalls": []}]}"#, "script: turn #0: needs exactly one of \"toolCalls\" or \"text\""),
        (r#"{"turns": [{"toolCalls": []}]}"#, "script: turn #0: \"toolCalls\" is empty"),
        (r#"{"turns": [{"toolCalls": [{"id": "a", "name": "exec"}, {"id": "a", "name": "wait"}]}]}"#, "script: turn #0 call #1: duplicate call id \"a\""),
        (r#"{"turns": [{"toolCalls": [{"id": "a.b", "name": "exec"}]}]}"#, "script: turn #0 call #0: id \"a.b\" must not contain '.' (it ends a $result: reference)"),
        (r#"{"turns": [{"toolCalls": [{"id": "a", "name": ""}]}]}"#, "script: turn #0 call #0: \"name\" must be a non-empty string"),
        (r#"{"turns": [{"text": "x", "usage": {"output": 1}}]}"#, "script: turn #0: usage needs \"input\""),
        (r#"{"turns": [{"text": "x", "usage": {"input": 1, "output": 1, "cached": 2}}]}"#, "script: turn #0 usage: unknown key \"cached\" (expected \"input\", \"output\", \"cacheRead\", \"cacheWrite\")"),
    ];
    for (text, message) in errors {
        assert_eq!(
            Script::from_json(text).unwrap_err(),
            ScriptError(message.trim_start_matches("script: ").into()),
            "{text}"
        );
    }
}

fn global() -> Result<Arc<CodeMode>, String> {
    Runtime::global()
        .map(|r| Arc::new(CodeMode::new(r)))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn an_engaged_turn_runs_exec_wait_and_direct_tools() {
    let script = Script::from_json(
        r#"{"turns": [
            {"toolCalls": [
                {"id": "c1", "name": "exec", "arguments": {"code": "text('asked'); const w = await tools.weather({}); const r = await tools.callValue('openclaw:core:slow', {}); text('after ' + r); return {city: w.city, r}"}},
                {"id": "c2", "name": "image", "arguments": {"path": "a.png"}}
            ], "usage": {"input": 1000, "output": 100}},
            {"toolCalls": [{"id": "c3", "name": "wait", "arguments": {"runId": "$result:c1.runId"}}],
             "usage": {"input": 2000, "output": 50, "cacheRead": 1000}},
            {"toolCalls": [{"id": "c4", "name": "deploy", "arguments": {}}, {"id": "c5", "name": "wait", "arguments": {"runId": "$result:c9.runId"}}]},
            {"text": "The weather in Oslo; the report is ready."}
        ]}"#,
    )
    .unwrap();
    let mut t = turn(
        json!({"tools": {"codeMode": {"enabled": "auto", "timeoutMs": 1000}, "deny": ["deploy"]}}),
        Some("e2e/preferred-model"),
        TurnFlags::default(),
    );
    t.model_cost = model_cost(
        &serde_json::from_str(CATALOG).unwrap(),
        "e2e/preferred-model",
    );
    t.include_trajectory = true;
    let envelope = t.run(&script, global).await.unwrap();
    let json = envelope.to_json();
    assert_eq!(
        json["activation"],
        json!({"engaged": true, "reason": "auto_preferred", "payloadCheck": "passed", "visibleTools": ["exec", "wait", "image"]})
    );
    let calls = &json["transcript"]["toolCalls"];
    assert_eq!(calls.as_array().unwrap().len(), 5);
    assert_eq!(calls[0]["status"], "waiting");
    let run_id = calls[0]["result"]["runId"].as_str().unwrap().to_string();
    assert!(run_id.starts_with("cm_"), "{run_id}");
    assert_eq!(
        calls[0]["result"]["output"],
        json!([{"type": "text", "text": "asked"}])
    );
    assert_eq!(calls[1]["name"], "image");
    assert_eq!(calls[1]["status"], "completed");
    assert_eq!(
        calls[1]["result"]["details"],
        json!({"mimeType": "image/png", "toolId": "openclaw:core:image"})
    );
    assert_eq!(calls[2]["arguments"], json!({"runId": run_id}));
    assert_eq!(calls[2]["status"], "completed");
    assert_eq!(
        calls[2]["result"]["value"],
        json!({"city": "Oslo", "r": "ready"})
    );
    assert_eq!(
        calls[2]["result"]["output"],
        json!([{"type": "text", "text": "after ready"}])
    );
    assert_eq!(calls[3]["status"], "failed");
    assert_eq!(
        calls[3]["error"],
        "tool \"deploy\" is not in the provider payload"
    );
    assert_eq!(calls[4]["status"], "failed");
    assert_eq!(
        calls[4]["error"],
        "\"$result:c9.runId\": call \"c9\" has no result yet"
    );
    let nested: Vec<(&str, &str, &str)> = calls[0]["nestedCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["toolCallId"].as_str().unwrap(),
                n["parentToolCallId"].as_str().unwrap(),
                n["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nested,
        [
            ("tool_search_code:c1:weather:1", "c1", "ok"),
            ("tool_search_code:c1:slow:2", "c1", "ok")
        ]
    );
    assert_eq!(
        json["meta"],
        json!({
            "agentMeta": {"codeModeEngaged": true, "assistantTurns": 4, "bridgeCalls": {"search": 0, "describe": 0, "call": 2},
                          "costUsd": 0.01155},
            "toolSummary": {"calls": 5, "byName": {"deploy": 1, "exec": 1, "image": 1, "wait": 2}}
        })
    );
    assert_eq!(
        json["runtime"],
        json!({"parkedRuns": 0, "typescriptTransforms": 0})
    );
    assert_eq!(
        json["finalText"],
        "The weather in Oslo; the report is ready."
    );
    let types: Vec<&str> = json["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "tool_call").count(), 5);
    assert_eq!(
        types.iter().filter(|t| **t == "nested_tool_call").count(),
        2
    );
    assert!(
        types.contains(&"run_parked") && types.contains(&"run_resumed"),
        "{types:?}"
    );
}

#[test]
fn control_and_denied_tools_are_never_in_either_payload() {
    use codemode_catalog::ControlKind;
    let mut specs = specs();
    specs
        .push(ToolSpec::core("tool_search", "Search tools.").with_control(ControlKind::ToolSearch));
    specs.push(ToolSpec::core("wait", "Code mode's wait.").with_control(ControlKind::CodeMode));
    specs.push(ToolSpec::core("secret", "Denied by the host.").with_allowed(false));
    for (enabled, want) in [
        (
            false,
            vec!["weather", "exec", "image", "echo", "slow", "deploy"],
        ),
        (true, vec!["exec", "wait", "image"]),
    ] {
        let a = activation(
            json!({"tools": {"codeMode": enabled}}),
            None,
            None,
            TurnFlags::default(),
        );
        let prepared = AgentTurn::new(a, specs.clone(), Arc::new(Tools))
            .prepare()
            .unwrap();
        assert_eq!(prepared.payload.names(), want, "enabled: {enabled}");
        assert!(prepared
            .catalog
            .entries()
            .iter()
            .all(|e| !["tool_search", "wait", "secret"].contains(&e.name())));
    }
}

#[test]
fn a_direct_only_tool_denied_by_its_id_is_in_neither_payload() {
    for (enabled, want) in [
        (false, vec!["weather", "exec", "echo", "slow", "deploy"]),
        (true, vec!["exec", "wait"]),
    ] {
        let prepared = turn(
            json!({"tools": {"codeMode": enabled, "deny": ["openclaw:core:image"]}}),
            None,
            TurnFlags::default(),
        )
        .prepare()
        .unwrap();
        assert_eq!(prepared.payload.names(), want, "enabled: {enabled}");
    }
}
