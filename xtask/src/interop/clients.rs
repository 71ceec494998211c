//! The checks of `cargo xtask interop` (`interop.rs`), one function per client: each drives
//! `codemode serve` (the shared `--http` one, or its own over stdio) with a real client and
//! returns a one-line detail, or what went wrong (docs/mcp.md, "Interop").

use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::{dir, output, write_json, Ctx};
use crate::cmd::root;

/// The value server-everything's `get-sum` answers for `{a: 2, b: 40}` (the approval checks).
const SUM_TEXT: &str = "The sum of 2 and 40 is 42.";
/// The value of the slow program (`trigger-long-running-operation`, 2 s in 2 steps).
const SLOW_TEXT: &str = "Long running operation completed. Duration: 2 seconds, Steps: 2.";
/// The approval question's first line for `get-sum`.
const SUM_ASKED: &str = "Code mode asks to run the tool \"mcp:everything:everything__get-sum\".";

/// The `RESULT <name> <json>` lines of a client script, by name.
pub(super) fn results(stdout: &[u8]) -> std::collections::BTreeMap<String, Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("RESULT "))
        .filter_map(|rest| {
            let (name, json) = rest.split_once(' ')?;
            Some((name.to_string(), serde_json::from_str(json).ok()?))
        })
        .collect()
}

/// Fails with `what` and the value when `ok` is false.
fn expect(ok: bool, what: &str, value: &Value) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {value}"))
    }
}

/// A completed exec result (`structuredContent`) whose value is `value`.
fn completed_with(result: &Value, value: &str) -> Result<(), String> {
    let structured = &result["structuredContent"];
    expect(
        structured["status"] == "completed" && structured["value"] == value,
        &format!("expected a completed run with the value {value:?}"),
        result,
    )
}

/// Lines of an `mcp list` output naming `server`.
fn line_of<'a>(text: &'a str, server: &str) -> Option<&'a str> {
    text.lines()
        .find(|line| line.contains(&format!("{server}:")))
}

pub(super) fn claude_mcp_list(ctx: &Ctx) -> Result<String, String> {
    let home = ctx.home("claude")?;
    let claude = |args: &[String]| -> Result<Output, String> {
        output(
            ctx.command(ctx.clients.join("claude"), &home)
                .env("DISABLE_TELEMETRY", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .args(args),
            Duration::from_secs(60),
        )
    };
    // `-e` takes every value up to the next option, so it comes after the name, before `--`.
    let env = ctx.cache_env();
    let mut add = strings(&[
        "mcp",
        "add",
        "-s",
        "user",
        "codemode-stdio",
        "-e",
        &env,
        "--",
    ]);
    add.push(ctx.bin.display().to_string());
    add.extend(ctx.serve_args());
    claude(&add)?;
    claude(&strings(&[
        "mcp",
        "add",
        "-s",
        "user",
        "--transport",
        "http",
        "codemode-http",
        &ctx.url,
    ]))?;
    let list = claude(&strings(&["mcp", "list"]))?;
    let text = String::from_utf8_lossy(&list.stdout).to_string();
    let mut lines = Vec::new();
    for server in ["codemode-stdio", "codemode-http"] {
        let line = line_of(&text, server).ok_or(format!("{server} is not listed: {text}"))?;
        if !line.contains("✔ Connected") {
            return Err(format!("{server} is not connected: {line}"));
        }
        lines.push(line.trim().to_string());
    }
    Ok(lines.join(" | "))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(super) fn gemini_mcp_list(ctx: &Ctx) -> Result<String, String> {
    let home = ctx.home("gemini")?;
    // Gemini CLI leaves MCP servers of an untrusted folder disabled; trust the HOME it runs in.
    std::fs::create_dir_all(home.join(".gemini")).map_err(|e| e.to_string())?;
    write_json(
        &home.join(".gemini").join("trustedFolders.json"),
        &json!({home.display().to_string(): "TRUST_FOLDER"}),
    )?;
    let gemini = |args: &[String]| -> Result<Output, String> {
        output(
            ctx.command(ctx.clients.join("gemini"), &home).args(args),
            Duration::from_secs(60),
        )
    };
    let mut add = strings(&["mcp", "add", "-s", "user", "-e", &ctx.cache_env()]);
    add.push("codemode-stdio".into());
    add.push(ctx.bin.display().to_string());
    add.extend(ctx.serve_args());
    gemini(&add)?;
    gemini(&strings(&[
        "mcp",
        "add",
        "-s",
        "user",
        "--transport",
        "http",
        "codemode-http",
        &ctx.url,
    ]))?;
    let list = gemini(&strings(&["mcp", "list"]))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&list.stdout),
        String::from_utf8_lossy(&list.stderr)
    );
    let mut lines = Vec::new();
    for server in ["codemode-stdio", "codemode-http"] {
        let line = line_of(&text, server).ok_or(format!("{server} is not listed: {text}"))?;
        if !line.trim_end().ends_with("- Connected") {
            return Err(format!("{server} is not connected: {line}"));
        }
        lines.push(line.trim().to_string());
    }
    Ok(lines.join(" | "))
}

