//! `codemode exec` follows a waiting run with `wait`s and prints one result with the output of
//! all of them; that output obeys `maxOutputBytes` as a whole (issue 15 item 1,
//! docs/threat-model.md "Host memory"), so a chatty run that yields forever cannot make the
//! host concatenate output without bound.

use crate::common;

use serde_json::{json, Value};

fn exec(config: &str, code: &str) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write_file(dir.path(), "config.json", config);
    let (code, value) = common::json_run(&["exec", "--config", path.to_str().unwrap(), "-e", code]);
    (Some(code), value)
}

#[test]
fn output_across_waits_is_bounded_by_max_output_bytes() {
    // Each leg writes 600 bytes (under the 1024-byte limit) and yields; forever.
    let (status, result) = exec(
        r#"{"tools": {"codeMode": {"maxOutputBytes": 1024}}}"#,
        r#"for (let i = 0; ; i++) { text("x".repeat(600)); await yield_control("more"); }"#,
    );
    assert_eq!(status, Some(1));
    assert_eq!(result["status"], "failed");
    assert_eq!(result["code"], "output_limit_exceeded");
    assert_eq!(result["output"], json!([]));
    // Two legs' items as one array `[{"type":"text","text":"xxx…"},{…}]`: 1,253 bytes.
    assert_eq!(
        result["error"],
        "code mode output limit exceeded. The result is 1,253 bytes; maxOutputBytes is 1,024 (tools.codeMode.maxOutputBytes). Return less: only the fields or entries the answer needs (to find tools, `tools.search(query)` rather than all of `ALL_TOOLS`)."
    );
}

#[test]
fn output_across_waits_under_the_limit_is_kept_in_order() {
    let (status, result) = exec(
        r#"{"tools": {"codeMode": {"maxOutputBytes": 1024}}}"#,
        r#"for (let i = 0; i < 3; i++) { text("leg " + i); await yield_control(); } return "done";"#,
    );
    assert_eq!(status, Some(0), "{result}");
    assert_eq!(result["value"], "done");
    assert_eq!(
        result["output"],
        json!([{"type": "text", "text": "leg 0"}, {"type": "text", "text": "leg 1"}, {"type": "text", "text": "leg 2"}])
    );
}
