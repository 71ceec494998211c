//! The in-process table of live parked runs ([`SnapshotStore`]): run/session scoping, the
//! per-process suspended-run cap with reservations, TTL expiry and exclusive resume. Its payloads
//! are live values (the facade's run with its executor and in-flight tasks); what of a run can be
//! written to a durable backend is the facade's portable record (docs/snapshot-store.md,
//! "What is portable").

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use codemode_bridge::RunScope;
use moka::notification::RemovalCause;
use moka::sync::Cache;
use moka::Expiry;

use crate::error::{Rejected, StoreError};
use crate::scope::{admits, expiry_after};

/// The production cap on suspended runs per process, counting parked runs plus outstanding
/// reservations (docs/contract/lifecycle.md#s5-4).
pub const MAX_SUSPENDED_RUNS: usize = 64;

/// One stored run. `payload` is `None` exactly while a [`ResumeGuard`] holds it.
struct Record<T> {
    /// Unique per park: tells a guard or an index entry whether this is still "its" run.
    generation: u64,
    owner: RunScope,
    expires_at: Instant,
    payload: Option<T>,
}

impl<T> Record<T> {
    fn resuming(&self) -> bool {
        self.payload.is_none()
    }

    fn expired(&self, now: Instant) -> bool {
        !self.resuming() && self.expires_at <= now
    }
}

struct State<T> {
    runs: HashMap<String, Record<T>>,
    reserved: usize,
    next_generation: u64,
}

struct Shared<T> {
    max_runs: usize,
    state: Mutex<State<T>>,
    /// Payloads evicted by the TTL index's listener, dropped by the store call that triggered the
    /// eviction once it is outside every lock (so a payload's `Drop` never runs inside `moka`).
    graveyard: Mutex<Vec<T>>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code panics while holding the lock, so a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The TTL index evicted `key`: drop the run if it is still the same, idle and expired.
    fn evict(&self, key: &str, stamp: Stamp) {
        let evicted = {
            let mut state = self.lock();
            let current = state.runs.get(key).is_some_and(|record| {
                record.generation == stamp.generation && record.expired(Instant::now())
            });
            if current {
                state.runs.remove(key).and_then(|record| record.payload)
            } else {
                None
            }
        };
        if let Some(payload) = evicted {
            self.graveyard
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(payload);
        }
    }
}

/// The TTL index's value: which park of the run, and when it expires.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    generation: u64,
    expires_at: Instant,
}

/// Per-entry expiry for the TTL index: each entry lives until its stamp's `expires_at`.
struct StampExpiry;

impl Expiry<String, Stamp> for StampExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        stamp: &Stamp,
        created_at: Instant,
    ) -> Option<Duration> {
        Some(stamp.expires_at.saturating_duration_since(created_at))
    }

    fn expire_after_update(
        &self,
        _key: &String,
        stamp: &Stamp,
        updated_at: Instant,
        _duration_until_expiry: Option<Duration>,
    ) -> Option<Duration> {
        Some(stamp.expires_at.saturating_duration_since(updated_at))
    }
}

/// The in-process store of parked runs, generic over the payload `T` (see the crate docs).
///
/// Cloning is cheap and shares the store. `Send + Sync` when `T: Send`. Every operation is a
/// short critical section on one mutex; payloads are always dropped outside it, so a payload's
/// `Drop` may do anything except block on another thread that is inside this store.
pub struct SnapshotStore<T> {
    shared: Arc<Shared<T>>,
    /// TTL index (`runId` → [`Stamp`]): lazily evicts idle expired runs. Advisory: every access
    /// re-checks the authoritative record, so a stale or missing index entry is harmless.
    index: Cache<String, Stamp>,
}

impl<T> Clone for SnapshotStore<T> {
    fn clone(&self) -> Self {
        SnapshotStore {
            shared: Arc::clone(&self.shared),
            index: self.index.clone(),
        }
    }
}

impl<T> fmt::Debug for SnapshotStore<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("SnapshotStore")
            .field("max_runs", &self.shared.max_runs)
            .field("parked", &state.runs.len())
            .field("reserved", &state.reserved)
            .finish()
    }
}

