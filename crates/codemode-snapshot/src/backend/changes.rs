//! Change notifications and owner leases shared by the backends (docs/snapshot-store.md,
//! "Owner leases and changes").
//!
//! [`Changes`] is what [`super::RunStore::changes`] hands a `wait` that waits on a run another
//! process owns: it resolves on the next change of that run (a record written or removed, a
//! claim released, an owner lease dropped). Every backend fans its changes out to its
//! subscribers through one `Notifier` (a `tokio` broadcast channel); `redis://` feeds it from
//! Redis pub/sub, so changes made by other processes arrive too. `InProcess` keeps the owner
//! leases, relayed approval answers and task records of the single-process backends (`memory`,
//! `dir:`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;

use super::StoreFuture;
use crate::error::StoreError;
use crate::record::{now_ms, valid_run_id};

/// How many changes a subscriber may fall behind before it is told "something changed" at once
/// (a lagging subscriber re-reads the store, so nothing is lost).
const BACKLOG: usize = 256;

/// A subscription to one run's changes ([`super::RunStore::changes`]).
#[derive(Debug)]
pub struct Changes {
    run_id: String,
    feed: broadcast::Receiver<Arc<str>>,
}

impl Changes {
    /// Resolves on the next change of the run: its record written or removed, a claim on it
    /// released, its owner lease dropped. Also resolves when the subscription fell behind (the
    /// caller re-reads the store either way). Never resolves once the feed is closed (the store
    /// was dropped); callers race it against their own deadline.
    pub async fn next(&mut self) {
        loop {
            match self.feed.recv().await {
                Ok(id) if *id == *self.run_id => return,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
            }
        }
    }
}

/// The fan-out of one store's changes to its subscribers.
#[derive(Debug, Clone)]
pub(crate) struct Notifier(broadcast::Sender<Arc<str>>);

impl Default for Notifier {
    fn default() -> Self {
        Notifier(broadcast::channel(BACKLOG).0)
    }
}

impl Notifier {
    /// Tells every subscriber of `run_id` that it changed (nobody listening is fine).
    pub(crate) fn send(&self, run_id: &str) {
        let _ = self.0.send(Arc::from(run_id));
    }

    /// A subscription to `run_id`'s changes from now on.
    pub(crate) fn subscribe(&self, run_id: &str) -> Changes {
        Changes {
            run_id: run_id.to_string(),
            feed: self.0.subscribe(),
        }
    }
}

/// Owner leases and change notifications of a single-process backend (`memory`, `dir:`): one
/// store is one process, so every owner lease is this process's own. Owner leases map run id →
/// end (ms since the epoch).
#[derive(Debug, Default)]
pub(crate) struct InProcess {
    owners: Mutex<HashMap<String, u64>>,
    /// Relayed approval answers: approval id → (sealed answer, expiry ms).
    answers: Mutex<HashMap<String, (Vec<u8>, u64)>>,
    /// Task records by task key.
    tasks: Mutex<HashMap<String, TaskRecord>>,
    notifier: Notifier,
}

/// One task record of [`InProcess`]: sealed, until when (ms since the epoch), and whether the
/// task ended.
#[derive(Debug)]
struct TaskRecord {
    sealed: Vec<u8>,
    until_ms: u64,
    ended: bool,
}

