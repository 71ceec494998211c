//! Signs of life (issue 16 item 7): a status line on a terminal, nothing when stderr is not
//! one, and `CODEMODE_LOG=info` saying what codemode does, without colour codes in a pipe.

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};

use serde_json::Value;

const SLOW_TOOLS: &str = r#"[{"name": "slow", "result": "done", "delayMs": 1500}]"#;

fn tools_file(dir: &std::path::Path) -> String {
    let path = dir.join("tools.json");
    std::fs::write(&path, SLOW_TOOLS).unwrap();
    path.to_str().unwrap().to_string()
}

/// `codemode exec --tools <tools> -e "return await tools.slow({})"`, without `CODEMODE_LOG`.
fn slow_exec(tools: &str) -> Command {
    let mut command = common::codemode();
    command.args([
        "exec",
        "--tools",
        tools,
        "-e",
        "return await tools.slow({})",
    ]);
    command
}

#[test]
fn nothing_but_the_result_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_file(dir.path());
    let out = slow_exec(&tools).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["value"], "done");
}

#[test]
fn info_logs_say_what_codemode_does_without_colour_in_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_file(dir.path());
    let out = slow_exec(&tools)
        .env("CODEMODE_LOG", "info")
        .output()
        .unwrap();
    let logs = String::from_utf8(out.stderr).unwrap();
    assert!(!logs.contains('\x1b'), "{logs:?}");
    assert!(
        logs.contains("INFO codemode::host: catalog: 1 tool(s) (1 core/plugin, 0 MCP, 0 client)\n"),
        "{logs}"
    );
    assert!(
        logs.contains("INFO codemode: exec: running a 27-byte javascript program\n"),
        "{logs}"
    );
    assert!(
        logs.contains("(1 exec/wait call(s), 1 nested tool call(s))\n"),
        "{logs}"
    );
}

/// With stderr on a pseudo-terminal, the running program shows one redrawn status line that is
/// erased before the result is printed.
#[cfg(unix)]
#[test]
fn a_terminal_sees_a_status_line_that_is_erased_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_file(dir.path());
    let (mut master, slave) = common::openpty();
    let child = common::spawn_with(&mut slow_exec(&tools), Stdio::null(), Stdio::piped(), slave);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once the child (the last holder of the slave side) has exited.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let out = child.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["value"], "done");
    let terminal = reader.join().unwrap();
    assert!(
        terminal.starts_with("\r\x1b[2Kcodemode: running the javascript program… 0."),
        "{terminal:?}"
    );
    assert!(terminal.contains(" s\r\x1b[2Kcodemode: running the javascript program… 1."));
    assert!(terminal.ends_with(" s\r\x1b[2K"), "{terminal:?}");
}
