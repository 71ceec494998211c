//! `serve` with code mode off passes a downstream server's `input_required` (MRTR) through to a
//! 2026-07-28 client (docs/mcp.md, "Code mode off: a plain aggregating server"): the real
//! `codemode serve --http` binary aggregates `codemode-mcp-fixture` (codemode-mcp's conformance
//! fixture server, built beside `codemode`) and the test plays a stateless client with raw
//! requests.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use codemode_test_support::mcp::{request_2026, serve_http};

/// A stateless 2026-07-28 client of one `serve` URL.
struct Client {
    url: String,
    next_id: u64,
}

impl Client {
    /// One request with the revision's headers and `_meta` (`capabilities` declared); the
    /// JSON-RPC response.
    async fn request(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        self.next_id += 1;
        request_2026(&self.url, self.next_id, method, params, capabilities).await
    }

    /// `tools/call` of `name` with `extra` params, from a client that can elicit and sample.
    async fn call(&mut self, name: &str, extra: Value) -> Value {
        let mut params = json!({"name": name, "arguments": {}});
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        self.request(
            "tools/call",
            params,
            json!({"elicitation": {}, "sampling": {}}),
        )
        .await
    }
}

/// `codemode serve --http` with code mode off over the fixture server (named `fixture`), with
/// `extra` arguments, once it lists the fixture's tools; the child and a client.
async fn serve(dir: &std::path::Path, extra: &[&str]) -> (tokio::process::Child, Client) {
    let fixture =
        std::path::Path::new(env!("CARGO_BIN_EXE_codemode")).with_file_name("codemode-mcp-fixture");
    assert!(
        fixture.exists(),
        "{} is missing: `cargo test --workspace --no-run` builds it",
        fixture.display()
    );
    let servers = dir.join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"fixture": {"command": fixture}}}).to_string(),
    )
    .unwrap();
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"tools": {"codeMode": false}}"#).unwrap();
    let args: [&std::ffi::OsStr; 4] = [
        "--mcp-config".as_ref(),
        servers.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
    ];
    let extra = extra.iter().map(std::ffi::OsStr::new);
    let (child, url) = serve_http(
        Path::new(env!("CARGO_BIN_EXE_codemode")),
        args.into_iter().chain(extra),
        &dir.join("serve.log"),
    )
    .await;
    let mut client = Client { url, next_id: 0 };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = client.request("tools/list", json!({}), json!({})).await;
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == 28)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the fixture never listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, client)
}

/// An accepted elicitation answer with `content`.
fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn a_downstream_input_required_reaches_a_2026_client_with_its_state_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut client) = serve(dir.path(), &[]).await;
    let tool = "fixture__test_input_required_result_request_state";

    // Round 1: the server's question as it asked it; its state sealed by serve.
    let asked = client.call(tool, json!({})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(
        result["inputRequests"],
        json!({"confirm": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Please confirm",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"]
                }
            }
        }})
    );
    let state = result["requestState"].as_str().unwrap().to_string();

    // A tampered state is refused by serve itself, and leaves the real one usable.
    let tampered = client
        .call(
            tool,
            json!({"inputResponses": {"confirm": accept(json!({"ok": true}))},
                   "requestState": format!("{state}-TAMPERED")}),
        )
        .await;
    assert_eq!(
        tampered["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState",
               "data": {"reason": "invalid_request_state"}}),
        "{tampered}"
    );
    // Another tool's state does not open for this one.
    let foreign = client
        .call(
            "fixture__test_input_required_result_multi_round",
            json!({"inputResponses": {"step1": accept(json!({"name": "A"}))},
                   "requestState": state}),
        )
        .await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");

    // Round 2: the answer and the state reach the server, which validates its own state.
    let done = client
        .call(
            tool,
            json!({"inputResponses": {"confirm": accept(json!({"ok": true}))},
                   "requestState": state}),
        )
        .await;
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "state-ok: ok=true"}]),
        "{done}"
    );
    // A state is single-use.
    let replay = client
        .call(
            tool,
            json!({"inputResponses": {"confirm": accept(json!({"ok": true}))},
                   "requestState": state}),
        )
        .await;
    assert_eq!(replay["error"]["code"], -32602, "{replay}");

    // Multi-round: each round's state is new, and the last answer completes.
    let multi = "fixture__test_input_required_result_multi_round";
    let r1 = client.call(multi, json!({})).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_string();
    let r2 = client
        .call(
            multi,
            json!({"inputResponses": {"step1": accept(json!({"name": "Ada"}))},
                   "requestState": s1}),
        )
        .await;
    assert_eq!(
        r2["result"]["inputRequests"]["step2"]["params"]["message"],
        "Step 2: What is your favorite color?",
        "{r2}"
    );
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(s1, s2);
    let r3 = client
        .call(
            multi,
            json!({"inputResponses": {"step2": accept(json!({"color": "blue"}))},
                   "requestState": s2}),
        )
        .await;
    assert_eq!(
        r3["result"]["content"],
        json!([{"type": "text", "text": "Ada likes blue"}]),
        "{r3}"
    );
}

