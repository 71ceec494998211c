//! `cargo xtask cluster [--bin PATH]`: `codemode serve --http` scaled out with real parts
//! (issue 24; docs/deployment.md). On loopback: Debian's `redis-server`, Debian's `haproxy` with
//! the config docs/deployment.md shows (read from the page; only its ports are replaced), three
//! `serve --http --auth … --state redis://…` instances behind it, round-robin with no
//! affinity, each with npm's server-everything as its MCP server, and the Python `mcp` SDK's
//! `Client` in its default (stateless) mode as the client (`xtask/cluster/client.py`).
//!
//! Scenarios, one `cluster N  PASS|FAIL  …` line each:
//! 1. `exec` parks on A; `kill -9` A; a `wait` through the balancer completes elsewhere with the
//!    same value and output as a run that never left its process.
//! 2. A slow tool call in flight on A (the `exec` parks after its `timeoutMs`); `kill -9` A; the
//!    `wait` through the balancer completes elsewhere with the program's own handling of the lost
//!    call, and the trajectory (`--trajectory`) of the instance that restored the run records the
//!    call's `nested_tool_result` (status `error`, the lost-call message) once.
//! 3. One instance with `dir:`: park, `SIGTERM`, start again, `wait` completes.
//! 4. A sealed record edited in Redis is refused; a record replayed under another principal (its
//!    header rewritten to Bob's scope) is refused for Bob and for Alice.
//! 5. 1,000 runs through the balancer, each parked by an `exec` and resumed by a `wait`: all
//!    completed once with their own value, none lost, none duplicated.
//! 6. A slow tool call in flight on A (the `exec` parks after its `timeoutMs`); `wait`s on B and
//!    C at once wait for A (its owner lease, Redis pub/sub) and both answer with the program's
//!    result when A's call finishes, not with the call lost.
//!
//! Then one `cluster bench` line: the throughput of instance A alone against the three behind
//! HAProxy (`throughput`), printed for docs/benchmarks.md, not checked.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The sealing key of the cluster's instances (a test key, standard base64 of 0..32).
const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// Alice's and Bob's bearer tokens (test values).
const ALICE: &str = "cluster-token-alice";
const BOB: &str = "cluster-token-bob";
/// The ports of the docs' HAProxy config: the frontend, then instances a, b and c.
const DOC_PORTS: [u16; 4] = [8765, 8766, 8767, 8768];
/// How many runs scenario 5 parks and resumes, and how many at a time.
const MANY: usize = 1000;
const WORKERS: usize = 12;
/// `true` once the instance lists server-everything's tools.
const PROBE: &str = "return typeof MCP.everything?.triggerLongRunningOperation === 'function'";

