//! Multi round-trip requests passed through to the upstream client (protocol 2026-07-28;
//! docs/mcp.md, "Code mode off: a plain aggregating server").
//!
//! `serve` with code mode off, answering a 2026-07-28 client, does not answer a downstream
//! server's `input_required` itself: the client has no way to be asked (the revision has no
//! server-to-client requests) but can answer `inputRequests` itself. So the call runs inside
//! [`passing_through`], and the nested `tools/call` of
//! [`ServerClient::call_tool_for`](super::ServerClient::call_tool_for) then
//!
//! - sends the round's [`PassThrough::input_responses`] and [`PassThrough::request_state`] with
//!   the call's arguments,
//! - declares the upstream client's capabilities ([`PassThrough::client_capabilities`]) in the
//!   request's `_meta` instead of codemode's own, so the server asks only for what that client
//!   can give, and
//! - returns an `input_required` answer as the call's result instead of answering it.
//!
//! When the upstream client declared the tasks extension ([`PassThrough::tasks`]), a downstream
//! `CreateTaskResult` is the call's result too (`serve` maps its task id and routes `tasks/*`
//! back, `server/direct_tasks.rs`); otherwise a downstream task is followed to its end, as for
//! any call. A downstream JSON-RPC error `-32021` (Missing Required Client Capability: the
//! server needs a capability the upstream client did not declare) is kept in
//! [`PassThrough::refusal`], so `serve` answers it to the client as the same error.
//! A `prompts/get` or `resources/read` made inside it (`serve`'s prompts and resources with
//! code mode off) is sent the same way and its `input_required` returned likewise
//! (`client/operations.rs`).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientCapabilities, ErrorCode, RequestMetaObject};
use rmcp::ErrorData;
use serde_json::{Map, Value};

use crate::error::ClientError;

/// Where a round keeps the downstream refusal the upstream client must see as a JSON-RPC error
/// (shared by the clones of one round).
#[derive(Debug, Clone, Default)]
pub struct Refusal(Arc<Mutex<Option<ErrorData>>>);

impl PartialEq for Refusal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Refusal {
    /// Keeps `error` when it is a refusal for a capability the upstream client lacks (`-32021`).
    pub(crate) fn keep(&self, error: &ClientError) {
        if let ClientError::Refused { source, .. } = error {
            if source.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
                *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((**source).clone());
            }
        }
    }

    /// The refusal kept, if any (taken: a second call answers `None`).
    pub fn take(&self) -> Option<ErrorData> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// One round of a call whose input requests go back to the upstream client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassThrough {
    /// The upstream client's `inputResponses` for this round, sent as they are (`None` on the
    /// first round).
    pub input_responses: Option<Map<String, Value>>,
    /// The downstream server's own `requestState` of the previous round, echoed unchanged.
    pub request_state: Option<String>,
    /// What the upstream client declared it can answer (its request's
    /// `io.modelcontextprotocol/clientCapabilities`); `None` keeps codemode's own.
    pub client_capabilities: Option<ClientCapabilities>,
    /// The upstream client declared the tasks extension: a downstream `CreateTaskResult` is
    /// the call's result, not followed.
    pub tasks: bool,
    /// A downstream `-32021` refusal of the call, for `serve` to answer as that error.
    pub refusal: Refusal,
}

tokio::task_local! {
    static PASS_THROUGH: PassThrough;
}

/// Runs `future` (a call through the host pipeline to one MCP server) as the round `round`: a
/// nested `tools/call` made inside it passes its `input_required` answer back (see the module
/// documentation).
pub async fn passing_through<F: Future>(round: PassThrough, future: F) -> F::Output {
    PASS_THROUGH.scope(round, future).await
}

/// The round of the current task, when it runs inside [`passing_through`].
pub(crate) fn current() -> Option<PassThrough> {
    PASS_THROUGH.try_with(Clone::clone).ok()
}

impl PassThrough {
    /// `params` (a `tools/call`'s `{name, arguments}`, a `prompts/get`'s or a
    /// `resources/read`'s params) with this round's `inputResponses` and `requestState`.
    pub(crate) fn apply(&self, params: &mut Value) {
        let Some(fields) = params.as_object_mut() else {
            return;
        };
        if let Some(responses) = &self.input_responses {
            fields.insert("inputResponses".into(), Value::Object(responses.clone()));
        }
        if let Some(state) = &self.request_state {
            fields.insert("requestState".into(), Value::String(state.clone()));
        }
    }

    /// The request `_meta` declaring the upstream client's capabilities, if it declared any.
    pub(crate) fn meta(&self) -> Option<RequestMetaObject> {
        let capabilities = self.client_capabilities.clone()?;
        let mut meta = RequestMetaObject::new();
        meta.set_client_capabilities(capabilities);
        Some(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_round_adds_its_responses_and_state_to_the_call() {
        let round = PassThrough {
            input_responses: Some(Map::from_iter([(
                "user_name".to_string(),
                json!({"action": "accept", "content": {"name": "Alice"}}),
            )])),
            request_state: Some("downstream-state".into()),
            client_capabilities: None,
            ..PassThrough::default()
        };
        let mut params = json!({"name": "greet", "arguments": {}});
        round.apply(&mut params);
        assert_eq!(
            params,
            json!({
                "name": "greet",
                "arguments": {},
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": "downstream-state"
            })
        );
        assert_eq!(round.meta(), None);
    }

    #[test]
    fn the_meta_declares_the_upstream_clients_capabilities() {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"sampling": {}})).unwrap();
        let round = PassThrough {
            client_capabilities: Some(capabilities),
            ..PassThrough::default()
        };
        let meta = serde_json::to_value(round.meta().unwrap()).unwrap();
        assert_eq!(
            meta,
            json!({"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}})
        );
    }

    #[tokio::test]
    async fn the_round_is_current_only_inside_passing_through() {
        assert_eq!(current(), None);
        let round = PassThrough {
            request_state: Some("s".into()),
            ..PassThrough::default()
        };
        let seen = passing_through(round.clone(), async { current() }).await;
        assert_eq!(seen, Some(round));
    }
}
