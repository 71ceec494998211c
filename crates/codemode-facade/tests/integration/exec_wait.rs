//! exec/wait end to end over the real runtime, with a scripted tool executor. Exact values from
//! docs/contract/examples.md#s10 where it gives them.

use crate::common;
use crate::examples;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_config::{CodeModeConfig, Enabled};
use codemode_facade::{CodeMode, CodeModeResult, ErrorCode, RunEnv, WaitReason};
use codemode_runtime::{AbortHandle, Runtime};
use examples::e26_tool;
use serde_json::{json, Value};

/// Fixture tools: return `{name, input}` as details (docs/contract/examples.md#fixtures "Fixtures"), after an
/// optional per-tool delay; `fail` always errors.
#[derive(Default)]
struct Fixture {
    calls: Mutex<Vec<(String, Value)>>,
    call_ids: Mutex<Vec<String>>,
    delays: HashMap<String, Duration>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

struct Exec(Arc<Fixture>);

impl ToolExecutor for Exec {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        let this = self.0.clone();
        Box::pin(async move {
            this.calls
                .lock()
                .unwrap()
                .push((call.tool_name.clone(), call.input.clone()));
            this.call_ids
                .lock()
                .unwrap()
                .push(call.tool_call_id.clone());
            let now = this.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            this.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let delay = this
                .delays
                .get(&call.tool_name)
                .copied()
                .unwrap_or_default();
            tokio::time::sleep(delay).await;
            this.in_flight.fetch_sub(1, Ordering::SeqCst);
            if call.tool_name == "fail" {
                return Err(ToolError::failed("fast failure"));
            }
            let details = json!({"name": call.tool_name, "input": call.input});
            Ok(
                json!({"content": [{"type": "text", "text": details.to_string()}], "details": details}),
            )
        })
    }
}

fn scope() -> RunScope {
    RunScope {
        run_id: Some("run-code-mode".into()),
        session_id: Some("session-code-mode".into()),
        session_key: Some("agent:main:main".into()),
        agent_id: None,
    }
}

struct Harness {
    cm: CodeMode,
    env: RunEnv,
    fixture: Arc<Fixture>,
}

fn harness_with(config: Value, delays: &[(&str, u64)], extra: Vec<ToolSpec>) -> Harness {
    harness_from(codemode_config::resolve(&config).config, delays, extra)
}

fn harness_from(config: CodeModeConfig, delays: &[(&str, u64)], extra: Vec<ToolSpec>) -> Harness {
    let mut specs = vec![
        ToolSpec::plugin("fake-code-mode", "fake_create_ticket", "Create a ticket.")
            .with_parameters(
                json!({"type": "object", "properties": {"value": {"type": "string"}}}),
            ),
        ToolSpec::core("slow", "A slow tool."),
        ToolSpec::core("fail", "Always fails."),
        ToolSpec::core("read", "Read text."),
    ];
    specs.extend(extra);
    let limits = SearchLimits {
        max_search_limit: config.max_search_limit() as u32,
        search_default_limit: config.search_default_limit() as u32,
    };
    let catalog = Arc::new(Catalog::build(specs, &limits).unwrap());
    let fixture = Arc::new(Fixture {
        delays: delays
            .iter()
            .map(|(n, ms)| (n.to_string(), Duration::from_millis(*ms)))
            .collect(),
        ..Fixture::default()
    });
    let env = RunEnv::new(config, catalog, Arc::new(Exec(fixture.clone())), scope());
    Harness {
        cm: CodeMode::new(Runtime::global().unwrap()),
        env,
        fixture,
    }
}

fn harness() -> Harness {
    harness_with(json!(true), &[], vec![])
}

impl Harness {
    async fn exec(&self, code: &str) -> CodeModeResult {
        self.cm
            .exec(&self.env, &json!({"code": code}), &AbortHandle::new())
            .await
    }
    async fn wait(&self, run_id: &str) -> CodeModeResult {
        self.cm
            .wait(&scope(), &json!({"runId": run_id}), &AbortHandle::new())
            .await
    }
    /// Follows a run with `wait` until it is no longer waiting, starting from `first`.
    async fn wait_done(&self, run_id: &str, first: CodeModeResult) -> CodeModeResult {
        let mut last = first;
        while last.status() == "waiting" {
            last = self.wait(run_id).await;
        }
        last
    }
    fn calls(&self) -> usize {
        self.fixture.calls.lock().unwrap().len()
    }
}

fn value(r: &CodeModeResult) -> &Value {
    match r {
        CodeModeResult::Completed { value, .. } => value,
        other => panic!(
            "expected completed, got {}",
            serde_json::to_string_pretty(other).unwrap()
        ),
    }
}

fn failure(r: &CodeModeResult) -> (&str, ErrorCode) {
    match r {
        CodeModeResult::Failed { error, code, .. } => (error.as_str(), code.unwrap()),
        other => panic!(
            "expected failed, got {}",
            serde_json::to_string_pretty(other).unwrap()
        ),
    }
}

/// What one `exec` in a [`Case`] must return.
enum Expect {
    /// `completed` with exactly this value.
    Value(Value),
    /// `failed` with exactly this message and code.
    Failure(&'static str, ErrorCode),
    /// Exactly this whole result JSON.
    Json(Value),
}

/// One row of the exec table: a fresh harness from `config`, `delays` and `extra` tools, one
/// `exec` of `input`, and exact checks of the result and, where set, of its `output`, its
/// telemetry counts, the executor's calls (and calls still in flight) and the parked runs.
struct Case {
    name: &'static str,
    config: Value,
    delays: &'static [(&'static str, u64)],
    extra: fn() -> Vec<ToolSpec>,
    input: Value,
    expect: Expect,
    /// `result.output` as JSON.
    output: Option<Value>,
    /// `(searchCount, describeCount, callCount)`.
    telemetry: Option<(u64, u64, u64)>,
    calls: Option<usize>,
    in_flight: Option<usize>,
    parked: Option<usize>,
}