impl InProcess {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes or renews the owner lease on `run_id` for `ttl`; with `renew_only`, only a lease
    /// that is still held. `true` when held afterwards.
    fn hold(&self, run_id: &str, ttl: Duration, renew_only: bool) -> StoreFuture<'static, bool> {
        let now = now_ms();
        let mut owners = self.lock();
        let held = owners.get(run_id).is_some_and(|until| *until > now);
        let result = if renew_only && !held {
            owners.remove(run_id);
            false
        } else {
            let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            owners.insert(run_id.to_string(), now.saturating_add(ttl_ms));
            true
        };
        Box::pin(async move { Ok(result) })
    }

    /// [`super::RunStore::take_owner_lease`].
    pub(crate) fn take(&self, run_id: &str, ttl: Duration) -> StoreFuture<'static, bool> {
        self.hold(run_id, ttl, false)
    }

    /// [`super::RunStore::renew_owner_lease`].
    pub(crate) fn renew(&self, run_id: &str, ttl: Duration) -> StoreFuture<'static, bool> {
        self.hold(run_id, ttl, true)
    }

    /// [`super::RunStore::drop_owner_lease`]: a change when a lease was held.
    pub(crate) fn drop_owner(&self, run_id: &str) -> StoreFuture<'static, ()> {
        if self.lock().remove(run_id).is_some() {
            self.notifier.send(run_id);
        }
        Box::pin(async { Ok(()) })
    }

    /// [`super::RunStore::changes`].
    pub(crate) fn changes(&self, run_id: &str) -> StoreFuture<'static, Changes> {
        let changes = self.notifier.subscribe(run_id);
        Box::pin(async move { Ok(changes) })
    }

    /// [`super::RunStore::put_answer`]: keeps `answer` until `expires_at_ms` and tells
    /// `approval_id`'s subscribers.
    pub(crate) fn put_answer(
        &self,
        approval_id: &str,
        answer: Vec<u8>,
        expires_at_ms: u64,
    ) -> StoreFuture<'static, ()> {
        if !valid_run_id(approval_id) {
            return Box::pin(async { Err(StoreError::Unavailable.into()) });
        }
        let now = now_ms();
        {
            let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
            answers.retain(|_, (_, until)| *until > now);
            answers.insert(approval_id.to_string(), (answer, expires_at_ms));
        }
        self.notifier.send(approval_id);
        Box::pin(async { Ok(()) })
    }

    /// [`super::RunStore::take_answer`].
    pub(crate) fn take_answer(&self, approval_id: &str) -> StoreFuture<'static, Option<Vec<u8>>> {
        let now = now_ms();
        let taken = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(approval_id)
            .filter(|(_, until)| *until > now)
            .map(|(answer, _)| answer);
        Box::pin(async move { Ok(taken) })
    }

    /// [`super::RunStore::put_task`]: keeps `record` until `expires_at_ms` unless the stored
    /// one ended and this one has not, and tells `task_key`'s subscribers.
    pub(crate) fn put_task(
        &self,
        task_key: &str,
        record: Vec<u8>,
        expires_at_ms: u64,
        ended: bool,
    ) -> StoreFuture<'static, bool> {
        if !valid_run_id(task_key) {
            return Box::pin(async { Err(StoreError::Unavailable.into()) });
        }
        let now = now_ms();
        let written = {
            let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            tasks.retain(|_, t| t.until_ms > now);
            if !ended && tasks.get(task_key).is_some_and(|t| t.ended) {
                false
            } else {
                let task = TaskRecord {
                    sealed: record,
                    until_ms: expires_at_ms,
                    ended,
                };
                tasks.insert(task_key.to_string(), task);
                true
            }
        };
        if written {
            self.notifier.send(task_key);
        }
        Box::pin(async move { Ok(written) })
    }

    /// [`super::RunStore::get_task`].
    pub(crate) fn get_task(&self, task_key: &str) -> StoreFuture<'static, Option<Vec<u8>>> {
        let now = now_ms();
        let found = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task_key)
            .filter(|t| t.until_ms > now)
            .map(|t| t.sealed.clone());
        Box::pin(async move { Ok(found) })
    }

    /// `run_id`'s record was removed: its owner lease ends, and that is a change.
    pub(crate) fn removed(&self, run_id: &str) {
        self.lock().remove(run_id);
        self.notifier.send(run_id);
    }

    /// `run_id`'s record was written or its claim released: a change.
    pub(crate) fn changed(&self, run_id: &str) {
        self.notifier.send(run_id);
    }
}

/// The owner-lease and change methods of [`super::RunStore`] for a single-process backend:
/// each one delegates to the backend's [`InProcess`] field named `$local`.
macro_rules! in_process_ownership {
    ($local:ident) => {
        in_process_ownership!(@lease $local, take_owner_lease, take);
        in_process_ownership!(@lease $local, renew_owner_lease, renew);

        fn drop_owner_lease<'a>(&'a self, run_id: &'a str) -> super::StoreFuture<'a, ()> {
            self.$local.drop_owner(run_id)
        }

        fn changes<'a>(
            &'a self,
            run_id: &'a str,
        ) -> super::StoreFuture<'a, super::changes::Changes> {
            self.$local.changes(run_id)
        }

        fn put_answer<'a>(
            &'a self,
            approval_id: &'a str,
            answer: Vec<u8>,
            expires_at_ms: u64,
        ) -> super::StoreFuture<'a, ()> {
            self.$local.put_answer(approval_id, answer, expires_at_ms)
        }

        fn take_answer<'a>(
            &'a self,
            approval_id: &'a str,
        ) -> super::StoreFuture<'a, Option<Vec<u8>>> {
            self.$local.take_answer(approval_id)
        }

        fn put_task<'a>(
            &'a self,
            task_key: &'a str,
            record: Vec<u8>,
            expires_at_ms: u64,
            ended: bool,
        ) -> super::StoreFuture<'a, bool> {
            self.$local.put_task(task_key, record, expires_at_ms, ended)
        }

        fn get_task<'a>(
            &'a self,
            task_key: &'a str,
        ) -> super::StoreFuture<'a, Option<Vec<u8>>> {
            self.$local.get_task(task_key)
        }
    };
    (@lease $local:ident, $method:ident, $op:ident) => {
        fn $method<'a>(
            &'a self,
            run_id: &'a str,
            ttl: std::time::Duration,
        ) -> super::StoreFuture<'a, bool> {
            self.$local.$op(run_id, ttl)
        }
    };
}
pub(crate) use in_process_ownership;
