//! Issue 23 item 6: `codemode serve` with `tools.codeMode.enabled: false` is a plain aggregating
//! MCP server (docs/mcp.md, "Code mode off"): the downstream tools as `<server>__<tool>`, their
//! calls through policy, hooks, approvals and the trajectory, elicitation and progress passed
//! through. Driven by an rmcp client over the child's stdio, against the real npm
//! `server-everything`.

use codemode_test_support::everything_servers;
use codemode_test_support::mcp::{call_tool, Accepting, Progress};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// `codemode serve` over server-everything with `config` as its `--config`, recording its
/// trajectory in `dir/trajectory.jsonl`.
fn serve_plain(dir: &std::path::Path, config: Value) -> tokio::process::Command {
    let servers = everything_servers(dir);
    let config_file = dir.join("config.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
    command
        .args(["serve", "--mcp-config"])
        .arg(&servers)
        .arg("--config")
        .arg(&config_file)
        .arg("--trajectory")
        .arg(dir.join("trajectory.jsonl"))
        .stderr(std::process::Stdio::null());
    command
}

/// The tool names `serve` lists once server-everything has connected (at most 60 s).
async fn settled_names<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let tools = client.list_all_tools().await.unwrap();
        if !tools.is_empty() {
            return tools.iter().map(|t| t.name.to_string()).collect();
        }
        assert!(std::time::Instant::now() < deadline, "no tools listed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The tools are the server's own under `everything__<tool>` (no `exec`/`wait`, a denied tool
/// absent and refused as unknown), a call answers the server's result as it is, an approval is
/// asked of the client by elicitation before the tool runs, a downstream elicitation reaches the
/// client, and the trajectory records each call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_code_mode_off_serves_the_servers_tools_directly() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"tools": {
        "codeMode": {"enabled": false},
        "deny": ["everything__get-tiny-image"],
        "approvals": {"require": ["everything__get-sum"]},
    }});
    let asked = Accepting::new(json!({"name": "Ada"}));
    let client = asked
        .clone()
        .serve(TokioChildProcess::new(serve_plain(dir.path(), config)).unwrap())
        .await
        .unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.instructions.as_deref(),
        Some(codemode_mcp::server::DIRECT_INSTRUCTIONS)
    );

    let names = settled_names(&client).await;
    assert!(
        names.iter().all(|n| n.starts_with("everything__")),
        "{names:?}"
    );
    for present in ["everything__echo", "everything__get-sum"] {
        assert!(names.iter().any(|n| n == present), "{names:?}");
    }
    assert!(
        !names.iter().any(|n| n == "everything__get-tiny-image"),
        "{names:?}"
    );

    let echoed = call_tool(&client, "everything__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(
        echoed["content"],
        json!([{"type": "text", "text": "Echo: hi"}]),
        "{echoed}"
    );
    assert_ne!(echoed["isError"], json!(true));

    // Denied by the policy: not listed, and unknown when called anyway.
    let denied = call_tool(&client, "everything__get-tiny-image", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        denied.contains("Unknown tool: everything__get-tiny-image"),
        "{denied}"
    );

    // `approvals.require`: the client is asked (by elicitation) and accepts; then it runs.
    let sum = call_tool(&client, "everything__get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(
        sum["content"][0]["text"], "The sum of 2 and 3 is 5.",
        "{sum}"
    );
    assert_eq!(asked.asked().len(), 1, "{:?}", asked.asked());

    // The downstream server's own elicitation reaches the client too.
    let elicited = call_tool(
        &client,
        "everything__trigger-elicitation-request",
        json!({}),
    )
    .await
    .unwrap();
    assert_eq!(
        elicited["content"][0]["text"], "✅ User provided the requested information!",
        "{elicited}"
    );
    assert_eq!(asked.asked().len(), 2);
    client.cancel().await.unwrap();

    let trajectory = std::fs::read_to_string(dir.path().join("trajectory.jsonl")).unwrap();
    let events: Vec<Value> = trajectory
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                e["toolName"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expect = |kind: &str, tool: &str| (kind.to_string(), tool.to_string());
    assert_eq!(
        kinds,
        [
            expect("nested_tool_call", "everything__echo"),
            expect("nested_tool_result", "everything__echo"),
            expect("nested_tool_call", "everything__get-sum"),
            expect("approval_requested", "everything__get-sum"),
            expect("approval_resolved", ""),
            expect("nested_tool_result", "everything__get-sum"),
            expect(
                "nested_tool_call",
                "everything__trigger-elicitation-request"
            ),
            expect(
                "nested_tool_result",
                "everything__trigger-elicitation-request"
            ),
        ],
        "{trajectory}"
    );
    assert_eq!(events[1]["status"], "ok");
    assert_eq!(events[1]["toolId"], "mcp:everything:everything__echo");
}

