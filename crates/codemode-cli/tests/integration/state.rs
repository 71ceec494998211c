//! `--state dir:PATH` with the built binary (docs/snapshot-store.md, "What is portable"): a run
//! parked by one `codemode session` survives `SIGKILL` and is resumed by the next with the same
//! result as in one process; a tool call in flight when the process died is rejected inside the
//! program; a record changed on disk is refused; a durable store without a key refuses to start;
//! `codemode state list|purge`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::LineChild;

use serde_json::{json, Value};

const TOOLS: &str = r#"[
    {"name": "slow", "result": {"ok": true}, "delayMs": 60000},
    {"name": "echo", "echo": true}
]"#;

/// A fixed test key (32 bytes of 0x2a), standard base64.
const KEY: &str = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

/// A `codemode session` over `tools` with `--state <state>` and the test key, driven line by
/// line.
struct Session(LineChild);

impl Session {
    fn start(tools: &Path, state: &str) -> Session {
        let tools = tools.to_str().unwrap();
        Session(common::session(
            &["--tools", tools, "--timeout-ms", "300", "--state", state],
            &[("CODEMODE_STATE_KEY", KEY)],
            Stdio::inherit(),
        ))
    }

    fn ask(&mut self, request: Value) -> Value {
        self.0.ask(&request)
    }

    /// `SIGKILL`: nothing is cleaned up.
    fn kill(mut self) {
        self.0.child.kill().unwrap();
        self.0.child.wait().unwrap();
    }
}

fn tools(dir: &Path) -> PathBuf {
    let path = dir.join("tools.json");
    std::fs::write(&path, TOOLS).unwrap();
    path
}

fn exec(code: &str) -> Value {
    json!({"tool": "exec", "args": {"code": code}})
}

fn wait(run_id: &str) -> Value {
    json!({"tool": "wait", "args": {"runId": run_id}})
}

const YIELDING: &str = r#"text("before"); const a = await tools.echo({n: 1});
const r = await yield_control("check in"); text("after");
return {a, r, b: await tools.echo({n: 2})};"#;

#[test]
fn a_parked_run_survives_sigkill_and_resumes_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let state = format!("dir:{}", dir.path().join("runs").display());

    // The reference: park and resume in one process, memory only.
    let mut one = Session::start(&tools, "memory");
    let parked_here = one.ask(exec(YIELDING));
    assert_eq!(parked_here["status"], "waiting", "{parked_here}");
    let reference = one.ask(wait(parked_here["runId"].as_str().unwrap()));
    one.kill();

    let mut first = Session::start(&tools, &state);
    let parked = first.ask(exec(YIELDING));
    let run_id = parked["runId"].as_str().unwrap().to_string();
    assert_eq!(parked["status"], "waiting", "{parked}");
    assert_eq!(
        parked["output"],
        json!([{"type": "text", "text": "before"}])
    );
    first.kill();

    let mut second = Session::start(&tools, &state);
    let resumed = second.ask(wait(&run_id));
    assert_eq!(resumed, reference);
    assert_eq!(
        resumed,
        json!({
            "status": "completed",
            "value": {
                "a": {"input": {"n": 1}},
                "r": {"status": "yielded", "reason": "check in"},
                "b": {"input": {"n": 2}}
            },
            "output": [{"type": "text", "text": "after"}],
            "replaySafe": false,
            "telemetry": common::core_telemetry(2, 2)
        })
    );
    // Completed: gone from the store too.
    let gone = second.ask(wait(&run_id));
    assert_eq!(gone["error"], "code mode run is unavailable or expired.");
    second.kill();
    let listed = common::output(&["state", "list", "--state", &state]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "[]\n");
}

#[test]
fn a_tool_call_in_flight_when_the_process_died_is_lost_visibly() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let state = format!("dir:{}", dir.path().join("runs").display());
    let code = r#"try { await tools.slow({}); return "ran"; }
catch (e) { text("handled"); return e.message; }"#;

    let mut first = Session::start(&tools, &state);
    let parked = first.ask(exec(code));
    assert_eq!(parked["status"], "waiting", "{parked}");
    assert_eq!(
        parked["pendingToolCalls"],
        json!([{"id": "bridge:callValue:1", "method": "callValue"}])
    );
    let run_id = parked["runId"].as_str().unwrap().to_string();
    first.kill();

    let mut second = Session::start(&tools, &state);
    let resumed = second.ask(wait(&run_id));
    assert_eq!(resumed["status"], "completed", "{resumed}");
    assert_eq!(
        resumed["value"],
        "tool call \"bridge:callValue:1\" was lost: the codemode process running it stopped"
    );
    assert_eq!(
        resumed["output"],
        json!([{"type": "text", "text": "handled"}])
    );
    second.kill();
}

#[test]
fn a_record_changed_on_disk_is_refused_and_never_restored() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let runs = dir.path().join("runs");
    let state = format!("dir:{}", runs.display());

    let mut first = Session::start(&tools, &state);
    let parked = first.ask(exec(YIELDING));
    let run_id = parked["runId"].as_str().unwrap().to_string();
    first.kill();

    let file = runs.join(format!("{run_id}.cmrun"));
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, &bytes).unwrap();

    let listed = common::output(&["state", "list", "--state", &state]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["runId"], json!(run_id));
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let mut second = Session::start(&tools, &state);
    let refused = second.ask(wait(&run_id));
    assert_eq!(refused["status"], "failed");
    assert_eq!(refused["code"], "invalid_input");
    assert_eq!(
        refused["error"],
        format!("stored code mode run {run_id} failed authentication: it was altered, or moved to another run, scope, guest build, catalog or expiry; it is not restored")
    );
    second.kill();

    let purged = common::output(&["state", "purge", "--all", "--state", &state]);
    assert_eq!(String::from_utf8_lossy(&purged.stdout), "{\"purged\":1}\n");
}

#[test]
fn a_durable_store_without_a_key_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    // Both are usage errors (exit 2), with no key in the environment.
    let usage_error = |args: &[&str]| {
        let out = common::codemode()
            .args(args)
            .env_remove("CODEMODE_STATE_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        common::stderr_text(&out)
    };
    let tools = tools.to_str().unwrap();
    assert_eq!(
        usage_error(&["session", "--tools", tools, "--state", "redis://127.0.0.1:1/0"]),
        "codemode: --state redis://127.0.0.1:1/0 keeps parked runs outside the process and needs a sealing key: set CODEMODE_STATE_KEY (32 bytes, standard base64) or pass --state-key-file FILE\n"
    );
    assert_eq!(
        usage_error(&["serve", "--state", "mysql://x"]),
        "codemode: invalid --state \"mysql://x\": unknown scheme; expected memory, dir:PATH or redis://HOST:PORT[/DB]\n"
    );
}