/// A child process killed (SIGKILL) and reaped when dropped.
struct Proc {
    child: Child,
    name: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `serve --http` instance: its process and URL.
struct Instance {
    proc: Proc,
    url: String,
}

/// One scenario: `Ok` with what it showed, `Err` with why it failed.
type Scenario = fn(&mut Cluster) -> Result<String, String>;

/// What the scenarios share.
struct Cluster {
    bin: PathBuf,
    python: PathBuf,
    client: PathBuf,
    scratch: PathBuf,
    redis_port: u16,
    ports: [u16; 4],
    instances: Vec<Option<Instance>>,
    balancer: String,
}

/// `cargo xtask cluster [--bin PATH]`.
pub(crate) fn task(args: &[String]) -> Result<(), String> {
    let root = crate::cmd::root();
    let bin = match args {
        [] => {
            crate::cmd::run(crate::cmd::test_build().arg("--no-run"))?;
            root.join("target").join("debug").join("codemode")
        }
        [flag, path] if flag == "--bin" => PathBuf::from(path),
        _ => return Err("usage: cargo xtask cluster [--bin PATH]".into()),
    };
    for (program, arg) in [("redis-server", "--version"), ("haproxy", "-v")] {
        if !crate::cmd::have(program, arg) {
            return Err(format!(
                "{program} is not installed (cargo xtask setup installs Debian's package)"
            ));
        }
    }
    let scratch = root.join("target").join("cluster");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let redis_port = free_port()?;
    let _redis = spawn(
        "redis-server",
        Command::new("redis-server")
            .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&scratch),
    )?;
    wait_for_port(redis_port)?;
    let ports = [free_port()?, free_port()?, free_port()?, free_port()?];
    let mut cluster = Cluster {
        bin,
        python: crate::python::interpreter(&root),
        client: root.join("xtask").join("cluster").join("client.py"),
        scratch: scratch.clone(),
        redis_port,
        ports,
        instances: Vec::new(),
        balancer: format!("http://127.0.0.1:{}/mcp", ports[0]),
    };
    cluster.write_files(&root)?;
    for i in 0..3 {
        let instance = cluster.start(i)?;
        cluster.instances.push(Some(instance));
    }
    let _haproxy = spawn(
        "haproxy",
        Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(scratch.join("haproxy.cfg")),
    )?;
    wait_for_port(ports[0])?;
    for i in 0..3 {
        cluster.connected(i)?;
    }
    let scenarios: [(&str, Scenario); 6] = [
        (
            "kill -9 the instance that parked; wait on another",
            kill_parked,
        ),
        ("kill -9 the instance running a slow call", kill_in_flight),
        ("dir: park, SIGTERM, start again, wait", dir_restart),
        ("edited or replayed records refused", tampered),
        ("1,000 runs parked and resumed across three", many),
        (
            "a slow call in flight on A; waits on B and C answer when A finishes",
            follow_owner,
        ),
    ];
    let mut failed = 0;
    for (n, (what, scenario)) in scenarios.into_iter().enumerate() {
        let started = Instant::now();
        let outcome = scenario(&mut cluster);
        let ms = started.elapsed().as_millis();
        match outcome {
            Ok(detail) => println!("cluster {}  PASS  {what}: {detail}  ({ms} ms)", n + 1),
            Err(reason) => {
                failed += 1;
                println!(
                    "cluster {}  FAIL  {what}  ({ms} ms)\n        {reason}",
                    n + 1
                );
            }
        }
    }
    if failed > 0 {
        return Err(format!("{failed} of 6 cluster scenarios failed"));
    }
    throughput(&cluster)
}

/// How many runs the throughput comparison pushes through each setup.
const BENCH_RUNS: usize = 300;

/// Throughput of the three instances behind HAProxy against one instance alone (instance A,
/// directly): [`BENCH_RUNS`] runs, [`WORKERS`] clients at a time, each run one `exec` that parks
/// and one `wait` that resumes it (docs/benchmarks.md, "Runs through Redis"). Printed, not
/// checked: the machine's load decides the numbers.
fn throughput(cluster: &Cluster) -> Result<(), String> {
    let mut rates = Vec::new();
    for url in [cluster.url(0)?, cluster.balancer.clone()] {
        let report = run_many(cluster, &url, BENCH_RUNS)?;
        let seconds = report["seconds"].as_f64().unwrap_or(f64::NAN);
        if report["failedCount"] != 0 {
            return Err(format!("throughput run against {url} failed: {report}"));
        }
        rates.push(BENCH_RUNS as f64 / seconds);
    }
    println!(
        "cluster bench  one instance: {:.1} runs/s; three behind HAProxy: {:.1} runs/s  ({BENCH_RUNS} runs, {WORKERS} clients; exec parks, wait resumes)",
        rates[0], rates[1]
    );
    Ok(())
}