pub(super) fn inspector(ctx: &Ctx) -> Result<String, String> {
    let inspector = ctx.clients.join("inspector");
    let mut seen = Vec::new();
    for era in ["legacy", "modern"] {
        for transport in ["stdio", "http"] {
            // Options first; a stdio server's command line goes last, after `--` (its own
            // `--config` would otherwise be read as the Inspector's).
            let inspect = |method: &[&str]| -> Result<Output, String> {
                let home = ctx.home(&format!("inspector-{era}-{transport}"))?;
                let mut c = ctx.command(&inspector, &home);
                c.args(["--cli", "--protocol-era", era, "--format", "json", "-q"])
                    .args(method);
                if transport == "http" {
                    c.args(["--transport", "http", "--server-url", &ctx.url]);
                } else {
                    c.args(["-e", &ctx.cache_env(), "--"])
                        .arg(&ctx.bin)
                        .args(ctx.serve_args());
                }
                output(&mut c, Duration::from_secs(60))
            };
            // `--format json` prints `{"result": <the MCP result>}`.
            let listed = inspect(&["--method", "tools/list"])?;
            let listed: Value = serde_json::from_slice(&listed.stdout)
                .map_err(|e| format!("{era}/{transport} tools/list: {e}"))?;
            let names: Vec<&str> = listed["result"]["tools"]
                .as_array()
                .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
                .unwrap_or_default();
            expect(
                names == ["exec", "wait"],
                &format!("{era}/{transport} tools/list should be exec and wait"),
                &listed,
            )?;
            let called = inspect(&[
                "--method",
                "tools/call",
                "--tool-name",
                "exec",
                "--tool-args-json",
                r#"{"code": "console.log('from the inspector'); return 6 * 7"}"#,
            ])?;
            let called: Value = serde_json::from_slice(&called.stdout)
                .map_err(|e| format!("{era}/{transport} tools/call: {e}"))?;
            let result = &called["result"];
            let structured = &result["structuredContent"];
            expect(
                structured["status"] == "completed"
                    && structured["value"] == 42
                    && structured["output"]
                        .to_string()
                        .contains("from the inspector"),
                &format!("{era}/{transport} tools/call exec should complete with 42"),
                &called,
            )?;
            // The era shows on the wire: only 2026-07-28 results carry `resultType`.
            let modern = result["resultType"] == "complete";
            expect(
                modern == (era == "modern"),
                &format!("{era}/{transport}: resultType says the other era"),
                &called,
            )?;
            seen.push(format!("{era}/{transport}"));
        }
    }
    Ok(format!(
        "tools/list = [exec, wait] and exec → 42 over {}",
        seen.join(", ")
    ))
}

/// The checks both SDK scripts share: `task`, `tasks_update` and `mrtr` results. `calls` and
/// `gets` read the tools/call and tasks/get counts of one result.
fn sdk_results(
    got: &std::collections::BTreeMap<String, Value>,
    calls: fn(&Value) -> &Value,
    gets: fn(&Value) -> &Value,
) -> Result<String, String> {
    let get = |name: &str| got.get(name).ok_or(format!("no {name} result: {got:?}"));
    let task = get("task")?;
    expect(task["protocol"] == "2026-07-28", "task: protocol", task)?;
    expect(*calls(task) == 1, "task: exactly one tools/call", task)?;
    let polls = gets(task).as_u64().unwrap_or(0);
    expect(polls > 0, "task: tasks/get polls", task)?;
    let statuses = task["statuses"].as_array().cloned().unwrap_or_default();
    expect(
        statuses.first() == Some(&json!("working")) && statuses.last() == Some(&json!("completed")),
        "task: working … completed",
        task,
    )?;
    completed_with(task, SLOW_TEXT)?;
    expect(
        task["structuredContent"]["output"]
            .to_string()
            .contains("after the slow tool"),
        "task: output since the start",
        task,
    )?;
    let update = get("tasks_update")?;
    expect(
        update["statuses"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("input_required"))),
        "tasks_update: input_required seen",
        update,
    )?;
    expect(
        update["asked"] == json!([SUM_ASKED]),
        "tasks_update: one approval asked",
        update,
    )?;
    completed_with(update, SUM_TEXT)?;
    let mrtr = get("mrtr")?;
    expect(mrtr["protocol"] == "2026-07-28", "mrtr: protocol", mrtr)?;
    expect(
        mrtr["asked"] == json!([SUM_ASKED]),
        "mrtr: one approval asked",
        mrtr,
    )?;
    completed_with(mrtr, SUM_TEXT)?;
    Ok(format!(
        "task: 1 tools/call, {polls} tasks/get, {}; approval by tasks/update and by MRTR → {SUM_TEXT:?}",
        json!(statuses)
    ))
}

