//! The durable side of [`CodeMode`] (docs/snapshot-store.md, "What is portable" and "Owner
//! leases and changes"): writing parked runs to the run store sealed, taking a run from the
//! store for a `wait`, finished records, and owner leases.
//!
//! - **Owner lease.** A run parked here with tool calls in flight is owned by this process: it
//!   takes the store's owner lease before writing the record, and an owner task renews it every
//!   [`OWNER_LEASE_RENEW`]. Each settlement wakes the task, which rewrites the record with the
//!   settled result; when the last call settled it drops the lease. A `wait` in this process
//!   takes the run's turn first (the task waits behind it and renews meanwhile).
//! - **Following.** A `wait` in another process gets [`RunStoreError::OwnedElsewhere`] from the
//!   claim and does not restore: it subscribes to the run's changes and claims again on each
//!   change (and every [`FOLLOW_POLL`], which notices an owner that died when its lease
//!   expires), within its own `timeoutMs`; when that ends it answers `waiting`.
//! - **Finished records.** A run that ends in a `wait` (completed or failed, not aborted) is
//!   written as a sealed finished record until its expiry; the `wait`s that were following it
//!   answer with that result, a `wait` that starts later gets `code mode run is unavailable or
//!   expired.` as in one process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use codemode_bridge::RunScope;
use codemode_catalog::Catalog;
use codemode_runtime::{AbortHandle, VmError};
use codemode_snapshot::backend::{Changes, RunStore, OWNER_LEASE_RENEW, OWNER_LEASE_TTL};
use codemode_snapshot::live::ResumeGuard;
use codemode_snapshot::record::{now_ms, RecordMeta, StoredRun};
use codemode_snapshot::scope::expiry_ms_after;
use codemode_snapshot::seal::{Binding, StateKeys};
use codemode_snapshot::{Claim, RunStoreError, SnapshotStore, StoreError, MAX_SUSPENDED_RUNS};
use sha2::Digest;
use tokio::sync::{Notify, OwnedMutexGuard};

use super::CodeMode;
use crate::env::RunEnv;
use crate::failure;
use crate::result::{CodeModeResult, ErrorCode};
use crate::run::{self, RecordStamp, Run};

/// How long a `wait` holds a stored run's lease beyond the wait's own `timeoutMs`: a process
/// that dies mid-`wait` frees the run this long after the wait would have ended.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// How often a `wait` following a run owned elsewhere claims it again without a change: the
/// bound on noticing an owner whose lease expired (it died) or a lost notification.
const FOLLOW_POLL: Duration = Duration::from_millis(500);

/// The first bytes of a finished record's plaintext; the result's JSON follows.
const FINISHED_MAGIC: &[u8] = b"CMDONE1";

/// A durable run store, the keys that seal its records, this process's guest image hash, and
/// the owner tasks of the runs whose tool calls run here.
pub(super) struct Durable {
    pub(super) store: Arc<dyn RunStore>,
    pub(super) keys: StateKeys,
    guest_sha256: String,
    owners: Mutex<HashMap<String, Owner>>,
}

/// The handles of one run's owner task.
#[derive(Clone)]
struct Owner {
    /// Held by the task while it writes the run, and by a `wait` here for its whole call.
    busy: Arc<tokio::sync::Mutex<()>>,
    /// Ends the task (its lease was dropped by whoever stopped it).
    stop: Arc<Notify>,
    /// The run's settlement signal the task waits on.
    settled: Arc<Notify>,
}

impl Durable {
    pub(super) fn new(store: Arc<dyn RunStore>, keys: StateKeys, guest_sha256: String) -> Self {
        Durable {
            store,
            keys,
            guest_sha256,
            owners: Mutex::new(HashMap::new()),
        }
    }

    fn owners(&self) -> MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Seals `plain` as `run_id`'s record for `owner`, bound to this guest, `catalog` and the
    /// expiry.
    fn seal(
        &self,
        run_id: &str,
        owner: &RunScope,
        catalog: &Catalog,
        expires_at_ms: u64,
        plain: &[u8],
    ) -> Result<StoredRun, String> {
        let fingerprint = run::catalog_fingerprint(catalog);
        let binding = Binding {
            run_id,
            owner,
            guest_sha256: &self.guest_sha256,
            catalog_fingerprint: &fingerprint,
            expires_at_ms,
        };
        let body = self.keys.seal(&binding, plain).map_err(|e| e.to_string())?;
        let meta = RecordMeta {
            run_id: run_id.to_string(),
            owner: owner.clone(),
            expires_at_ms,
        };
        Ok(StoredRun { meta, body })
    }

