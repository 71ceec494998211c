//! `codemode session` against the built binary: exec/wait across lines and malformed lines.

use crate::common;

use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use common::{json_lines as lines, write_file as write};

const TOOLS: &str = r#"[
    {"name": "slow", "result": {"ok": true}, "delayMs": 1000},
    {"name": "echo", "echo": true}
]"#;

/// Telemetry of a run over [`TOOLS`] with `calls` tool calls.
fn telemetry(calls: u64) -> Value {
    common::core_telemetry(2, calls)
}

/// Telemetry of an answer that ran nothing (no catalog).
fn empty_telemetry() -> Value {
    common::core_telemetry(0, 0)
}

/// Runs a whole session script on stdin and returns the output.
fn run_script(args: &[&str], script: &str) -> Output {
    common::run(&[&["session"], args].concat(), script)
}

#[test]
fn exec_waiting_then_wait_completes_across_lines() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let mut session = common::session(
        &["--tools", tools.to_str().unwrap(), "--timeout-ms", "100"],
        &[],
        Stdio::piped(),
    );
    let mut ask = |request: Value| -> Value { session.ask(&request) };

    let code = r#"text("start"); const r = await tools.slow({}); text("end"); return r;"#;
    let waiting = ask(json!({"tool": "exec", "args": {"code": code}}));
    let run_id = common::assert_parked_on_first_call(&waiting, telemetry(1));

    // Another run in between, on the same session, does not disturb the parked one.
    let echoed = ask(json!({"tool": "exec", "args": {"code": "return await tools.echo({n: 7})"}}));
    assert_eq!(
        echoed,
        json!({
            "status": "completed",
            "value": {"input": {"n": 7}},
            "output": [],
            "replaySafe": false,
            "telemetry": telemetry(1)
        })
    );

    // The parked run's tool call keeps running between lines; once it has settled, one wait
    // finishes the run.
    std::thread::sleep(Duration::from_millis(1500));
    let completed = ask(json!({"tool": "wait", "args": {"runId": run_id}}));
    assert_eq!(
        completed,
        json!({
            "status": "completed",
            "value": {"ok": true},
            "output": [{"type": "text", "text": "end"}],
            "replaySafe": false,
            "telemetry": telemetry(1)
        })
    );

    // The run is gone once it has settled.
    let gone = ask(json!({"tool": "wait", "args": {"runId": run_id}}));
    assert_eq!(
        gone,
        json!({
            "status": "failed",
            "error": "code mode run is unavailable or expired.",
            "code": "invalid_input",
            "output": [],
            "replaySafe": false,
            "telemetry": empty_telemetry()
        })
    );

    let rest = session.finish();
    assert_eq!(rest.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&rest.stdout), "");
}

#[test]
fn malformed_lines_get_invalid_input_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        "not json\n",
        "{\"tool\": \"run\", \"args\": {}}\n",
        "{\"tool\": \"exec\"}\n",
        "\n",
        "   \n",
        "{\"tool\": \"exec\", \"args\": [\"return 1\"]}\n",
        "[1, 2]\n",
        "{\"tool\": \"exec\", \"args\": {\"code\": \"return 1+2\"}}\r\n",
        "{\"tool\": \"wait\", \"args\": {}}\n",
        "{\"tool\": \"exec\", \"args\": {\"code\": \"return 'no newline at the end'\"}}",
    );
    let out = run_script(&["--root", dir.path().to_str().unwrap()], script);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stderr.clone()).unwrap(), "");
    let invalid =
        |error: &str| json!({"status": "failed", "error": error, "code": "invalid_input"});
    let builtin = common::core_telemetry(3, 0);
    assert_eq!(
        lines(&out),
        vec![
            invalid("line is not valid JSON: expected ident at line 1 column 2"),
            invalid("unknown tool \"run\": expected \"exec\", \"wait\", \"approve\" or \"surface\""),
            invalid("missing \"args\": the exec arguments object"),
            invalid("\"args\" must be an object, got an array"),
            invalid(
                "line must be a JSON object {\"tool\": \"exec\" | \"wait\" | \"approve\" | \"surface\", \"args\": {…}, \"id\"?: …}, got an array"
            ),
            json!({
                "status": "completed",
                "value": 3,
                "output": [],
                "replaySafe": false,
                "telemetry": builtin
            }),
            json!({
                "status": "failed",
                "error": "runId must be a non-empty string.",
                "code": "invalid_input",
                "output": [],
                "replaySafe": false,
                "telemetry": empty_telemetry()
            }),
            json!({
                "status": "completed",
                "value": "no newline at the end",
                "output": [],
                "replaySafe": false,
                "telemetry": builtin
            }),
        ]
    );
}

#[test]
fn invalid_utf8_line_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run_with_stdin(
        common::codemode().args(["session", "--root", dir.path().to_str().unwrap()]),
        b"{\"tool\": \"exec\xff\"}\n",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        lines(&out),
        vec![
            json!({"status": "failed", "error": "line is not valid UTF-8", "code": "invalid_input"})
        ]
    );
}

#[test]
fn disabled_config_answers_every_request_with_the_disabled_result() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config.json",
        r#"{"tools": {"codeMode": {"enabled": false}}}"#,
    );
    let out = run_script(
        &["--config", config.to_str().unwrap()],
        "{\"tool\": \"exec\", \"args\": {\"code\": \"return 1\"}}\n{\"tool\": \"wait\", \"args\": {\"runId\": \"cm_x\"}}\n{\"tool\": 3}\n",
    );
    assert_eq!(out.status.code(), Some(0));
    let disabled =
        json!({"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"});
    assert_eq!(
        lines(&out),
        vec![
            disabled.clone(),
            disabled,
            json!({"status": "failed", "error": "\"tool\" must be \"exec\", \"wait\", \"approve\" or \"surface\", got a number", "code": "invalid_input"}),
        ]
    );
}

#[test]
fn bad_tools_file_stops_the_session_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", r#"[{"name": "a"}]"#);
    let out = run_script(
        &["--tools", tools.to_str().unwrap()],
        "{\"tool\": \"exec\", \"args\": {\"code\": \"return 1\"}}\n",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "codemode: --tools {}: tool #0 (\"a\"): needs one of \"result\", \"resultByAction\", \"error\" or \"echo\"\n",
            tools.display()
        )
    );
}

#[test]
fn tools_and_root_conflict() {
    let out = run_script(&["--tools", "t.json", "--root", "."], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.lines().next(),
        Some("error: the argument '--tools <FILE>' cannot be used with '--root <DIR>'")
    );
}
