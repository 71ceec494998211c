//! `--state dir:PATH` with the built binary (docs/snapshot-store.md, "What is portable"): a run
//! parked by one `codemode session` survives `SIGKILL` and is resumed by the next with the same
//! result as in one process; a tool call in flight when the process died is rejected inside the
//! program; a record changed on disk is refused; a durable store without a key refuses to start;
//! `codemode state list|purge`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

const TOOLS: &str = r#"[
    {"name": "slow", "result": {"ok": true}, "delayMs": 60000},
    {"name": "echo", "echo": true}
]"#;

/// A fixed test key (32 bytes of 0x2a), standard base64.
const KEY: &str = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    fn start(tools: &Path, state: &str) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(["session", "--tools", tools.to_str().unwrap()])
            .args(["--timeout-ms", "300", "--state", state])
            .env("CODEMODE_STATE_KEY", KEY)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Session {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// `SIGKILL`: nothing is cleaned up.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
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
            "telemetry": {
                "catalogSize": 2,
                "sources": {"openclaw": 2, "mcp": 0, "client": 0},
                "searchCount": 0,
                "describeCount": 0,
                "callCount": 2,
                "visibleTools": ["exec", "wait"]
            }
        })
    );
    // Completed: gone from the store too.
    let gone = second.ask(wait(&run_id));
    assert_eq!(gone["error"], "code mode run is unavailable or expired.");
    second.kill();
    let listed = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["state", "list", "--state", &state])
        .output()
        .unwrap();
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

    let listed = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["state", "list", "--state", &state])
        .output()
        .unwrap();
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

    let purged = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["state", "purge", "--all", "--state", &state])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&purged.stdout), "{\"purged\":1}\n");
}

#[test]
fn a_durable_store_without_a_key_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["session", "--tools", tools.to_str().unwrap()])
        .args(["--state", "redis://127.0.0.1:1/0"])
        .env_remove("CODEMODE_STATE_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: --state redis://127.0.0.1:1/0 keeps parked runs outside the process and needs a sealing key: set CODEMODE_STATE_KEY (32 bytes, standard base64) or pass --state-key-file FILE\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--state", "mysql://x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "codemode: invalid --state \"mysql://x\": unknown scheme; expected memory, dir:PATH or redis://HOST:PORT[/DB]\n"
    );
}
