//! The hostile-program corpus of the guest layer (issue 15), over the real runtime with exact
//! values: one test per class the guest and its bridge enforce (docs/guest-abi.md, "Threat
//! model: the guest layer"). Host-side bounds (memory, deadlines outside the VM, the file
//! oracle) have their own tests.

use crate::common;

use codemode_catalog::ToolSpec;
use codemode_facade::CodeModeResult;
use codemode_runtime::AbortHandle;
use serde_json::{json, Value};

use common::{summary, tool_result, value, Harness, Recording};

/// A catalog of eight tools whose names and descriptions all match "fast" (`fast`, `fast1` …
/// `fast7`), under `config`; every tool answers `{"input": <input>}`.
fn harness_with(config: Value) -> Harness {
    let specs = (0..8)
        .map(|i| {
            let name = if i == 0 {
                "fast".to_string()
            } else {
                format!("fast{i}")
            };
            ToolSpec::core(&name, "Fast echo tool.")
        })
        .collect::<Vec<_>>();
    let exec = Recording::new(|call| tool_result("ok", json!({"input": call.input})));
    Harness::new(&config, specs, exec)
}

fn harness() -> Harness {
    harness_with(json!(true))
}

// ---- item 2: bridge internals are unreachable through stack walking ----

/// With `Error.prepareStackTrace` set, every frame's `getFunction()` is looked at while user
/// getters run inside `text`, `json`, a tool call's argument adapter and the result's adapter:
/// only the user's own functions come back, never a prelude function (nor a native one), so
/// nothing user code holds can issue a bridge request or settle one.
#[tokio::test]
async fn call_sites_never_hand_out_bridge_functions() {
    let h = harness();
    let r = h
        .exec(
            r#"const seen = [];
               let bridge = 0;
               Error.prepareStackTrace = (e, sites) => {
                 for (const s of sites) {
                   const f = s.getFunction();
                   if (typeof f === "function" && !seen.includes(f.name)) seen.push(f.name);
                   if (typeof f === "function" && String(f).includes("requestNat" + "ive")) bridge++;
                 }
                 return "walked";
               };
               function walk() { return new Error("x").stack; }
               const probe = { get a() { walk(); return 1; } };
               text(probe);
               json(probe);
               console.log(probe);
               await tools.fast(probe);
               await tools.callValue(ALL_TOOLS[0].id, probe);
               // The result's adapter runs last: its getter reports what every walk saw.
               return { get b() { walk(); Error.captureStackTrace({}); return [seen, bridge, walk()]; } };"#,
        )
        .await;
    assert_eq!(
        value(&r),
        json!({"b": [["walk", "get a", "", "<eval>", "get b"], 0, "walked"]})
    );
    assert_eq!(
        h.calls(),
        vec![
            ("fast".to_string(), json!({"a": 1})),
            ("fast".to_string(), json!({"a": 1}))
        ]
    );
}

/// `arguments.callee` and `Function.prototype.caller` do not reach prelude functions either:
/// the prelude is strict code (`caller`/`arguments` throw on every function), and a user
/// function called from the prelude sees only its own `arguments`.
#[tokio::test]
async fn callee_and_caller_do_not_reach_the_prelude() {
    let h = harness();
    let r = h
        .exec(
            r#"const out = [];
               const probe = { get a() {
                 try { out.push(typeof probe.__lookupGetter__("a").caller); } catch (e) { out.push(e.constructor.name); }
                 try { out.push(typeof tools.fast.caller); } catch (e) { out.push(e.constructor.name); }
                 try { out.push(typeof text.arguments); } catch (e) { out.push(e.constructor.name); }
                 return 1; } };
               text(probe);
               function sloppy() { return arguments.callee === sloppy; }
               out.push(sloppy());
               return out;"#,
        )
        .await;
    assert_eq!(
        value(&r),
        json!(["TypeError", "TypeError", "TypeError", true])
    );
}

// ---- item 3: results and reports cannot be forged through built-ins ----