pub(super) fn python_sdk(ctx: &Ctx) -> Result<String, String> {
    let python = crate::python::interpreter(&root());
    let out = output(
        ctx.command(&python, &ctx.home("python")?)
            .arg(ctx.scripts.join("python_client.py"))
            .arg(&ctx.url),
        Duration::from_secs(120),
    )?;
    sdk_results(
        &results(&out.stdout),
        |r| &r["toolsCall"],
        |r| &r["tasksGet"],
    )
}

pub(super) fn typescript_sdk(ctx: &Ctx) -> Result<String, String> {
    // Node resolves the SDK packages from `target/interop/node_modules`: run a copy from there.
    let script = dir(&root()).join("ts_client.mjs");
    std::fs::copy(ctx.scripts.join("ts_client.mjs"), &script)
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let out = output(
        ctx.command(ctx.clients.join("node"), &ctx.home("typescript")?)
            .arg(&script)
            .arg(&ctx.url),
        Duration::from_secs(120),
    )?;
    sdk_results(
        &results(&out.stdout),
        |r| &r["counts"]["tools/call"],
        |r| &r["counts"]["tasks/get"],
    )
}

pub(super) fn claude_agent_turn(ctx: &Ctx) -> Result<String, String> {
    const CODE: &str = "const r = await MCP.everything.echo({message: 'hello from Claude Code'}); return r.content[0].text;";
    let log = ctx.scratch.join("messages.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut stub = ctx
        .command(crate::python::interpreter(&root()), &ctx.home("messages")?)
        .arg(ctx.scripts.join("messages_stub.py"))
        .args(["mcp__codemode__exec", CODE])
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the Messages stand-in: {e}"))?;
    let port = {
        use std::io::BufRead;
        let mut line = String::new();
        let stdout = stub.stdout.take().ok_or("no stdout")?;
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        line.trim().strip_prefix("PORT ").map(str::to_string)
    };
    let outcome = (|| {
        let port = port.ok_or("the Messages stand-in printed no port")?;
        let config = ctx.scratch.join("claude-mcp.json");
        write_json(
            &config,
            &json!({"mcpServers": {"codemode": {"type": "http", "url": ctx.url}}}),
        )?;
        let home = ctx.home("claude-turn")?;
        let out = output(
            ctx.command(ctx.clients.join("claude"), &home)
                .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
                .env("ANTHROPIC_API_KEY", "sk-interop-stand-in")
                .env("DISABLE_TELEMETRY", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                // MCP tools go to the model directly, not behind Claude Code's tool search.
                .env("ENABLE_TOOL_SEARCH", "false")
                .args(["-p", "Run the exec tool.", "--output-format", "json"])
                .arg("--mcp-config")
                .arg(&config)
                .args([
                    "--strict-mcp-config",
                    "--allowedTools",
                    "mcp__codemode__exec",
                ]),
            Duration::from_secs(120),
        )?;
        let answer: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "claude -p printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })?;
        let text = answer["result"].as_str().unwrap_or_default();
        let recorded = text.strip_prefix("codemode answered: ").ok_or(format!(
            "the turn did not end with the tool result: {answer}"
        ))?;
        let result: Value = serde_json::from_str(recorded)
            .map_err(|e| format!("the tool result is not codemode's JSON ({e}): {recorded}"))?;
        let wanted = "Echo: hello from Claude Code";
        expect(
            result["status"] == "completed" && result["value"] == wanted,
            "the tool result should be codemode's completed run",
            &result,
        )?;
        expect(answer["is_error"] == false, "claude -p is_error", &answer)?;
        // What Claude Code sent the model: the second request carries that tool_result.
        let sent = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let carried = sent.lines().any(|line| {
            line.contains("\"tool_result\"")
                && line.contains("toolu_interop_1")
                && line.contains(wanted)
        });
        expect(
            carried,
            "no request carried the tool_result",
            &json!(sent.lines().count()),
        )?;
        // What Claude Code recorded: its session transcript holds the tool result it kept.
        let session = answer["session_id"].as_str().unwrap_or_default();
        let projects = home.join(".claude").join("projects");
        let transcript = std::fs::read_dir(&projects)
            .map_err(|e| format!("{}: {e}", projects.display()))?
            .filter_map(Result::ok)
            .map(|project| project.path().join(format!("{session}.jsonl")))
            .find(|path| path.exists())
            .ok_or(format!(
                "no transcript of session {session:?} under {}",
                projects.display()
            ))?;
        let recorded_lines = std::fs::read_to_string(&transcript)
            .map_err(|e| format!("{}: {e}", transcript.display()))?;
        let kept = recorded_lines.lines().any(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|entry| {
                entry["toolUseResult"]
                    .as_str()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .is_some_and(|result| {
                        result["value"] == wanted && result["status"] == "completed"
                    })
            })
        });
        expect(
            kept,
            "the transcript has no toolUseResult with codemode's run",
            &json!(transcript),
        )?;
        Ok(format!(
            "tool_use mcp__codemode__exec → {}; {} Messages requests; kept in the transcript",
            recorded.chars().take(120).collect::<String>(),
            sent.lines().count()
        ))
    })();
    let _ = stub.kill();
    let _ = stub.wait();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script's output: its `RESULT` lines, the ones the SDK checks read.
    fn script_output(task_calls: u64, update_asked: &str) -> Vec<u8> {
        let done = |value: &str| json!({"status": "completed", "value": value, "output": [{"type": "text", "text": "after the slow tool"}]});
        format!(
            "noise\nRESULT task {}\nRESULT tasks_update {}\nRESULT mrtr {}\n",
            json!({"protocol": "2026-07-28", "toolsCall": task_calls, "tasksGet": 3,
                   "statuses": ["working", "completed"], "structuredContent": done(SLOW_TEXT)}),
            json!({"statuses": ["input_required", "completed"], "asked": [update_asked],
                   "structuredContent": done(SUM_TEXT)}),
            json!({"protocol": "2026-07-28", "asked": [SUM_ASKED], "structuredContent": done(SUM_TEXT)}),
        )
        .into_bytes()
    }

    #[test]
    fn the_sdk_checks_pass_on_one_tools_call_and_fail_on_two() {
        fn calls(r: &Value) -> &Value {
            &r["toolsCall"]
        }
        fn gets(r: &Value) -> &Value {
            &r["tasksGet"]
        }
        let good = sdk_results(&results(&script_output(1, SUM_ASKED)), calls, gets);
        assert_eq!(
            good.unwrap(),
            format!("task: 1 tools/call, 3 tasks/get, [\"working\",\"completed\"]; approval by tasks/update and by MRTR → {SUM_TEXT:?}")
        );
        let twice = sdk_results(&results(&script_output(2, SUM_ASKED)), calls, gets);
        assert!(twice
            .unwrap_err()
            .starts_with("task: exactly one tools/call: "));
        let unasked = sdk_results(&results(&script_output(1, "something else")), calls, gets);
        assert!(unasked
            .unwrap_err()
            .starts_with("tasks_update: one approval asked: "));
        let missing = sdk_results(&results(b"RESULT task {}\n"), calls, gets);
        assert!(missing.unwrap_err().starts_with("task: protocol"));
    }

    #[test]
    fn mcp_list_lines_are_found_by_server_name() {
        let text = "Checking MCP server health…\n\ncodemode-stdio: /bin/codemode serve - ✔ Connected\ncodemode-http: http://127.0.0.1:1/mcp (HTTP) - ✘ Failed to connect\n";
        assert_eq!(
            line_of(text, "codemode-http"),
            Some("codemode-http: http://127.0.0.1:1/mcp (HTTP) - ✘ Failed to connect")
        );
        assert_eq!(line_of(text, "codemode-other"), None);
    }
}
