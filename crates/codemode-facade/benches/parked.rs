//! Idle parked runs (issue 26 item 3; docs/benchmarks.md, "Parked runs: memory and restore").
//! Prints two tables; not criterion (it measures memory, and each `wait` consumes its run).
//!
//! 1. **Memory.** For each count N (100, 1,000, 10,000), a new `CodeMode` with room for N parks
//!    N runs (`exec` of `await yield_control('pause'); return 1;`); RSS is read before and
//!    after (no `malloc_trim`: what the process really holds). Then [`RESUMED`] of them, the
//!    oldest, are resumed with `wait` one at a time (their VMs are no longer kept: they restore
//!    from the snapshot), and the medians of the parking `exec` and of the `wait` are reported.
//! 2. **Resume.** [`ROUNDS`] rounds alternating two runtimes, parked VMs kept alive off
//!    (`parked_vms: 0`) and on (the default): each round parks a run and resumes it at once;
//!    the medians of the `exec` and of the `wait`, side by side.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime, RuntimeOptions};
use serde_json::json;

#[path = "support/rss.rs"]
mod rss;

struct NoTools;

impl ToolExecutor for NoTools {
    fn execute(&self, _call: ToolCall) -> ToolFuture {
        Box::pin(async { Ok(json!({"content": []})) })
    }
}

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = codemode_config::resolve(&json!(true)).config;
    let catalog = Arc::new(
        Catalog::build(
            vec![ToolSpec::core("noop", "No-op.")],
            &SearchLimits::default(),
        )
        .unwrap(),
    );
    let env = RunEnv::new(config, catalog, Arc::new(NoTools), RunScope::default());
    let runtime = Runtime::global().unwrap();
    let park = json!({"code": "await yield_control('pause'); return 1;"});
    let abort = AbortHandle::new();

    // Warm-up: the runtime's pool, the warm VMs and the allocator's arenas.
    {
        let cm = CodeMode::new(runtime.clone());
        rt.block_on(async {
            for _ in 0..20 {
                let parked = cm.exec(&env, &park, &abort).await;
                let id = parked.run_id().expect("parked").to_string();
                let done = cm
                    .wait(&RunScope::default(), &json!({"runId": id}), &abort)
                    .await;
                assert!(matches!(done, CodeModeResult::Completed { .. }), "{done:?}");
            }
        });
    }

    println!("| parked runs | RSS before | RSS holding them | per run | exec that parks (median) | wait that resumes (median of {RESUMED}) |");
    println!("|---|---|---|---|---|---|");
    for count in [100usize, 1_000, 10_000] {
        let cm = CodeMode::new(runtime.clone()).with_suspended_cap(count);
        let before = rss::rss_kib();
        let mut ids = Vec::with_capacity(count);
        let mut parks = Vec::with_capacity(count);
        rt.block_on(async {
            for _ in 0..count {
                let t0 = Instant::now();
                let parked = cm.exec(&env, &park, &abort).await;
                parks.push(t0.elapsed().as_secs_f64() * 1e3);
                match parked.run_id() {
                    Some(id) => ids.push(id.to_string()),
                    None => panic!("run {} did not park: {parked:?}", ids.len()),
                }
            }
        });
        assert_eq!(cm.parked_runs(), count);
        let holding = rss::rss_kib();
        let mut waits = Vec::new();
        rt.block_on(async {
            for id in ids.iter().take(RESUMED) {
                let t0 = Instant::now();
                let done = cm
                    .wait(&RunScope::default(), &json!({"runId": id}), &abort)
                    .await;
                waits.push(t0.elapsed().as_secs_f64() * 1e3);
                match done {
                    CodeModeResult::Completed { value, .. } => assert_eq!(value, json!(1)),
                    other => panic!("wait did not complete: {other:?}"),
                }
            }
        });
        let per_run = (holding.saturating_sub(before)) as f64 * 1024.0 / count as f64;
        println!(
            "| {count} | {:.1} MiB | {:.1} MiB | {:.1} KB | {:.3} ms | {:.3} ms |",
            before as f64 / 1024.0,
            holding as f64 / 1024.0,
            per_run / 1000.0,
            median_ms(parks),
            median_ms(waits),
        );
        drop(cm);
    }

    println!();
    println!("| parked VMs kept alive | exec that parks (median of {ROUNDS}) | wait that resumes at once (median) |");
    println!("|---|---|---|");
    let off = Runtime::new(RuntimeOptions {
        parked_vms: 0,
        ..RuntimeOptions::default()
    })
    .unwrap();
    let fronts = [CodeMode::new(off), CodeMode::new(runtime.clone())];
    let mut parks: [Vec<f64>; 2] = Default::default();
    let mut waits: [Vec<f64>; 2] = Default::default();
    rt.block_on(async {
        for round in 0..ROUNDS + 20 {
            for k in 0..2 {
                let which = (round + k) % 2;
                let cm = &fronts[which];
                let t0 = Instant::now();
                let parked = cm.exec(&env, &park, &abort).await;
                let t1 = Instant::now();
                let id = parked.run_id().expect("parked").to_string();
                let done = cm
                    .wait(&RunScope::default(), &json!({"runId": id}), &abort)
                    .await;
                let t2 = Instant::now();
                assert!(matches!(done, CodeModeResult::Completed { .. }), "{done:?}");
                if round >= 20 {
                    parks[which].push((t1 - t0).as_secs_f64() * 1e3);
                    waits[which].push((t2 - t1).as_secs_f64() * 1e3);
                }
            }
        }
    });
    assert_eq!(fronts[0].runtime().parked_resumes(), 0);
    assert!(fronts[1].runtime().parked_resumes() >= ROUNDS as u64);
    for (which, label) in ["off (`parked_vms: 0`)", "on (default)"].iter().enumerate() {
        println!(
            "| {label} | {:.3} ms | {:.3} ms |",
            median_ms(std::mem::take(&mut parks[which])),
            median_ms(std::mem::take(&mut waits[which])),
        );
    }
}

/// Rounds of the side-by-side resume table (after 20 warm-up rounds).
const ROUNDS: usize = 300;

/// How many parked runs each count resumes for the `wait` figure.
const RESUMED: usize = 200;
