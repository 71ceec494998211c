//! Runtime-level tests: the guest ABI, limits, snapshots. Exact values throughout.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{BridgeMethod, Delivery, GuestReport, GuestState, OutputItem};
use codemode_runtime::{AbortHandle, LegBudget, Runtime, Snapshot, Vm, VmError, VmLimits};
use common::{budget, deliver, runtime, start_on};
use serde_json::json;

fn start(code: &str) -> (Vm, Result<GuestReport, VmError>) {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).expect("vm");
    let report = vm.start(code, r#"{"tools":[]}"#, &limits, &budget(5000));
    (vm, report)
}

fn completed(code: &str) -> serde_json::Value {
    match start(code).1.expect("report").state {
        GuestState::Completed { value } => value,
        other => panic!("expected completed, got {other:?}"),
    }
}

fn failed(code: &str) -> String {
    match start(code).1.expect("report").state {
        GuestState::Failed { error } => error,
        other => panic!("expected failed, got {other:?}"),
    }
}

#[test]
fn values_and_null() {
    assert_eq!(completed("return 1+2"), json!(3));
    assert_eq!(completed("1+2;"), json!(null));
    assert_eq!(completed("return undefined"), json!(null));
    assert_eq!(
        completed("return {a: [1, 'x', null, true]}"),
        json!({"a": [1, "x", null, true]})
    );
    assert_eq!(
        completed("const x = await Promise.resolve(41); return x + 1;"),
        json!(42)
    );
    assert_eq!(
        completed("return [typeof require, typeof process, typeof module]"),
        json!(["undefined", "undefined", "undefined"])
    );
    assert_eq!(completed("return typeof eval"), json!("function"));
    assert_eq!(
        completed("return new Date(0).getHours() + new Date(0).getTimezoneOffset()"),
        json!(0)
    );
}

#[test]
fn errors() {
    let e = failed("throw new Error('boom')");
    assert!(e.starts_with("Error: boom\n    at "), "{e}");
    let e = failed("const x = ;");
    assert!(e.starts_with("SyntaxError: unexpected token"), "{e}");
    let e = failed("return missingFn();");
    assert!(
        e.starts_with("ReferenceError: missingFn is not defined"),
        "{e}"
    );
    assert!(!e.starts_with("at "));
}

#[test]
fn deep_recursion_is_a_catchable_range_error() {
    let v = completed(
        "let depth = 0; function f() { depth++; return f(); } \
         try { f(); } catch (e) { return [e instanceof RangeError, e.message, depth > 5000]; }",
    );
    assert_eq!(v, json!([true, "Maximum call stack size exceeded", true]));
    // The next VM is healthy.
    assert_eq!(completed("return 7"), json!(7));
}

#[test]
fn infinite_loop_times_out_and_next_vm_works() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let started = std::time::Instant::now();
    let r = vm.start("while(true){}", r#"{"tools":[]}"#, &limits, &budget(100));
    assert_eq!(r, Err(VmError::Timeout));
    assert!(started.elapsed() < Duration::from_millis(100 + 250 + 200));
    assert!(vm.is_poisoned());
    assert_eq!(completed("return 'ok'"), json!("ok"));
}

#[test]
fn abort_stops_the_guest() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let abort = AbortHandle::new();
    let b = LegBudget::new(Duration::from_secs(30), abort.clone());
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        abort.abort();
    });
    let r = vm.start("while(true){}", r#"{"tools":[]}"#, &limits, &b);
    t.join().unwrap();
    assert_eq!(r, Err(VmError::Aborted));
}

