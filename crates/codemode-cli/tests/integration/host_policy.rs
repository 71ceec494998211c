//! The host half of `codemode exec` and `codemode session` against the built binary
//! (docs/contract/host.md#h1 to #h4): the config's tool policy before the catalog (static tools
//! and a real npm MCP server), command hooks that block, rewrite and fail closed, approvals
//! (`--approve`, the session's `approve` line), the `--trajectory` file, and secrets in the
//! environment that never leave it.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{json, Value};

use common::{
    executable_script as script, stderr_text as stderr, stdout_json, write_file as write, LineChild,
};

/// The static tools every test runs against.
const TOOLS: &str = r#"[
    {"name": "weather", "description": "Current weather.", "result": {"city": "Oslo", "tempC": 4}},
    {"name": "deploy", "description": "Deploys.", "result": "deployed"},
    {"name": "publish", "description": "Publishes.", "echo": true},
    {"name": "echo", "description": "Echoes.", "echo": true},
    {"name": "slow", "description": "Slow.", "result": "slow done", "delayMs": 600}
]"#;

/// A secret in the environment of every `codemode` these tests start.
const SECRET: &str = "s3cr3t-7f1d2c9a-do-not-leak";

/// Runs `codemode <args>` with `stdin` (closed after writing) and the secret in its environment.
fn codemode(args: &[&str], stdin: &str) -> Output {
    let out = common::run_with_stdin(
        common::codemode()
            .args(args)
            .env("CODEMODE_TEST_SECRET", SECRET),
        stdin.as_bytes(),
    );
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !String::from_utf8_lossy(stream).contains(SECRET),
            "the secret leaked: {}",
            String::from_utf8_lossy(stream)
        );
    }
    out
}

/// A test directory with [`TOOLS`] and a config file holding `config`.
struct Setup {
    /// Kept for its lifetime: the files live in it.
    _dir: tempfile::TempDir,
    tools: String,
    config: String,
}

fn setup(config: Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let config = write(dir.path(), "config.json", &config.to_string());
    Setup {
        tools: tools.to_str().unwrap().to_string(),
        config: config.to_str().unwrap().to_string(),
        _dir: dir,
    }
}

impl Setup {
    /// `codemode exec --tools … --config … <extra> -e <code>`, its stdout as JSON.
    fn exec(&self, extra: &[&str], code: &str) -> (Value, Output) {
        let mut args = vec!["exec", "--tools", &self.tools, "--config", &self.config];
        args.extend_from_slice(extra);
        args.extend(["-e", code]);
        let out = codemode(&args, "");
        (stdout_json(&out), out)
    }
}

/// What a guessed id of the denied `deploy` gets: the catalog's unknown-tool error, whose
/// suggestions come from the tools that remain.
const UNKNOWN_DEPLOY: &str = "Unknown tool id: openclaw:core:deploy. Did you mean: echo, publish, slow? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";

#[test]
fn a_denied_tool_is_not_in_the_catalog_and_a_guessed_id_is_unknown() {
    let s = setup(json!({"tools": {"codeMode": true, "deny": ["deploy"]}}));
    let (value, out) = s.exec(
        &[],
        r#"let guessed, byName;
try { await tools.call("openclaw:core:deploy", {}); } catch (e) { guessed = e.message; }
try { await tools.call("deploy", {}); } catch (e) { byName = e.message; }
const found = await tools.search("deploy");
return {ids: ALL_TOOLS.map((t) => t.id), guessed, byName, convenience: typeof tools.deploy,
  found: found.map((t) => t.id)};"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        value["value"],
        json!({
            "ids": ["openclaw:core:echo", "openclaw:core:publish", "openclaw:core:slow", "openclaw:core:weather"],
            "guessed": UNKNOWN_DEPLOY,
            "byName": "Unknown tool id: deploy. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.",
            "convenience": "undefined",
            "found": []
        })
    );
    assert_eq!(value["telemetry"]["catalogSize"], 4);
    assert_eq!(stderr(&out), "");
}

