//! Approvals answered by the MCP client (docs/contract/host.md#h3, `codemode serve`): an
//! [`Approver`] that sends `elicitation/create` to the client of one MCP session and reads its
//! answer.
//!
//! The request is a form with one required boolean field, [`APPROVE_FIELD`]
//! (`{"type": "object", "properties": {"approve": {"type": "boolean", "title": "Approve",
//! "description": …, "default": false}}, "required": ["approve"]}`), and a message naming the
//! tool id, the reason a hook gave (if any) and a compact view of the input ([`input_view`]:
//! values under secret-looking keys become `"[redacted]"`, the JSON is cut at
//! [`INPUT_VIEW_CHARS`] characters).
//!
//! Only `accept` with `approve: true` allows the call. Everything else denies it, with a reason
//! the guest sees in `Tool "<id>" was not approved: <reason>`:
//!
//! | what happened | reason |
//! |---|---|
//! | `accept` with `approve: false` | [`APPROVAL_REJECTED`] (`rejected`) |
//! | `accept` without a boolean `approve` | [`APPROVAL_MALFORMED`] |
//! | `decline` | [`APPROVAL_DECLINED`] (`declined`) |
//! | `cancel` | [`APPROVAL_CANCELLED_BY_CLIENT`] (`cancelled`) |
//! | the client did not declare form elicitation in `initialize` (or the session has no handshake: protocol 2026-07-28 and later forbid server-to-client requests), or no request of the session has been seen yet | [`CANNOT_ELICIT`] (`the client cannot elicit`) |
//! | the request failed (JSON-RPC error, closed connection, timeout) | `elicitation failed: <error>` |
//!
//! The approver has no deadline of its own: put it behind an
//! [`ApprovalBroker`](codemode_facade::ApprovalBroker) with the config's `snapshotTtlSeconds`
//! as TTL (as [`CodeModeServer`](crate::CodeModeServer) does), which denies an approval still
//! outstanding then with `approval expired`. When the approval's future is dropped before the
//! client answered (TTL, the call or its run dropped, the session ended), the client gets
//! `notifications/cancelled` for the elicitation, so its prompt can go away.

use std::sync::{Arc, Mutex, PoisonError};

use codemode_facade::pipeline::{ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver};
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, ProtocolVersion, RequestId, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions};
use rmcp::{Peer, RoleServer, ServiceError};
use serde_json::Value;

/// The form's one field: a boolean, `true` to run the call.
pub const APPROVE_FIELD: &str = "approve";

/// The compact input view in the message is cut after this many characters (Unicode scalar
/// values) of JSON, followed by `…(<n> more)`.
pub const INPUT_VIEW_CHARS: usize = 1000;

/// Tool ids and hook reasons in the message are cut after this many characters.
pub const MESSAGE_FIELD_CHARS: usize = 200;

/// The denial reason when the client cannot be asked: it did not declare the elicitation
/// capability (form mode) in `initialize`, or the session has no handshake to declare it in.
pub const CANNOT_ELICIT: &str = "the client cannot elicit";

/// The denial reason of an elicitation the client declined.
pub const APPROVAL_DECLINED: &str = "declined";

/// The denial reason of an elicitation the client cancelled (dismissed).
pub const APPROVAL_CANCELLED_BY_CLIENT: &str = "cancelled";

/// The denial reason of an accepted form whose `approve` is `false`.
pub const APPROVAL_REJECTED: &str = "rejected";

/// The denial reason of an accepted form without a boolean `approve`.
pub const APPROVAL_MALFORMED: &str = "the client answered without a boolean \"approve\"";

/// The `notifications/cancelled` reason sent when an approval is no longer wanted.
pub const ELICITATION_WITHDRAWN: &str = "the approval is no longer needed";

/// The denial reason of an elicitation that failed (`elicitation failed: <error>`).
pub fn elicitation_failed(error: &ServiceError) -> String {
    format!("elicitation failed: {error}")
}

/// `text` if it has at most `limit` characters, else its first `limit` followed by
/// `…(<n> more)`.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some((at, _)) => {
            let more = text[at..].chars().count();
            format!("{}…({more} more)", &text[..at])
        }
    }
}

/// The compact view of a call's input shown to the person who approves it: the compact JSON of
/// the input with the trajectory's redaction applied (values under keys matching
/// `/(token|secret|password|passwd|api[-_]?key|authorization|cookie)/i` become `"[redacted]"`,
/// at any depth), cut after [`INPUT_VIEW_CHARS`] characters with `…(<n> more)`.
pub fn input_view(input: &Value) -> String {
    let redacted = codemode_telemetry::redact_value(input);
    let json = serde_json::to_string(&redacted).unwrap_or_else(|_| "null".to_string());
    cut(&json, INPUT_VIEW_CHARS)
}

