//! `--state memory`: records in this process's memory (the default). The facade writes no
//! records to it ([`RunStore::is_durable`] is `false`: its live table already holds the runs); it
//! is the reference the other backends are tested against.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codemode_bridge::RunScope;

use super::{admit, lease_token, owner_key, Claim, RunStore, StoreFuture};
use crate::error::{RunStoreError, StoreError};
use crate::record::{now_ms, RecordMeta, StoredRun};

/// A lease: its token and when it ends (ms since the epoch).
#[derive(Debug, Clone)]
struct Lease {
    token: String,
    until_ms: u64,
}

#[derive(Debug)]
struct Entry {
    run: StoredRun,
    lease: Option<Lease>,
}

/// Records in a map behind one mutex.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    entries: Mutex<HashMap<String, Entry>>,
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn put_now(&self, run: StoredRun, cap: usize) -> Result<(), RunStoreError> {
        let now = now_ms();
        let mut entries = self.lock();
        entries.retain(|_, e| !e.run.meta.expired(now));
        let id = run.meta.run_id.clone();
        if !entries.contains_key(&id) {
            let key = owner_key(&run.meta.owner);
            let owned = entries
                .values()
                .filter(|e| owner_key(&e.run.meta.owner) == key)
                .count();
            if owned >= cap {
                return Err(StoreError::TooManySuspended.into());
            }
        }
        entries.insert(id, Entry { run, lease: None });
        Ok(())
    }

    fn claim_now(
        &self,
        run_id: &str,
        caller: &RunScope,
        lease: Duration,
    ) -> Result<Claim, RunStoreError> {
        let now = now_ms();
        let token = lease_token("memory")?;
        let mut entries = self.lock();
        let Some(entry) = entries.get_mut(run_id) else {
            return Err(StoreError::Unavailable.into());
        };
        let run = entry.run.clone();
        if let Err(refused) = admit(&run.meta, caller, now) {
            if refused == StoreError::Unavailable {
                entries.remove(run_id);
            }
            return Err(refused.into());
        }
        if entry.lease.as_ref().is_some_and(|l| l.until_ms > now) {
            return Err(StoreError::AlreadyResuming.into());
        }
        let until_ms = now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        entry.lease = Some(Lease {
            token: token.clone(),
            until_ms,
        });
        Ok(Claim { run, lease: token })
    }
}

impl RunStore for MemoryRunStore {
    fn describe(&self) -> String {
        "memory".to_string()
    }

    fn is_durable(&self) -> bool {
        false
    }

    fn put(&self, run: StoredRun, cap: usize) -> StoreFuture<'_, ()> {
        let result = self.put_now(run, cap);
        Box::pin(async move { result })
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        caller: &'a RunScope,
        lease: Duration,
    ) -> StoreFuture<'a, Claim> {
        let result = self.claim_now(run_id, caller, lease);
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, ()> {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(&claim.run.meta.run_id) {
            if entry.lease.as_ref().is_some_and(|l| l.token == claim.lease) {
                entry.lease = None;
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, bool> {
        let found = self.lock().remove(run_id).is_some();
        Box::pin(async move { Ok(found) })
    }

    fn list(&self) -> StoreFuture<'_, Vec<RecordMeta>> {
        let now = now_ms();
        let mut metas: Vec<RecordMeta> = self
            .lock()
            .values()
            .filter(|e| !e.run.meta.expired(now))
            .map(|e| e.run.meta.clone())
            .collect();
        metas.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Box::pin(async move { Ok(metas) })
    }

    fn purge_expired(&self) -> StoreFuture<'_, usize> {
        let now = now_ms();
        let mut entries = self.lock();
        let before = entries.len();
        entries.retain(|_, e| !e.run.meta.expired(now));
        let purged = before - entries.len();
        Box::pin(async move { Ok(purged) })
    }

    fn purge_all(&self) -> StoreFuture<'_, usize> {
        let purged = std::mem::take(&mut *self.lock()).len();
        Box::pin(async move { Ok(purged) })
    }
}
