//! A program that pollutes `Object.prototype` changes nothing the bridge builds, reads or hands
//! out (issue 27 item 6; docs/guest-abi.md, "Threat model: the guest layer"): every key the
//! engine or the spec's JavaScript reads from an object (`get`, `set`, `value`, `writable`,
//! `enumerable`, `configurable`, `then`, `toJSON`, `constructor`, `length`) is set to a hostile
//! value, and tool inputs, tool values, errors, `tools.search`, `ALL_TOOLS`, `API` and `nodes`
//! are compared, exactly, with the same program run clean. Also the lazy catalog's first touch
//! through `Reflect` (issue 27 item 8).

use crate::common;

use codemode_catalog::ToolSpec;
use serde_json::{json, Value};

use common::{summary, tool_result, Harness, Recording};

/// `fast`, `fast1`, the core `nodes` tool and one MCP tool (so `API` has files), with the
/// catalog installed lazily (the default).
fn harness() -> Harness {
    let specs = vec![
        ToolSpec::core("fast", "Fast echo tool."),
        ToolSpec::core("fast1", "Fast echo tool too."),
        ToolSpec::core("nodes", "Paired Gateway nodes."),
        ToolSpec::mcp_tool("docs", "lookup", "Look a word up."),
    ];
    // `nodes` answers `status` with two paired nodes and `invoke` with `{"invoked": <input>}`;
    // every other tool returns `{"input": <input>}`.
    let exec = Recording::new(|call| {
        let details = match (call.tool_name.as_str(), call.input.get("action")) {
            ("nodes", Some(a)) if a == "status" => json!({"nodes": [
                {"nodeId": "mac-1", "displayName": "Studio Mac", "connected": true,
                 "paired": true, "commands": ["fs.listDir", "camera.snap"]},
                {"nodeId": "pi-2", "displayName": "Kitchen", "connected": true,
                 "paired": true, "commands": []}
            ]}),
            ("nodes", _) => json!({"invoked": call.input}),
            _ => json!({"input": call.input}),
        };
        tool_result("ok", details)
    });
    Harness::new(&json!(true), specs, exec)
}

impl Harness {
    /// Runs `code` and returns the result's summary and the tool calls it made (then forgets them).
    async fn run(&self, code: &str) -> (Value, Vec<(String, Value)>) {
        let r = self.exec(code).await;
        let calls = std::mem::take(&mut *self.calls.lock().unwrap());
        (summary(&r), calls)
    }
}

/// Descriptor keys and the other keys a naive bridge reads, each set to the value that breaks
/// it: a present `get`/`set` turns a data descriptor invalid, the flags flip the defaults of a
/// descriptor that leaves them out, `constructor` and `length` are wrong for every object.
const POLLUTE_DESCRIPTOR_KEYS: &str = r#"
Object.prototype.get = undefined;
Object.prototype.set = undefined;
Object.prototype.value = "polluted value";
Object.prototype.writable = true;
Object.prototype.enumerable = false;
Object.prototype.configurable = true;
Object.prototype.constructor = function Polluted() {};
Object.prototype.length = 7;
"#;

/// Everything the bridge hands out or sends, in one value: a tool input with an Error inside
/// (the issue's `"[object Object]"` case), a call without input, search with a limit, the first
/// touch of the lazy `ALL_TOOLS`, `API.list`/`API.read`, `nodes.get` and its handle's calls, a
/// rejected call, `console` output, and a returned Error.
const OBSERVE: &str = r#"
const withError = await tools.fast({e: new Error("boom"), n: 1});
const noInput = await tools.fast1();
const found = await tools.search("fast", {limit: 2});
const all = [ALL_TOOLS.length, ALL_TOOLS[0].name, Object.isFrozen(ALL_TOOLS), Object.keys(ALL_TOOLS[0])];
const listed = await API.list("mcp/");
const index = await API.read("mcp/index.d.ts");
const node = await nodes.get("mac-1");
const invoked = await node.invoke("camera.snap");
const dir = await node.listDir("/tmp");
let rejected;
try { await tools.call("nope", {}); } catch (e) { rejected = [e.name, e.message]; }
console.log({n: 1}, "x");
const observed = {withError, noInput, found: found.map((f) => f.id), all,
  files: listed.files.map((f) => [f.path, typeof f.bytes]), index: [index.path, typeof index.content],
  node: [node.id, node.name, Object.keys(node), Object.isFrozen(node)], invoked, dir, rejected,
  error: new Error("returned")};
