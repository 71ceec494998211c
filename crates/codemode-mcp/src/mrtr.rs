//! Approvals for MCP 2026-07-28 clients by multi round-trip requests (MRTR, SEP-2322;
//! docs/mcp.md, "Approvals by MRTR").
//!
//! A 2026-07-28 client cannot be sent `elicitation/create` (the revision has no server-to-client
//! requests). When an `exec` or `wait` of such a client leaves its run waiting for approvals,
//! `serve` answers `resultType: "input_required"` instead of the `waiting` result:
//!
//! - `inputRequests`: one `elicitation/create` request per pending approval of the run (all of
//!   them in one result), keyed by its `approvalId`, with the form of `crate::elicit`
//!   ([`elicitation_params`]);
//! - `requestState`: [`RequestStates::seal`]ed (HMAC-SHA256, rmcp's [`RequestStateCodec`]) over
//!   `{run, approvals, nonce, ttlMs}`, bound to the MCP session and the tool called
//!   (`<session key>|<tool>`, authenticated but not stored) and expiring with the approvals
//!   (`snapshotTtlSeconds`).
//!
//! The client retries the same `tools/call` with `inputResponses` and the `requestState`. The
//! state is opened (a forged, tampered, expired, foreign or already used one is refused with the
//! JSON-RPC error [`invalid_request_state`]: -32602 `Invalid or expired requestState`, data
//! `{"reason": "invalid_request_state"}`, what the reference Python SDK sends), every answered
//! approval is decided as an elicitation answer is ([`decision_of`]), and the run resumes as by
//! `wait` (the retried `exec` never runs its code again). Approvals the retry leaves unanswered
//! are asked again in a new `input_required` result.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_facade::ApprovalRequest;
use rmcp::model::{
    ElicitRequest, ElicitResult, ErrorCode, InputRequest, InputRequests, RequestStateCodec,
    RequestStateError, SealOptions,
};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::elicit::{decision_of, elicitation_params};

/// The message of the error a refused `requestState` gets.
pub const INVALID_REQUEST_STATE: &str = "Invalid or expired requestState";

/// The JSON-RPC error a refused `requestState` gets (-32602, [`INVALID_REQUEST_STATE`], data
/// `{"reason": "invalid_request_state"}`); the real reason goes to the log only.
pub fn invalid_request_state() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_PARAMS,
        INVALID_REQUEST_STATE,
        Some(json!({"reason": "invalid_request_state"})),
    )
}

/// What a `requestState` carries (signed, readable by the client: no secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalState {
    /// The run waiting for the approvals.
    pub run: String,
    /// The `approvalId`s asked in this round, in `inputRequests` order.
    pub approvals: Vec<String>,
    /// Makes the state single-use: a nonce is accepted once.
    pub nonce: String,
    /// The state's lifetime in milliseconds (its expiry is sealed separately).
    pub ttl_ms: u64,
    /// The program's output the `waiting` results this exchange replaced carried (an
    /// `input_required` result has no place for it): the retry's result delivers it first, so no
    /// output is lost to MRTR (docs/mcp.md, "Approvals by MRTR").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<serde_json::Value>,
}

/// What the `requestState` of a downstream server's `input_required` passed through to the
/// client carries (`serve` with code mode off; docs/mcp.md, "Code mode off"): the server's own
/// state, which the client carries but cannot change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownstreamState {
    /// The downstream server's `requestState`, echoed to it on the retry.
    pub server_state: String,
    /// Makes the state single-use: a nonce is accepted once.
    pub nonce: String,
    /// The state's lifetime in milliseconds (its expiry is sealed separately).
    pub ttl_ms: u64,
}

/// Seals and opens the `requestState`s of one server process, and remembers the ones already
/// used (until they expire) so none is accepted twice.
pub struct RequestStates {
    codec: RequestStateCodec,
    used: Mutex<HashMap<String, Instant>>,
}

impl std::fmt::Debug for RequestStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStates").finish_non_exhaustive()
    }
}

impl RequestStates {
    /// States sealed with a key made for this process: 32 random bytes (two v4 UUIDs' worth of
    /// the OS generator, 244 random bits), so a state from another process (or an earlier run
    /// of this one) is refused.
    pub fn per_process() -> Self {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        RequestStates::with_key(key).expect("32 bytes is at least the minimum key length")
    }

