//! `codemode session`: `surface`, `exec`, `wait` and `approve` over JSON lines, so any host can
//! drive code mode without linking Rust.
//!
//! Each non-blank stdin line is one request, `{"tool": "surface"}`, `{"tool": "exec", "args":
//! {…}}`, `{"tool": "wait", "args": {"runId": …}}` or `{"tool": "approve", "args": {"approvalId":
//! …, "decision": "allow" | "deny", "reason"?: …}}`, with an optional `"id"` (a string or a
//! number) that is echoed unchanged on its answer so a host can correlate them; `exec` and `wait`
//! args go unchanged to [`CodeMode::exec`] / [`CodeMode::wait`]. Each request gets exactly one
//! stdout line, flushed at once: for `surface` `{"status": "ok", "tools": [exec, wait]}`, the
//! provider-facing definitions for the current catalog and config
//! ([`codemode_facade::surface_tools`]: what to show the model); for `exec` and `wait` the spec's
//! result object ([`codemode_facade::CodeModeResult::to_json`]); for `approve`
//! `{"status": "ok"}`. Requests run one at a time in input order, except `approve` lines, which
//! are answered as soon as they are read, even while an earlier request waits (for a tool or a
//! person; while its program computes, the line is read when that stretch of guest code ends,
//! docs/architecture.md "Legs in place") (so the `approve`
//! for an outer `exec` that a `beforeToolCall` hook sent to approval reaches it; the host learns
//! its `approvalId` from the trajectory's `approval_requested` event); one [`CodeMode`] serves
//! the whole session, so a `waiting` run from one line can be resumed by `wait` on a later one,
//! and parked runs keep their tool calls running between lines.
//!
//! The `n`th `exec` or `wait` line is tool call `call_<n>` for hooks and the trajectory, and the
//! nested calls of an `exec` on line `n` are `tool_search_code:call_<n>:<tool>:<seq>`.
//!
//! A call that needs approval (docs/contract/host.md#h3) stays pending until an `approve` line
//! answers it; the `waiting` result lists it under `pendingApprovals`, and after the `approve`
//! a `wait` resumes the run. An `approve` for an id that is not outstanding (never issued,
//! already answered, expired, or its call ended) gets a failed `invalid_input` reply with
//! [`unknown_approval_message`]: `unknown approval id "<id>".`
//!
//! A malformed line gets `{"status": "failed", "error": <message>, "code": "invalid_input"}` and
//! the session goes on. End of input ends the session (exit 0): every outstanding approval is
//! denied at once (`approval cancelled`), the requests already read are answered, and every
//! parked run is dropped.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use codemode_bridge::RunScope;
use codemode_facade::{ApprovalBroker, CodeMode};
use codemode_runtime::AbortHandle;
use serde_json::{json, Value};

use crate::approve::{parse_approve_args, unknown_approval_message, ApproveArgs};
use crate::host::{self, Host, HostArgs};
use crate::output::{print_line, Failure};
use crate::static_tools::kind_of;

/// One request line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    /// `{"tool": "exec", "args": {…}}`: the `exec` arguments.
    Exec(Value),
    /// `{"tool": "wait", "args": {…}}`: the `wait` arguments.
    Wait(Value),
    /// `{"tool": "approve", "args": {"approvalId", "decision", "reason"?}}`: an answer to an
    /// approval.
    Approve(ApproveArgs),
    /// `{"tool": "surface"}` (`"args"` optional, and then `{}`): the provider-facing `exec` and
    /// `wait` definitions for the current catalog and config.
    Surface,
}

/// The accepted `tool` values, as the error messages list them.
const TOOLS: &str = "\"exec\", \"wait\", \"approve\" or \"surface\"";

/// The correlation id of a line: `"id"`, a string or a number, echoed unchanged on its answer.
/// `None` when the line has none or it is not valid JSON.
pub(crate) fn line_id(line: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(line).ok()? {
        Value::Object(mut map) => map
            .remove("id")
            .filter(|id| id.is_string() || id.is_number()),
        _ => None,
    }
}