impl Case {
    /// `exec({code})` with `tools.codeMode: true`, no delays and the fixture tools only.
    fn new(name: &'static str, code: &str, expect: Expect) -> Case {
        Case::input(name, json!({ "code": code }), expect)
    }
    /// `exec(input)` for an input that is not just `{code}`.
    fn input(name: &'static str, input: Value, expect: Expect) -> Case {
        Case {
            name,
            config: json!(true),
            delays: &[],
            extra: Vec::new,
            input,
            expect,
            output: None,
            telemetry: None,
            calls: None,
            in_flight: None,
            parked: None,
        }
    }
    fn config(self, config: Value) -> Case {
        Case { config, ..self }
    }
    fn delays(self, delays: &'static [(&'static str, u64)]) -> Case {
        Case { delays, ..self }
    }
    fn extra(self, extra: fn() -> Vec<ToolSpec>) -> Case {
        Case { extra, ..self }
    }
    fn output(self, output: Value) -> Case {
        Case {
            output: Some(output),
            ..self
        }
    }
    fn telemetry(self, counts: (u64, u64, u64)) -> Case {
        Case {
            telemetry: Some(counts),
            ..self
        }
    }
    fn calls(self, calls: usize) -> Case {
        Case {
            calls: Some(calls),
            ..self
        }
    }
    fn in_flight(self, in_flight: usize) -> Case {
        Case {
            in_flight: Some(in_flight),
            ..self
        }
    }
    fn parked(self, parked: usize) -> Case {
        Case {
            parked: Some(parked),
            ..self
        }
    }

    async fn run(&self) {
        let name = self.name;
        let h = harness_with(self.config.clone(), self.delays, (self.extra)());
        let r = h.cm.exec(&h.env, &self.input, &AbortHandle::new()).await;
        match &self.expect {
            Expect::Value(expected) => assert_eq!(value(&r), expected, "{name}"),
            Expect::Failure(message, code) => {
                assert_eq!(failure(&r), (*message, *code), "{name}")
            }
            Expect::Json(expected) => assert_eq!(&r.to_json(), expected, "{name}"),
        }
        if let Some(output) = &self.output {
            assert_eq!(&r.to_json()["output"], output, "{name}: output");
        }
        if let Some(counts) = self.telemetry {
            let t = r.telemetry();
            assert_eq!(
                (t.search_count, t.describe_count, t.call_count),
                counts,
                "{name}: telemetry"
            );
        }
        if let Some(calls) = self.calls {
            assert_eq!(h.calls(), calls, "{name}: calls");
        }
        if let Some(in_flight) = self.in_flight {
            assert_eq!(
                h.fixture.in_flight.load(Ordering::SeqCst),
                in_flight,
                "{name}: in flight"
            );
        }
        if let Some(parked) = self.parked {
            assert_eq!(h.cm.parked_runs(), parked, "{name}: parked runs");
        }
    }
}

fn files_write() -> Vec<ToolSpec> {
    vec![ToolSpec::plugin(
        "files",
        "write",
        "Write a file to the workspace",
    )]
}

fn github() -> Vec<ToolSpec> {
    vec![e26_tool()]
}

