//! `--mcp-config` on `codemode exec` and `codemode session`: bad files are usage errors, a server
//! that cannot start is reported and left out, and a real server's tools are reachable as
//! `MCP.<server>.<tool>`.

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use common::write_file as write;

/// `codemode exec --mcp-config <file> -e <code>`, no stdin.
fn exec_with(file: &Path, code: &str) -> Output {
    common::run(
        &["exec", "--mcp-config", file.to_str().unwrap(), "-e", code],
        "",
    )
}

#[test]
fn bad_mcp_config_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "bad.json",
        r#"{"mcpServers": {"x": {"command": "y", "args": "not an array"}}}"#,
    );
    let out = exec_with(&file, "return 1");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "codemode: --mcp-config {}: MCP server \"x\": \"args\" must be an array of strings\n",
            file.display()
        )
    );
    assert!(out.stdout.is_empty());
}

/// An unset `${VAR}` without a default is a usage error naming the server, field and variable;
/// a set one is expanded from `codemode`'s environment.
#[test]
fn an_unset_config_variable_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "vars.json",
        r#"{"mcpServers": {"gh": {"command": "${CODEMODE_TEST_BIN:-npx}", "env": {"GITHUB_TOKEN": "${CODEMODE_TEST_UNSET_TOKEN}"}}}}"#,
    );
    let out = exec_with(&file, "return 1");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "codemode: --mcp-config {}: MCP server \"gh\": \"env.GITHUB_TOKEN\" uses ${{CODEMODE_TEST_UNSET_TOKEN}}, but CODEMODE_TEST_UNSET_TOKEN is not set (set it, or give a default: ${{CODEMODE_TEST_UNSET_TOKEN:-default}})\n",
            file.display()
        )
    );
}

#[test]
fn a_server_that_cannot_start_is_reported_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "servers.json",
        r#"{"mcpServers": {"ghost": {"command": "/nonexistent/mcp-server"}}}"#,
    );
    let out = exec_with(
        &file,
        "try { MCP.ghost; return typeof MCP; } catch (e) { return [typeof MCP, e.message]; }",
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    // `MCP` exists and says why the server is missing (docs/mcp.md, "Servers that are not
    // connected").
    assert_eq!(
        stdout["value"],
        json!(["object", "MCP server \"ghost\" is not connected: failed: MCP server \"ghost\" failed to start \"/nonexistent/mcp-server\": No such file or directory (os error 2)"])
    );
    assert_eq!(stdout["telemetry"]["sources"]["mcp"], 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: MCP server \"ghost\" failed to start \"/nonexistent/mcp-server\": No such file or directory (os error 2)\n"
    );
}

/// A server that never answers is given up after its own `connectTimeoutMs`, not the CLI's
/// 180 s default, and `API.list()` says why it is missing.
#[test]
fn a_servers_connect_timeout_bounds_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "servers.json",
        r#"{"mcpServers": {"mute": {"command": "sleep", "args": ["30"], "connectTimeoutMs": 400}}}"#,
    );
    let started = std::time::Instant::now();
    let out = common::run(
        &[
            "exec",
            "--mcp-config",
            file.to_str().unwrap(),
            "-e",
            "return (await API.list()).files.map((f) => f.description);",
        ],
        "",
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap();
    let descriptions = stdout["value"].as_array().unwrap();
    assert_eq!(descriptions.len(), 2, "{stdout}");
    assert_eq!(
        descriptions[0],
        "Root MCP namespace declaration and server list."
    );
    let offline = descriptions[1].as_str().unwrap();
    assert!(
        offline.starts_with("MCP server \"mute\" is not connected: failed: MCP server \"mute\" did not finish connecting")
            && offline.contains(" within 400 ms"),
        "{offline}"
    );
}

/// `--mcp-connect-timeout-ms` is checked like `--mcp-timeout-ms` (at least 100).
#[test]
fn the_connect_timeout_flag_is_checked() {
    let out = common::run(
        &["exec", "--mcp-connect-timeout-ms", "5", "-e", "return 1"],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--mcp-connect-timeout-ms") && stderr.contains("5 is not in 100.."),
        "{stderr}"
    );
}

#[test]
fn session_reaches_an_mcp_server_across_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"everything": {"command": codemode_test_support::npm_server("mcp-server-everything")}}}).to_string(),
    );
    let script = concat!(
        r#"{"tool": "exec", "args": {"code": "return (await MCP.everything.getSum({a: 2, b: 40})).content[0].text"}}"#,
        "\n",
        r#"{"tool": "exec", "args": {"code": "return (await API.list('mcp')).files.map((f) => f.path)"}}"#,
        "\n"
    );
    let out = common::run(&["session", "--mcp-config", file.to_str().unwrap()], script);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = common::json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["value"], "The sum of 2 and 40 is 42.");
    assert_eq!(
        lines[1]["value"],
        json!(["mcp/index.d.ts", "mcp/everything.d.ts"])
    );
}

#[test]
fn serve_without_any_tool_source_says_so() {
    // stdin is closed at once: the MCP session ends before it starts, after the warning.
    let out = common::run(&["serve"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "codemode: serving an empty catalog (exec runs programs, but they have no tools to call); add tools with --mcp-config FILE (MCP servers), --root DIR (workspace tools) or --tools FILE\n"
        ),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