/// Parses one request line; `Err` is the message of the `invalid_input` reply.
pub(crate) fn parse_request(line: &str) -> Result<Request, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| format!("line is not valid JSON: {e}"))?;
    let Value::Object(mut map) = value else {
        return Err(format!(
            "line must be a JSON object {{\"tool\": \"exec\" | \"wait\" | \"approve\" | \"surface\", \"args\": {{…}}, \"id\"?: …}}, got {}",
            kind_of(&value)
        ));
    };
    let tool = map.remove("tool");
    let args = map.remove("args");
    match map.remove("id") {
        None | Some(Value::String(_) | Value::Number(_)) => {}
        Some(other) => {
            return Err(format!(
                "\"id\" must be a string or a number, got {}",
                kind_of(&other)
            ))
        }
    }
    if let Some(key) = map.keys().next() {
        return Err(format!(
            "unknown key {key:?} in line: only \"tool\", \"args\" and \"id\" are allowed"
        ));
    }
    let tool = match tool {
        None => return Err(format!("missing \"tool\": expected {TOOLS}")),
        Some(Value::String(tool)) => tool,
        Some(other) => return Err(format!("\"tool\" must be {TOOLS}, got {}", kind_of(&other))),
    };
    if !matches!(tool.as_str(), "exec" | "wait" | "approve" | "surface") {
        return Err(format!("unknown tool {tool:?}: expected {TOOLS}"));
    }
    let args = match args {
        None if tool == "surface" => return Ok(Request::Surface),
        None => return Err(format!("missing \"args\": the {tool} arguments object")),
        Some(args @ Value::Object(_)) => args,
        Some(other) => {
            return Err(format!(
                "\"args\" must be an object, got {}",
                kind_of(&other)
            ))
        }
    };
    Ok(match tool.as_str() {
        "exec" => Request::Exec(args),
        "wait" => Request::Wait(args),
        "surface" => match args.as_object().and_then(|a| a.keys().next()) {
            Some(key) => {
                return Err(format!(
                    "unknown key {key:?} in surface args: surface takes no arguments"
                ))
            }
            None => Request::Surface,
        },
        _ => Request::Approve(parse_approve_args(&args)?),
    })
}

/// The reply to a `surface` line: `{"status": "ok", "tools": [exec, wait]}`, the definitions of
/// [`codemode_facade::surface_tools`] (`{name, description, parameters,
/// hideFromChannelProgress?}`) as a provider payload carries them.
pub(crate) fn surface_line(catalog: &codemode_catalog::Catalog) -> Value {
    json!({"status": "ok", "tools": codemode_facade::surface_tools(catalog)})
}

/// The reply to a malformed line.
pub(crate) fn invalid_line(message: &str) -> Value {
    json!({"status": "failed", "error": message, "code": "invalid_input"})
}

/// The reply to an `approve` line that settled an approval.
pub(crate) fn approved_line() -> Value {
    json!({"status": "ok"})
}

/// The state kept across lines: the code-mode front and its host (`None` when the config
/// disables code mode, so every `exec` and `wait` gets the disabled result), and the broker of
/// the session's approvals. One session is one scope: runs parked by one line are resumed by
/// `wait` on a later line.
pub(crate) struct Session {
    front: Option<(CodeMode, Host)>,
    approvals: Arc<ApprovalBroker>,
    /// `exec` and `wait` lines answered so far: the `n`th is tool call `call_<n>` (its nested
    /// calls are `tool_search_code:call_<n>:<tool>:<seq>`).
    calls: AtomicU64,
}

impl Session {
    /// Answers one non-blank line with the JSON to print; a line's `"id"` is echoed on it.
    pub(crate) async fn handle(&self, line: &str) -> Value {
        let mut reply = self.answer(line).await;
        if let (Some(id), Value::Object(reply)) = (line_id(line), &mut reply) {
            reply.insert("id".into(), id);
        }
        reply
    }

    /// The answer to one line, without its id.
    async fn answer(&self, line: &str) -> Value {
        let request = match parse_request(line) {
            Ok(request) => request,
            Err(message) => return invalid_line(&message),
        };
        let (is_exec, args) = match request {
            Request::Approve(approve) => return self.approve(&approve),
            Request::Exec(args) => (true, args),
            Request::Wait(args) => (false, args),
            Request::Surface => {
                let Some((_, host)) = &self.front else {
                    return host::disabled_result();
                };
                return match host.catalog() {
                    Ok(catalog) => surface_line(&catalog),
                    Err(Failure::Usage(e) | Failure::Run(e)) => invalid_line(&e),
                };
            }
        };
        let Some((code_mode, host)) = &self.front else {
            return host::disabled_result();
        };
        let env = match host.run_env(RunScope::default()) {
            Ok(env) => env,
            Err(Failure::Usage(e) | Failure::Run(e)) => return invalid_line(&e),
        };
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let env = env.with_tool_call_id(format!("call_{call}"));
        let abort = AbortHandle::new();
        let result = if is_exec {
            code_mode.exec(&env, &args, &abort).await
        } else {
            code_mode.wait_with(&env, &args, &abort).await
        };
        result.to_json()
    }