/// Every single-`exec` case with exact expectations. docs/contract/examples.md#s10 example numbers in names.
fn exec_cases() -> Vec<Case> {
    use Expect::{Failure, Json, Value as V};
    vec![
        // `command` alone is the source; `code` and `command` must agree.
        Case::input("command_alias", json!({"command": "return 7;"}), V(json!(7))),
        Case::input(
            "code_and_command_mismatch",
            json!({"code": "return 1;", "command": "return 2;"}),
            Failure(
                "code and command must match when both are provided.",
                ErrorCode::InvalidInput,
            ),
        )
        .parked(0),
        Case::new(
            "result_json_shape",
            "text('hi'); return 1 + 2",
            Json(json!({
                "status": "completed",
                "value": 3,
                "output": [{"type": "text", "text": "hi"}],
                "replaySafe": false,
                "telemetry": common::core_telemetry(4, 0)
            })),
        ),
        Case::new(
            "search_then_call_e20",
            r#"const hits = await tools.search("ticket", { limit: 1 });
const called = await tools.callValue(hits[0].id, { value: "ship" });
text("created");
return called;"#,
            V(json!({"name": "fake_create_ticket", "input": {"value": "ship"}})),
        )
        .output(json!([{"type": "text", "text": "created"}]))
        .telemetry((1, 0, 1))
        .calls(1),
        Case::new(
            "sequential_calls_drain_in_one_exec_e23",
            r#"const out = [];
for (let i = 0; i < 5; i++) out.push((await tools.callValue("fake_create_ticket", { value: i })).input.value);
return out;"#,
            V(json!([0, 1, 2, 3, 4])),
        )
        .config(json!({"enabled": true, "maxPendingToolCalls": 2}))
        .calls(5)
        .parked(0),
        Case::new(
            "pending_cap_fails_before_dispatch",
            "return await Promise.all([1, 2, 3].map((n) => tools.callValue('slow', { n })));",
            Failure(
                "too many pending code mode tool calls. The program started more tool calls at once than the limit; maxPendingToolCalls is 2 (tools.codeMode.maxPendingToolCalls). Start them in batches and await each batch before the next.",
                ErrorCode::InvalidInput,
            ),
        )
        .config(json!({"enabled": true, "maxPendingToolCalls": 2}))
        .calls(0),
        Case::new(
            "unknown_tool_message_e24",
            r#"try { await tools.call("file_write", { path: "a.txt" }); } catch (e) { return e.message; }"#,
            V(json!("Unknown tool id: file_write. Did you mean: write? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.")),
        )
        .extra(files_write)
        .calls(0),
        Case::new(
            "missing_convenience_says_what_an_unknown_id_says",
            "const a = 1;\nreturn await tools.file_write({ path: \"a.txt\" });",
            Failure(
                "TypeError: not a function: tools.file_write is not a convenience function. Unknown tool id: file_write. Did you mean: write? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.\n    at <anonymous> (openclaw-code-mode:user.js:2:20)",
                ErrorCode::InternalError,
            ),
        )
        .extra(files_write)
        .calls(0),
        Case::new(
            "another_failing_call_on_the_line_is_not_blamed_on_a_missing_convenience",
            "const o = {}; o.x(); await tools.file_write({});",
            Failure(
                "TypeError: not a function\n    at <anonymous> (openclaw-code-mode:user.js:1:17)",
                ErrorCode::InternalError,
            ),
        )
        .extra(files_write)
        .calls(0),
        Case::new(
            "missing_convenience_stays_undefined",
            "return [typeof tools.file_write, Object.isFrozen(tools)];",
            V(json!(["undefined", true])),
        )
        .extra(files_write)
        .calls(0),
        Case::new(
            "tool_failure_is_an_error_e25",
            "try { await tools.callValue('fail', {}); } catch (e) { return [e instanceof Error, e.message]; }",
            V(json!([true, "fast failure"])),
        )
        .extra(files_write),
        Case::new(
            "pending_without_host_work_e35",
            "await new Promise(() => undefined); return 'never';",
            Failure(
                "code mode promise is pending without host work",
                ErrorCode::InternalError,
            ),
        )
        .parked(0),
        Case::new(
            "no_node_globals_e34",
            "return [typeof process, typeof module, typeof require];",
            V(json!(["undefined", "undefined", "undefined"])),
        ),
        Case::new(
            "no_host_request_global",
            "return typeof globalThis.__openclawHostRequest;",
            V(json!("undefined")),
        ),
        Case::new(
            "module_access_require_e38",
            "const fs = require('node:fs'); return fs;",
            Failure("code mode module access is disabled.", ErrorCode::InvalidInput),
        ),
        Case::new(
            "module_access_import_e38",
            "return import('node:fs');",
            Failure("code mode module access is disabled.", ErrorCode::InvalidInput),
        ),
        Case::new(
            "module_access_aliased_require_e40",
            "const load = require; return load('node:fs');",
            Failure("code mode module access is disabled.", ErrorCode::InvalidInput),
        ),
        Case::new(
            "module_access_get_builtin_module_e40",
            "return process.getBuiltinModule('node:fs');",
            Failure("code mode module access is disabled.", ErrorCode::InvalidInput),
        ),
        Case::new(
            "output_limit_e41",
            "return 'x'.repeat(2048);",
            Failure(
                "code mode output limit exceeded. The result is 2,050 bytes; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).",
                ErrorCode::OutputLimitExceeded,
            ),
        )
        .config(json!({"enabled": true, "maxOutputBytes": 1024}))
        .output(json!([])),
        Case::new(
            "output_over_limit_stops_before_the_next_call",
            "text('x'.repeat(2000)); return await tools.callValue('fake_create_ticket', {});",
            Failure(
                "code mode output limit exceeded. The output grew past the limit; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).",
                ErrorCode::OutputLimitExceeded,
            ),
        )
        .config(json!({"enabled": true, "maxOutputBytes": 1024}))
        .output(json!([]))
        .calls(0),
        Case::new(
            "detached_calls_are_drained_not_dropped",
            "void tools.callValue('slow', { detached: true }); return 'main done';",
            V(json!("main done")),
        )
        .delays(&[("slow", 100)])
        .calls(1)
        .in_flight(0),
        // The loser ran to completion before the run completed.
        Case::new(
            "race_winner_is_the_first_to_settle",
            "return (await Promise.race([tools.callValue('slow', {}), tools.callValue('fake_create_ticket', {value: 'fast'})])).name;",
            V(json!("fake_create_ticket")),
        )
        .delays(&[("slow", 300)])
        .calls(2),
        Case::input(
            "restart_safe_rejects_side_effects_before_execution",
            json!({"code": "return await tools.callValue('fake_create_ticket', {value: 'x'});", "restartSafe": true}),
            Failure(
                "restart-safe code mode cannot call side-effecting tools.",
                ErrorCode::InvalidInput,
            ),
        )
        .calls(0)
        .parked(0),
        Case::new(
            "api_files_namespaces_and_internals",
            r#"const listed = await API.list("mcp/");
let unknown, invalid;
try { await API.read("mcp/github.d.ts"); } catch (e) { unknown = e.message; }
try { await API.read("mcp/../x"); } catch (e) { invalid = e.message; }
return [listed, unknown, invalid, Object.keys(namespaces), Object.isFrozen(tools), Object.isFrozen(ALL_TOOLS),
        typeof __cm, typeof native, Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__"))];"#,
            V(json!([{"files": []}, "Unknown API file: mcp/github.d.ts", "invalid API file path", [], true, true, "undefined", "undefined", []])),
        ),
        Case::new(
            "argument_type_errors",
            r#"const out = [];
for (const f of [() => tools.describe(1), () => tools.call(2), () => tools.callValue(null), () => tools.search({q: 1})]) {
  try { await f(); out.push("no error"); } catch (e) { out.push(e.message); }
}
return out;"#,
            V(json!([
                "describe id must be a string.",
                "call id must be a string.",
                "callValue id must be a string.",
                "search query must be a string."
            ])),
        ),
        // Stringifying the value throws (BigInt), and it is not an Error: String(v).
        Case::new(
            "json_adapter_examples",
            r#"text({a: 1}); text(undefined); text("plain"); json(new Error("x")); json(12n); json(undefined);
const cyc = {}; cyc.self = cyc; json(cyc);
json({d: new Date(0), m: new Map([[1, 2]]), f() {}, u: undefined, n: NaN, i: Infinity, t: {toJSON() { return "T"; }}});
const e = new Error("boom"); e.self = e; json(e);
return {big: 12n, nested: [undefined, () => 1]};"#,
            V(json!("[object Object]")),
        )
        .output(json!([
            {"type": "text", "text": "{\"a\":1}"},
            {"type": "text", "text": "null"},
            {"type": "text", "text": "plain"},
            {"type": "json", "value": {"name": "Error", "message": "x"}},
            {"type": "json", "value": "12"},
            {"type": "json", "value": null},
            {"type": "json", "value": "[object Object]"},
            {"type": "json", "value": {"d": "1970-01-01T00:00:00.000Z", "m": {}, "n": null, "i": null, "t": "T"}},
            {"type": "json", "value": {"name": "Error", "message": "boom"}}
        ])),
        // Lone surrogates become U+FFFD instead of breaking the bridge.
        Case::new(
            "lone_surrogates_become_replacement_characters",
            r#"text("a\ud800b"); json(["\udc00"]); return {"\ud800": "x\udfff", ok: (await tools.callValue("fake_create_ticket", {value: "p\ud800"})).input.value};"#,
            V(json!({"\u{fffd}": "x\u{fffd}", "ok": "p\u{fffd}"})),
        )
        .output(json!([{"type": "text", "text": "a\u{fffd}b"}, {"type": "json", "value": ["\u{fffd}"]}])),
        // Object.prototype.toJSON cannot rewrite bridge envelopes.
        Case::new(
            "prototype_to_json_cannot_rewrite_envelopes",
            r#"Object.prototype.toJSON = function () { return "x"; }; text("hi"); return (await tools.callValue("fake_create_ticket", {value: 1})).name;"#,
            V(json!("fake_create_ticket")),
        )
        .output(json!([{"type": "text", "text": "hi"}])),
        // An argument the JSON adapter cannot stringify (a cycle, a BigInt) becomes its
        // `String()` (docs/contract/json.md#s6) and so fails the one-object check: the tool never runs
        // with `{}` plus defaults instead of the caller's input.
        Case::new(
            "mcp_namespace_unserialisable_argument_is_rejected",
            r#"const o = {owner: "o", repo: "r", title: "t"}; o.self = o;
const errors = [];
for (const arg of [o, {owner: "o", repo: "r", title: "t", n: 1n}]) {
  try { await MCP.github.createIssue(arg); errors.push("called"); } catch (e) { errors.push(e.message); }
}
Array.prototype.pop = () => { throw new Error("patched"); };
const r = await MCP.github.createIssue({owner: "o", repo: "r", title: "t"}, undefined);
return {errors, body: r.details.input.body};"#,
            V(json!({
                "errors": [
                    "MCP namespace tools accept one object argument.",
                    "MCP namespace tools accept one object argument."
                ],
                "body": ""
            })),
        )
        .extra(github)
        .calls(1),
        // The largest timeout and TTL a config can hold (u64::MAX clamps to them) make deadlines
        // without overflowing.
        Case::new("largest_timeout_does_not_panic", "return 'ok'", V(json!("ok")))
            .config(json!({"enabled": true, "timeoutMs": u64::MAX, "snapshotTtlSeconds": u64::MAX})),
    ]
}

#[tokio::test]
async fn exec_table() {
    let cases = exec_cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    for case in &cases {
        case.run().await;
    }
}

/// The largest limits a host can set through the clamping setters (`u64::MAX` becomes 60 s and
/// one day) give deadlines that do not overflow, in `exec` and in `wait`.
#[tokio::test]
async fn largest_timeout_set_by_a_host_does_not_panic() {
    let mut config = CodeModeConfig::default();
    config
        .set_enabled(Enabled::On)
        .set_timeout_ms(u64::MAX)
        .set_snapshot_ttl_seconds(u64::MAX);
    assert_eq!(
        (config.timeout_ms(), config.snapshot_ttl_seconds()),
        (60_000, 86_400)
    );
    let h = harness_from(config, &[], vec![]);
    assert_eq!(value(&h.exec("return 'ok'").await), &json!("ok"));
    let r = h.exec("await yield_control(); return 'resumed';").await;
    let run_id = r.run_id().expect("waiting").to_string();
    assert_eq!(value(&h.wait(&run_id).await), &json!("resumed"));
    assert_eq!(h.cm.parked_runs(), 0);
}

#[tokio::test]
async fn named_value_and_envelope_e21() {
    let h = harness();
    let r = h
        .exec(
            r#"const id = "openclaw:fake-code-mode:fake_create_ticket", input = { value: "ship" };
return { named: await tools.fake_create_ticket(input), value: await tools.callValue(id, input),
         envelope: await tools.call(id, input) };"#,
        )
        .await;
    let v = value(&r);
    let expected = json!({"name": "fake_create_ticket", "input": {"value": "ship"}});
    assert_eq!(v["named"], expected);
    assert_eq!(v["value"], expected);
    assert_eq!(
        v["envelope"]["tool"]["id"],
        json!("openclaw:fake-code-mode:fake_create_ticket")
    );
    assert_eq!(v["envelope"]["tool"]["name"], json!("fake_create_ticket"));
    assert_eq!(v["envelope"]["result"]["details"], expected);
    assert_eq!(r.telemetry().call_count, 3);
    assert_eq!(h.calls(), 3);
}

#[tokio::test]
async fn promise_all_dispatches_concurrently() {
    let h = harness_with(json!(true), &[("slow", 200)], vec![]);
    let started = Instant::now();
    let r = h
        .exec("const r = await Promise.all([1, 2, 3].map((n) => tools.callValue('slow', { n }))); return r.map((x) => x.input.n);")
        .await;
    assert_eq!(value(&r), &json!([1, 2, 3]));
    assert_eq!(h.fixture.max_in_flight.load(Ordering::SeqCst), 3);
    // Three 200 ms calls in parallel, not 600 ms in sequence.
    assert!(
        started.elapsed() < Duration::from_millis(590),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn slow_call_waits_then_wait_completes() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 300}),
        &[("slow", 700)],
        vec![],
    );
    let r = h.exec("text('before'); const v = await tools.callValue('slow', { n: 1 }); text('after'); return v.input.n + 1;").await;
    let CodeModeResult::Waiting {
        run_id,
        reason,
        pending_tool_calls,
        output,
        ..
    } = &r
    else {
        panic!("expected waiting: {r:?}");
    };
    assert!(run_id.starts_with("cm_") && run_id.len() == 39, "{run_id}");
    assert_eq!(*reason, WaitReason::PendingTools);
    assert_eq!(
        serde_json::to_value(pending_tool_calls).unwrap(),
        json!([{"id": "bridge:callValue:1", "method": "callValue"}])
    );
    assert_eq!(
        output,
        &[codemode_bridge::OutputItem::Text {
            text: "before".into()
        }]
    );
    assert_eq!(h.cm.parked_runs(), 1);

    // A wait from another session is refused and the run stays stored.
    let other = RunScope {
        session_id: Some("session-other".into()),
        session_key: Some("agent:main:other".into()),
        ..scope()
    };
    let refused =
        h.cm.wait(&other, &json!({"runId": run_id}), &AbortHandle::new())
            .await;
    assert_eq!(
        failure(&refused),
        (
            "code mode run belongs to a different session.",
            ErrorCode::InvalidInput
        )
    );
    let no_run = RunScope {
        run_id: None,
        ..scope()
    };
    let refused =
        h.cm.wait(&no_run, &json!({"runId": run_id}), &AbortHandle::new())
            .await;
    assert_eq!(
        failure(&refused),
        (
            "code mode run belongs to a different agent run.",
            ErrorCode::InvalidInput
        )
    );
    assert_eq!(h.cm.parked_runs(), 1);

    // The first wait may come back waiting (same runId, no output) before the tool finishes.
    let mut last = h.wait(run_id).await;
    while let CodeModeResult::Waiting {
        run_id: again,
        output,
        ..
    } = &last
    {
        assert_eq!(again, run_id);
        assert!(output.is_empty());
        last = h.wait(run_id).await;
    }
    assert_eq!(value(&last), &json!(2));
    assert_eq!(
        last.output(),
        &[codemode_bridge::OutputItem::Text {
            text: "after".into()
        }]
    );
    assert_eq!(h.calls(), 1);
    assert_eq!(h.cm.parked_runs(), 0);
    let gone = h.wait(run_id).await;
    assert_eq!(
        failure(&gone),
        (
            "code mode run is unavailable or expired.",
            ErrorCode::InvalidInput
        )
    );
}

