//! Facade benchmarks (docs/benchmarks.md): a trivial `exec`, and an `exec` making ten sequential
//! tool calls that all settle inside the deadline (auto-drain).
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, RunEnv};
use codemode_runtime::{AbortHandle, LegThreads, Runtime};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"details": call.input})) })
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cm = CodeMode::new(Runtime::global().unwrap());
    let catalog = Catalog::build(
        vec![ToolSpec::core("echo", "Echo the input.")],
        &SearchLimits::default(),
    )
    .unwrap();
    let config = codemode_config::resolve(&json!(true)).config;
    let env = RunEnv::new(
        config,
        Arc::new(catalog),
        Arc::new(Echo),
        RunScope::default(),
    );
    let abort = AbortHandle::new();

    let trivial = json!({"code": "return 1 + 2"});
    c.bench_function("exec_trivial", |b| {
        b.iter(|| rt.block_on(cm.exec(&env, &trivial, &abort)))
    });
    // The same on a fresh leg thread per leg, the path before the leg pool (docs/benchmarks.md
    // "Leg threads"), side by side in this run.
    codemode_runtime::set_leg_threads(LegThreads::Fresh);
    c.bench_function("exec_trivial_fresh_leg_threads", |b| {
        b.iter(|| rt.block_on(cm.exec(&env, &trivial, &abort)))
    });
    codemode_runtime::set_leg_threads(LegThreads::Pool);
    let ten = json!({"code": "let n = 0; for (let i = 0; i < 10; i++) n += (await tools.echo({ i })).i; return n;"});
    c.bench_function("exec_10_sequential_calls", |b| {
        b.iter(|| {
            let r = rt.block_on(cm.exec(&env, &ten, &abort));
            assert_eq!(r.status(), "completed");
            r
        })
    });
    let hundred = json!({"code": "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.echo({ i }))); return r.length;"});
    let env128 = RunEnv::new(
        codemode_config::resolve(&json!({"enabled": true, "maxPendingToolCalls": 128})).config,
        env.catalog.clone(),
        env.executor.clone(),
        RunScope::default(),
    );
    c.bench_function("exec_100_concurrent_calls", |b| {
        b.iter(|| {
            let r = rt.block_on(cm.exec(&env128, &hundred, &abort));
            assert_eq!(r.status(), "completed");
            r
        })
    });
    let yielding = json!({"code": "await yield_control('pause'); return 1;"});
    c.bench_function("park_and_wait_round_trip", |b| {
        b.iter(|| {
            rt.block_on(async {
                let parked = cm.exec(&env, &yielding, &abort).await;
                let run_id = parked.run_id().expect("waiting").to_string();
                let done = cm.wait(&env.scope, &json!({"runId": run_id}), &abort).await;
                assert_eq!(done.status(), "completed");
                done
            })
        })
    });
    let ts = json!({"code": "const xs: number[] = [1, 2, 3]; return xs.map((x: number) => x * 2);", "language": "typescript"});
    c.bench_function("exec_typescript", |b| {
        b.iter(|| rt.block_on(cm.exec(&env, &ts, &abort)))
    });
}

criterion_group! {
    name = group;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(group);