#[tokio::test]
async fn replaced_function_and_reflect_methods_do_not_change_the_result() {
    let h = harness();
    let r = h
        .exec(
            r#"Function.prototype.call = () => '{"injected":true}';
               Function.prototype.apply = () => '{"injected":true}';
               Function.prototype.bind = () => () => '{"injected":true}';
               Reflect.apply = () => '{"injected":true}';
               JSON.stringify = () => '{"injected":true}';
               JSON.parse = () => ({injected: true});
               Object.defineProperty = () => { throw new Error("injected"); };
               Object.prototype.toJSON = undefined;
               text({t: 1});
               const echoed = await tools.fast({x: 1});
               return {a: 1, echoed};"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": {"a": 1, "echoed": {"input": {"x": 1}}},
               "output": [{"type": "text", "text": "{\"t\":1}"}]})
    );
}

/// Lone surrogates reach the host as U+FFFD whatever RegExp and String methods say; the
/// encoding uses no RegExp at all.
#[tokio::test]
async fn replaced_regexp_methods_do_not_forge_or_break_the_encoding() {
    let h = harness();
    let r = h
        .exec(
            r#"RegExp.prototype[Symbol.replace] = () => "forged";
               RegExp.prototype.exec = () => null;
               RegExp.prototype.test = () => true;
               String.prototype.replace = () => "forged";
               String.prototype.replaceAll = () => "forged";
               String.prototype.toWellFormed = () => "forged";
               text("\ud800");
               json({s: "a\udc00b"});
               return ["\ud800", "x\udfffy", "\ud83d\ude00"];"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": ["\u{fffd}", "x\u{fffd}y", "\u{1f600}"],
               "output": [{"type": "text", "text": "\u{fffd}"},
                          {"type": "json", "value": {"s": "a\u{fffd}b"}}]})
    );
}

/// `Array.prototype.push` and friends do not change what `tools.search` sends: the limit of 1
/// still gives one result out of the eight matches.
#[tokio::test]
async fn replaced_array_methods_do_not_change_bridge_requests() {
    let h = harness();
    let r = h
        .exec(
            r#"const all = (await tools.search("fast", {limit: 20})).length;
               Array.prototype.push = () => 0;
               Array.prototype.concat = () => [];
               Object.defineProperty(Array.prototype, "1", {set() {}, get() { return ["limit", 99]; }, configurable: true});
               const one = await tools.search("fast", {limit: 1});
               return [all, one.length];"#,
        )
        .await;
    assert_eq!(value(&r), json!([8, 1]));
}

/// String and Array methods replaced before a throw do not garble the error text nor let
/// prelude frames through: the text is the message and the user's frame, exactly.
#[tokio::test]
async fn replaced_string_methods_do_not_garble_error_texts() {
    let h = harness();
    let r = h
        .exec(
            "Array.prototype.join = () => \"J\";\n\
             String.prototype.split = () => [];\n\
             String.prototype.indexOf = () => -1;\n\
             String.prototype.slice = () => \"S\";\n\
             String.prototype.trim = () => \"T\";\n\
             Array.prototype.some = () => true;\n\
             Array.prototype.push = () => 0;\n\
             Number.parseInt = () => 7;\n\
             throw new Error(\"boom\");",
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed",
               "error": "Error: boom\n    at <anonymous> (openclaw-code-mode:user.js:9:11)",
               "code": "internal_error", "output": []})
    );
}

/// An error made in a getter the prelude's adapter runs has prelude frames on its stack: they
/// are dropped with the captured methods, whatever the user replaced.
#[tokio::test]
async fn errors_from_inside_the_adapter_show_only_user_frames() {
    let h = harness();
    let r = h
        .exec(
            "String.prototype.indexOf = () => -1;\n\
             String.prototype.includes = () => false;\n\
             Array.prototype.filter = () => [];\n\
             let saved;\n\
             text({get a() { saved = new TypeError(\"g\"); return 1; }});\n\
             throw saved;",
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed",
               "error": "TypeError: g\n    at get a (openclaw-code-mode:user.js:5:29)\n    at stringify (native)\n    at <anonymous> (openclaw-code-mode:user.js:5:1)",
               "code": "internal_error", "output": [{"type": "text", "text": "{\"a\":1}"}]})
    );
}

// ---- item 6: deep nesting throws a catchable RangeError ----