#[tokio::test]
async fn the_server_is_asked_only_for_what_the_client_declared() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut client) = serve(dir.path(), &[]).await;
    let params =
        json!({"name": "fixture__test_input_required_result_capabilities", "arguments": {}});
    // Sampling only: the server sees the client's capabilities, not serve's own.
    let sampling = client
        .request("tools/call", params.clone(), json!({"sampling": {}}))
        .await;
    let requests = sampling["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["capital_question"],
        "{sampling}"
    );
    let both = client
        .request(
            "tools/call",
            params,
            json!({"sampling": {}, "elicitation": {}}),
        )
        .await;
    let requests = both["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["capital_question", "user_name"],
        "{both}"
    );
}

#[tokio::test]
async fn bare_names_serve_the_one_servers_tools_under_their_own_names() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut client) = serve(dir.path(), &["--bare-names"]).await;
    let listed = client.request("tools/list", json!({}), json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "test_input_required_result_elicitation",
            "test_input_required_result_sampling",
            "test_input_required_result_list_roots",
            "test_input_required_result_request_state",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_multi_round",
            "test_input_required_result_tampered_state",
            "test_input_required_result_capabilities",
            "greet",
            "slow_compute",
            "failing_job",
            "protocol_error_job",
            "confirm_delete",
            "multi_input",
            "test_tool_with_task",
            "test_simple_text",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_multiple_content_types",
            "test_tool_with_logging",
            "test_error_handling",
            "test_tool_with_progress",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
            "json_schema_2020_12_tool",
        ]
    );
    let greeted = client
        .call(
            "test_input_required_result_elicitation",
            json!({"inputResponses": {"user_name": accept(json!({"name": "Alice"}))}}),
        )
        .await;
    // The whole result: a 2026-07-28 complete result says so (the revision's schema requires
    // `resultType`).
    assert_eq!(
        greeted["result"],
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "Hello, Alice!"}],
            "isError": false
        }),
        "{greeted}"
    );
    let prefixed = client
        .call("fixture__test_input_required_result_elicitation", json!({}))
        .await;
    assert_eq!(
        prefixed["error"]["message"],
        "Unknown tool: fixture__test_input_required_result_elicitation"
    );
}

/// `completion/complete` with code mode off goes to the prompt's server under the prompt's own
/// name (or to the server owning a template) and its answer comes back as it is; a name no
/// server serves is `-32602` (docs/mcp.md, "The everything-server scenarios through `serve` with code mode off").
#[tokio::test]
async fn completions_reach_the_server_of_the_prompt_or_template() {
    let dir = tempfile::tempdir().unwrap();
    let (_serve, mut client) = serve(dir.path(), &[]).await;
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "fixture__test_prompt_with_arguments"});
    let completed = client
        .request(
            "completion/complete",
            complete(prompt.clone(), "arg1", "par"),
            json!({}),
        )
        .await;
    assert_eq!(
        completed["result"],
        json!({
            "resultType": "complete",
            "completion": {"values": ["paris", "park", "party"], "total": 3, "hasMore": false}
        }),
        "{completed}"
    );
    let narrowed = client
        .request(
            "completion/complete",
            complete(prompt, "arg1", "pari"),
            json!({}),
        )
        .await;
    assert_eq!(
        narrowed["result"]["completion"]["values"],
        json!(["paris"]),
        "{narrowed}"
    );
    let template = json!({"type": "ref/resource", "uri": "test://template/{id}/data"});
    let none = client
        .request(
            "completion/complete",
            complete(template, "id", "1"),
            json!({}),
        )
        .await;
    assert_eq!(
        none["result"]["completion"],
        json!({"values": [], "total": 0, "hasMore": false}),
        "{none}"
    );
    let unknown = client
        .request(
            "completion/complete",
            complete(
                json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
                "arg1",
                "par",
            ),
            json!({}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        unknown["error"]["message"],
        "Unknown prompt: test_prompt_with_arguments"
    );
}

#[test]
fn bare_names_need_code_mode_off_and_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {
            "a": {"command": "true"},
            "b": {"command": "true"}
        }})
        .to_string(),
    )
    .unwrap();
    let off = dir.path().join("off.json");
    std::fs::write(&off, r#"{"tools": {"codeMode": false}}"#).unwrap();
    let run = |config: Option<&std::path::Path>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
        command
            .args(["serve", "--bare-names", "--mcp-config"])
            .arg(&servers);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let output = command.stdin(std::process::Stdio::null()).output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(Some(&off));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--bare-names serves one MCP server's tools under their own names; the config has 2"
        ),
        "{stderr}"
    );
    let (code, stderr) = run(None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--bare-names needs code mode off"),
        "{stderr}"
    );
}
