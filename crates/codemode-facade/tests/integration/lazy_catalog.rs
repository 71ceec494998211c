//! The catalog globals (`tools`, `ALL_TOOLS`, `API`, `MCP`, `namespaces`) installed lazily from
//! the host's run context (docs/guest-abi.md, "Run context") behave exactly as when they were
//! built in full before every program (`RunEnv::install_catalog_eagerly`): each probe runs in
//! both modes over the real runtime and must give the same result, and the exact value where
//! it is written down.

use crate::common;

use std::sync::Arc;

use codemode_bridge::RunScope;
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::{json, Value};

use common::{tool_result, Calls, Recording};

fn scope() -> RunScope {
    RunScope {
        run_id: Some("run-lazy".into()),
        session_id: Some("session-lazy".into()),
        session_key: None,
        agent_id: None,
    }
}

/// A catalog with every kind of name the conveniences rule treats apart: a plain one, one
/// carried twice (no convenience), reserved ones, one that is no identifier, `__proto__`,
/// `toString`, `then`, and MCP tools (no conveniences, an `MCP` namespace).
fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::core("echo", "Echo the input."),
        ToolSpec::core("__proto__", "A tool named __proto__."),
        ToolSpec::core("toString", "A tool named toString."),
        ToolSpec::core("call", "A tool named like a bridge method."),
        ToolSpec::core("bad-name", "Not an identifier."),
        ToolSpec::plugin("alpha", "dup", "Duplicate name, first."),
        ToolSpec::plugin("beta", "dup", "Duplicate name, second."),
        ToolSpec::plugin("alpha", "$ship_it", "Dollar name."),
        ToolSpec::mcp_tool("docs", "search_pages", "Search the docs."),
        ToolSpec::mcp_tool("docs", "get_page", "Read one page."),
    ]
}

struct Harness {
    cm: CodeMode,
    eager: RunEnv,
    lazy: RunEnv,
    calls: Calls,
}

fn harness_with(specs: Vec<ToolSpec>) -> Harness {
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    // Every call is answered with `{"tool": <name>, "input": <input>}`.
    let exec = Recording::new(|call| {
        let details = json!({"tool": call.tool_name, "input": call.input});
        tool_result(&details.to_string(), details)
    });
    let calls = exec.calls.clone();
    let lazy = RunEnv::new(
        codemode_config::resolve(&json!(true)).config,
        catalog,
        Arc::new(exec),
        scope(),
    );
    let mut eager = lazy.clone();
    eager.install_catalog_eagerly = true;
    Harness {
        cm: CodeMode::new(Runtime::global().unwrap()),
        eager,
        lazy,
        calls,
    }
}

/// `{status, value | error + code, output}` of a result, for exact comparison (its `runId` left
/// out too: it differs between the modes).
fn summary(r: &CodeModeResult) -> Value {
    let mut v = common::summary(r);
    v.as_object_mut().unwrap().remove("runId");
    v
}

impl Harness {
    /// Runs `code` to its end (following `wait`s) with `env`.
    async fn run(&self, env: &RunEnv, code: &str) -> Value {
        let mut r = self
            .cm
            .exec(env, &json!({ "code": code }), &AbortHandle::new())
            .await;
        while r.status() == "waiting" {
            let run_id = r.run_id().unwrap().to_string();
            r = self
                .cm
                .wait(&scope(), &json!({"runId": run_id}), &AbortHandle::new())
                .await;
        }
        summary(&r)
    }

    /// The summaries of `code` in both modes: (eager, lazy).
    async fn pair(&self, code: &str) -> (Value, Value) {
        (
            self.run(&self.eager, code).await,
            self.run(&self.lazy, code).await,
        )
    }

    /// The summary of `code`, the same in both modes (else the test fails naming the probe).
    async fn both(&self, code: &str) -> Value {
        let eager = self.run(&self.eager, code).await;
        let lazy = self.run(&self.lazy, code).await;
        assert_eq!(lazy, eager, "lazy and eager differ for: {code}");
        lazy
    }

    async fn value(&self, code: &str) -> Value {
        let r = self.both(code).await;
        assert_eq!(r["status"], "completed", "{code}: {r}");
        r["value"].clone()
    }
}

