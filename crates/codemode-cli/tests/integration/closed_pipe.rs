//! Every subcommand exits quietly when the reader of its standard output (or standard error) has
//! gone away, as Unix tools do: no `failed printing to stdout: Broken pipe` panic (exit 101), no
//! message; exit status 141 (128 + SIGPIPE) for a closed stdout.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `codemode args…` with `input` on stdin and stdout connected to a real pipe whose read end
/// is already closed.
fn run_with_closed_stdout(args: &[&str], input: &str) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The child may exit before reading everything; a closed stdin is fine here.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn assert_quiet_141(out: &Output) {
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "nothing on stderr about the closed pipe"
    );
    assert_eq!(out.status.code(), Some(141));
}

#[test]
fn exec_exits_quietly_on_a_closed_stdout() {
    let out = run_with_closed_stdout(&["exec", "-e", "return 1"], "");
    assert_quiet_141(&out);
}

#[test]
fn exec_pretty_exits_quietly_on_a_closed_stdout() {
    let out = run_with_closed_stdout(&["exec", "--pretty", "-e", "return {a: [1, 2]}"], "");
    assert_quiet_141(&out);
}

#[test]
fn config_and_catalog_exit_quietly_on_a_closed_stdout() {
    assert_quiet_141(&run_with_closed_stdout(&["config"], ""));
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"name": "a", "description": "A tool.", "result": 1}]"#,
    )
    .unwrap();
    let tools = tools.to_str().unwrap();
    assert_quiet_141(&run_with_closed_stdout(
        &["catalog", "--tools", tools, "--json"],
        "",
    ));
    assert_quiet_141(&run_with_closed_stdout(
        &["catalog", "--tools", tools, "--index"],
        "",
    ));
}

#[test]
fn session_ends_quietly_when_its_host_closes_stdout() {
    let script = "{\"tool\": \"exec\", \"args\": {\"code\": \"return 1\"}}\n".repeat(3);
    let out = run_with_closed_stdout(&["session"], &script);
    assert_quiet_141(&out);
}

#[test]
fn a_closed_stderr_does_not_panic() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args([
            "exec",
            "--tools",
            "/nonexistent/tools.json",
            "-e",
            "return 1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer)
        .output()
        .unwrap();
    // The usage error could not be printed, but the exit status still says what happened.
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}