#[test]
fn allow_lists_agents_and_an_empty_allow() {
    // `allow` keeps only what it names; an agent's `allow` replaces it and its `deny` adds up.
    let s = setup(json!({
        "tools": {"allow": ["weather", "openclaw:core:echo", "deploy"], "deny": ["deploy"]},
        "agents": {"list": [{"id": "ops", "tools": {"allow": ["*"], "deny": ["slow"]}}]}
    }));
    let code = "return ALL_TOOLS.map((t) => t.name)";
    let (value, _) = s.exec(&[], code);
    assert_eq!(value["value"], json!(["echo", "weather"]));
    let (value, _) = s.exec(&["--agent", "ops"], code);
    assert_eq!(value["value"], json!(["echo", "publish", "weather"]));

    // An empty allow outside an agent turn: an empty catalog, and programs still run.
    let s = setup(json!({"tools": {"codeMode": true, "allow": []}}));
    let (value, out) = s.exec(
        &[],
        "let e; try { await tools.call('weather', {}); } catch (x) { e = x.message; } return [ALL_TOOLS.length, e]",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        value["value"],
        json!([0, "Unknown tool id: weather. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."])
    );
    assert_eq!(value["telemetry"]["catalogSize"], 0);
}

#[test]
fn host_warnings_are_printed_like_config_warnings() {
    let s = setup(json!({
        "tools": {"codeMode": true, "deny": 5, "approvals": {"require": ["publish"], "when": 1}},
        "hooks": {"beforeToolCall": [{"match": "*", "command": []}]}
    }));
    let (value, out) = s.exec(&["--approve", "all"], "return ALL_TOOLS.length");
    assert_eq!(value["value"], 5);
    let report = codemode(&["config", "--config", &s.config], "");
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let expected: String = report["hostWarnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("codemode: config: {}\n", w["message"].as_str().unwrap()))
        .collect();
    assert_eq!(report["hostWarnings"].as_array().unwrap().len(), 3);
    assert_eq!(stderr(&out), expected);
}

#[test]
fn a_denied_mcp_tool_is_not_in_the_namespace_or_its_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let servers = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"everything": {"command": codemode_test_support::npm_server("mcp-server-everything")}}})
            .to_string(),
    );
    let config = write(
        dir.path(),
        "config.json",
        &json!({"tools": {"deny": ["mcp:everything:everything__get-sum", "everything__prompts_*"]}})
            .to_string(),
    );
    let code = r#"const dts = (await API.read("mcp/everything.d.ts")).content;
