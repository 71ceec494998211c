//! `serve` with code mode off (issue 23 item 6, docs/mcp.md "Code mode off"): a
//! `CodeModeServer` with [`DirectTools`] over the test server serves its tools as `t__<tool>`,
//! and what a downstream server does beyond answering passes through: its `input_required`
//! (MRTR) is put to the upstream client as an elicitation and the call retried, its task is
//! followed to the result, and a call the policy requires approval for is asked of the client
//! first.

use crate::common;

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

/// Code mode off aggregates the downstream prompts and resources (docs/mcp.md, "Prompts and
/// resources"): the test server's prompt `brief` is served as `t__brief` and answered by it,
/// its resource `memo://one` keeps its URI and is read from it, the lists carry the caching
/// hints, and a policy that denies `t__prompts_get` leaves the prompt out and refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_off_serves_the_downstream_prompts_and_resources() {
    use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
    let (client, hub) = serve(json!({}), Accepting::new(json!({}))).await;
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.prompts.is_some() && info.capabilities.resources.is_some());

    let prompts = client.list_prompts(None).await.unwrap();
    let listed = serde_json::to_value(&prompts).unwrap();
    assert_eq!(listed["prompts"][0]["name"], "t__brief", "{listed}");
    assert_eq!(listed["prompts"][0]["arguments"][0]["name"], "topic");
    assert_eq!(listed["prompts"].as_array().unwrap().len(), 1);
    assert_eq!(
        prompts.ttl_ms,
        Some(codemode_mcp::server::TOOLS_LIST_TTL_MS)
    );
    let mut get = GetPromptRequestParams::new("t__brief");
    get.arguments = Some(serde_json::from_value(json!({"topic": "otters"})).unwrap());
    let prompt = serde_json::to_value(client.get_prompt(get).await.unwrap()).unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Brief about otters",
        "{prompt}"
    );
    let unknown = client
        .get_prompt(GetPromptRequestParams::new("brief"))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("Unknown prompt: brief"), "{unknown}");

    let resources = serde_json::to_value(client.list_resources(None).await.unwrap()).unwrap();
    assert_eq!(
        resources["resources"],
        json!([{"uri": "memo://one", "name": "one", "mimeType": "text/plain"}]),
        "{resources}"
    );
    let templates = client.list_resource_templates(None).await.unwrap();
    assert!(templates.resource_templates.is_empty());
    let read = client
        .read_resource(ReadResourceRequestParams::new("memo://one"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(read).unwrap()["contents"][0]["text"],
        "first memo"
    );
    let missing = client
        .read_resource(ReadResourceRequestParams::new("memo://none"))
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("no resource memo://none"), "{missing}");
    client.cancel().await.unwrap();
    hub.shutdown().await;

    let (client, hub) = serve(
        json!({"tools": {"deny": ["t__prompts_get"]}}),
        Accepting::new(json!({})),
    )
    .await;
    assert!(client.list_prompts(None).await.unwrap().prompts.is_empty());
    let denied = client
        .get_prompt(GetPromptRequestParams::new("t__brief"))
        .await
        .unwrap_err()
        .to_string();
    assert!(denied.contains("Unknown prompt: t__brief"), "{denied}");
    assert_eq!(
        client.list_resources(None).await.unwrap().resources.len(),
        1,
        "resources stay: only prompts_get is denied"
    );
    client.cancel().await.unwrap();
    hub.shutdown().await;
}
