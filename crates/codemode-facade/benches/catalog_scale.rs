//! Exec cost against catalog size (docs/benchmarks.md, "Catalog scale"; issue 17 item 2): a
//! trivial `exec` (`return 1 + 2`), an `exec` making one convenience call, and one reading
//! `ALL_TOOLS`, at 10, 100, 1,000 and 10,000 cataloged tools, with the catalog installed lazily
//! (the default: one run context per catalog, read by the guest on first use) and eagerly (the
//! path before it: the whole context built on the host and installed by `setup` for every exec,
//! `RunEnv::install_catalog_eagerly`), side by side in one run.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"details": call.input})) })
    }
}

/// `n` core tools `tool_0` … with a one-line description and a small input schema each (about
/// 230 bytes of compact entry per tool in `ALL_TOOLS`).
fn catalog(n: usize) -> Arc<Catalog> {
    let specs = (0..n)
        .map(|i| {
            ToolSpec::core(format!("tool_{i}"), format!("Does task number {i} for the agent.")).with_parameters(json!({
                "type": "object",
                "properties": {"x": {"type": "number", "description": "The value."}, "label": {"type": "string"}},
                "required": ["x"]
            }))
        })
        .collect();
    Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap())
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cm = CodeMode::new(Runtime::global().unwrap());
    let config = codemode_config::resolve(&json!(true)).config;
    let abort = AbortHandle::new();
    let programs: [(&str, Value, Value); 3] = [
        ("trivial", json!({"code": "return 1 + 2"}), json!(3)),
        (
            "one_call",
            json!({"code": "return (await tools.tool_0({ x: 1 })).x"}),
            json!(1),
        ),
        (
            "all_tools_length",
            json!({"code": "return ALL_TOOLS.length > 0"}),
            json!(true),
        ),
    ];
    for (name, input, expected) in &programs {
        let mut group = c.benchmark_group(format!("catalog_scale_{name}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for n in [10usize, 100, 1_000, 10_000] {
            let lazy = RunEnv::new(
                config.clone(),
                catalog(n),
                Arc::new(Echo),
                RunScope::default(),
            );
            let mut eager = lazy.clone();
            eager.install_catalog_eagerly = true;
            for (mode, env) in [("eager", &eager), ("lazy", &lazy)] {
                group.bench_with_input(BenchmarkId::new(mode, n), &n, |b, _| {
                    b.iter(|| {
                        let r = rt.block_on(cm.exec(env, input, &abort));
                        match &r {
                            codemode_facade::CodeModeResult::Completed { value, .. } => {
                                assert_eq!(value, expected)
                            }
                            other => panic!("{name} at {n} tools: {}", other.status()),
                        }
                        r
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(catalog_scale, benches);
criterion_main!(catalog_scale);