return {sum: "getSum" in MCP.everything, echo: "echo" in MCP.everything,
  prompts: "prompts" in MCP.everything, resources: "resources" in MCP.everything,
  dtsSum: dts.includes("getSum"), dtsEcho: dts.includes("function echo("),
  dtsPrompts: dts.includes("namespace prompts {")};"#;
    let run = |extra: &[&str]| {
        let mut args = vec!["exec", "--mcp-config", servers.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["-e", code]);
        let out = codemode(&args, "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let all = run(&[]);
    assert_eq!(
        all["value"],
        json!({"sum": true, "echo": true, "prompts": true, "resources": true,
               "dtsSum": true, "dtsEcho": true, "dtsPrompts": true})
    );
    let denied = run(&["--config", config.to_str().unwrap()]);
    assert_eq!(
        denied["value"],
        json!({"sum": false, "echo": true, "prompts": false, "resources": true,
               "dtsSum": false, "dtsEcho": true, "dtsPrompts": false})
    );
    let size = |v: &Value| v["telemetry"]["sources"]["mcp"].as_u64().unwrap();
    assert_eq!(size(&all) - size(&denied), 3);
}

#[test]
fn command_hooks_block_rewrite_and_fail_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let block = script(
        d,
        "block.sh",
        r#"cat >/dev/null; echo '{"decision": "block", "reason": "deploys are frozen"}'"#,
    );
    let rewrite = script(
        d,
        "rewrite.sh",
        r#"cat >/dev/null; echo '{"decision": "allow", "input": {"rewritten": true}}'"#,
    );
    let hang = script(d, "hang.sh", "sleep 30");
    let fail = script(d, "fail.sh", "cat >/dev/null; exit 1");
    let garbage = script(d, "garbage.sh", "cat >/dev/null; echo 'not json'");
    let after = script(
        d,
        "after.sh",
        r#"cat >/dev/null; echo '{"result": {"content": [], "details": "replaced"}}'"#,
    );
    let hook = |pattern: &str, command: &str| json!({"match": pattern, "command": [command], "timeoutMs": 500});
    let s = setup(json!({
        "tools": {"codeMode": true},
        "hooks": {
            "beforeToolCall": [hook("deploy", &block), hook("echo", &rewrite), hook("slow", &hang),
                               hook("publish", &fail), hook("openclaw:core:weather", &garbage)],
            "afterToolCall": [hook("echo", &after)]
        }
    }));
    let (value, out) = s.exec(
        &["--approve", "all"],
        r#"const errors = {};
for (const name of ["deploy", "slow", "publish", "weather"]) {
  try { await tools.call(name, {}); errors[name] = "ran"; } catch (e) { errors[name] = e.message; }
}
const echoed = await tools.callValue("echo", {original: 1});
return {errors, echoed};"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let blocked = |id: &str, reason: String| {
        format!("Tool \"openclaw:core:{id}\" was blocked before execution: {reason}")
    };
    assert_eq!(
        value["value"],
        json!({
            "errors": {
                "deploy": blocked("deploy", "deploys are frozen".into()),
                "slow": blocked("slow", format!("hook {hang:?} did not answer within 500 ms")),
                "publish": blocked("publish", format!("hook {fail:?} exited with status 1")),
                "weather": blocked("weather", format!(
                    "hook {garbage:?} printed an invalid answer (expected {{\"decision\": \"allow\" | \"block\" | \"ask\", \"reason\"?: string, \"input\"?: object}})"
                )),
            },
            // The after hook replaced the result (its `details` is the value).
            "echoed": "replaced"
        })
    );
    // Without the after hook, the rewritten input is what the echo tool received.
    let s = setup(json!({"hooks": {"beforeToolCall": [hook("echo", &rewrite)]}}));
    let (value, _) = s.exec(&[], "return await tools.echo({original: 1})");
    assert_eq!(value["value"], json!({"input": {"rewritten": true}}));
}

#[test]
fn a_hook_command_does_not_see_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.txt");
    let hook = script(
        dir.path(),
        "env.sh",
        &format!(
            "cat >/dev/null; env > {:?}; echo '{{\"decision\": \"allow\"}}'",
            seen.to_str().unwrap()
        ),
    );
    let s = setup(json!({"hooks": {"beforeToolCall": [{"match": "*", "command": [hook]}]}}));
    let (value, _) = s.exec(&[], "return (await tools.weather({})).city");
    assert_eq!(value["value"], "Oslo");
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(!env.contains(SECRET), "{env}");
    assert!(!env.contains("CODEMODE_TEST_SECRET"), "{env}");
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !matches!(*k, "PWD" | "SHLVL" | "_" | "OLDPWD"))
        .collect();
    for name in &names {
        assert!(
            ["PATH", "HOME", "LANG", "TERM"].contains(name),
            "{name} reached the hook: {env}"
        );
    }
}