impl<T: Send + 'static> SnapshotStore<T> {
    /// An empty store that holds at most `max_runs` suspended runs, counting parked runs plus
    /// outstanding reservations ([`MAX_SUSPENDED_RUNS`] = 64 in production; 0 refuses every
    /// reservation).
    pub fn new(max_runs: usize) -> Self {
        let shared = Arc::new(Shared {
            max_runs,
            state: Mutex::new(State {
                runs: HashMap::new(),
                reserved: 0,
                next_generation: 0,
            }),
            graveyard: Mutex::new(Vec::new()),
        });
        let weak: Weak<Shared<T>> = Arc::downgrade(&shared);
        let index = Cache::builder()
            .expire_after(StampExpiry)
            .eviction_listener(move |key: Arc<String>, stamp: Stamp, cause| {
                if cause != RemovalCause::Expired {
                    return;
                }
                if let Some(shared) = weak.upgrade() {
                    shared.evict(&key, stamp);
                }
            })
            .build();
        SnapshotStore { shared, index }
    }

    /// Takes one slot under the cap for a run that may park later (docs/contract/lifecycle.md#s5-2: reserved
    /// before the settle loop dispatches work; docs/contract/lifecycle.md#s5-4). The slot counts until the reservation is
    /// parked ([`Reservation::park`]) or dropped.
    ///
    /// # Errors
    /// [`StoreError::TooManySuspended`] when parked runs plus reservations already reach the cap.
    pub fn reserve(&self) -> Result<Reservation<T>, StoreError> {
        let mut state = self.shared.lock();
        if state.runs.len() + state.reserved >= self.shared.max_runs {
            return Err(StoreError::TooManySuspended);
        }
        state.reserved += 1;
        Ok(Reservation {
            store: self.clone(),
            live: true,
        })
    }

    /// Resumes the parked run `run_id` for `caller` (docs/contract/lifecycle.md#s5-3 `wait` step 2), checking
    /// in order:
    ///
    /// 1. unknown or expired (expiry `<=` now, checked exactly here) →
    ///    [`StoreError::Unavailable`]; an expired run is removed and its payload dropped (docs/contract/examples.md#e30);
    /// 2. [`admits`] → [`StoreError::OtherAgentRun`], then [`StoreError::OtherSession`];
    /// 3. another guard is live → [`StoreError::AlreadyResuming`].
    ///
    /// Refusals 2 and 3 leave the run untouched. On success the run stays stored and keeps its
    /// slot, and it does not expire until the guard ends.
    ///
    /// # Errors
    /// As listed above.
    pub fn resume(&self, run_id: &str, caller: &RunScope) -> Result<ResumeGuard<T>, StoreError> {
        let now = Instant::now();
        let (outcome, expired) = {
            let mut state = self.shared.lock();
            match state.runs.get_mut(run_id) {
                None => (Err(StoreError::Unavailable), None),
                Some(record) if record.expired(now) => {
                    (Err(StoreError::Unavailable), state.runs.remove(run_id))
                }
                Some(record) => {
                    let outcome = admits(&record.owner, caller).and_then(|()| {
                        record
                            .payload
                            .take()
                            .map(|payload| (record.generation, payload))
                            .ok_or(StoreError::AlreadyResuming)
                    });
                    (outcome, None)
                }
            }
        };
        if expired.is_some() {
            drop(expired);
            self.index.invalidate(run_id);
            self.bury();
        }
        let (generation, payload) = outcome?;
        Ok(ResumeGuard {
            store: self.clone(),
            run_id: run_id.to_string(),
            generation,
            payload: Some(payload),
        })
    }

    /// Removes every run whose expiry has passed (expiry `<=` now) and drops its payload,
    /// cancelling its work (docs/contract/lifecycle.md#s5-3: first step of every `exec`/`wait`). Runs being
    /// resumed are never removed. Returns how many expired runs this call's scan removed (runs
    /// the TTL index evicted on its own, during this or an earlier call, are dropped too but not
    /// counted).
    pub fn purge_expired(&self) -> usize {
        let now = Instant::now();
        let count = self.drop_where(|_, record| record.expired(now));
        self.index.run_pending_tasks();
        self.bury();
        count
    }

    /// Removes the run `run_id` whatever its state and drops its payload (cancelling its work);
    /// `true` if it was stored. A run being resumed is removed too: its guard is detached, so
    /// [`ResumeGuard::repark`] fails with [`StoreError::Unavailable`] and the payload is dropped
    /// with the guard.
    pub fn remove(&self, run_id: &str) -> bool {
        let removed = self.shared.lock().runs.remove(run_id);
        let found = removed.is_some();
        drop(removed);
        if found {
            self.index.invalidate(run_id);
        }
        self.bury();
        found
    }

    /// Removes every run whose owner's [`RunScope`] matches `owned` and drops its payload,
    /// cancelling its work (docs/contract/lifecycle.md#runs: snapshots are dropped on session
    /// end; docs/contract/lifecycle.md#s5-3 "Runs … are dropped when their session ends"). Runs being resumed
    /// are detached as in [`SnapshotStore::remove`]. Returns how many runs were removed.
    pub fn remove_where(&self, owned: impl Fn(&RunScope) -> bool) -> usize {
        let count = self.drop_where(|_, record| owned(&record.owner));
        self.bury();
        count
    }

    /// Removes every run that is not being resumed and whose id `doomed` selects, dropping its
    /// payload (cancelling its work): live copies a durable store says are over. Returns how
    /// many were removed.
    pub fn remove_idle_where(&self, doomed: impl Fn(&str) -> bool) -> usize {
        let count = self.drop_where(|id, record| !record.resuming() && doomed(id));
        self.bury();
        count
    }

    /// How many stored runs (being resumed or not) have an owner `owned` selects: the runs of
    /// one principal, for a per-principal cap that sits beside the process-wide one.
    pub fn count_where(&self, owned: impl Fn(&RunScope) -> bool) -> usize {
        let state = self.shared.lock();
        state.runs.values().filter(|r| owned(&r.owner)).count()
    }

    /// Removes every run and drops its payload (session end or host shutdown; docs/contract/lifecycle.md#runs). Runs being resumed are detached as in [`SnapshotStore::remove`].
    /// Outstanding reservations stay counted until their holders drop or park them.
    pub fn clear(&self) {
        let runs = std::mem::take(&mut self.shared.lock().runs);
        drop(runs);
        self.index.invalidate_all();
        self.bury();
    }

    /// The number of stored runs, including runs being resumed and runs whose expiry has passed
    /// but that no access has removed yet.
    pub fn len(&self) -> usize {
        self.shared.lock().runs.len()
    }

    /// `true` when no run is stored (reservations are not runs).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of outstanding reservations (taken, neither parked nor dropped).
    pub fn reserved(&self) -> usize {
        self.shared.lock().reserved
    }

    /// The cap given to [`SnapshotStore::new`].
    pub fn max_runs(&self) -> usize {
        self.shared.max_runs
    }

    /// `true` when `run_id` is stored (being resumed or not, expired or not).
    pub fn contains(&self, run_id: &str) -> bool {
        self.shared.lock().runs.contains_key(run_id)
    }

    /// Removes every record `doomed` selects, drops them outside the lock and forgets their TTL
    /// index entries; returns how many it removed.
    fn drop_where(&self, doomed: impl Fn(&str, &Record<T>) -> bool) -> usize {
        let dead: Vec<(String, Record<T>)> = {
            let mut state = self.shared.lock();
            let ids: Vec<String> = state
                .runs
                .iter()
                .filter(|(id, record)| doomed(id, record))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| state.runs.remove_entry(id))
                .collect()
        };
        let count = dead.len();
        for (id, _) in &dead {
            self.index.invalidate(id);
        }
        drop(dead);
        count
    }

    /// Drops the payloads the TTL index's listener evicted, outside every lock.
    fn bury(&self) {
        let dead = std::mem::take(
            &mut *self
                .shared
                .graveyard
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        drop(dead);
    }

    /// Registers (or re-registers) `run_id`'s expiry with the TTL index.
    fn schedule(&self, run_id: &str, stamp: Stamp) {
        self.index.insert(run_id.to_string(), stamp);
        self.bury();
    }
}