    /// Answers an `approve` line: `{"status": "ok"}`, or the unknown-id failure.
    fn approve(&self, approve: &ApproveArgs) -> Value {
        match self
            .approvals
            .answer(&approve.approval_id, approve.decision.clone())
        {
            Ok(()) => approved_line(),
            Err(_) => invalid_line(&unknown_approval_message(&approve.approval_id)),
        }
    }

    /// Denies every outstanding approval, then drops every parked run and cancels its pending
    /// tool calls.
    pub(crate) fn close(&self) {
        self.approvals.deny_all(None);
        if let Some((code_mode, _)) = &self.front {
            code_mode.clear();
        }
    }
}

/// Runs the session on stdin/stdout until end of input.
pub(crate) fn run(args: &HostArgs, state: &crate::state::StateArgs) -> Result<ExitCode, Failure> {
    let state = state.check()?;
    let runtime = host::async_runtime()?;
    let mut approvals = None;
    let front = match host::host(args, &runtime, true)? {
        Some(mut host) => {
            let broker = Arc::new(ApprovalBroker::new(host.config().snapshot_ttl()));
            host.set_approvals(broker.clone());
            approvals = Some(broker);
            let code_mode = match crate::state::code_mode(state, &runtime) {
                Ok(code_mode) => code_mode,
                Err(failure) => {
                    host.shutdown(&runtime);
                    return Err(failure);
                }
            };
            Some((code_mode, host))
        }
        None => None,
    };
    let approvals = approvals
        .unwrap_or_else(|| Arc::new(ApprovalBroker::new(std::time::Duration::from_secs(1))));
    let session = Session {
        front,
        approvals,
        calls: AtomicU64::new(0),
    };
    let outcome = serve(&session, &runtime);
    session.close();
    if let Some((_, host)) = &session.front {
        host.shutdown(&runtime);
    }
    runtime.shutdown_background();
    outcome
}

/// A line from the reader thread, or how the input ended.
enum Input {
    /// One line, without its end of line, as read (not yet checked as UTF-8).
    Line(Vec<u8>),
    /// End of input.
    End,
    /// Reading standard input failed.
    Failed(String),
}

/// Lines longer than this are followed by `malloc_trim` once answered, so a single huge line
/// (50 MB of arguments) does not keep its pages for the life of the session (issue 27 item 9).
const TRIM_AFTER_LINE_BYTES: usize = 1 << 20;

/// Reads standard input on its own thread, one fresh buffer per line, so the main loop can
/// answer `approve` lines while an earlier request is still running and no buffer keeps the
/// capacity of the largest line (docs/threat-model.md, "Files an operator names"; issue 27
/// items 3 and 9).
fn read_lines(tx: tokio::sync::mpsc::UnboundedSender<Input>) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    loop {
        let mut line = Vec::new();
        let sent = match input.read_until(b'\n', &mut line) {
            Ok(0) => {
                let _ = tx.send(Input::End);
                return;
            }
            Ok(_) => tx.send(Input::Line(line)),
            Err(e) => {
                let _ = tx.send(Input::Failed(format!("cannot read standard input: {e}")));
                return;
            }
        };
        if sent.is_err() {
            // The session is over.
            return;
        }
    }
}

/// A line's text, or the reply it gets without being parsed (`None`: blank, skipped).
fn line_text(line: &[u8]) -> Result<Option<&str>, Value> {
    match std::str::from_utf8(line) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(_) => Err(invalid_line("line is not valid UTF-8")),
    }
}