    /// States sealed with `key` (e.g. from config, shared by replicas). Errors:
    /// [`RequestStateError::KeyTooShort`] below [`RequestStateCodec::MIN_KEY_LENGTH`] bytes.
    pub fn with_key(key: impl Into<Vec<u8>>) -> Result<Self, RequestStateError> {
        Ok(RequestStates {
            codec: RequestStateCodec::try_new(key)?,
            used: Mutex::new(HashMap::new()),
        })
    }

    /// Seals a state for `run` asking `approvals`, carrying the program's `output` not yet
    /// delivered ([`ApprovalState::output`]), bound to `binding` (`<session key>|<tool>`) and
    /// expiring after `ttl`.
    pub fn seal(
        &self,
        binding: &str,
        run: &str,
        approvals: Vec<String>,
        output: Vec<serde_json::Value>,
        ttl: Duration,
    ) -> String {
        let state = ApprovalState {
            run: run.to_string(),
            approvals,
            nonce: uuid::Uuid::new_v4().to_string(),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            output,
        };
        self.seal_value(binding, &state, ttl)
    }

    /// Opens `sealed` for `binding` and marks it used. Errors: [`invalid_request_state`] when it
    /// is malformed, forged or tampered with, sealed by another key or for another binding
    /// (session or tool), expired, or already used.
    pub fn open(&self, binding: &str, sealed: &str) -> Result<ApprovalState, ErrorData> {
        let state: ApprovalState = self.open_sealed(binding, sealed)?;
        self.use_once(&state.nonce, state.ttl_ms)?;
        Ok(state)
    }

    /// Seals the downstream server's `server_state` for the client, bound to `binding`
    /// (`<session key>|<tool>`) and expiring after `ttl`.
    pub fn seal_downstream(&self, binding: &str, server_state: &str, ttl: Duration) -> String {
        let state = DownstreamState {
            server_state: server_state.to_string(),
            nonce: uuid::Uuid::new_v4().to_string(),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        };
        self.seal_value(binding, &state, ttl)
    }

    /// `value` sealed for `binding`, expiring after `ttl`.
    fn seal_value<T: Serialize>(&self, binding: &str, value: &T, ttl: Duration) -> String {
        let options = SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(ttl);
        self.codec
            .seal_json_with(value, &options)
            .expect("a state of plain fields serializes")
    }

    /// Opens a state of [`RequestStates::seal_downstream`] for `binding` and marks it used:
    /// the downstream server's state. Errors as [`RequestStates::open`].
    pub fn open_downstream(&self, binding: &str, sealed: &str) -> Result<String, ErrorData> {
        let state: DownstreamState = self.open_sealed(binding, sealed)?;
        self.use_once(&state.nonce, state.ttl_ms)?;
        Ok(state.server_state)
    }

    /// `sealed` opened for `binding` as a `T`, or [`invalid_request_state`].
    fn open_sealed<T: serde::de::DeserializeOwned>(
        &self,
        binding: &str,
        sealed: &str,
    ) -> Result<T, ErrorData> {
        self.codec
            .open_json_with(sealed, binding.as_bytes())
            .map_err(|e| {
                tracing::warn!("requestState refused: {e}");
                invalid_request_state()
            })
    }

    /// Marks `nonce` used for `ttl_ms` (plus a second of clock slack), or
    /// [`invalid_request_state`] when it already was.
    fn use_once(&self, nonce: &str, ttl_ms: u64) -> Result<(), ErrorData> {
        let now = Instant::now();
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, expires| *expires > now);
        if used.contains_key(nonce) {
            tracing::warn!("requestState refused: already used");
            return Err(invalid_request_state());
        }
        // Kept until it could no longer be opened anyway.
        let expires = now + Duration::from_millis(ttl_ms) + Duration::from_secs(1);
        used.insert(nonce.to_string(), expires);
        Ok(())
    }
}

/// The `inputRequests` of a round: one `elicitation/create` per approval, keyed by its id.
pub fn input_requests(approvals: &[ApprovalRequest]) -> InputRequests {
    approvals
        .iter()
        .map(|request| {
            (
                request.approval_id.clone(),
                InputRequest::Elicitation(ElicitRequest::new(elicitation_params(request))),
            )
        })
        .collect()
}

