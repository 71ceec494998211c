//! One code-mode session of `serve` (`Session`): its scope, its client and its approvals, and
//! what its end drops.

use std::sync::{Arc, OnceLock};

use codemode_bridge::RunScope;
use codemode_facade::{ApprovalBroker, CodeMode};

use crate::elicit::{ElicitationApprover, PeerSlot};

/// One code-mode session: its scope, its client (for elicitations) and approvals, and the end
/// of it. When the last handle to it is dropped (the MCP session is over and no request of it is
/// still running), the runs it parked are dropped ([`CodeMode::end_session`]) and approvals still
/// outstanding are denied.
pub(super) struct Session {
    code_mode: Arc<CodeMode>,
    pub(super) scope: RunScope,
    /// The session's client, learned from its first request.
    pub(super) peer: PeerSlot,
    /// The session's approvals, made on first use (the TTL comes from the run's config).
    approvals: OnceLock<Arc<ApprovalBroker>>,
    /// The approvals of the session's 2026-07-28 requests, answered by MRTR (`crate::mrtr`):
    /// no delegate, so they stay outstanding until a retry's `inputResponses` answers them.
    pub(super) mrtr: OnceLock<Arc<ApprovalBroker>>,
    /// A shared scope (stateless HTTP requests, `crate::shared_scope`): when the process lets go
    /// of it, its runs stay in a durable store.
    shared: bool,
    /// For a stateful HTTP session opened with a bearer token: its principal, noted for the cap.
    pub(super) owner: OnceLock<crate::shared_scope::OwnerNote>,
}

/// The reason of approvals still outstanding when their MCP session ends.
pub const SESSION_ENDED: &str = "the MCP session ended";

impl Session {
    /// A fresh session: `session_id = "mcp-<uuid>"`, `session_key = "mcp:<uuid>"`.
    pub(super) fn start(code_mode: Arc<CodeMode>) -> Arc<Session> {
        Session::with_prefix(code_mode, "")
    }

    /// A shared session of stateless HTTP requests with `scope` (`crate::shared_scope`).
    pub(super) fn shared(code_mode: Arc<CodeMode>, scope: RunScope) -> Arc<Session> {
        Session::with_scope(code_mode, scope, true)
    }

    fn with_prefix(code_mode: Arc<CodeMode>, prefix: &str) -> Arc<Session> {
        let id = uuid::Uuid::new_v4();
        let (dash, colon) = if prefix.is_empty() {
            (String::new(), String::new())
        } else {
            (format!("{prefix}-"), format!("{prefix}:"))
        };
        let scope = RunScope {
            session_id: Some(format!("mcp-{dash}{id}")),
            session_key: Some(format!("mcp:{colon}{id}")),
            ..RunScope::default()
        };
        Session::with_scope(code_mode, scope, false)
    }

    fn with_scope(code_mode: Arc<CodeMode>, scope: RunScope, shared: bool) -> Arc<Session> {
        Arc::new(Session {
            code_mode,
            scope,
            peer: PeerSlot::new(),
            approvals: OnceLock::new(),
            mrtr: OnceLock::new(),
            shared,
            owner: OnceLock::new(),
        })
    }

    /// The session's approval broker: outstanding approvals expire after `ttl` (the first
    /// call's `snapshotTtlSeconds`), and each is asked of the client by elicitation.
    pub(super) fn approvals(&self, ttl: std::time::Duration) -> Arc<ApprovalBroker> {
        self.approvals
            .get_or_init(|| {
                Arc::new(ApprovalBroker::with_delegate(
                    ttl,
                    Arc::new(ElicitationApprover::from_slot(self.peer.clone())),
                ))
            })
            .clone()
    }

    /// The session's MRTR approvals (2026-07-28 requests): outstanding until a retry answers
    /// them, or `ttl` passes. With a durable run store a retry that reached another process
    /// answers them too, relayed through the store ([`CodeMode::relayed_approver`];
    /// docs/deployment.md, "Approvals across instances").
    pub(super) fn mrtr_approvals(&self, ttl: std::time::Duration) -> Arc<ApprovalBroker> {
        self.mrtr
            .get_or_init(|| {
                Arc::new(match self.code_mode.relayed_approver() {
                    Some(relayed) => ApprovalBroker::with_delegate(ttl, relayed),
                    None => ApprovalBroker::new(ttl),
                })
            })
            .clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for approvals in [self.approvals.get(), self.mrtr.get()]
            .into_iter()
            .flatten()
        {
            approvals.deny_all(Some(SESSION_ENDED));
        }
        let dropped = if self.shared {
            self.code_mode.release_session(&self.scope)
        } else {
            self.code_mode.end_session(&self.scope)
        };
        if dropped > 0 {
            tracing::info!(
                session = ?self.scope.session_id,
                dropped,
                "codemode MCP session over; its parked runs were dropped"
            );
        }
    }
}

/// Who owns the tasks a session creates: its session key.
pub(super) fn session_owner(session: &Session) -> String {
    session.scope.session_key.clone().unwrap_or_default()
}