#[tokio::test]
async fn concurrent_wait_is_refused() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 200}),
        &[("slow", 600)],
        vec![],
    );
    let r = h
        .exec("return (await tools.callValue('slow', {})).name;")
        .await;
    let run_id = r.run_id().expect("waiting").to_string();
    let (a, b) = tokio::join!(h.wait(&run_id), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        h.wait(&run_id).await
    });
    assert_eq!(
        failure(&b),
        (
            "code mode run is already being resumed.",
            ErrorCode::InvalidInput
        )
    );
    let last = h.wait_done(&run_id, a).await;
    assert_eq!(value(&last), &json!("slow"));
}

#[tokio::test]
async fn wait_argument_errors() {
    let h = harness();
    for input in [json!({}), json!({"runId": "  "}), json!({"runId": 5})] {
        let r = h.cm.wait(&scope(), &input, &AbortHandle::new()).await;
        assert_eq!(
            failure(&r),
            ("runId must be a non-empty string.", ErrorCode::InvalidInput)
        );
    }
    let r =
        h.cm.wait(&scope(), &json!({"run_id": "cm_nope"}), &AbortHandle::new())
            .await;
    assert_eq!(
        failure(&r),
        (
            "code mode run is unavailable or expired.",
            ErrorCode::InvalidInput
        )
    );
}