#[test]
fn exec_approvals_follow_approve() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    // The after hook runs only when the tool ran: it leaves a mark.
    let mark = script(
        dir.path(),
        "mark.sh",
        &format!(
            "cat >/dev/null; touch {:?}; echo '{{}}'",
            ran.to_str().unwrap()
        ),
    );
    let s = setup(json!({
        "tools": {"approvals": {"require": ["publish"]}},
        "hooks": {"afterToolCall": [{"match": "publish", "command": [mark]}]}
    }));
    let code = r#"try { return await tools.publish({x: 1}); } catch (e) { return e.message; }"#;
    // stdin is a pipe, not a terminal: without --approve every approval is denied.
    for extra in [&[][..], &["--approve", "none"][..]] {
        let (value, out) = s.exec(extra, code);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            value["value"],
            "Tool \"openclaw:core:publish\" was not approved: denied"
        );
        assert!(!ran.exists(), "the tool ran although it was denied");
    }
    let (value, _) = s.exec(&["--approve", "all"], code);
    assert_eq!(value["value"], json!({"input": {"x": 1}}));
    assert!(ran.exists());
}

#[test]
fn approve_takes_all_or_none() {
    let s = setup(json!({}));
    let out = codemode(
        &["exec", "--tools", &s.tools, "--approve", "some", "-e", "1"],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "error: invalid value 'some' for '--approve <all|none>'\n  [possible values: all, none]\n"
        ),
        "{}",
        stderr(&out)
    );
}

/// A `codemode session` driven line by line, with the secret in its environment: no line it
/// writes may contain it.
struct Session(LineChild);

impl Session {
    fn start(args: &[&str]) -> Session {
        Session::start_with_env(args, &[])
    }

    fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Session {
        let env = [&[("CODEMODE_TEST_SECRET", SECRET)], env].concat();
        Session(common::session(args, &env, Stdio::piped()))
    }

    fn ask(&mut self, request: Value) -> Value {
        self.0.send(&request);
        let line = self.0.read_line();
        assert!(!line.contains(SECRET), "{line}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Closes stdin and returns the exit code and stderr.
    fn finish(self) -> (Option<i32>, String) {
        let out = self.0.finish();
        let stderr = stderr(&out);
        assert!(!stderr.contains(SECRET), "{stderr}");
        (out.status.code(), stderr)
    }
}

fn invalid(message: &str) -> Value {
    json!({"status": "failed", "error": message, "code": "invalid_input"})
}

#[test]
fn session_approvals_park_and_resume() {
    let s = setup(json!({"tools": {"approvals": {"require": ["publish"]}}}));
    let mut session = Session::start(&[
        "--tools",
        &s.tools,
        "--config",
        &s.config,
        "--timeout-ms",
        "200",
    ]);
    let waiting = session
        .ask(json!({"tool": "exec", "args": {"code": "return await tools.publish({x: 1})"}}));
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let run_id = waiting["runId"].as_str().unwrap().to_string();
    let pending = waiting["pendingApprovals"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{waiting}");
    let approval_id = pending[0]["approvalId"].as_str().unwrap().to_string();
    assert!(approval_id.starts_with("approval_"), "{approval_id}");
    assert_eq!(
        pending[0],
        json!({"approvalId": approval_id, "toolCallId": "tool_search_code:call_1:publish:1",
               "toolId": "openclaw:core:publish", "input": {"x": 1}})
    );
    assert_eq!(
        waiting["pendingToolCalls"],
        json!([{"id": "bridge:callValue:1", "method": "callValue"}])
    );

    // A wait before the answer is still waiting, with the approval still listed.
    let again = session.ask(json!({"tool": "wait", "args": {"runId": run_id}}));
    assert_eq!(again["status"], "waiting", "{again}");
    assert_eq!(again["pendingApprovals"], waiting["pendingApprovals"]);

    // Malformed approve args and unknown ids get invalid_input; the approval stays outstanding.
    assert_eq!(
        session.ask(
            json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "maybe"}})
        ),
        invalid("unknown decision \"maybe\": expected \"allow\" or \"deny\"")
    );
    assert_eq!(
        session.ask(
            json!({"tool": "approve", "args": {"approvalId": "approval_nope", "decision": "allow"}})
        ),
        invalid("unknown approval id \"approval_nope\".")
    );
    assert_eq!(
        session.ask(
            json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "allow"}})
        ),
        json!({"status": "ok"})
    );
    // Answered once: the id is no longer outstanding.
    assert_eq!(
        session.ask(
            json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "deny"}})
        ),
        invalid(&format!("unknown approval id {approval_id:?}."))
    );
    let done = session.ask(json!({"tool": "wait", "args": {"runId": run_id}}));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], json!({"input": {"x": 1}}));
    assert!(done.get("pendingApprovals").is_none(), "{done}");

    // A denial by line: the guest sees the reason.
    let waiting = session.ask(json!({"tool": "exec", "args": {"code": "try { return await tools.publish({}) } catch (e) { return e.message }"}}));
    let approval_id = waiting["pendingApprovals"][0]["approvalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        session.ask(json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "deny", "reason": "not today"}})),
        json!({"status": "ok"})
    );
    let done = session.ask(json!({"tool": "wait", "args": {"runId": waiting["runId"]}}));
    assert_eq!(
        done["value"],
        "Tool \"openclaw:core:publish\" was not approved: not today"
    );
    let (code, stderr) = session.finish();
    assert_eq!(code, Some(0));
    assert_eq!(stderr, "");
}

