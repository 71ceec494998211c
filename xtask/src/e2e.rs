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

fn step1(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.disabled()?;
    eq(
        "activation",
        &run.out["activation"],
        &json!({"engaged": false, "reason": "disabled", "payloadCheck": "not_engaged", "visibleTools": []}),
    )
}

fn step2(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.disabled()?;
    let weather = run.call("d1")?;
    eq("d1 status", &weather["status"], &json!("completed"))?;
    eq("d1 toolKind", &weather["toolKind"], &json!("tool"))?;
    eq(
        "d1 result",
        &weather["result"],
        &json!({"content": [{"type": "text", "text": "{\"city\":\"Oslo\",\"tempC\":4}"}], "details": {"city": "Oslo", "tempC": 4}}),
    )?;
    let read = run.call("d2")?;
    eq(
        "d2 details",
        &read["result"]["details"],
        &json!({"path": "notes/today.md", "content": "# Today\nship the e2e plan\n"}),
    )?;
    eq(
        "toolSummary",
        &run.out["meta"]["toolSummary"],
        &json!({"calls": 2, "byName": {"read": 1, "weather": 1}}),
    )?;
    eq(
        "finalText",
        &run.out["finalText"],
        &json!("It is 4°C in Oslo; today's note says to ship the e2e plan."),
    )
}

fn step3(ctx: &mut Ctx) -> Result<(), String> {
    let tools = read_json(&ctx.fixtures.join("direct-tools.json"))?;
    let want: Vec<Value> = tools
        .as_array()
        .into_iter()
        .flatten()
        .map(definition)
        .collect();
    let run = ctx.disabled()?;
    eq("payload", &run.out["payload"], &json!({"tools": want}))?;
    let names = run.payload_names();
    ensure(
        "no exec/wait in the payload",
        !names.iter().any(|n| n == "exec" || n == "wait"),
    )?;
    for call in run.calls() {
        let result = &call["result"];
        ensure(
            &format!(
                "{} result has no code-mode metadata (telemetry, runId, nestedCalls)",
                call["toolCallId"]
            ),
            result.get("telemetry").is_none()
                && result.get("runId").is_none()
                && call["nestedCalls"].as_array().is_none_or(Vec::is_empty),
        )?;
    }
    eq(
        "agentMeta",
        &run.out["meta"]["agentMeta"],
        &json!({"codeModeEngaged": false, "assistantTurns": 2, "bridgeCalls": {"search": 0, "describe": 0, "call": 0}, "costUsd": 0.0102}),
    )?;
    eq(
        "runtime",
        &run.out["runtime"],
        &json!({"parkedRuns": 0, "typescriptTransforms": 0}),
    )
}

fn step4(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq("exit status", &json!(run.code), &json!(0))?;
    eq(
        "activation",
        &run.out["activation"],
        &json!({"engaged": true, "reason": "forced", "payloadCheck": "passed", "visibleTools": ["exec", "wait", "image"]}),
    )?;
    eq(
        "codeModeEngaged",
        &run.out["meta"]["agentMeta"]["codeModeEngaged"],
        &json!(true),
    )
}

fn step5(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    let telemetry = &run.call("e1")?["result"]["telemetry"];
    eq(
        "sources",
        &telemetry["sources"],
        // Two more MCP entries since the namespace lists resource templates: one
        // `resources.templates` operation per server (everything, memory).
        &json!({"openclaw": 6, "mcp": 30, "client": 1}),
    )?;
    eq("catalogSize", &telemetry["catalogSize"], &json!(37))?;
    eq(
        "visibleTools",
        &telemetry["visibleTools"],
        &json!(["exec", "wait", "image"]),
    )
}

fn step6(ctx: &mut Ctx) -> Result<(), String> {
    let tools = read_json(&ctx.fixtures.join("tools.json"))?;
    let image = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "image"))
        .map(definition)
        .ok_or("tools.json has no image tool")?;
    let run = ctx.enabled()?;
    eq(
        "payload names",
        &json!(run.payload_names()),
        &json!(["exec", "wait", "image"]),
    )?;
    let payload = &run.out["payload"]["tools"];
    eq("image definition", &payload[2], &image)?;
    let exec = payload[0]["description"].as_str().unwrap_or("");
    ensure(
        "the one exec is code mode's (\"Run JavaScript or TypeScript in OpenClaw code mode.\")",
        exec.starts_with("Run JavaScript or TypeScript in OpenClaw code mode."),
    )?;
    ensure(
        "the exec description lists the shell exec as openclaw:core:exec in the quick index",
        exec.contains("- \"openclaw:core:exec\" { command: string }"),
    )?;
    eq(
        "wait hideFromChannelProgress",
        &payload[1]["hideFromChannelProgress"],
        &json!(true),
    )
}

