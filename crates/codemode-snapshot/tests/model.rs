//! Model-based property test: random sequences of store operations (no time passing) give the
//! same results, counts and payload drops as a straightforward model of docs/contract/lifecycle.md#s5-3/docs/contract/lifecycle.md#s5-4.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use codemode_snapshot::{Reservation, ResumeGuard, RunScope, SnapshotStore, StoreError};
use proptest::prelude::*;

struct Payload {
    value: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

const CAP: usize = 4;
const IDS: usize = 5;
const LONG: Duration = Duration::from_secs(3600);

/// An owner or caller: (run id, session id, session key, agent id).
type Scope = (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
);

const SCOPES: [Scope; 5] = [
    (None, None, None, None),
    (Some("r1"), Some("s1"), Some("k1"), None),
    (Some("r1"), Some("s2"), Some("k1"), None),
    (Some("r2"), Some("s1"), Some("k1"), Some("a")),
    (Some("r1"), Some("s1"), Some("k1"), Some("a")),
];

fn owner(i: usize) -> RunScope {
    let (r, s, k, a) = SCOPES[i];
    let f = |x: Option<&str>| x.map(str::to_string);
    RunScope {
        run_id: f(r),
        session_id: f(s),
        session_key: f(k),
        agent_id: f(a),
    }
}

/// The spec's scope rule, written out independently of `codemode_snapshot::admits`.
fn model_scope(owner: usize, caller: usize) -> Result<(), StoreError> {
    let (o, c) = (SCOPES[owner], SCOPES[caller]);
    if o.0.is_some() && o.0 != c.0 {
        return Err(StoreError::OtherAgentRun);
    }
    if (o.1.is_some() && o.1 != c.1)
        || (o.2.is_some() && o.2 != c.2)
        || (o.3.is_some() && o.3 != c.3)
    {
        return Err(StoreError::OtherSession);
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    Reserve,
    DropReservation(usize),
    Park {
        reservation: usize,
        id: usize,
        owner: usize,
    },
    ParkUnrepresentable(usize),
    Resume {
        id: usize,
        caller: usize,
    },
    Repark(usize),
    Finish(usize),
    DropGuard(usize),
    Remove(usize),
    Clear,
    Purge,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Reserve),
        1 => any::<usize>().prop_map(Op::DropReservation),
        4 => (any::<usize>(), 0..IDS, 0..SCOPES.len())
            .prop_map(|(reservation, id, owner)| Op::Park { reservation, id, owner }),
        1 => any::<usize>().prop_map(Op::ParkUnrepresentable),
        5 => (0..IDS, 0..SCOPES.len()).prop_map(|(id, caller)| Op::Resume { id, caller }),
        2 => any::<usize>().prop_map(Op::Repark),
        2 => any::<usize>().prop_map(Op::Finish),
        2 => any::<usize>().prop_map(Op::DropGuard),
        1 => (0..IDS).prop_map(Op::Remove),
        1 => Just(Op::Clear),
        1 => Just(Op::Purge),
    ]
}

struct ModelRun {
    generation: u64,
    owner: usize,
    value: u64,
    resuming: bool,
}

struct Harness {
    store: SnapshotStore<Payload>,
    drops: Arc<AtomicUsize>,
    reservations: Vec<Reservation<Payload>>,
    /// Live guards with the model record they were taken from: (id, generation, value).
    guards: Vec<(ResumeGuard<Payload>, usize, u64, u64)>,
    runs: HashMap<usize, ModelRun>,
    dropped: usize,
    next_generation: u64,
    next_value: u64,
}

fn name(id: usize) -> String {
    format!("cm_{id}")
}

impl Harness {
    fn new() -> Self {
        Harness {
            store: SnapshotStore::new(CAP),
            drops: Arc::new(AtomicUsize::new(0)),
            reservations: Vec::new(),
            guards: Vec::new(),
            runs: HashMap::new(),
            dropped: 0,
            next_generation: 0,
            next_value: 0,
        }
    }

    fn payload(&mut self) -> Payload {
        self.next_value += 1;
        Payload {
            value: self.next_value,
            drops: self.drops.clone(),
        }
    }

    /// The model drops a run's payload unless a guard holds it.
    fn discard(&mut self, run: ModelRun) {
        if !run.resuming {
            self.dropped += 1;
        }
    }

