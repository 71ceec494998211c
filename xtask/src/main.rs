//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `setup`: install what building the wasm guest needs (the wasm32-wasip1 target; on Debian as
//!   root, `clang-16`, `llvm-16` and `wasi-libc` through apt), or print the commands to run; and
//!   the npm MCP servers the `codemode-mcp` tests run (`@modelcontextprotocol/server-everything`,
//!   `server-memory` and `server-filesystem`, exact versions in [`MCP_SERVERS`]) into
//!   `target/mcp-servers` with `npm install` (needs Node 20+ and npm). A stamp file there records
//!   the installed versions, so a second run does nothing. Then the official MCP conformance
//!   suite, 0.1.16 and its 2026-07-28 line 0.2.0-alpha.12 (and Node 22 from npm when the system Node
//!   is older), into `target/conformance`
//!   (`conformance.rs`). Last, a Python venv with the pinned `mcp` SDK from PyPI in
//!   `target/python-mcp` for the tests that drive it as a real MCP client (`python.rs`).
//! - `demo`: only what the demo runs, in three numbered steps with their times: the npm MCP
//!   servers (no guest toolchain, conformance suite, Python or redis), then `cargo build -p
//!   codemode-cli` with the checked-in guest (`CODEMODE_GUEST=prebuilt`: no clang, no nested
//!   guest build), then the `codemode` binary on every program in `examples/` and
//!   `examples/mcp/notes.js` against the npm `server-memory` and `server-filesystem` (the README's
//!   two-server MCP example) in a scratch directory under `target/mcp-demo`. `test` installs
//!   the rest and builds the test profile.
//! - `test`: setup, the lint gates (citations, layers, `cargo fmt --check`, `cargo clippy --workspace --all-targets
//!   -- -D warnings`, clippy on the wasm guest, `cargo xtask guest --check`, `cargo doc --no-deps` with `RUSTDOCFLAGS=-D
//!   warnings`), then `cargo test --workspace` with `CODEMODE_MCP_SERVERS` set to
//!   `target/mcp-servers/node_modules/.bin`, `CODEMODE_CONFORMANCE` to `target/conformance` and
//!   `CODEMODE_PYTHON_MCP` to `target/python-mcp/bin/python`
//!   (what CI runs, `.ci/run`).
//! - `e2e`: setup, the same build as `test`, then the spec's 16-step E2E plan and the implicit
//!   checklist items against the built `codemode agent` and the fixtures in `xtask/e2e/`
//!   (`e2e.rs`); one `step N  PASS|FAIL  …` line each, non-zero exit on any failure. `--bin PATH`
//!   runs against that binary without building.
//! - `cluster`: setup, the same build as `test`, then three `serve --http` instances on one
//!   `redis-server` behind HAProxy (the config of docs/deployment.md), driven by the Python `mcp`
//!   client: the five scenarios of `cluster.rs`, one `cluster N  PASS|FAIL  …` line each.
//!   `--bin PATH` runs against that binary without building.
//! - `interop [--bin PATH] [CHECK…]`: setup, the same build as `test`, then `codemode serve`
//!   driven by real clients installed pinned into `target/interop` (Claude Code, Gemini CLI, the
//!   MCP Inspector CLI, the TypeScript SDK 2.x with ext-tasks; the Python SDK of setup): `mcp
//!   list` over stdio and HTTP, both protocol eras, Tasks and approvals, one Claude Code agent
//!   turn against a local Messages API stand-in (`interop.rs`; docs/mcp.md, "Interop").
//! - `lint`: the guest part of setup, then only the lint gates of `test`.
//! - `citations`: check that every `docs/contract/…` reference (and Markdown link into it) names
//!   an existing file and anchor, and that nothing cites the old out-of-repository spec files
//!   (`citations.rs`). The first of `test`'s lint gates.
//! - `layers`: the dependency-direction gate (`layers.rs`): crates depend only on lower layers
//!   (docs/architecture.md#layers, over `cargo metadata`), no import cycle between the modules of
//!   a crate, no module importing from its crate root. The second of `test`'s lint gates.
//! - `bench`: the guest part of setup, then the criterion benchmarks of the runtime, facade and MCP client.
//!   `bench --peer [--bin PATH] [--iterations N] [--warmup N]`: OpenClaw's code mode side by side with
//!   `codemode session` (`peer.rs`; installs the pinned peer into `target/peer`).
//! - `guest [--update | --check]`: the guest part of setup, then a fresh reproducible build of
//!   the wasm guest, compared with the checked-in one in `crates/codemode-runtime/guest/`
//!   (`guest.rs`): `--update` rewrites it and its manifest, `--check` fails when they differ (a
//!   lint gate of `test`, after the guest's clippy).
//! - `fuzz [--seconds N] [--release] [TARGET…]`: the guest part of setup, then every fuzz target
//!   (`fuzz.rs`) for N seconds (default 60) each.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use cmd::{cargo, have, mcp_servers_dir, root, run, test_build, MCP_SERVERS};

