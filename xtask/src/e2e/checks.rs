//! The implicit checklist items of the E2E plan (the table is `super::CHECKS`).

use serde_json::json;

use super::*;

/// `"auto"` with `model` (from the fixture catalog unless `bundled`), running the TypeScript script.
pub(super) fn auto(
    ctx: &mut Ctx,
    name: &'static str,
    model: &str,
    bundled: bool,
) -> Result<(), String> {
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

pub(super) fn check_auto(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn check_agent(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn check_no_tools(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn check_shell(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn check_typescript(ctx: &mut Ctx) -> Result<(), String> {
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

pub(super) fn check_cost(ctx: &mut Ctx) -> Result<(), String> {
    // Usage: input 35500, output 1140, cacheRead 9000, cacheWrite 800 tokens at $3 / $15 / $0.3 /
    // $3.75 per million: 0.1065 + 0.0171 + 0.0027 + 0.003.
    let run = ctx.enabled()?;
    eq(
        "costUsd",
        &run.out["meta"]["agentMeta"]["costUsd"],
        &json!(0.1293),
    )
}

pub(super) fn check_bridge(ctx: &mut Ctx) -> Result<(), String> {
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