#[tokio::test]
async fn guest_error_messages_e36_e37_e42() {
    let h = harness();
    // E36, with D16's departure: a program that does not parse is the model's to fix.
    let r = h.exec("const x = ;").await;
    let (e, code) = failure(&r);
    assert_eq!(code, ErrorCode::InvalidInput);
    assert!(
        e.contains("SyntaxError") && e.contains("unexpected token") && !e.starts_with("at "),
        "{e}"
    );
    assert!(
        e.ends_with(
            "\nNo tools were dispatched; correct the JavaScript source and submit it again."
        ),
        "{e}"
    );
    let r = h.exec("return missingFn();").await;
    let (e, _) = failure(&r);
    assert!(
        e.contains("ReferenceError") && e.contains("missingFn is not defined"),
        "{e}"
    );
    let r = h.exec("text(\"before\"); throw new Error(\"boom\");").await;
    assert!(failure(&r).0.contains("Error: boom"));
    assert_eq!(
        r.output(),
        &[codemode_bridge::OutputItem::Text {
            text: "before".into()
        }]
    );
}

/// Issue 25 / D16: a syntax error cites a position inside the program and says nothing ran; a
/// `SyntaxError` thrown while the program runs stays an ordinary failure.
#[tokio::test]
async fn syntax_errors_are_invalid_input_at_the_users_position() {
    let h = harness();
    let r = h.exec("return (1 +").await;
    assert_eq!(
        failure(&r),
        (
            "SyntaxError: unexpected end of input\n    at openclaw-code-mode:user.js:1:12\nNo tools were dispatched; correct the JavaScript source and submit it again.",
            ErrorCode::InvalidInput
        )
    );
    let r = h.exec("const x = 1;\nretun x").await;
    assert_eq!(
        failure(&r),
        (
            "SyntaxError: expecting ';'\n    at openclaw-code-mode:user.js:2:7\nNo tools were dispatched; correct the JavaScript source and submit it again.",
            ErrorCode::InvalidInput
        )
    );
    let r = h
        .exec("await tools.read({});\nreturn JSON.parse('x');")
        .await;
    let (e, code) = failure(&r);
    assert_eq!(code, ErrorCode::InternalError);
    assert!(
        e.starts_with("SyntaxError: ") && !e.contains("No tools were dispatched"),
        "{e}"
    );
    assert_eq!(h.calls(), 1);
}

/// Issue 25: a misspelt convenience or id gets "Did you mean".
#[tokio::test]
async fn misspelt_tools_get_suggestions() {
    let h = harness_with(
        json!(true),
        &[],
        vec![ToolSpec::plugin(
            "weather",
            "weather",
            "Current weather for a location.",
        )],
    );
    let recovery = "Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";
    let r = h
        .exec("try { await tools.callValue('wether', {}); } catch (e) { return e.message; }")
        .await;
    assert_eq!(
        value(&r),
        &json!(format!(
            "Unknown tool id: wether. Did you mean: weather? {recovery}"
        ))
    );
    let r = h.exec("return await tools.wether({});").await;
    let (e, _) = failure(&r);
    assert!(
        e.starts_with(&format!("TypeError: not a function: tools.wether is not a convenience function. Unknown tool id: wether. Did you mean: weather? {recovery}")),
        "{e}"
    );
    assert_eq!(h.calls(), 0);
}

