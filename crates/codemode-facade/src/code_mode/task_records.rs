//! MCP task records shared between processes through the durable run store
//! (docs/snapshot-store.md, "Task records"; docs/mcp.md, "Runs as Tasks").
//!
//! `codemode serve` turns a Tasks client's parked run into a task its process drives. Behind a
//! load balancer the client's `tasks/get`, `tasks/update` and `tasks/cancel` reach any process,
//! so the driving process keeps the task's view (its JSON, opaque here) in the store as a task
//! record, and holds a driver lease on it while it drives. [`SharedTasks`] is that record and
//! that lease: sealed with the store's keys, bound to the task id and the caller's scope (a
//! record of one principal never opens for another), announced as a change of the task's key.

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::RunScope;
use codemode_snapshot::backend::{Changes, OWNER_LEASE_RENEW, OWNER_LEASE_TTL};
use codemode_snapshot::record::now_ms;
use codemode_snapshot::seal::Binding;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::durable::Durable;
use super::CodeMode;

/// The binding's guest field for a task record: no guest hash (64 hex digits) and no other
/// domain equals it, so a task record never opens as a run record or an approval answer.
const TASK_DOMAIN: &str = "codemode-task-record-v1";

/// A task record as sealed: the caller's JSON and until when it holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SealedTask {
    record: Value,
    expires_at_ms: u64,
}

/// The task records and driver leases of a durable run store ([`CodeMode::shared_tasks`]).
/// Cheap to clone. Every method logs what failed and answers as if there were no record or
/// lease: a store that is down makes a task unknown elsewhere, never a panic.
#[derive(Clone)]
pub struct SharedTasks {
    durable: Arc<Durable>,
}

impl std::fmt::Debug for SharedTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTasks")
            .field("store", &self.durable.store)
            .finish_non_exhaustive()
    }
}

/// The store key of task `task_id`'s record and lease: `task_<id>`, which no run id (`cm_…`)
/// or approval id (`approval_…`) equals. `None` for an id too long or with characters a store
/// key may not hold (such a task is unknown everywhere).
fn key(task_id: &str) -> Option<String> {
    let key = format!("task_{task_id}");
    codemode_snapshot::record::valid_run_id(&key).then_some(key)
}

impl CodeMode {
    /// The task records of this front's durable run store (`None` without one: tasks then live
    /// in their process only).
    pub fn shared_tasks(&self) -> Option<SharedTasks> {
        Some(SharedTasks {
            durable: self.durable.clone()?,
        })
    }
}

impl SharedTasks {
    /// How often the driving process renews its driver lease ([`SharedTasks::renew_driver`]):
    /// 1.25 s, well inside the lease's 5 s.
    pub const RENEW: Duration = OWNER_LEASE_RENEW;

    fn binding<'a>(key: &'a str, scope: &'a RunScope) -> Binding<'a> {
        Binding {
            run_id: key,
            owner: scope,
            guest_sha256: TASK_DOMAIN,
            catalog_fingerprint: "",
            expires_at_ms: 0,
        }
    }

    /// Writes task `task_id`'s `record` (any JSON) for `scope`, kept `ttl` from now; `ended`
    /// once the task reached a terminal status. `Some(true)` when written, `Some(false)` when
    /// the stored record has ended and this one has not (see `RunStore::put_task`: a
    /// cancellation made elsewhere stands), `None` when the id cannot be a key or sealing or the
    /// store failed (logged).
    pub async fn put(
        &self,
        task_id: &str,
        scope: &RunScope,
        record: Value,
        ttl: Duration,
        ended: bool,
    ) -> Option<bool> {
        let key = key(task_id)?;
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let expires_at_ms = now_ms().saturating_add(ttl_ms);
        let plain = serde_json::to_vec(&SealedTask {
            record,
            expires_at_ms,
        })
        .ok()?;
        let sealed = match self.durable.keys.seal(&Self::binding(&key, scope), &plain) {
            Ok(sealed) => sealed,
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not seal a task record");
                return None;
            }
        };
        match self
            .durable
            .store
            .put_task(&key, sealed, expires_at_ms, ended)
            .await
        {
            Ok(written) => Some(written),
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not write a task record");
                None
            }
        }
    }

    /// Task `task_id`'s record as `scope` may see it: `None` when there is none, it expired, it
    /// is another scope's, or it does not open (tampered with, another key: logged).
    pub async fn get(&self, task_id: &str, scope: &RunScope) -> Option<Value> {
        let key = key(task_id)?;
        let sealed = match self.durable.store.get_task(&key).await {
            Ok(sealed) => sealed?,
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not read a task record");
                return None;
            }
        };
        // Another scope's record fails to open like a tampered one: both are unknown here.
        let plain = match self.durable.keys.open(&Self::binding(&key, scope), &sealed) {
            Ok(plain) => plain,
            Err(e) => {
                tracing::debug!(task_id, error = %e, "task record refused");
                return None;
            }
        };
        let task: SealedTask = serde_json::from_slice(&plain).ok()?;
        (task.expires_at_ms > now_ms()).then_some(task.record)
    }

    /// Takes task `task_id`'s driver lease for this process (an owner lease on its key, for
    /// `OWNER_LEASE_TTL`, 5 s): `true` when this process drives the task now, because nobody
    /// held the lease or its holder stopped renewing it (died). Renew it with
    /// [`SharedTasks::renew_driver`] every `OWNER_LEASE_RENEW` (1.25 s).
    pub async fn take_driver(&self, task_id: &str) -> bool {
        let Some(key) = key(task_id) else {
            return false;
        };
        self.durable
            .store
            .take_owner_lease(&key, OWNER_LEASE_TTL)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(task_id, error = %e, "could not take a task's driver lease");
                false
            })
    }

    /// Renews this process's driver lease on task `task_id`; `false` when it no longer holds it
    /// (or the store failed: logged).
    pub async fn renew_driver(&self, task_id: &str) -> bool {
        let Some(key) = key(task_id) else {
            return false;
        };
        self.durable
            .store
            .renew_owner_lease(&key, OWNER_LEASE_TTL)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(task_id, error = %e, "could not renew a task's driver lease");
                false
            })
    }

    /// Ends this process's driver lease on task `task_id` (the task ended).
    pub async fn drop_driver(&self, task_id: &str) {
        if let Some(key) = key(task_id) {
            if let Err(e) = self.durable.store.drop_owner_lease(&key).await {
                tracing::warn!(task_id, error = %e, "could not drop a task's driver lease");
            }
        }
    }

    /// A subscription to task `task_id`'s record changes (any process's writes); `None` when
    /// the store cannot subscribe (logged; callers poll instead).
    pub async fn changes(&self, task_id: &str) -> Option<Changes> {
        let key = key(task_id)?;
        match self.durable.store.changes(&key).await {
            Ok(changes) => Some(changes),
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not subscribe to a task's changes");
                None
            }
        }
    }
}
