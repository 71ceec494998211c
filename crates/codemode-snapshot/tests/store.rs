//! Behaviour of the snapshot store against docs/contract/lifecycle.md#s5-3, docs/contract/lifecycle.md#s5-4, docs/contract/decisions.md#d1 and docs/contract/examples.md#e30 to #e32.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::Duration;

use codemode_snapshot::{
    admits, expiry_after, Rejected, ResumeGuard, RunScope, SnapshotStore, StoreError,
    MAX_SUSPENDED_RUNS,
};

/// A payload that counts its drops (standing for a run whose drop aborts its tool calls).
struct Run {
    value: u32,
    drops: Arc<AtomicUsize>,
}

impl Drop for Run {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

struct Fixture {
    store: SnapshotStore<Run>,
    drops: Arc<AtomicUsize>,
}

const LONG: Duration = Duration::from_secs(900);

impl Fixture {
    fn new(max_runs: usize) -> Self {
        Fixture {
            store: SnapshotStore::new(max_runs),
            drops: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn run(&self, value: u32) -> Run {
        Run {
            value,
            drops: self.drops.clone(),
        }
    }

    fn park(&self, id: &str, owner: &RunScope, ttl: Duration, value: u32) {
        self.store
            .reserve()
            .expect("slot")
            .park(id.to_string(), owner.clone(), ttl, self.run(value))
            .expect("parked");
    }

    fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// The contract's fixture caller.
fn fixture_caller() -> RunScope {
    RunScope {
        run_id: some("run-code-mode"),
        session_id: some("session-main"),
        session_key: some("agent:main:main"),
        agent_id: None,
    }
}

fn err<T: Send + 'static>(r: Result<ResumeGuard<T>, StoreError>) -> StoreError {
    match r {
        Ok(_) => panic!("expected a refusal"),
        Err(e) => e,
    }
}

#[test]
fn error_messages_are_exact() {
    let cases = [
        (
            StoreError::TooManySuspended,
            "too many suspended code mode runs.",
        ),
        (
            StoreError::ExpiryUnavailable,
            "code mode run expiry is unavailable.",
        ),
        (
            StoreError::Unavailable,
            "code mode run is unavailable or expired.",
        ),
        (
            StoreError::OtherAgentRun,
            "code mode run belongs to a different agent run.",
        ),
        (
            StoreError::OtherSession,
            "code mode run belongs to a different session.",
        ),
        (
            StoreError::AlreadyResuming,
            "code mode run is already being resumed.",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
    let rejected = Rejected {
        error: StoreError::ExpiryUnavailable,
        value: 7u8,
    };
    assert_eq!(rejected.to_string(), "code mode run expiry is unavailable.");
    assert_eq!(
        StoreError::from(rejected),
        StoreError::ExpiryUnavailable,
        "Rejected converts to its error"
    );
}

#[test]
fn park_resume_finish_round_trip() {
    let f = Fixture::new(MAX_SUSPENDED_RUNS);
    let owner = fixture_caller();
    f.park("cm_a", &owner, LONG, 1);
    assert_eq!((f.store.len(), f.store.reserved()), (1, 0));

    let mut guard = f.store.resume("cm_a", &owner).unwrap();
    assert_eq!(guard.run_id(), "cm_a");
    assert_eq!(guard.value, 1);
    guard.value = 2;
    let run = guard.finish();
    assert_eq!(run.value, 2);
    assert!(f.store.is_empty(), "terminal runs are removed at once");
    assert_eq!(f.drops(), 0, "finish hands the payload back");
    drop(run);
    assert_eq!(f.drops(), 1);
    assert_eq!(
        err(f.store.resume("cm_a", &owner)),
        StoreError::Unavailable,
        "a finished run is gone"
    );
}

#[test]
fn unknown_run_is_unavailable() {
    let f = Fixture::new(4);
    let e = err(f.store.resume("cm_missing", &fixture_caller()));
    assert_eq!(e.to_string(), "code mode run is unavailable or expired.");
}

#[test]
fn cap_counts_parked_runs_and_reservations() {
    let f = Fixture::new(MAX_SUSPENDED_RUNS);
    let owner = RunScope::default();
    for i in 0..64 {
        f.park(&format!("cm_{i}"), &owner, LONG, i);
    }
    assert_eq!(f.store.len(), 64);
    let refused = f.store.reserve().unwrap_err();
    assert_eq!(refused.to_string(), "too many suspended code mode runs.");
    assert_eq!(f.store.reserved(), 0, "a refused reservation takes nothing");

    // A run being resumed keeps its slot: re-parking needs no reservation, and the cap holds.
    let guard = f.store.resume("cm_5", &owner).unwrap();
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
    guard.repark(LONG).unwrap();
    assert_eq!(f.store.len(), 64);
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);

    // Removing one run frees one slot.
    assert!(f.store.remove("cm_0"));
    let slot = f.store.reserve().unwrap();
    assert_eq!(f.store.reserved(), 1);
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
    drop(slot);
    assert_eq!(f.store.reserved(), 0);
    f.store
        .reserve()
        .unwrap()
        .park("cm_new".into(), owner, LONG, f.run(99))
        .unwrap();
    assert_eq!((f.store.len(), f.store.reserved()), (64, 0));
}

#[test]
fn reservations_alone_fill_the_cap_and_free_on_drop() {
    let f = Fixture::new(MAX_SUSPENDED_RUNS);
    let mut slots: Vec<_> = (0..64).map(|_| f.store.reserve().unwrap()).collect();
    assert_eq!(f.store.reserved(), 64);
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
    drop(slots.pop());
    assert_eq!(f.store.reserved(), 63);
    let again = f.store.reserve().unwrap();
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
    // Parking converts a reservation into a run without changing the total.
    again
        .park("cm_r".into(), RunScope::default(), LONG, f.run(0))
        .unwrap();
    assert_eq!((f.store.len(), f.store.reserved()), (1, 63));
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
    drop(slots);
    assert_eq!((f.store.len(), f.store.reserved()), (1, 0));
    // Outstanding reservations survive `clear` and still count.
    let held = f.store.reserve().unwrap();
    f.store.clear();
    assert_eq!((f.store.len(), f.store.reserved()), (0, 1));
    drop(held);
    assert_eq!(f.store.reserved(), 0);
}

#[test]
fn zero_cap_refuses_every_reservation() {
    let store: SnapshotStore<u8> = SnapshotStore::new(0);
    assert_eq!(store.reserve().unwrap_err(), StoreError::TooManySuspended);
    assert_eq!(store.max_runs(), 0);
}

#[test]
fn expired_run_is_unavailable_removed_and_dropped() {
    // docs/contract/examples.md#e30: an expired run is never resumable; `wait` removes it.
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_short", &owner, Duration::from_millis(30), 1);
    drop(f.store.resume("cm_short", &owner).unwrap()); // still fresh
    sleep(Duration::from_millis(50));
    assert!(f.store.contains("cm_short"), "nothing removed it yet");
    let e = err(f.store.resume("cm_short", &owner));
    assert_eq!(e.to_string(), "code mode run is unavailable or expired.");
    assert!(!f.store.contains("cm_short"));
    assert_eq!(f.drops(), 1, "expiry cancels the run's work");
    // The slot is free again.
    assert_eq!((f.store.len(), f.store.reserved()), (0, 0));
}

#[test]
fn zero_ttl_expires_immediately() {
    let f = Fixture::new(4);
    f.park("cm_zero", &RunScope::default(), Duration::ZERO, 1);
    assert_eq!(
        err(f.store.resume("cm_zero", &RunScope::default())),
        StoreError::Unavailable
    );
    assert_eq!(f.drops(), 1);
}

#[test]
fn expiry_is_checked_before_scope() {
    let f = Fixture::new(4);
    f.park("cm_old", &fixture_caller(), Duration::from_millis(10), 1);
    sleep(Duration::from_millis(25));
    let stranger = RunScope::default();
    assert_eq!(
        err(f.store.resume("cm_old", &stranger)),
        StoreError::Unavailable
    );
    assert!(f.store.is_empty());
}

#[test]
fn purge_drops_expired_runs_only() {
    let f = Fixture::new(8);
    let owner = RunScope::default();
    f.park("cm_1", &owner, Duration::from_millis(20), 1);
    f.park("cm_2", &owner, Duration::from_millis(20), 2);
    f.park("cm_keep", &owner, LONG, 3);
    assert_eq!(f.store.purge_expired(), 0);
    assert_eq!(f.drops(), 0);
    sleep(Duration::from_millis(40));
    assert_eq!(f.store.purge_expired(), 2);
    assert_eq!(f.drops(), 2);
    assert_eq!(f.store.len(), 1);
    assert!(f.store.contains("cm_keep"));
    assert_eq!(f.store.purge_expired(), 0);
}

#[test]
fn purge_never_removes_a_run_being_resumed() {
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_busy", &owner, Duration::from_millis(20), 1);
    let mut guard = f.store.resume("cm_busy", &owner).unwrap();
    sleep(Duration::from_millis(40));
    assert_eq!(f.store.purge_expired(), 0);
    assert!(f.store.contains("cm_busy"));
    assert_eq!(f.drops(), 0);
    guard.value = 5; // still exclusively ours
    assert_eq!(
        err(f.store.resume("cm_busy", &owner)),
        StoreError::AlreadyResuming,
        "pinned while resumed, even past its expiry"
    );
    drop(guard); // `waiting`: expiry unchanged, so it is now expired
    assert_eq!(f.store.purge_expired(), 1);
    assert_eq!(f.drops(), 1);
    assert!(f.store.is_empty());
}

#[test]
fn second_resume_is_refused_and_the_run_stays_stored() {
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_w", &owner, LONG, 1);
    let mut first = f.store.resume("cm_w", &owner).unwrap();
    let e = err(f.store.resume("cm_w", &owner));
    assert_eq!(e.to_string(), "code mode run is already being resumed.");
    assert!(f.store.contains("cm_w"));
    assert_eq!(f.store.len(), 1);
    first.value = 7;
    drop(first); // the first `wait` returned `waiting`
    let again = f.store.resume("cm_w", &owner).unwrap();
    assert_eq!(again.value, 7, "changes made under the guard are kept");
    assert_eq!(f.drops(), 0);
}

#[test]
fn repark_keeps_the_id_and_extends_the_expiry() {
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_re", &owner, Duration::from_millis(60), 1);
    sleep(Duration::from_millis(30));
    let guard = f.store.resume("cm_re", &owner).unwrap();
    guard.repark(Duration::from_millis(400)).unwrap();
    sleep(Duration::from_millis(60)); // past the first expiry, before the new one
    assert_eq!(f.store.purge_expired(), 0);
    let guard = f.store.resume("cm_re", &owner).unwrap();
    assert_eq!(guard.run_id(), "cm_re");
    assert_eq!(guard.value, 1);
    assert_eq!(f.drops(), 0);
}

#[test]
fn dropping_the_guard_keeps_the_expiry() {
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_keep", &owner, Duration::from_millis(60), 1);
    sleep(Duration::from_millis(30));
    drop(f.store.resume("cm_keep", &owner).unwrap());
    sleep(Duration::from_millis(45)); // past the original expiry
    assert_eq!(
        err(f.store.resume("cm_keep", &owner)),
        StoreError::Unavailable,
        "a `waiting` wait does not refresh the expiry"
    );
    assert_eq!(f.drops(), 1);
}

#[test]
fn unrepresentable_expiry_is_refused() {
    let f = Fixture::new(4);
    let slot = f.store.reserve().unwrap();
    let rejected = slot
        .park(
            "cm_max".into(),
            RunScope::default(),
            Duration::MAX,
            f.run(3),
        )
        .unwrap_err();
    assert_eq!(rejected.to_string(), "code mode run expiry is unavailable.");
    assert_eq!(rejected.error, StoreError::ExpiryUnavailable);
    assert_eq!(rejected.value.value, 3, "the payload is handed back");
    assert_eq!((f.store.len(), f.store.reserved()), (0, 0), "slot freed");
    drop(rejected);
    assert_eq!(f.drops(), 1);

    // docs/contract/examples.md#e30's bound: a time past ±8.64e15 ms from the epoch is not a valid time, even where a
    // monotonic instant could hold it.
    let beyond = Duration::from_millis(8_640_000_000_000_001);
    assert_eq!(
        expiry_after(std::time::Instant::now(), beyond).unwrap_err(),
        StoreError::ExpiryUnavailable
    );
    assert!(expiry_after(std::time::Instant::now(), Duration::from_secs(86_400)).is_ok());
}

#[test]
fn unrepresentable_repark_hands_the_guard_back() {
    let f = Fixture::new(4);
    let owner = RunScope::default();
    f.park("cm_g", &owner, LONG, 4);
    let guard = f.store.resume("cm_g", &owner).unwrap();
    let rejected = guard.repark(Duration::MAX).unwrap_err();
    assert_eq!(rejected.error, StoreError::ExpiryUnavailable);
    let guard = rejected.value;
    assert_eq!(guard.value, 4);
    assert_eq!(
        err(f.store.resume("cm_g", &owner)),
        StoreError::AlreadyResuming,
        "still being resumed"
    );
    drop(guard.finish());
    assert!(f.store.is_empty());
    assert_eq!(f.drops(), 1);
}

#[test]
fn remove_and_clear_drop_payloads() {
    let f = Fixture::new(8);
    let owner = RunScope::default();
    f.park("cm_1", &owner, LONG, 1);
    f.park("cm_2", &owner, LONG, 2);
    f.park("cm_3", &owner, LONG, 3);
    assert!(f.store.remove("cm_1"));
    assert!(!f.store.remove("cm_1"));
    assert_eq!(f.drops(), 1);
    f.store.clear();
    assert_eq!(f.drops(), 3);
    assert!(f.store.is_empty());
    assert_eq!(f.store.purge_expired(), 0);
}

#[test]
fn remove_where_drops_one_sessions_runs_only() {
    let f = Fixture::new(8);
    let session = |id: &str| RunScope {
        session_id: some(id),
        ..RunScope::default()
    };
    f.park("cm_a1", &session("a"), LONG, 1);
    f.park("cm_a2", &session("a"), LONG, 2);
    f.park("cm_b1", &session("b"), LONG, 3);
    f.park("cm_none", &RunScope::default(), LONG, 4);
    let resumed = f.store.resume("cm_a2", &session("a")).unwrap();

    let ended = |owner: &RunScope| owner.session_id.as_deref() == Some("a");
    assert_eq!(f.store.remove_where(ended), 2);
    assert_eq!(f.drops(), 1, "the guard still holds cm_a2's payload");
    assert!(!f.store.contains("cm_a1") && !f.store.contains("cm_a2"));
    assert!(f.store.contains("cm_b1") && f.store.contains("cm_none"));
    assert_eq!(
        resumed.repark(LONG).unwrap_err().error,
        StoreError::Unavailable
    );
    assert_eq!(f.drops(), 2);
    assert_eq!(f.store.remove_where(ended), 0);
    assert_eq!(f.store.len(), 2);
    assert_eq!(
        f.store
            .resume("cm_b1", &session("b"))
            .unwrap()
            .finish()
            .value,
        3
    );
}

#[test]
fn a_run_removed_while_resumed_is_not_parked_again() {
    let f = Fixture::new(4);
    let owner = RunScope::default();
    f.park("cm_a", &owner, LONG, 1);
    f.park("cm_b", &owner, LONG, 2);
    let a = f.store.resume("cm_a", &owner).unwrap();
    let b = f.store.resume("cm_b", &owner).unwrap();
    f.store.clear(); // session end while both `wait`s are in flight
    assert!(f.store.is_empty());
    assert_eq!(f.drops(), 0, "the guards still hold the payloads");

    let rejected = a.repark(LONG).unwrap_err();
    assert_eq!(rejected.error, StoreError::Unavailable);
    drop(rejected);
    assert_eq!(f.drops(), 1);
    drop(b);
    assert_eq!(f.drops(), 2);
    assert!(f.store.is_empty(), "a detached guard never re-parks");
    let slots: Vec<_> = (0..4).map(|_| f.store.reserve().unwrap()).collect();
    assert_eq!(f.store.reserved(), slots.len(), "every slot is free again");
}

#[test]
fn finish_of_a_detached_guard_leaves_a_newer_run_alone() {
    let f = Fixture::new(4);
    let owner = RunScope::default();
    f.park("cm_x", &owner, LONG, 1);
    let old = f.store.resume("cm_x", &owner).unwrap();
    assert!(f.store.remove("cm_x"));
    f.park("cm_x", &owner, LONG, 2);
    assert_eq!(old.finish().value, 1);
    assert!(
        f.store.contains("cm_x"),
        "the newer run under the same id stays"
    );
    assert_eq!(f.store.resume("cm_x", &owner).unwrap().value, 2);
}

#[test]
fn parking_an_existing_id_replaces_the_old_run() {
    let f = Fixture::new(4);
    let owner = RunScope::default();
    f.park("cm_dup", &owner, LONG, 1);
    f.park("cm_dup", &owner, LONG, 2);
    assert_eq!(f.drops(), 1);
    assert_eq!((f.store.len(), f.store.reserved()), (1, 0));
    assert_eq!(f.store.resume("cm_dup", &owner).unwrap().value, 2);
    // Both slots are accounted for: three more runs fit under a cap of 4.
    for i in 0..3 {
        f.park(&format!("cm_{i}"), &owner, LONG, i);
    }
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
}

#[test]
fn e31_other_session_is_refused_and_the_run_stays() {
    let f = Fixture::new(4);
    let owner = fixture_caller();
    f.park("cm_e31", &owner, LONG, 1);
    let other = RunScope {
        session_id: some("session-other"),
        session_key: some("agent:main:other"),
        run_id: some("run-code-mode"),
        agent_id: None,
    };
    let e = err(f.store.resume("cm_e31", &other));
    assert_eq!(
        e.to_string(),
        "code mode run belongs to a different session."
    );
    assert!(f.store.contains("cm_e31"));
    assert!(f.store.resume("cm_e31", &owner).is_ok());
}

#[test]
fn e32_scope_refusals_then_the_owner_resumes() {
    let f = Fixture::new(4);
    let owner = RunScope {
        agent_id: some("owner"),
        ..fixture_caller()
    };
    f.park("cm_e32", &owner, LONG, 42);

    let no_run = RunScope {
        run_id: None,
        ..owner.clone()
    };
    assert_eq!(
        err(f.store.resume("cm_e32", &no_run)).to_string(),
        "code mode run belongs to a different agent run."
    );
    let missing = [
        RunScope {
            session_id: None,
            ..owner.clone()
        },
        RunScope {
            session_key: None,
            ..owner.clone()
        },
        RunScope {
            agent_id: None,
            ..owner.clone()
        },
    ];
    for caller in &missing {
        assert_eq!(
            err(f.store.resume("cm_e32", caller)).to_string(),
            "code mode run belongs to a different session."
        );
    }
    assert!(
        f.store.contains("cm_e32"),
        "the run stays through the refusals"
    );
    assert_eq!(f.drops(), 0);
    let guard = f.store.resume("cm_e32", &owner).unwrap();
    assert_eq!(guard.value, 42);
}

#[test]
fn scope_checks_run_in_order() {
    let f = Fixture::new(4);
    let owner = RunScope {
        agent_id: some("main"),
        ..fixture_caller()
    };
    f.park("cm_o", &owner, LONG, 1);
    // Wrong run and wrong session: the agent-run refusal comes first.
    let stranger = RunScope {
        run_id: some("run-other"),
        session_id: some("session-other"),
        session_key: None,
        agent_id: some("other"),
    };
    assert_eq!(
        err(f.store.resume("cm_o", &stranger)),
        StoreError::OtherAgentRun
    );
    // While it is being resumed, a wrong session is still reported as such.
    let _guard = f.store.resume("cm_o", &owner).unwrap();
    let other_session = RunScope {
        session_id: some("session-other"),
        ..owner.clone()
    };
    assert_eq!(
        err(f.store.resume("cm_o", &other_session)),
        StoreError::OtherSession
    );
    assert_eq!(
        err(f.store.resume("cm_o", &owner)),
        StoreError::AlreadyResuming
    );
}

#[test]
fn unset_owner_fields_are_not_checked() {
    let f = Fixture::new(4);
    let owner = RunScope {
        session_id: some("s"),
        ..RunScope::default()
    };
    f.park("cm_u", &owner, LONG, 1);
    let caller = RunScope {
        run_id: some("any-run"),
        session_id: some("s"),
        session_key: some("any-key"),
        agent_id: some("any-agent"),
    };
    drop(f.store.resume("cm_u", &caller).unwrap());
    f.park("cm_open", &RunScope::default(), LONG, 2);
    drop(f.store.resume("cm_open", &RunScope::default()).unwrap());
    drop(f.store.resume("cm_open", &caller).unwrap());
}

#[test]
fn dropping_the_store_drops_every_payload() {
    let f = Fixture::new(4);
    f.park("cm_1", &RunScope::default(), LONG, 1);
    f.park("cm_2", &RunScope::default(), LONG, 2);
    let Fixture { store, drops } = f;
    drop(store);
    assert_eq!(drops.load(Ordering::SeqCst), 2, "nothing survives the host");
}

#[test]
fn store_and_guard_are_send_and_sync() {
    fn send_sync<X: Send + Sync>() {}
    fn send<X: Send>() {}
    send_sync::<SnapshotStore<Run>>();
    send_sync::<codemode_snapshot::Reservation<Run>>();
    send::<ResumeGuard<Run>>();
    // A payload that is Send but not Sync still gives a shareable store.
    send_sync::<SnapshotStore<std::cell::Cell<u8>>>();
    send::<ResumeGuard<std::cell::Cell<u8>>>();
}

#[test]
fn clones_share_the_store() {
    let f = Fixture::new(2);
    let other = f.store.clone();
    f.park("cm_s", &RunScope::default(), LONG, 1);
    assert!(other.contains("cm_s"));
    let _slot = other.reserve().unwrap();
    assert_eq!(f.store.reserve().unwrap_err(), StoreError::TooManySuspended);
}

#[test]
fn admits_checks_the_agent_run_before_the_session() {
    let owner = RunScope {
        run_id: some("run-1"),
        session_id: some("s1"),
        ..RunScope::default()
    };
    assert_eq!(admits(&owner, &owner), Ok(()));
    let stranger = RunScope {
        run_id: some("run-2"),
        session_id: some("s2"),
        ..RunScope::default()
    };
    assert_eq!(admits(&owner, &stranger), Err(StoreError::OtherAgentRun));
    let other_session = RunScope {
        session_id: some("s2"),
        ..owner.clone()
    };
    assert_eq!(
        admits(&owner, &other_session),
        Err(StoreError::OtherSession)
    );
    // Unset owner fields are not checked; the caller may carry more than the owner.
    let caller = RunScope {
        session_key: some("agent:main:main"),
        agent_id: some("main"),
        ..owner.clone()
    };
    assert_eq!(admits(&owner, &caller), Ok(()));
    assert_eq!(admits(&RunScope::default(), &RunScope::default()), Ok(()));
}