fn step7(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e1 value",
        value_of(run, "e1")?,
        &json!({"ids": ["openclaw:core:exec", "openclaw:core:read", "openclaw:core:slow_report", "openclaw:core:weather",
                        "openclaw:browser:browse_page", "openclaw:tickets:fake_create_ticket", "client:desktop:client_notify"],
                "image": false, "deploy": false, "mcp": 0}),
    )
}

fn step8(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e2 value",
        value_of(run, "e2")?,
        &json!({
            "hit": "openclaw:core:weather",
            "described": {"id": "openclaw:tickets:fake_create_ticket", "source": "openclaw", "sourceName": "tickets",
                          "outputSchema": {"type": "object", "properties": {"ticketId": {"type": "string"}}, "required": ["ticketId"]}},
            "weather": {"city": "Oslo", "tempC": 4},
            "ticket": {"tool": "openclaw:tickets:fake_create_ticket", "details": {"ticketId": "T-42"}},
            "page": {"title": "Example Domain"},
            "notified": {"input": {"message": "hi"}},
            "shell": {"input": {"command": "echo hi"}},
        }),
    )?;
    let telemetry = &run.call("e2")?["result"]["telemetry"];
    eq(
        "e2 counters",
        &json!([
            telemetry["searchCount"],
            telemetry["describeCount"],
            telemetry["callCount"]
        ]),
        &json!([1, 1, 5]),
    )
}

fn step9(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e3 value",
        value_of(run, "e3")?,
        &json!({"paths": ["mcp/index.d.ts", "mcp/everything.d.ts", "mcp/memory.d.ts"],
                "everything": {"path": "mcp/everything.d.ts", "echo": true, "getSum": true},
                "memory": {"path": "mcp/memory.d.ts", "createEntities": true, "readGraph": true}}),
    )?;
    let call = run.call("e3")?;
    eq("e3 nested calls", &call["nestedCalls"], &json!([]))?;
    eq(
        "e3 callCount",
        &call["result"]["telemetry"]["callCount"],
        &json!(0),
    )
}

fn step10(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e4 value",
        value_of(run, "e4")?,
        &json!({
            "echo": "Echo: hello mcp",
            "sum": "The sum of 2 and 3 is 5.",
            "entities": ["e2e: ran step 10"],
            "mcpInAllTools": 0,
            "searched": [],
            "direct": "Unknown tool id: mcp:everything:echo. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.",
            "toolsEcho": "undefined",
        }),
    )
}

fn step11(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e5 value",
        value_of(run, "e5")?,
        &json!({
            "listed": false,
            "searched": [],
            "guessed": "Unknown tool id: openclaw:core:deploy. Did you mean: exec, read, slow_report? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.",
            "convenience": "undefined",
        }),
    )?;
    eq(
        "e5 nested calls (the tool never ran)",
        &run.call("e5")?["nestedCalls"],
        &json!([]),
    )
}

/// The code-mode run id of e6, checked to look like `cm_<uuid>`.
fn e6_run_id(run: &Agent) -> Result<String, String> {
    let id = run.call("e6")?["result"]["runId"]
        .as_str()
        .ok_or("e6 has no runId")?
        .to_string();
    ensure(
        &format!("runId {id:?} is cm_<uuid>"),
        id.starts_with("cm_") && id.len() == 39,
    )?;
    Ok(id)
}

fn step12(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    let call = run.call("e6")?;
    eq("e6 status", &call["status"], &json!("waiting"))?;
    e6_run_id(run)?;
    let result = &call["result"];
    eq("reason", &result["reason"], &json!("pending_tools"))?;
    eq(
        "pendingToolCalls",
        &result["pendingToolCalls"],
        &json!([{"id": "bridge:callValue:1", "method": "callValue"}]),
    )?;
    eq(
        "output",
        &result["output"],
        &json!([{"type": "text", "text": "before the slow call"}]),
    )
}

