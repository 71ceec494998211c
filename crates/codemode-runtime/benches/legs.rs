//! Leg threads (issue 17 item 3, docs/benchmarks.md "Leg threads"): `run_leg` of a trivial
//! closure on a fresh thread per leg ([`LegThreads::Fresh`], the old path) and on a pool worker
//! ([`LegThreads::Pool`]), side by side in one run, from a current-thread tokio runtime as a
//! session drives it; plus four concurrent legs from a multi-thread runtime.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use codemode_runtime::{run_leg_with, LegThreads};
use criterion::{criterion_group, criterion_main, Criterion};

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("run_leg_trivial");
    for (name, threads) in [("fresh", LegThreads::Fresh), ("pool", LegThreads::Pool)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(run_leg_with(threads, || std::hint::black_box(1 + 2)))
                    .unwrap()
            })
        });
    }
    group.finish();

    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("run_leg_trivial_x4_concurrent");
    for (name, threads) in [("fresh", LegThreads::Fresh), ("pool", LegThreads::Pool)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                multi.block_on(async {
                    let legs: Vec<_> = (0..4)
                        .map(|i| {
                            tokio::spawn(run_leg_with(threads, move || std::hint::black_box(i)))
                        })
                        .collect();
                    let mut sum = 0;
                    for leg in legs {
                        sum += leg.await.unwrap().unwrap();
                    }
                    sum
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = group;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(group);
