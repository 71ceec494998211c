//! The ledger of one run's tool calls in flight ([`CallLedger`]; docs/snapshot-store.md, "What
//! is portable"): for each bridge request that reached a catalog tool and has not settled, the
//! nested call's ids, when it started and whether it still waits for an approval.
//!
//! It travels in the run's sealed record, so the process that restores a run whose owner died
//! knows, per call in flight there:
//!
//! - **waiting for an approval** (the tool never ran): the call is dispatched again under the
//!   same nested `toolCallId`, and its approval is asked again under the same `approvalId`
//!   (the pipeline takes it from here), so the approval stays answerable;
//! - **running** (the tool may have had effects): the call is lost, and the restoring process's
//!   trajectory records its `nested_tool_result` (status `error`, the lost-call message) under
//!   the `toolCallId` the dead process's `nested_tool_call` used.
//!
//! Each change of stage (approval asked, approval decided) pokes the run's settlement signal, so
//! the owner task of a parked run rewrites its record: a call whose approval was granted is
//! recorded as running before (at worst one store write after) the tool starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use codemode_telemetry::NestedMethod;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// One call in flight, as written in a portable run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LedgerCall {
    /// The nested call's id (`tool_search_code:<parent>:<tool>:<seq>`), as on its
    /// `nested_tool_call`.
    pub(crate) tool_call_id: String,
    /// The catalog id.
    pub(crate) tool_id: String,
    /// The registered tool name.
    pub(crate) tool_name: String,
    /// The trajectory method.
    pub(crate) method: NestedMethod,
    /// When the call was first dispatched, in ms since the Unix epoch (the `durationMs` of a
    /// lost call is measured from it).
    pub(crate) started_at_ms: u64,
    /// The approval it waits for; `None` once decided (or when none was needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) awaiting_approval: Option<String>,
}

/// The calls in flight of one run, by bridge id (see the module docs). Shared by the run's
/// dispatcher (which starts and ends entries) and its pipeline (which marks approvals).
#[derive(Debug)]
pub(crate) struct CallLedger {
    calls: Mutex<HashMap<String, LedgerCall>>,
    /// The run's settlement signal (the owner task rewrites the record on it).
    settled: Arc<Notify>,
}

impl CallLedger {
    /// An empty ledger poking `settled` on each change of stage.
    pub(crate) fn new(settled: Arc<Notify>) -> Self {
        CallLedger {
            calls: Mutex::new(HashMap::new()),
            settled,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, LedgerCall>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry of `bridge_id` when it is already there (a call restored from a record and
    /// dispatched again), else the one `fresh` makes, inserted.
    pub(crate) fn begin(&self, bridge_id: &str, fresh: impl FnOnce() -> LedgerCall) -> LedgerCall {
        self.lock()
            .entry(bridge_id.to_string())
            .or_insert_with(fresh)
            .clone()
    }

    /// The call of `bridge_id` settled: it leaves the ledger.
    pub(crate) fn end(&self, bridge_id: &str) {
        self.lock().remove(bridge_id);
    }

    /// The approval id to ask for the call of `bridge_id`: the one it already waited for when it
    /// was restored from a record, else `fresh()`. Marks the call as waiting for it.
    pub(crate) fn awaiting(&self, bridge_id: &str, fresh: impl FnOnce() -> String) -> String {
        let id = {
            let mut calls = self.lock();
            match calls.get_mut(bridge_id) {
                Some(call) => call.awaiting_approval.get_or_insert_with(fresh).to_string(),
                None => fresh(),
            }
        };
        self.settled.notify_one();
        id
    }

    /// The approval of the call of `bridge_id` was decided: from now on the tool may run.
    pub(crate) fn decided(&self, bridge_id: &str) {
        if let Some(call) = self.lock().get_mut(bridge_id) {
            call.awaiting_approval = None;
        }
        self.settled.notify_one();
    }

    /// `true` when the call of `bridge_id` waits for an approval (its tool never ran).
    pub(crate) fn awaits_approval(&self, bridge_id: &str) -> bool {
        self.lock()
            .get(bridge_id)
            .is_some_and(|c| c.awaiting_approval.is_some())
    }

    /// Every entry, for a portable run.
    pub(crate) fn entries(&self) -> HashMap<String, LedgerCall> {
        self.lock().clone()
    }

    /// Replaces the entries with those of a restored record.
    pub(crate) fn restore(&self, entries: HashMap<String, LedgerCall>) {
        *self.lock() = entries;
    }

    /// Takes the entry of `bridge_id` out (a lost call).
    pub(crate) fn take(&self, bridge_id: &str) -> Option<LedgerCall> {
        self.lock().remove(bridge_id)
    }
}