    /// Opens a record against `catalog`.
    fn open(&self, record: &StoredRun, catalog: &Catalog) -> Result<Vec<u8>, String> {
        let meta = &record.meta;
        let fingerprint = run::catalog_fingerprint(catalog);
        let binding = Binding {
            run_id: &meta.run_id,
            owner: &meta.owner,
            guest_sha256: &self.guest_sha256,
            catalog_fingerprint: &fingerprint,
            expires_at_ms: meta.expires_at_ms,
        };
        self.keys
            .open(&binding, &record.body)
            .map_err(|e| e.to_string())
    }

    /// The result a finished record holds.
    fn finished_result(
        &self,
        record: &StoredRun,
        catalog: &Catalog,
    ) -> Result<CodeModeResult, String> {
        let plain = self.open(record, catalog)?;
        let unreadable = |why: String| {
            let run_id = &record.meta.run_id;
            format!("stored code mode run {run_id} is unreadable: {why}")
        };
        let json = plain
            .strip_prefix(FINISHED_MAGIC)
            .ok_or_else(|| unreadable("not a finished run".into()))?;
        serde_json::from_slice(json).map_err(|e| unreadable(e.to_string()))
    }

    /// Writes `plain` sealed (to `catalog`) as `run_id`'s parked record; returns its stamp.
    async fn write(
        &self,
        catalog: &Catalog,
        run_id: &str,
        owner: &RunScope,
        expires_at_ms: u64,
        plain: &[u8],
    ) -> Result<RecordStamp, RunStoreError> {
        let record = self
            .seal(run_id, owner, catalog, expires_at_ms, plain)
            .map_err(|message| RunStoreError::Backend {
                backend: self.store.describe(),
                message,
            })?;
        let digest: [u8; 32] = sha2::Sha256::digest(&record.body).into();
        self.store.put(record, MAX_SUSPENDED_RUNS).await?;
        Ok(RecordStamp {
            digest,
            expires_at_ms,
        })
    }
}

/// What [`CodeMode::resume`] hands `wait`: the live guard, the store's claim, the deadline of a
/// `wait` that first followed the run's owner, and this process's turn on a run it owns.
pub(super) struct Resumed {
    pub(super) guard: ResumeGuard<Run>,
    pub(super) claim: Option<Claim>,
    pub(super) deadline: Option<Instant>,
    pub(super) _turn: Option<OwnedMutexGuard<()>>,
}

/// A `wait` following a run another process owns.
struct Follow {
    /// The last record seen (scope checked), for the `waiting` answer.
    record: StoredRun,
    env: Arc<RunEnv>,
    deadline: Instant,
    changes: Option<Changes>,
}

impl CodeMode {
    /// Writes the parked `run` to the durable run store (nothing without one), sealed to its id,
    /// owner, this guest, its catalog and its expiry (`now + ttl`). A new run counts against
    /// its owner's cap in the store. A run with tool calls in flight here (and a process not
    /// stopping, [`CodeMode::park_in_flight`]) takes the owner lease first; a run without ends
    /// this process's ownership. Returns `true` when the run is owned here: the caller starts
    /// the owner task ([`CodeMode::own`]) once the run is in the live table.
    ///
    /// # Errors
    /// The failure result that ends the run: the store's refusal (`invalid_input`, e.g. `too many
    /// suspended code mode runs.`) or failure, or an expiry or seal error (`internal_error`).
    pub(super) async fn save(
        &self,
        run: &mut Run,
        run_id: &str,
        owner: &RunScope,
        ttl: Duration,
    ) -> Result<bool, CodeModeResult> {
        let Some(durable) = &self.durable else {
            return Ok(false);
        };
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let expires_at_ms = match expiry_ms_after(now_ms(), ttl_ms) {
            Ok(at) => at,
            Err(e) => return Err(run.fail(ErrorCode::InternalError, &e.to_string())),
        };
        let Some(plain) = run.portable_bytes() else {
            return Err(run.fail(ErrorCode::InternalError, "code mode snapshot is missing"));
        };
        let mut owned = run.has_calls_in_flight() && !self.is_parking_in_flight();
        if owned {
            let taken = durable
                .store
                .take_owner_lease(run_id, OWNER_LEASE_TTL)
                .await;
            owned = matches!(taken, Ok(true));
        }
        let catalog = run.env.catalog.clone();
        match durable
            .write(&catalog, run_id, owner, expires_at_ms, &plain)
            .await
        {
            Ok(stamp) => run.set_record(stamp),
            Err(e) => {
                if owned {
                    let _ = durable.store.drop_owner_lease(run_id).await;
                }
                let code = match e {
                    RunStoreError::Refused(_) => ErrorCode::InvalidInput,
                    _ => ErrorCode::InternalError,
                };
                return Err(run.fail(code, &e.to_string()));
            }
        }
        if !owned {
            self.disown(run_id).await;
        }
        Ok(owned)
    }