#[tokio::test]
async fn keys_membership_and_freezing_match_the_eager_install() {
    let h = harness_with(specs());
    assert_eq!(
        h.value("return Object.keys(tools)").await,
        json!([
            "search",
            "describe",
            "call",
            "callValue",
            "__proto__",
            "echo",
            "toString",
            "$ship_it"
        ])
    );
    assert_eq!(
        h.value(
            r#"return [typeof tools.deploy, typeof tools.echo, typeof tools.dup, typeof tools["bad-name"],
               "echo" in tools, "deploy" in tools, "dup" in tools, "toString" in tools, "hasOwnProperty" in tools,
               Object.isFrozen(tools), Object.isExtensible(tools), Object.isFrozen(ALL_TOOLS),
               Object.isFrozen(ALL_TOOLS[0]), Object.isFrozen(ALL_TOOLS[0].input ?? {})]"#
        )
        .await,
        json!(["undefined", "function", "undefined", "undefined", true, false, false, true, true,
               true, false, true, true, true])
    );
    // Each lazy global is the first thing touched, one probe each.
    for probe in [
        "return Object.isFrozen(tools)",
        "return Object.getOwnPropertyNames(tools)",
        "return Reflect.ownKeys(tools).length",
        "return JSON.stringify(Object.getOwnPropertyDescriptor(tools, 'echo'))",
        "return Object.entries(tools).map(([k, v]) => [k, typeof v, v.length, v.name])",
        "return ALL_TOOLS.length",
        "return Object.isFrozen(ALL_TOOLS)",
        "return [Array.isArray(ALL_TOOLS), ALL_TOOLS instanceof Array, [...ALL_TOOLS].length]",
        "return Object.keys(ALL_TOOLS)",
        "return ALL_TOOLS",
        "return JSON.stringify(ALL_TOOLS) === JSON.stringify(ALL_TOOLS.map((t) => t))",
        "return [Object.keys(MCP), Object.keys(MCP.docs), Object.isFrozen(MCP), Object.getPrototypeOf(MCP)]",
        "return [Object.keys(namespaces), namespaces.MCP === MCP, typeof MCP.docs.searchPages]",
        "return (await API.list()).files.map((f) => [f.path, f.bytes])",
        "return (await API.read('mcp/index.d.ts')).content.length",
    ] {
        h.both(probe).await;
    }
}

#[tokio::test]
async fn prototypes_identity_and_descriptors_match() {
    let h = harness_with(specs());
    assert_eq!(
        h.value(
            r#"const f = tools.__proto__;
               return [typeof f, Object.getPrototypeOf(tools) === Object.prototype, f === tools.__proto__,
                       typeof tools.toString, tools.toString === Object.prototype.toString,
                       Object.keys(tools).length, f === tools.__proto__, typeof tools.then]"#
        )
        .await,
        json!(["function", true, true, "function", false, 8, true, "undefined"])
    );
    // The five globals the same in every run are defined in the image (before the run's own);
    // all ten keep the same descriptor, and a program cannot replace or delete any.
    let globals = r#"const names = ["text", "json", "yield_control", "console", "nodes",
                                     "ALL_TOOLS", "tools", "API", "MCP", "namespaces"];
        const kept = names.filter((n) => { try { globalThis[n] = 1; delete globalThis[n]; } catch (e) {}
                                           return globalThis[n] !== 1 && n in globalThis; });
        return [Object.getOwnPropertyNames(globalThis).filter((n) => names.includes(n)),
                names.map((n) => JSON.stringify(Object.getOwnPropertyDescriptor(globalThis, n), (k, v) => k === "value" ? typeof v : v)),
                kept.length]"#;
    let function =
        r#"{"value":"function","writable":false,"enumerable":false,"configurable":false}"#;
    let object = r#"{"value":"object","writable":false,"enumerable":false,"configurable":false}"#;
    let expected = json!([
        [
            "text",
            "json",
            "yield_control",
            "console",
            "nodes",
            "ALL_TOOLS",
            "tools",
            "API",
            "MCP",
            "namespaces"
        ],
        [function, function, function, object, object, object, object, object, object, object],
        10
    ]);
    assert_eq!(h.value(globals).await, expected);
    // The same in the next run (on a warm VM or a new instance alike).
    assert_eq!(h.value(globals).await, expected);
    // A function handed out before anything listed `tools` is the one `tools` keeps.
    assert_eq!(
        h.value("const a = tools.echo; const k = Object.keys(tools); return [a === tools.echo, k.length]")
            .await,
        json!([true, 8])
    );
}