/// The trajectory lines of `path`, with `ts` checked (RFC 3339 UTC, milliseconds) and removed,
/// `durationMs` checked (a number) and replaced by `"ms"`, and `cm_…` / `approval_…` ids replaced
/// by `"cm"` / `"approval"`, so the lines compare exactly.
fn trajectory(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    text.lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            let ts = event["ts"].as_str().unwrap().to_string();
            assert!(
                ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
                "{ts}"
            );
            let map = event.as_object_mut().unwrap();
            map.remove("ts");
            if let Some(ms) = map.get_mut("durationMs") {
                assert!(ms.is_u64(), "{line}");
                *ms = json!("ms");
            }
            if let Some(bytes) = map.get_mut("snapshotBytes") {
                assert!(bytes.as_u64().is_some_and(|n| n > 0), "{line}");
                *bytes = json!("bytes");
            }
            normalize_ids(&mut event);
            event
        })
        .collect()
}

fn normalize_ids(value: &mut Value) {
    match value {
        Value::String(s) if s.starts_with("cm_") && s.len() == 39 => *s = "cm".into(),
        Value::String(s) if s.starts_with("approval_") && s.len() == 45 => *s = "approval".into(),
        Value::Array(items) => items.iter_mut().for_each(normalize_ids),
        Value::Object(map) => map.values_mut().for_each(normalize_ids),
        _ => {}
    }
}