/// One slot under the suspended-run cap, taken by [`SnapshotStore::reserve`]. Dropping it frees
/// the slot; [`Reservation::park`] turns it into the parked run's slot.
#[must_use = "a reservation frees its slot when dropped"]
pub struct Reservation<T: Send + 'static> {
    store: SnapshotStore<T>,
    live: bool,
}

impl<T: Send + 'static> fmt::Debug for Reservation<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Reservation<T> {
    /// Parks `payload` under `run_id` (`cm_<uuid>` in production) for `owner`, expiring at
    /// `now + ttl` (docs/contract/lifecycle.md#s5-3-parking "Parking"; `ttl` is `snapshotTtlSeconds`). The run takes
    /// over this reservation's slot. A run already stored under `run_id` is replaced and its
    /// payload dropped (its guard, if any, is detached as in [`SnapshotStore::remove`]).
    ///
    /// # Errors
    /// [`StoreError::ExpiryUnavailable`] when `now + ttl` is not representable
    /// ([`expiry_after`]); nothing is stored, the slot is freed and the payload is handed back.
    pub fn park(
        mut self,
        run_id: String,
        owner: RunScope,
        ttl: Duration,
        payload: T,
    ) -> Result<(), Rejected<T>> {
        let expires_at = match expiry_after(Instant::now(), ttl) {
            Ok(at) => at,
            Err(error) => {
                return Err(Rejected {
                    error,
                    value: payload,
                })
            }
        };
        let store = self.store.clone();
        let (generation, replaced) = {
            let mut state = store.shared.lock();
            state.reserved -= 1;
            self.live = false;
            let generation = state.next_generation;
            state.next_generation += 1;
            let replaced = state.runs.insert(
                run_id.clone(),
                Record {
                    generation,
                    owner,
                    expires_at,
                    payload: Some(payload),
                },
            );
            (generation, replaced)
        };
        drop(replaced);
        store.schedule(
            &run_id,
            Stamp {
                generation,
                expires_at,
            },
        );
        Ok(())
    }
}