    fn current(&self, id: usize, generation: u64) -> bool {
        self.runs
            .get(&id)
            .is_some_and(|r| r.generation == generation && r.resuming)
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Reserve => {
                let room = self.runs.len() + self.reservations.len() < CAP;
                match self.store.reserve() {
                    Ok(slot) => {
                        prop_assert!(room, "reserved past the cap");
                        self.reservations.push(slot);
                    }
                    Err(e) => {
                        prop_assert!(!room, "refused with room left");
                        prop_assert_eq!(e, StoreError::TooManySuspended);
                    }
                }
            }
            Op::DropReservation(i) => {
                if !self.reservations.is_empty() {
                    let n = self.reservations.len();
                    drop(self.reservations.remove(i % n));
                }
            }
            Op::Park {
                reservation,
                id,
                owner: who,
            } => {
                if self.reservations.is_empty() {
                    return Ok(());
                }
                let n = self.reservations.len();
                let slot = self.reservations.remove(reservation % n);
                let payload = self.payload();
                let value = payload.value;
                prop_assert!(slot.park(name(id), owner(who), LONG, payload).is_ok());
                self.next_generation += 1;
                let run = ModelRun {
                    generation: self.next_generation,
                    owner: who,
                    value,
                    resuming: false,
                };
                if let Some(old) = self.runs.insert(id, run) {
                    self.discard(old);
                }
            }
            Op::ParkUnrepresentable(i) => {
                if self.reservations.is_empty() {
                    return Ok(());
                }
                let n = self.reservations.len();
                let slot = self.reservations.remove(i % n);
                let payload = self.payload();
                let value = payload.value;
                let rejected = slot
                    .park(name(0), RunScope::default(), Duration::MAX, payload)
                    .unwrap_err();
                prop_assert_eq!(rejected.error, StoreError::ExpiryUnavailable);
                prop_assert_eq!(rejected.value.value, value);
                drop(rejected);
                self.dropped += 1;
            }
            Op::Resume { id, caller } => {
                let expected = match self.runs.get(&id) {
                    None => Err(StoreError::Unavailable),
                    Some(run) => model_scope(run.owner, caller).and(if run.resuming {
                        Err(StoreError::AlreadyResuming)
                    } else {
                        Ok((run.generation, run.value))
                    }),
                };
                match (self.store.resume(&name(id), &owner(caller)), expected) {
                    (Ok(guard), Ok((generation, value))) => {
                        prop_assert_eq!(guard.value, value);
                        prop_assert_eq!(guard.run_id(), name(id));
                        if let Some(run) = self.runs.get_mut(&id) {
                            run.resuming = true;
                        }
                        self.guards.push((guard, id, generation, value));
                    }
                    (Err(got), Err(want)) => prop_assert_eq!(got, want),
                    (got, want) => {
                        return Err(TestCaseError::fail(format!(
                            "resume {id} by {caller}: got {:?}, want {want:?}",
                            got.map(|g| g.value)
                        )))
                    }
                }
            }
            Op::Repark(i) => {
                if self.guards.is_empty() {
                    return Ok(());
                }
                let n = self.guards.len();
                let (guard, id, generation, _) = self.guards.remove(i % n);
                let attached = self.current(id, generation);
                match guard.repark(LONG) {
                    Ok(()) => {
                        prop_assert!(attached);
                        if let Some(run) = self.runs.get_mut(&id) {
                            run.resuming = false;
                        }
                    }
                    Err(rejected) => {
                        prop_assert!(!attached);
                        prop_assert_eq!(rejected.error, StoreError::Unavailable);
                        drop(rejected);
                        self.dropped += 1;
                    }
                }
            }
            Op::Finish(i) => {
                if self.guards.is_empty() {
                    return Ok(());
                }
                let n = self.guards.len();
                let (guard, id, generation, value) = self.guards.remove(i % n);
                if self.current(id, generation) {
                    self.runs.remove(&id);
                }
                let payload = guard.finish();
                prop_assert_eq!(payload.value, value);
                drop(payload);
                self.dropped += 1;
            }
            Op::DropGuard(i) => {
                if self.guards.is_empty() {
                    return Ok(());
                }
                let n = self.guards.len();
                let (guard, id, generation, _) = self.guards.remove(i % n);
                if self.current(id, generation) {
                    if let Some(run) = self.runs.get_mut(&id) {
                        run.resuming = false;
                    }
                } else {
                    self.dropped += 1;
                }
                drop(guard);
            }
            Op::Remove(id) => {
                let was = self.runs.remove(&id);
                prop_assert_eq!(self.store.remove(&name(id)), was.is_some());
                if let Some(run) = was {
                    self.discard(run);
                }
            }
            Op::Clear => {
                self.store.clear();
                let runs: Vec<ModelRun> = self.runs.drain().map(|(_, run)| run).collect();
                for run in runs {
                    self.discard(run);
                }
            }
            Op::Purge => prop_assert_eq!(self.store.purge_expired(), 0),
        }
        self.check()
    }

    fn check(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.store.len(), self.runs.len());
        prop_assert_eq!(self.store.reserved(), self.reservations.len());
        for id in 0..IDS {
            prop_assert_eq!(self.store.contains(&name(id)), self.runs.contains_key(&id));
        }
        prop_assert_eq!(self.drops.load(Ordering::SeqCst), self.dropped);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn store_matches_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut h = Harness::new();
        for op in ops {
            h.apply(op)?;
        }
        // Tear down: every payload is dropped exactly once and every slot comes back.
        h.guards.clear();
        h.reservations.clear();
        h.store.clear();
        prop_assert_eq!(h.store.len(), 0);
        prop_assert_eq!(h.store.reserved(), 0);
        prop_assert_eq!(h.drops.load(Ordering::SeqCst) as u64, h.next_value);
    }
}
