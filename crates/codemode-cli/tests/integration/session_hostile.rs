//! `codemode session` under attack (issue 27 items 3 and 9): an outer-call approval is answered
//! while the session keeps reading lines, `timeoutMs` bounds the wait for it, and one huge line
//! does not keep its memory for the life of the session. Real `codemode session` processes, a
//! real hook command, RSS read from `/proc/<pid>/status`.

#![cfg(unix)]

use crate::common;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::write_file as write;

/// A `before_tool_call` hook for the outer `exec` that sends it to approval.
fn ask_hook_config(dir: &Path, timeout_ms: u64) -> PathBuf {
    let hook = common::executable_script(
        dir,
        "ask.sh",
        "cat >/dev/null\necho '{\"decision\": \"ask\", \"reason\": \"check the program\"}'",
    );
    write(
        dir,
        "config.json",
        &json!({
            "tools": {"codeMode": {"timeoutMs": timeout_ms}},
            "hooks": {"beforeToolCall": [{"match": "exec", "command": [hook]}]}
        })
        .to_string(),
    )
}

/// A session with [`ask_hook_config`] (`timeoutMs` = `timeout_ms`) writing its trajectory to
/// `dir/t.jsonl`; that file's path.
fn ask_hook_session(dir: &Path, timeout_ms: u64) -> (Session, PathBuf) {
    let config = ask_hook_config(dir, timeout_ms);
    let trajectory = dir.join("t.jsonl");
    let session = Session::start(&[
        "--config",
        config.to_str().unwrap(),
        "--trajectory",
        trajectory.to_str().unwrap(),
    ]);
    (session, trajectory)
}

