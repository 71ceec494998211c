//! Store overhead per `wait` round trip: resume + repark of a parked run, and the full
//! reserve → park → resume → finish life of a run, with 63 other runs parked (the production cap
//! is 64).
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use codemode_snapshot::{RunScope, SnapshotStore, MAX_SUSPENDED_RUNS};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

const TTL: Duration = Duration::from_secs(900);

fn owner() -> RunScope {
    RunScope {
        run_id: Some("run-code-mode".into()),
        session_id: Some("session-main".into()),
        session_key: Some("agent:main:main".into()),
        agent_id: None,
    }
}

fn store_with_neighbours() -> SnapshotStore<Vec<u8>> {
    let store = SnapshotStore::new(MAX_SUSPENDED_RUNS);
    for i in 0..MAX_SUSPENDED_RUNS - 1 {
        store
            .reserve()
            .unwrap()
            .park(format!("cm_{i}"), owner(), TTL, vec![0; 64])
            .unwrap();
    }
    store
}

fn bench(c: &mut Criterion) {
    let caller = owner();

    let store = store_with_neighbours();
    c.bench_function("resume_repark", |b| {
        b.iter(|| {
            let guard = store.resume(black_box("cm_7"), &caller).unwrap();
            guard.repark(TTL).unwrap();
        })
    });

    let store = store_with_neighbours();
    c.bench_function("reserve_park_resume_finish", |b| {
        b.iter(|| {
            let slot = store.reserve().unwrap();
            slot.park("cm_bench".into(), caller.clone(), TTL, vec![0; 64])
                .unwrap();
            let guard = store.resume("cm_bench", &caller).unwrap();
            black_box(guard.finish());
        })
    });

    let store = store_with_neighbours();
    c.bench_function("purge_expired_none_expired", |b| {
        b.iter(|| black_box(store.purge_expired()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