/// The Python client's `many` report for `count` runs against `url`.
fn run_many(cluster: &Cluster, url: &str, count: usize) -> Result<Value, String> {
    let out = Command::new(&cluster.python)
        .arg(&cluster.client)
        .args(["many", url, ALICE, &count.to_string(), &WORKERS.to_string()])
        .output()
        .map_err(|e| format!("cannot run the Python client: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the Python client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// A free loopback port (bound, then released).
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Waits (10 s at most) until something accepts on `port`.
fn wait_for_port(port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("nothing listens on port {port} after 10 s"))
}

/// Starts `command` (output discarded) as `name`.
fn spawn(name: &str, command: &mut Command) -> Result<Proc, String> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    Ok(Proc {
        child,
        name: name.to_string(),
    })
}

/// The HAProxy config block of docs/deployment.md (the fenced `haproxy` block).
fn doc_config(root: &Path) -> Result<String, String> {
    let page = std::fs::read_to_string(root.join("docs").join("deployment.md"))
        .map_err(|e| format!("docs/deployment.md: {e}"))?;
    let start = page
        .find("```haproxy\n")
        .ok_or("docs/deployment.md has no ```haproxy block")?
        + "```haproxy\n".len();
    let end = page[start..]
        .find("```")
        .ok_or("docs/deployment.md: unterminated ```haproxy block")?;
    Ok(page[start..start + end].to_string())
}

impl Cluster {
    /// Writes the HAProxy config (the docs' with this run's ports), the auth file and the MCP
    /// config into the scratch directory.
    fn write_files(&self, root: &Path) -> Result<(), String> {
        let mut config = doc_config(root)?;
        for (doc, port) in DOC_PORTS.iter().zip(self.ports) {
            let from = format!("127.0.0.1:{doc}");
            if !config.contains(&from) {
                return Err(format!("the docs' HAProxy config does not name {from}"));
            }
            config = config.replace(&from, &format!("127.0.0.1:{port}"));
        }
        let write = |name: &str, text: String| {
            let path = self.scratch.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
        };
        write("haproxy.cfg", config)?;
        let hash = |token: &str| {
            use sha2::{Digest, Sha256};
            Sha256::digest(token.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        write(
            "tokens",
            format!("{} alice\n{} bob\n", hash(ALICE), hash(BOB)),
        )?;
        let everything = crate::cmd::mcp_servers_dir()
            .join("node_modules")
            .join(".bin")
            .join("mcp-server-everything");
        write(
            "servers.json",
            json!({"mcpServers": {"everything": {"command": everything}}}).to_string(),
        )
    }

    /// The redis URL of database `db`.
    fn redis(&self, db: u32) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.redis_port)
    }

    /// Starts `serve --http` on `port` (0: any) with `state`, the auth file and the MCP config;
    /// waits for its URL.
    fn serve(&self, name: &str, port: u16, state: &str) -> Result<Instance, String> {
        let mut child = Command::new(&self.bin)
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .args(["--state", state, "--auth"])
            .arg(self.scratch.join("tokens"))
            .arg("--mcp-config")
            .arg(self.scratch.join("servers.json"))
            .arg("--trajectory")
            .arg(self.trajectory(name))
            .env("CODEMODE_STATE_KEY", KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.bin.display()))?;
        let mut stderr = BufReader::new(child.stderr.take().ok_or("no stderr")?);
        let mut proc = Proc {
            child,
            name: name.to_string(),
        };
        let url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = proc.child.kill();
                return Err(format!("serve {name} exited before serving"));
            }
            if let Some(url) = line
                .trim()
                .strip_prefix("codemode: serving MCP over streamable HTTP at ")
            {
                break url.to_string();
            }
        };
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Ok(Instance { proc, url })
    }

    /// The trajectory file of the instance `name` (written anew each time it starts).
    fn trajectory(&self, name: &str) -> PathBuf {
        self.scratch.join(format!("{name}.trajectory.jsonl"))
    }

    /// The trajectory lines of instances a, b and c (as `(instance, line)`), parsed.
    fn trajectories(&self) -> Vec<(&'static str, Value)> {
        let mut lines = Vec::new();
        for name in ["a", "b", "c"] {
            let text = std::fs::read_to_string(self.trajectory(name)).unwrap_or_default();
            for line in text.lines() {
                if let Ok(value) = serde_json::from_str::<Value>(line) {
                    lines.push((name, value));
                }
            }
        }
        lines
    }

    /// Starts cluster instance `i` (a, b, c) on its port.
    fn start(&self, i: usize) -> Result<Instance, String> {
        let name = ["a", "b", "c"][i];
        self.serve(name, self.ports[i + 1], &self.redis(0))
    }

    /// Instance `i`'s URL.
    fn url(&self, i: usize) -> Result<String, String> {
        self.instances[i]
            .as_ref()
            .map(|instance| instance.url.clone())
            .ok_or_else(|| format!("instance {i} is not running"))
    }

    /// One `tools/call` through the Python client: the result's `structuredContent`.
    fn call(&self, url: &str, token: &str, tool: &str, arguments: Value) -> Result<Value, String> {
        let out = Command::new(&self.python)
            .arg(&self.client)
            .args(["call", url, token, tool, &arguments.to_string()])
            .output()
            .map_err(|e| format!("cannot run the Python client: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the Python client failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "the Python client printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// Waits (60 s at most) until instance `i`'s MCP server is connected, so every instance
    /// lists the same catalog (a record is sealed to it).
    fn connected(&self, i: usize) -> Result<(), String> {
        let url = self.url(i)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let probe = self.call(&url, ALICE, "exec", json!({"code": PROBE}))?;
            if probe["value"] == true {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "instance {i} has no MCP server after 60 s: {probe}"
                ));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// `kill -9` instance `i`, then start it again (its port is reused) and wait until it serves.
    fn kill_and_restart(&mut self, i: usize) -> Result<(), String> {
        let killed = self.instances[i].take();
        drop(killed); // SIGKILL and reap
        let instance = self.start(i)?;
        self.instances[i] = Some(instance);
        self.connected(i)
    }
}

/// `Err` with both values when they differ.
fn same(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

const PARK: &str = "text('before'); await yield_control(); text('after'); return 42";

/// Scenario 1.
fn kill_parked(cluster: &mut Cluster) -> Result<String, String> {
    // The reference: a run that never leaves instance B.
    let b = cluster.url(1)?;
    let parked = cluster.call(&b, ALICE, "exec", json!({"code": PARK}))?;
    let reference = cluster.call(&b, ALICE, "wait", json!({"runId": parked["runId"]}))?;
    let a = cluster.url(0)?;
    let parked = cluster.call(&a, ALICE, "exec", json!({"code": PARK}))?;
    same("exec on A", &parked["status"], &json!("waiting"))?;
    same(
        "exec output",
        &parked["output"],
        &json!([{"type": "text", "text": "before"}]),
    )?;
    cluster.instances[0].take(); // kill -9 A
    let done = cluster.call(
        &cluster.balancer,
        ALICE,
        "wait",
        json!({"runId": parked["runId"]}),
    )?;
    same("status", &done["status"], &json!("completed"))?;
    same("value", &done["value"], &reference["value"])?;
    same("output", &done["output"], &reference["output"])?;
    let instance = cluster.start(0)?;
    cluster.instances[0] = Some(instance);
    cluster.connected(0)?;
    Ok(format!(
        "value {} and output {} as on one instance",
        done["value"], done["output"]
    ))
}

/// Scenario 2.
fn kill_in_flight(cluster: &mut Cluster) -> Result<String, String> {
    let a = cluster.url(0)?;
    let code = "try { await MCP.everything.triggerLongRunningOperation({duration: 30, steps: 2}); return 'finished'; } catch (e) { return 'caught: ' + e.message; }";
    let parked = cluster.call(&a, ALICE, "exec", json!({"code": code, "timeoutMs": 1500}))?;
    same("exec on A", &parked["status"], &json!("waiting"))?;
    let pending = parked["pendingToolCalls"].as_array().map(Vec::len);
    same("pending calls", &json!(pending), &json!(1))?;
    cluster.kill_and_restart(0)?;
    let done = cluster.call(
        &cluster.balancer,
        ALICE,
        "wait",
        json!({"runId": parked["runId"]}),
    )?;
    same("status", &done["status"], &json!("completed"))?;
    let value = done["value"].as_str().unwrap_or_default();
    if !(value.starts_with("caught: tool call \"")
        && value.ends_with("\" was lost: the codemode process running it stopped"))
    {
        return Err(format!("the program did not see its lost call: {done}"));
    }
    // The instance that restored the run records the lost call (docs/telemetry.md, "A call lost
    // with its process"), once, under the id A's `nested_tool_call` had.
    let lost: Vec<(&str, Value)> = cluster
        .trajectories()
        .into_iter()
        .filter(|(_, line)| {
            line["type"] == "nested_tool_result" && line["codeModeRunId"] == parked["runId"]
        })
        .collect();
    let [(by, line)] = lost.as_slice() else {
        return Err(format!(
            "want one nested_tool_result for the run in the trajectories, got {lost:?}"
        ));
    };
    let message = value.strip_prefix("caught: ").unwrap_or_default();
    same("lost call's status", &line["status"], &json!("error"))?;
    same("lost call's error", &line["error"], &json!(message))?;
    same(
        "lost call's tool",
        &line["toolId"],
        &json!("mcp:everything:everything__trigger-long-running-operation"),
    )?;
    let id = line["toolCallId"].as_str().unwrap_or_default();
    if *by == "a" || !id.starts_with("tool_search_code:") || !id.ends_with(":1") {
        return Err(format!("the lost call was recorded by {by} as {line}"));
    }
    Ok(format!(
        "the program returned {value:?}; {by}'s trajectory recorded {id} lost"
    ))
}

/// Scenario 3.
fn dir_restart(cluster: &mut Cluster) -> Result<String, String> {
    let state = format!("dir:{}", cluster.scratch.join("runs").display());
    let first = cluster.serve("dir", 0, &state)?;
    let mut instance = Some(first);
    let url = instance.as_ref().map(|i| i.url.clone()).unwrap_or_default();
    wait_connected(cluster, &url)?;
    let parked = cluster.call(&url, ALICE, "exec", json!({"code": PARK}))?;
    same("exec", &parked["status"], &json!("waiting"))?;
    let pid = instance
        .as_ref()
        .map(|i| i.proc.child.id())
        .unwrap_or_default();
    crate::cmd::run(Command::new("kill").args(["-TERM", &pid.to_string()]))?;
    let stopping = Instant::now();
    let exited = loop {
        let Some(running) = instance.as_mut() else {
            return Err("no instance".into());
        };
        if let Some(status) = running.proc.child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if stopping.elapsed() > Duration::from_secs(10) {
            return Err("serve did not exit within 10 s of SIGTERM".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stopped_in = stopping.elapsed().as_millis();
    if !exited.success() {
        return Err(format!("serve exited with {exited} after SIGTERM"));
    }
    drop(instance);
    let again = cluster.serve("dir", 0, &state)?;
    wait_connected(cluster, &again.url)?;
    let done = cluster.call(&again.url, ALICE, "wait", json!({"runId": parked["runId"]}))?;
    same("value", &done["value"], &json!(42))?;
    same(
        "output",
        &done["output"],
        &json!([{"type": "text", "text": "after"}]),
    )?;
    Ok(format!(
        "exited {stopped_in} ms after SIGTERM; the new process completed the run"
    ))
}

/// [`Cluster::connected`] for an instance outside the cluster.
fn wait_connected(cluster: &Cluster, url: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let probe = cluster.call(url, ALICE, "exec", json!({"code": PROBE}))?;
        if probe["value"] == true {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{url} has no MCP server after 60 s: {probe}"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `redis-cli EVAL script 1 key` against the cluster's Redis (database 0).
fn redis_eval(cluster: &Cluster, script: &str, key: &str) -> Result<String, String> {
    let out = Command::new("redis-cli")
        .args([
            "-p",
            &cluster.redis_port.to_string(),
            "-n",
            "0",
            "EVAL",
            script,
            "1",
            key,
        ])
        .output()
        .map_err(|e| format!("cannot run redis-cli: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || text.starts_with("ERR") || text.starts_with("(error)") {
        return Err(format!("redis-cli EVAL failed: {text}"));
    }
    Ok(text)
}

/// Scenario 4.
fn tampered(cluster: &mut Cluster) -> Result<String, String> {
    let (a, b) = (cluster.url(0)?, cluster.url(1)?);
    let refused = "failed authentication: it was altered, or moved to another run, scope, guest build, catalog or expiry; it is not restored";
    // One byte of the sealed body changed.
    let parked = cluster.call(&a, ALICE, "exec", json!({"code": PARK}))?;
    let run_id = parked["runId"].as_str().unwrap_or_default().to_string();
    let flip = "local b = redis.call('HGET', KEYS[1], 'body'); local i = #b - 3; \
                redis.call('HSET', KEYS[1], 'body', b:sub(1, i - 1) .. string.char((b:byte(i) + 1) % 256) .. b:sub(i + 1)); return 1";
    redis_eval(cluster, flip, &format!("codemode:run:{run_id}"))?;
    let edited = cluster.call(&b, ALICE, "wait", json!({"runId": run_id}))?;
    same("edited record", &edited["status"], &json!("failed"))?;
    let error = edited["error"].as_str().unwrap_or_default();
    if !error.ends_with(refused) {
        return Err(format!(
            "the edited record was not refused as tampered: {edited}"
        ));
    }
    // The header rewritten to Bob's scope: Bob's claim passes the scope check, the seal refuses.
    let parked = cluster.call(&a, ALICE, "exec", json!({"code": PARK}))?;
    let run_id = parked["runId"].as_str().unwrap_or_default().to_string();
    let replay = "local m = redis.call('HGET', KEYS[1], 'meta'); \
                  m = string.gsub(m, 'principal([:-])alice', 'principal%1bob'); \
                  redis.call('HSET', KEYS[1], 'meta', m); return 1";
    redis_eval(cluster, replay, &format!("codemode:run:{run_id}"))?;
    let bobs = cluster.call(&b, BOB, "wait", json!({"runId": run_id}))?;
    let error = bobs["error"].as_str().unwrap_or_default();
    if bobs["status"] != "failed" || !error.ends_with(refused) {
        return Err(format!(
            "the replayed record was not refused for Bob: {bobs}"
        ));
    }
    let alices = cluster.call(&b, ALICE, "wait", json!({"runId": run_id}))?;
    same(
        "Alice's wait on the replayed record",
        &alices["error"],
        &json!("code mode run belongs to a different session."),
    )?;
    Ok("both refused; neither ran".into())
}

/// Scenario 5.
fn many(cluster: &mut Cluster) -> Result<String, String> {
    let report = run_many(cluster, &cluster.balancer, MANY)?;
    let mut completed: Vec<u64> = report["completed"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    completed.sort_unstable();
    let total = completed.len();
    completed.dedup();
    if total != MANY || completed.len() != MANY || report["failedCount"] != 0 {
        return Err(format!(
            "{total} completed ({} distinct) of {MANY}; failures: {}",
            completed.len(),
            report["failed"]
        ));
    }
    Ok(format!(
        "{MANY} of {MANY} completed once each, {WORKERS} clients at a time, {:.1} s",
        report["seconds"].as_f64().unwrap_or_default()
    ))
}

/// Scenario 6. `serve` parks an `exec` at the configured `timeoutMs` (10 s by default; `exec`
/// has no `timeoutMs` argument, the one passed is ignored), so the tool runs 18 s: the `wait`s on
/// B and C start up to 8 s before it finishes on A (a Python client takes seconds to start on a
/// loaded machine). A `wait` whose own 10 s end first answers `waiting`; each side then waits
/// again, as a client does, up to three times.
fn follow_owner(cluster: &mut Cluster) -> Result<String, String> {
    let a = cluster.url(0)?;
    let code = "try { await MCP.everything.triggerLongRunningOperation({duration: 18, steps: 2}); return 'finished'; } catch (e) { return 'caught: ' + e.message; }";
    let parked = cluster.call(&a, ALICE, "exec", json!({"code": code, "timeoutMs": 1500}))?;
    if parked["status"] != json!("waiting") {
        return Err(format!("exec on A did not park: {parked}"));
    }
    let wait = json!({"runId": parked["runId"]});
    let started = Instant::now();
    let cluster = &*cluster;
    let until_done = |instance: usize| -> Result<Value, String> {
        let url = cluster.url(instance)?;
        let mut answer = cluster.call(&url, ALICE, "wait", wait.clone())?;
        for _ in 0..3 {
            if answer["status"] != json!("waiting") {
                break;
            }
            answer = cluster.call(&url, ALICE, "wait", wait.clone())?;
        }
        Ok(answer)
    };
    let (on_b, on_c) = std::thread::scope(|scope| {
        let b = scope.spawn(|| until_done(1));
        let c = scope.spawn(|| until_done(2));
        let joined = |h: std::thread::ScopedJoinHandle<'_, Result<Value, String>>| {
            h.join().map_err(|_| "a wait thread panicked".to_string())?
        };
        Ok::<_, String>((joined(b)?, joined(c)?))
    })?;
    let seconds = started.elapsed().as_secs_f64();
    for (name, done) in [("B", &on_b), ("C", &on_c)] {
        same(
            &format!("status on {name}"),
            &done["status"],
            &json!("completed"),
        )?;
        same(
            &format!("value on {name}"),
            &done["value"],
            &json!("finished"),
        )?;
    }
    same("the two answers", &on_b, &on_c)?;
    Ok(format!(
        "B and C both completed with {} {seconds:.1} s after they started waiting",
        on_b["value"]
    ))
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.name, self.child.id())
    }
}