mod citations;
mod cluster;
mod cmd;
mod conformance;
mod e2e;
mod fuzz;
mod guest;
mod interop;
mod layers;
mod peer;
mod python;

/// What `cargo xtask --help` (or `help`, `-h`, or `--help` after any task) prints: each task and
/// what it installs, before anything runs.
const HELP: &str = "\
usage: cargo xtask <task> [options]     (--help anywhere prints this and changes nothing)

  setup      install what building and testing need: the wasm32-wasip1 target; clang-16, llvm-16,
             wasi-libc, redis-server and haproxy through apt-get when run as root on Debian (else it prints
             the commands; with CODEMODE_GUEST=prebuilt no guest toolchain: the checked-in guest is
             used); the npm MCP servers into target/mcp-servers, the MCP conformance suite (and Node 22 when the
             system Node is older) into target/conformance, a Python venv with the mcp SDK into
             target/python-mcp (needs Node 20+, npm, python3)
  demo       only what the demo needs: the npm MCP servers into target/mcp-servers (Node 20+, npm),
             cargo build -p codemode-cli with the checked-in guest (no clang), then every program
             in examples/ and the two-server MCP example
  test       setup, the lint gates, then cargo test --workspace (what CI runs)
  e2e        setup, build, then the 16-step end-to-end plan [--bin PATH]
  cluster    setup, build, then serve --http scaled out: redis-server, haproxy, three instances,
             the Python mcp client; five scenarios [--bin PATH]
  interop    setup, build, then codemode serve driven by real clients (Claude Code, Gemini CLI,
             MCP Inspector, TypeScript and Python SDKs; installed pinned into target/interop)
             [--bin PATH] [CHECK...]
  lint       the lint gates only (citations, layers, fmt, clippy, guest clippy, guest --check,
             rustdoc)
  bench      the criterion benchmarks; --peer [--bin PATH] [--iterations N] [--warmup N] runs
             OpenClaw's code mode side by side (installs openclaw and Node 24 into target/peer)
  fuzz       [--seconds N] [--release] [TARGET...] every fuzz target for N seconds (default 60)
  guest      [--update | --check] a fresh reproducible guest build against the checked-in one
  citations  check every docs/contract reference resolves
  layers     check crates depend only downwards and modules have no import cycle and no import
             from their crate root

