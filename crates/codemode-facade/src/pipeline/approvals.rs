//! Approvals (docs/contract/host.md#h3): the [`ApprovalRequest`] a call asks for, the
//! [`Approver`] that answers it, and the [`ApprovalBroker`] that keeps outstanding approvals so a
//! host can list them and answer them by id.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codemode_bridge::RunScope;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::result::PendingApproval;

/// The reason of a denial that gave none: `denied` (docs/contract/host.md#h3).
pub const DEFAULT_DENIAL_REASON: &str = "denied";

/// The reason of an approval nobody answered within the broker's TTL.
pub const APPROVAL_EXPIRED: &str = "approval expired";

/// The reason of an approval withdrawn by [`ApprovalBroker::deny_all`] without a reason of its own.
pub const APPROVAL_CANCELLED: &str = "approval cancelled";

/// An approval the pipeline asks for: one per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// `approval_<uuid>`, unique per request.
    pub approval_id: String,
    /// The call's id (`tool_search_code:…` for nested calls).
    pub tool_call_id: String,
    /// The catalog id (`exec` / `wait` for the outer calls).
    pub tool_id: String,
    /// The tool name.
    pub tool_name: String,
    /// The input the tool would run with (after hook rewrites).
    pub input: Value,
    /// Why approval is needed: the hook's `ask` reason, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For nested calls: the outer `exec` call's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// For nested calls: the guest request's bridge id (`bridge:call:1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge_id: Option<String>,
    /// The scope of the run the call belongs to.
    pub scope: RunScope,
}

impl ApprovalRequest {
    /// The `pendingApprovals` entry of this request.
    pub fn pending(&self) -> PendingApproval {
        PendingApproval {
            approval_id: self.approval_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            tool_id: self.tool_id.clone(),
            input: self.input.clone(),
        }
    }
}

/// `"allow"` or `"deny"`: the trajectory's decision type (one home, in `codemode-telemetry`;
/// `approval_resolved` carries it as `decision`).
pub use codemode_telemetry::ApprovalDecision as ApprovalVerdict;

/// An answer to an approval: `{decision: "allow" | "deny", reason?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    /// The verdict.
    pub decision: ApprovalVerdict,
    /// Why (a denial without one reads `denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalDecision {
    /// `{decision: "allow"}`.
    pub fn allow() -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Allow,
            reason: None,
        }
    }

    /// `{decision: "deny"}`.
    pub fn deny() -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Deny,
            reason: None,
        }
    }

    /// `{decision: "deny", reason}`.
    pub fn deny_because(reason: impl Into<String>) -> Self {
        ApprovalDecision {
            decision: ApprovalVerdict::Deny,
            reason: Some(reason.into()),
        }
    }

    /// True for `allow`.
    pub fn is_allowed(&self) -> bool {
        self.decision == ApprovalVerdict::Allow
    }
}

/// The future an [`Approver`] returns.
pub type ApprovalFuture = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'static>>;

/// Answers approvals (docs/contract/host.md#h3): a terminal prompt, an MCP elicitation, a fixed policy, or the
/// [`ApprovalBroker`] that waits for the host to answer by id. The future may take as long as a
/// person needs; the call stays pending meanwhile.
pub trait Approver: Send + Sync + 'static {
    /// Asks for one approval.
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture;
}

/// An approver that always gives the same answer (`--approve all` / `--approve none`).
#[derive(Debug, Clone)]
pub struct FixedApprover(pub ApprovalDecision);

impl Approver for FixedApprover {
    fn request(&self, _request: ApprovalRequest) -> ApprovalFuture {
        let decision = self.0.clone();
        Box::pin(async move { decision })
    }
}

/// [`ApprovalBroker::answer`] was given an id that is not outstanding (never issued, already
/// answered, expired, or its call was cancelled).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approvalId: {0}")]
pub struct UnknownApproval(pub String);

struct Outstanding {
    seq: u64,
    request: ApprovalRequest,
    answer: oneshot::Sender<ApprovalDecision>,
}

#[derive(Default)]
struct BrokerState {
    next_seq: u64,
    outstanding: HashMap<String, Outstanding>,
}