    /// A `wait` here answers `waiting` for `run` with tool calls in flight that this process
    /// does not own yet (a run restored from its record whose approvals were asked again, see
    /// `run/portable.rs`): takes the owner lease, as parking such a run does
    /// ([`CodeMode::save`]), so another process follows the run instead of restoring it a
    /// second time. `true` when taken: the caller starts the owner task ([`CodeMode::own`])
    /// once it let go of the run.
    pub(super) async fn adopt(&self, run: &mut Run, run_id: &str) -> bool {
        let Some(durable) = &self.durable else {
            return false;
        };
        if durable.owners().contains_key(run_id)
            || self.is_parking_in_flight()
            || !run.has_calls_in_flight()
        {
            return false;
        }
        let taken = durable
            .store
            .take_owner_lease(run_id, OWNER_LEASE_TTL)
            .await;
        matches!(taken, Ok(true))
    }

    /// Starts the owner task of `run_id`, parked in the live table with tool calls in flight
    /// and its owner lease taken by [`CodeMode::save`] (nothing when its task already runs).
    pub(super) fn own(&self, run_id: &str, owner: &RunScope, settled: Arc<Notify>) {
        let Some(durable) = &self.durable else {
            return;
        };
        let handles = Owner {
            busy: Arc::new(tokio::sync::Mutex::new(())),
            stop: Arc::new(Notify::new()),
            settled,
        };
        {
            let mut owners = durable.owners();
            if let Some(running) = owners.get(run_id) {
                if Arc::ptr_eq(&running.settled, &handles.settled) {
                    return;
                }
                running.stop.notify_one(); // a task for a copy of the run that is gone
            }
            owners.insert(run_id.to_string(), handles.clone());
        }
        let task = OwnerTask {
            durable: durable.clone(),
            runs: self.runs.clone(),
            run_id: run_id.to_string(),
            owner: owner.clone(),
            handles,
        };
        tokio::spawn(task.run());
    }

    /// Ends this process's ownership of `run_id`: stops its owner task and drops the lease.
    async fn disown(&self, run_id: &str) {
        let Some(durable) = &self.durable else {
            return;
        };
        let Some(owner) = durable.owners().remove(run_id) else {
            return;
        };
        owner.stop.notify_one();
        let _ = durable.store.drop_owner_lease(run_id).await;
    }

    /// The run ended in this process's `wait` with `result` (completed or failed): its record
    /// becomes a finished record holding `result` until the run's expiry, for the `wait`s
    /// following it elsewhere; without a record stamp (or when writing fails) the record is
    /// removed. Ends ownership.
    pub(super) async fn conclude(&self, run: &mut Run, run_id: &str, result: &CodeModeResult) {
        let Some(durable) = &self.durable else {
            return;
        };
        let mut plain = FINISHED_MAGIC.to_vec();
        let written = match (run.record(), serde_json::to_writer(&mut plain, result)) {
            (Some(stamp), Ok(())) => {
                let record = durable.seal(
                    run_id,
                    &run.env.scope,
                    &run.env.catalog,
                    stamp.expires_at_ms,
                    &plain,
                );
                match record {
                    Ok(record) => durable.store.put_finished(record).await.is_ok(),
                    Err(_) => false,
                }
            }
            _ => false,
        };
        if written {
            self.disown(run_id).await;
        } else {
            self.forget(run_id).await;
        }
    }

