//! Parked runs through Redis (docs/benchmarks.md, "Runs through Redis"): two `CodeMode` fronts
//! on one real `redis-server` stand for two processes. `redis_park_idle_run` is an `exec` that
//! parks on `yield_control` (the run is sealed and written to Redis); `redis_restore_idle_run`
//! is the `wait` on the other front that claims the record, opens it, restores the snapshot into
//! a fresh VM, completes the run and removes the record. Without `redis-server` it prints why and
//! measures nothing.
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
use codemode_snapshot::{open, StateKeys};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"details": call.input})) })
    }
}

fn benches(c: &mut Criterion) {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(open(&server.url(0).parse().unwrap())).unwrap();
    let front = || {
        CodeMode::with_store(
            Runtime::global().unwrap(),
            store.clone(),
            StateKeys::new(vec![[7; 32]]),
        )
        .unwrap()
    };
    let (a, b) = (front(), front());
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

    c.bench_function("redis_park_idle_run", |bench| {
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
    c.bench_function("redis_restore_idle_run", |bench| {
        bench.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            for _ in 0..iterations {
                let parked = rt.block_on(a.exec(&env, &idle, &abort));
                let input = json!({"runId": parked.run_id().expect("waiting")});
                let started = Instant::now();
                let done = rt.block_on(b.wait_with(&env, &input, &abort));
                spent += started.elapsed();
                assert_eq!(done.status(), "completed");
                // A's copy is stale: drop it so A's table never fills.
                rt.block_on(a.reclaim_stale());
            }
            spent
        })
    });
}

criterion_group!(store, benches);
criterion_main!(store);
