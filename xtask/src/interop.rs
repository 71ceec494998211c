//! `cargo xtask interop [--bin PATH] [CHECK…]`: `codemode serve` driven by real MCP clients from
//! npm and PyPI, offline (docs/mcp.md, "Interop"). The clients are installed, pinned
//! ([`PACKAGES`]), into `target/interop` with a stamp file listing them, so a second run
//! installs nothing; the Python SDK is `setup`'s venv (`python.rs`). The network is
//! used only by those installs: every check talks to `codemode serve` on stdio or on a loopback
//! port, and the one agent turn talks to a local stand-in for the Messages API
//! (`xtask/interop/messages_stub.py`).
//!
//! Each check prints `interop <name>  PASS|FAIL  …`; any failure fails the task. Every child gets
//! a cleared environment plus `PATH`, a scratch `HOME` and only the variables it needs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cmd::{codemode_bin, mcp_servers_dir, root, run, test_build};

mod clients;

/// The clients, pinned: (npm package, exact version). `node` is npm's Node 22 package: the
/// Inspector needs Node ≥ 22.19 and its binary goes first on the children's `PATH`. ext-tasks is
/// the TypeScript SDK's Tasks client (`@modelcontextprotocol/client` 2.4 rejects a task result
/// on its own: its 2026-07-28 codec knows only `complete` and `input_required`).
pub(crate) const PACKAGES: [(&str, &str); 6] = [
    ("@anthropic-ai/claude-code", "2.1.332"),
    ("@google/gemini-cli", "0.61.0"),
    ("@modelcontextprotocol/client", "2.4.0"),
    ("@modelcontextprotocol/ext-tasks", "0.2.2"),
    ("@modelcontextprotocol/inspector", "2.12.0"),
    ("node", "22.23.3"),
];

/// The binaries [`setup`] checks for in `target/interop/node_modules/.bin`.
const BINS: [&str; 4] = ["claude", "gemini", "inspector", "node"];

/// The checks, in order: (name, what it shows, the check). A check returns a one-line detail.
type Check = fn(&Ctx) -> Result<String, String>;
const CHECKS: [(&str, &str, Check); 6] = [
    (
        "claude-mcp-list",
        "`claude mcp list` shows codemode connected over stdio and HTTP",
        clients::claude_mcp_list,
    ),
    (
        "gemini-mcp-list",
        "`gemini mcp list` shows codemode connected over stdio and HTTP",
        clients::gemini_mcp_list,
    ),
    (
        "inspector",
        "MCP Inspector CLI, legacy and modern era, stdio and HTTP: tools/list, tools/call",
        clients::inspector,
    ),
    (
        "python-sdk",
        "Python mcp 2.x Client: exec → task → tasks/get → completed; approvals by tasks/update and by MRTR",
        clients::python_sdk,
    ),
    (
        "typescript-sdk",
        "@modelcontextprotocol/client 2.x + ext-tasks: exec → task → tasks/get → completed; approvals by tasks/update and by MRTR",
        clients::typescript_sdk,
    ),
    (
        "claude-agent-turn",
        "Claude Code -p against a stand-in Messages API: one exec over server-everything, codemode's result recorded",
        clients::claude_agent_turn,
    ),
];

/// `target/interop`.
pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join("target").join("interop")
}

/// Installs [`PACKAGES`] into [`dir`] unless its stamp file lists exactly them and every binary
/// of [`BINS`] exists. npm's cache lives under it (`npm-cache`) only during the install and is
/// removed after it: the stamp, not the cache, is what makes a rerun install nothing, and the
/// cache would hold a second copy of every package (some 340 MB of a CI machine's disk).
fn setup(root: &Path) -> Result<(), String> {
    let dir = dir(root);
    let bin = dir.join("node_modules").join(".bin");
    let stamp = dir.join("installed-versions.txt");
    let wanted: String = PACKAGES.iter().map(|(p, v)| format!("{p}@{v}\n")).collect();
    let all_bins = || BINS.iter().all(|b| bin.join(b).exists());
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) && all_bins() {
        return Ok(());
    }
    run(crate::cmd::npm_install("npm", &dir, &stamp)?
        .arg("--cache")
        .arg(dir.join("npm-cache"))
        .args(PACKAGES.iter().map(|(p, v)| format!("{p}@{v}"))))?;
    if let Some(missing) = BINS.iter().find(|b| !bin.join(b).exists()) {
        return Err(format!(
            "npm install finished but {} is missing",
            bin.join(missing).display()
        ));
    }
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    let cache = dir.join("npm-cache");
    std::fs::remove_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))
}

