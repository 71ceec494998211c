//! Who answers approvals (docs/contract/host.md#h3) in `codemode exec` and `codemode session`.
//!
//! - `codemode exec --approve all | none` answers every approval the same way
//!   ([`FixedApprover`]). Without `--approve`, when both standard input and standard error are
//!   terminals, [`TerminalApprover`] asks on standard error, one request at a time:
//!
//!   ```text
//!   codemode: approve tool openclaw:core:deploy with input {"env":"prod"}? [y/N]
//!   ```
//!
//!   `y` or `yes` (any case) approves; anything else, an empty line or end of input denies.
//!   Otherwise every approval is denied.
//! - `codemode session` answers through the request line
//!   `{"tool": "approve", "args": {"approvalId": "...", "decision": "allow" | "deny", "reason"?:
//!   "..."}}`, parsed by [`parse_approve_args`].

use std::io::{BufRead, IsTerminal, Write};
use std::sync::mpsc;
use std::sync::Arc;

use codemode_facade::pipeline::{
    ApprovalDecision, ApprovalFuture, ApprovalRequest, ApprovalVerdict, Approver, FixedApprover,
};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::static_tools::kind_of;

/// `--approve`: a fixed answer to every approval of `codemode exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ApproveMode {
    /// Approve every call that needs approval.
    All,
    /// Deny every call that needs approval (the default when not on a terminal).
    None,
}

/// The approver of `codemode exec`: `--approve` when given, else a prompt when standard input
/// and standard error are both terminals, else a denial of everything.
pub(crate) fn exec_approver(mode: Option<ApproveMode>) -> Arc<dyn Approver> {
    match mode {
        Some(ApproveMode::All) => Arc::new(FixedApprover(ApprovalDecision::allow())),
        Some(ApproveMode::None) => Arc::new(FixedApprover(ApprovalDecision::deny())),
        None if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() => {
            Arc::new(TerminalApprover::new())
        }
        None => Arc::new(FixedApprover(ApprovalDecision::deny())),
    }
}

/// The question asked for `request`, without the trailing space (one line; the input is
/// compact JSON with secret-looking keys redacted as in the trajectory, cut at
/// [`PROMPT_INPUT_CHARS`] characters; control characters in the tool id and the reason are
/// escaped, so a tool name or a hook reason cannot rewrite the question on the terminal).
pub(crate) fn prompt_text(request: &ApprovalRequest) -> String {
    let redacted = codemode_telemetry::redact_value(&request.input);
    let mut input = serde_json::to_string(&redacted).unwrap_or_default();
    if let Some((cut, _)) = input.char_indices().nth(PROMPT_INPUT_CHARS) {
        let more = input[cut..].chars().count();
        input.truncate(cut);
        input.push_str(&format!("…({more} more)"));
    }
    let reason = match request.reason.as_deref().map(str::trim) {
        Some(reason) if !reason.is_empty() => format!(" ({})", printable(reason)),
        _ => String::new(),
    };
    format!(
        "codemode: approve tool {} with input {input}{reason}? [y/N]",
        printable(&request.tool_id)
    )
}

/// `text` with every control character (ANSI escapes, `\r`, `\n`, …) written as its Rust escape.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// How many characters of the input a prompt shows.
pub(crate) const PROMPT_INPUT_CHARS: usize = 2000;

/// Asks one question on `out` and reads one answer line from `input`: `y` / `yes` (trimmed, any
/// case) allows; anything else, end of input or a read error denies.
pub(crate) fn ask(
    request: &ApprovalRequest,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ApprovalDecision {
    if write!(out, "{} ", prompt_text(request))
        .and_then(|()| out.flush())
        .is_err()
    {
        return ApprovalDecision::deny();
    }
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(n) if n > 0 => {
            let answer = line.trim().to_ascii_lowercase();
            if answer == "y" || answer == "yes" {
                ApprovalDecision::allow()
            } else {
                ApprovalDecision::deny()
            }
        }
        _ => {
            // No answer line: end the prompt's line so later stderr output starts fresh.
            let _ = writeln!(out);
            ApprovalDecision::deny()
        }
    }
}

type Question = (ApprovalRequest, oneshot::Sender<ApprovalDecision>);

/// A `y/N` prompt on standard error, answered on standard input.
///
/// Questions are asked one at a time by one thread of its own (so a person never sees two
/// prompts at once, and a blocked terminal read never holds up the async runtime or its
/// shutdown); a question whose call was dropped before its turn (timed out, run ended) is
/// skipped.
pub(crate) struct TerminalApprover {
    questions: mpsc::Sender<Question>,
}