/// Recursion whose frames live on the native wasm stack only (JSON.parse, the parser inside
/// `eval`) throws `RangeError: Maximum call stack size exceeded` the program can catch,
/// instead of ending the VM as `runtime_unavailable` (docs/contract/decisions.md#d7); the same
/// VM goes on.
#[tokio::test]
async fn deep_nesting_is_a_catchable_range_error() {
    let h = harness();
    let r = h
        .exec(
            r#"const out = [];
               for (const f of [
                 () => JSON.parse("[".repeat(1e6) + "]".repeat(1e6)),
                 () => JSON.parse('{"a":'.repeat(1e6) + "1" + "}".repeat(1e6)),
                 () => eval("(".repeat(30000) + "1" + ")".repeat(30000)),
                 () => eval("[".repeat(100000) + "]".repeat(100000)),
               ]) {
                 try { f(); out.push("no error"); } catch (e) { out.push([e instanceof RangeError, e.message]); }
               }
               out.push(JSON.parse("[".repeat(1000) + "]".repeat(1000)).length);
               return out;"#,
        )
        .await;
    let overflow = json!([true, "Maximum call stack size exceeded"]);
    assert_eq!(
        value(&r),
        json!([overflow, overflow, overflow, overflow, 1])
    );
}

/// A program whose own source nests 100,000 deep fails with the catchable-kind RangeError as its
/// error text (the guest parses it), not `runtime_unavailable`; the next exec is healthy.
#[tokio::test]
async fn a_deeply_nested_program_fails_with_a_range_error() {
    let h = harness();
    let code = format!("return {}1{};", "(".repeat(100_000), ")".repeat(100_000));
    let r = h.exec(&code).await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed",
               "error": "RangeError: Maximum call stack size exceeded",
               "code": "internal_error", "output": []})
    );
    assert_eq!(value(&h.exec("return 'healthy'").await), json!("healthy"));
}

// ---- item 7: the bridge's depth limit is an error naming the depth ----

#[tokio::test]
async fn values_nested_too_deep_fail_with_their_depth() {
    let h = harness();
    let deep = |n: usize| format!("let v = 1; for (let i = 0; i < {n}; i++) v = [v];");
    // 100 levels cross both ways unchanged.
    let r = h
        .exec(&format!(
            "{} const back = await tools.fast({{v}}); let d = 0; for (let x = back.input.v; Array.isArray(x); x = x[0]) d++; return [d, v];",
            deep(99)
        ))
        .await;
    let mut expected = json!(1);
    for _ in 0..99 {
        expected = json!([expected]);
    }
    assert_eq!(value(&r), json!([99, expected]));
    // A 130-deep result fails, naming the depth.
    let r = h.exec(&format!("{} return v;", deep(130))).await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed",
               "error": "RangeError: value is nested 130 levels deep; the code mode bridge takes at most 100 levels of arrays and objects",
               "code": "internal_error", "output": []})
    );
    // 200-deep tool arguments reject the call (the input object adds a level); nothing runs.
    let before = h.calls().len();
    let r = h
        .exec(&format!(
            "{} try {{ await tools.fast({{v}}); return 'sent'; }} catch (e) {{ return String(e); }}",
            deep(200)
        ))
        .await;
    assert_eq!(
        value(&r),
        json!("RangeError: value is nested 201 levels deep; the code mode bridge takes at most 100 levels of arrays and objects")
    );
    assert_eq!(h.calls().len(), before);
    // Output items too.
    let r = h
        .exec(&format!(
            "{} try {{ json(v); }} catch (e) {{ return e.message; }}",
            deep(101)
        ))
        .await;
    assert_eq!(
        value(&r),
        json!("value is nested 101 levels deep; the code mode bridge takes at most 100 levels of arrays and objects")
    );
}

// ---- item 8: tool calls while the result is serialised ----

