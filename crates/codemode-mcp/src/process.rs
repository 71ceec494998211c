//! A stdio server's child process. On Unix it leads a process group of its own, so the helpers
//! it starts (`npx` → `node`, `sh -c …`, `uvx` → `python`) end with it instead of being
//! orphaned: dropping a [`ChildProcess`] kills the whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// A spawned child and its process group; the group gets SIGKILL when this is dropped.
pub(crate) struct ChildProcess {
    child: tokio::process::Child,
    /// The process group id (the child's pid), `None` off Unix.
    group: Option<i32>,
}

/// The child's three pipes, taken once after spawning.
pub(crate) struct ChildStdio {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

impl ChildProcess {
    /// Starts `command` with `args`, `env` added to the inherited environment, in `cwd` (the
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
        cmd.args(args).envs(env).kill_on_drop(true);
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
        let group = if cfg!(unix) {
            child.id().and_then(|pid| i32::try_from(pid).ok())
        } else {
            None
        };
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

    /// Waits up to `grace` for the child to exit (its stdin should be closed by then), then
    /// kills it (SIGKILL to its group, then to the child) and reaps it; whatever is left of the
    /// group is killed when `self` drops at the end.
    pub(crate) async fn stop(mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.kill_group();
            let _ = self.child.kill().await;
        }
    }

    /// Sends SIGKILL to every process left in the child's group (nothing off Unix).
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(group) = self.group.filter(|&g| g > 1) {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}