    /// Removes `run_id`'s record from the durable run store (the run ended here) and ends
    /// ownership. A store that fails leaves the record to expire.
    pub(super) async fn forget(&self, run_id: &str) {
        if let Some(durable) = &self.durable {
            self.disown(run_id).await;
            let _ = durable.store.remove(run_id).await;
        }
    }

    /// Ends a stored run's lease without changing it (`wait` answered `waiting`).
    pub(super) async fn release(&self, claim: Option<&Claim>) {
        if let (Some(durable), Some(claim)) = (&self.durable, claim) {
            let _ = durable.store.release(claim).await;
        }
    }

    /// Takes `run_id` for `caller`: from the live table, checked against the durable run store
    /// when there is one (a run that ended elsewhere is dropped here; one that another process
    /// parked again since is replaced by the stored one), or restored from the store when this
    /// process does not hold it and `env` is given. A run another process owns is followed
    /// until it can be claimed, within the `wait`'s `timeoutMs` (see the module docs).
    ///
    /// # Errors
    /// The answer of the `wait` without resuming: a refusal (the store's texts, or the seal's
    /// when a record cannot be opened), `waiting` when following ran out of time, the result of
    /// a run that finished while followed, or the aborted result.
    pub(super) async fn resume(
        &self,
        run_id: &str,
        caller: &RunScope,
        env: Option<&RunEnv>,
        abort: &AbortHandle,
    ) -> Result<Resumed, Box<CodeModeResult>> {
        let refusal = |message: String| Box::new(failure::bare_refusal(&message));
        let unavailable = || refusal(StoreError::Unavailable.to_string());
        let Some(durable) = &self.durable else {
            return match self.runs.resume(run_id, caller) {
                Ok(guard) => Ok(Resumed {
                    guard,
                    claim: None,
                    deadline: None,
                    _turn: None,
                }),
                Err(e) => Err(refusal(e.to_string())),
            };
        };
        let busy = durable.owners().get(run_id).map(|o| o.busy.clone());
        let turn = match busy {
            Some(busy) => Some(busy.lock_owned().await),
            None => None,
        };
        let mut follow: Option<Follow> = None;
        loop {
            let guard = match self.runs.resume(run_id, caller) {
                Ok(guard) => Some(guard),
                Err(StoreError::Unavailable) => None,
                Err(e) => return Err(refusal(e.to_string())),
            };
            let lease_env = match (&guard, env) {
                (Some(guard), _) => guard.env.clone(),
                (None, Some(env)) => Arc::new(env.clone()),
                (None, None) => return Err(unavailable()),
            };
            let timeout = Duration::from_millis(lease_env.config.timeout_ms());
            match durable
                .store
                .claim(run_id, caller, timeout + LEASE_MARGIN)
                .await
            {
                Ok(claim) if claim.is_finished() => {
                    drop_stale(guard);
                    if follow.is_none() {
                        return Err(unavailable());
                    }
                    let result = durable.finished_result(&claim.run, &lease_env.catalog);
                    return Err(Box::new(result.unwrap_or_else(|m| *refusal(m))));
                }
                Ok(claim) => {
                    let guard = self
                        .take_claimed(durable, guard, claim, caller, env)
                        .await?;
                    let deadline = follow.map(|f| f.deadline);
                    return Ok(Resumed {
                        guard: guard.0,
                        claim: Some(guard.1),
                        deadline,
                        _turn: turn,
                    });
                }
                Err(RunStoreError::OwnedElsewhere(record)) => {
                    drop(guard);
                    let deadline = Instant::now() + timeout;
                    let follow = follow.get_or_insert_with(|| Follow {
                        record: (*record).clone(),
                        env: lease_env,
                        deadline,
                        changes: None,
                    });
                    follow.record = *record;
                }
                Err(RunStoreError::Refused(StoreError::AlreadyResuming)) if follow.is_some() => {
                    drop(guard);
                }
                Err(RunStoreError::Refused(StoreError::Unavailable)) => {
                    // Ended, expired or purged elsewhere: the live copy is stale.
                    drop_stale(guard);
                    return Err(unavailable());
                }
                Err(e) => return Err(refusal(e.to_string())),
            }
            let Some(follow) = follow.as_mut() else {
                return Err(unavailable());
            };
            let Some(changes) = follow.changes.as_mut() else {
                // Subscribed first, then claimed again: no change is missed in between.
                let changes = durable.store.changes(run_id).await;
                follow.changes = Some(changes.map_err(|e| refusal(e.to_string()))?);
                continue;
            };
            let now = Instant::now();
            if now >= follow.deadline {
                let plain = durable.open(&follow.record, &follow.env.catalog);
                let waiting = plain.and_then(|p| run::waiting_elsewhere(&follow.env, run_id, &p));
                return Err(Box::new(waiting.unwrap_or_else(|m| *refusal(m))));
            }
            let poll = follow.deadline.min(now + FOLLOW_POLL);
            tokio::select! {
                () = changes.next() => {}
                () = tokio::time::sleep_until(poll.into()) => {}
                () = abort.fired() => {
                    // An aborted `wait` disposes of its run (docs/contract/lifecycle.md#s5-9).
                    self.forget(run_id).await;
                    let aborted = VmError::Aborted.to_string();
                    return Err(Box::new(failure::bare_failure(ErrorCode::Aborted, &aborted)));
                }
            }
        }
    }