impl<T: Send + 'static> Drop for Reservation<T> {
    fn drop(&mut self) {
        if self.live {
            self.store.shared.lock().reserved -= 1;
        }
    }
}

/// Exclusive access to a parked run's payload, from [`SnapshotStore::resume`] (`Deref` and
/// `DerefMut` to `T`; `Send` when `T: Send`, so it can be held across `.await`).
///
/// While the guard lives the run stays stored and keeps its slot, a second `resume` gets
/// [`StoreError::AlreadyResuming`], and neither expiry nor [`SnapshotStore::purge_expired`]
/// removes it. End it with [`ResumeGuard::repark`] (new expiry), [`ResumeGuard::finish`]
/// (removed), or by dropping it (parked again with the expiry unchanged; docs/contract/lifecycle.md#s5-3 `wait`
/// step 4). If the run was removed meanwhile ([`SnapshotStore::remove`], [`SnapshotStore::clear`]),
/// dropping the guard drops the payload.
pub struct ResumeGuard<T: Send + 'static> {
    store: SnapshotStore<T>,
    run_id: String,
    generation: u64,
    /// `Some` for the guard's whole life; taken only by `repark`, `finish` and `drop`.
    payload: Option<T>,
}

impl<T: Send + 'static> fmt::Debug for ResumeGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeGuard")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

const HELD: &str = "a live ResumeGuard always holds its payload";

impl<T: Send + 'static> ResumeGuard<T> {
    /// The resumed run's `runId`.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Parks the run again under the same `runId` with a new expiry `now + ttl` (docs/contract/lifecycle.md#s5-3 `wait` step 6: "A run that parks again keeps its `runId` and gets a new expiry"). No
    /// reservation is needed: the run kept its slot.
    ///
    /// # Errors
    /// The guard is handed back unchanged in [`Rejected`] with
    /// [`StoreError::ExpiryUnavailable`] when `now + ttl` is not representable (the run is still
    /// stored and being resumed; call [`ResumeGuard::finish`] to fail it), or
    /// [`StoreError::Unavailable`] when the run was removed or cleared meanwhile.
    pub fn repark(mut self, ttl: Duration) -> Result<(), Rejected<Self>> {
        let expires_at = match expiry_after(Instant::now(), ttl) {
            Ok(at) => at,
            Err(error) => return Err(Rejected { error, value: self }),
        };
        let reparked = {
            let mut state = self.store.shared.lock();
            match state.runs.get_mut(&self.run_id) {
                Some(record) if record.generation == self.generation && record.resuming() => {
                    record.payload = self.payload.take();
                    record.expires_at = expires_at;
                    true
                }
                _ => false,
            }
        };
        if !reparked {
            return Err(Rejected {
                error: StoreError::Unavailable,
                value: self,
            });
        }
        self.store.schedule(
            &self.run_id,
            Stamp {
                generation: self.generation,
                expires_at,
            },
        );
        Ok(())
    }

    /// Ends the run: removes it from the store at once (its slot is freed) and hands back the
    /// payload (docs/contract/lifecycle.md#s5-3: "Terminal runs are removed"). Dropping the returned payload
    /// cancels whatever work it still owns.
    pub fn finish(mut self) -> T {
        let payload = self.payload.take().expect(HELD);
        let removed = {
            let mut state = self.store.shared.lock();
            let ours = state
                .runs
                .get(&self.run_id)
                .is_some_and(|record| record.generation == self.generation);
            if ours {
                state.runs.remove(&self.run_id)
            } else {
                None
            }
        };
        if removed.is_some() {
            drop(removed);
            self.store.index.invalidate(&self.run_id);
            self.store.bury();
        }
        payload
    }
}

