//! Files a test writes into its temporary directory (text, scripts, FIFOs), and what a program
//! printed.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Makes a FIFO (named pipe) `dir/name` with `mkfifo` and returns its path; panics when
/// `mkfifo` fails.
pub fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}: {status}", path.display());
    path
}

/// Writes an executable shell script `dir/name` (`#!/bin/sh`, then `body`) and returns its path
/// as a string, ready for a config file's `command`.
pub fn executable_script(dir: &Path, name: &str, body: &str) -> String {
    let path = write_file(dir, name, &format!("#!/bin/sh\n{body}\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.to_str().expect("a UTF-8 path").to_string()
}

/// Standard output as one JSON value; panics with stdout and stderr when it is not JSON.
pub fn stdout_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Standard output as JSON lines, one value per line.
pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// Standard error as text (lossy UTF-8).
pub fn stderr_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `telemetry` object of a code-mode result over a catalog of `tools` core tools whose run
/// made `calls` tool calls and no search or describe, for exact comparison.
pub fn core_telemetry(tools: u64, calls: u64) -> Value {
    serde_json::json!({
        "catalogSize": tools,
        "sources": {"openclaw": tools, "mcp": 0, "client": 0},
        "searchCount": 0,
        "describeCount": 0,
        "callCount": calls,
        "visibleTools": ["exec", "wait"]
    })
}