/// What every check shares: the binary, the scratch folder, the configs and one `serve --http`
/// (started once, its servers connected, before the checks run).
struct Ctx {
    bin: PathBuf,
    scratch: PathBuf,
    /// `target/interop/node_modules/.bin`.
    clients: PathBuf,
    /// `xtask/interop`: the client scripts and the Messages stand-in.
    scripts: PathBuf,
    /// The `--mcp-config` file: server-everything.
    servers: PathBuf,
    /// The `--config` file: `timeoutMs` 1000, `get-sum` needs approval.
    host: PathBuf,
    /// The URL of the shared `serve --http`.
    url: String,
    /// `CODEMODE_CACHE_DIR` of every `serve`: `target/interop/codemode-cache`, so the guest is
    /// compiled once, not once per scratch `HOME` (≈ 80 s on a loaded debug build).
    cache: PathBuf,
}

impl Ctx {
    /// A fresh, empty scratch `HOME` for one client: `<scratch>/home-<name>`.
    fn home(&self, name: &str) -> Result<PathBuf, String> {
        let home = self.scratch.join(format!("home-{name}"));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        Ok(home)
    }

    /// A child with a cleared environment: `PATH` (the clients' `.bin`, holding Node 22, then the
    /// system's) and `HOME`, run in `home`, stdin closed.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", self.path())
            .env("HOME", home)
            .env("CODEMODE_CACHE_DIR", &self.cache)
            .current_dir(home)
            .stdin(Stdio::null());
        command
    }

    /// `CODEMODE_CACHE_DIR=<cache>`, the `-e` argument of `mcp add` and the Inspector for the
    /// `serve` they start (clients do not all pass their own environment on).
    fn cache_env(&self) -> String {
        format!("CODEMODE_CACHE_DIR={}", self.cache.display())
    }

    fn path(&self) -> String {
        format!("{}:/usr/local/bin:/usr/bin:/bin", self.clients.display())
    }

    /// The `serve` arguments a stdio client is configured with.
    fn serve_args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--mcp-config".into(),
            self.servers.display().to_string(),
            "--config".into(),
            self.host.display().to_string(),
        ]
    }
}

/// `cargo xtask interop [--bin PATH] [CHECK…]`: the shared build (or `--bin`), the clients'
/// install, then every check (or the named ones).
pub(crate) fn task(args: &[String]) -> Result<(), String> {
    let root = root();
    let mut bin = None;
    let mut only = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin" => {
                let path = args.next().ok_or("--bin needs a path")?;
                bin = Some(PathBuf::from(path));
            }
            name if CHECKS.iter().any(|(n, _, _)| *n == name) => only.push(name.to_string()),
            other => {
                let names: Vec<&str> = CHECKS.iter().map(|(n, _, _)| *n).collect();
                return Err(format!(
                    "unknown argument {other:?}; usage: cargo xtask interop [--bin PATH] [{}]",
                    names.join(" | ")
                ));
            }
        }
    }
    let bin = match bin {
        Some(bin) => bin,
        None => {
            run(test_build().arg("--no-run"))?;
            codemode_bin()
        }
    };
    // Children run in their scratch HOME: they need the binary's absolute path.
    let bin = bin
        .canonicalize()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    setup(&root)?;
    let scratch = dir(&root).join("run");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let servers = scratch.join("servers.json");
    let everything = mcp_servers_dir()
        .join("node_modules")
        .join(".bin")
        .join("mcp-server-everything");
    write_json(
        &servers,
        &json!({"mcpServers": {"everything": {"command": everything}}}),
    )?;
    let host = scratch.join("host.json");
    write_json(
        &host,
        &json!({"tools": {
            "codeMode": {"timeoutMs": 1000, "snapshotTtlSeconds": 120},
            "approvals": {"require": ["*get-sum*"]}
        }}),
    )?;
    let mut ctx = Ctx {
        bin,
        clients: dir(&root).join("node_modules").join(".bin"),
        scripts: root.join("xtask").join("interop"),
        scratch,
        servers,
        host,
        url: String::new(),
        cache: dir(&root).join("codemode-cache"),
    };
    let serve = Serve::start(&ctx)?;
    ctx.url = serve.url.clone();
    settle(&ctx)?;

    let started = Instant::now();
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, what, check) in CHECKS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        ran += 1;
        let t = Instant::now();
        match check(&ctx) {
            Ok(detail) => println!(
                "interop {name}  PASS  {what}  ({} ms)\n        {detail}",
                t.elapsed().as_millis()
            ),
            Err(reason) => {
                println!(
                    "interop {name}  FAIL  {what}  ({} ms)\n        {reason}",
                    t.elapsed().as_millis()
                );
                failed.push(name);
            }
        }
    }
    drop(serve);
    println!(
        "\ninterop: {} of {ran} passed in {} ms",
        ran - failed.len(),
        started.elapsed().as_millis()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{} failed: {}", failed.len(), failed.join(", ")))
    }
}