impl TerminalApprover {
    /// Starts the prompt thread.
    pub(crate) fn new() -> Self {
        let (questions, asked) = mpsc::channel::<Question>();
        let spawned = std::thread::Builder::new()
            .name("codemode-approve".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let stderr = std::io::stderr();
                for (request, answer) in asked {
                    if answer.is_closed() {
                        continue;
                    }
                    // The status line steps aside while the question is on the terminal.
                    crate::progress::pause();
                    let decision = ask(&request, &mut stdin.lock(), &mut stderr.lock());
                    crate::progress::resume();
                    let _ = answer.send(decision);
                }
            });
        if let Err(e) = spawned {
            // Without the thread every question is denied (the receiver is gone).
            tracing::warn!("cannot start the approval prompt: {e}");
        }
        TerminalApprover { questions }
    }
}

impl Default for TerminalApprover {
    fn default() -> Self {
        TerminalApprover::new()
    }
}

impl Approver for TerminalApprover {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (answer, answered) = oneshot::channel();
        let sent = self.questions.send((request, answer)).is_ok();
        Box::pin(async move {
            if !sent {
                return ApprovalDecision::deny();
            }
            answered.await.unwrap_or_else(|_| ApprovalDecision::deny())
        })
    }
}

/// A session `approve` request: `{"approvalId": "...", "decision": "allow" | "deny",
/// "reason"?: "..."}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApproveArgs {
    /// The approval to answer (`pendingApprovals[].approvalId`).
    pub approval_id: String,
    /// The answer.
    pub decision: ApprovalDecision,
}

/// Parses the `args` of a session `approve` line; `Err` is the message of the `invalid_input`
/// reply.
pub(crate) fn parse_approve_args(args: &Value) -> Result<ApproveArgs, String> {
    const SHAPE: &str =
        "{\"approvalId\": \"...\", \"decision\": \"allow\" | \"deny\", \"reason\"?: \"...\"}";
    let Value::Object(map) = args else {
        return Err(format!(
            "approve args must be {SHAPE}, got {}",
            kind_of(args)
        ));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "approvalId" | "decision" | "reason"))
    {
        return Err(format!(
            "unknown key {key:?} in approve args: expected {SHAPE}"
        ));
    }
    let approval_id = match map.get("approvalId") {
        Some(Value::String(id)) if !id.trim().is_empty() => id.trim().to_string(),
        Some(Value::String(_)) => return Err("approvalId must be a non-empty string".into()),
        None => return Err(format!("missing \"approvalId\": expected {SHAPE}")),
        Some(other) => {
            return Err(format!(
                "approvalId must be a non-empty string, got {}",
                kind_of(other)
            ))
        }
    };
    let reason = match map.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(other) => return Err(format!("reason must be a string, got {}", kind_of(other))),
    };
    let decision = match map.get("decision") {
        Some(Value::String(d)) if d == "allow" => ApprovalDecision {
            decision: ApprovalVerdict::Allow,
            reason,
        },
        Some(Value::String(d)) if d == "deny" => ApprovalDecision {
            decision: ApprovalVerdict::Deny,
            reason,
        },
        None => return Err("missing \"decision\": expected \"allow\" or \"deny\"".into()),
        Some(Value::String(d)) => {
            return Err(format!(
                "unknown decision {d:?}: expected \"allow\" or \"deny\""
            ))
        }
        Some(other) => {
            return Err(format!(
                "decision must be \"allow\" or \"deny\", got {}",
                kind_of(other)
            ))
        }
    };
    Ok(ApproveArgs {
        approval_id,
        decision,
    })
}