#[test]
fn memory_bomb_is_a_clean_failure() {
    let rt = runtime();
    let limits = VmLimits {
        memory_limit_bytes: 8 * 1024 * 1024,
        ..VmLimits::default()
    };
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let r = vm
        .start(
            "const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
            r#"{"tools":[]}"#,
            &limits,
            &budget(10000),
        )
        .unwrap();
    match r.state {
        GuestState::Failed { error } => assert!(error.contains("out of memory"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(completed("return 'alive'"), json!("alive"));
}

/// Runs `code` in a fresh VM with a QuickJS heap limit of `limit` bytes.
fn start_with_heap(code: &str, limit: u64) -> GuestState {
    let limits = VmLimits {
        memory_limit_bytes: limit,
        ..VmLimits::default()
    };
    let mut vm = runtime().fresh_vm(&limits).unwrap();
    vm.start(code, r#"{"tools":[]}"#, &limits, &budget(20000))
        .unwrap()
        .state
}

/// docs/contract/lifecycle.md#s5-7 "Memory": a heap filled with small objects (where QuickJS could not even
/// build its error object and threw `null`) raises the catchable QuickJS error, and uncaught it
/// is `InternalError: out of memory` with its backtrace.
#[test]
fn heap_exhaustion_by_small_objects_is_the_quickjs_error() {
    let small = "const a = []; while (true) a.push({x: a.length, y: 's' + a.length});";
    match start_with_heap(small, 8 * 1024 * 1024) {
        GuestState::Failed { error } => assert!(
            error.starts_with("InternalError: out of memory\n    at "),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }
    let caught = "const a = []; \
        try { while (true) a.push({x: a.length}); } \
        catch (e) { const filled = a.length > 10000; a.length = 0; \
          return [e instanceof InternalError, e.message, filled, [1, 2, 3].map(x => x * 2)]; }";
    match start_with_heap(caught, 8 * 1024 * 1024) {
        GuestState::Completed { value } => assert_eq!(
            value,
            json!([true, "out of memory", true, [2, 4, 6]]),
            "the error is catchable and the heap usable again once freed"
        ),
        other => panic!("{other:?}"),
    }
}

/// The limit is `memoryLimitBytes`, not more: 6 MiB fit in an 8 MiB heap, 12 MiB do not.
#[test]
fn heap_limit_is_enforced() {
    let limit = 8 * 1024 * 1024;
    match start_with_heap("return new ArrayBuffer(6 * 1024 * 1024).byteLength;", limit) {
        GuestState::Completed { value } => assert_eq!(value, json!(6 * 1024 * 1024)),
        other => panic!("{other:?}"),
    }
    match start_with_heap(
        "return new ArrayBuffer(12 * 1024 * 1024).byteLength;",
        limit,
    ) {
        GuestState::Failed { error } => assert!(
            error.starts_with("RangeError: ") || error.starts_with("InternalError: out of memory"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }
}

/// A delivered result that does not fit in the heap rejects the awaiting promise with the
/// catchable QuickJS error (docs/contract/lifecycle.md#s5-7) instead of resolving to `null`.
#[test]
fn a_result_too_big_for_the_heap_is_a_catchable_error() {
    let limits = VmLimits {
        memory_limit_bytes: 8 * 1024 * 1024,
        ..VmLimits::default()
    };
    let mut vm = runtime().fresh_vm(&limits).unwrap();
    let code = "const keep = []; \
        try { for (;;) keep.push(await tools.callValue('openclaw:core:big', {})); } \
        catch (e) { const n = keep.length; keep.length = 0; return [String(e), n]; }";
    let ctx = r#"{"tools":[{"id":"openclaw:core:big","name":"big","description":"Big.","source":"openclaw","input":"unknown"}]}"#;
    // Under a quarter of the heap each (the host refuses larger deliveries outright).
    let big = json!("x".repeat(1536 * 1024));
    let mut r = vm.start(code, ctx, &limits, &budget(20000)).unwrap();
    let mut n = 0;
    while r.state == GuestState::Pending {
        n += 1;
        assert!(n < 10, "the heap never filled");
        let id = r.requests[0].id.clone();
        r = vm
            .deliver(
                &Delivery {
                    id,
                    outcome: Ok(big.clone()),
                },
                &budget(20000),
            )
            .unwrap();
    }
    match r.state {
        GuestState::Completed { value } => {
            assert_eq!(value[0], "InternalError: out of memory");
            assert_eq!(
                value[1],
                json!(n - 1),
                "every result before the failing one was kept"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bridge_requests_deliveries_and_output() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let ctx = r#"{"tools":[{"id":"openclaw:core:echo","name":"echo","description":"Echo.","source":"openclaw","input":"unknown"}]}"#;
    let r = vm
        .start(
            "text('before'); const [a, b] = await Promise.all([tools.callValue('openclaw:core:echo', {v: 1}), tools.echo({v: 2})]); json({a, b}); return a + b;",
            ctx,
            &limits,
            &budget(5000),
        )
        .unwrap();
    assert_eq!(r.state, GuestState::Pending);
    assert_eq!(
        r.output,
        vec![OutputItem::Text {
            text: "before".into()
        }]
    );
    let ids: Vec<_> = r
        .requests
        .iter()
        .map(|q| (q.id.as_str(), q.method, q.args.clone()))
        .collect();
    assert_eq!(
        ids,
        vec![
            (
                "bridge:callValue:1",
                BridgeMethod::CallValue,
                json!({"id": "openclaw:core:echo", "input": {"v": 1}})
            ),
            (
                "bridge:callValue:2",
                BridgeMethod::CallValue,
                json!({"id": "openclaw:core:echo", "input": {"v": 2}})
            ),
        ]
    );
    // Deliver out of order.
    let r = deliver(&mut vm, "bridge:callValue:2", Ok(json!(20))).unwrap();
    assert_eq!(r.state, GuestState::Pending);
    assert_eq!(r.outstanding, 1);
    let r = deliver(&mut vm, "bridge:callValue:1", Ok(json!(1))).unwrap();
    assert_eq!(r.state, GuestState::Completed { value: json!(21) });
    assert_eq!(
        r.output,
        vec![OutputItem::Json {
            value: json!({"a": 1, "b": 20})
        }]
    );
    assert_eq!(
        deliver(&mut vm, "bridge:callValue:1", Ok(json!(1))),
        Err(VmError::UnknownRequest("bridge:callValue:1".into()))
    );
}

#[test]
fn snapshot_restores_twice_with_different_answers() {
    let (mut vm, r) = start(
        "const before = 'kept'; try { const v = await tools.call('x', {}); return [before, v]; } catch (e) { return [before, e.message]; }",
    );
    assert_eq!(r.unwrap().state, GuestState::Pending);
    let snap = vm.snapshot().unwrap();
    drop(vm);
    let bytes = snap.to_bytes();
    assert_eq!(bytes.len(), snap.stored_bytes());
    let snap = Snapshot::from_bytes(&bytes).unwrap();
    assert_eq!(snap.pending().len(), 1);

    let (rt, limits) = (runtime(), VmLimits::default());
    let mut a = rt.restore(&snap, &limits).unwrap();
    let ra = deliver(&mut a, "bridge:call:1", Ok(json!({"n": 1}))).unwrap();
    assert_eq!(
        ra.state,
        GuestState::Completed {
            value: json!(["kept", {"n": 1}])
        }
    );

    let mut b = rt.restore(&snap, &limits).unwrap();
    let rb = deliver(&mut b, "bridge:call:1", Err("fast failure".into())).unwrap();
    assert_eq!(
        rb.state,
        GuestState::Completed {
            value: json!(["kept", "fast failure"])
        }
    );

    // Corruption and format checks.
    let mut bad = bytes.clone();
    bad[8] = 99;
    assert!(Snapshot::from_bytes(&bad).is_err());
    assert!(Snapshot::from_bytes(&bytes[..20]).is_err());
    let mut other_guest = bytes.clone();
    other_guest[12] ^= 0xff;
    let other = Snapshot::from_bytes(&other_guest).unwrap();
    assert!(matches!(
        rt.restore(&other, &limits),
        Err(VmError::Unavailable(_))
    ));
    let mut garbled = bytes;
    let n = garbled.len();
    garbled[n - 10] ^= 0xff;
    let garbled = Snapshot::from_bytes(&garbled).unwrap();
    assert!(rt.restore(&garbled, &limits).is_err());
}

#[test]
fn image_and_init_give_the_same_guest() {
    let rt = runtime();
    let limits = VmLimits::default();
    for how in [
        codemode_runtime::FreshVm::Image,
        codemode_runtime::FreshVm::Init,
    ] {
        let code = "return [1, typeof tools, typeof ALL_TOOLS, typeof __cm]";
        let r = start_on(&rt, how, code, &limits).1;
        assert_eq!(
            r.state,
            GuestState::Completed {
                value: json!([1, "object", "object", "undefined"])
            }
        );
    }
}

#[test]
fn math_random_is_seeded_per_vm() {
    let a = completed("return Math.random()");
    let b = completed("return Math.random()");
    assert_ne!(a, b);
    assert_eq!(
        completed("const xs = Array.from({length: 1000}, () => Math.random()); return [xs.every((x) => x >= 0 && x < 1), new Set(xs).size, Object.keys(Math).length, Math.random.name]"),
        json!([true, 1000, 0, "random"])
    );
}

#[test]
fn a_full_pool_is_a_typed_error_with_its_wasmtime_source() {
    use std::error::Error as _;
    let rt = Runtime::new(codemode_runtime::RuntimeOptions {
        max_live_vms: 1,
        ..Default::default()
    })
    .expect("runtime");
    let limits = VmLimits::default();
    let held = rt.fresh_vm(&limits).expect("the one pool slot");
    let err = rt.fresh_vm(&limits).expect_err("the pool is full");
    assert!(
        matches!(
            err,
            codemode_runtime::RuntimeError::Instantiate {
                what: "instantiating the guest",
                ..
            }
        ),
        "{err:?}"
    );
    let source = err.source().expect("the wasmtime error is kept");
    let text = err.to_string();
    assert!(
        text.starts_with("code mode runtime is unavailable: cannot create a VM: "),
        "{text}"
    );
    assert!(text.contains(&source.to_string()), "{text} / {source}");
    drop(held);
    let mut vm = rt.fresh_vm(&limits).expect("the slot is free again");
    let snapshot = vm.snapshot().expect("snapshot");
    // The pool is full again: restoring is `Unavailable` with the runtime error's message.
    assert!(matches!(
        rt.restore(&snapshot, &limits),
        Err(VmError::Unavailable(m))
            if m.to_string().starts_with("code mode runtime is unavailable: cannot create a VM: ")
    ));
}

/// docs/contract/decisions.md#d7: recursion whose frames live only on the native wasm stack
/// (JSON.parse, the parser) throws the catchable RangeError before wasmtime's stack runs out
/// (the `codemode.native_stack_low` import, docs/guest-abi.md "Deep recursion"); the VM goes on.
#[test]
fn native_stack_recursion_is_a_catchable_range_error() {
    let v = completed(
        "const out = []; \
         for (const src of ['['.repeat(1e6) + ']'.repeat(1e6), '{\"a\":'.repeat(1e6) + '1' + '}'.repeat(1e6)]) { \
           try { JSON.parse(src); out.push('parsed'); } catch (e) { out.push([e.name, e.message]); } } \
         try { eval('('.repeat(30000) + '1' + ')'.repeat(30000)); } catch (e) { out.push([e.name, e.message]); } \
         out.push(eval('('.repeat(1000) + '7' + ')'.repeat(1000))); \
         return out;",
    );
    let overflow = json!(["RangeError", "Maximum call stack size exceeded"]);
    assert_eq!(v, json!([overflow, overflow, overflow, 7]));
}

/// A NUL is legal inside JavaScript strings and comments: the guest evaluates the source with
/// its length instead of as a C string.
#[test]
fn nul_in_source_is_evaluated() {
    assert_eq!(
        completed("/* \0 */ return ['a\0b'.length, 'a\0b'.charCodeAt(1)];"),
        json!([3, 0])
    );
}

/// The output of a step the deadline stops stays readable (docs/contract/lifecycle.md#s5-3).
#[test]
fn output_of_a_stopped_step_is_kept() {
    let rt = runtime();
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let r = vm.start(
        "text('before'); json({n: 1}); while (true) {}",
        r#"{"tools":[]}"#,
        &limits,
        &budget(100),
    );
    assert_eq!(r, Err(VmError::Timeout));
    assert_eq!(
        vm.take_output_at_stop(),
        vec![
            OutputItem::Text {
                text: "before".into()
            },
            OutputItem::Json {
                value: json!({"n": 1})
            }
        ]
    );
    assert_eq!(vm.take_output_at_stop(), vec![]);
}

/// `API.list` / `API.read` answer from captured intrinsics: replaced String and Array methods
/// do not change what they return.
#[test]
fn api_files_ignore_replaced_built_ins() {
    let limits = VmLimits::default();
    let mut vm = runtime().fresh_vm(&limits).unwrap();
    let ctx = r#"{"tools":[],"apiFiles":[{"path":"mcp/a.d.ts","description":"A.","bytes":3,"content":"a;\n"},{"path":"mcp/b/c.d.ts","description":"C.","bytes":2,"content":"c\n"}]}"#;
    let code = "String.prototype.split = () => []; String.prototype.startsWith = () => false; \
        String.prototype.endsWith = () => true; String.prototype.trim = () => ''; \
        String.prototype.slice = () => ''; Array.prototype.push = () => 0; Array.prototype.some = () => false; \
        const listed = await API.list('mcp/b/'); const read = await API.read('/mcp/a.d.ts'); \
        let bad; try { await API.read('mcp/../a.d.ts'); } catch (e) { bad = e.message; } \
        return [listed, read, bad];";
    let r = vm.start(code, ctx, &limits, &budget(5000)).unwrap();
    assert_eq!(
        r.state,
        GuestState::Completed {
            value: json!([
                {"files": [{"path": "mcp/b/c.d.ts", "description": "C.", "bytes": 2}]},
                {"path": "mcp/a.d.ts", "content": "a;\n", "description": "A.", "bytes": 3},
                "invalid API file path"
            ])
        }
    );
}

/// `a`: an `Int32Array` of 4 Mi unsorted integers (16 MiB), filled by native `copyWithin`
/// doublings so that filling it costs next to nothing; sorting it takes seconds in one native
/// call that never polls the interrupt handler.
const UNSORTED_INTS: &str = "const n = 1 << 22; const a = new Int32Array(n); \
    for (let i = 0; i < 64; i++) a[i] = (i * 2654435761) | 0; \
    for (let k = 64; k < n; k *= 2) { a.copyWithin(k, 0, k); a[k] = k; }";

/// A native operation that never polls the interrupt handler (the default `sort` of a typed
/// array of 4 Mi integers: one native call, no allocation, seconds of work) is stopped by the
/// epoch backstop; the output written before it in that step is still kept (`cm_take_output`,
/// docs/guest-abi.md).
#[test]
fn output_before_an_epoch_trap_is_kept() {
    let limits = VmLimits::default();
    let mut vm = runtime().fresh_vm(&limits).unwrap();
    let r = vm
        .start(
            &format!(
                "{UNSORTED_INTS} await tools.call('x', {{}}); text('before'); a.sort(); return 1;"
            ),
            r#"{"tools":[]}"#,
            &limits,
            &budget(20000),
        )
        .unwrap();
    assert_eq!(r.state, GuestState::Pending);
    let delivery = Delivery {
        id: "bridge:call:1".into(),
        outcome: Ok(json!(1)),
    };
    assert_eq!(vm.deliver(&delivery, &budget(50)), Err(VmError::Timeout));
    assert!(vm.is_poisoned());
    assert_eq!(
        vm.take_output_at_stop(),
        vec![OutputItem::Text {
            text: "before".into()
        }]
    );
}

/// A VM of `rt` parked on a tool call, whose next step sorts [`UNSORTED_INTS`] natively (no
/// interrupt poll): only the epoch backstop can stop that step before it completes.
fn parked_before_a_native_sort(rt: &Arc<Runtime>) -> Vm {
    let limits = VmLimits::default();
    let mut vm = rt.fresh_vm(&limits).unwrap();
    let r = vm
        .start(
            &format!("{UNSORTED_INTS} await tools.call('x', {{}}); a.sort(); return 1;"),
            r#"{"tools":[]}"#,
            &limits,
            &budget(20000),
        )
        .unwrap();
    assert_eq!(r.state, GuestState::Pending);
    vm
}

/// Delivers the call's answer with a 50 ms budget: the sort's step, which the backstop stops.
fn deliver_into_the_sort(vm: &mut Vm) -> Result<GuestReport, VmError> {
    let delivery = Delivery {
        id: "bridge:call:1".into(),
        outcome: Ok(json!(1)),
    };
    vm.deliver(&delivery, &budget(50))
}

/// The epoch ticker sleeps once no guest call has been armed for a while (an idle process makes
/// no wake-ups), and a call armed after that still has its hard deadline: the native sort that
/// never polls the interrupt handler is stopped by the epoch backstop, which only a ticking
/// ticker can fire (without the wake-up the sort runs to completion). The runtime is this
/// test's own, so no other test's calls keep its ticker awake.
#[test]
fn the_epoch_ticker_sleeps_while_idle_and_wakes_for_the_backstop() {
    let rt = Runtime::new(codemode_runtime::RuntimeOptions::default()).expect("runtime");
    let mut vm = parked_before_a_native_sort(&rt);
    let idle_since = std::time::Instant::now();
    while !rt.epoch_ticker_sleeping() {
        assert!(
            idle_since.elapsed() < Duration::from_secs(10),
            "the ticker never went to sleep"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(deliver_into_the_sort(&mut vm), Err(VmError::Timeout));
}

/// The ticker lives as long as any VM of its runtime: a parked VM an embedder still holds after
/// dropping its `Runtime` keeps its hard deadline (when dropping the runtime stopped the
/// ticker, the sort below ran to completion).
#[test]
fn a_vm_that_outlives_its_runtime_keeps_its_hard_deadline() {
    let rt = Runtime::new(codemode_runtime::RuntimeOptions::default()).expect("runtime");
    let mut vm = parked_before_a_native_sort(&rt);
    drop(rt);
    assert_eq!(deliver_into_the_sort(&mut vm), Err(VmError::Timeout));
}
