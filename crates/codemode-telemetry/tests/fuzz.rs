//! Fuzz target `trajectory_lines` (docs/threat-model.md, "Fuzzing"): trajectory files read back
//! (`parse_json_lines`, what tools that replay or inspect a `--trajectory` file run) never panic,
//! every accepted line writes back to a line that reads as the same event, and the transcript
//! projection of whatever parses never panics.

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use codemode_telemetry::{parse_json_lines, TrajectoryEvent, Transcript};
use serde_json::{json, Value};

/// Valid lines of every event type, the seeds and the generator's templates.
const LINES: &[&str] = &[
    r#"{"type":"tool_call","ts":"2026-12-01T10:00:00.000Z","runId":"r1","toolCallId":"call_1","toolName":"exec","toolKind":"code_mode_exec","toolInputKind":"javascript","input":{"code":"return 1"}}"#,
    r#"{"type":"nested_tool_call","ts":"2026-12-01T10:00:00.001Z","toolCallId":"tool_search_code:call_1:weather:1","parentToolCallId":"call_1","toolId":"openclaw:core:weather","toolName":"weather","method":"callValue","input":{"city":"Oslo"}}"#,
    r#"{"type":"nested_tool_result","ts":"2026-12-01T10:00:00.002Z","toolCallId":"tool_search_code:call_1:weather:1","parentToolCallId":"call_1","toolId":"openclaw:core:weather","toolName":"weather","method":"callValue","status":"ok","durationMs":12,"result":{"content":[],"details":{"tempC":4}}}"#,
    r#"{"type":"run_parked","ts":"2026-12-01T10:00:01.000Z","codeModeRunId":"cm_1","toolCallId":"call_1","parentToolCallId":"call_1","reason":"pending_tools","pendingToolCalls":1,"snapshotBytes":48213}"#,
    r#"{"type":"tool_result","ts":"2026-12-01T10:00:01.001Z","toolCallId":"call_1","toolName":"exec","toolKind":"code_mode_exec","toolInputKind":"javascript","status":"waiting","codeModeRunId":"cm_1","durationMs":1000,"result":{"status":"waiting","runId":"cm_1"}}"#,
    r#"{"type":"run_resumed","ts":"2026-12-01T10:00:02.000Z","codeModeRunId":"cm_1","toolCallId":"call_2","parentToolCallId":"call_1","settledToolCalls":1}"#,
    r#"{"type":"approval_requested","ts":"2026-12-01T10:00:03.000Z","approvalId":"approval_1","toolCallId":"call_3","toolId":"exec","toolName":"exec","input":{"code":"return 1"},"reason":"check"}"#,
    r#"{"type":"approval_resolved","ts":"2026-12-01T10:00:04.000Z","approvalId":"approval_1","toolCallId":"call_3","decision":"deny","reason":"no answer within 1000 ms (timeoutMs)"}"#,
    r#"{"type":"tool_result","ts":"2026-12-01T10:00:05.000Z","toolCallId":"call_4","toolName":"message","toolKind":"tool","status":"failed","durationMs":3,"error":"channel closed"}"#,
];

/// A trajectory of template lines whose values are swapped for hostile ones.
fn trajectory(rng: &mut engine::Rng) -> Vec<u8> {
    let mut text = String::new();
    for _ in 0..=rng.below(6) {
        let mut line: Value = serde_json::from_str(LINES[rng.below(LINES.len())]).unwrap();
        let map = line.as_object_mut().unwrap();
        for _ in 0..rng.below(4) {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = if rng.chance(4) {
                engine::key(rng)
            } else {
                keys[rng.below(keys.len())].clone()
            };
            if rng.chance(5) {
                map.remove(&key);
            } else {
                map.insert(key, engine::json_value(rng, 4));
            }
        }
        if rng.chance(10) {
            line = json!([line]);
        }
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text.into_bytes()
}

#[test]
fn fuzz_trajectory_lines() {
    let seeds: Vec<Vec<u8>> = LINES
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .chain([LINES.join("\n").into_bytes()])
        .collect();
    engine::run("trajectory_lines", &seeds, Some(&trajectory), &|bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let Ok(events) = parse_json_lines(text) else {
            return;
        };
        for event in &events {
            let line = event.to_json_line();
            let again = TrajectoryEvent::from_json_line(&line)
                .unwrap_or_else(|e| panic!("{line} does not read back: {e}"));
            assert_eq!(&again, event, "{line}");
        }
        let _ = Transcript::from_events(&events);
    });
}
