//! What a host shows its model, from the real binary: `session`'s `{"tool": "surface"}` line,
//! `catalog --surface`, the `"id"` echo of session lines, and the one tools-file format that
//! `exec --tools` and `catalog --tools` share (issue 16, items 1, 2 and 9).

use crate::common;

use std::process::Output;

use codemode_catalog::{Catalog, SearchLimits};
use serde_json::{json, Value};

use common::{json_lines as stdout_lines, run as codemode, write_file as write};

/// A static tools file as `exec --tools` takes it (behaviour keys included).
const TOOLS: &str = r#"[
    {"name": "slow", "description": "Slow.", "result": {"ok": true}, "delayMs": 10},
    {"name": "echo", "echo": true,
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
]"#;

/// The quick index of [`TOOLS`], exactly as it ends the `exec` description.
const TOOLS_INDEX_LINES: &str =
    "- \"openclaw:core:echo\" { q: string } -> ?\n- \"openclaw:core:slow\" unknown -> ?\n";

/// The catalog ids `codemode catalog … --json` printed (exit 0 checked).
fn catalog_ids(out: &Output) -> Vec<String> {
    assert_eq!(out.status.code(), Some(0));
    let entries: Value = serde_json::from_slice(&out.stdout).unwrap();
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

/// The definitions a provider payload carries for `specs`, built by the library.
fn expected_tools(tools_file: &str) -> Value {
    let specs = codemode_catalog::cli::parse_tools_file(tools_file).unwrap();
    let catalog = Catalog::build(specs, &SearchLimits::default()).unwrap();
    serde_json::to_value(codemode_facade::surface_tools(&catalog)).unwrap()
}

#[test]
fn session_surface_line_answers_the_exec_and_wait_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let out = codemode(
        &["session", "--tools", tools.to_str().unwrap()],
        "{\"tool\": \"surface\", \"id\": 1}\n{\"tool\": \"surface\", \"args\": {}}\n",
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
    let lines = stdout_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0],
        json!({"status": "ok", "tools": expected_tools(TOOLS), "id": 1})
    );
    assert_eq!(
        lines[1],
        json!({"status": "ok", "tools": expected_tools(TOOLS)})
    );
    let tools = lines[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "exec");
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.ends_with(&format!(
            "{TOOLS_INDEX_LINES}\nUse these exact ids with tools.callValue; use ALL_TOOLS or tools.search inside exec when lookup is ambiguous."
        )),
        "{description}"
    );
    assert_eq!(tools[0]["parameters"]["required"], json!(["code"]));
    assert_eq!(
        tools[0]["parameters"]["properties"]["language"]["enum"],
        json!(["javascript", "typescript"])
    );
    assert_eq!(tools[0].get("hideFromChannelProgress"), None);
    assert_eq!(
        tools[1],
        json!({
            "name": "wait",
            "description": codemode_facade::surface::WAIT_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {"runId": {"type": "string", "description": "Code mode run id returned by exec."}},
                "required": ["runId"]
            },
            "hideFromChannelProgress": true
        })
    );
}

#[test]
fn catalog_surface_prints_what_the_session_answers() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let tools = tools.to_str().unwrap();
    let out = codemode(&["catalog", "--tools", tools, "--surface"], "");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_lines(&out), [expected_tools(TOOLS)]);
    let pretty = codemode(&["catalog", "--tools", tools, "--surface", "--pretty"], "");
    assert_eq!(
        String::from_utf8(pretty.stdout).unwrap(),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&expected_tools(TOOLS)).unwrap()
        )
    );
}

#[test]
fn surface_follows_the_config_policy_and_mcp_servers() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let config = write(
        dir.path(),
        "config.json",
        r#"{"tools": {"deny": ["slow"]}}"#,
    );
    let mcp = write(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"memory": {"command": codemode_test_support::npm_server("mcp-server-memory")}}})
            .to_string(),
    );
    let args = [
        "--tools",
        tools.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--mcp-config",
        mcp.to_str().unwrap(),
    ];
    let session = codemode(
        &[&["session"][..], &args[..]].concat(),
        "{\"tool\": \"surface\", \"id\": \"s\"}\n",
    );
    assert_eq!(String::from_utf8_lossy(&session.stderr), "");
    let session = stdout_lines(&session);
    let catalog = codemode(&[&["catalog", "--surface"][..], &args[..]].concat(), "");
    assert_eq!(String::from_utf8_lossy(&catalog.stderr), "");
    let catalog = stdout_lines(&catalog);
    assert_eq!(session[0]["tools"], catalog[0]);
    let description = catalog[0][0]["description"].as_str().unwrap();
    assert!(!description.contains("openclaw:core:slow"), "{description}");
    assert!(
        description.contains("- \"openclaw:core:echo\" { q: string } -> ?\n"),
        "{description}"
    );
    assert!(
        description.contains(codemode_facade::surface::EXEC_DESCRIPTION_MCP),
        "{description}"
    );
    assert!(
        description.contains("visible servers: memory"),
        "{description}"
    );
}