/// Waits (up to a minute) until the trajectory `file` has a line containing `kind` and the tool
/// name `tool`.
fn await_line(file: &Path, kind: &str, tool: &str) {
    let name = format!(r#""toolName":"{tool}""#);
    for _ in 0..600 {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.lines().any(|l| l.contains(kind) && l.contains(&name)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("no {kind} line for {tool} in {}", file.display());
}

#[test]
fn the_trajectory_of_parallel_calls_a_park_and_a_wait() {
    // Delays far enough apart that the order of the events is fixed.
    let dir = tempfile::tempdir().unwrap();
    let tools = write(
        dir.path(),
        "tools.json",
        r#"[
        {"name": "weather", "result": {"city": "Oslo"}, "delayMs": 30},
        {"name": "echo", "echo": true, "delayMs": 150},
        {"name": "slow", "result": "slow done", "delayMs": 2000},
        {"name": "publish", "echo": true}
    ]"#,
    );
    let config = write(
        dir.path(),
        "config.json",
        r#"{"tools": {"approvals": {"require": ["publish"]}}}"#,
    );
    let file = dir.path().join("trajectory.jsonl");
    let mut session = Session::start_with_env(
        &[
            "--tools",
            tools.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--timeout-ms",
            "800",
            "--trajectory",
            file.to_str().unwrap(),
        ],
        &[("CODEMODE_LOG", "debug")],
    );
    let code = r#"const [w, e, slow] = await Promise.all([tools.weather({}), tools.echo({apiKey: "k-123", q: 1}), tools.slow({})]);
return [w.city, e.input, slow];"#;
    let waiting = session.ask(json!({"tool": "exec", "args": {"code": code}}));
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    // The wait comes after the slow call settled, so that it resumes at once.
    await_line(&file, r#""type":"nested_tool_result","#, "slow");
    let done = session.ask(json!({"tool": "wait", "args": {"runId": waiting["runId"]}}));
    assert_eq!(
        done["value"],
        json!(["Oslo", {"apiKey": "k-123", "q": 1}, "slow done"])
    );
    // An approval, answered by line, on a second exec.
    let asked = session
        .ask(json!({"tool": "exec", "args": {"code": "return await tools.publish({n: 2})"}}));
    let approval_id = asked["pendingApprovals"][0]["approvalId"].clone();
    assert_eq!(
        session.ask(
            json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "allow"}})
        ),
        json!({"status": "ok"})
    );
    // The approved call goes on in its own task as soon as the answer is in; the wait comes
    // after it finished, so that its events come before the wait's.
    await_line(&file, r#""type":"nested_tool_result","#, "publish");
    let approved = session.ask(json!({"tool": "wait", "args": {"runId": asked["runId"]}}));
    assert_eq!(approved["value"], json!({"input": {"n": 2}}));
    let (status, _) = session.finish();
    assert_eq!(status, Some(0));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let mut events = trajectory(&file);
    // The three parallel calls are dispatched concurrently: their `nested_tool_call` lines, and
    // the sequence numbers in their ids, come in any order. Put them in request order and learn
    // each one's number; everything else is in a fixed order.
    let order = ["weather", "echo", "slow"];
    events[1..4].sort_by_key(|e| order.iter().position(|t| e["toolName"] == *t));
    let mut seqs: Vec<(String, u64)> = events[1..4]
        .iter()
        .map(|e| {
            let id = e["toolCallId"].as_str().unwrap();
            let seq = id.rsplit(':').next().unwrap().parse().unwrap();
            (e["toolName"].as_str().unwrap().to_string(), seq)
        })
        .collect();
    let mut numbers: Vec<u64> = seqs.iter().map(|(_, n)| *n).collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2, 3], "{seqs:?}");
    seqs.push(("publish".into(), 1));
    let nested = |call: &str, tool: &str, _: u64| {
        let seq = seqs.iter().find(|(t, _)| t == tool).unwrap().1;
        format!("tool_search_code:{call}:{tool}:{seq}")
    };
    let call = |parent: &str, tool: &str, seq: u64, input: Value| {
        json!({"type": "nested_tool_call", "input": input, "toolCallId": nested(parent, tool, seq),
               "parentToolCallId": parent, "toolId": format!("openclaw:core:{tool}"), "toolName": tool,
               "method": "callValue"})
    };
    let result = |parent: &str, tool: &str, seq: u64, result: Value| {
        json!({"type": "nested_tool_result", "result": result, "toolCallId": nested(parent, tool, seq),
               "parentToolCallId": parent, "toolId": format!("openclaw:core:{tool}"), "toolName": tool,
               "method": "callValue", "status": "ok", "durationMs": "ms"})
    };
    let telemetry = |calls: u64| {
        json!({"catalogSize": 4, "sources": {"openclaw": 4, "mcp": 0, "client": 0}, "searchCount": 0,
               "describeCount": 0, "callCount": calls, "visibleTools": ["exec", "wait"]})
    };
    let exec = |id: &str, code: &str| {
        json!({"type": "tool_call", "input": {"code": code.replace("\"k-123\"", "\"[redacted]\"")}, "toolCallId": id, "toolName": "exec",
               "toolKind": "code_mode_exec", "toolInputKind": "javascript"})
    };
    let wait = |id: &str| {
        json!({"type": "tool_call", "input": {"runId": "cm"}, "toolCallId": id, "toolName": "wait",
               "toolKind": "code_mode_wait"})
    };
    let waiting_result = |id: &str, tool: &str, bridge: &str, calls: u64, extra: Value| {
        let mut result = json!({"status": "waiting", "runId": "cm", "reason": "pending_tools",
            "pendingToolCalls": [{"id": bridge, "method": "callValue"}]});
        for (k, v) in extra.as_object().unwrap() {
            result[k] = v.clone();
        }
        result["replaySafe"] = json!(false);
        result["output"] = json!([]);
        result["telemetry"] = telemetry(calls);
        let mut event = json!({"type": "tool_result", "result": result, "toolCallId": id,
            "toolName": tool, "toolKind": format!("code_mode_{tool}")});
        if tool == "exec" {
            event["toolInputKind"] = json!("javascript");
        }
        event["status"] = json!("waiting");
        event["codeModeRunId"] = json!("cm");
        event["durationMs"] = json!("ms");
        event
    };
    let completed = |id: &str, value: Value, calls: u64| {
        json!({"type": "tool_result", "result": {"status": "completed", "value": value, "output": [],
               "replaySafe": false, "telemetry": telemetry(calls)}, "toolCallId": id,
               "toolName": "wait", "toolKind": "code_mode_wait", "status": "completed",
               "durationMs": "ms"})
    };
    let parked = |id: &str| {
        json!({"type": "run_parked", "snapshotBytes": "bytes", "codeModeRunId": "cm", "toolCallId": id,
               "parentToolCallId": id, "reason": "pending_tools", "pendingToolCalls": 1})
    };
    let resumed = |id: &str, parent: &str| {
        json!({"type": "run_resumed", "settledToolCalls": 1, "codeModeRunId": "cm", "toolCallId": id,
               "parentToolCallId": parent})
    };
    let text = |details: Value, text: &str| json!({"content": [{"type": "text", "text": text}], "details": details});
    let pending_approval = json!([{"approvalId": "approval", "toolCallId": nested("call_3", "publish", 1),
        "toolId": "openclaw:core:publish", "input": {"n": 2}}]);
    let expected = vec![
        exec("call_1", code),
        call("call_1", "weather", 1, json!({})),
        // The input's `apiKey` is redacted wherever it is a key; the echo tool's `text` is one
        // string, which the rule leaves alone.
        call("call_1", "echo", 2, json!({"apiKey": "[redacted]", "q": 1})),
        call("call_1", "slow", 3, json!({})),
        result(
            "call_1",
            "weather",
            1,
            text(json!({"city": "Oslo"}), r#"{"city":"Oslo"}"#),
        ),
        result(
            "call_1",
            "echo",
            2,
            text(
                json!({"input": {"apiKey": "[redacted]", "q": 1}}),
                r#"{"input":{"apiKey":"[redacted]","q":1}}"#,
            ),
        ),
        parked("call_1"),
        waiting_result("call_1", "exec", "bridge:callValue:3", 3, json!({})),
        result(
            "call_1",
            "slow",
            3,
            text(json!("slow done"), r#""slow done""#),
        ),
        wait("call_2"),
        resumed("call_2", "call_1"),
        completed(
            "call_2",
            json!(["Oslo", {"apiKey": "[redacted]", "q": 1}, "slow done"]),
            3,
        ),
        exec("call_3", "return await tools.publish({n: 2})"),
        call("call_3", "publish", 1, json!({"n": 2})),
        json!({"type": "approval_requested", "approvalId": "approval", "toolCallId": nested("call_3", "publish", 1),
               "parentToolCallId": "call_3", "toolId": "openclaw:core:publish", "toolName": "publish",
               "input": {"n": 2}}),
        parked("call_3"),
        waiting_result(
            "call_3",
            "exec",
            "bridge:callValue:1",
            1,
            json!({"pendingApprovals": pending_approval}),
        ),
        json!({"type": "approval_resolved", "approvalId": "approval", "toolCallId": nested("call_3", "publish", 1),
               "decision": "allow"}),
        result(
            "call_3",
            "publish",
            1,
            text(json!({"input": {"n": 2}}), r#"{"input":{"n":2}}"#),
        ),
        wait("call_4"),
        resumed("call_4", "call_3"),
        completed("call_4", json!({"input": {"n": 2}}), 1),
    ];
    for (i, (got, want)) in events.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "event {i}");
    }
    assert_eq!(events.len(), expected.len(), "{events:#?}");
}

