//! Parked runs through each run store backend (docs/benchmarks.md, "Runs through Redis"), in
//! one run so the figures compare: `memory` (the default, one `CodeMode` front: the run stays in
//! the live table), `dir:` (two fronts on one directory) and `redis://` (two fronts on one real
//! `redis-server`, started here); two fronts stand for two processes.
//!
//! - `<backend>_park_idle_run`: an `exec` that parks on `yield_control` (with `dir:` and Redis
//!   the run is sealed and written to the store).
//! - `<backend>_restore_idle_run`: the `wait` that resumes it. With `memory` it is the same
//!   front; with `dir:` and Redis the other front, which claims the record, opens the seal,
//!   restores the snapshot into a fresh VM, completes the run and writes its finished record.
//!
//! Without `redis-server` the Redis pair prints why and measures nothing; the others still run.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

#[path = "../../codemode-snapshot/tests/support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use codemode_snapshot::{open, RunStore, StateKeys, StateUrl};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"details": call.input})) })
    }
}

/// A front on `store` (`memory`: the default front, no records).
fn front(store: &Arc<dyn RunStore>) -> CodeMode {
    CodeMode::with_store(
        Runtime::global().unwrap(),
        store.clone(),
        StateKeys::new(vec![[7; 32]]),
    )
    .unwrap()
}

/// The `<label>_park_idle_run` and `<label>_restore_idle_run` benchmarks: parks on `a`,
/// resumes on `b` (the same front for `memory`).
fn park_and_restore(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    label: &str,
    a: &CodeMode,
    b: &CodeMode,
) {
    let catalog = Catalog::build(
        vec![ToolSpec::core("echo", "Echo the input.")],
        &SearchLimits::default(),
    )
    .unwrap();
    let scope = RunScope {
        session_key: Some("mcp:stateless".into()),
        ..RunScope::default()
    };
    let env = RunEnv::new(
        codemode_config::resolve(&json!(true)).config,
        Arc::new(catalog),
        Arc::new(Echo),
        scope,
    );
    let abort = AbortHandle::new();
    let idle = json!({"code": "await yield_control(); return 1;"});

    c.bench_function(&format!("{label}_park_idle_run"), |bench| {
        bench.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                let parked = rt.block_on(a.exec(&env, &idle, &abort));
                spent += started.elapsed();
                let run_id = parked.run_id().expect("waiting").to_string();
                let done = rt.block_on(a.wait_with(&env, &json!({"runId": run_id}), &abort));
                assert_eq!(done.status(), "completed");
            }
            spent
        })
    });
    c.bench_function(&format!("{label}_restore_idle_run"), |bench| {
        bench.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            for _ in 0..iterations {
                let parked = rt.block_on(a.exec(&env, &idle, &abort));
                let input = json!({"runId": parked.run_id().expect("waiting")});
                let started = Instant::now();
                let done = rt.block_on(b.wait_with(&env, &input, &abort));
                spent += started.elapsed();
                assert_eq!(done.status(), "completed");
                // A's copy is stale when B resumed the run: drop it so A's table never fills.
                rt.block_on(a.reclaim_stale());
            }
            spent
        })
    });
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();

    let memory = rt.block_on(open(&StateUrl::Memory)).unwrap();
    let one = front(&memory);
    park_and_restore(c, &rt, "memory", &one, &one);

    let dir = tempfile::tempdir().unwrap();
    let url: StateUrl = format!("dir:{}", dir.path().display()).parse().unwrap();
    let store = rt.block_on(open(&url)).unwrap();
    park_and_restore(c, &rt, "dir", &front(&store), &front(&store));

    if let Some(server) = redis_server::RedisServer::start() {
        let store = rt.block_on(open(&server.url(0).parse().unwrap())).unwrap();
        park_and_restore(c, &rt, "redis", &front(&store), &front(&store));
    }
}

criterion_group!(store, benches);
criterion_main!(store);
