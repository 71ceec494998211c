//! Approval answers relayed between processes that share a durable run store
//! (docs/snapshot-store.md, "Approval answers").
//!
//! An approval is held by the process whose run asked it (its broker waits for the answer).
//! Behind a load balancer the answer may reach another process: an MRTR retry or a
//! `tasks/update` that lands elsewhere. That process hands the answer to
//! [`CodeMode::relay_approval`], which seals it (bound to the approval id, unique and random)
//! and puts it in the store, notifying the approval id's subscribers; the
//! [`CodeMode::relayed_approver`] each holding process uses as its broker's delegate takes it
//! there (on the notification, or by polling every [`ANSWER_POLL`]) and decides the approval. When the holding process died meanwhile, the
//! process that restores the run asks the approval again under the same `approvalId`, and its
//! relayed approver finds the answer waiting: nothing is asked twice of the person.

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::RunScope;
use codemode_snapshot::record::now_ms;
use codemode_snapshot::scope::expiry_ms_after;
use codemode_snapshot::seal::Binding;
use serde::{Deserialize, Serialize};

use super::durable::Durable;
use super::CodeMode;
use crate::pipeline::{ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver};

/// How often a relayed approver looks for its answer without a change notification: the bound
/// on a notification lost with a dropped Redis connection.
pub(super) const ANSWER_POLL: Duration = Duration::from_secs(1);

/// The binding's guest field for an answer: no guest hash (64 hex digits) equals it, so an
/// answer never opens as a run record, nor a run record as an answer.
const ANSWER_DOMAIN: &str = "codemode-approval-answer-v1";

/// A relayed answer as sealed: the decision and until when it may be taken.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RelayedAnswer {
    decision: ApprovalDecision,
    expires_at_ms: u64,
}

/// What an answer is bound to: the approval id (unique: `approval_<uuid>`) and the answer
/// domain. Not the run: an approval asked in a run's first leg is asked before the run has an id.
fn binding<'a>(approval_id: &'a str, nobody: &'a RunScope) -> Binding<'a> {
    Binding {
        run_id: approval_id,
        owner: nobody,
        guest_sha256: ANSWER_DOMAIN,
        catalog_fingerprint: "",
        expires_at_ms: 0,
    }
}

impl Durable {
    /// `decision` sealed as the answer to `approval_id`, takeable until `expires_at_ms`.
    fn seal_answer(
        &self,
        approval_id: &str,
        decision: &ApprovalDecision,
        expires_at_ms: u64,
    ) -> Result<Vec<u8>, String> {
        let plain = serde_json::to_vec(&RelayedAnswer {
            decision: decision.clone(),
            expires_at_ms,
        })
        .map_err(|e| e.to_string())?;
        let nobody = RunScope::default();
        self.keys
            .seal(&binding(approval_id, &nobody), &plain)
            .map_err(|e| e.to_string())
    }

    /// The decision a sealed answer holds, if it opens for `approval_id` and has not expired.
    fn open_answer(&self, approval_id: &str, sealed: &[u8]) -> Result<ApprovalDecision, String> {
        let nobody = RunScope::default();
        let plain = self
            .keys
            .open(&binding(approval_id, &nobody), sealed)
            .map_err(|e| e.to_string())?;
        let answer: RelayedAnswer = serde_json::from_slice(&plain).map_err(|e| e.to_string())?;
        if answer.expires_at_ms <= now_ms() {
            return Err(format!("the answer to {approval_id} expired"));
        }
        Ok(answer.decision)
    }
}

impl CodeMode {
    /// Relays `decision`, the answer to the approval `approval_id`, to whichever process holds
    /// that approval or restores its run and asks it again (see the module docs), through the
    /// durable run store: sealed, kept for `ttl` (use the approval's TTL, `snapshotTtlSeconds`)
    /// or until taken. `false` without a durable store, or when sealing or the store failed
    /// (logged): the approval then stays pending until its TTL denies it. Relaying an answer to
    /// an approval that was decided meanwhile does nothing (the answer expires unread).
    pub async fn relay_approval(
        &self,
        approval_id: &str,
        decision: &ApprovalDecision,
        ttl: Duration,
    ) -> bool {
        let Some(durable) = &self.durable else {
            return false;
        };
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let relayed = async {
            let expires_at_ms = expiry_ms_after(now_ms(), ttl_ms).map_err(|e| e.to_string())?;
            let sealed = durable.seal_answer(approval_id, decision, expires_at_ms)?;
            durable
                .store
                .put_answer(approval_id, sealed, expires_at_ms)
                .await
                .map_err(|e| e.to_string())
        };
        match relayed.await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(approval_id, error = %e, "could not relay an approval answer");
                false
            }
        }
    }

    /// The approver that decides an approval with an answer relayed by
    /// [`CodeMode::relay_approval`] in any process sharing the durable run store (`None`
    /// without one). Give it to an [`crate::ApprovalBroker`] as its delegate
    /// ([`crate::ApprovalBroker::with_delegate`]): the first answer, local or relayed, wins.
    /// A relayed answer that does not open (forged, tampered with, expired) is dropped and
    /// logged; the future runs until an answer comes (the broker's TTL ends it).
    pub fn relayed_approver(&self) -> Option<Arc<dyn Approver>> {
        let durable = self.durable.clone()?;
        Some(Arc::new(RelayedApprover { durable }))
    }
}

/// See [`CodeMode::relayed_approver`].
struct RelayedApprover {
    durable: Arc<Durable>,
}

impl Approver for RelayedApprover {
    fn request(&self, request: ApprovalRequest) -> ApprovalFuture {
        let durable = self.durable.clone();
        Box::pin(async move {
            let approval_id = request.approval_id;
            let mut changes = None;
            loop {
                if changes.is_none() {
                    // Subscribed before looking, so an answer relayed in between is not missed.
                    changes = durable.store.changes(&approval_id).await.ok();
                }
                match durable.store.take_answer(&approval_id).await {
                    Ok(Some(sealed)) => match durable.open_answer(&approval_id, &sealed) {
                        Ok(decision) => return decision,
                        Err(e) => {
                            tracing::warn!(%approval_id, error = %e, "relayed approval answer refused");
                        }
                    },
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(%approval_id, error = %e, "could not look for a relayed approval answer");
                    }
                }
                let poll = tokio::time::sleep(ANSWER_POLL);
                match changes.as_mut() {
                    Some(changes) => tokio::select! {
                        () = changes.next() => {}
                        () = poll => {}
                    },
                    None => poll.await,
                }
            }
        })
    }
}
