//! Threads hammering park / resume / repark / finish / purge / remove / clear on one store: no
//! panic, no two live guards for one run, no lost or leaked slot, every payload dropped once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_snapshot::{RunScope, SnapshotStore, StoreError};

struct Payload {
    id: usize,
    /// Unique per payload: two live guards must never hold the same one.
    serial: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// xorshift64*: deterministic per thread, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
    }
}

const CAP: usize = 12;
const IDS: usize = 20;
const THREADS: u64 = 8;
const STEPS: usize = 3_000;

#[test]
fn hammering_threads_keep_the_store_consistent() {
    let store: SnapshotStore<Payload> = SnapshotStore::new(CAP);
    let drops = Arc::new(AtomicUsize::new(0));
    let created = AtomicUsize::new(0);
    // Serials of payloads under a live guard. The same runId may have two live guards when the
    // first run was removed or replaced meanwhile (a detached guard), but never the same payload.
    let held: Mutex<HashSet<usize>> = Mutex::new(HashSet::new());
    let owner = RunScope {
        session_id: Some("s".into()),
        ..RunScope::default()
    };

    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (store, drops, created, held, owner) = (&store, &drops, &created, &held, &owner);
            scope.spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((t + 1) * 0x1234_5678));
                for _ in 0..STEPS {
                    let id = rng.next(IDS as u64) as usize;
                    let run_id = format!("cm_{id}");
                    let ttl = match rng.next(3) {
                        0 => Duration::ZERO,
                        1 => Duration::from_micros(rng.next(2_000)),
                        _ => Duration::from_secs(60),
                    };
                    match rng.next(10) {
                        0..=2 => match store.reserve() {
                            Ok(slot) => {
                                if rng.next(4) == 0 {
                                    drop(slot); // the leg completed: reservation released
                                } else {
                                    let serial = created.fetch_add(1, Ordering::SeqCst);
                                    let payload = Payload {
                                        id,
                                        serial,
                                        drops: drops.clone(),
                                    };
                                    slot.park(run_id, owner.clone(), ttl, payload)
                                        .expect("representable expiry");
                                }
                            }
                            Err(e) => assert_eq!(e, StoreError::TooManySuspended),
                        },
                        3..=6 => match store.resume(&run_id, owner) {
                            Ok(mut guard) => {
                                let serial = guard.serial;
                                assert!(
                                    held.lock().unwrap().insert(serial),
                                    "two live guards for payload {serial} of {run_id}"
                                );
                                assert_eq!(guard.id, id);
                                guard.id = id; // exclusive mutable access
                                if rng.next(3) == 0 {
                                    std::thread::yield_now();
                                }
                                held.lock().unwrap().remove(&serial);
                                match rng.next(3) {
                                    0 => {
                                        if let Err(rejected) = guard.repark(ttl) {
                                            // Only a concurrent remove/clear/replace detaches it.
                                            assert_eq!(rejected.error, StoreError::Unavailable);
                                        }
                                    }
                                    1 => drop(guard.finish()),
                                    _ => drop(guard),
                                }
                            }
                            Err(e) => assert!(
                                matches!(e, StoreError::Unavailable | StoreError::AlreadyResuming),
                                "unexpected {e:?}"
                            ),
                        },
                        7 => {
                            store.purge_expired();
                        }
                        8 => {
                            store.remove(&run_id);
                        }
                        _ => {
                            if rng.next(50) == 0 {
                                store.clear();
                            } else {
                                assert!(store.len() <= CAP);
                                assert!(store.reserved() <= CAP);
                            }
                        }
                    }
                }
            });
        }
    });

    assert!(store.len() <= CAP);
    assert_eq!(
        store.reserved(),
        0,
        "every reservation was parked or released"
    );
    store.clear();
    assert!(store.is_empty());
    assert_eq!(
        drops.load(Ordering::SeqCst),
        created.load(Ordering::SeqCst),
        "every payload dropped exactly once"
    );
    assert!(created.load(Ordering::SeqCst) > CAP, "the test parked runs");
    // No slot was lost: the full cap is available again.
    let slots: Vec<_> = (0..CAP).map(|_| store.reserve().unwrap()).collect();
    assert_eq!(store.reserve().unwrap_err(), StoreError::TooManySuspended);
    drop(slots);
    assert_eq!(store.reserved(), 0);
}

#[test]
fn concurrent_resumes_admit_exactly_one() {
    let store: SnapshotStore<u32> = SnapshotStore::new(4);
    let owner = RunScope::default();
    for round in 0..200u32 {
        store
            .reserve()
            .unwrap()
            .park(
                "cm_race".into(),
                owner.clone(),
                Duration::from_secs(60),
                round,
            )
            .unwrap();
        let barrier = std::sync::Barrier::new(6);
        let outcomes: Vec<Result<u32, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        // The winner keeps its guard until every thread has tried.
                        store.resume("cm_race", &owner).map(|guard| {
                            std::thread::sleep(Duration::from_millis(2));
                            guard.finish()
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners, vec![&round], "exactly one resume proceeds");
        for loser in outcomes.iter().filter_map(|r| r.as_ref().err()) {
            // Refused while the winner held it, or gone once the winner finished it.
            assert!(matches!(
                loser,
                StoreError::AlreadyResuming | StoreError::Unavailable
            ));
        }
        assert!(store.is_empty());
    }
}
