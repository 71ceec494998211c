//! The harness the CLI's integration tests share: the built `codemode` binary, run with a stdin
//! or as a line-by-line `codemode session`, and its JSON output. Process and file helpers every
//! crate's tests use are `codemode-test-support`'s; this module adds only what needs the binary.

// Each test binary includes this module and uses part of it.
#![allow(dead_code, unused_imports)]

use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub(crate) use codemode_test_support::files::{
    executable_script, fifo, json_lines, stderr_text, stdout_json, write_file,
};
pub(crate) use codemode_test_support::process::{run_with_stdin, spawn_with, LineChild};

/// The built `codemode` binary, with `CODEMODE_LOG` removed so its stderr holds only what the
/// test looks at (a test that wants logs sets it again).
pub(crate) fn codemode() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_codemode"));
    command.env_remove("CODEMODE_LOG");
    command
}

/// Runs `codemode <args>` with stdin, stdout and stderr piped, `stdin` written and then closed.
pub(crate) fn run(args: &[&str], stdin: &str) -> Output {
    run_with_stdin(codemode().args(args), stdin.as_bytes())
}

/// Runs `codemode <args>` with this process's stdin and returns its output.
pub(crate) fn output(args: &[&str]) -> Output {
    codemode().args(args).output().unwrap()
}

/// Runs `codemode <args>` and returns its exit code and its stdout as JSON (with stdout and
/// stderr in the panic when it is not JSON).
pub(crate) fn json_run(args: &[&str]) -> (i32, Value) {
    let out = output(args);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

/// Writes the static tools file `tools` into a new temporary directory and runs `codemode exec
/// --tools <file> -e <code> <extra>…`: its exit code and stdout as JSON.
pub(crate) fn exec_with_tools(tools: &str, code: &str, extra: &[&str]) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "tools.json", tools);
    let mut args = vec!["exec", "--tools", file.to_str().unwrap(), "-e", code];
    args.extend_from_slice(extra);
    json_run(&args)
}

/// `codemode session <args>` with `env`, stderr as `stderr`, answering one JSON line per request.
pub(crate) fn session(args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> LineChild {
    LineChild::spawn(
        codemode()
            .arg("session")
            .args(args)
            .envs(env.iter().copied())
            .stderr(stderr),
    )
}

/// A new pseudo-terminal: `(master, slave)`. A child given the slave as stderr sees a terminal.
#[cfg(unix)]
pub(crate) fn openpty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;

    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the given integers; the null pointers ask for
    // no name, termios or window size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}

/// Checks that `result` is the `waiting` answer of a run that wrote `start` and parked on its
/// first `callValue`, with `telemetry`; returns its run id (`cm_` and 36 more characters).
pub(crate) fn assert_parked_on_first_call(result: &Value, telemetry: Value) -> String {
    let run_id = result["runId"].as_str().unwrap().to_string();
    assert!(run_id.starts_with("cm_") && run_id.len() == 39, "{run_id}");
    assert_eq!(
        result,
        &serde_json::json!({
            "status": "waiting",
            "runId": run_id,
            "reason": "pending_tools",
            "pendingToolCalls": [{"id": "bridge:callValue:1", "method": "callValue"}],
            "replaySafe": false,
            "output": [{"type": "text", "text": "start"}],
            "telemetry": telemetry
        })
    );
    run_id
}

pub(crate) use codemode_test_support::files::core_telemetry;