    /// The run `claim` names, claimed for this `wait`: the live copy when it is the one this
    /// process last wrote, else restored from the record with `env` (a stale live copy is
    /// dropped).
    async fn take_claimed(
        &self,
        durable: &Durable,
        guard: Option<ResumeGuard<Run>>,
        claim: Claim,
        caller: &RunScope,
        env: Option<&RunEnv>,
    ) -> Result<(ResumeGuard<Run>, Claim), Box<CodeModeResult>> {
        let refusal = |message: String| Box::new(failure::bare_refusal(&message));
        let digest: [u8; 32] = sha2::Sha256::digest(&claim.run.body).into();
        if let Some(guard) = guard {
            if guard.record().map(|r| r.digest) == Some(digest) {
                return Ok((guard, claim));
            }
            // Parked again by another process since: the stored run is the current one.
            drop_stale(Some(guard));
        }
        let Some(env) = env else {
            durable.store.release(&claim).await.ok();
            return Err(refusal(StoreError::Unavailable.to_string()));
        };
        match self.restore_stored(durable, &claim, digest, caller, env) {
            Ok(guard) => Ok((guard, claim)),
            Err(message) => {
                durable.store.release(&claim).await.ok();
                Err(refusal(message))
            }
        }
    }

    /// Opens a claimed record, rebuilds its run with `env` and parks it in the live table under
    /// its id with the expiry it had; returns the live guard.
    fn restore_stored(
        &self,
        durable: &Durable,
        claim: &Claim,
        digest: [u8; 32],
        caller: &RunScope,
        env: &RunEnv,
    ) -> Result<ResumeGuard<Run>, String> {
        let meta = &claim.run.meta;
        let plain = durable.open(&claim.run, &env.catalog)?;
        let mut restored =
            Run::from_portable(env, &meta.owner, self.runs.clone(), &meta.run_id, &plain)?;
        restored.set_record(RecordStamp {
            digest,
            expires_at_ms: meta.expires_at_ms,
        });
        restored.set_stored(true);
        let slot = self.runs.reserve().map_err(|e| e.to_string())?;
        let ttl = Duration::from_millis(meta.expires_at_ms.saturating_sub(now_ms()));
        slot.park(meta.run_id.clone(), meta.owner.clone(), ttl, restored)
            .map_err(|rejected| rejected.error.to_string())?;
        self.runs
            .resume(&meta.run_id, caller)
            .map_err(|e| e.to_string())
    }
}

/// Drops a live copy the store says is stale (ended, expired or moved on elsewhere).
fn drop_stale(guard: Option<ResumeGuard<Run>>) {
    if let Some(guard) = guard {
        run::dropping_because(run::SNAPSHOT_TTL, || drop(guard.finish()));
    }
}

/// What the owner task did with a settlement.
enum Written {
    /// The record holds what settled; calls are still in flight.
    InFlight,
    /// The record holds every settlement: nothing is in flight any more.
    Settled,
    /// The run is no longer here, or the lease was lost.
    Over,
}