"#;

/// The value [`OBSERVE`] returns as `observed`, with or without pollution.
fn observed() -> Value {
    let invoke = |command: &str, params: &str| {
        json!({"invoked": {"action": "invoke", "node": "mac-1", "invokeCommand": command,
                           "invokeParamsJson": params}})
    };
    json!({
        "withError": {"input": {"e": {"name": "Error", "message": "boom"}, "n": 1}},
        "noInput": {"input": {}},
        "found": ["openclaw:core:fast", "openclaw:core:fast1"],
        "all": [3, "fast", true, ["id", "name", "description", "source", "sourceName", "input"]],
        "files": [["mcp/index.d.ts", "number"], ["mcp/docs.d.ts", "number"]],
        "index": ["mcp/index.d.ts", "string"],
        "node": ["mac-1", "Studio Mac", ["id", "name", "invoke", "listDir"], true],
        "invoked": invoke("camera.snap", "{}"),
        "dir": invoke("fs.listDir", "{\"path\":\"/tmp\"}"),
        "rejected": ["Error", "Unknown tool id: nope. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."],
        "error": {"name": "Error", "message": "returned"}
    })
}

/// The tool calls [`OBSERVE`] makes, with or without pollution.
fn observed_calls() -> Vec<(String, Value)> {
    let invoke = |command: &str, params: &str| {
        json!({"action": "invoke", "node": "mac-1", "invokeCommand": command,
               "invokeParamsJson": params})
    };
    vec![
        (
            "fast".to_string(),
            json!({"e": {"name": "Error", "message": "boom"}, "n": 1}),
        ),
        ("fast1".to_string(), json!({})),
        ("nodes".to_string(), json!({"action": "status"})),
        ("nodes".to_string(), invoke("camera.snap", "{}")),
        (
            "nodes".to_string(),
            invoke("fs.listDir", "{\"path\":\"/tmp\"}"),
        ),
    ]
}

#[tokio::test]
async fn descriptor_keys_on_object_prototype_change_nothing_the_bridge_does() {
    let h = harness();
    let expected = json!({"status": "completed", "value": observed(),
                          "output": [{"type": "text", "text": "{\"n\":1} x"}]});
    let clean = h.run(&format!("{OBSERVE}\nreturn observed;")).await;
    assert_eq!(clean, (expected.clone(), observed_calls()));
    let polluted = h
        .run(&format!(
            "{POLLUTE_DESCRIPTOR_KEYS}\n{OBSERVE}\nreturn observed;"
        ))
        .await;
    assert_eq!(polluted, (expected, observed_calls()));
}

/// A thrown Error is formatted with its frames (it was `Error: (unprintable exception)` once
/// `Object.prototype.get` was set). The clean run gets as many blank lines as the pollution
/// has, so both report the same lines.
#[tokio::test]
async fn a_thrown_error_is_reported_the_same_under_pollution() {
    let h = harness();
    let code = "function f() {\n  throw new TypeError('x');\n}\nf();";
    let blank = "\n".repeat(POLLUTE_DESCRIPTOR_KEYS.matches('\n').count());
    let expected = json!({"status": "failed", "code": "internal_error",
        "error": "TypeError: x\n    at f (openclaw-code-mode:user.js:12:13)\n    at <anonymous> (openclaw-code-mode:user.js:14:1)",
        "output": []});
    assert_eq!(h.run(&format!("{blank}\n{code}")).await.0, expected);
    assert_eq!(
        h.run(&format!("{POLLUTE_DESCRIPTOR_KEYS}\n{code}")).await.0,
        expected
    );
}