#[tokio::test]
async fn tool_calls_from_result_getters_are_refused_clearly() {
    let h = harness();
    let message = "Error: tools cannot be called while the result is converted to JSON (from a getter or toJSON); call them before returning";
    let r = h
        .exec(r#"return {get a() { tools.callValue(ALL_TOOLS[0].id, {}); return 1 }};"#)
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": message, "code": "internal_error", "output": []})
    );
    // Caught by the getter, the refusal still fails the result; a synchronous throw from
    // `toJSON` gives the same text; nothing ran.
    let r = h
        .exec(r#"return {get a() { try { tools.fast({}).catch(() => {}); } catch (_) {} return 1 }};"#)
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": message, "code": "internal_error", "output": []})
    );
    let r = h
        .exec(r#"return {toJSON() { yield_control("x"); return 1 }};"#)
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": message, "code": "internal_error", "output": []})
    );
    // A getter of a thrown value's message: the failure is the user's error, and no call runs.
    let r = h
        .exec(r#"throw {get message() { tools.fast({}); return "m"; }};"#)
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": "Error: m", "code": "internal_error", "output": []})
    );
    assert_eq!(h.calls(), vec![]);
    // Calls made before returning still run.
    let r = h
        .exec(r#"const v = await tools.fast({k: 1}); return {get a() { return v; }};"#)
        .await;
    assert_eq!(value(&r), json!({"a": {"input": {"k": 1}}}));
}

// ---- issue 27 item 7: an uncaught out-of-memory is never `Uncaught null` ----

/// `Map` and `Set` swallow a failed hash-table resize (QuickJS's `map_hash_resize`) and retry
/// it on every insertion, so the program runs on inside the heap's reserve until QuickJS cannot
/// build its error object and throws `null`: uncaught, that is still reported as
/// `InternalError: out of memory` (it was `Uncaught null`), and the next run is unaffected. A
/// program's own `throw null` stays `Uncaught null`.
#[tokio::test]
async fn heap_exhaustion_through_a_map_or_set_is_reported_as_out_of_memory() {
    let h = harness_with(json!({"memoryLimitBytes": 8 * 1024 * 1024}));
    for code in [
        "const m = new Map(); let i = 0; while (true) m.set(i++, { i });",
        "const s = new Set(); while (true) s.add({});",
        "await null; const m = new Map(); let i = 0; while (true) m.set(i++, { i });",
    ] {
        let r = h.exec(code).await;
        match &r {
            CodeModeResult::Failed { error, code: c, .. } => {
                assert_eq!(
                    (
                        error.lines().next().unwrap(),
                        serde_json::to_value(c).unwrap()
                    ),
                    ("InternalError: out of memory", json!("internal_error")),
                    "{code}"
                );
            }
            other => panic!("{code}: {}", summary(other)),
        }
    }
    assert_eq!(
        summary(&h.exec("throw null;").await),
        json!({"status": "failed", "error": "Uncaught null", "code": "internal_error", "output": []})
    );
    assert_eq!(value(&h.exec("return 'alive'").await), json!("alive"));
}

// ---- item 9: out of memory while adapting fails the call ----

#[tokio::test]
async fn out_of_memory_while_adapting_fails_instead_of_changing_the_value() {
    let h = harness();
    let first_line = |r: &CodeModeResult| match r {
        CodeModeResult::Failed { error, code, .. } => (
            error.lines().next().unwrap_or("").to_string(),
            serde_json::to_value(code).unwrap(),
        ),
        other => panic!("expected failed, got {}", summary(other)),
    };
    let oom = (
        "InternalError: out of memory".to_string(),
        json!("internal_error"),
    );
    // 4.5 million references to one 8-character string: ~36 MB of array (8-byte values) fits
    // the 64 MiB heap, its JSON text (11 bytes per element, ~50 MB) does not. The array alone
    // must fit, or the cases below would pass by failing before adapting. (It was
    // `new Array(6e6).fill(0)`, whose last growth step stopped fitting when the prelude's heap
    // layout changed: a fast array grows by realloc in steps of 1.5x.)
    let big = "new Array(4.5e6).fill('abcdefgh')";
    assert_eq!(
        value(&h.exec(&format!("const a = {big}; return a.length")).await),
        json!(4_500_000)
    );
    assert_eq!(
        first_line(&h.exec(&format!("text({big}); return 1")).await),
        oom
    );
    assert_eq!(first_line(&h.exec(&format!("return {big}")).await), oom);
    assert_eq!(
        first_line(&h.exec(&format!("json({big}); return 1")).await),
        oom
    );
    // Caught, it is the catchable QuickJS error, and the program goes on.
    let r = h
        .exec(&format!("let a = {big}; try {{ text(a); }} catch (e) {{ a = null; return [e instanceof InternalError, e.message]; }}"))
        .await;
    assert_eq!(value(&r), json!([true, "out of memory"]));
    // A value that cannot be stringified for other reasons still falls back to String(v).
    let r = h.exec("const c = {}; c.c = c; return [c, 10n];").await;
    assert_eq!(value(&r), json!("[object Object],10"));
}

// ---- item 10: output before a timeout is kept ----

/// The output of a `timeout` result (its message is the contract's text plus the host's advice).
fn timed_out(r: &CodeModeResult) -> Value {
    match r {
        CodeModeResult::Failed {
            error,
            code,
            output,
            ..
        } => {
            assert!(
                error.starts_with("code mode timeout exceeded"),
                "{}",
                summary(r)
            );
            assert_eq!(serde_json::to_value(code).unwrap(), json!("timeout"));
            serde_json::to_value(output).unwrap()
        }
        other => panic!("expected failed, got {}", summary(other)),
    }
}

#[tokio::test]
async fn output_before_a_timeout_is_kept() {
    let h = harness_with(json!({"timeoutMs": 200}));
    let r = h
        .exec(r#"text("before"); console.log("also"); while (true) {}"#)
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": "code mode timeout exceeded. The program computed without waiting on a tool until the call's budget ran out; timeoutMs is 200 (tools.codeMode.timeoutMs).", "code": "timeout",
               "output": [{"type": "text", "text": "before"}, {"type": "text", "text": "also"}]})
    );
    // A resumed run (cm_deliver) keeps its output too: the exec's result carries "one", the
    // wait's that times out carries "two".
    let r = h
        .exec(r#"text("one"); await yield_control("park"); text("two"); for (;;) {}"#)
        .await;
    let summary_exec = summary(&r);
    let run_id = summary_exec["runId"].as_str().expect("waiting").to_string();
    assert_eq!(
        summary_exec["output"],
        json!([{"type": "text", "text": "one"}])
    );
    let r =
        h.cm.wait_with(&h.env, &json!({"runId": run_id}), &AbortHandle::new())
            .await;
    assert_eq!(timed_out(&r), json!([{"type": "text", "text": "two"}]));
    // A native operation that never polls the interrupt (the default sort of a typed array of
    // 4 Mi integers, filled by native `copyWithin` doublings: one native call of seconds) is
    // stopped by the epoch backstop: its step's output is kept as well (cm_take_output).
    let r = h
        .exec(
            "text(\"before\"); const n = 1 << 22; const a = new Int32Array(n); \
             for (let i = 0; i < 64; i++) a[i] = (i * 2654435761) | 0; \
             for (let k = 64; k < n; k *= 2) { a.copyWithin(k, 0, k); a[k] = k; } \
             a.sort(); return 1;",
        )
        .await;
    assert_eq!(timed_out(&r), json!([{"type": "text", "text": "before"}]));
}