/// Why an owner task stops waiting for its turn.
enum Ended {
    /// [`CodeMode::disown`] stopped it (and dropped the lease).
    Stopped,
    /// The run is no longer here, or the lease was lost.
    Lost,
}
use Ended::{Lost, Stopped};

/// The owner task of one run (see the module docs).
struct OwnerTask {
    durable: Arc<Durable>,
    runs: SnapshotStore<Run>,
    run_id: String,
    owner: RunScope,
    handles: Owner,
}

impl OwnerTask {
    async fn run(self) {
        let mut renew = tokio::time::interval(OWNER_LEASE_RENEW);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew.tick().await;
        loop {
            tokio::select! {
                () = self.handles.stop.notified() => return,
                _ = renew.tick() => {
                    if !self.renew().await {
                        break;
                    }
                }
                () = self.handles.settled.notified() => {
                    let turn = match self.turn(&mut renew).await {
                        Ok(turn) => turn,
                        Err(Stopped) => return,
                        Err(Lost) => break,
                    };
                    let written = self.write_settled().await;
                    drop(turn);
                    match written {
                        Written::InFlight => {}
                        Written::Settled => {
                            if self.unregister() {
                                let _ = self.durable.store.drop_owner_lease(&self.run_id).await;
                            }
                            return;
                        }
                        Written::Over => break,
                    }
                }
            }
        }
        // The run is gone here or another process took over: this copy must not go on.
        if self.unregister() {
            let _ = self.durable.store.drop_owner_lease(&self.run_id).await;
        }
        let id = self.run_id.as_str();
        run::dropping_because(run::SNAPSHOT_TTL, || {
            self.runs.remove_idle_where(|run_id| run_id == id)
        });
    }

    /// Renews the lease; `false` when the run is no longer in the live table or the lease was
    /// lost.
    async fn renew(&self) -> bool {
        if !self.runs.contains(&self.run_id) {
            return false;
        }
        let renewed = self
            .durable
            .store
            .renew_owner_lease(&self.run_id, OWNER_LEASE_TTL)
            .await;
        matches!(renewed, Ok(true))
    }

    /// Waits for the run's turn (a `wait` here goes first), renewing meanwhile.
    async fn turn(&self, renew: &mut tokio::time::Interval) -> Result<OwnedMutexGuard<()>, Ended> {
        loop {
            tokio::select! {
                turn = self.handles.busy.clone().lock_owned() => return Ok(turn),
                () = self.handles.stop.notified() => return Err(Stopped),
                _ = renew.tick() => {
                    if !self.renew().await {
                        return Err(Lost);
                    }
                }
            }
        }
    }

    /// Rewrites the record with what settled, keeping its expiry.
    async fn write_settled(&self) -> Written {
        let Ok(mut guard) = self.runs.resume(&self.run_id, &self.owner) else {
            return Written::Over;
        };
        // A lease that lapsed may have let another process restore the run: never overwrite.
        if !self.renew().await {
            return Written::Over;
        }
        let (Some(stamp), Some(plain)) = (guard.record(), guard.portable_bytes()) else {
            return Written::Over;
        };
        let in_flight = guard.has_calls_in_flight();
        let catalog = guard.env.catalog.clone();
        let write = self.durable.write(
            &catalog,
            &self.run_id,
            &self.owner,
            stamp.expires_at_ms,
            &plain,
        );
        match write.await {
            Ok(stamp) => guard.set_record(stamp),
            Err(e) => {
                tracing::warn!(run_id = %self.run_id, error = %e, "could not write a settled result; retrying");
                drop(guard);
                tokio::time::sleep(FOLLOW_POLL).await;
                self.handles.settled.notify_one();
                return Written::InFlight;
            }
        }
        if in_flight {
            Written::InFlight
        } else {
            Written::Settled
        }
    }

    /// Removes this task's entry (not a newer task's); `true` when it was there.
    fn unregister(&self) -> bool {
        let mut owners = self.durable.owners();
        match owners.get(&self.run_id) {
            Some(owner) if Arc::ptr_eq(&owner.stop, &self.handles.stop) => {
                owners.remove(&self.run_id);
                true
            }
            _ => false,
        }
    }
}
