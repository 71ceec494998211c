//! The 16 steps of the E2E plan, in order; each asserts one step's promise against the
//! fixtures (the table of what each asserts is `super::STEPS`).

use serde_json::{json, Value};

use super::*;

pub(super) fn step1(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.disabled()?;
    eq(
        "activation",
        &run.out["activation"],
        &json!({"engaged": false, "reason": "disabled", "payloadCheck": "not_engaged", "visibleTools": []}),
    )
}

pub(super) fn step2(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step3(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step4(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step5(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step6(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step7(ctx: &mut Ctx) -> Result<(), String> {
    let run = ctx.enabled()?;
    eq(
        "e1 value",
        value_of(run, "e1")?,
        &json!({"ids": ["openclaw:core:exec", "openclaw:core:read", "openclaw:core:slow_report", "openclaw:core:weather",
                        "openclaw:browser:browse_page", "openclaw:tickets:fake_create_ticket", "client:desktop:client_notify"],
                "image": false, "deploy": false, "mcp": 0}),
    )
}

pub(super) fn step8(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step9(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step10(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step11(ctx: &mut Ctx) -> Result<(), String> {
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
pub(super) fn e6_run_id(run: &Agent) -> Result<String, String> {
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

pub(super) fn step12(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step13(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step14(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step15(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn step16(ctx: &mut Ctx) -> Result<(), String> {
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
