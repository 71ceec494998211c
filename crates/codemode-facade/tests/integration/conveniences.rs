//! The guest conveniences over the real runtime, with exact values: `console`
//! (docs/contract/decisions.md#d12), the user's line numbers in error texts
//! (docs/contract/decisions.md#d13), values that lose information
//! (docs/contract/decisions.md#d14) and `nodes` (docs/contract/nodes.md#s8,
//! docs/contract/host.md#h7).

use crate::common;

use std::sync::Arc;

use codemode_bridge::RunScope;
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv, NODES_TOOL_ID};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::{json, Value};

use common::{error, summary, tool_result, value, Calls, Recording};

const UNAWAITED: &str =
    "[Unawaited Promise: use await or Promise.all(...) before emitting or returning values.]";

fn status() -> Value {
    json!({"nodes": [
        {"nodeId": "mac-1", "displayName": " Studio Mac ", "platform": "darwin", "connected": true,
         "paired": true, "commands": ["fs.listDir", "camera.snap", 3, "system.run"]},
        {"nodeId": "pi-2", "displayName": "Kitchen", "connected": "yes", "paired": true, "commands": []},
        {"nodeId": "pi-3", "displayName": "Kitchen", "platform": "linux", "paired": true},
        {"nodeId": "old-4", "displayName": "Old", "connected": true, "paired": false,
         "commands": ["fs.listDir"]}
    ]})
}

struct Harness {
    cm: CodeMode,
    env: RunEnv,
    catalog: Arc<Catalog>,
    calls: Calls,
}

fn harness_with(config: Value, status: Value, with_nodes: bool) -> Harness {
    let mut specs = vec![ToolSpec::core("echo", "Echo the input.")];
    if with_nodes {
        specs.push(ToolSpec::core("nodes", "Paired Gateway nodes."));
    }
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    // `nodes` answers `status` with `status` and `invoke` with `{"invoked": <input>}`; `echo`
    // returns `{"input": <input>}`.
    let exec = Recording::new(move |call| {
        let details = match (call.tool_name.as_str(), call.input.get("action")) {
            ("nodes", Some(a)) if a == "status" => status.clone(),
            ("nodes", _) => json!({"invoked": call.input}),
            _ => json!({"input": call.input}),
        };
        tool_result(&details.to_string(), details)
    });
    let calls = exec.calls.clone();
    let env = RunEnv::new(
        codemode_config::resolve(&config).config,
        catalog.clone(),
        Arc::new(exec),
        RunScope {
            run_id: Some("run-conveniences".into()),
            session_id: Some("session-conveniences".into()),
            session_key: None,
            agent_id: None,
        },
    );
    Harness {
        cm: CodeMode::new(Runtime::global().unwrap()),
        env,
        catalog,
        calls,
    }
}

fn harness() -> Harness {
    harness_with(json!(true), status(), true)
}

impl Harness {
    async fn exec_input(&self, input: Value) -> CodeModeResult {
        self.cm.exec(&self.env, &input, &AbortHandle::new()).await
    }
    async fn exec(&self, code: &str) -> CodeModeResult {
        self.exec_input(json!({ "code": code })).await
    }
    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

// ---- console (D12) ----

#[tokio::test]
async fn console_methods_append_text_items() {
    let h = harness();
    let r = h
        .exec(
            r#"console.log("a", 1, {b: [2, undefined]}, null, undefined, true, [NaN]);
               console.info("info", "two words");
               console.debug(new Date(0));
               console.warn("careful", 2);
               console.error(new TypeError("bad"), "x");
               console.log();
               console.log(() => 1);
               text("after");
               return 1;"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed", "value": 1, "output": [
            {"type": "text", "text": "a 1 {\"b\":[2,null]} null undefined true [null]"},
            {"type": "text", "text": "info two words"},
            {"type": "text", "text": "\"1970-01-01T00:00:00.000Z\""},
            {"type": "text", "text": "[warn] careful 2"},
            {"type": "text", "text": "[error] {\"name\":\"TypeError\",\"message\":\"bad\"} x"},
            {"type": "text", "text": ""},
            {"type": "text", "text": "\"() => 1\""},
            {"type": "text", "text": "after"}
        ]})
    );
}

#[tokio::test]
async fn console_is_frozen_and_its_internals_hidden() {
    let h = harness();
    let r = h
        .exec(
            r#"const d = Object.getOwnPropertyDescriptor(globalThis, "console");
               console.log = () => 1;
               let threw = false;
               try { "use strict"; (function () { "use strict"; console.extra = 1; })(); } catch (e) { threw = e instanceof TypeError; }
               JSON.stringify = () => "tampered";
               Array.prototype.join = () => "tampered";
               console.log("still", {ok: true});
               return [Object.isFrozen(console), Object.keys(console), d.writable, d.enumerable,
                       d.configurable, threw, Object.keys(globalThis).includes("console"),
                       typeof console.log, console.log.name];"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed",
               "value": [true, ["log", "info", "debug", "warn", "error"], false, false, false,
                         true, false, "function", "log"],
               "output": [{"type": "text", "text": "still {\"ok\":true}"}]})
    );
}