/// Issue 25: a run that computed until close to its deadline and whose only call then settled
/// is not parked with nothing pending; its result is delivered and it completes.
#[tokio::test]
async fn a_run_whose_calls_all_settled_does_not_park() {
    let h = harness_with(json!({"enabled": true, "timeoutMs": 1000}), &[], vec![]);
    let r = h
        .exec("const t = Date.now(); while (Date.now() - t < 800) {}\nreturn (await tools.read({n: 1})).input.n;")
        .await;
    assert_eq!(value(&r), &json!(1));
    assert_eq!(h.calls(), 1);
}

#[tokio::test]
async fn timeout_e43() {
    let h = harness_with(json!({"enabled": true, "timeoutMs": 100}), &[], vec![]);
    let started = Instant::now();
    let r = h.exec("while (true) {}").await;
    assert_eq!(
        failure(&r),
        (
            "code mode timeout exceeded. The program computed without waiting on a tool until the call's budget ran out; timeoutMs is 100 (tools.codeMode.timeoutMs).",
            ErrorCode::Timeout
        )
    );
    assert!(
        started.elapsed() < Duration::from_millis(100 + 250 + 250),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(value(&h.exec("return 'next'").await), &json!("next"));
}

#[tokio::test]
async fn abort_fails_the_run() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 5000}),
        &[("slow", 3000)],
        vec![],
    );
    let abort = AbortHandle::new();
    let trigger = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.abort();
    });
    let started = Instant::now();
    let r =
        h.cm.exec(
            &h.env,
            &json!({"code": "return await tools.callValue('slow', {});"}),
            &abort,
        )
        .await;
    assert_eq!(
        failure(&r),
        ("code mode execution aborted", ErrorCode::Aborted)
    );
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert_eq!(h.cm.parked_runs(), 0);
}

#[tokio::test]
async fn yield_control_parks_and_resumes_e29() {
    let h = harness();
    let r = h
        .cm
        .exec(
            &h.env,
            &json!({"code": "text(\"before\"); const y = await yield_control(\"pause\"); text(\"after\"); return [\"done\", y];", "restartSafe": true}),
            &AbortHandle::new(),
        )
        .await;
    let j = r.to_json();
    assert_eq!(j["status"], json!("waiting"));
    assert_eq!(j["reason"], json!("yield"));
    assert_eq!(j["replaySafe"], json!(true));
    assert_eq!(
        j["pendingToolCalls"],
        json!([{"id": "bridge:yield:1", "method": "yield"}])
    );
    assert_eq!(j["output"], json!([{"type": "text", "text": "before"}]));
    let done = h.wait(r.run_id().unwrap()).await.to_json();
    assert_eq!(done["status"], json!("completed"));
    assert_eq!(
        done["value"],
        json!(["done", {"status": "yielded", "reason": "pause"}])
    );
    assert_eq!(done["replaySafe"], json!(true));
    assert_eq!(done["output"], json!([{"type": "text", "text": "after"}]));
}

/// A read-only core tool is replay-safe: the run parks (no auto-drain) and wait completes it.
/// (A side-effecting tool is refused before execution: `exec_cases`.)
#[tokio::test]
async fn restart_safe_read_only_call_parks() {
    let h = harness();
    let input = json!({"code": "return (await tools.callValue('openclaw:core:read', {path: 'x'})).name;", "restartSafe": true});
    let r = h.cm.exec(&h.env, &input, &AbortHandle::new()).await;
    assert_eq!(r.status(), "waiting");
    let run_id = r.run_id().unwrap();
    let last = h.wait_done(run_id, h.wait(run_id).await).await;
    assert_eq!(value(&last), &json!("read"));
}

#[tokio::test]
async fn nested_call_ids_follow_the_parent_across_waits() {
    let mut h = harness_with(
        json!({"enabled": true, "timeoutMs": 200}),
        &[("slow", 400)],
        vec![],
    );
    h.env.parent_tool_call_id = Some("call abc/1".into());
    let r = h.exec("await tools.callValue('fake_create_ticket', {}); await tools.callValue('slow', {}); return await tools.callValue('fake_create_ticket', {});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    let last = h.wait_done(&run_id, h.wait(&run_id).await).await;
    assert_eq!(last.status(), "completed");
    assert_eq!(
        *h.fixture.call_ids.lock().unwrap(),
        vec![
            "tool_search_code:call_abc_1:fake_create_ticket:1".to_string(),
            "tool_search_code:call_abc_1:slow:2".to_string(),
            "tool_search_code:call_abc_1:fake_create_ticket:3".to_string(),
        ]
    );
}

#[tokio::test]
async fn twelve_concurrent_execs() {
    let h = Arc::new(harness_with(json!(true), &[("slow", 50)], vec![]));
    let mut handles = Vec::new();
    for i in 0..12 {
        let h = h.clone();
        handles.push(tokio::spawn(async move {
            let code = format!("const v = await tools.callValue('slow', {{ i: {i} }}); text('run {i}'); return v.input.i * 2;");
            h.exec(&code).await
        }));
    }
    for (i, handle) in handles.into_iter().enumerate() {
        let r = handle.await.unwrap();
        assert_eq!(value(&r), &json!(i * 2));
        assert_eq!(
            r.output(),
            &[codemode_bridge::OutputItem::Text {
                text: format!("run {i}")
            }]
        );
    }
    assert_eq!(h.calls(), 12);
    assert_eq!(h.cm.parked_runs(), 0);
}

#[tokio::test]
async fn failures_leave_no_run_and_the_next_exec_is_healthy() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 150, "maxOutputBytes": 1024, "maxPendingToolCalls": 2}),
        &[],
        vec![],
    );
    for code in [
        "while (true) {}",
        "return 'x'.repeat(5000)",
        "throw new Error('x')",
        "return await Promise.all([1,2,3].map(() => tools.callValue('slow', {})))",
        "const a = []; while (true) a.push(new Array(100000).fill(1));",
        "function f() { return f() } return f()",
        "await new Promise(() => {})",
    ] {
        let r = h.exec(code).await;
        assert_eq!(r.status(), "failed", "{code}: {}", r.to_json());
        assert_eq!(h.cm.parked_runs(), 0, "{code}");
        assert_eq!(
            value(&h.exec("return 'healthy'").await),
            &json!("healthy"),
            "after {code}"
        );
    }
}

