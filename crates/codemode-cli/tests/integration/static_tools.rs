//! `codemode exec` against the built binary: built-in tools and static tools from `--tools FILE`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The static tools every test here uses.
const TOOLS: &str = r#"[
    {"name": "fixed", "description": "Always the same answer.", "result": {"answer": 42}},
    {"name": "fails", "error": "the service is down"},
    {"name": "echo", "description": "Returns its input.", "echo": true,
     "parameters": {"type": "object"}},
    {"name": "slow", "result": "done", "delayMs": 1000}
]"#;

fn write_tools(dir: &Path, text: &str) -> PathBuf {
    common::write_file(dir, "tools.json", text)
}

/// Runs `codemode exec --tools <TOOLS> -e CODE EXTRA…` and returns (exit code, stdout JSON).
fn exec_static(code: &str, extra: &[&str]) -> (i32, Value) {
    common::exec_with_tools(TOOLS, code, extra)
}

/// Runs [`exec_static`] and checks that it exits 0 with the completed result of `value` and
/// `output`, after `calls` tool calls.
fn assert_completed(code: &str, extra: &[&str], value: Value, output: Value, calls: u64) {
    let (exit, result) = exec_static(code, extra);
    assert_eq!(exit, 0, "{result}");
    assert_eq!(
        result,
        json!({
            "status": "completed",
            "value": value,
            "output": output,
            "replaySafe": false,
            "telemetry": telemetry(calls)
        })
    );
}

/// Telemetry of a run over [`TOOLS`] with `calls` tool calls.
fn telemetry(calls: u64) -> Value {
    common::core_telemetry(4, calls)
}

#[test]
fn eval_returns_three_with_builtin_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::output(&[
        "exec",
        "--root",
        dir.path().to_str().unwrap(),
        "-e",
        "return 1+2",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({
            "status": "completed",
            "value": 3,
            "output": [],
            "replaySafe": false,
            "telemetry": common::core_telemetry(3, 0)
        })
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

#[test]
fn result_tool_returns_its_details() {
    assert_completed(
        r#"const whole = await tools.call("openclaw:core:fixed", {});
           const value = await tools.fixed({});
           return {whole, value, ids: ALL_TOOLS.map((t) => t.id)};"#,
        &[],
        json!({
            "whole": {
                "tool": {
                    "id": "openclaw:core:fixed",
                    "name": "fixed",
                    "description": "Always the same answer.",
                    "source": "openclaw",
                    "sourceName": "core",
                    "input": "unknown"
                },
                "result": {
                    "content": [{"type": "text", "text": "{\"answer\":42}"}],
                    "details": {"answer": 42}
                }
            },
            "value": {"answer": 42},
            "ids": [
                "openclaw:core:echo",
                "openclaw:core:fails",
                "openclaw:core:fixed",
                "openclaw:core:slow"
            ]
        }),
        json!([]),
        2,
    );
}

#[test]
fn error_tool_rejects_with_its_message() {
    assert_completed(
        r#"try { await tools.fails({}); return "resolved"; }
           catch (e) { return [e instanceof Error, e.message]; }"#,
        &[],
        json!([true, "the service is down"]),
        json!([]),
        1,
    );

    let (code, result) = exec_static(r#"await tools.fails({}); return "resolved";"#, &[]);
    assert_eq!(code, 1);
    assert_eq!(result["status"], json!("failed"));
    assert_eq!(result["code"], json!("internal_error"));
    assert_eq!(result["error"], json!("Error: the service is down"));
}

#[test]
fn echo_tool_returns_its_input() {
    assert_completed(
        r#"return await tools.echo({a: 1, b: [true, null, "x"], c: undefined});"#,
        &[],
        json!({"input": {"a": 1, "b": [true, null, "x"]}}),
        json!([]),
        1,
    );
}

#[test]
fn delayed_tool_parks_the_run() {
    // --wall-clock-ms 0: print the first result, the `waiting` one, without following it.
    let (code, result) = exec_static(
        r#"text("start"); const v = await tools.slow({}); text("end"); return v;"#,
        &["--timeout-ms", "100", "--wall-clock-ms", "0"],
    );
    assert_eq!(code, 1);
    common::assert_parked_on_first_call(&result, telemetry(1));
}

#[test]
fn delayed_tool_completes_through_the_wait_loop() {
    let started = Instant::now();
    assert_completed(
        r#"text("start"); const v = await tools.slow({}); text("end"); return v;"#,
        &["--timeout-ms", "100"],
        json!("done"),
        json!([{"type": "text", "text": "start"}, {"type": "text", "text": "end"}]),
        1,
    );
    assert!(started.elapsed() >= Duration::from_millis(1000));
}

/// Runs `codemode exec --tools FILE -e 'return 1'` on a file with `text`; returns (exit code,
/// stdout, stderr).
/// D3 (docs/contract/decisions.md#d3): a direct-only tool of the tools file is visible, so
/// `telemetry.visibleTools` lists it after `exec` and `wait` (issue 25); it is not cataloged.
#[test]
fn direct_only_tools_are_visible_tools() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write_tools(
        dir.path(),
        r#"[{"name": "fixed", "result": 1},
            {"name": "computer", "description": "Direct.", "catalogMode": "direct-only", "result": 2}]"#,
    );
    let out = common::output(&[
        "exec",
        "--tools",
        tools.to_str().unwrap(),
        "-e",
        "return ALL_TOOLS.map((t) => t.name)",
    ]);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["value"], json!(["fixed"]));
    assert_eq!(
        value["telemetry"]["visibleTools"],
        json!(["exec", "wait", "computer"])
    );
}