/// The decision one `inputResponses` entry stands for: the entry read as an `ElicitResult`
/// and decided as an elicitation answer is; an entry that is not one denies (as an accepted form
/// without a boolean `approve` does).
pub fn decision_of_response(response: &serde_json::Value) -> codemode_facade::ApprovalDecision {
    match serde_json::from_value::<ElicitResult>(response.clone()) {
        Ok(result) => decision_of(Ok(result)),
        Err(_) => {
            codemode_facade::ApprovalDecision::deny_because(crate::elicit::APPROVAL_MALFORMED)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> RequestStates {
        RequestStates::per_process()
    }

    #[test]
    fn a_state_opens_once_for_its_binding() {
        let s = states();
        let output = vec![serde_json::json!({"type": "text", "text": "asking"})];
        let sealed = s.seal(
            "mcp:a|exec",
            "run-1",
            vec!["approval_1".into()],
            output.clone(),
            Duration::from_secs(60),
        );
        assert!(s.open("mcp:b|exec", &sealed).is_err(), "another session");
        assert!(s.open("mcp:a|wait", &sealed).is_err(), "another tool");
        let opened = s.open("mcp:a|exec", &sealed).unwrap();
        assert_eq!(opened.run, "run-1");
        assert_eq!(opened.approvals, ["approval_1"]);
        assert_eq!(opened.ttl_ms, 60_000);
        assert_eq!(opened.output, output);
        let replay = s.open("mcp:a|exec", &sealed).unwrap_err();
        assert_eq!(replay, invalid_request_state());
    }

    #[test]
    fn a_downstream_state_opens_once_for_its_binding_and_not_as_an_approval_state() {
        let s = states();
        let sealed = s.seal_downstream("mcp:a|greet", "server-state-1", Duration::from_secs(60));
        assert!(
            s.open_downstream("mcp:a|other", &sealed).is_err(),
            "another tool"
        );
        assert_eq!(
            s.open("mcp:a|greet", &sealed).unwrap_err(),
            invalid_request_state(),
            "not an approval state"
        );
        assert_eq!(
            s.open_downstream("mcp:a|greet", &format!("{sealed}-TAMPERED"))
                .unwrap_err(),
            invalid_request_state()
        );
        assert_eq!(
            s.open_downstream("mcp:a|greet", &sealed).unwrap(),
            "server-state-1"
        );
        assert_eq!(
            s.open_downstream("mcp:a|greet", &sealed).unwrap_err(),
            invalid_request_state(),
            "replayed"
        );
    }

    #[test]
    fn tampered_foreign_and_expired_states_are_refused() {
        let s = states();
        let sealed = s.seal(
            "b",
            "run-1",
            vec!["approval_1".into()],
            Vec::new(),
            Duration::from_secs(60),
        );
        // Flip one character of the signed body.
        let mut tampered: Vec<char> = sealed.chars().collect();
        let at = tampered.len() / 2;
        tampered[at] = if tampered[at] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert_eq!(s.open("b", &tampered).unwrap_err(), invalid_request_state());
        assert_eq!(
            s.open("b", "not a state").unwrap_err(),
            invalid_request_state()
        );
        let foreign = states().seal("b", "run-1", vec![], Vec::new(), Duration::from_secs(60));
        assert_eq!(s.open("b", &foreign).unwrap_err(), invalid_request_state());
        let expired = s.seal("b", "run-1", vec![], Vec::new(), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(s.open("b", &expired).unwrap_err(), invalid_request_state());
        let error = invalid_request_state();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(error.data, Some(json!({"reason": "invalid_request_state"})));
    }

    #[test]
    fn responses_decide_as_elicitation_answers() {
        use codemode_facade::ApprovalDecision;
        assert_eq!(
            decision_of_response(&json!({"action": "accept", "content": {"approve": true}})),
            ApprovalDecision::allow()
        );
        assert_eq!(
            decision_of_response(&json!({"action": "decline"})),
            ApprovalDecision::deny_because(crate::elicit::APPROVAL_DECLINED)
        );
        assert_eq!(
            decision_of_response(&json!(42)),
            ApprovalDecision::deny_because(crate::elicit::APPROVAL_MALFORMED)
        );
    }
}