struct BrokerInner {
    ttl: Duration,
    delegate: Option<Arc<dyn Approver>>,
    state: Mutex<BrokerState>,
}

impl BrokerInner {
    fn state(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The registry of outstanding approvals, itself an [`Approver`].
///
/// Each request is recorded until it is answered, either by [`answer`](Self::answer) (a
/// session's `approve` request) or by the optional delegate approver (a terminal prompt, an MCP
/// elicitation), whichever comes first; one still outstanding after the broker's TTL (use the
/// config's `snapshotTtlSeconds`; less a tenth of it, at most 50 ms, so that it expires before
/// the nested call's own timeout of the same length) is denied with reason `approval expired`. A request whose call
/// is dropped (timed out, run dropped) leaves the registry. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct ApprovalBroker {
    inner: Arc<BrokerInner>,
}

impl ApprovalBroker {
    /// A broker whose approvals expire after `ttl`, answered only through [`answer`](Self::answer).
    pub fn new(ttl: Duration) -> Self {
        ApprovalBroker {
            inner: Arc::new(BrokerInner {
                ttl,
                delegate: None,
                state: Mutex::new(BrokerState::default()),
            }),
        }
    }

    /// A broker that also asks `delegate` for every request; the first answer (delegate or
    /// [`answer`](Self::answer)) wins.
    pub fn with_delegate(ttl: Duration, delegate: Arc<dyn Approver>) -> Self {
        ApprovalBroker {
            inner: Arc::new(BrokerInner {
                ttl,
                delegate: Some(delegate),
                state: Mutex::new(BrokerState::default()),
            }),
        }
    }

    /// How long an approval may stay outstanding.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// Every outstanding request, oldest first.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let state = self.inner.state();
        let mut all: Vec<&Outstanding> = state.outstanding.values().collect();
        all.sort_by_key(|o| o.seq);
        all.into_iter().map(|o| o.request.clone()).collect()
    }

    /// The `pendingApprovals` entries of the outstanding requests that satisfy `keep`, oldest
    /// first.
    pub fn pending_where(&self, keep: impl Fn(&ApprovalRequest) -> bool) -> Vec<PendingApproval> {
        self.pending()
            .iter()
            .filter(|r| keep(r))
            .map(ApprovalRequest::pending)
            .collect()
    }

    /// Answers the outstanding approval `approval_id`; the waiting call then goes on (allow) or
    /// fails (deny).
    ///
    /// # Errors
    /// [`UnknownApproval`] when no such approval is outstanding.
    pub fn answer(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), UnknownApproval> {
        let outstanding = self.inner.state().outstanding.remove(approval_id);
        match outstanding {
            Some(o) => o
                .answer
                .send(decision)
                .map_err(|_| UnknownApproval(approval_id.to_string())),
            None => Err(UnknownApproval(approval_id.to_string())),
        }
    }

    /// Denies every outstanding approval with `reason` (session end, shutdown); returns how many.
    pub fn deny_all(&self, reason: Option<&str>) -> usize {
        let drained: Vec<Outstanding> = self
            .inner
            .state()
            .outstanding
            .drain()
            .map(|(_, o)| o)
            .collect();
        let count = drained.len();
        for o in drained {
            let _ = o.answer.send(ApprovalDecision::deny_because(
                reason.unwrap_or(APPROVAL_CANCELLED),
            ));
        }
        count
    }
}

/// One run's view of an [`ApprovalBroker`]: forwards every request to the broker and remembers
/// the ids it forwarded while they are outstanding, so a `waiting` result lists exactly that
/// run's `pendingApprovals` (docs/contract/host.md#h9), whatever else the broker holds.
#[derive(Clone)]
pub(crate) struct RunApprovals {
    broker: Arc<ApprovalBroker>,
    asked: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl RunApprovals {
    /// A view over `broker` that has asked nothing yet.
    pub(crate) fn new(broker: Arc<ApprovalBroker>) -> Self {
        RunApprovals {
            broker,
            asked: Arc::default(),
        }
    }

    /// The outstanding approvals this run asked for, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.is_empty() {
            return Vec::new();
        }
        self.broker
            .pending_where(|request| asked.contains(&request.approval_id))
    }
}