/// `codemode exec` with its stdin and stderr on a pseudo-terminal: the approval is asked there,
/// and the answer typed decides.
#[cfg(unix)]
#[test]
fn exec_asks_on_a_terminal() {
    use std::io::{Read, Write};

    let s = setup(json!({"tools": {"approvals": {"require": ["publish"]}}}));
    for (typed, expected) in [
        ("y\n", json!({"input": {"x": 1}})),
        (
            "n\n",
            json!("Tool \"openclaw:core:publish\" was not approved: denied"),
        ),
    ] {
        let (mut master, slave) = common::openpty();
        let child = common::spawn_with(
            common::codemode()
                .args(["exec", "--tools", &s.tools, "--config", &s.config, "-e"])
                .arg("try { return await tools.publish({x: 1}); } catch (e) { return e.message; }")
                .env("CODEMODE_TEST_SECRET", SECRET),
            slave.try_clone().unwrap(),
            Stdio::piped(),
            slave,
        );
        // Read the terminal until the question is complete, then answer it.
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut buf = [0u8; 256];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
                if seen.ends_with(b"[y/N] ") {
                    let _ = seen_tx.send(String::from_utf8_lossy(&seen).into_owned());
                    seen.clear();
                }
            }
        });
        let prompt = seen_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("no approval prompt on the terminal");
        // A status line drawn before the question (src/progress.rs) was erased for it.
        let prompt = match prompt.rsplit_once("\r\x1b[2K") {
            Some((before, question)) => {
                assert!(
                    before.starts_with("\r\x1b[2Kcodemode: running the javascript program… "),
                    "{before:?}"
                );
                question.to_string()
            }
            None => prompt,
        };
        assert_eq!(
            prompt,
            "codemode: approve tool openclaw:core:publish with input {\"x\":1}? [y/N] "
        );
        master.write_all(typed.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(value["value"], expected);
    }
}

