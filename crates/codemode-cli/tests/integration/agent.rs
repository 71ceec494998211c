//! `codemode agent`: a scripted turn end to end through the binary, with exact envelope values
//! (docs/contract/host.md#h5, #h6).

use crate::common;

use std::path::Path;

use serde_json::{json, Value};

fn write(dir: &Path, name: &str, value: &Value) -> String {
    common::write_file(dir, name, &value.to_string())
        .display()
        .to_string()
}

fn agent(args: &[&str]) -> (i32, Value, String) {
    let out = common::codemode().arg("agent").args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tools() -> Value {
    json!([
        {"name": "weather", "description": "Current weather.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
         "result": {"city": "Oslo", "tempC": 4}},
        {"name": "image", "description": "Load an image.", "catalogMode": "direct-only",
         "result": {"mimeType": "image/png"}},
        {"name": "slow", "description": "Slow.", "result": "ready", "delayMs": 1500}
    ])
}

#[test]
fn an_engaged_turn_prints_its_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", &tools());
    let config = write(
        dir.path(),
        "config.json",
        &json!({"tools": {"codeMode": {"enabled": "auto", "timeoutMs": 1000}}}),
    );
    let catalog = write(
        dir.path(),
        "catalog.json",
        &json!({"catalogs": [{"provider": "e2e", "models": [
            {"id": "m", "compat": {"codeMode": "preferred"}, "cost": {"input": 2, "output": 10}}]}]}),
    );
    let script = write(
        dir.path(),
        "script.json",
        &json!({"turns": [
            {"toolCalls": [
                {"id": "c1", "name": "exec", "arguments": {"code": "const w = await tools.weather({city: 'Oslo'}); const r = await tools.slow({}); text('after restore'); return {city: w.city, r}"}},
                {"id": "c2", "name": "image", "arguments": {}}
            ], "usage": {"input": 1000, "output": 100}},
            {"toolCalls": [{"id": "c3", "name": "wait", "arguments": {"runId": "$result:c1.runId"}}],
             "usage": {"input": 500, "output": 10}},
            {"text": "done"}
        ]}),
    );
    let trajectory = dir.path().join("trajectory.jsonl");
    let (code, envelope, stderr) = agent(&[
        "--script",
        &script,
        "--config",
        &config,
        "--provider-catalog",
        &catalog,
        "--model",
        "e2e/m",
        "--tools",
        &tools,
        "--trajectory",
        trajectory.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<&str> = envelope["payload"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["exec", "wait", "image"]);
    assert_eq!(
        envelope["activation"],
        json!({"engaged": true, "reason": "auto_preferred", "payloadCheck": "passed", "visibleTools": ["exec", "wait", "image"]})
    );
    assert_eq!(
        envelope["meta"],
        json!({"agentMeta": {"codeModeEngaged": true, "assistantTurns": 3,
                             "bridgeCalls": {"search": 0, "describe": 0, "call": 2}, "costUsd": 0.0041},
               "toolSummary": {"calls": 3, "byName": {"exec": 1, "image": 1, "wait": 1}}})
    );
    let calls = envelope["transcript"]["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["status"], "waiting");
    let run_id = calls[0]["result"]["runId"].as_str().unwrap();
    assert_eq!(
        calls[1]["result"]["details"],
        json!({"mimeType": "image/png"})
    );
    assert_eq!(calls[2]["arguments"], json!({"runId": run_id}));
    assert_eq!(calls[2]["status"], "completed");
    assert_eq!(
        calls[2]["result"]["value"],
        json!({"city": "Oslo", "r": "ready"})
    );
    assert_eq!(
        calls[2]["result"]["output"],
        json!([{"type": "text", "text": "after restore"}])
    );
    let nested: Vec<(&str, &str)> = calls[0]["nestedCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["toolCallId"].as_str().unwrap(),
                n["parentToolCallId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nested,
        [
            ("tool_search_code:c1:weather:1", "c1"),
            ("tool_search_code:c1:slow:2", "c1")
        ]
    );
    assert_eq!(
        envelope["runtime"],
        json!({"parkedRuns": 0, "typescriptTransforms": 0})
    );
    assert_eq!(envelope["finalText"], "done");
    let lines = std::fs::read_to_string(&trajectory).unwrap();
    assert_eq!(
        lines.lines().count(),
        envelope["trajectory"].as_array().unwrap().len()
    );
}

#[test]
fn a_disabled_turn_exposes_the_tools_directly_and_disable_tools_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", &tools());
    let config = write(
        dir.path(),
        "config.json",
        &json!({"tools": {"codeMode": false}}),
    );
    let script = write(
        dir.path(),
        "script.json",
        &json!({"turns": [{"toolCalls": [{"id": "w", "name": "weather", "arguments": {"city": "Oslo"}}]}]}),
    );
    let (code, envelope, stderr) =
        agent(&["--script", &script, "--config", &config, "--tools", &tools]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        envelope["payload"],
        json!({"tools": [
            {"name": "weather", "description": "Current weather.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "image", "description": "Load an image.", "parameters": {"type": "object", "properties": {}}},
            {"name": "slow", "description": "Slow.", "parameters": {"type": "object", "properties": {}}}
        ]})
    );
    let call = &envelope["transcript"]["toolCalls"][0];
    assert_eq!(call["status"], "completed");
    assert_eq!(call["toolKind"], "tool");
    assert_eq!(
        call["result"],
        json!({"content": [{"type": "text", "text": "{\"city\":\"Oslo\",\"tempC\":4}"}], "details": {"city": "Oslo", "tempC": 4}})
    );
    assert_eq!(
        envelope["meta"],
        json!({"agentMeta": {"codeModeEngaged": false, "assistantTurns": 1,
                             "bridgeCalls": {"search": 0, "describe": 0, "call": 0}},
               "toolSummary": {"calls": 1, "byName": {"weather": 1}}})
    );
    assert_eq!(envelope["activation"]["reason"], "disabled");

    let (code, envelope, stderr) =
        agent(&["--script", &script, "--tools", &tools, "--disable-tools"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(envelope["payload"], json!({"tools": []}));
    assert_eq!(
        envelope["activation"],
        json!({"engaged": false, "reason": "disable_tools", "payloadCheck": "no_tools", "visibleTools": []})
    );
    assert_eq!(
        envelope["transcript"]["toolCalls"][0]["error"],
        "tool \"weather\" is not in the provider payload"
    );
}

#[test]
fn a_bad_script_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "script.json", &json!({"turns": [{}]}));
    let (code, _, stderr) = agent(&["--script", &script]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        format!("codemode: --script {script}: script: turn #0: needs exactly one of \"toolCalls\" or \"text\"")
    );
}