Without clang, and without installing anything: cargo build -p codemode-cli (the checked-in guest
is embedded) and run target/debug/codemode.";

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let rest: Vec<String> = std::env::args().skip(2).collect();
    if matches!(task.as_str(), "help" | "-h" | "--help")
        || rest.iter().any(|a| a == "--help" || a == "-h")
    {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let result = match task.as_str() {
        "setup" => setup(),
        "demo" => demo(),
        "test" => setup().and_then(|()| test(&rest)),
        "lint" => setup_guest().and_then(|()| lint()),
        "bench" if rest.iter().any(|a| a == "--peer") => {
            setup_guest().and_then(|()| peer::task(&rest))
        }
        "bench" => setup_guest().and_then(|()| bench(&rest)),
        "citations" => check_citations(&rest),
        "layers" => layers::check(&root()),
        "fuzz" => setup_guest().and_then(|()| fuzz::task(&rest)),
        "guest" => setup_guest().and_then(|()| guest::task(&root(), &rest)),
        "e2e" => setup().and_then(|()| e2e::task(&rest)),
        "cluster" => setup().and_then(|()| cluster::task(&rest)),
        "interop" => setup().and_then(|()| interop::task(&rest)),
        _ => {
            eprintln!("{HELP}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Everything the tests need: the guest toolchain, redis-server and the npm MCP servers.
fn setup() -> Result<(), String> {
    setup_guest()?;
    setup_redis()?;
    setup_mcp_servers()?;
    conformance::setup(&root(), run)?;
    python::setup(&root(), run)
}

/// Installs [`MCP_SERVERS`] into [`mcp_servers_dir`] unless the stamp file there already lists
/// exactly these versions and every binary exists.
fn setup_mcp_servers() -> Result<(), String> {
    let dir = mcp_servers_dir();
    let bin = dir.join("node_modules").join(".bin");
    let stamp = dir.join("installed-versions.txt");
    let wanted: String = MCP_SERVERS
        .iter()
        .map(|(package, version, _)| format!("{package}@{version}\n"))
        .collect();
    let all_bins = || MCP_SERVERS.iter().all(|(_, _, b)| bin.join(b).exists());
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) && all_bins() {
        return Ok(());
    }
    let node_major = Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            v.trim_start_matches('v')
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        });
    let need = "the MCP tests need Node 20+ and npm (on Debian: apt-get install nodejs npm); \
                install them and run `cargo xtask setup` again";
    match node_major {
        None => return Err(format!("`node` was not found; {need}")),
        Some(major) if major < 20 => {
            return Err(format!("found Node {major}, too old; {need}"));
        }
        Some(_) => {}
    }
    if !have("npm", "--version") {
        return Err(format!("`npm` was not found; {need}"));
    }
    run(cmd::npm_install("npm", &dir, &stamp)?
        .args(MCP_SERVERS.iter().map(|(p, v, _)| format!("{p}@{v}"))))?;
    if let Some((_, _, missing)) = MCP_SERVERS.iter().find(|(_, _, b)| !bin.join(b).exists()) {
        return Err(format!(
            "npm install finished but {} is missing",
            bin.join(missing).display()
        ));
    }
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))
}

/// Whether the build embeds a prebuilt guest and needs no guest toolchain: `CODEMODE_GUEST_WASM`
/// is set or `CODEMODE_GUEST=prebuilt` (docs/guest-abi.md, "Building").
fn prebuilt_guest() -> bool {
    std::env::var_os("CODEMODE_GUEST_WASM").is_some_and(|v| !v.is_empty())
        || std::env::var_os("CODEMODE_GUEST").is_some_and(|v| v == "prebuilt")
}

/// `true` when running as root on Debian (where setup may `apt-get install`).
fn root_on_debian() -> bool {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    is_root && Path::new("/etc/debian_version").exists()
}