#[tokio::test]
async fn changing_the_globals_fails_the_same_way() {
    let h = harness_with(specs());
    // Each as the very first thing the program does to the global, sloppy and strict.
    let mut differ = Vec::new();
    for probe in [
        "tools.echo = 1; tools.fresh = 2; return [typeof tools.echo, tools.fresh]",
        "return (function () { 'use strict'; try { tools.echo = 1; } catch (e) { return [e.name, e.message]; } })()",
        "return (function () { 'use strict'; try { tools.fresh = 1; } catch (e) { return [e.name, e.message]; } })()",
        "return (function () { 'use strict'; try { ALL_TOOLS[0] = 1; } catch (e) { return [e.name, e.message]; } })()",
        "return (function () { 'use strict'; try { ALL_TOOLS.push(1); } catch (e) { return [e.name, e.message]; } })()",
        "return [delete tools.echo, delete tools.search, delete ALL_TOOLS[0], typeof tools.echo]",
        "try { Object.defineProperty(tools, 'echo', {value: 1}); } catch (e) { return [e.name, e.message]; }",
        "try { Object.defineProperty(ALL_TOOLS, 'x', {value: 1}); } catch (e) { return [e.name, e.message]; }",
        "return [Reflect.set(tools, 'echo', 1), Reflect.set(tools, 'fresh', 1), Reflect.setPrototypeOf(tools, null)]",
        "tools = 1; ALL_TOOLS = 2; MCP = 3; return [typeof tools, Array.isArray(ALL_TOOLS), typeof MCP]",
        "return [delete globalThis.tools, delete globalThis.ALL_TOOLS, typeof tools]",
        "try { ALL_TOOLS.sort(); } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.reverse(); } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.pop(); } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.splice(0, 1); } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.length = 0; return ALL_TOOLS.length; } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS[0].name = 'x'; return ALL_TOOLS[0].name; } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.unshift(1); } catch (e) { return [e.name, e.message]; }",
        "try { ALL_TOOLS.fill(1); } catch (e) { return [e.name, e.message]; }",
        "try { Object.assign(tools, {x: 1}); } catch (e) { return [e.name, e.message]; }",
        "try { Object.setPrototypeOf(tools, null); } catch (e) { return [e.name, e.message]; }",
        "return (function () { 'use strict'; try { delete tools.echo; } catch (e) { return [e.name, e.message]; } })()",
        "return (function () { 'use strict'; try { delete ALL_TOOLS[0]; } catch (e) { return [e.name, e.message]; } })()",
        "try { Object.preventExtensions(tools); return Object.isExtensible(tools); } catch (e) { return [e.name, e.message]; }",
    ] {
        let (eager, lazy) = h.pair(probe).await;
        if eager != lazy {
            differ.push(json!({"probe": probe, "eager": eager, "lazy": lazy}));
        }
    }
    // The one difference, documented in docs/guest-abi.md ("Run context"): adding elements to
    // `ALL_TOOLS` reaches the frozen array through the proxy's [[DefineOwnProperty]], whose
    // refusal QuickJS words after the array's read-only length.
    let added = |probe: &str| {
        json!({"probe": probe,
               "eager": {"status": "completed", "value": ["TypeError", "object is not extensible"], "output": []},
               "lazy": {"status": "completed", "value": ["TypeError", "'length' is read-only"], "output": []}})
    };
    // And, as the very first touch, `Object.defineProperty` / `Object.setPrototypeOf` throw
    // QuickJS's proxy wording: the traps forward to `Reflect` so that `Reflect.defineProperty` /
    // `Reflect.setPrototypeOf` answer `false` as on the frozen object (issue 27 item 8), and a
    // trap cannot tell which of the two functions called it. Still a `TypeError`.
    let worded = |probe: &str, eager: &str, lazy: &str| {
        json!({"probe": probe,
               "eager": {"status": "completed", "value": ["TypeError", eager], "output": []},
               "lazy": {"status": "completed", "value": ["TypeError", lazy], "output": []}})
    };
    assert_eq!(
        differ,
        vec![
            added("return (function () { 'use strict'; try { ALL_TOOLS.push(1); } catch (e) { return [e.name, e.message]; } })()"),
            worded(
                "try { Object.defineProperty(tools, 'echo', {value: 1}); } catch (e) { return [e.name, e.message]; }",
                "property is not configurable",
                "proxy: defineProperty exception"
            ),
            worded(
                "try { Object.defineProperty(ALL_TOOLS, 'x', {value: 1}); } catch (e) { return [e.name, e.message]; }",
                "object is not extensible",
                "proxy: defineProperty exception"
            ),
            added("try { ALL_TOOLS.unshift(1); } catch (e) { return [e.name, e.message]; }"),
            worded(
                "try { Object.setPrototypeOf(tools, null); } catch (e) { return [e.name, e.message]; }",
                "object is not extensible",
                "proxy: bad prototype"
            ),
        ]
    );
}

