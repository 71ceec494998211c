//! `codemode session` against the built binary: exec/wait across lines and malformed lines.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

const TOOLS: &str = r#"[
    {"name": "slow", "result": {"ok": true}, "delayMs": 1000},
    {"name": "echo", "echo": true}
]"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Telemetry of a run over [`TOOLS`] with `calls` tool calls.
fn telemetry(calls: u64) -> Value {
    json!({
        "catalogSize": 2,
        "sources": {"openclaw": 2, "mcp": 0, "client": 0},
        "searchCount": 0,
        "describeCount": 0,
        "callCount": calls,
        "visibleTools": ["exec", "wait"]
    })
}

/// Runs a whole session script on stdin and returns the output.
fn run_script(args: &[&str], script: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .arg("session")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Parses stdout as JSON lines.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn exec_waiting_then_wait_completes_across_lines() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["session", "--tools", tools.to_str().unwrap()])
        .args(["--timeout-ms", "100"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.ends_with('\n'), "{line:?}");
        serde_json::from_str(&line).unwrap()
    };

    let code = r#"text("start"); const r = await tools.slow({}); text("end"); return r;"#;
    let waiting = ask(json!({"tool": "exec", "args": {"code": code}}));
    let run_id = waiting["runId"].as_str().unwrap().to_string();
    assert!(run_id.starts_with("cm_") && run_id.len() == 39, "{run_id}");
    assert_eq!(
        waiting,
        json!({
            "status": "waiting",
            "runId": run_id,
            "reason": "pending_tools",
            "pendingToolCalls": [{"id": "bridge:callValue:1", "method": "callValue"}],
            "replaySafe": false,
            "output": [{"type": "text", "text": "start"}],
            "telemetry": telemetry(1)
        })
    );

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
            "telemetry": {
                "catalogSize": 0,
                "sources": {"openclaw": 0, "mcp": 0, "client": 0},
                "searchCount": 0,
                "describeCount": 0,
                "callCount": 0,
                "visibleTools": ["exec", "wait"]
            }
        })
    );

    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "");
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
    let builtin = json!({
        "catalogSize": 3,
        "sources": {"openclaw": 3, "mcp": 0, "client": 0},
        "searchCount": 0,
        "describeCount": 0,
        "callCount": 0,
        "visibleTools": ["exec", "wait"]
    });
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
                "telemetry": {
                    "catalogSize": 0,
                    "sources": {"openclaw": 0, "mcp": 0, "client": 0},
                    "searchCount": 0,
                    "describeCount": 0,
                    "callCount": 0,
                    "visibleTools": ["exec", "wait"]
                }
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["session", "--root", dir.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"tool\": \"exec\xff\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
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
            "codemode: --tools {}: tool #0 (\"a\"): needs one of \"result\", \"error\" or \"echo\"\n",
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
