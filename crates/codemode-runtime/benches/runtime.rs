//! Runtime benchmarks (docs/benchmarks.md): fresh VM from the pre-initialised module vs copying
//! the image vs from scratch, a trivial cell each way, a warm VM against a new instance, an
//! allocation-heavy cell, and snapshot + restore of a suspended VM.

// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

#[macro_use]
mod support;

use std::time::Duration;

use codemode_bridge::Delivery;
use codemode_runtime::{AbortHandle, FreshVm, LegBudget, Runtime, RuntimeOptions, VmLimits};
use criterion::Criterion;
use serde_json::json;

fn budget() -> LegBudget {
    LegBudget::new(Duration::from_secs(10), AbortHandle::new())
}

fn benches(c: &mut Criterion) {
    let rt = Runtime::global().expect("runtime");
    let limits = VmLimits::default();
    let ctx = r#"{"tools":[]}"#;

    // Runs on a leg-sized thread, as the facade does.
    let mut group = c.benchmark_group("fresh_vm");
    group.bench_function("preinit", |b| {
        b.iter(|| rt.fresh_vm_with(&limits, FreshVm::PreInit).unwrap())
    });
    group.bench_function("image", |b| {
        b.iter(|| rt.fresh_vm_with(&limits, FreshVm::Image).unwrap())
    });
    group.bench_function("init", |b| {
        b.iter(|| rt.fresh_vm_with(&limits, FreshVm::Init).unwrap())
    });
    group.finish();

    // A fresh VM plus `return 1 + 2`, each way (the default is `preinit`).
    let mut group = c.benchmark_group("trivial_cell");
    for (name, how) in [
        ("preinit", FreshVm::PreInit),
        ("image", FreshVm::Image),
        ("init", FreshVm::Init),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut vm = rt.fresh_vm_with(&limits, how).unwrap();
                vm.start("return 1 + 2", ctx, &limits, &budget()).unwrap()
            })
        });
    }
    group.finish();

    // `return 1 + 2` in a warm VM reset in place against a new instance per run (reuse off):
    // docs/architecture.md, "Warm VMs".
    let cold = Runtime::new(RuntimeOptions {
        warm_vms: 0,
        ..RuntimeOptions::default()
    })
    .expect("runtime");
    let mut group = c.benchmark_group("warm");
    for (name, rt) in [("reused", &rt), ("new_instance", &cold)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut vm = rt.fresh_vm(&limits).unwrap();
                vm.start("return 1 + 2", ctx, &limits, &budget()).unwrap()
            })
        });
    }
    group.finish();

    // Allocation-heavy: 100,000 small objects through the guest's QuickJS allocator.
    c.bench_function("alloc_cell", |b| {
        b.iter(|| {
            let mut vm = rt.fresh_vm(&limits).unwrap();
            vm.start(
                "const a = []; for (let i = 0; i < 100000; i++) a.push({i, s: 'x' + i}); return a.length;",
                ctx,
                &limits,
                &budget(),
            )
            .unwrap()
        })
    });

    let mut vm = rt.fresh_vm(&limits).unwrap();
    vm.start(
        "const v = await tools.call('x', {}); return v;",
        ctx,
        &limits,
        &budget(),
    )
    .unwrap();
    let snapshot = vm.snapshot().unwrap();
    println!(
        "snapshot: {} bytes stored, {} bytes of memory",
        snapshot.stored_bytes(),
        snapshot.memory_bytes()
    );
    let mut group = c.benchmark_group("snapshot");
    group.bench_function("take", |b| b.iter(|| vm.snapshot().unwrap()));
    group.bench_function("restore_and_deliver", |b| {
        b.iter(|| {
            let mut vm = rt.restore(&snapshot, &limits).unwrap();
            vm.deliver(
                &Delivery {
                    id: "bridge:call:1".into(),
                    outcome: Ok(json!(1)),
                },
                &budget(),
            )
            .unwrap()
        })
    });
    group.finish();
}

leg_stack_benches!(benches, 30, 3);
