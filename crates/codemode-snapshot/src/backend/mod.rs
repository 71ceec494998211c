//! Durable run stores: the [`RunStore`] trait and its backends, chosen by one `--state URL`
//! ([`StateUrl`]): `memory` ([`memory::MemoryRunStore`], the default: nothing leaves the
//! process), `dir:PATH` ([`dir::DirRunStore`]: one process survives its own restart) and
//! `redis://HOST:PORT[/DB]` ([`redis::RedisRunStore`]: any number of processes share runs).
//!
//! Every backend applies the in-process store's rules with the same texts
//! (docs/snapshot-store.md, "Backends"): an unknown or expired run is
//! [`StoreError::Unavailable`] (an expired record is removed when found), then the scope checks of
//! [`crate::admits`] in order, then [`StoreError::AlreadyResuming`] while another `wait` holds the
//! run's lease; parking a new run past the cap of its owner is
//! [`StoreError::TooManySuspended`]. Bodies are sealed by the caller ([`crate::seal`]); a backend
//! never looks inside them.
//!
//! Besides parked runs a store keeps **finished records** ([`RunStore::put_finished`]: a run's
//! sealed final result, until its expiry, for the `wait`s that were waiting on it), **owner
//! leases** (the process running a parked run's tool calls holds one while they are in flight:
//! [`RunStore::take_owner_lease`]; a `wait` in another process then gets
//! [`RunStoreError::OwnedElsewhere`] from [`RunStore::claim`]) and **change notifications**
//! ([`RunStore::changes`]); docs/snapshot-store.md, "Owner leases and changes". It also keeps
//! relayed approval answers ([`RunStore::put_answer`]) and MCP task records
//! ([`RunStore::put_task`]), opaque sealed bytes both.

pub mod changes;
pub mod dir;
pub mod memory;
pub mod redis;
pub mod url;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::RunScope;

use crate::error::{RunStoreError, StoreError};
use crate::record::{RecordMeta, StoredRun};

pub use changes::Changes;
pub use url::StateUrl;

/// How long an owner lease lasts without renewal: a process that dies with tool calls in flight
/// frees its runs this long after its last renewal, and a `wait` elsewhere then restores them
/// with those calls lost (docs/snapshot-store.md, "Owner leases and changes").
pub const OWNER_LEASE_TTL: Duration = Duration::from_secs(5);

/// How often the owner renews its leases: well before [`OWNER_LEASE_TTL`], so a renewal that
/// is late by a few seconds (a slow Redis, a busy machine) still lands in time.
pub const OWNER_LEASE_RENEW: Duration = Duration::from_millis(1_250);

/// The future every [`RunStore`] method returns (boxed so the trait is object-safe).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, RunStoreError>> + Send + 'a>>;

/// A run claimed for resuming by [`RunStore::claim`]: the record and the lease that keeps other
/// `wait`s out until [`RunStore::release`], [`RunStore::put`] (parked again),
/// [`RunStore::put_finished`] or [`RunStore::remove`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The stored run as it was when claimed.
    pub run: StoredRun,
    /// The lease's token (random, unique per claim); `None` for a finished record
    /// ([`RunStore::put_finished`]), which any number of `wait`s may read at once.
    pub lease: Option<String>,
}

impl Claim {
    /// `true` when the record is a finished run's result, not a parked run.
    pub fn is_finished(&self) -> bool {
        self.lease.is_none()
    }
}

/// A store of parked runs that may outlive the process (see the module docs for the rules).
///
/// All times are wall-clock milliseconds since the Unix epoch ([`crate::record::now_ms`]).
pub trait RunStore: Send + Sync + fmt::Debug {
    /// The backend as a `--state` URL (`memory`, `dir:/path`, `redis://host:port/db`).
    fn describe(&self) -> String;

    /// `false` for `memory`, whose records die with the process (the facade then keeps runs
    /// only in its live table and writes no records).
    fn is_durable(&self) -> bool;

    /// Stores `run`, replacing a record with the same run id (and dropping its lease). A run id
    /// not yet stored counts against `cap`: when its owner already has `cap` unexpired records,
    /// the answer is [`StoreError::TooManySuspended`] and nothing is stored.
    fn put(&self, run: StoredRun, cap: usize) -> StoreFuture<'_, ()>;

