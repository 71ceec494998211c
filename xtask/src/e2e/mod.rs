//! `cargo xtask e2e`: the spec's E2E test plan (16 steps) and the implicit checklist items, run
//! against the built `codemode` binary (`codemode agent`) with the fixtures in `xtask/e2e/`: static
//! OpenClaw-style core tools with declared `outputSchema`s, plugin tools of two plugins (one
//! replay-safe), a client tool, a direct-only `image` tool, a denied `deploy` tool, the shell
//! `exec`, and the two npm MCP servers (`server-everything`, `server-memory`) that setup installs.
//!
//! Each step prints one line, `step N  PASS|FAIL  <what was asserted>  (<ms>)`, followed by the
//! reason when it failed; the checklist items print `check <name>  …` the same way. Then a summary;
//! any failure makes the task fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

mod checks;
mod steps;

use checks::{
    check_agent, check_auto, check_bridge, check_cost, check_no_tools, check_shell,
    check_typescript,
};
use steps::{
    step1, step10, step11, step12, step13, step14, step15, step16, step2, step3, step4, step5,
    step6, step7, step8, step9,
};

/// One `codemode agent` run: exit status, the printed JSON, stderr.
struct Agent {
    code: i32,
    out: Value,
    stderr: String,
}

impl Agent {
    fn calls(&self) -> &[Value] {
        self.out["transcript"]["toolCalls"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The transcript call with this id.
    fn call(&self, id: &str) -> Result<&Value, String> {
        self.calls()
            .iter()
            .find(|c| c["toolCallId"] == id)
            .ok_or_else(|| format!("no transcript call {id:?} (stderr: {})", self.stderr.trim()))
    }

    /// The payload's tool names.
    fn payload_names(&self) -> Vec<String> {
        self.out["payload"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What the steps share: the binary, the fixtures and the runs made so far (by name).
struct Ctx {
    bin: PathBuf,
    root: PathBuf,
    fixtures: PathBuf,
    scratch: PathBuf,
    runs: BTreeMap<&'static str, Agent>,
}

/// `expected == actual`, else a message showing both.
fn eq(what: &str, actual: &Value, expected: &Value) -> Result<(), String> {
    if actual == expected {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected}, got {actual}"))
    }
}

fn ensure(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: not true"))
    }
}

impl Ctx {
    fn fixture(&self, name: &str) -> String {
        self.fixtures.join(name).display().to_string()
    }

    /// Runs `codemode agent` with `args` (fixture names are resolved by the caller).
    fn agent(&self, args: &[String]) -> Result<Agent, String> {
        let out = Command::new(&self.bin)
            .current_dir(&self.root)
            .arg("agent")
            .args(args)
            .env_remove("CODEMODE_LOG")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let value = serde_json::from_str(stdout.trim())
            .map_err(|e| format!("codemode agent printed no JSON ({e}); stderr: {stderr}"))?;
        Ok(Agent {
            code: out.status.code().unwrap_or(-1),
            out: value,
            stderr,
        })
    }

    /// The run `name`, made once with `args`.
    fn run(&mut self, name: &'static str, args: &[&str]) -> Result<&Agent, String> {
        if !self.runs.contains_key(name) {
            let args: Vec<String> = args
                .iter()
                .map(|a| match a.strip_prefix('@') {
                    Some(fixture) => self.fixture(fixture),
                    None => a.to_string(),
                })
                .collect();
            let agent = self.agent(&args)?;
            if agent.code != 0 {
                return Err(format!(
                    "codemode agent exited with {}: {} {}",
                    agent.code,
                    agent.out,
                    agent.stderr.trim()
                ));
            }
            self.runs.insert(name, agent);
        }
        Ok(&self.runs[name])
    }

    /// Steps 1–3: `tools.codeMode.enabled: false` with a small direct tool set (and a model the
    /// catalog prefers: `false` is absolute).
    fn disabled(&mut self) -> Result<&Agent, String> {
        self.run(
            "disabled",
            &[
                "--script",
                "@scripts/direct.json",
                "--config",
                "@config-disabled.json",
                "--tools",
                "@direct-tools.json",
                "--model",
                "e2e/preferred-model",
                "--provider-catalog",
                "@provider-catalog.json",
            ],
        )
    }

    /// Steps 4–14 and 16: `enabled: true` with every kind of test tool and both MCP servers.
    fn enabled(&mut self) -> Result<&Agent, String> {
        if !self.runs.contains_key("enabled") {
            let _ = std::fs::remove_file(self.scratch.join("memory.jsonl"));
            let _ = std::fs::remove_file(self.scratch.join("trajectory.jsonl"));
        }
        let mcp = self.scratch.join("mcp-servers.json").display().to_string();
        let trajectory = self.scratch.join("trajectory.jsonl").display().to_string();
        self.run(
            "enabled",
            &[
                "--script",
                "@scripts/code-mode.json",
                "--config",
                "@config-enabled.json",
                "--tools",
                "@tools.json",
                "--mcp-config",
                &mcp,
                "--model",
                "e2e/preferred-model",
                "--provider-catalog",
                "@provider-catalog.json",
                "--trajectory",
                &trajectory,
            ],
        )
    }

    /// A run of `script` with the cleanup config (timeoutMs 300, snapshotTtlSeconds 1).
    fn cleanup(&mut self, name: &'static str, script: &str) -> Result<&Agent, String> {
        self.run(
            name,
            &[
                "--script",
                script,
                "--config",
                "@config-cleanup.json",
                "--tools",
                "@tools.json",
            ],
        )
    }
}

/// The value an `exec` or `wait` call completed with.
fn value_of<'a>(agent: &'a Agent, id: &str) -> Result<&'a Value, String> {
    let call = agent.call(id)?;
    eq(
        &format!("{id} status"),
        &call["status"],
        &json!("completed"),
    )?;
    Ok(&call["result"]["value"])
}

/// The direct tool definition of a static tool: `{name, description, parameters}`.
fn definition(tool: &Value) -> Value {
    json!({
        "name": tool["name"],
        "description": tool["description"],
        "parameters": tool.get("parameters").cloned().unwrap_or(json!({"type": "object", "properties": {}})),
    })
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

type Check = fn(&mut Ctx) -> Result<(), String>;

/// The 16 steps of the spec's E2E plan: (number, what is asserted, the check).
const STEPS: [(u32, &str, Check); 16] = [
    (1, "tools.codeMode.enabled: false resolves to a direct run even for a preferred model (activation {engaged: false, reason: disabled, payloadCheck: not_engaged})", step1),
    (2, "an agent turn with a small direct tool set runs weather and read directly (exact results, toolSummary {calls: 2})", step2),
    (3, "the payload equals the direct tool set, no exec/wait, no code-mode metadata, codeModeEngaged: false", step3),
    (4, "tools.codeMode.enabled: true engages (reason forced, payload check passed, exit 0)", step4),
    (5, "the turn has OpenClaw, plugin, MCP and client tools (sources {openclaw: 6, mcp: 30, client: 1}, catalogSize 37)", step5),
    (6, "the payload is exactly exec, wait, image (the direct-only tool); the shell exec is not in it", step6),
    (7, "ALL_TOOLS lists the 7 catalog-eligible non-MCP tools; image, deploy and MCP entries are absent", step7),
    (8, "tools.search/describe/callValue/call reach core, plugin (both plugins) and client tools, and the shell exec by id", step8),
    (9, "API.list(\"mcp\") and API.read of everything.d.ts and memory.d.ts declare the servers' tools without a tool call", step9),
    (10, "MCP.everything.echo/getSum and MCP.memory.createEntities/readGraph work; mcp: ids are absent from ALL_TOOLS and tools.*", step10),
    (11, "the denied deploy is absent from ALL_TOOLS/search/tools.deploy and its guessed id fails as an unknown tool", step11),
    (12, "a nested call slower than timeoutMs makes exec return waiting (pending_tools, bridge:callValue:1, output before the call)", step12),
    (13, "wait on $result:e6.runId restores the VM, which receives the tool result (value.report ready; run_parked then run_resumed)", step13),
    (14, "the final value and output contain what the program produced after the restore", step14),
    (15, "timeout, abort and TTL expiry each leave 0 parked runs (a run left waiting leaves 1)", step15),
    (16, "the exported trajectory shows every nested call under its parent exec/wait call", step16),
];

/// The implicit checklist items.
const CHECKS: [(&str, &str, Check); 7] = [
    ("auto-tier", "\"auto\" engages for a preferred model (fixture and bundled catalog) and not for a capable one", check_auto),
    ("per-agent", "an agent override codeMode: false turns an enabled config into direct exposure", check_agent),
    ("no-tool-runs", "disableTools and an empty tools.allow give an empty payload without the payload check (exit 0)", check_no_tools),
    ("shell-exec", "the shell exec is hidden from the payload but callable as openclaw:core:exec; with code mode off, exec is the shell tool", check_shell),
    ("typescript", "TypeScript is never loaded on JavaScript-only or disabled paths (typescriptTransforms 0) and is for a TypeScript exec (1)", check_typescript),
    ("cost", "costUsd is the script's usage priced by the catalog's cost config", check_cost),
    ("bridge-counts", "meta.agentMeta.bridgeCalls sums the runs' counters and toolSummary counts provider-visible calls", check_bridge),
];

/// `cargo xtask e2e [--bin PATH]`: the build `test` and `demo` share (so the binary is the one
/// the tests ran), then every step and check against `target/debug/codemode`; with `--bin PATH`,
/// against that binary and without building.
pub(crate) fn task(args: &[String]) -> Result<(), String> {
    let root = crate::cmd::root();
    let bin = match args {
        [] => {
            crate::cmd::run(crate::cmd::test_build().arg("--no-run"))?;
            crate::cmd::codemode_bin()
        }
        [flag, path] if flag == "--bin" => PathBuf::from(path),
        _ => return Err("usage: cargo xtask e2e [--bin PATH]".into()),
    };
    run(&root, &bin)
}

/// Runs every step and check against `bin`; `Err` when any failed.
pub(crate) fn run(root: &Path, bin: &Path) -> Result<(), String> {
    let scratch = root.join("target").join("e2e");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let fixtures = root.join("xtask").join("e2e");
    // The MCP config names the pinned servers by absolute path (relative MEMORY_FILE_PATHs are
    // resolved against the server's own directory).
    let template = std::fs::read_to_string(fixtures.join("mcp-servers.json"))
        .map_err(|e| format!("xtask/e2e/mcp-servers.json: {e}"))?;
    let root_text = root.display().to_string();
    let escaped = serde_json::to_string(&root_text).map_err(|e| e.to_string())?;
    let config = template.replace("@ROOT@", escaped.trim_matches('"'));
    std::fs::write(scratch.join("mcp-servers.json"), config)
        .map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut ctx = Ctx {
        bin: bin.to_path_buf(),
        root: root.to_path_buf(),
        fixtures,
        scratch,
        runs: BTreeMap::new(),
    };
    let started = Instant::now();
    let mut failed = Vec::new();
    let mut report =
        |label: String, what: &str, outcome: Result<(), String>, ms: u128| match outcome {
            Ok(()) => println!("{label}  PASS  {what}  ({ms} ms)"),
            Err(reason) => {
                println!("{label}  FAIL  {what}  ({ms} ms)\n        {reason}");
                failed.push(label);
            }
        };
    for (n, what, check) in STEPS {
        let t = Instant::now();
        let outcome = check(&mut ctx);
        report(format!("step {n}"), what, outcome, t.elapsed().as_millis());
    }
    for (name, what, check) in CHECKS {
        let t = Instant::now();
        let outcome = check(&mut ctx);
        report(
            format!("check {name}"),
            what,
            outcome,
            t.elapsed().as_millis(),
        );
    }
    let total = STEPS.len() + CHECKS.len();
    println!(
        "\ne2e: {} of {total} passed ({} steps, {} checks) in {} ms",
        total - failed.len(),
        STEPS.len(),
        CHECKS.len(),
        started.elapsed().as_millis()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{} failed: {}", failed.len(), failed.join(", ")))
    }
}
