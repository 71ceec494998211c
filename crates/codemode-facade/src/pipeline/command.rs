//! Command hooks (`hooks.beforeToolCall` / `hooks.afterToolCall`, docs/contract/host.md#h2): a
//! configured command runs in its own process group with the event on stdin and answers on
//! stdout; every failure blocks the call.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use codemode_config::{HookConfig, HookSpec};
use codemode_runtime::ProcessGroup;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::hooks::{
    AfterDecision, AfterToolCall, BeforeToolCall, HookChain, HookDecision, HookFuture, ToolHook,
};

/// A command hook's stdout is read up to this many bytes (1 MiB); a hook printing more blocks.
pub const HOOK_STDOUT_LIMIT: usize = 1024 * 1024;

/// The only environment variables a command hook gets from the host process (when set there).
pub const HOOK_ENVIRONMENT: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// Which event a [`CommandHook`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPhase {
    /// `hooks.beforeToolCall`.
    Before,
    /// `hooks.afterToolCall`.
    After,
}

/// A configured command hook (docs/contract/host.md#h2).
///
/// Protocol: the command (`command[0]` with the other entries as arguments, no shell) starts
/// with the event as one JSON document on stdin (then closed), in its own process group, with an
/// environment of [`HOOK_ENVIRONMENT`] only, the host's working directory and stderr. Its
/// stdout, at most [`HOOK_STDOUT_LIMIT`] bytes, is the answer: a [`HookDecision`] object for
/// `before_tool_call`, an [`AfterDecision`] object for `after_tool_call`.
///
/// Fail closed: the hook blocks the call, with a reason naming it, when it cannot start
/// (`hook "<name>" could not start: <error>`), exits non-zero (`hook "<name>" exited with status
/// <n>` / `was killed by signal <n>`), prints too much (`hook "<name>" printed more than 1048576
/// bytes`), prints something that is not an answer (`hook "<name>" printed an invalid answer
/// (expected …)`), or outlives `timeoutMs` (`hook "<name>" did not answer within <ms> ms`). The
/// process group is killed once the hook has answered, failed or been abandoned.
#[derive(Debug, Clone)]
pub struct CommandHook {
    spec: HookSpec,
    phase: HookPhase,
}

impl CommandHook {
    /// A `before_tool_call` hook running `spec`.
    pub fn before(spec: HookSpec) -> Self {
        CommandHook {
            spec,
            phase: HookPhase::Before,
        }
    }

    /// An `after_tool_call` hook running `spec`.
    pub fn after(spec: HookSpec) -> Self {
        CommandHook {
            spec,
            phase: HookPhase::After,
        }
    }

    /// The hook's configuration.
    pub fn spec(&self) -> &HookSpec {
        &self.spec
    }

    /// The event it answers.
    pub fn phase(&self) -> HookPhase {
        self.phase
    }
}

const BEFORE_ANSWER_SHAPE: &str =
    r#"expected {"decision": "allow" | "block" | "ask", "reason"?: string, "input"?: object}"#;
const AFTER_ANSWER_SHAPE: &str = r#"expected {"result"?: any}"#;

impl ToolHook for CommandHook {
    fn name(&self) -> &str {
        self.spec.name()
    }

    fn applies_to(&self, name: &str, id: Option<&str>) -> bool {
        self.spec.applies_to(name, id)
    }

    fn before(&self, event: &BeforeToolCall) -> HookFuture<HookDecision> {
        if self.phase != HookPhase::Before {
            return Box::pin(async { Ok(HookDecision::allow()) });
        }
        let spec = self.spec.clone();
        let stdin = serde_json::to_vec(event);
        Box::pin(async move {
            let stdin = stdin.map_err(|e| format!("hook {:?} failed: {e}", spec.name()))?;
            let stdout = run_hook_command(&spec, stdin).await?;
            let invalid = || {
                format!(
                    "hook {:?} printed an invalid answer ({BEFORE_ANSWER_SHAPE})",
                    spec.name()
                )
            };
            let value = answer_object(&stdout).ok_or_else(invalid)?;
            let answer: HookDecision = serde_json::from_value(value).map_err(|_| invalid())?;
            if answer.input.as_ref().is_some_and(|i| !i.is_object()) {
                return Err(invalid());
            }
            Ok(answer)
        })
    }