#[test]
fn session_echoes_the_id_of_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let out = codemode(
        &["session", "--tools", tools.to_str().unwrap()],
        concat!(
            "{\"id\": \"a-1\", \"tool\": \"exec\", \"args\": {\"code\": \"return 2\"}}\n",
            "{\"id\": 7, \"tool\": \"bogus\", \"args\": {}}\n",
            "{\"id\": [1], \"tool\": \"exec\", \"args\": {\"code\": \"return 3\"}}\n",
            "{\"tool\": \"exec\", \"args\": {\"code\": \"return 4\"}}\n",
            "{\"id\": 8, \"tool\": \"approve\", \"args\": {\"approvalId\": \"nope\", \"decision\": \"allow\"}}\n",
        ),
    );
    assert_eq!(out.status.code(), Some(0));
    let mut lines = stdout_lines(&out);
    assert_eq!(lines.len(), 5);
    // An `approve` line is answered as soon as it is read, possibly before the requests read
    // ahead of it (docs/threat-model.md, "Files an operator names"; issue 27 item 3): every other
    // reply keeps its order.
    let approve_at = lines.iter().position(|l| l["id"] == 8).unwrap();
    let approve = lines.remove(approve_at);
    lines.push(approve);
    assert_eq!(lines[0]["status"], "completed");
    assert_eq!(lines[0]["value"], 2);
    assert_eq!(lines[0]["id"], "a-1");
    assert_eq!(
        lines[1],
        json!({"status": "failed", "code": "invalid_input", "id": 7,
               "error": "unknown tool \"bogus\": expected \"exec\", \"wait\", \"approve\" or \"surface\""})
    );
    assert_eq!(
        lines[2],
        json!({"status": "failed", "code": "invalid_input",
               "error": "\"id\" must be a string or a number, got an array"})
    );
    assert_eq!(lines[3]["value"], 4);
    assert_eq!(lines[3].get("id"), None);
    assert_eq!(
        lines[4],
        json!({"status": "failed", "code": "invalid_input", "id": 8,
               "error": "unknown approval id \"nope\"."})
    );
}

#[test]
fn catalog_reads_the_file_exec_runs() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write(dir.path(), "tools.json", TOOLS);
    let tools = tools.to_str().unwrap();
    // The same file runs under exec…
    let exec = codemode(
        &[
            "exec",
            "--tools",
            tools,
            "-e",
            "return await tools.echo({q: 'x'})",
        ],
        "",
    );
    assert_eq!(
        stdout_lines(&exec)[0]["value"],
        json!({"input": {"q": "x"}})
    );
    // …and shows under catalog, behaviour keys ignored, description defaulting to "".
    let out = codemode(&["catalog", "--tools", tools, "--json"], "");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        catalog_ids(&out),
        ["openclaw:core:echo", "openclaw:core:slow"]
    );
    let entries: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entries[0]["description"], "");
    // A file of bare specs is a catalog too (exec needs a behaviour per tool to run them).
    let bare = write(
        dir.path(),
        "bare.json",
        r#"[{"name": "a", "description": "A."}]"#,
    );
    let bare = bare.to_str().unwrap();
    let out = codemode(&["catalog", "--tools", bare, "--index"], "");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("- \"openclaw:core:a\" unknown -> ?\n"));
    let out = codemode(&["exec", "--tools", bare, "-e", "return 1"], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("codemode: --tools {bare}: tool #0 (\"a\"): needs one of \"result\", \"resultByAction\", \"error\" or \"echo\"\n")
    );
    // A typo is named the same way by both commands.
    let typo = write(
        dir.path(),
        "typo.json",
        r#"[{"name": "a", "descripton": "A.", "result": 1}]"#,
    );
    let typo = typo.to_str().unwrap();
    let out = codemode(&["catalog", "--tools", typo], "");
    assert_eq!(out.status.code(), Some(2));
    let catalog_err = String::from_utf8(out.stderr).unwrap();
    let out = codemode(&["exec", "--tools", typo, "-e", "return 1"], "");
    assert_eq!(out.status.code(), Some(2));
    let exec_err = String::from_utf8(out.stderr).unwrap();
    // The spec fields are ToolSpec's own list; both commands give the same message.
    let message = exec_err
        .strip_prefix(&format!("codemode: --tools {typo}: "))
        .unwrap();
    assert_eq!(
        catalog_err,
        format!("codemode: --tools {typo}: tools file: {message}")
    );
    assert!(
        message.starts_with(
            "tool #0 (\"a\"): unknown field `descripton`, expected one of `name`, `label`, `description`, `parameters`,"
        ),
        "{message}"
    );
    assert!(
        message.ends_with(", or one of `result`, `error`, `echo`, `resultByAction`, `delayMs`\n"),
        "{message}"
    );
}

#[test]
fn catalog_without_tools_shows_the_builtin_workspace_tools() {
    let out = codemode(&["catalog", "--json"], "");
    assert_eq!(
        catalog_ids(&out),
        [
            "openclaw:core:grep",
            "openclaw:core:list",
            "openclaw:core:read"
        ]
    );
}