/// Makes sure `redis-server` (Debian's package) is there for the `redis://` run-store tests
/// (docs/snapshot-store.md, "Backends"; they print a skip reason without it unless `CI` is set),
/// and `haproxy` (Debian's) for `cargo xtask cluster`.
fn setup_redis() -> Result<(), String> {
    if have("redis-server", "--version") && have("haproxy", "-v") {
        return Ok(());
    }
    if root_on_debian() {
        run(Command::new("apt-get").args(["update", "-qq"]))?;
        run(Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-qq",
                "--no-install-recommends",
                "redis-server",
                "haproxy",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive"))
    } else {
        Err("the redis:// run-store tests need redis-server, cargo xtask cluster haproxy. On Debian run:\n    sudo apt-get install -y redis-server haproxy\nthen run this command again.".to_string())
    }
}

/// Makes sure the guest can be built: wasm32-wasip1, clang-16, llvm-ar-16, wasi-libc headers.
fn setup_guest() -> Result<(), String> {
    if prebuilt_guest() {
        return Ok(()); // a prebuilt guest is used; no toolchain needed
    }
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip1")
        })
        .unwrap_or(false);
    if !installed {
        run(Command::new("rustup").args(["target", "add", "wasm32-wasip1"])).map_err(|e| {
            format!("{e}\nInstall the target with: rustup target add wasm32-wasip1")
        })?;
    }
    let missing_c = !have("clang-16", "--version")
        || !have("llvm-ar-16", "--version")
        || !Path::new("/usr/include/wasm32-wasi/stdlib.h").exists();
    if missing_c {
        let packages = ["clang-16", "llvm-16", "wasi-libc"];
        if root_on_debian() {
            run(Command::new("apt-get").args(["update", "-qq"]))?;
            run(Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(packages)
                .env("DEBIAN_FRONTEND", "noninteractive"))?;
        } else {
            return Err(format!(
                "the wasm guest needs clang-16, llvm-ar-16 and wasi-libc. On Debian run:\n    sudo apt-get install -y {}\nthen run this command again (or set CODEMODE_GUEST=prebuilt to embed the checked-in guest, or CODEMODE_GUEST_WASM to a prebuilt one).",
                packages.join(" ")
            ));
        }
    }
    Ok(())
}

/// One numbered step of `demo`, timed: prints `[n/3] what…` before and `[n/3] done in …` after.
fn step<T>(n: u32, what: &str, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    println!("\n[{n}/3] {what}…");
    let started = std::time::Instant::now();
    let out = work()?;
    println!("[{n}/3] done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(out)
}

/// `cargo xtask demo`: only what the demo runs (README, "Try it"). *Choice:* the CLI alone in
/// the dev profile with the checked-in guest, rather than `test`'s whole build (38 min on a
/// 2-core machine) or a release build (full optimisation of wasmtime and swc costs more than it
/// saves on four short programs); the price is that a later `cargo xtask test` rebuilds the
/// crates whose features the test build changes.
fn demo() -> Result<(), String> {
    let started = std::time::Instant::now();
    step(
        1,
        "installing the npm MCP servers of the MCP example",
        setup_mcp_servers,
    )?;
    step(
        2,
        "building the codemode CLI (cargo build -p codemode-cli, checked-in guest; about 11 min on 2 cores from scratch, seconds when built)",
        || {
            run(cargo()
                .args(["build", "-p", "codemode-cli"])
                .env("CODEMODE_GUEST", "prebuilt"))
        },
    )?;
    let bin = cmd::codemode_bin();
    let failed = step(
        3,
        "running the examples (the first run compiles the guest module once, ~20 s)",
        || run_examples(&bin),
    )?;
    println!(
        "\ndemo finished in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        return Err(format!("{failed} example(s) did not complete"));
    }
    Ok(())
}

/// Runs every program in `examples/`, `return 1+2` and the MCP example with `bin`; how many did
/// not complete.
fn run_examples(bin: &Path) -> Result<usize, String> {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .map_err(|e| format!("examples/: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "js" || x == "ts"))
        .collect();
    examples.sort();
    let mut failed = 0;
    for example in &examples {
        let rel = example.strip_prefix(root()).unwrap_or(example);
        println!("\n=== codemode exec --pretty {}", rel.display());
        let status = Command::new(bin)
            .current_dir(root())
            .args(["exec", "--pretty"])
            .arg(rel)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !status.success() {
            failed += 1;
        }
    }
    println!("\n=== codemode exec -e 'return 1+2'");
    run(Command::new(bin)
        .current_dir(root())
        .args(["exec", "-e", "return 1+2"]))?;
    if !mcp_demo(bin)? {
        failed += 1;
    }
    Ok(failed)
}

/// The README's two-server MCP example on the installed npm servers: `examples/mcp/notes.js`
/// with its notes directory moved from `/tmp/notes` into `target/mcp-demo`. `Ok(false)` when the
/// run did not complete.
fn mcp_demo(bin: &Path) -> Result<bool, String> {
    let dir = root().join("target").join("mcp-demo");
    let _ = std::fs::remove_dir_all(&dir);
    let notes = dir.join("notes");
    std::fs::create_dir_all(&notes).map_err(|e| format!("{}: {e}", notes.display()))?;
    std::fs::write(notes.join("note.txt"), "hello from a file\n")
        .map_err(|e| format!("{}: {e}", notes.display()))?;
    let bins = mcp_servers_dir().join("node_modules").join(".bin");
    let config = mcp_demo_config(&bins, &dir, &notes);
    let config_path = dir.join("servers.json");
    std::fs::write(&config_path, config).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let program = std::fs::read_to_string(root().join("examples/mcp/notes.js"))
        .map_err(|e| format!("examples/mcp/notes.js: {e}"))?
        .replace(
            "\"/tmp/notes\"",
            &format!("{:?}", notes.display().to_string()),
        );
    println!(
        "\n=== codemode exec --mcp-config servers.json examples/mcp/notes.js (two npm MCP servers)"
    );
    let status = Command::new(bin)
        .current_dir(root())
        .arg("exec")
        .arg("--mcp-config")
        .arg(&config_path)
        .args(["--pretty", "-e", &program])
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    Ok(status.success())
}

/// The demo's `mcpServers` config (JSON), with paths escaped as JSON strings.
fn mcp_demo_config(bins: &Path, dir: &Path, notes: &Path) -> String {
    let json = |p: &Path| format!("{:?}", p.display().to_string());
    format!(
        r#"{{"mcpServers": {{
  "memory": {{"command": {}, "env": {{"MEMORY_FILE_PATH": {}}}}},
  "fs": {{"command": {}, "args": [{}]}}
}}}}"#,
        json(&bins.join("mcp-server-memory")),
        json(&dir.join("memory.jsonl")),
        json(&bins.join("mcp-server-filesystem")),
        json(notes),
    )
}