#[tokio::test]
async fn console_counts_against_max_output_bytes() {
    let h = harness_with(json!({"maxOutputBytes": 1024}), status(), true);
    let r = h.exec(r#"console.log("x".repeat(2000)); return 1;"#).await;
    assert_eq!(
        summary(&r),
        json!({"status": "failed", "error": "code mode output limit exceeded. The output grew past the limit; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).",
               "code": "output_limit_exceeded", "output": []})
    );
    let r = h.exec(r#"console.warn("x".repeat(900)); return 2;"#).await;
    assert_eq!(value(&r), json!(2));
    assert_eq!(r.output().len(), 1);
    // The same text through text() fails at the same size.
    let r = h.exec(r#"text("x".repeat(2000)); return 1;"#).await;
    assert_eq!(error(&r), "code mode output limit exceeded. The output grew past the limit; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).");
}

// ---- line numbers (D13) ----

#[tokio::test]
async fn javascript_errors_cite_the_users_lines() {
    let h = harness();
    assert_eq!(
        error(&h.exec("const a = 1;\nconst b = 2;\nconst c = ;").await),
        "SyntaxError: unexpected token in expression: ';'\n    at openclaw-code-mode:user.js:3:11\nNo tools were dispatched; correct the JavaScript source and submit it again."
    );
    assert_eq!(
        error(
            &h.exec("const a = 1;\nconst b = 2;\nthrow new Error(\"boom\");")
                .await
        ),
        "Error: boom\n    at <anonymous> (openclaw-code-mode:user.js:3:11)"
    );
    assert_eq!(
        error(&h.exec("function f() {\n  return g();\n}\nf();\n").await),
        "ReferenceError: g is not defined\n    at f (openclaw-code-mode:user.js:2:10)\n    at <anonymous> (openclaw-code-mode:user.js:4:1)"
    );
    assert_eq!(
        error(&h.exec("await null;\nthrow new Error(\"x\");").await),
        "Error: x\n    at <anonymous> (openclaw-code-mode:user.js:2:11)"
    );
    // Line 1 keeps its columns (the wrapper's prefix is on a line of its own).
    assert_eq!(
        error(&h.exec("  throw new Error('c');").await),
        "Error: c\n    at <anonymous> (openclaw-code-mode:user.js:1:13)"
    );
}

#[tokio::test]
async fn typescript_errors_cite_the_users_lines() {
    let h = harness();
    let ts = |code: &str| json!({"code": code, "language": "typescript"});
    assert_eq!(
        error(
            &h.exec_input(ts(
                "interface A {\n  x: number;\n}\nconst a: A = {\n  x: 1 };\nthrow new Error(\"boom\");"
            ))
            .await
        ),
        "Error: boom\n    at <anonymous> (openclaw-code-mode:user.js:6:11)"
    );
    assert_eq!(
        error(
            &h.exec_input(ts(
                "type T = { n: number };\nfunction f(t: T): number {\n  return t.n.x.y;\n}\nf({ n: 1 });"
            ))
            .await
        ),
        "TypeError: cannot read property 'y' of undefined\n    at f (openclaw-code-mode:user.js:3:10)\n    at <anonymous> (openclaw-code-mode:user.js:5:1)"
    );
}

// ---- values that lose information (D14) ----

#[tokio::test]
async fn unawaited_promises_and_errors_inside_values() {
    let h = harness();
    let r = h
        .exec(
            r#"const p = Promise.resolve(1);
               const e = new RangeError("r"); e.code = 7;
               json({e, list: [new Error("a"), p]});
               json(p);
               text(p);
               text({p});
               return {files: [p, {x: p}], n: 1, e};"#,
        )
        .await;
    assert_eq!(
        summary(&r),
        json!({"status": "completed",
        "value": {"files": [UNAWAITED, {"x": UNAWAITED}], "n": 1,
                  "e": {"name": "RangeError", "message": "r", "code": 7}},
        "output": [
            {"type": "json", "value": {"e": {"name": "RangeError", "message": "r", "code": 7},
                                       "list": [{"name": "Error", "message": "a"}, UNAWAITED]}},
            {"type": "json", "value": UNAWAITED},
            {"type": "text", "text": format!("\"{UNAWAITED}\"")},
            {"type": "text", "text": format!("{{\"p\":\"{UNAWAITED}\"}}")}
        ]})
    );
    assert_eq!(
        value(
            &h.exec("try { null.x } catch (e) { return {error: e}; }")
                .await
        ),
        json!({"error": {"name": "TypeError", "message": "cannot read property 'x' of null"}})
    );
    // The rest of §6 stands.
    assert_eq!(
        value(
            &h.exec(
                r#"return [new Date(0), new Map([[1, 2]]), new Set([1]), {toJSON() { return "j"; }},
                           NaN, undefined, () => 1];"#
            )
            .await
        ),
        json!(["1970-01-01T00:00:00.000Z", {}, {}, "j", null, null, null])
    );
    // An Error that contains itself is a cycle, so the value falls back to String(v).
    assert_eq!(
        value(
            &h.exec(r#"const e = new Error("self"); e.self = e; return {e};"#)
                .await
        ),
        json!("[object Object]")
    );
    assert_eq!(
        value(
            &h.exec(r#"const e = new Error("self"); e.self = e; return e;"#)
                .await
        ),
        json!({"name": "Error", "message": "self"})
    );
}

#[tokio::test]
async fn tool_arguments_are_adapted_and_tampering_changes_nothing() {
    let h = harness();
    let r = h
        .exec(
            r#"Object.defineProperty(Promise, Symbol.hasInstance, { value: () => false });
               Object.defineProperty(Error, Symbol.hasInstance, { value: () => false });
               Function.prototype.call = () => "tampered";
               Function.prototype.apply = () => "tampered";
               String.prototype.replace = () => "tampered";
               String.prototype.split = () => ["tampered"];
               String.prototype.indexOf = () => 0;
               Array.prototype.push = function () { return 0; };
               Object.defineProperty(Array.prototype, "3", { set(v) {}, configurable: true });
               RegExp.prototype[Symbol.replace] = () => "tampered";
               return await tools.callValue("echo", {s: "\ud800x", p: Promise.resolve(2),
                                                     e: new TypeError("t"), n: [1, 2, 3, 4]});"#,
        )
        .await;
    let expected = json!({"s": "\u{fffd}x", "p": UNAWAITED,
                          "e": {"name": "TypeError", "message": "t"}, "n": [1, 2, 3, 4]});
    assert_eq!(value(&r), json!({ "input": expected }));
    assert_eq!(h.calls(), vec![("echo".to_string(), expected)]);
}

// ---- nodes (§8, H7) ----

#[tokio::test]
async fn nodes_list_projects_paired_nodes() {
    let h = harness();
    let r = h.exec("return await nodes.list();").await;
    assert_eq!(
        value(&r),
        json!([
            {"id": "mac-1", "name": "Studio Mac", "platform": "darwin", "connected": true,
             "commands": ["fs.listDir", "camera.snap", "system.run"]},
            {"id": "pi-2", "name": "Kitchen", "connected": false, "commands": []},
            {"id": "pi-3", "name": "Kitchen", "platform": "linux", "connected": false, "commands": []}
        ])
    );
    assert_eq!(r.telemetry().call_count, 1);
    assert_eq!(
        h.calls(),
        vec![("nodes".to_string(), json!({"action": "status"}))]
    );
}

#[tokio::test]
async fn nodes_global_is_frozen() {
    let h = harness();
    let r = h
        .exec(
            r#"const d = Object.getOwnPropertyDescriptor(globalThis, "nodes");
               return [typeof nodes, Object.isFrozen(nodes), Object.keys(nodes), d.writable,
                       d.configurable, d.enumerable];"#,
        )
        .await;
    assert_eq!(
        value(&r),
        json!(["object", true, ["list", "get"], false, false, false])
    );
    assert_eq!(r.telemetry().call_count, 0);
}

#[tokio::test]
async fn nodes_get_by_id_and_name() {
    let h = harness();
    let r = h
        .exec(
            r#"const a = await nodes.get("mac-1");
               const b = await nodes.get("Studio Mac");
               const c = await nodes.get(" pi-2 ");
               return [a.id, a.name, typeof a.invoke, typeof a.listDir, typeof a.exec,
                       Object.isFrozen(a), Object.keys(a), b.id, Object.keys(c), c.name];"#,
        )
        .await;
    assert_eq!(
        value(&r),
        json!([
            "mac-1",
            "Studio Mac",
            "function",
            "function",
            "undefined",
            true,
            ["id", "name", "invoke", "listDir"],
            "mac-1",
            ["id", "name", "invoke"],
            "Kitchen"
        ])
    );
    assert_eq!(r.telemetry().call_count, 3);
}

#[tokio::test]
async fn nodes_invoke_sends_the_tool_input() {
    let h = harness();
    let r = h
        .exec(
            r#"const n = await nodes.get("mac-1");
               return [await n.invoke("camera.snap", {quality: 0.5, when: new Date(0), p: Promise.resolve()}),
                       await n.invoke("camera.snap"),
                       await n.invoke("camera.snap", null),
                       await n.listDir("/tmp")];"#,
        )
        .await;
    let invoke = |command: &str, params: &str| json!({"action": "invoke", "node": "mac-1", "invokeCommand": command, "invokeParamsJson": params});
    let first = invoke(
        "camera.snap",
        &format!("{{\"quality\":0.5,\"when\":\"1970-01-01T00:00:00.000Z\",\"p\":\"{UNAWAITED}\"}}"),
    );
    assert_eq!(
        value(&r),
        json!([
            {"invoked": first},
            {"invoked": invoke("camera.snap", "{}")},
            {"invoked": invoke("camera.snap", "{}")},
            {"invoked": invoke("fs.listDir", "{\"path\":\"/tmp\"}")}
        ])
    );
    assert_eq!(r.telemetry().call_count, 5);
    assert_eq!(
        h.calls(),
        vec![
            ("nodes".to_string(), json!({"action": "status"})),
            ("nodes".to_string(), first),
            ("nodes".to_string(), invoke("camera.snap", "{}")),
            ("nodes".to_string(), invoke("camera.snap", "{}")),
            (
                "nodes".to_string(),
                invoke("fs.listDir", "{\"path\":\"/tmp\"}")
            ),
        ]
    );
}

const ERRORS: &str = r#"const out = [];
const m = async (f) => { try { await f(); out.push("ok"); } catch (e) { out.push(e.message); } };
await m(() => nodes.get(""));
await m(() => nodes.get("  "));
await m(() => nodes.get(7));
await m(() => nodes.get());
await m(() => nodes.get("old-4"));
await m(() => nodes.get("nowhere"));
await m(() => nodes.get("Kitchen"));
const h = await nodes.get("mac-1");
await m(() => h.invoke(""));
await m(() => h.invoke());
await m(() => h.invoke(" ", {}));
return out;"#;

#[tokio::test]
async fn nodes_error_messages() {
    let h = harness();
    let r = h.exec(ERRORS).await;
    assert_eq!(
        value(&r),
        json!([
            "nodes.get id or name must be a non-empty string.",
            "nodes.get id or name must be a non-empty string.",
            "nodes.get id or name must be a non-empty string.",
            "nodes.get id or name must be a non-empty string.",
            "node \"old-4\" is not paired (paired node ids: mac-1, pi-2, pi-3)",
            "node \"nowhere\" is not paired (paired node ids: mac-1, pi-2, pi-3)",
            "multiple nodes paired: pi-2, pi-3",
            "nodes.invoke command must be a non-empty string.",
            "nodes.invoke command must be a non-empty string.",
            "nodes.invoke command must be a non-empty string."
        ])
    );
    // Only the four status calls reached the tool: get "old-4", "nowhere", "Kitchen", "mac-1".
    assert_eq!(r.telemetry().call_count, 4);

    // A paired node whose id is blank: its handle cannot invoke.
    let h = harness_with(
        json!(true),
        json!({"nodes": [{"nodeId": " ", "displayName": "Blank", "paired": true}]}),
        true,
    );
    let r = h
        .exec(r#"const n = await nodes.get("Blank"); try { await n.invoke("x"); } catch (e) { return [n.id, e.message]; }"#)
        .await;
    assert_eq!(
        value(&r),
        json!([" ", "nodes.invoke node id must be a non-empty string."])
    );

    // No paired nodes at all.
    let h = harness_with(
        json!(true),
        json!({"nodes": [{"nodeId": "old-4", "paired": false}]}),
        true,
    );
    let r = h
        .exec(r#"const list = await nodes.list(); try { await nodes.get("old-4"); } catch (e) { return [list, e.message]; }"#)
        .await;
    assert_eq!(value(&r), json!([[], "no paired nodes"]));
}

#[tokio::test]
async fn nodes_without_the_nodes_tool_is_the_unknown_tool_error() {
    let h = harness_with(json!(true), status(), false);
    let r = h
        .exec(
            r#"const out = [];
               for (const f of [() => nodes.list(), () => nodes.get("mac-1")]) {
                 try { await f(); } catch (e) { out.push(e.message); }
               }
               return out;"#,
        )
        .await;
    let unknown = h.catalog.unknown_tool(NODES_TOOL_ID).to_string();
    assert!(
        unknown.starts_with("Unknown tool id: openclaw:core:nodes. "),
        "{unknown}"
    );
    assert_eq!(value(&r), json!([unknown, unknown]));
    assert_eq!(r.telemetry().call_count, 0);
    assert!(h.calls().is_empty());
}