// ---- item 11: NUL in source ----

/// A NUL character is legal in JavaScript strings, templates and comments: such a program runs.
/// Outside them it is the parser's SyntaxError, like any other stray character.
#[tokio::test]
async fn nul_characters_in_source_run() {
    let h = harness();
    let r = h
        .exec("text(\"a\0b\"); /* \0 */ // \0\nreturn [\"x\0y\", `t\0`, \"\0\".length];")
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": ["x\u{0}y", "t\u{0}", 1],
               "output": [{"type": "text", "text": "a\u{0}b"}]})
    );
    let r = h
        .cm
        .exec(
            &h.env,
            &json!({"code": "const s: string = \"x\0y\"; /* \0 */ return s.length;", "language": "typescript"}),
            &AbortHandle::new(),
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": 3, "output": []})
    );
    let r = h.exec("return 1 +\0 2;").await;
    match &r {
        CodeModeResult::Failed { error, .. } => {
            assert!(error.starts_with("SyntaxError: "), "{}", summary(&r))
        }
        other => panic!("expected failed, got {}", summary(other)),
    }
}

/// A getter on `Array.prototype[2]` cannot make a `[key, value]` pair look like prelude-built
/// JSON text: `json()` of an object whose `toString` returns forged or over-deep JSON is adapted
/// like any object (here `{}`), and a tool input is too.
#[tokio::test]
async fn an_inherited_index_cannot_pass_user_text_as_envelope_json() {
    let h = harness();
    let r = h
        .exec(
            r#"Object.defineProperty(Array.prototype, 2, { get() { return true; }, configurable: true });
               json({ toString() { return '{"forged":true}'; } });
               json({ toString() { return "[".repeat(120) + "]".repeat(120); } });
               const echoed = await tools.fast({ toString() { return '{"forged":true}'; } });
               return echoed;"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": {"input": {}},
               "output": [{"type": "json", "value": {}}, {"type": "json", "value": {}}]})
    );
}
