//! `--state memory`: records in this process's memory (the default). The facade writes no
//! records to it ([`RunStore::is_durable`] is `false`: its live table already holds the runs); it
//! is the reference the other backends are tested against.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codemode_bridge::RunScope;

use super::changes::{in_process_ownership, InProcess};
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
    /// A finished run's result ([`RunStore::put_finished`]), not a parked run.
    finished: bool,
}

/// Records in a map behind one mutex; owner leases and change notifications in the process.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    entries: Mutex<HashMap<String, Entry>>,
    local: InProcess,
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `run` (a finished result when `finished`, never counted against `cap`).
    fn put_now(&self, run: StoredRun, cap: usize, finished: bool) -> Result<(), RunStoreError> {
        let now = now_ms();
        let id = run.meta.run_id.clone();
        {
            let mut entries = self.lock();
            entries.retain(|_, e| !e.run.meta.expired(now));
            if !finished && !entries.contains_key(&id) {
                let key = owner_key(&run.meta.owner);
                let owned = entries
                    .values()
                    .filter(|e| !e.finished && owner_key(&e.run.meta.owner) == key)
                    .count();
                if owned >= cap {
                    return Err(StoreError::TooManySuspended.into());
                }
            }
            let entry = Entry {
                run,
                lease: None,
                finished,
            };
            entries.insert(id.clone(), entry);
        }
        self.local.changed(&id);
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
        if entry.finished {
            return Ok(Claim { run, lease: None });
        }
        if entry.lease.as_ref().is_some_and(|l| l.until_ms > now) {
            return Err(StoreError::AlreadyResuming.into());
        }
        let until_ms = now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        entry.lease = Some(Lease {
            token: token.clone(),
            until_ms,
        });
        Ok(Claim {
            run,
            lease: Some(token),
        })
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
        let result = self.put_now(run, cap, false);
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
        let id = &claim.run.meta.run_id;
        let released = match self.lock().get_mut(id) {
            Some(entry)
                if claim.lease.is_some()
                    && entry.lease.as_ref().map(|l| &l.token) == claim.lease.as_ref() =>
            {
                entry.lease = None;
                true
            }
            _ => false,
        };
        if released {
            self.local.changed(id);
        }
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, bool> {
        let found = self.lock().remove(run_id).is_some();
        self.local.removed(run_id);
        Box::pin(async move { Ok(found) })
    }

    fn list(&self) -> StoreFuture<'_, Vec<RecordMeta>> {
        let now = now_ms();
        let mut metas: Vec<RecordMeta> = self
            .lock()
            .values()
            .filter(|e| !e.finished && !e.run.meta.expired(now))
            .map(|e| e.run.meta.clone())
            .collect();
        metas.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Box::pin(async move { Ok(metas) })
    }

    fn purge_expired(&self) -> StoreFuture<'_, usize> {
        let now = now_ms();
        let purged = purge(&mut self.lock(), |e| e.run.meta.expired(now));
        Box::pin(async move { Ok(purged) })
    }

    fn purge_all(&self) -> StoreFuture<'_, usize> {
        let purged = purge(&mut self.lock(), |_| true);
        Box::pin(async move { Ok(purged) })
    }

    fn put_finished(&self, run: StoredRun) -> StoreFuture<'_, ()> {
        let result = self.put_now(run, usize::MAX, true);
        Box::pin(async move { result })
    }

    in_process_ownership!(local);
}

/// Removes the entries `gone` selects; returns how many of them were parked runs.
fn purge(entries: &mut HashMap<String, Entry>, gone: impl Fn(&Entry) -> bool) -> usize {
    let mut purged = 0;
    entries.retain(|_, e| {
        let remove = gone(e);
        purged += usize::from(remove && !e.finished);
        !remove
    });
    purged
}
