//! Approvals for MCP 2026-07-28 clients by MRTR (issue 23 item 3, docs/mcp.md "Approvals by
//! MRTR"): a `CodeModeServer` over streamable HTTP whose policy requires approval for `write`
//! and `deploy`, driven by the Python `mcp` SDK's stateless `Client` (which answers
//! `input_required` through its elicitation callback) and by raw 2026-07-28 requests for the
//! exact shapes and the refusals.

use crate::common;

use std::time::Duration;

use codemode_mcp::elicit::approval_schema;
use codemode_mcp::mrtr::INVALID_REQUEST_STATE;
use codemode_test_support::mcp::request_2026;
use serde_json::{json, Value};

use common::serve::{assert_write_approved_deploy_declined, python_report, HttpFixture};

/// A server over `read` (no approval), `write` and `deploy` (approval required), whose runs
/// park after 300 ms, served over streamable HTTP on a loopback port.
async fn fixture() -> HttpFixture {
    HttpFixture::start(
        &json!({"timeoutMs": 300}),
        &["read", "write", "deploy"],
        &["write", "deploy"],
    )
    .await
}

/// The program: `write` and `deploy` at once; each settles to its value or its error message.
const PROGRAM: &str = "const settled = await Promise.allSettled(['write', 'deploy'].map((t) => tools[t]({tool: t, token: 's3cret'}))); return settled.map((s) => s.status === 'fulfilled' ? s.value : s.reason.message);";

fn message(tool: &str) -> String {
    format!(
        "Code mode asks to run the tool \"openclaw:core:{tool}\".\nInput: {{\"tool\":\"{tool}\",\"token\":\"[redacted]\"}}\nSet approve to true to run it; anything else denies it."
    )
}

/// One stateless 2026-07-28 `tools/call` of `exec` (`extra` adds `inputResponses` /
/// `requestState`), from a client that declared form elicitation; the JSON-RPC response.
async fn call(url: &str, id: u64, extra: Value) -> Value {
    let mut params = json!({"name": "exec", "arguments": {"code": PROGRAM}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    request_2026(
        url,
        id,
        "tools/call",
        params,
        json!({"elicitation": {"form": {}}}),
    )
    .await
}

/// The `(approvalId, message)` of each `inputRequests` entry, after checking each is a form
/// `elicitation/create` with the approval schema.
fn asked(result: &Value) -> Vec<(String, String)> {
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    requests
        .iter()
        .map(|(key, request)| {
            assert_eq!(request["method"], "elicitation/create", "{request}");
            assert_eq!(
                request["params"]["requestedSchema"],
                serde_json::to_value(approval_schema()).unwrap()
            );
            assert!(key.starts_with("approval_"), "{key}");
            (
                key.clone(),
                request["params"]["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn refused(response: &Value) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(response["error"]["message"], INVALID_REQUEST_STATE);
    assert_eq!(
        response["error"]["data"],
        json!({"reason": "invalid_request_state"})
    );
}

/// Both pending approvals of the run come in one `input_required` result; a retry answering
/// one of them re-asks the other at once; the run resumes with the answers; tampered and
/// replayed `requestState`s are refused with the spec's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_come_back_as_input_required_and_the_retry_resumes_the_run() {
    let f = fixture().await;
    let first = call(&f.url, 1, json!({})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let mut questions = asked(result);
    questions.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(questions.len(), 2, "{first}");
    assert_eq!(questions[0].1, message("deploy"));
    assert_eq!(questions[1].1, message("write"));
    let (deploy, write) = (questions[0].0.clone(), questions[1].0.clone());
    let state = result["requestState"].as_str().unwrap().to_string();
    assert!(f.ran().is_empty());

    // Tampered: one character of the signed body changed.
    let mut tampered: Vec<char> = state.chars().collect();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    refused(
        &call(
            &f.url,
            2,
            json!({"requestState": tampered, "inputResponses": {}}),
        )
        .await,
    );

    // Only `write` answered: `deploy` is asked again, alone, with a new state.
    let approve = json!({"action": "accept", "content": {"approve": true}});
    let second = call(
        &f.url,
        3,
        json!({"requestState": state, "inputResponses": {write.clone(): approve}}),
    )
    .await;
    let result = &second["result"];
    assert_eq!(result["resultType"], "input_required", "{second}");
    assert_eq!(asked(result), [(deploy.clone(), message("deploy"))]);
    let again = result["requestState"].as_str().unwrap().to_string();
    assert_ne!(again, state);

    // The first state was used: replaying it is refused.
    refused(
        &call(
            &f.url,
            4,
            json!({"requestState": state, "inputResponses": {write: approve}}),
        )
        .await,
    );

    let done = call(
        &f.url,
        5,
        json!({"requestState": again, "inputResponses": {deploy: {"action": "decline"}}}),
    )
    .await;
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done}");
    assert_eq!(result["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(
        result["structuredContent"]["value"],
        json!([
            {"tool": "write", "token": "s3cret"},
            "Tool \"openclaw:core:deploy\" was not approved: declined",
        ])
    );
    assert_eq!(f.ran(), ["write"]);
    f.stop().await;
}

/// A state sealed by another server process is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_from_another_server_is_refused() {
    let (a, b) = (fixture().await, fixture().await);
    let first = call(&b.url, 1, json!({})).await;
    let state = first["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_string();
    refused(
        &call(
            &a.url,
            2,
            json!({"requestState": state, "inputResponses": {}}),
        )
        .await,
    );
    a.stop().await;
    b.stop().await;
}

/// The Python SDK's stateless `Client` gets both approvals by MRTR through its elicitation
/// callback and its driver retries; before issue 23 it was denied (`the client cannot elicit`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_approves_by_mrtr() {
    let Some(python) = codemode_test_support::python_with_mcp() else {
        eprintln!("skipped: no Python with the mcp SDK (set CODEMODE_PYTHON_MCP)");
        return;
    };
    let f = fixture().await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mrtr_client.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .arg(&f.url)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python starts");
    let (result, elicited) = python_report(child.stdout.take().unwrap()).await;
    assert_write_approved_deploy_declined(&result);
    let mut elicited: Vec<String> = elicited
        .iter()
        .map(|message| message.as_str().unwrap().to_string())
        .collect();
    elicited.sort();
    assert_eq!(elicited, [message("deploy"), message("write")]);
    assert_eq!(f.ran(), ["write"]);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    f.stop().await;
}