fn exec_with_file(text: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let tools = write_tools(dir.path(), text);
    let out = common::output(&["exec", "--tools", tools.to_str().unwrap(), "-e", "return 1"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let prefix = format!("codemode: --tools {}: ", tools.display());
    let message = stderr
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("stderr {stderr:?} does not start with {prefix:?}"))
        .to_string();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        message,
    )
}

#[test]
fn bad_tools_files_are_usage_errors() {
    let cases = [
        (
            r#"{"name": "a", "result": 1}"#,
            "expected a JSON array of tools, got an object\n",
        ),
        (
            "[",
            "not valid JSON: EOF while parsing a list at line 1 column 1\n",
        ),
        (
            r#"[{"name": "a", "description": "x"}]"#,
            "tool #0 (\"a\"): needs one of \"result\", \"resultByAction\", \"error\" or \"echo\"\n",
        ),
        (
            r#"[{"name": "a", "result": 1}, {"name": "b", "result": 1, "error": "no"}]"#,
            "tool #1 (\"b\"): has \"result\" and \"error\"; give exactly one of \"result\", \"resultByAction\", \"error\" or \"echo\"\n",
        ),
        (
            r#"[{"name": "a", "result": 1, "delayMs": -5}]"#,
            "tool #0 (\"a\"): \"delayMs\" must be a non-negative integer (milliseconds), got -5\n",
        ),
        (
            r#"[{"name": "a", "result": 1, "delayMs": 2.5}]"#,
            "tool #0 (\"a\"): \"delayMs\" must be a non-negative integer (milliseconds), got 2.5\n",
        ),
        (
            r#"[{"name": "a", "echo": "yes"}]"#,
            "tool #0 (\"a\"): \"echo\" must be true, got \"yes\"\n",
        ),
        (
            r#"[{"name": "a", "result": 1}, {"name": "a", "error": "x"}]"#,
            "duplicate catalog id \"openclaw:core:a\": tool #0 (core tool \"a\") and tool #1 (core tool \"a\") both map to it\n",
        ),
    ];
    for (file, expected) in cases {
        let (code, stdout, message) = exec_with_file(file);
        assert_eq!((code, stdout.as_str(), message.as_str()), (2, "", expected));
    }
}

#[test]
fn missing_tools_file_is_a_usage_error() {
    let out = common::output(&[
        "exec",
        "--tools",
        "/nonexistent/tools.json",
        "-e",
        "return 1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "codemode: --tools /nonexistent/tools.json: No such file or directory (os error 2)\n"
    );
    assert!(out.stdout.is_empty());
}