/// `codemode serve` takes the same policy, hooks and `--trajectory` as `exec` and `session`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_applies_policy_and_hooks_and_writes_the_trajectory() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    let dir = tempfile::tempdir().unwrap();
    let block = script(
        dir.path(),
        "block.sh",
        r#"cat >/dev/null; echo '{"decision": "block", "reason": "not over MCP"}'"#,
    );
    let s = setup(json!({
        "tools": {"deny": ["deploy"]},
        "hooks": {"beforeToolCall": [{"match": "publish", "command": [block]}]}
    }));
    let file = dir.path().join("serve.jsonl");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
    command
        .args([
            "serve",
            "--tools",
            &s.tools,
            "--config",
            &s.config,
            "--trajectory",
        ])
        .arg(&file)
        .env("CODEMODE_TEST_SECRET", SECRET);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let code = r#"let blocked; try { await tools.publish({}); } catch (e) { blocked = e.message; }
return {names: ALL_TOOLS.map((t) => t.name), blocked};"#;
    let result = client
        .call_tool(
            CallToolRequestParams::new("exec")
                .with_arguments(json!({"code": code}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(
        result["structuredContent"]["value"],
        json!({"names": ["echo", "publish", "slow", "weather"],
               "blocked": "Tool \"openclaw:core:publish\" was blocked before execution: not over MCP"}),
        "{result}"
    );
    client.cancel().await.unwrap();
    let events = trajectory(&file);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e.get("status").and_then(Value::as_str).unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("tool_call", ""),
            ("nested_tool_call", ""),
            ("nested_tool_result", "blocked"),
            ("tool_result", "completed")
        ],
        "{events:#?}"
    );
    assert_eq!(
        events[2]["error"],
        "Tool \"openclaw:core:publish\" was blocked before execution: not over MCP"
    );
}