fn step13(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    let run_id = e6_run_id(run)?;
    let wait = run.call("w1")?;
    eq(
        "w1 arguments",
        &wait["arguments"],
        &json!({"runId": run_id}),
    )?;
    eq(
        "w1 value.report",
        &value_of(run, "w1")?["report"],
        &json!("ready"),
    )?;
    let events = run.out["trajectory"]
        .as_array()
        .ok_or("no trajectory in the envelope")?;
    let parked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "run_parked")
        .collect();
    let resumed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "run_resumed")
        .collect();
    eq(
        "run_parked",
        &json!(parked
            .iter()
            .map(|e| json!([
                e["toolCallId"],
                e["codeModeRunId"],
                e["reason"],
                e["pendingToolCalls"]
            ]))
            .collect::<Vec<_>>()),
        &json!([["e6", run_id, "pending_tools", 1]]),
    )?;
    eq(
        "run_resumed",
        &json!(resumed
            .iter()
            .map(|e| json!([
                e["toolCallId"],
                e["codeModeRunId"],
                e["parentToolCallId"],
                e["settledToolCalls"]
            ]))
            .collect::<Vec<_>>()),
        &json!([["w1", run_id, "e6", 1]]),
    )
}

fn step14(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "w1 value",
        value_of(run, "w1")?,
        &json!({"report": "ready", "city": "Oslo"}),
    )?;
    eq(
        "w1 output",
        &run.call("w1")?["result"]["output"],
        &json!([{"type": "text", "text": "after restore: ready"}]),
    )?;
    eq(
        "finalText",
        &run.out["finalText"],
        &json!("All checks ran."),
    )
}

fn step15(ctx: &mut Ctx) -> Result<(), String> {
    let failure = |run: &Agent, id: &str, error: &str, code: &str| -> Result<(), String> {
        let result = &run.call(id)?["result"];
        eq(
            &format!("{id} result"),
            &json!([result["status"], result["error"], result["code"]]),
            &json!(["failed", error, code]),
        )?;
        eq(
            &format!("{id} run's parkedRuns"),
            &run.out["runtime"]["parkedRuns"],
            &json!(0),
        )
    };
    let run = ctx.cleanup("timeout", "@scripts/timeout.json")?;
    // The contract's message, then what the limit was and how to change it (limit errors name
    // their limit; docs/host.md, "Limit errors say how to fix them").
    failure(
        run,
        "t1",
        "code mode timeout exceeded. The program computed without waiting on a tool until the call's budget ran out; timeoutMs is 300 (tools.codeMode.timeoutMs).",
        "timeout",
    )?;
    let run = ctx.cleanup("abort", "@scripts/abort.json")?;
    eq("a1 status", &run.call("a1")?["status"], &json!("waiting"))?;
    failure(run, "a2", "code mode execution aborted", "aborted")?;
    let run = ctx.cleanup("expiry", "@scripts/expiry.json")?;
    eq("x1 status", &run.call("x1")?["status"], &json!("waiting"))?;
    failure(
        run,
        "x2",
        "code mode run is unavailable or expired.",
        "invalid_input",
    )?;
    // The observable counts: a run left waiting is still parked when the script ends.
    let run = ctx.cleanup("parked", "@scripts/parked.json")?;
    eq("p1 status", &run.call("p1")?["status"], &json!("waiting"))?;
    eq(
        "a waiting run's parkedRuns",
        &run.out["runtime"]["parkedRuns"],
        &json!(1),
    )
}