/// `serve` with code mode on is unchanged: `exec` and `wait` only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_code_mode_on_lists_exec_and_wait() {
    let dir = tempfile::tempdir().unwrap();
    let client = ()
        .serve(
            TokioChildProcess::new(serve_plain(
                dir.path(),
                json!({"tools": {"codeMode": {"enabled": true}}}),
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    let names = settled_names(&client).await;
    assert_eq!(names, ["exec", "wait"]);
    // Logging and resource subscriptions are code mode off's (the model reaches the servers
    // through the catalog): neither is declared, and a request for one is refused.
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.logging.is_none(), "{capabilities:?}");
    assert_eq!(capabilities.resources.as_ref().unwrap().subscribe, None);
    #[allow(deprecated)]
    let refused = client
        .subscribe(rmcp::model::SubscribeRequestParams::new("demo://x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused
            .contains("resources/subscribe is offered by codemode serve only with code mode off"),
        "{refused}"
    );
    client.cancel().await.unwrap();
}

/// The downstream server's progress for a call (server-everything's
/// `trigger-long-running-operation`, four steps 0.5 s apart) reaches the client of that call,
/// counted from 1. The last step may be overtaken by the answer (rmcp handles notifications on
/// tasks of their own) and is then dropped: the three earlier ones must come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_code_mode_off_passes_downstream_progress_through() {
    let dir = tempfile::tempdir().unwrap();
    let seen = Progress::default();
    let client = seen
        .clone()
        .serve(
            TokioChildProcess::new(serve_plain(
                dir.path(),
                json!({"tools": {"codeMode": false}}),
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    settled_names(&client).await;
    let result = call_tool(
        &client,
        "everything__trigger-long-running-operation",
        json!({"duration": 2, "steps": 4}),
    )
    .await
    .unwrap();
    assert_eq!(
        result["content"][0]["text"],
        "Long running operation completed. Duration: 2 seconds, Steps: 4.",
        "{result}"
    );
    seen.assert_steps(
        &["everything: 1/4", "everything: 2/4", "everything: 3/4"],
        (3, "everything: 4/4"),
    )
    .await;
    client.cancel().await.unwrap();
}

/// Issue 23: a legacy client's `prompts/get` whose downstream server asks for input (MRTR:
/// `codemode-mcp-fixture`'s `test_input_required_result_prompt` asks for context by
/// elicitation) is answered by `serve` itself: the question goes to the client by
/// `elicitation/create` (it cannot take an `input_required`), and the server's prompt comes
/// back complete. Before, the client got `-32603` ("only a 2026-07-28 client can give").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_clients_prompt_whose_server_asks_for_input_is_answered_by_elicitation() {
    use rmcp::model::{GetPromptRequestParams, GetPromptResponse};
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_BIN_EXE_codemode")).with_file_name("codemode-mcp-fixture");
    assert!(fixture.exists(), "{} is missing", fixture.display());
    let servers = dir.path().join("servers.json");
    let body = json!({"mcpServers": {"fixture": {"command": fixture}}});
    std::fs::write(&servers, body.to_string()).unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"tools": {"codeMode": false}}"#).unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
    command
        .args(["serve", "--mcp-config"])
        .arg(&servers)
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::null());
    let asked = Accepting::new(json!({"context": "from the user"}));
    let client = asked
        .clone()
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap();
    let prompt = "fixture__test_input_required_result_prompt";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !client
        .list_all_prompts()
        .await
        .unwrap()
        .iter()
        .any(|p| p.name == prompt)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the fixture never listed its prompt"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let answer = client
        .get_prompt_once(GetPromptRequestParams::new(prompt))
        .await
        .unwrap();
    let GetPromptResponse::Complete(result) = answer else {
        panic!("not a complete prompt: {answer:?}");
    };
    assert_eq!(
        serde_json::to_value(&result.messages).unwrap(),
        json!([{"role": "user", "content": {"type": "text", "text": "Context: from the user"}}])
    );
    assert_eq!(asked.asked(), ["What context should the prompt use?"]);
    client.cancel().await.unwrap();
}

/// What a client of `serve` hears besides answers: log messages and resource updates.
#[derive(Clone, Default)]
struct Heard {
    logs: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    updated: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[allow(deprecated)] // logging: the 2025-11-25 revision's
impl rmcp::ClientHandler for Heard {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .unwrap()
            .push(serde_json::to_value(params).unwrap());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
    }
}

impl Heard {
    /// Waits (at most 10 s) until `done` holds of what was heard.
    async fn until(&self, what: &str, done: impl Fn(&Heard) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done(self) {
            assert!(std::time::Instant::now() < deadline, "never heard {what}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Code mode off passes logging and resource subscriptions on (docs/mcp.md, "Logging and
/// resource subscriptions"), against the real server-everything: after `logging/setLevel` the
/// log message its `toggle-simulated-logging` sends reaches the client under the server's name;
/// after `resources/subscribe` the updates its `toggle-subscriber-updates` starts reach it, and
/// stop after `resources/unsubscribe`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)] // logging and resources/subscribe: the 2025-11-25 revision's
async fn serve_with_code_mode_off_passes_logging_and_resource_updates_on() {
    use rmcp::model::{LoggingLevel, SetLevelRequestParams, SubscribeRequestParams};
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"tools": {"codeMode": {"enabled": false}}});
    let heard = Heard::default();
    let client = heard
        .clone()
        .serve(TokioChildProcess::new(serve_plain(dir.path(), config)).unwrap())
        .await
        .unwrap();
    settled_names(&client).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.logging.is_some(), "{capabilities:?}");
    assert_eq!(
        capabilities.resources.as_ref().unwrap().subscribe,
        Some(true)
    );

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    call_tool(&client, "everything__toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    heard
        .until("a log message", |h| !h.logs.lock().unwrap().is_empty())
        .await;
    let log = heard.logs.lock().unwrap()[0].clone();
    assert_eq!(log["logger"], "everything", "{log}");
    // server-everything's eight simulated messages, one of them at random (over stdio it has
    // no session id to append).
    let simulated = [
        "Debug-level message",
        "Info-level message",
        "Notice-level message",
        "Warning-level message",
        "Error-level message",
        "Critical-level message",
        "Alert level-message",
        "Emergency-level message",
    ];
    assert!(simulated.contains(&log["data"].as_str().unwrap()), "{log}");

    let resources = client.list_all_resources().await.unwrap();
    let uri = resources[0].uri.clone();
    client
        .subscribe(SubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    call_tool(&client, "everything__toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    heard
        .until("a resource update", |h| {
            !h.updated.lock().unwrap().is_empty()
        })
        .await;
    assert_eq!(heard.updated.lock().unwrap()[0], uri);
    client
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    let before = heard.updated.lock().unwrap().len();
    // server-everything sends an update every 5 s to a subscriber; none comes after unsubscribe.
    tokio::time::sleep(std::time::Duration::from_millis(5_500)).await;
    assert_eq!(heard.updated.lock().unwrap().len(), before);
    client.cancel().await.unwrap();
}