    /// Claims `run_id` for `caller` with a lease of `lease` (renewed by storing or releasing).
    /// Errors in the contract's order: [`StoreError::Unavailable`] (unknown, expired: the expired
    /// record is removed), [`StoreError::OtherAgentRun`] / [`StoreError::OtherSession`]
    /// ([`crate::admits`]), [`StoreError::AlreadyResuming`] (another unexpired lease). A
    /// finished record ([`RunStore::put_finished`]) passes the same expiry and scope checks and
    /// is returned without a lease. A parked run whose owner lease another process holds
    /// ([`RunStore::take_owner_lease`]) is refused with [`RunStoreError::OwnedElsewhere`],
    /// carrying the record, before any lease is taken.
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        caller: &'a RunScope,
        lease: Duration,
    ) -> StoreFuture<'a, Claim>;

    /// Ends `claim`'s lease without changing the record (`wait` answered `waiting`). A lease
    /// that is no longer this claim's (expired and taken by another) is left alone.
    fn release<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, ()>;

    /// Removes `run_id`'s record (parked or finished), its lease and its owner lease; `true`
    /// when a record was there.
    fn remove<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, bool>;

    /// The headers of every unexpired parked run, sorted by run id (finished records are not
    /// listed).
    fn list(&self) -> StoreFuture<'_, Vec<RecordMeta>>;

    /// Removes every expired record; returns how many parked runs it removed (finished records
    /// go too, uncounted).
    fn purge_expired(&self) -> StoreFuture<'_, usize>;

    /// Removes every record (expired or not); returns how many parked runs it removed (finished
    /// records go too, uncounted).
    fn purge_all(&self) -> StoreFuture<'_, usize>;

    /// Replaces `run_id`'s record with `run`, its sealed final result, kept until
    /// `run.meta.expires_at_ms` (a finished record: never counted against a cap, never listed,
    /// claimed without a lease), and ends the claim's lease.
    fn put_finished(&self, run: StoredRun) -> StoreFuture<'_, ()>;

    /// Takes (or renews) this process's owner lease on `run_id` for `ttl`: while it holds it,
    /// [`RunStore::claim`] in other processes answers [`RunStoreError::OwnedElsewhere`]. `false`
    /// when another process holds it. Single-process backends keep it in the process.
    fn take_owner_lease<'a>(&'a self, run_id: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Renews this process's owner lease on `run_id` for `ttl`; `false` when it no longer holds
    /// it (it expired, or [`RunStore::remove`] ended it), so the caller stops acting as owner.
    fn renew_owner_lease<'a>(&'a self, run_id: &'a str, ttl: Duration) -> StoreFuture<'a, bool>;

    /// Ends this process's owner lease on `run_id` (nothing when it holds none).
    fn drop_owner_lease<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, ()>;

    /// Subscribes to `run_id`'s changes from now on ([`Changes::next`]): [`RunStore::put`],
    /// [`RunStore::put_finished`], [`RunStore::remove`], [`RunStore::release`] and
    /// [`RunStore::drop_owner_lease`] of any process sharing the store.
    fn changes<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Changes>;

    /// Keeps `answer` (an approval's answer, sealed by the caller) to the approval
    /// `approval_id` until `expires_at_ms`, replacing an earlier answer to it, and notifies the
    /// subscribers of `approval_id` ([`RunStore::changes`] with the approval id: approval ids
    /// and run ids never collide): the process holding that approval, or the one that restores
    /// its run and asks it again, takes it ([`RunStore::take_answer`]; docs/snapshot-store.md,
    /// "Approval answers"). An id that is not a valid id is [`StoreError::Unavailable`].
    fn put_answer<'a>(
        &'a self,
        approval_id: &'a str,
        answer: Vec<u8>,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()>;

    /// Takes (reads and removes, in one step) the unexpired answer to `approval_id`; `None`
    /// when there is none. Of two processes taking at once, one gets it.
    fn take_answer<'a>(&'a self, approval_id: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;

    /// Keeps `record` (an MCP task's shared view, sealed by the caller) under `task_key` until
    /// `expires_at_ms`, replacing the one before, and notifies `task_key`'s subscribers
    /// ([`RunStore::changes`]; docs/snapshot-store.md, "Task records"). `ended` says the task
    /// reached a terminal status: a record that has not ended never replaces one that has
    /// (answered `false`, nothing written), so a `tasks/cancel` that landed in another process
    /// is not undone by the driving process's next write. `true` when written. An invalid key
    /// is [`StoreError::Unavailable`].
    fn put_task<'a>(
        &'a self,
        task_key: &'a str,
        record: Vec<u8>,
        expires_at_ms: u64,
        ended: bool,
    ) -> StoreFuture<'a, bool>;

    /// The unexpired task record under `task_key` ([`RunStore::put_task`]); `None` when there
    /// is none.
    fn get_task<'a>(&'a self, task_key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;
}

/// Opens the backend `url` names. `memory` always opens; `dir:` checks (and creates, mode 0700)
/// the directory; `redis://` connects.
///
/// # Errors
/// [`RunStoreError::Backend`] when the directory is unsafe or unusable or Redis cannot be
/// reached.
pub async fn open(url: &StateUrl) -> Result<Arc<dyn RunStore>, RunStoreError> {
    Ok(match url {
        StateUrl::Memory => Arc::new(memory::MemoryRunStore::new()),
        StateUrl::Dir(path) => Arc::new(dir::DirRunStore::open(path)?),
        StateUrl::Redis(redis_url) => Arc::new(redis::RedisRunStore::connect(redis_url).await?),
    })
}

/// A fresh lease token: 128 random bits from the OS, hex.
///
/// # Errors
/// [`RunStoreError::Backend`] (naming `backend`) when the OS random source fails.
pub(crate) fn lease_token(backend: &str) -> Result<String, RunStoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| RunStoreError::Backend {
        backend: backend.to_string(),
        message: format!("no random lease token: {e}"),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The checks [`RunStore::claim`] makes on a record it found, before the lease: expiry, then
/// scope. An expired record answers [`StoreError::Unavailable`] (the caller removes it).
pub(crate) fn admit(meta: &RecordMeta, caller: &RunScope, now_ms: u64) -> Result<(), StoreError> {
    if meta.expired(now_ms) {
        return Err(StoreError::Unavailable);
    }
    crate::scope::admits(&meta.owner, caller)
}

/// A stable key for an owner scope (its JSON), used to count runs per owner.
pub(crate) fn owner_key(owner: &RunScope) -> String {
    serde_json::to_string(owner).unwrap_or_default()
}
