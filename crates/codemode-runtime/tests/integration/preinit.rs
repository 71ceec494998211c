//! The pre-initialised guest (docs/guest-abi.md, "Pre-initialisation"): a fresh VM from the
//! wizer-made module behaves like one initialised from scratch and like the image copy, per-run
//! state (the `Math.random` seed, the heap limit, the deadline) is still set per run, and the
//! module cache stores the pre-initialised module once and reuses it without running wizer.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{GuestReport, GuestState};
use codemode_runtime::{FreshVm, GuestSetup, Runtime, RuntimeOptions, VmError, VmLimits};
use common::{budget, deliver, start_on, value};
use serde_json::json;

const WAYS: [FreshVm; 3] = [FreshVm::PreInit, FreshVm::Image, FreshVm::Init];

fn start(rt: &Arc<Runtime>, how: FreshVm, code: &str, limits: &VmLimits) -> GuestReport {
    start_on(rt, how, code, limits).1
}

/// The `.cwasm` files in `dir`, by name.
fn cache_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

fn cached_runtime(dir: PathBuf) -> Arc<Runtime> {
    Runtime::new(RuntimeOptions {
        cache_dir: Some(dir),
        max_live_vms: 4,
        ..RuntimeOptions::default()
    })
    .expect("runtime")
}

#[test]
fn the_default_is_the_preinitialised_guest() {
    assert_eq!(RuntimeOptions::default().fresh_vm, FreshVm::PreInit);
}

#[test]
fn the_three_ways_give_the_same_guest() {
    let rt = Runtime::global().expect("runtime");
    let limits = VmLimits::default();
    let cases = [
        ("return 1 + 2", json!(3)),
        (
            "return [typeof tools, typeof ALL_TOOLS, typeof __cm, typeof globalThis.cm_init]",
            json!(["object", "object", "undefined", "undefined"]),
        ),
        (
            "const o = {}; for (let i = 0; i < 1000; i++) o['k' + i] = i; \
             return [Object.keys(o).length, JSON.stringify([1, 'x', null]), [3, 1, 2].sort()]",
            json!([1000, "[1,\"x\",null]", [1, 2, 3]]),
        ),
        (
            "try { null.x } catch (e) { return [e instanceof TypeError, e.constructor.name] }",
            json!([true, "TypeError"]),
        ),
        (
            "let n = 0; await Promise.all([1, 2, 3].map(async (x) => { n += x })); return n",
            json!(6),
        ),
    ];
    for (code, expected) in &cases {
        for how in WAYS {
            assert_eq!(
                value(start(&rt, how, code, &limits)),
                *expected,
                "{how:?}: {code}"
            );
        }
    }
    // A bridge request and its delivery, each way.
    for how in WAYS {
        let (mut vm, r) = start_on(
            &rt,
            how,
            "const v = await tools.call('x', {a: 1}); return v + 1;",
            &limits,
        );
        assert_eq!(r.state, GuestState::Pending, "{how:?}");
        assert_eq!(r.requests.len(), 1, "{how:?}");
        assert_eq!(r.requests[0].id, "bridge:call:1", "{how:?}");
        assert_eq!(r.requests[0].args, json!({"id": "x", "input": {"a": 1}}));
        let r = deliver(&mut vm, "bridge:call:1", Ok(json!(41))).unwrap();
        assert_eq!(
            r.state,
            GuestState::Completed { value: json!(42) },
            "{how:?}"
        );
    }
}

#[test]
fn math_random_is_seeded_per_run_not_by_the_module() {
    let rt = Runtime::global().expect("runtime");
    let limits = VmLimits::default();
    let draws: Vec<serde_json::Value> = (0..8)
        .map(|_| {
            value(start(
                &rt,
                FreshVm::PreInit,
                "return Math.random()",
                &limits,
            ))
        })
        .collect();
    let distinct: std::collections::BTreeSet<String> =
        draws.iter().map(|v| v.to_string()).collect();
    assert_eq!(distinct.len(), 8, "{draws:?}");

    // The seed comes from the VM's own random source at `cm_start`: the same source gives the
    // same draw in every pre-initialised VM (and the same as the image copy, which runs no guest
    // code before `cm_start` either); another source gives another draw.
    let seeded = |bytes: Vec<u8>| {
        Runtime::new(RuntimeOptions {
            deterministic_random: Some(bytes),
            max_live_vms: 4,
            ..RuntimeOptions::default()
        })
        .expect("runtime")
    };
    let a = seeded((0u8..64).collect());
    let b = seeded((100u8..164).collect());
    let draw = |rt: &Arc<Runtime>, how| {
        value(start(
            rt,
            how,
            "return [Math.random(), Math.random()]",
            &limits,
        ))
    };
    let first = draw(&a, FreshVm::PreInit);
    assert_eq!(draw(&a, FreshVm::PreInit), first);
    assert_eq!(draw(&a, FreshVm::Image), first);
    assert_ne!(draw(&b, FreshVm::PreInit), first);
    assert_ne!(first[0], first[1]);
}

