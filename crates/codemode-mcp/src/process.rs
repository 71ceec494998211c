//! A stdio server's child process. On Unix it leads a process group of its own, so the helpers
//! it starts (`npx` → `node`, `sh -c …`, `uvx` → `python`) end with it instead of being
//! orphaned: dropping a [`ChildProcess`] kills the whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use codemode_runtime::ProcessGroup;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// The variables a stdio server inherits from `codemode`'s environment, as the official MCP
/// SDKs choose them (TypeScript `DEFAULT_INHERITED_ENV_VARS`, Python
/// `get_default_environment`): enough to find programs and the user's home, nothing secret.
/// Everything else a server needs is given in its config's `env` (`"TOKEN": "${TOKEN}"`).
#[cfg(not(windows))]
pub(crate) const DEFAULT_INHERITED_ENV_VARS: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables a stdio server inherits from `codemode`'s environment (Windows list of the
/// official MCP SDKs).
#[cfg(windows)]
pub(crate) const DEFAULT_INHERITED_ENV_VARS: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
];

/// The safe default environment of a stdio server: the [`DEFAULT_INHERITED_ENV_VARS`] that
/// are set in this process, except values starting with `()` (exported shell functions, the
/// Shellshock vector; the SDKs skip them too).
pub(crate) fn default_environment() -> Vec<(String, std::ffi::OsString)> {
    DEFAULT_INHERITED_ENV_VARS
        .iter()
        .filter_map(|key| {
            let value = std::env::var_os(key)?;
            (!value.as_encoded_bytes().starts_with(b"()")).then(|| (key.to_string(), value))
        })
        .collect()
}

/// A spawned child and its process group; the group gets SIGKILL when this is dropped.
///
/// The group is only ever killed while the child is not reaped yet (see
/// [`codemode_runtime::ProcessGroup`]): a reaped leader's group id can be reused by another
/// process group, which a late `kill(-pgid)` would hit.
pub(crate) struct ChildProcess {
    child: tokio::process::Child,
    /// The child's process group (disarmed off Unix).
    group: ProcessGroup,
}

/// The child's three pipes, taken once after spawning.
pub(crate) struct ChildStdio {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

impl ChildProcess {
    /// Starts `command` with `args`, in an environment of only [`default_environment`] plus
    /// `env` (which wins), never the whole parent environment, in `cwd` (the
    /// current directory when `None`), with stdin, stdout and stderr piped, killed on drop and, on
    /// Unix, as the leader of a new process group.
    ///
    /// # Errors
    /// The `io::Error` of spawning (command not found, not executable, bad `cwd`, …).
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> std::io::Result<ChildProcess> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .env_clear()
            .envs(default_environment())
            .envs(env)
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let group = ProcessGroup::of(&child);
        Ok(ChildProcess { child, group })
    }

    /// Takes the child's pipes; `None` when they were taken before.
    pub(crate) fn take_stdio(&mut self) -> Option<ChildStdio> {
        match (
            self.child.stdin.take(),
            self.child.stdout.take(),
            self.child.stderr.take(),
        ) {
            (Some(stdin), Some(stdout), Some(stderr)) => Some(ChildStdio {
                stdin,
                stdout,
                stderr,
            }),
            _ => None,
        }
    }

    /// Waits up to `grace` for the child to exit (its stdin should be closed by then) without
    /// reaping it, kills what is left of its group (the child too, if it is still running)
    /// while the group id is still its own, then kills the child itself (in case it left the
    /// group) and reaps it.
    pub(crate) async fn stop(mut self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.group.leader_exited()).await;
        self.group.kill();
        let _ = self.child.kill().await;
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Before the child field drops: tokio's orphan reaper may reap it any time after that.
        self.group.kill();
    }
}