/// Forgets a forwarded approval id when its request's future ends or is dropped.
struct Asked {
    asked: Arc<Mutex<std::collections::HashSet<String>>>,
    approval_id: String,
}

impl Drop for Asked {
    fn drop(&mut self) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.approval_id);
    }
}

impl Approver for RunApprovals {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let approval_id = request.approval_id.clone();
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(approval_id.clone());
        let asked = Asked {
            asked: self.asked.clone(),
            approval_id,
        };
        let answer = self.broker.request(request);
        Box::pin(async move {
            let _asked = asked;
            answer.await
        })
    }
}

/// Removes an approval from its broker when its call's future ends or is dropped.
struct Registration {
    inner: Arc<BrokerInner>,
    approval_id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.inner.state().outstanding.remove(&self.approval_id);
    }
}

impl Approver for ApprovalBroker {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (tx, rx) = oneshot::channel();
        let approval_id = request.approval_id.clone();
        {
            let mut state = self.inner.state();
            let seq = state.next_seq;
            state.next_seq += 1;
            state.outstanding.insert(
                approval_id.clone(),
                Outstanding {
                    seq,
                    request: request.clone(),
                    answer: tx,
                },
            );
        }
        let registration = Registration {
            inner: self.inner.clone(),
            approval_id,
        };
        let delegate = self.inner.delegate.as_ref().map(|d| d.request(request));
        let ttl = expiry(self.inner.ttl);
        Box::pin(async move {
            let _registration = registration;
            let by_id = async move {
                rx.await
                    .unwrap_or_else(|_| ApprovalDecision::deny_because(APPROVAL_CANCELLED))
            };
            let answered = async move {
                match delegate {
                    Some(delegate) => tokio::select! {
                        decision = delegate => decision,
                        decision = by_id => decision,
                    },
                    None => by_id.await,
                }
            };
            tokio::time::timeout(ttl, answered)
                .await
                .unwrap_or_else(|_| ApprovalDecision::deny_because(APPROVAL_EXPIRED))
        })
    }
}

/// How long an approval waits for an answer under a broker TTL of `ttl`: a little less than
/// `ttl` (a tenth of it, at most 50 ms). A nested call's own timeout is the same TTL
/// (`snapshotTtlSeconds`) and started first, so with equal deadlines which one fired first
/// depended on the timer's millisecond ticks; expiring the approval first makes a call whose
/// approval nobody answered fail with `approval expired`, the message that says why.
fn expiry(ttl: Duration) -> Duration {
    ttl - (ttl / 10).min(Duration::from_millis(50))
}

pub(crate) fn new_approval_id() -> String {
    format!("approval_{}", uuid::Uuid::new_v4())
}

/// Asks `approver` (none: denied).
pub(crate) async fn ask(
    approver: Option<&dyn Approver>,
    request: ApprovalRequest,
) -> ApprovalDecision {
    match approver {
        Some(approver) => approver.request(request).await,
        None => ApprovalDecision::deny(),
    }
}

/// The reason of a denial (`denied` when it gave none or a blank one); `None` for an allow.
pub(crate) fn denial_reason(decision: &ApprovalDecision) -> Option<String> {
    if decision.is_allowed() {
        return None;
    }
    Some(
        decision
            .reason
            .clone()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_DENIAL_REASON.to_string()),
    )
}

/// Asks `approver` (none: denied); `Err(reason)` on a denial.
pub(crate) async fn approve(
    approver: Option<&dyn Approver>,
    request: ApprovalRequest,
) -> Result<(), String> {
    match denial_reason(&ask(approver, request).await) {
        None => Ok(()),
        Some(reason) => Err(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_expires_a_tenth_of_its_ttl_early_at_most_50_ms() {
        assert_eq!(expiry(Duration::from_secs(1)), Duration::from_millis(950));
        assert_eq!(
            expiry(Duration::from_secs(3600)),
            Duration::from_millis(3_599_950)
        );
        assert_eq!(
            expiry(Duration::from_millis(100)),
            Duration::from_millis(90)
        );
        assert_eq!(expiry(Duration::ZERO), Duration::ZERO);
    }
}
