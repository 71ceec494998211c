//! Parking and resuming (issue 17 item 5, docs/benchmarks.md "Snapshots"): stored bytes and
//! capture / restore time of a parked run, for an idle run (`await yield_control()`) and runs
//! holding 1 MiB and 10 MiB of live heap across the yield, in the format before dirty pages
//! (`whole`: the region from the stack top XORed against the image) and dirty pages of 4 KiB
//! (the default) and 64 KiB, side by side in one run. Prints the stored sizes before the timings.

// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

#[macro_use]
mod support;

use std::time::Duration;

use codemode_bridge::GuestState;
use codemode_runtime::{AbortHandle, LegBudget, Runtime, SnapshotFormat, Vm, VmLimits};
use criterion::{BenchmarkId, Criterion};

const CTX: &str = r#"{"tools":[]}"#;

fn limits() -> VmLimits {
    VmLimits {
        memory_limit_bytes: 256 * 1024 * 1024,
        ..VmLimits::default()
    }
}

/// A VM parked on `yield_control()` holding `mib` MiB of live heap: a string of pseudo-random
/// printable characters (about 6.5 bits each, so zstd cannot shrink it much), kept across the
/// yield.
fn parked(rt: &std::sync::Arc<Runtime>, mib: usize) -> Vm {
    let limits = limits();
    let mut vm = rt.fresh_vm(&limits).expect("vm");
    let code = if mib == 0 {
        "await yield_control(); return 1;".to_string()
    } else {
        format!(
            "let x = 12345; const parts = [];
             for (let i = 0; i < {mib} * 256; i++) {{
               let s = '';
               for (let j = 0; j < 4096; j++) {{ x = (x * 69069 + 1) % 4294967296; s += String.fromCharCode(33 + (x >>> 16) % 90); }}
               parts.push(s);
             }}
             const keep = parts.join(''); parts.length = 0;
             await yield_control(); return keep.length;"
        )
    };
    let budget = LegBudget::new(Duration::from_secs(300), AbortHandle::new());
    let report = vm.start(&code, CTX, &limits, &budget).expect("start");
    assert_eq!(report.state, GuestState::Pending, "{report:?}");
    vm
}

const FORMATS: [(&str, SnapshotFormat); 3] = [
    ("whole", SnapshotFormat::WholeDelta),
    ("pages_4k", SnapshotFormat::DirtyPages { page_bytes: 4096 }),
    (
        "pages_64k",
        SnapshotFormat::DirtyPages { page_bytes: 65536 },
    ),
];

fn benches(c: &mut Criterion) {
    let rt = Runtime::global().expect("runtime");
    let limits = limits();
    let mut runs: Vec<(&str, Vm)> = [("idle", 0), ("heap_1mib", 1), ("heap_10mib", 10)]
        .into_iter()
        .map(|(name, mib)| (name, parked(&rt, mib)))
        .collect();
    println!("image: {} bytes from the stack top", rt.image_bytes());
    for (name, vm) in &mut runs {
        let sizes: Vec<String> = FORMATS
            .iter()
            .map(|(format_name, format)| {
                let snapshot = vm.snapshot_with(*format).expect("snapshot");
                format!(
                    "{format_name}: {} bytes stored, {} bytes of memory, {} pages",
                    snapshot.stored_bytes(),
                    snapshot.memory_bytes(),
                    snapshot.dirty_pages()
                )
            })
            .collect();
        println!("{name}: {}", sizes.join("; "));
    }
    for (name, vm) in &mut runs {
        let mut group = c.benchmark_group(format!("park_{name}"));
        for (format_name, format) in FORMATS {
            group.bench_function(BenchmarkId::new("capture", format_name), |b| {
                b.iter(|| vm.snapshot_with(format).expect("snapshot"))
            });
            let snapshot = vm.snapshot_with(format).expect("snapshot");
            group.bench_function(BenchmarkId::new("restore", format_name), |b| {
                b.iter(|| rt.restore(&snapshot, &limits).expect("restore"))
            });
        }
        group.finish();
    }
}

leg_stack_benches!(benches, 20, 2);