/// Returns freed heap pages to the system after a line longer than [`TRIM_AFTER_LINE_BYTES`]:
/// its buffer, text and parsed arguments are freed by then, but glibc keeps freed memory in the
/// middle of its heap (and raises its mmap threshold after large frees), so without a trim the
/// session's RSS stays at its largest line's level.
fn release_after(line_bytes: usize) {
    if line_bytes <= TRIM_AFTER_LINE_BYTES {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own heap under its lock; no pointer is passed.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The read–answer loop. Requests are answered one at a time in input order, except `approve`
/// lines: while a request waits (an outer `exec` waiting for its own approval, say) the loop keeps
/// reading, answers each `approve` line at once (its reply comes before the running request's)
/// and queues every other line behind the running request. At end of input every outstanding
/// approval is denied (none can be answered any more); the running and queued requests are still
/// answered. The loop runs on a thread of [`codemode_runtime::with_legs_in_place`]: while a
/// program computes (a leg, bounded by its deadline) the loop reads nothing, and lines read by the
/// input thread meanwhile wait in the channel.
fn serve(session: &Session, runtime: &tokio::runtime::Runtime) -> Result<ExitCode, Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("codemode-stdin".into())
        .spawn(move || read_lines(tx))
        .map_err(|e| Failure::Run(format!("cannot start the input thread: {e}")))?;
    // Requests are answered one at a time from one thread, so a run's legs run in place there,
    // with no hand-off to a leg worker (docs/architecture.md, "Legs in place").
    let served = codemode_runtime::with_legs_in_place("codemode-session", || {
        runtime.block_on(async {
            let mut queued: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
            let mut ended = false;
            loop {
                let line = match queued.pop_front() {
                    Some(line) => line,
                    None if ended => return Ok(ExitCode::SUCCESS),
                    None => match rx.recv().await {
                        Some(Input::Line(line)) => line,
                        Some(Input::End) | None => return Ok(ExitCode::SUCCESS),
                        Some(Input::Failed(e)) => return Err(Failure::Run(e)),
                    },
                };
                let reply = match line_text(&line) {
                    Ok(None) => continue,
                    Err(reply) => reply,
                    Ok(Some(text)) => {
                        let handling = session.handle(text);
                        tokio::pin!(handling);
                        loop {
                            tokio::select! {
                                reply = &mut handling => break reply,
                                input = rx.recv(), if !ended => match input {
                                    Some(Input::Line(next)) => {
                                        if let Ok(Some(text)) = line_text(&next) {
                                            if let Ok(Request::Approve(_)) = parse_request(text) {
                                                let reply = session.handle(text).await;
                                                if !print_line(&reply.to_string())? {
                                                    return Ok(ExitCode::SUCCESS);
                                                }
                                                continue;
                                            }
                                        }
                                        queued.push_back(next);
                                    }
                                    Some(Input::End) | None => {
                                        ended = true;
                                        session.approvals.deny_all(None);
                                    }
                                    Some(Input::Failed(e)) => return Err(Failure::Run(e)),
                                },
                            }
                        }
                    }
                };
                let line_bytes = line.len();
                drop(line);
                // A host that closed our stdout ends the session like end of input (main exits quietly).
                let printed = print_line(&reply.to_string())?;
                drop(reply);
                release_after(line_bytes);
                if !printed {
                    return Ok(ExitCode::SUCCESS);
                }
            }
        })
    });
    served.unwrap_or_else(|panic| Err(Failure::Run(panic.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: &str) -> String {
        parse_request(line).unwrap_err()
    }

    #[test]
    fn parses_requests() {
        assert_eq!(
            parse_request(r#"{"tool": "exec", "args": {"code": "return 1"}}"#),
            Ok(Request::Exec(json!({"code": "return 1"})))
        );
        assert_eq!(
            parse_request("{\"args\": {\"runId\": \"cm_x\"}, \"tool\": \"wait\"}\r\n"),
            Ok(Request::Wait(json!({"runId": "cm_x"})))
        );
    }

    #[test]
    fn parses_surface_lines_and_ids() {
        assert_eq!(
            parse_request(r#"{"tool": "surface"}"#),
            Ok(Request::Surface)
        );
        assert_eq!(
            parse_request(r#"{"tool": "surface", "args": {}, "id": "a"}"#),
            Ok(Request::Surface)
        );
        assert_eq!(
            parse_request(r#"{"id": 7, "tool": "exec", "args": {"code": "return 1"}}"#),
            Ok(Request::Exec(json!({"code": "return 1"})))
        );
        assert_eq!(line_id(r#"{"id": 7, "tool": "nope"}"#), Some(json!(7)));
        assert_eq!(line_id(r#"{"id": "x-1"}"#), Some(json!("x-1")));
        assert_eq!(line_id(r#"{"id": null}"#), None);
        assert_eq!(line_id("{"), None);
    }

    #[test]
    fn parses_approve_lines() {
        assert_eq!(
            parse_request(
                r#"{"tool": "approve", "args": {"approvalId": "approval_1", "decision": "deny", "reason": "no"}}"#
            ),
            Ok(Request::Approve(ApproveArgs {
                approval_id: "approval_1".into(),
                decision: codemode_facade::ApprovalDecision::deny_because("no"),
            }))
        );
        assert_eq!(
            err(r#"{"tool": "approve", "args": {"approvalId": "approval_1"}}"#),
            "missing \"decision\": expected \"allow\" or \"deny\""
        );
        assert_eq!(
            err(r#"{"tool": "approve"}"#),
            "missing \"args\": the approve arguments object"
        );
        assert_eq!(approved_line().to_string(), r#"{"status":"ok"}"#);
    }

    #[test]
    fn rejects_malformed_lines() {
        assert_eq!(
            err("{"),
            "line is not valid JSON: EOF while parsing an object at line 1 column 1"
        );
        assert_eq!(
            err("[1]"),
            "line must be a JSON object {\"tool\": \"exec\" | \"wait\" | \"approve\" | \"surface\", \"args\": {…}, \"id\"?: …}, got an array"
        );
        assert_eq!(
            err(r#"{"args": {}}"#),
            "missing \"tool\": expected \"exec\", \"wait\", \"approve\" or \"surface\""
        );
        assert_eq!(
            err(r#"{"tool": 1, "args": {}}"#),
            "\"tool\" must be \"exec\", \"wait\", \"approve\" or \"surface\", got a number"
        );
        assert_eq!(
            err(r#"{"tool": "run", "args": {}}"#),
            "unknown tool \"run\": expected \"exec\", \"wait\", \"approve\" or \"surface\""
        );
        assert_eq!(
            err(r#"{"tool": "wait"}"#),
            "missing \"args\": the wait arguments object"
        );
        assert_eq!(
            err(r#"{"tool": "exec", "args": "return 1"}"#),
            "\"args\" must be an object, got a string"
        );
        assert_eq!(
            err(r#"{"tool": "exec", "args": {}, "ids": 7}"#),
            "unknown key \"ids\" in line: only \"tool\", \"args\" and \"id\" are allowed"
        );
        assert_eq!(
            err(r#"{"tool": "exec", "args": {}, "id": [7]}"#),
            "\"id\" must be a string or a number, got an array"
        );
        assert_eq!(
            err(r#"{"tool": "surface", "args": {"x": 1}}"#),
            "unknown key \"x\" in surface args: surface takes no arguments"
        );
        assert_eq!(
            invalid_line("x"),
            json!({"status": "failed", "error": "x", "code": "invalid_input"})
        );
    }
}

#[cfg(test)]
#[path = "../../../xtask/fuzz/engine.rs"]
mod fuzz_engine;

/// Fuzz target `session_line` (docs/threat-model.md, "Fuzzing"): any line a host writes gets a
/// correlation id or none and a request or an `invalid_input` message, never a panic.
#[cfg(test)]
mod fuzz {
    use super::fuzz_engine as engine;
    use serde_json::{json, Value};

    #[test]
    fn fuzz_session_line() {
        let seeds: Vec<Vec<u8>> = [
            r#"{"tool": "exec", "args": {"code": "return 1"}, "id": 7}"#,
            r#"{"tool": "wait", "args": {"runId": "cm_x", "timeoutMs": 10}}"#,
            r#"{"tool": "approve", "args": {"approvalId": "a", "decision": "allow-once"}, "id": "x"}"#,
            r#"{"tool": "surface"}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let generate = |rng: &mut engine::Rng| -> Vec<u8> {
            let tools = ["exec", "wait", "approve", "surface", "nope"];
            let mut line = serde_json::Map::new();
            if !rng.chance(8) {
                line.insert("tool".into(), json!(tools[rng.below(tools.len())]));
            }
            if !rng.chance(4) {
                line.insert("args".into(), engine::json_value(rng, 4));
            }
            if rng.chance(2) {
                line.insert("id".into(), engine::json_value(rng, 2));
            }
            if rng.chance(6) {
                line.insert(engine::key(rng), engine::json_value(rng, 2));
            }
            Value::Object(line).to_string().into_bytes()
        };
        engine::run("session_line", &seeds, Some(&generate), &|bytes| {
            if let Ok(line) = std::str::from_utf8(bytes) {
                let _ = super::line_id(line);
                let _ = super::parse_request(line);
            }
        });
    }
}