/// The elicitation message for `request`:
///
/// ```text
/// Code mode asks to run the tool "<tool id>".
/// Reason: <reason>            (only when a hook gave one)
/// Input: <input_view>
/// Set approve to true to run it; anything else denies it.
/// ```
///
/// The tool id and the reason are cut after [`MESSAGE_FIELD_CHARS`] characters.
pub fn approval_message(request: &ApprovalRequest) -> String {
    let mut message = format!(
        "Code mode asks to run the tool \"{}\".\n",
        cut(&request.tool_id, MESSAGE_FIELD_CHARS)
    );
    if let Some(reason) = request.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        message.push_str(&format!(
            "Reason: {}\n",
            cut(reason.trim(), MESSAGE_FIELD_CHARS)
        ));
    }
    message.push_str(&format!("Input: {}\n", input_view(&request.input)));
    message.push_str("Set approve to true to run it; anything else denies it.");
    message
}

/// The requested schema: one required boolean [`APPROVE_FIELD`], default `false`.
pub fn approval_schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with(APPROVE_FIELD, |b| {
            b.title("Approve")
                .description("Run this tool call")
                .with_default(false)
        })
        .build()
        .expect("a one-property schema with that property required is valid")
}

/// The `elicitation/create` parameters for `request` (form mode, [`approval_message`],
/// [`approval_schema`]).
pub fn elicitation_params(request: &ApprovalRequest) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: approval_message(request),
        requested_schema: approval_schema(),
    }
}

/// The decision an elicitation outcome stands for (see the module table): allow only for
/// `accept` with `approve: true`.
pub fn decision_of(outcome: Result<ElicitResult, ServiceError>) -> ApprovalDecision {
    match outcome {
        Ok(result) => match result.action {
            ElicitationAction::Accept => match result
                .content
                .as_ref()
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(Value::as_bool)
            {
                Some(true) => ApprovalDecision::allow(),
                Some(false) => ApprovalDecision::deny_because(APPROVAL_REJECTED),
                None => ApprovalDecision::deny_because(APPROVAL_MALFORMED),
            },
            ElicitationAction::Decline => ApprovalDecision::deny_because(APPROVAL_DECLINED),
            ElicitationAction::Cancel => {
                ApprovalDecision::deny_because(APPROVAL_CANCELLED_BY_CLIENT)
            }
            // `ElicitationAction` is non-exhaustive: an action this build does not know approves
            // nothing.
            _ => ApprovalDecision::deny_because(APPROVAL_DECLINED),
        },
        Err(error) => ApprovalDecision::deny_because(elicitation_failed(&error)),
    }
}

/// True when the client of `peer` can be asked: it declared form elicitation (or elicitation
/// without a mode, which means form) in an `initialize` handshake below protocol 2026-07-28.
pub fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    let Some(info) = peer.peer_info() else {
        return false;
    };
    info.protocol_version < ProtocolVersion::NO_INITIALIZE
        && peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
}

/// Where an MCP session's [`Peer`] is kept once known. [`CodeModeServer`](crate::CodeModeServer)
/// learns it from the first request of the session (the handler context carries it) and sets
/// it; approvers made from the slot read it when they ask.
#[derive(Clone, Default)]
pub struct PeerSlot(Arc<Mutex<Option<Peer<RoleServer>>>>);

impl PeerSlot {
    /// An empty slot.
    pub fn new() -> Self {
        PeerSlot::default()
    }

    /// Keeps `peer` (replacing an earlier one).
    pub fn set(&self, peer: Peer<RoleServer>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer);
    }

    /// The peer, once set.
    pub fn get(&self) -> Option<Peer<RoleServer>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// An [`Approver`] that asks the client of one MCP session by `elicitation/create` (see the
/// module documentation for the form and for what denies). Cheap to clone.
#[derive(Clone)]
pub struct ElicitationApprover {
    peer: PeerSlot,
}

impl ElicitationApprover {
    /// An approver asking the client of `peer`.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        let slot = PeerSlot::new();
        slot.set(peer);
        ElicitationApprover { peer: slot }
    }

    /// An approver asking whichever peer `slot` holds when an approval comes; while it holds
    /// none, approvals are denied with [`CANNOT_ELICIT`].
    pub fn from_slot(slot: PeerSlot) -> Self {
        ElicitationApprover { peer: slot }
    }
}

impl Approver for ElicitationApprover {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let peer = self.peer.get();
        Box::pin(async move {
            match peer {
                Some(peer) if can_elicit(&peer) => ask(peer, &request).await,
                _ => ApprovalDecision::deny_because(CANNOT_ELICIT),
            }
        })
    }
}