/// A function on `Object.prototype.then` would be called by every promise the bridge resolves
/// with an object (and could replace the value); the bridge settles its values without reading
/// an inherited `then`. The program returns a string, since resolving its own async function
/// with an object would (rightly) call `then`.
#[tokio::test]
async fn then_on_object_prototype_never_sees_bridge_values() {
    let h = harness();
    let pollute = r#"let thenCalls = 0;
Object.prototype.then = function (resolve) { thenCalls++; resolve("polluted then"); };"#;
    let finish = r#"delete observed.error;
const text = JSON.stringify(observed);
delete Object.prototype.then;
return [thenCalls, text];"#;
    let (summary, calls) = h.run(&format!("{pollute}\n{OBSERVE}\n{finish}")).await;
    let mut expected = observed();
    expected.as_object_mut().unwrap().remove("error");
    assert_eq!(
        summary,
        json!({"status": "completed", "value": [0, expected.to_string()],
               "output": [{"type": "text", "text": "{\"n\":1} x"}]})
    );
    assert_eq!(calls, observed_calls());
}

/// `toJSON` is honoured on the program's own values (docs/contract/json.md#s6, as `JSON.stringify`
/// does, an inherited one included), but objects the bridge builds itself (a call's default
/// `{}`, `listDir`'s `{path}`, `nodes.invoke`'s default params, an Error's `{name, message}`,
/// the envelopes) are not the program's and never pass through it.
#[tokio::test]
async fn to_json_on_object_prototype_reaches_only_the_programs_own_values() {
    let h = harness();
    let (summary, calls) = h
        .run(
            r#"Object.prototype.toJSON = function () { return "polluted toJSON"; };
const node = await nodes.get("mac-1");
await tools.fast1();
await node.invoke("camera.snap");
await node.listDir("/tmp");
await tools.search("fast", {limit: 1});
await tools.fast({own: 1});
text({own: 2});
throw new Error("still an error");"#,
        )
        .await;
    assert_eq!(
        summary,
        json!({"status": "failed", "code": "internal_error",
               "error": "Error: still an error\n    at <anonymous> (openclaw-code-mode:user.js:9:11)",
               "output": [{"type": "text", "text": "\"polluted toJSON\""}]})
    );
    let invoke = |command: &str, params: &str| {
        json!({"action": "invoke", "node": "mac-1", "invokeCommand": command,
               "invokeParamsJson": params})
    };
    assert_eq!(
        calls,
        vec![
            ("nodes".to_string(), json!({"action": "status"})),
            ("fast1".to_string(), json!({})),
            ("nodes".to_string(), invoke("camera.snap", "{}")),
            (
                "nodes".to_string(),
                invoke("fs.listDir", "{\"path\":\"/tmp\"}")
            ),
            // The program's own object: its (inherited) toJSON is honoured, as JSON.stringify
            // does.
            ("fast".to_string(), json!("polluted toJSON")),
        ]
    );
}

/// Item 8: `Reflect.defineProperty` / `Reflect.setPrototypeOf` as the first touch of the lazy
/// `ALL_TOOLS` or `tools` answer `false` (and `true` for a change that changes nothing), as
/// every later call does on the frozen object; they threw `TypeError` before.
#[tokio::test]
async fn reflect_as_the_first_touch_of_a_lazy_global_answers_like_later_calls() {
    let h = harness();
    for global in ["ALL_TOOLS", "tools"] {
        let code = format!(
            r#"const first = [Reflect.defineProperty({global}, "x", {{value: 1}}), Reflect.setPrototypeOf({global}, null)];
const later = [Reflect.defineProperty({global}, "x", {{value: 1}}), Reflect.setPrototypeOf({global}, null)];
const same = Reflect.setPrototypeOf({global}, Object.getPrototypeOf({global}));
let thrown;
try {{ Object.defineProperty({global}, "x", {{value: 1}}); }} catch (e) {{ thrown = e.name; }}
return [first, later, same, thrown, Object.isFrozen({global}), "x" in {global}];"#
        );
        let (summary, _) = h.run(&code).await;
        assert_eq!(
            summary["value"],
            json!([
                [false, false],
                [false, false],
                true,
                "TypeError",
                true,
                false
            ]),
            "{global}"
        );
        let code = format!(r#"return Reflect.setPrototypeOf({global}, null);"#);
        assert_eq!(h.run(&code).await.0["value"], json!(false), "{global}");
    }
}