impl<T: Send + 'static> Deref for ResumeGuard<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.payload.as_ref().expect(HELD)
    }
}

impl<T: Send + 'static> DerefMut for ResumeGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.payload.as_mut().expect(HELD)
    }
}

impl<T: Send + 'static> Drop for ResumeGuard<T> {
    fn drop(&mut self) {
        let Some(payload) = self.payload.take() else {
            return;
        };
        let restored = {
            let mut state = self.store.shared.lock();
            match state.runs.get_mut(&self.run_id) {
                Some(record) if record.generation == self.generation && record.resuming() => {
                    record.payload = Some(payload);
                    Ok(Stamp {
                        generation: self.generation,
                        expires_at: record.expires_at,
                    })
                }
                _ => Err(payload),
            }
        };
        match restored {
            // The index may have evicted the entry while the run was pinned: register it again.
            Ok(stamp) => self.store.schedule(&self.run_id, stamp),
            Err(detached) => drop(detached),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Probe(Arc<AtomicUsize>);

    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Runs moka's housekeeping (not the exact scan of `purge_expired`) until `done` holds.
    /// moka's timer wheel has a granularity of about 1.07 s, so this can take up to ~2.2 s.
    fn housekeep_until(store: &SnapshotStore<Probe>, done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            store.index.run_pending_tasks();
            store.bury();
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        false
    }

    #[test]
    fn ttl_index_evicts_idle_expired_runs_but_never_a_resumed_one() {
        let store = SnapshotStore::new(4);
        let idle = Arc::new(AtomicUsize::new(0));
        let busy = Arc::new(AtomicUsize::new(0));
        for (id, drops) in [("cm_idle", &idle), ("cm_busy", &busy)] {
            store
                .reserve()
                .unwrap()
                .park(
                    id.into(),
                    RunScope::default(),
                    Duration::from_millis(5),
                    Probe(drops.clone()),
                )
                .unwrap();
        }
        let guard = store.resume("cm_busy", &RunScope::default()).unwrap();
        assert!(
            housekeep_until(&store, || idle.load(Ordering::SeqCst) == 1),
            "moka evicts the idle expired run and the listener drops its payload"
        );
        assert!(!store.contains("cm_idle"));
        assert!(store.contains("cm_busy"), "a resumed run is pinned");
        assert_eq!(busy.load(Ordering::SeqCst), 0);

        drop(guard); // parked again with its (past) expiry: the index evicts it in turn
        assert!(housekeep_until(&store, || busy.load(Ordering::SeqCst) == 1));
        assert!(store.is_empty());
        assert_eq!(store.reserved(), 0);
    }

    #[test]
    fn index_evictions_are_checked_against_the_record() {
        let store = SnapshotStore::new(4);
        let first = Arc::new(AtomicUsize::new(0));
        let second = Arc::new(AtomicUsize::new(0));
        let park = |ttl, drops: &Arc<AtomicUsize>| {
            store
                .reserve()
                .unwrap()
                .park(
                    "cm_x".into(),
                    RunScope::default(),
                    ttl,
                    Probe(drops.clone()),
                )
                .unwrap()
        };
        park(Duration::from_secs(60), &first);
        // An eviction of the current record before its exact expiry (clock skew) is ignored.
        let early = Stamp {
            generation: 0,
            expires_at: Instant::now(),
        };
        store.shared.evict("cm_x", early);
        store.bury();
        assert_eq!(first.load(Ordering::SeqCst), 0);
        assert!(store.contains("cm_x"));

        // The same id parked again (generation 1, already expired): a stale stamp of generation
        // 0 does not evict it, its own stamp does.
        park(Duration::ZERO, &second);
        assert_eq!(first.load(Ordering::SeqCst), 1, "replaced payload dropped");
        assert_eq!(store.len(), 1);
        store.shared.evict("cm_x", early);
        store.bury();
        assert_eq!(second.load(Ordering::SeqCst), 0);
        let own = Stamp {
            generation: 1,
            expires_at: Instant::now(),
        };
        store.shared.evict("cm_x", own);
        store.bury();
        assert_eq!(second.load(Ordering::SeqCst), 1);
        assert!(store.is_empty());
    }
}