    fn after(&self, event: &AfterToolCall) -> HookFuture<AfterDecision> {
        if self.phase != HookPhase::After {
            return Box::pin(async { Ok(AfterDecision::keep()) });
        }
        let spec = self.spec.clone();
        let stdin = serde_json::to_vec(event);
        Box::pin(async move {
            let stdin = stdin.map_err(|e| format!("hook {:?} failed: {e}", spec.name()))?;
            let stdout = run_hook_command(&spec, stdin).await?;
            let invalid = || {
                format!(
                    "hook {:?} printed an invalid answer ({AFTER_ANSWER_SHAPE})",
                    spec.name()
                )
            };
            let value = answer_object(&stdout).ok_or_else(invalid)?;
            serde_json::from_value(value).map_err(|_| invalid())
        })
    }
}

/// The hook's stdout as a JSON object (surrounding whitespace allowed), else `None`.
fn answer_object(stdout: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(stdout)
        .ok()
        .filter(Value::is_object)
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs a hook command with `stdin` and returns its stdout, or the block reason.
async fn run_hook_command(spec: &HookSpec, stdin: Vec<u8>) -> Result<Vec<u8>, String> {
    let name = spec.name();
    let Some((program, args)) = spec.command.split_first() else {
        return Err(format!("hook {name:?} has no command"));
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    for key in HOOK_ENVIRONMENT {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("hook {name:?} could not start: {e}"))?;
    // Killed before the hook is reaped, never after (see `ProcessGroup`): on a timeout or an
    // error by the guard's drop, after a normal exit right before `child.wait()`.
    let mut group = ProcessGroup::of(&child);
    let stdin_pipe = child.stdin.take();
    // Written on its own task so a hook that floods stdout without reading stdin is still seen.
    let _writer = AbortOnDrop(tokio::spawn(async move {
        if let Some(mut pipe) = stdin_pipe {
            // A hook that exits without reading its input is fine (EPIPE is ignored).
            let _ = pipe.write_all(&stdin).await;
            let _ = pipe.shutdown().await;
        }
    }));
    let stdout = child.stdout.take();
    let work = async {
        let mut out = Vec::new();
        if let Some(stdout) = stdout {
            stdout
                .take(HOOK_STDOUT_LIMIT as u64 + 1)
                .read_to_end(&mut out)
                .await
                .map_err(|e| format!("hook {name:?} failed: {e}"))?;
        }
        if out.len() > HOOK_STDOUT_LIMIT {
            return Err(format!(
                "hook {name:?} printed more than {HOOK_STDOUT_LIMIT} bytes"
            ));
        }
        // The answer is complete: wait for the exit without reaping, kill what the hook left
        // behind while its group id is still ours, then reap.
        group.leader_exited().await;
        group.kill();
        let status = child
            .wait()
            .await
            .map_err(|e| format!("hook {name:?} failed: {e}"))?;
        if !status.success() {
            return Err(exit_reason(name, status));
        }
        Ok(out)
    };
    match tokio::time::timeout(spec.timeout(), work).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!(
            "hook {name:?} did not answer within {} ms",
            spec.timeout_ms
        )),
    }
}

fn exit_reason(name: &str, status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("hook {name:?} exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("hook {name:?} was killed by signal {signal}");
        }
    }
    format!("hook {name:?} exited with {status}")
}

impl HookChain {
    /// The command hooks of `config`: every `beforeToolCall` entry as a before hook and every
    /// `afterToolCall` entry as an after hook, in config order.
    pub fn from_config(config: &HookConfig) -> Self {
        let mut chain = HookChain::new();
        for spec in &config.before_tool_call {
            chain.push(Arc::new(CommandHook::before(spec.clone())));
        }
        for spec in &config.after_tool_call {
            chain.push(Arc::new(CommandHook::after(spec.clone())));
        }
        chain
    }
}