fn test(extra: &[String]) -> Result<(), String> {
    lint()?;
    run(test_build().args(extra))
}

/// The gates CI enforces before the tests: citations into `docs/contract/` resolve, formatting, clippy on every workspace target and on
/// the wasm guest (its own workspace), the checked-in guest matching a fresh build (`cargo xtask
/// guest --check`), and rustdoc with warnings as errors (broken intra-doc links, missing docs
/// under `[workspace.lints]`).
fn lint() -> Result<(), String> {
    citations::check(&root())?;
    layers::check(&root())?;
    run(cargo().args(["fmt", "--all", "--check"]))
        .map_err(|e| format!("{e}\nRun `cargo fmt --all` and commit the result."))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    if prebuilt_guest() {
        eprintln!(
            "skipping the guest's clippy and `cargo xtask guest --check`: CODEMODE_GUEST_WASM or \
             CODEMODE_GUEST=prebuilt says the guest is not built here"
        );
    } else {
        // The guest's clippy runs with the nested build's flags (guest.rs), so it shares its
        // build-script runs; then the checked-in guest (the no-clang build's) must be what these
        // sources build.
        guest::clippy(&root())?;
        guest::check(&root())?;
    }
    run(cargo()
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings"))
}

fn bench(extra: &[String]) -> Result<(), String> {
    run(cargo()
        .args([
            "bench",
            "-p",
            "codemode-runtime",
            "-p",
            "codemode-facade",
            "-p",
            "codemode-mcp",
        ])
        .args(extra))
}

/// `cargo xtask citations [DIR]`: every reference into `docs/contract/` resolves to an existing
/// file and anchor, and no file cites the old out-of-repository spec (see `citations.rs`). `DIR`
/// checks another checkout instead of this repository.
fn check_citations(args: &[String]) -> Result<(), String> {
    let root = args.first().map(PathBuf::from).unwrap_or_else(root);
    citations::check(&root)
}