#[tokio::test]
async fn expired_runs_are_unavailable_and_removed_e30() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 100, "snapshotTtlSeconds": 1}),
        &[("slow", 5000)],
        vec![],
    );
    let r = h.exec("return await tools.callValue('slow', {});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    assert_eq!(h.cm.parked_runs(), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let gone = h.wait(&run_id).await;
    assert_eq!(
        failure(&gone),
        (
            "code mode run is unavailable or expired.",
            ErrorCode::InvalidInput
        )
    );
    assert_eq!(h.cm.parked_runs(), 0);
}

#[tokio::test]
async fn owner_scope_with_agent_id_e32() {
    let mut h = harness();
    h.env.scope.agent_id = Some("owner".into());
    let r = h
        .exec("await yield_control(\"pause\"); return \"owner-secret\";")
        .await;
    let run_id = r.run_id().expect("waiting").to_string();
    let owner = RunScope {
        agent_id: Some("owner".into()),
        ..scope()
    };
    for (caller, message) in [
        (
            RunScope {
                run_id: None,
                ..owner.clone()
            },
            "code mode run belongs to a different agent run.",
        ),
        (
            RunScope {
                session_id: None,
                ..owner.clone()
            },
            "code mode run belongs to a different session.",
        ),
        (
            RunScope {
                session_key: None,
                ..owner.clone()
            },
            "code mode run belongs to a different session.",
        ),
        (
            RunScope {
                agent_id: None,
                ..owner.clone()
            },
            "code mode run belongs to a different session.",
        ),
    ] {
        let refused =
            h.cm.wait(&caller, &json!({"runId": run_id}), &AbortHandle::new())
                .await;
        assert_eq!(failure(&refused), (message, ErrorCode::InvalidInput));
        assert_eq!(h.cm.parked_runs(), 1);
    }
    let done =
        h.cm.wait(&owner, &json!({"runId": run_id}), &AbortHandle::new())
            .await;
    assert_eq!(value(&done), &json!("owner-secret"));
}

#[tokio::test]
async fn runs_do_not_survive_a_host_restart() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 100}),
        &[("slow", 5000)],
        vec![],
    );
    let r = h.exec("return await tools.callValue('slow', {});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    // A new front in the same process stands for a restarted host: the store is in-process only.
    let restarted = CodeMode::new(Runtime::global().unwrap());
    let gone = restarted
        .wait(&scope(), &json!({"runId": run_id}), &AbortHandle::new())
        .await;
    assert_eq!(
        failure(&gone),
        (
            "code mode run is unavailable or expired.",
            ErrorCode::InvalidInput
        )
    );
    h.cm.clear();
    assert_eq!(h.cm.parked_runs(), 0);
}

#[tokio::test]
async fn end_session_drops_only_that_sessions_runs() {
    let mut h = harness();
    let mine = h.exec("await yield_control(); return 1;").await;
    let mine = mine.run_id().expect("waiting").to_string();
    h.env.scope.session_id = Some("session-other".into());
    let other = h.exec("await yield_control(); return 2;").await;
    let other = other.run_id().expect("waiting").to_string();
    assert_eq!(h.cm.parked_runs(), 2);

    assert_eq!(
        h.cm.end_session(&RunScope::default()),
        0,
        "no session named"
    );
    let unrelated = RunScope {
        session_key: Some("agent:other:main".into()),
        ..RunScope::default()
    };
    assert_eq!(h.cm.end_session(&unrelated), 0);
    assert_eq!(h.cm.end_session(&scope()), 1);
    assert_eq!(h.cm.parked_runs(), 1);
    assert_eq!(
        failure(&h.wait(&mine).await),
        (
            "code mode run is unavailable or expired.",
            ErrorCode::InvalidInput
        )
    );
    let done =
        h.cm.wait(&h.env.scope, &json!({"runId": other}), &AbortHandle::new())
            .await;
    assert_eq!(value(&done), &json!(2));
}

#[tokio::test]
async fn aborted_wait_disposes_the_run() {
    let fast = harness_with(
        json!({"enabled": true, "timeoutMs": 100}),
        &[("slow", 10_000)],
        vec![],
    );
    let r = fast.exec("return await tools.callValue('slow', {});").await;
    let run_id = r.run_id().expect("waiting").to_string();
    let abort = AbortHandle::new();
    let trigger = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.abort();
    });
    let r = fast
        .cm
        .wait(&scope(), &json!({"runId": run_id}), &abort)
        .await;
    assert_eq!(
        failure(&r),
        ("code mode execution aborted", ErrorCode::Aborted)
    );
    assert_eq!(fast.cm.parked_runs(), 0);
}