fn write_json(path: &Path, value: &Value) -> Result<(), String> {
    std::fs::write(path, value.to_string()).map_err(|e| format!("{}: {e}", path.display()))
}

/// A `codemode serve --http 127.0.0.1:0` child, killed when dropped; its log is `serve.log`.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start(ctx: &Ctx) -> Result<Serve, String> {
        let log_path = ctx.scratch.join("serve.log");
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let child = ctx
            .command(&ctx.bin, &ctx.home("serve")?)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&ctx.serve_args()[1..])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", ctx.bin.display()))?;
        let mut serve = Serve {
            child,
            url: String::new(),
        };
        // The first start compiles the guest into the empty cache: minutes on a loaded debug build.
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let url = text.lines().find_map(|line| {
                line.strip_prefix("codemode: serving MCP over streamable HTTP at ")
            });
            if let Some(url) = url {
                serve.url = url.trim().to_string();
                return Ok(serve);
            }
            if let Ok(Some(status)) = serve.child.try_wait() {
                return Err(format!(
                    "codemode serve --http exited with {status}: {text}"
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "codemode serve --http printed no URL in 300 s: {text}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` with a time limit; its output, or an error naming it, its status and
/// output. stdout and stderr go to files (`<program>.stdout` / `.stderr` in the temp folder
/// given by the command's `HOME`, else the system's), so a chatty child never blocks on a full
/// pipe while the limit is watched.
fn output(command: &mut Command, limit: Duration) -> Result<Output, String> {
    let shown = format!("{command:?}");
    let folder = command
        .get_envs()
        .find(|(k, _)| *k == "HOME")
        .and_then(|(_, v)| v.map(PathBuf::from))
        .unwrap_or_else(std::env::temp_dir);
    let name = Path::new(command.get_program())
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let out_path = folder.join(format!("{name}.stdout"));
    let err_path = folder.join(format!("{name}.stderr"));
    let file =
        |path: &Path| std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut child = command
        .stdout(file(&out_path)?)
        .stderr(file(&err_path)?)
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        }
    };
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let stderr = std::fs::read(&err_path).unwrap_or_default();
    let described = |what: String| {
        format!(
            "{shown} {what}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )
    };
    match status {
        None => Err(described(format!("took longer than {} s", limit.as_secs()))),
        Some(status) if !status.success() => Err(described(format!("failed with {status}"))),
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
    }
}

/// Waits (at most 60 s) until the shared serve reaches server-everything: `serve` connects its
/// servers in the background and an `exec` does not wait for them (docs/mcp.md, "Fast start").
fn settle(ctx: &Ctx) -> Result<(), String> {
    let python = crate::python::interpreter(&root());
    let out = output(
        ctx.command(&python, &ctx.home("settle")?)
            .arg(ctx.scripts.join("python_client.py"))
            .args([&ctx.url, "settle"]),
        Duration::from_secs(90),
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    if clients::results(&out.stdout).contains_key("settle") {
        Ok(())
    } else {
        Err(format!("serve never reached server-everything: {text}"))
    }
}