#[tokio::test]
async fn conveniences_call_the_right_tool_before_and_after_a_wait() {
    let h = harness_with(specs());
    assert_eq!(
        h.value("return [await tools.echo({a: 1}), await tools.$ship_it(), await tools.__proto__({p: true})]")
            .await,
        json!([
            {"tool": "echo", "input": {"a": 1}},
            {"tool": "$ship_it", "input": {}},
            {"tool": "__proto__", "input": {"p": true}}
        ])
    );
    // The run first touches the catalog after a `wait` restored it into a fresh VM.
    assert_eq!(
        h.value(
            "await yield_control('pause'); const r = await tools.echo({after: 'wait'}); return [r, Object.keys(tools).length, ALL_TOOLS.length, Object.keys(MCP)]"
        )
        .await,
        json!([{"tool": "echo", "input": {"after": "wait"}}, 8, 8, ["docs", "$api"]])
    );
    assert_eq!(h.calls.lock().unwrap().len(), 8);
    // Missing conveniences fail with the same text.
    h.both("await tools.deploy({})").await;
    h.both("await tools.dup({})").await;
}

#[tokio::test]
async fn keys_that_cannot_be_conveniences_answer_without_the_host() {
    let h = harness_with(specs());
    // A lone surrogate cannot cross to the host as UTF-8; a patched RegExp must not change which
    // names are looked up. Each probe runs first, before anything fills `tools`.
    assert_eq!(
        h.value(
            r#"return [tools["\uD800"], "\uD800" in tools, tools["ech\uDC00o"], typeof tools[""]]"#
        )
        .await,
        json!([null, false, null, "undefined"])
    );
    assert_eq!(
        h.value(
            r#"RegExp.prototype.exec = () => null; RegExp.prototype.test = () => false;
               return [typeof tools.echo, typeof tools.$ship_it, "echo" in tools, typeof tools["bad-name"]]"#
        )
        .await,
        json!(["function", "function", true, "undefined"])
    );
}

#[tokio::test]
async fn patched_intrinsics_do_not_change_what_the_fill_builds() {
    let h = harness_with(specs());
    assert_eq!(
        h.value(
            r#"const { freeze, defineProperty } = Object, { get, ownKeys } = Reflect, { parse } = JSON, ProxyCtor = Proxy;
               Object.defineProperty(Array.prototype, 0, { set() { throw new Error("setter ran"); }, configurable: true });
               Object.defineProperty(Object.prototype, "fresh", { set() { throw new Error("setter ran"); }, configurable: true });
               Object.freeze = () => { throw new Error("freeze replaced"); };
               Object.defineProperty = () => { throw new Error("defineProperty replaced"); };
               Reflect.get = () => 42; Reflect.ownKeys = () => [];
               JSON.parse = () => [];
               Proxy = function () { throw new Error("Proxy replaced"); };
               const seen = [Object.keys(tools), ALL_TOOLS.map((t) => t.name), Object.keys(MCP),
                             (await API.list()).files.length > 0, Object.isFrozen(ALL_TOOLS)];
               Object.freeze = freeze; Object.defineProperty = defineProperty; Reflect.get = get;
               Reflect.ownKeys = ownKeys; JSON.parse = parse; Proxy = ProxyCtor;
               delete Array.prototype[0]; delete Object.prototype.fresh;
               return seen;"#
        )
        .await,
        json!([
            ["search", "describe", "call", "callValue", "__proto__", "echo", "toString", "$ship_it"],
            ["__proto__", "bad-name", "call", "echo", "toString", "$ship_it", "dup", "dup"],
            ["docs", "$api"],
            true,
            true
        ])
    );
}

#[tokio::test]
async fn an_empty_catalog_and_one_without_mcp() {
    let h = harness_with(vec![]);
    assert_eq!(
        h.value("return [Object.keys(tools), ALL_TOOLS, typeof MCP, Object.keys(namespaces), (await API.list()).files]")
            .await,
        json!([["search", "describe", "call", "callValue"], [], "undefined", [], []])
    );
    let h = harness_with(vec![ToolSpec::core("echo", "Echo.")]);
    assert_eq!(
        h.value("return [Object.keys(tools), ALL_TOOLS.length, typeof MCP, 'MCP' in globalThis]")
            .await,
        json!([
            ["search", "describe", "call", "callValue", "echo"],
            1,
            "undefined",
            false
        ])
    );
}
