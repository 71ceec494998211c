//! `serve` with code mode off (issue 23 item 6, docs/mcp.md "Code mode off"): a
//! `CodeModeServer` with [`DirectTools`] over the test server serves its tools as `t__<tool>`,
//! and what a downstream server does beyond answering passes through: its `input_required`
//! (MRTR) is put to the upstream client as an elicitation and the call retried, its task is
//! followed to the result, and a call the policy requires approval for is asked of the client
//! first.

mod common;

use std::sync::Arc;
use std::time::Duration;

use codemode_catalog::{Catalog, SearchLimits};
use codemode_facade::CodeMode;
use codemode_mcp::server::DirectTools;
use codemode_mcp::source::FixedSource;
use codemode_mcp::{ClientOptions, CodeModeServer, McpHub, ServeHost};
use codemode_runtime::Runtime;
use codemode_test_support::mcp::{call_tool, Accepting};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

/// The test server as `t`, served with code mode off under `policy`, to a client over an
/// in-memory duplex.
async fn serve(
    policy: Value,
    client: Accepting,
) -> (RunningService<RoleClient, Accepting>, McpHub) {
    let config = common::stdio(&[], None);
    let forward = codemode_mcp::forward::Forwarder::new();
    let hub = McpHub::start_forwarding(&config, ClientOptions::default(), forward.clone());
    assert!(hub.settle(Duration::from_secs(30)).await);
    let source = FixedSource {
        config: codemode_config::resolve(&json!({"enabled": false})).config,
        catalog: Arc::new(Catalog::build(Vec::new(), &SearchLimits::default()).unwrap()),
        executor: Arc::new(hub.executor(None)),
    };
    let policy = codemode_config::resolve_policy(&policy, None).policy;
    let code_mode = Arc::new(CodeMode::new(Runtime::global().unwrap()));
    let server = CodeModeServer::new(code_mode, Arc::new(source))
        .with_host(ServeHost::new().with_policy(policy))
        .with_forwarder(forward)
        .with_direct_tools(DirectTools::new(hub.clone(), Duration::from_secs(60)));
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(server.serve(theirs));
    (client.serve(ours).await.unwrap(), hub)
}

async fn call(client: &RunningService<RoleClient, Accepting>, name: &str, input: Value) -> Value {
    call_tool(client, name, input).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_off_passes_mrtr_tasks_and_approvals_through() {
    // Approvals are granted; the test server's own question gets `{"ok": true}`.
    let asked = Accepting::new(json!({"ok": true}));
    let (client, hub) = serve(
        json!({"tools": {"deny": ["t__crash"], "approvals": {"require": ["t__echo"]}}}),
        asked.clone(),
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"t__ask") && names.contains(&"t__task_slow"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"t__crash") && !names.contains(&"exec"),
        "{names:?}"
    );
    let echo = tools.iter().find(|t| t.name == "t__echo").unwrap();
    assert_eq!(echo.input_schema.get("required"), Some(&json!(["text"])));

    // MRTR downstream: the server's `input_required` reaches the client as an elicitation and
    // the retry carries its answer.
    let asked_back = call(&client, "t__ask", json!({})).await;
    assert_eq!(
        asked_back["content"][0]["text"],
        format!(
            "answered {}",
            json!({"action": "accept", "content": {"ok": true}})
        ),
        "{asked_back}"
    );
    assert_eq!(asked.asked(), ["Proceed?"]);

    // A downstream task is followed to its result.
    let task = call(&client, "t__task_slow", json!({"ms": 300})).await;
    assert_eq!(task["content"][0]["text"], "slept 300 in a task", "{task}");

    // Approval required: asked of the client first, then the tool runs; its result is the
    // server's own (`structuredContent` included).
    let echoed = call(&client, "t__echo", json!({"text": "hi"})).await;
    assert_eq!(
        echoed["structuredContent"],
        json!({"echo": "hi"}),
        "{echoed}"
    );
    assert_eq!(asked.asked().len(), 2);

    // A tool-level error stays the server's.
    let failed = call(&client, "t__fail", json!({})).await;
    assert_eq!(failed["isError"], true);
    assert_eq!(failed["content"][0]["text"], "it failed");

    client.cancel().await.unwrap();
    hub.shutdown().await;
}
