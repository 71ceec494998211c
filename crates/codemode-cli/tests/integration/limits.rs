//! Limit errors say which limit, the size that hit it and the setting to change, after the
//! contract's message (issue 16 item 3), seen from the real binary.

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use common::output as codemode;

fn result(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A realistic catalog: 160 tools with a sentence of description and a small schema each.
fn write_big_catalog(dir: &Path) -> String {
    let tools: Vec<Value> = (0..160)
        .map(|i| {
            json!({
                "name": format!("service_{i:03}_operation"),
                "description": format!(
                    "Operation {i} of the service: looks up records by key and returns their current state, owners, labels and the time of the last change. Results are paged: pass the cursor of the previous page to get the next one, up to the limit. Keys are case sensitive; labels are not."
                ),
                "parameters": {"type": "object", "properties": {
                    "key": {"type": "string"}, "limit": {"type": "number"}}, "required": ["key"]},
                "result": {"ok": true}
            })
        })
        .collect();
    let path = dir.join("tools.json");
    std::fs::write(&path, serde_json::to_string(&tools).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn returning_all_tools_over_the_limit_names_size_limit_and_setting() {
    let dir = tempfile::tempdir().unwrap();
    let tools = write_big_catalog(dir.path());
    // The size the guest measures: ALL_TOOLS as compact JSON, which `catalog --json` prints.
    let listed = codemode(&["catalog", "--tools", &tools, "--json"]);
    assert_eq!(listed.status.code(), Some(0));
    let all_tools: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let size = serde_json::to_vec(&all_tools).unwrap().len();
    assert!(size > 65_536, "ALL_TOOLS is only {size} bytes");
    let out = codemode(&["exec", "--tools", &tools, "-e", "return ALL_TOOLS"]);
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["code"], "output_limit_exceeded");
    assert_eq!(
        r["error"],
        format!(
            "code mode output limit exceeded. The result is {} bytes; maxOutputBytes is 65,536 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`).",
            codemode_facade::limits::format_count(size as u64)
        )
    );
    assert_eq!(r["output"], json!([]));
    // What the advice says works: ids only, or a search, fit.
    let out = codemode(&[
        "exec",
        "--tools",
        &tools,
        "-e",
        "return ALL_TOOLS.map((t) => t.id).length",
    ]);
    assert_eq!(result(&out)["value"], 160);
}

#[test]
fn a_smaller_max_output_bytes_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_file(
        dir.path(),
        "config.json",
        r#"{"tools": {"codeMode": {"maxOutputBytes": 1024}}}"#,
    );
    let out = codemode(&[
        "exec",
        "--config",
        config.to_str().unwrap(),
        "-e",
        "return 'x'.repeat(2048)",
    ]);
    assert_eq!(
        result(&out)["error"],
        "code mode output limit exceeded. The result is 2,050 bytes; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`)."
    );
}

#[test]
fn a_timeout_names_timeout_ms() {
    let out = codemode(&["exec", "--timeout-ms", "150", "-e", "while (true) {}"]);
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["code"], "timeout");
    assert_eq!(
        r["error"],
        "code mode timeout exceeded. The program computed without waiting on a tool until the call's budget ran out; timeoutMs is 150 (tools.codeMode.timeoutMs)."
    );
}

#[test]
fn too_many_pending_calls_names_max_pending_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let tools = common::write_file(
        dir.path(),
        "tools.json",
        r#"[{"name": "slow", "result": 1, "delayMs": 50}]"#,
    );
    let out = codemode(&[
        "exec",
        "--tools",
        tools.to_str().unwrap(),
        "-e",
        "return await Promise.all(Array.from({length: 40}, () => tools.slow({})))",
    ]);
    let r = result(&out);
    assert_eq!(r["code"], "invalid_input");
    assert_eq!(
        r["error"],
        "too many pending code mode tool calls. The program started more tool calls at once than the limit; maxPendingToolCalls is 16 (tools.codeMode.maxPendingToolCalls). Start them in batches and await each batch before the next."
    );
}