/// A session whose stdout lines arrive on a channel, so a test can wait for them with a bound.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Session {
    fn start(args: &[&str]) -> Session {
        let (child, stdin, stdout) = common::session(args, &[], Stdio::null()).into_parts();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Session {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, request: &Value) {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next stdout line, waiting at most `within`.
    fn reply(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no reply within {within:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn ask(&mut self, request: &Value) -> Value {
        self.send(request);
        self.reply(Duration::from_secs(60))
    }

    /// Resident set size of the session process, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .unwrap()
            .trim()
            .trim_end_matches(" kB")
            .trim()
            .parse()
            .unwrap();
        kb * 1024
    }

    fn finish(mut self) -> Option<i32> {
        drop(self.stdin);
        self.child.wait().unwrap().code()
    }
}

/// `(id, status, code, error)` of a reply.
fn gist(reply: &Value) -> Value {
    json!([reply["id"], reply["status"], reply["code"], reply["error"]])
}

/// The `approvalId` of the first `approval_requested` event in the trajectory `file`, waiting
/// up to 30 s for it.
fn requested_approval(file: &Path) -> String {
    for _ in 0..300 {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines() {
            let event: Value = serde_json::from_str(line).unwrap();
            if event["type"] == "approval_requested" {
                return event["approvalId"].as_str().unwrap().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no approval_requested event in {}", file.display());
}

/// Issue 27 item 3: the `approve` line for an outer `exec` that a hook sent to approval used to
/// wait unread behind that `exec` until the approval expired (900 s); it is now answered at once
/// and the `exec` runs.
#[test]
fn an_outer_exec_approval_is_answered_while_the_session_reads_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut session, trajectory) = ask_hook_session(dir.path(), 30_000);
    session.send(&json!({"id": 1, "tool": "exec", "args": {"code": "return 6 * 7"}}));
    let approval_id = requested_approval(&trajectory);
    // A line read while the exec waits, other than an approve, is answered after it, in order.
    session.send(&json!({"id": 2, "tool": "wait", "args": {}}));
    session.send(&json!({"id": 3, "tool": "approve", "args": {"approvalId": approval_id, "decision": "allow"}}));
    assert_eq!(
        session.reply(Duration::from_secs(10)),
        json!({"id": 3, "status": "ok"})
    );
    let done = session.reply(Duration::from_secs(30));
    assert_eq!(
        (&done["id"], &done["status"], &done["value"]),
        (&json!(1), &json!("completed"), &json!(42)),
        "{done}"
    );
    assert_eq!(
        gist(&session.reply(Duration::from_secs(10))),
        json!([
            2,
            "failed",
            "invalid_input",
            "runId must be a non-empty string."
        ])
    );
    assert_eq!(session.finish(), Some(0));
}

/// Issue 27 item 3: `timeoutMs` bounds the wait for an outer call's approval; unanswered, the
/// call is denied when it passes (it used to wait for `snapshotTtlSeconds`, 900 s by default),
/// and the approval is withdrawn.
#[test]
fn timeout_ms_bounds_an_unanswered_outer_approval() {
    let dir = tempfile::tempdir().unwrap();
    let (mut session, trajectory) = ask_hook_session(dir.path(), 1_000);
    let started = Instant::now();
    session.send(&json!({"id": 1, "tool": "exec", "args": {"code": "return 1"}}));
    let denied = session.reply(Duration::from_secs(20));
    let took = started.elapsed();
    assert_eq!(
        gist(&denied),
        json!([
            1,
            "failed",
            "invalid_input",
            "Tool \"exec\" was not approved: no answer within 1000 ms (timeoutMs)"
        ])
    );
    assert!(took >= Duration::from_millis(1_000), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let approval_id = requested_approval(&trajectory);
    assert_eq!(
        session.ask(
            &json!({"tool": "approve", "args": {"approvalId": approval_id, "decision": "allow"}})
        ),
        json!({"status": "failed", "code": "invalid_input",
               "error": format!("unknown approval id {approval_id:?}.")})
    );
    assert_eq!(session.finish(), Some(0));
}

/// Issue 27 item 9: one 50 MB line used to keep the session's RSS about 50 MB higher for the
/// rest of the session (the line buffer kept the capacity of the largest line).
#[test]
fn a_huge_line_does_not_keep_its_memory() {
    let mut session = Session::start(&[]);
    let warm = json!({"tool": "exec", "args": {"code": "return 1"}});
    for _ in 0..3 {
        assert_eq!(session.ask(&warm)["value"], 1);
    }
    let before = session.rss();
    let huge = format!(
        r#"{{"tool": "exec", "args": {{"code": "return 1", "padding": "{}"}}}}"#,
        "x".repeat(50 << 20)
    );
    writeln!(session.stdin, "{huge}").unwrap();
    drop(huge);
    let reply = session.reply(Duration::from_secs(60));
    assert!(reply["status"].is_string(), "{reply}");
    // The next line is read only once the huge one is answered and released.
    assert_eq!(session.ask(&warm)["value"], 1);
    let after = session.rss();
    eprintln!(
        "session RSS: {} MiB before the 50 MB line, {} MiB after",
        before >> 20,
        after >> 20
    );
    assert!(
        after < before + (16 << 20),
        "RSS {before} -> {after} bytes after one 50 MB line"
    );
    assert_eq!(session.finish(), Some(0));
}

/// Issue 27 item 9's soak: an hour-equivalent of a busy agent (1,200 execs, one every 3 s for an
/// hour) of mixed hostile and normal programs through one `codemode session`, bounded to a few
/// minutes by a 200 ms `timeoutMs`. RSS must stay within 1.5x of its level after the warm-up
/// (the first 120 runs). Ignored by default (minutes in a debug build); run it with
/// `cargo test -p codemode-cli --test integration -- --ignored --nocapture session_hostile::soak`.
#[test]
#[ignore]
fn soak_mixed_hostile_and_normal_runs_keep_rss_flat() {
    const RUNS: usize = 1_200;
    const WARM_UP: usize = 120;
    let dir = tempfile::tempdir().unwrap();
    let tools = write(
        dir.path(),
        "tools.json",
        r#"[{"name": "echo", "description": "Echoes.", "echo": true},
            {"name": "slow", "description": "Slow.", "result": "done", "delayMs": 300}]"#,
    );
    let mut session = Session::start(&["--tools", tools.to_str().unwrap(), "--timeout-ms", "200"]);
    let programs: [&str; 12] = [
        // normal
        "return await tools.echo({n: 1})",
        "const r = await Promise.all(Array.from({length: 50}, (_, i) => tools.echo({i}))); return r.length",
        "console.log('hello'); return [1, 2, 3].map(x => x * 2)",
        "return (await tools.search('echo')).length",
        // hostile
        "function f(n) { return f(n + 1) + 1 } return f(0)",
        "const a = []; while (true) a.push(new Array(1e5).fill(1))",
        "while (true) {}",
        "return 'x'.repeat(5e6)",
        "return JSON.parse('['.repeat(1e5) + ']'.repeat(1e5))",
        "const m = new Map(); let i = 0; while (true) m.set(i++, {i})",
        "throw new Error('boom')",
        // parks (the slow call outlives the deadline); answered by a wait below
        "return await tools.slow({})",
    ];
    let padding = "p".repeat(2 << 20);
    let mut samples = Vec::new();
    let mut warm = 0;
    let started = Instant::now();
    for run in 0..RUNS {
        let code = programs[run % programs.len()];
        let request = if run % 50 == 49 {
            // Now and then a 2 MB line.
            json!({"tool": "exec", "args": {"code": code, "padding": padding}})
        } else {
            json!({"tool": "exec", "args": {"code": code}})
        };
        let reply = session.ask(&request);
        assert!(reply["status"].is_string(), "{reply}");
        if reply["status"] == "waiting" {
            let mut waited =
                session.ask(&json!({"tool": "wait", "args": {"runId": reply["runId"]}}));
            while waited["status"] == "waiting" {
                waited = session.ask(&json!({"tool": "wait", "args": {"runId": reply["runId"]}}));
            }
        }
        if run + 1 == WARM_UP {
            warm = session.rss();
        }
        if (run + 1) % WARM_UP == 0 {
            samples.push(session.rss());
        }
    }
    let elapsed = started.elapsed();
    let peak = *samples.iter().max().unwrap();
    eprintln!(
        "soak: {RUNS} runs in {:.1} s; RSS after warm-up {} MiB, samples every {WARM_UP} runs (MiB): {:?}; peak {:.2}x",
        elapsed.as_secs_f64(),
        warm >> 20,
        samples.iter().map(|s| s >> 20).collect::<Vec<_>>(),
        peak as f64 / warm as f64
    );
    assert!(
        peak as f64 <= warm as f64 * 1.5,
        "RSS grew from {warm} to {peak} bytes"
    );
    assert_eq!(session.finish(), Some(0));
}