/// The message of the failed `invalid_input` reply to an `approve` line whose id is not
/// outstanding (never issued, already answered, expired, or its call ended).
pub(crate) fn unknown_approval_message(approval_id: &str) -> String {
    format!("unknown approval id {approval_id:?}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_bridge::RunScope;
    use serde_json::json;

    fn request(input: Value, reason: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            approval_id: "approval_1".into(),
            tool_call_id: "tool_search_code:call_1:deploy:1".into(),
            tool_id: "openclaw:core:deploy".into(),
            tool_name: "deploy".into(),
            input,
            reason: reason.map(str::to_string),
            parent_tool_call_id: Some("call_1".into()),
            bridge_id: Some("bridge:call:1".into()),
            scope: RunScope::default(),
        }
    }

    fn answer(typed: &str) -> (ApprovalDecision, String) {
        let mut out = Vec::new();
        let decision = ask(
            &request(json!({"env": "prod"}), None),
            &mut typed.as_bytes(),
            &mut out,
        );
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_prompt_names_the_tool_and_its_input() {
        assert_eq!(
            prompt_text(&request(json!({"env": "prod"}), None)),
            "codemode: approve tool openclaw:core:deploy with input {\"env\":\"prod\"}? [y/N]"
        );
        assert_eq!(
            prompt_text(&request(json!({}), Some(" risky "))),
            "codemode: approve tool openclaw:core:deploy with input {} (risky)? [y/N]"
        );
        // Secret-looking keys are redacted; control characters cannot redraw the line.
        let mut hostile = request(
            json!({"apiKey": "sk-123", "env": "prod"}),
            Some("ok\r\u{1b}[2Kfine"),
        );
        hostile.tool_id = "openclaw:core:de\u{1b}[1Aploy".into();
        assert_eq!(
            prompt_text(&hostile),
            "codemode: approve tool openclaw:core:de\\u{1b}[1Aploy with input \
             {\"apiKey\":\"[redacted]\",\"env\":\"prod\"} (ok\\r\\u{1b}[2Kfine)? [y/N]"
        );
        let long = "x".repeat(3000);
        let text = prompt_text(&request(json!(long), None));
        // The JSON is 3002 characters: `"` and 1999 x's are kept, 1002 are cut.
        assert_eq!(
            text,
            format!(
                "codemode: approve tool openclaw:core:deploy with input \"{}…(1002 more)? [y/N]",
                "x".repeat(1999)
            )
        );
    }

    #[test]
    fn yes_allows_and_everything_else_denies() {
        let prompt =
            "codemode: approve tool openclaw:core:deploy with input {\"env\":\"prod\"}? [y/N] ";
        assert_eq!(answer("y\n"), (ApprovalDecision::allow(), prompt.into()));
        assert_eq!(
            answer(" YES \r\n"),
            (ApprovalDecision::allow(), prompt.into())
        );
        assert_eq!(answer("n\n"), (ApprovalDecision::deny(), prompt.into()));
        assert_eq!(answer("\n"), (ApprovalDecision::deny(), prompt.into()));
        assert_eq!(answer("yep\n"), (ApprovalDecision::deny(), prompt.into()));
        assert_eq!(
            answer(""),
            (ApprovalDecision::deny(), format!("{prompt}\n"))
        );
    }

    #[tokio::test]
    async fn fixed_modes() {
        let all = exec_approver(Some(ApproveMode::All));
        assert_eq!(
            all.request(request(json!({}), None)).await,
            ApprovalDecision::allow()
        );
        let none = exec_approver(Some(ApproveMode::None));
        assert_eq!(
            none.request(request(json!({}), None)).await,
            ApprovalDecision::deny()
        );
    }

    #[test]
    fn parses_approve_args() {
        assert_eq!(
            parse_approve_args(&json!({"approvalId": "approval_1", "decision": "allow"})),
            Ok(ApproveArgs {
                approval_id: "approval_1".into(),
                decision: ApprovalDecision::allow()
            })
        );
        assert_eq!(
            parse_approve_args(
                &json!({"approvalId": " approval_2 ", "decision": "deny", "reason": "not today"})
            ),
            Ok(ApproveArgs {
                approval_id: "approval_2".into(),
                decision: ApprovalDecision::deny_because("not today")
            })
        );
        assert_eq!(
            parse_approve_args(&json!({"approvalId": "a", "decision": "deny", "reason": null})),
            Ok(ApproveArgs {
                approval_id: "a".into(),
                decision: ApprovalDecision::deny()
            })
        );
    }

    #[test]
    fn rejects_malformed_approve_args() {
        let err = |args: Value| parse_approve_args(&args).unwrap_err();
        assert_eq!(
            err(json!({"decision": "allow"})),
            "missing \"approvalId\": expected {\"approvalId\": \"...\", \"decision\": \"allow\" | \"deny\", \"reason\"?: \"...\"}"
        );
        assert_eq!(
            err(json!({"approvalId": 7, "decision": "allow"})),
            "approvalId must be a non-empty string, got a number"
        );
        assert_eq!(
            err(json!({"approvalId": " ", "decision": "allow"})),
            "approvalId must be a non-empty string"
        );
        assert_eq!(
            err(json!({"approvalId": "a"})),
            "missing \"decision\": expected \"allow\" or \"deny\""
        );
        assert_eq!(
            err(json!({"approvalId": "a", "decision": "yes"})),
            "unknown decision \"yes\": expected \"allow\" or \"deny\""
        );
        assert_eq!(
            err(json!({"approvalId": "a", "decision": true})),
            "decision must be \"allow\" or \"deny\", got a boolean"
        );
        assert_eq!(
            err(json!({"approvalId": "a", "decision": "deny", "reason": 1})),
            "reason must be a string, got a number"
        );
        assert_eq!(
            err(json!({"approvalId": "a", "decision": "deny", "why": "x"})),
            "unknown key \"why\" in approve args: expected {\"approvalId\": \"...\", \"decision\": \"allow\" | \"deny\", \"reason\"?: \"...\"}"
        );
        assert_eq!(
            unknown_approval_message("approval_x"),
            "unknown approval id \"approval_x\"."
        );
    }
}