fn step16(ctx: &mut Ctx) -> Result<(), String> {
    let file = ctx.scratch.join("trajectory.jsonl");
    let run = ctx.enabled()?;
    let events = run.out["trajectory"]
        .as_array()
        .ok_or("no trajectory in the envelope")?;
    let lines = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    eq(
        "trajectory file lines",
        &json!(lines.lines().count()),
        &json!(events.len()),
    )?;
    let nested_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "nested_tool_call")
        .collect();
    if nested_events.is_empty() {
        return Err(
            "the trajectory has no nested_tool_call events: nested calls are not recorded".into(),
        );
    }
    let placed = |id: &str| -> Result<Value, String> {
        Ok(json!(run.call(id)?["nestedCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| json!([
                n["toolCallId"],
                n["toolId"],
                n["parentToolCallId"],
                n["status"]
            ]))
            .collect::<Vec<_>>()))
    };
    eq(
        "e2 nested calls",
        &placed("e2")?,
        &json!([
            [
                "tool_search_code:e2:weather:1",
                "openclaw:core:weather",
                "e2",
                "ok"
            ],
            [
                "tool_search_code:e2:fake_create_ticket:2",
                "openclaw:tickets:fake_create_ticket",
                "e2",
                "ok"
            ],
            [
                "tool_search_code:e2:browse_page:3",
                "openclaw:browser:browse_page",
                "e2",
                "ok"
            ],
            [
                "tool_search_code:e2:client_notify:4",
                "client:desktop:client_notify",
                "e2",
                "ok"
            ],
            [
                "tool_search_code:e2:exec:5",
                "openclaw:core:exec",
                "e2",
                "ok"
            ],
        ]),
    )?;
    eq(
        "e4 nested calls",
        &placed("e4")?,
        &json!([
            [
                "tool_search_code:e4:everything__echo:1",
                "mcp:everything:everything__echo",
                "e4",
                "ok"
            ],
            [
                "tool_search_code:e4:everything__get-sum:2",
                "mcp:everything:everything__get-sum",
                "e4",
                "ok"
            ],
            [
                "tool_search_code:e4:memory__create_entities:3",
                "mcp:memory:memory__create_entities",
                "e4",
                "ok"
            ],
            [
                "tool_search_code:e4:memory__read_graph:4",
                "mcp:memory:memory__read_graph",
                "e4",
                "ok"
            ],
        ]),
    )?;
    eq(
        "e6 nested calls (started in exec, settled while parked)",
        &placed("e6")?,
        &json!([[
            "tool_search_code:e6:slow_report:1",
            "openclaw:core:slow_report",
            "e6",
            "ok"
        ]]),
    )?;
    eq(
        "w1 nested calls (started after the restore)",
        &placed("w1")?,
        &json!([[
            "tool_search_code:e6:weather:2",
            "openclaw:core:weather",
            "e6",
            "ok"
        ]]),
    )?;
    eq(
        "unplaced nested calls",
        &json!(run.out["transcript"].get("unplacedNestedCalls").is_some()),
        &json!(false),
    )?;
    eq(
        "nested_tool_call events",
        &json!(nested_events.len()),
        &json!(11),
    )?;
    for e in &nested_events {
        ensure(
            &format!("{} has a parent exec", e["toolCallId"]),
            ["e2", "e4", "e6"]
                .iter()
                .any(|p| e["parentToolCallId"] == *p),
        )?;
    }
    Ok(())
}

/// `"auto"` with `model` (from the fixture catalog unless `bundled`), running the TypeScript script.
fn auto(ctx: &mut Ctx, name: &'static str, model: &str, bundled: bool) -> Result<(), String> {
    let mut args = vec![
        "--script",
        "@scripts/typescript.json",
        "--config",
        "@config-auto.json",
        "--tools",
        "@tools.json",
        "--model",
        model,
    ];
    if !bundled {
        args.extend(["--provider-catalog", "@provider-catalog.json"]);
    }
    ctx.run(name, &args).map(|_| ())
}

fn check_auto(ctx: &mut Ctx) -> Result<(), String> {
    auto(ctx, "auto-preferred", "e2e/preferred-model", false)?;
    eq(
        "preferred activation",
        &ctx.runs["auto-preferred"].out["activation"],
        &json!({"engaged": true, "reason": "auto_preferred", "payloadCheck": "passed", "visibleTools": ["exec", "wait", "image"]}),
    )?;
    auto(ctx, "auto-capable", "e2e/capable-model", false)?;
    let run = &ctx.runs["auto-capable"];
    eq(
        "capable activation",
        &run.out["activation"],
        &json!({"engaged": false, "reason": "auto_capable", "payloadCheck": "not_engaged", "visibleTools": []}),
    )?;
    eq(
        "capable payload (every allowed tool, directly)",
        &json!(run.payload_names()),
        &json!([
            "read",
            "weather",
            "exec",
            "slow_report",
            "image",
            "fake_create_ticket",
            "browse_page",
            "client_notify"
        ]),
    )?;
    auto(ctx, "auto-bundled", "anthropic/claude-opus-5", true)?;
    eq(
        "bundled anthropic/claude-opus-5 reason",
        &ctx.runs["auto-bundled"].out["activation"]["reason"],
        &json!("auto_preferred"),
    )
}