#[tokio::test]
async fn a_wait_aborted_before_it_starts_disposes_the_run() {
    let fast = harness_with(
        json!({"enabled": true, "timeoutMs": 100}),
        &[("slow", 10_000)],
        vec![],
    );
    let r = fast.exec("return await tools.callValue('slow', {});").await;
    let mut run_id = r.run_id().expect("waiting").to_string();
    let abort = AbortHandle::new();
    abort.abort();
    // Another session's aborted wait leaves the run alone (the scope check comes first).
    let other = RunScope {
        session_id: Some("session-other".into()),
        ..scope()
    };
    let r = fast
        .cm
        .wait(&other, &json!({"runId": run_id}), &abort)
        .await;
    assert_eq!(
        failure(&r),
        (
            "code mode run belongs to a different session.",
            ErrorCode::InvalidInput
        )
    );
    assert_eq!(fast.cm.parked_runs(), 1);
    for wait in ["wait", "wait_with"] {
        let r = if wait == "wait" {
            fast.cm
                .wait(&scope(), &json!({"runId": run_id}), &abort)
                .await
        } else {
            fast.cm
                .wait_with(&fast.env, &json!({"runId": run_id}), &abort)
                .await
        };
        assert_eq!(
            failure(&r),
            ("code mode execution aborted", ErrorCode::Aborted),
            "{wait}"
        );
        assert_eq!(fast.cm.parked_runs(), 0, "{wait}");
        if wait == "wait" {
            // Park another run for the `wait_with` round.
            let r = fast.exec("return await tools.callValue('slow', {});").await;
            run_id = r.run_id().expect("waiting").to_string();
            assert_eq!(fast.cm.parked_runs(), 1);
        }
    }
}

#[tokio::test]
async fn too_many_suspended_runs() {
    let h = harness_with(
        json!({"enabled": true, "timeoutMs": 100}),
        &[("slow", 10_000)],
        vec![],
    );
    for _ in 0..64 {
        assert_eq!(
            h.exec("await yield_control(); return 1;").await.status(),
            "waiting"
        );
    }
    assert_eq!(h.cm.parked_runs(), 64);
    let r = h.exec("await yield_control(); return 1;").await;
    assert_eq!(
        failure(&r),
        (
            "too many suspended code mode runs.",
            ErrorCode::InvalidInput
        )
    );
    // A run that would auto-drain reserves its slot first and is refused before its tool runs.
    let r = h.exec("return await tools.callValue('slow', {});").await;
    assert_eq!(
        failure(&r),
        (
            "too many suspended code mode runs.",
            ErrorCode::InvalidInput
        )
    );
    assert_eq!(h.calls(), 0);
    h.cm.clear();
    assert_eq!(value(&h.exec("return 'ok'").await), &json!("ok"));
}

#[tokio::test]
async fn hostile_error_messages_stay_clean() {
    let h = harness();
    let r = h.exec(r#"throw new Error("bad \ud800 message")"#).await;
    assert!(
        failure(&r).0.starts_with("Error: bad \u{fffd} message"),
        "{}",
        failure(&r).0
    );
    // Huge error messages are cut.
    let r = h.exec(r#"throw new Error("x".repeat(5e6))"#).await;
    let (e, code) = failure(&r);
    assert_eq!(code, ErrorCode::InternalError);
    assert!(
        e.len() < 17_000 && e.ends_with(" … (truncated)"),
        "{}",
        e.len()
    );
}

#[tokio::test]
async fn floods_fail_inside_the_guest_with_spec_codes() {
    let h = harness();
    let r = h
        .exec(r#"const s = "x".repeat(2e5); for (let i = 0; i < 40; i++) text(s); return 1;"#)
        .await;
    assert_eq!(
        failure(&r),
        (
            "code mode output limit exceeded. The output grew past the limit; maxOutputBytes is 65,536 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).",
            ErrorCode::OutputLimitExceeded
        )
    );
    assert!(r.output().is_empty());
    let r = h.exec(r#"for (let i = 0; i < 100000; i++) tools.callValue("slow", {}).catch(() => {}); return 1;"#).await;
    assert_eq!(
        failure(&r),
        (
            "too many pending code mode tool calls. The program started more tool calls at once than the limit; maxPendingToolCalls is 16 (tools.codeMode.maxPendingToolCalls). Start them in batches and await each batch before the next.",
            ErrorCode::InvalidInput
        )
    );
    assert_eq!(h.calls(), 0);
    assert_eq!(value(&h.exec("return 'healthy'").await), &json!("healthy"));
}

#[tokio::test]
async fn mcp_namespace_e26_e27() {
    let h = harness_with(json!(true), &[], vec![e26_tool()]);
    let r = h
        .exec(
            r#"const r = await MCP.github.createIssue({owner: "openclaw", repo: "openclaw", title: "Ship it"});
const root = await MCP.$api();
const api = await MCP.github.$api("createIssue", {schema: true});
const files = await API.list("mcp/");
const decl = await API.read("mcp/github.d.ts");
let missing, unknown;
try { await MCP.github.createIssue({owner: "o"}); } catch (e) { missing = e.message; }
try { await tools.call("github__create_issue", {}); } catch (e) { unknown = e.message; }
return {details: r.details, servers: root.servers, header: api.header.includes("function createIssue("),
  schemaType: api.schemas.createIssue.type, paths: files.files.map((f) => f.path),
  bytesMatch: files.files[1].bytes === decl.bytes && decl.bytes > decl.content.length,
  declHasApi: decl.content.includes("function $api("), missing, unknown,
  search: (await tools.search("github create issue")).filter((e) => e.id.startsWith("mcp:")).length, inAll: ALL_TOOLS.some((e) => e.source === "mcp"),
  inNamespaces: "MCP" in namespaces, serverName: MCP.github.$serverName};"#,
        )
        .await;
    assert_eq!(
        value(&r),
        &json!({
            "details": {"name": "github__create_issue", "input": {"owner": "openclaw", "repo": "openclaw", "title": "Ship it", "body": ""}},
            "servers": [{"identifier": "github", "serverName": "github", "toolCount": 1}],
            "header": true,
            "schemaType": "object",
            "paths": ["mcp/index.d.ts", "mcp/github.d.ts"],
            "bytesMatch": true,
            "declHasApi": true,
            "missing": "Missing required MCP namespace arguments: repo, title",
            "unknown": "Unknown tool id: github__create_issue. Did you mean: fake_create_ticket? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.",
            "search": 0,
            "inAll": false,
            "inNamespaces": true,
            "serverName": "github"
        })
    );
    // The MCP tool ran exactly once (the failed call never reached the executor).
    assert_eq!(h.calls(), 1);
    assert_eq!(r.telemetry().sources.mcp, 1);
}