/// Sends the elicitation and waits for the answer; a drop before the answer withdraws it.
async fn ask(peer: Peer<RoleServer>, request: &ApprovalRequest) -> ApprovalDecision {
    tracing::debug!(
        approval = %request.approval_id,
        tool = %request.tool_id,
        "codemode MCP approval: asking the client"
    );
    let elicit = ServerRequest::ElicitRequest(ElicitRequest::new(elicitation_params(request)));
    let handle = match peer
        .send_request_with_option(elicit, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return decision_of(Err(error)),
    };
    let mut withdraw = Withdraw {
        peer: Some(peer),
        id: handle.id.clone(),
    };
    let outcome = match handle.await_response().await {
        Ok(ClientResult::ElicitResult(result)) => Ok(result),
        Ok(_) => Err(ServiceError::UnexpectedResponse),
        Err(error) => Err(error),
    };
    withdraw.peer = None;
    let decision = decision_of(outcome);
    tracing::debug!(
        approval = %request.approval_id,
        allowed = decision.is_allowed(),
        reason = ?decision.reason,
        "codemode MCP approval answered"
    );
    decision
}

/// Sends `notifications/cancelled` for an elicitation whose wait was dropped before it ended.
struct Withdraw {
    peer: Option<Peer<RoleServer>>,
    id: RequestId,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let param = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some(ELICITATION_WITHDRAWN.into()),
        );
        runtime.spawn(async move {
            if let Err(e) = peer.notify_cancelled(param).await {
                tracing::debug!("could not withdraw an MCP elicitation: {e}");
            }
        });
    }
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

    #[test]
    fn the_message_names_the_tool_the_reason_and_the_redacted_input() {
        let r = request(
            json!({"env": "prod", "apiKey": "sk-123", "auth": {"token": "t"}}),
            Some("  hooks said ask "),
        );
        assert_eq!(
            approval_message(&r),
            "Code mode asks to run the tool \"openclaw:core:deploy\".\nReason: hooks said ask\nInput: {\"env\":\"prod\",\"apiKey\":\"[redacted]\",\"auth\":{\"token\":\"[redacted]\"}}\nSet approve to true to run it; anything else denies it."
        );
        let r = request(json!({}), None);
        assert_eq!(
            approval_message(&r),
            "Code mode asks to run the tool \"openclaw:core:deploy\".\nInput: {}\nSet approve to true to run it; anything else denies it."
        );
    }

    #[test]
    fn the_input_view_is_bounded() {
        let view = input_view(&json!({"text": "é".repeat(3000)}));
        // `{"text":"` is 9 characters; the rest of the first 1000 are `é`.
        let expected = format!(
            "{{\"text\":\"{}…({} more)",
            "é".repeat(INPUT_VIEW_CHARS - 9),
            3000 - (INPUT_VIEW_CHARS - 9) + 2
        );
        assert_eq!(view, expected);
        let long_id = request(json!(null), Some(&"r".repeat(250)));
        let message = approval_message(&long_id);
        assert!(message.contains(&format!("Reason: {}…(50 more)\n", "r".repeat(200))));
    }

    #[test]
    fn the_schema_is_one_required_boolean() {
        assert_eq!(
            serde_json::to_value(approval_schema()).unwrap(),
            json!({
                "type": "object",
                "properties": {"approve": {
                    "type": "boolean", "title": "Approve",
                    "description": "Run this tool call", "default": false
                }},
                "required": ["approve"]
            })
        );
    }

    fn answered(action: ElicitationAction, content: Option<Value>) -> ApprovalDecision {
        let mut result = ElicitResult::new(action);
        result.content = content;
        decision_of(Ok(result))
    }

    #[test]
    fn only_accept_with_approve_true_allows() {
        use ElicitationAction::*;
        assert_eq!(
            answered(Accept, Some(json!({"approve": true}))),
            ApprovalDecision::allow()
        );
        assert_eq!(
            answered(Accept, Some(json!({"approve": false}))),
            ApprovalDecision::deny_because("rejected")
        );
        assert_eq!(
            answered(Accept, Some(json!({"approve": "yes"}))),
            ApprovalDecision::deny_because(APPROVAL_MALFORMED)
        );
        assert_eq!(
            answered(Accept, None),
            ApprovalDecision::deny_because(APPROVAL_MALFORMED)
        );
        assert_eq!(
            answered(Decline, Some(json!({"approve": true}))),
            ApprovalDecision::deny_because("declined")
        );
        assert_eq!(
            answered(Cancel, None),
            ApprovalDecision::deny_because("cancelled")
        );
        assert_eq!(
            decision_of(Err(ServiceError::TransportClosed)),
            ApprovalDecision::deny_because(format!(
                "elicitation failed: {}",
                ServiceError::TransportClosed
            ))
        );
    }

    #[tokio::test]
    async fn an_empty_slot_cannot_elicit() {
        let approver = ElicitationApprover::from_slot(PeerSlot::new());
        assert_eq!(
            approver.request(request(json!({}), None)).await,
            ApprovalDecision::deny_because("the client cannot elicit")
        );
    }
}