#[test]
fn per_run_limits_hold_on_the_preinitialised_guest() {
    let rt = Runtime::global().expect("runtime");
    let with_heap = |bytes: u64| VmLimits {
        memory_limit_bytes: bytes,
        ..VmLimits::default()
    };
    // The module was initialised with the default 64 MiB heap limit; `cm_start` applies the
    // run's own, smaller or larger.
    let small = with_heap(8 * 1024 * 1024);
    let r = start(
        &rt,
        FreshVm::PreInit,
        "return new ArrayBuffer(12 * 1024 * 1024).byteLength",
        &small,
    );
    match r.state {
        GuestState::Failed { error } => assert!(
            error.starts_with("RangeError: ") || error.starts_with("InternalError: out of memory"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }
    let large = with_heap(256 * 1024 * 1024);
    assert_eq!(
        value(start(
            &rt,
            FreshVm::PreInit,
            "return new ArrayBuffer(100 * 1024 * 1024).byteLength",
            &large,
        )),
        json!(100 * 1024 * 1024)
    );
    // The same 100 MiB is refused under the default limit.
    let r = start(
        &rt,
        FreshVm::PreInit,
        "return new ArrayBuffer(100 * 1024 * 1024).byteLength",
        &VmLimits::default(),
    );
    assert!(matches!(r.state, GuestState::Failed { .. }), "{r:?}");

    // The deadline.
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm_with(&limits, FreshVm::PreInit).unwrap();
    let started = std::time::Instant::now();
    let r = vm.start("while (true) {}", r#"{"tools":[]}"#, &limits, &budget(100));
    assert_eq!(r, Err(VmError::Timeout));
    assert!(started.elapsed() < Duration::from_millis(100 + 250 + 200));
    assert!(vm.is_poisoned());
}

#[test]
fn snapshots_of_the_preinitialised_guest_restore() {
    let rt = Runtime::global().expect("runtime");
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm_with(&limits, FreshVm::PreInit).unwrap();
    let r = vm
        .start(
            "const big = 'y'.repeat(100000); const v = await tools.call('x', {}); return [v, big.length];",
            r#"{"tools":[]}"#,
            &limits,
            &budget(5000),
        )
        .unwrap();
    assert_eq!(r.state, GuestState::Pending);
    let snapshot = vm.snapshot().unwrap();
    for answer in [1, 2] {
        let mut restored = rt.restore(&snapshot, &limits).unwrap();
        let r = deliver(&mut restored, "bridge:call:1", Ok(json!(answer))).unwrap();
        assert_eq!(
            r.state,
            GuestState::Completed {
                value: json!([answer, 100000])
            }
        );
    }
}

#[test]
fn the_cache_stores_the_preinitialised_module_once_and_reuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let first = cached_runtime(dir.path().to_path_buf());
    assert_eq!(first.guest_setup(), GuestSetup::Preinitialised);
    let files = cache_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    // guest-<16 hex>-preinit-<16 hex>-wasmtime-48.0.8-<16 hex>.cm2.cwasm
    let name = &files[0];
    let parts: Vec<&str> = name.trim_end_matches(".cm2.cwasm").split('-').collect();
    assert_eq!(parts.len(), 7, "{name}");
    assert_eq!(
        (parts[0], parts[2], parts[4], parts[5]),
        ("guest", "preinit", "wasmtime", "48.0.8"),
        "{name}"
    );
    assert_eq!(
        parts[1],
        &codemode_runtime::GUEST_SHA256.trim()[..16],
        "{name}"
    );
    for hex in [parts[3], parts[6]] {
        assert!(
            hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}"
        );
    }
    let inode = std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir.path().join(name)).unwrap());

    // A second runtime on the same directory loads it: no wizer, and the same image.
    let second = cached_runtime(dir.path().to_path_buf());
    assert_eq!(second.guest_setup(), GuestSetup::Cached);
    assert_eq!(second.image_bytes(), first.image_bytes());
    assert_eq!(cache_files(dir.path()), files);
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir.path().join(name)).unwrap()),
        inode
    );
    let limits = VmLimits::default();
    for rt in [&first, &second] {
        assert_eq!(
            value(start(rt, FreshVm::PreInit, "return 1 + 2", &limits)),
            json!(3)
        );
    }

    // The raw guest is compiled (and cached) only once a way that needs it is used.
    assert_eq!(
        value(start(&second, FreshVm::Init, "return 1 + 2", &limits)),
        json!(3)
    );
    let after = cache_files(dir.path());
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.contains(name), "{after:?}");
    let raw = after.iter().find(|n| *n != name).unwrap();
    assert!(raw.starts_with(&format!(
        "guest-{}-wasmtime-48.0.8-",
        &codemode_runtime::GUEST_SHA256.trim()[..16]
    )));

    // Without a cache directory, every runtime pre-initialises in memory.
    let uncached = Runtime::new(RuntimeOptions {
        cache_dir: None,
        max_live_vms: 2,
        ..RuntimeOptions::default()
    })
    .expect("runtime");
    assert_eq!(uncached.guest_setup(), GuestSetup::Preinitialised);
    assert_eq!(uncached.image_bytes(), first.image_bytes());
    assert_eq!(
        value(start(&uncached, FreshVm::PreInit, "return 1 + 2", &limits)),
        json!(3)
    );
}