fn check_agent(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.run(
        "per-agent",
        &[
            "--script",
            "@scripts/no-tools.json",
            "--config",
            "@config-enabled.json",
            "--tools",
            "@tools.json",
            "--agent",
            "direct-agent",
        ],
    )?;
    eq(
        "reason",
        &run.out["activation"]["reason"],
        &json!("disabled"),
    )?;
    eq(
        "payload",
        &json!(run.payload_names()),
        &json!([
            "read",
            "weather",
            "exec",
            "slow_report",
            "image",
            "fake_create_ticket",
            "browse_page",
            "client_notify"
        ]),
    )
}

fn check_no_tools(ctx: &mut Ctx) -> Result<(), String> {
    for (name, config, flag, reason) in [
        (
            "disable-tools",
            "@config-enabled.json",
            Some("--disable-tools"),
            "disable_tools",
        ),
        (
            "empty-allow",
            "@config-empty-allow.json",
            None,
            "empty_allow_list",
        ),
    ] {
        let mut args = vec![
            "--script",
            "@scripts/no-tools.json",
            "--config",
            config,
            "--tools",
            "@tools.json",
        ];
        args.extend(flag);
        let run = ctx.run(name, &args)?;
        eq(
            &format!("{name} payload"),
            &run.out["payload"],
            &json!({"tools": []}),
        )?;
        eq(
            &format!("{name} activation"),
            &run.out["activation"],
            &json!({"engaged": false, "reason": reason, "payloadCheck": "no_tools", "visibleTools": []}),
        )?;
        eq(
            &format!("{name} n1 error"),
            &run.call("n1")?["error"],
            &json!("tool \"exec\" is not in the provider payload"),
        )?;
        eq(
            &format!("{name} codeModeEngaged"),
            &run.out["meta"]["agentMeta"]["codeModeEngaged"],
            &json!(false),
        )?;
    }
    Ok(())
}

fn check_shell(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "exec tools in the payload",
        &json!(run.payload_names().iter().filter(|n| *n == "exec").count()),
        &json!(1),
    )?;
    eq(
        "shell exec by id",
        &value_of(run, "e2")?["shell"],
        &json!({"input": {"command": "echo hi"}}),
    )?;
    // With code mode off, the model's `exec` is the shell tool itself.
    auto(ctx, "auto-capable", "e2e/capable-model", false)?;
    let call = ctx.runs["auto-capable"].call("ts1")?;
    eq("capable ts1 toolKind", &call["toolKind"], &json!("tool"))?;
    eq(
        "capable ts1 ran the shell exec",
        &call["result"]["details"]["input"]["language"],
        &json!("typescript"),
    )
}

fn check_typescript(ctx: &mut Ctx) -> Result<(), String> {
    auto(ctx, "auto-preferred", "e2e/preferred-model", false)?;
    let run = &ctx.runs["auto-preferred"];
    eq("ts1 value", value_of(run, "ts1")?, &json!(42))?;
    eq(
        "TypeScript exec typescriptTransforms",
        &run.out["runtime"]["typescriptTransforms"],
        &json!(1),
    )?;
    let run = ctx.enabled()?;
    eq(
        "JavaScript-only typescriptTransforms",
        &run.out["runtime"]["typescriptTransforms"],
        &json!(0),
    )?;
    let run = ctx.disabled()?;
    eq(
        "disabled typescriptTransforms",
        &run.out["runtime"]["typescriptTransforms"],
        &json!(0),
    )
}

fn check_cost(ctx: &mut Ctx) -> Result<(), String> {
    // Usage: input 35500, output 1140, cacheRead 9000, cacheWrite 800 tokens at $3 / $15 / $0.3 /
    // $3.75 per million: 0.1065 + 0.0171 + 0.0027 + 0.003.
    let run = ctx.enabled()?;
    eq(
        "costUsd",
        &run.out["meta"]["agentMeta"]["costUsd"],
        &json!(0.1293),
    )
}

fn check_bridge(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "meta",
        &run.out["meta"]["agentMeta"]["bridgeCalls"],
        &json!({"search": 3, "describe": 1, "call": 11}),
    )?;
    eq(
        "toolSummary",
        &run.out["meta"]["toolSummary"],
        &json!({"calls": 7, "byName": {"exec": 6, "wait": 1}}),
    )?;
    eq(
        "assistantTurns",
        &run.out["meta"]["agentMeta"]["assistantTurns"],
        &json!(7),
    )
}

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
