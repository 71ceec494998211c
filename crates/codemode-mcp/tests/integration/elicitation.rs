//! Approvals over MCP elicitation (docs/contract/host.md#h3, `codemode serve`): a
//! `CodeModeServer` with a `ServeHost` whose policy requires approval for some tools, on one end
//! of a duplex pipe, and rmcp clients (and one Python `mcp` SDK client) on the other that declare
//! elicitation (answering accept / decline / cancel / `approve: false`, at once or only when the
//! test releases them) or do not.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_mcp::elicit::{approval_schema, APPROVE_FIELD};
use codemode_mcp::server::ServeError;
use codemode_mcp::{CodeModeServer, ServeHost};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

struct Fixture {
    server: CodeModeServer,
    ran: Arc<Mutex<Vec<String>>>,
}

/// A server over the tools `read` (no approval) and `write`, `deploy`, `drop`, `push` (approval
/// required by `tools.approvals.require`), with the code-mode config `config`.
fn fixture(config: Value) -> Fixture {
    let (server, recorded) = common::serve::approval_server(
        &config,
        &["read", "write", "deploy", "drop", "push"],
        &["write", "deploy", "drop", "push"],
    );
    Fixture {
        server,
        ran: recorded.ran,
    }
}

/// How the test client answers the elicitation for one tool.
#[derive(Clone, Copy)]
enum Answer {
    Accept(bool),
    Decline,
    Cancel,
    /// `accept` with `approve: true`, once the test adds a permit to the client's gate.
    AcceptWhenReleased,
    /// Never answers.
    Never,
}

/// An rmcp client handler: declares elicitation or not, answers by the tool id the message
/// names, and reports every elicitation it gets and every `notifications/cancelled`.
#[derive(Clone)]
struct Elicitor {
    declare: bool,
    answers: Arc<HashMap<&'static str, Answer>>,
    gate: Arc<Semaphore>,
    seen: mpsc::UnboundedSender<(String, Value)>,
    cancelled: mpsc::UnboundedSender<CancelledNotificationParam>,
}

impl ClientHandler for Elicitor {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declare {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(
            capabilities,
            Implementation::new("elicitation-test", "1.0.0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err(ErrorData::invalid_params("form elicitation expected", None));
        };
        let _ = self.seen.send((
            message.clone(),
            serde_json::to_value(&requested_schema).unwrap(),
        ));
        let answer = self
            .answers
            .iter()
            .find(|(tool, _)| message.contains(&format!("\"openclaw:core:{tool}\"")))
            .map(|(_, answer)| *answer)
            .unwrap_or(Answer::Decline);
        let accept = |approve: bool| {
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ APPROVE_FIELD: approve }))
        };
        Ok(match answer {
            Answer::Accept(approve) => accept(approve),
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Answer::AcceptWhenReleased => {
                let _permit = self.gate.acquire().await.unwrap();
                accept(true)
            }
            Answer::Never => std::future::pending().await,
        })
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.cancelled.send(params);
    }
}

struct Client {
    service: RunningService<RoleClient, Elicitor>,
    seen: mpsc::UnboundedReceiver<(String, Value)>,
    cancelled: mpsc::UnboundedReceiver<CancelledNotificationParam>,
    gate: Arc<Semaphore>,
    _serving: JoinHandle<Result<(), ServeError>>,
}

/// How the test client reaches the server.
enum Over {
    /// One session on a duplex pipe.
    Pipe,
    /// Streamable HTTP on a loopback port (the server stops when the token is cancelled).
    Http(tokio_util::sync::CancellationToken),
}

async fn connect(
    server: &CodeModeServer,
    declare: bool,
    answers: &[(&'static str, Answer)],
) -> Client {
    connect_over(server, Over::Pipe, declare, answers).await
}

async fn connect_over(
    server: &CodeModeServer,
    over: Over,
    declare: bool,
    answers: &[(&'static str, Answer)],
) -> Client {
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let handler = Elicitor {
        declare,
        answers: Arc::new(answers.iter().copied().collect()),
        gate: gate.clone(),
        seen: seen_tx,
        cancelled: cancelled_tx,
    };
    let (service, serving) = match over {
        Over::Pipe => {
            let (server_end, client_end) = tokio::io::duplex(1 << 20);
            let serving = tokio::spawn(server.clone().serve(server_end));
            let service = handler.serve(client_end).await.expect("client handshake");
            (service, serving)
        }
        Over::Http(shutdown) => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let serving = tokio::spawn(server.clone().serve_http(listener, shutdown));
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
            let service = handler.serve(transport).await.expect("client handshake");
            (service, serving)
        }
    };
    Client {
        service,
        seen,
        cancelled,
        gate,
        _serving: serving,
    }
}

async fn call(client: &Client, name: &str, args: Value) -> Value {
    let Value::Object(map) = args else {
        unreachable!()
    };
    let result = client
        .service
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(map))
        .await
        .expect("tools/call");
    result.structured_content.expect("structuredContent")
}

/// The guest program: calls each tool in turn and keeps its value or the message it threw.
fn program(tools: &[&str]) -> String {
    let calls: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                "try {{ out.push(await tools.{t}({{tool: '{t}', token: 's3cret'}})); }} catch (e) {{ out.push(e.message); }}"
            )
        })
        .collect();
    format!("const out = []; {} return out;", calls.join(" "))
}

fn message(tool: &str) -> String {
    format!(
        "Code mode asks to run the tool \"openclaw:core:{tool}\".\nInput: {{\"tool\":\"{tool}\",\"token\":\"[redacted]\"}}\nSet approve to true to run it; anything else denies it."
    )
}

fn ran(f: &Fixture) -> Vec<String> {
    f.ran.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eliciting_client_approves_one_call_and_denies_the_others() {
    let f = fixture(json!(true));
    let mut client = connect(
        &f.server,
        true,
        &[
            ("write", Answer::Accept(true)),
            ("deploy", Answer::Decline),
            ("drop", Answer::Cancel),
            ("push", Answer::Accept(false)),
        ],
    )
    .await;
    let result = call(
        &client,
        "exec",
        json!({"code": program(&["read", "write", "deploy", "drop", "push"])}),
    )
    .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"],
        json!([
            {"tool": "read", "token": "s3cret"},
            {"tool": "write", "token": "s3cret"},
            "Tool \"openclaw:core:deploy\" was not approved: declined",
            "Tool \"openclaw:core:drop\" was not approved: cancelled",
            "Tool \"openclaw:core:push\" was not approved: rejected",
        ])
    );
    // Only the tool without approval and the approved one ran.
    assert_eq!(ran(&f), ["read", "write"]);
    // One elicitation per approval, in call order, each the one-boolean form.
    for tool in ["write", "deploy", "drop", "push"] {
        let (text, schema) = client.seen.try_recv().expect("an elicitation");
        assert_eq!(text, message(tool));
        assert_eq!(schema, serde_json::to_value(approval_schema()).unwrap());
        assert_eq!(
            schema,
            json!({"type": "object", "required": ["approve"], "properties": {"approve": {
                "type": "boolean", "title": "Approve", "description": "Run this tool call",
                "default": false}}})
        );
    }
    assert!(client.seen.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_is_denied() {
    let f = fixture(json!(true));
    let mut client = connect(&f.server, false, &[("write", Answer::Accept(true))]).await;
    let result = call(
        &client,
        "exec",
        json!({"code": program(&["write", "read"])}),
    )
    .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"],
        json!([
            "Tool \"openclaw:core:write\" was not approved: the client cannot elicit",
            {"tool": "read", "token": "s3cret"},
        ])
    );
    assert_eq!(ran(&f), ["read"]);
    // Nothing was sent to the client.
    assert!(client.seen.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_parks_the_run_and_wait_picks_it_up() {
    let f = fixture(json!({"timeoutMs": 300}));
    let mut client = connect(&f.server, true, &[("write", Answer::AcceptWhenReleased)]).await;
    let first = call(&client, "exec", json!({"code": program(&["write"])})).await;
    assert_eq!(first["status"], "waiting", "{first}");
    let run_id = first["runId"].as_str().expect("runId").to_string();
    assert_eq!(
        first["pendingToolCalls"],
        json!([{"id": "bridge:callValue:1", "method": "callValue"}])
    );
    let approvals = first["pendingApprovals"]
        .as_array()
        .expect("pendingApprovals");
    assert_eq!(approvals.len(), 1, "{first}");
    let approval_id = approvals[0]["approvalId"].as_str().expect("approvalId");
    assert!(approval_id.starts_with("approval_"), "{approval_id}");
    // No MCP tool-call id reaches the facade: the exec's id is generated (`exec_<uuid>`).
    let tool_call_id = approvals[0]["toolCallId"].as_str().expect("toolCallId");
    let hex = tool_call_id
        .strip_prefix("tool_search_code:exec_")
        .and_then(|rest| rest.strip_suffix(":write:1"))
        .expect("tool_search_code:exec_<uuid>:write:1");
    assert!(
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{tool_call_id}"
    );
    assert_eq!(
        approvals[0],
        json!({
            "approvalId": approval_id,
            "toolCallId": tool_call_id,
            "toolId": "openclaw:core:write",
            "input": {"tool": "write", "token": "s3cret"},
        })
    );
    // The client is still holding the elicitation; the tool has not run.
    let (text, _) = client.seen.recv().await.expect("an elicitation");
    assert_eq!(text, message("write"));
    assert!(ran(&f).is_empty());

    client.gate.add_permits(1);
    let done = call(&client, "wait", json!({"runId": run_id})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], json!([{"tool": "write", "token": "s3cret"}]));
    assert_eq!(ran(&f), ["write"]);
}

/// Over streamable HTTP the elicitations reach the same client session, also one sent while a
/// later `wait` runs, and an answer given after the `exec` that asked has returned still counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_over_streamable_http_reach_the_session_and_survive_the_exec() {
    let f = fixture(json!({"timeoutMs": 300}));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut client = connect_over(
        &f.server,
        Over::Http(shutdown.clone()),
        true,
        &[
            ("write", Answer::AcceptWhenReleased),
            ("deploy", Answer::Decline),
        ],
    )
    .await;
    let first = call(
        &client,
        "exec",
        json!({"code": program(&["write", "deploy"])}),
    )
    .await;
    assert_eq!(first["status"], "waiting", "{first}");
    assert_eq!(
        first["pendingApprovals"][0]["toolId"],
        "openclaw:core:write"
    );
    let (text, _) = client.seen.recv().await.expect("an elicitation");
    assert_eq!(text, message("write"));
    assert!(ran(&f).is_empty());

    client.gate.add_permits(1);
    let done = call(&client, "wait", json!({"runId": first["runId"]})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["value"],
        json!([
            {"tool": "write", "token": "s3cret"},
            "Tool \"openclaw:core:deploy\" was not approved: declined",
        ])
    );
    let (text, _) = client.seen.recv().await.expect("an elicitation");
    assert_eq!(text, message("deploy"));
    assert_eq!(ran(&f), ["write"]);
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_outstanding_past_the_ttl_is_denied_and_withdrawn() {
    let f = fixture(json!({"timeoutMs": 5000, "snapshotTtlSeconds": 1}));
    let mut client = connect(&f.server, true, &[("write", Answer::Never)]).await;
    let result = call(&client, "exec", json!({"code": program(&["write"])})).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"],
        json!(["Tool \"openclaw:core:write\" was not approved: approval expired"])
    );
    assert!(ran(&f).is_empty());
    // The client is told the elicitation is withdrawn.
    let cancelled = tokio::time::timeout(Duration::from_secs(5), client.cancelled.recv())
        .await
        .expect("notifications/cancelled")
        .expect("a cancellation");
    assert_eq!(
        cancelled.reason.as_deref(),
        Some("the approval is no longer needed")
    );
    assert!(cancelled.request_id.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_approves_by_elicitation() {
    let Some(python) = codemode_test_support::python_with_mcp() else {
        eprintln!("skipped: no Python with the mcp SDK (set CODEMODE_PYTHON_MCP)");
        return;
    };
    let f = fixture(json!(true));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/elicit_client.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python starts");
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let serving = tokio::spawn(f.server.clone().serve((stdout, stdin)));
    let (result, elicitations) = common::serve::python_report(stderr).await;
    common::serve::assert_write_approved_deploy_declined(&result);
    assert_eq!(ran(&f), ["write"]);
    assert_eq!(elicitations.len(), 2);
    assert_eq!(elicitations[0]["message"], message("write"));
    assert_eq!(elicitations[1]["message"], message("deploy"));
    assert_eq!(
        elicitations[0]["schema"],
        serde_json::to_value(approval_schema()).unwrap()
    );
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the Python client exits")
        .unwrap();
    assert!(status.success(), "{status}");
    serving.await.unwrap().unwrap();
}

/// A hook that answers `ask` (with a reason) for `read`, which no policy sends to approval.
struct AskForRead;

impl codemode_facade::ToolHook for AskForRead {
    fn applies_to(&self, name: &str, _id: Option<&str>) -> bool {
        name == "read"
    }

    fn before(
        &self,
        _event: &codemode_facade::pipeline::BeforeToolCall,
    ) -> codemode_facade::pipeline::HookFuture<codemode_facade::pipeline::HookDecision> {
        Box::pin(async {
            Ok(codemode_facade::pipeline::HookDecision::ask(Some(
                "reads are audited".into(),
            )))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_ask_is_elicited_with_its_reason() {
    let mut f = fixture(json!(true));
    f.server = f.server.clone().with_host(
        ServeHost::new().with_hooks(codemode_facade::HookChain::new().with(Arc::new(AskForRead))),
    );
    let mut client = connect(&f.server, true, &[("read", Answer::Accept(true))]).await;
    let result = call(
        &client,
        "exec",
        json!({"code": program(&["read", "write"])}),
    )
    .await;
    assert_eq!(result["status"], "completed", "{result}");
    // `write` runs without approval: this host's policy requires none.
    assert_eq!(
        result["value"],
        json!([{"tool": "read", "token": "s3cret"}, {"tool": "write", "token": "s3cret"}])
    );
    assert_eq!(ran(&f), ["read", "write"]);
    let (text, _) = client.seen.try_recv().expect("an elicitation");
    assert_eq!(
        text,
        "Code mode asks to run the tool \"openclaw:core:read\".\nReason: reads are audited\nInput: {\"tool\":\"read\",\"token\":\"[redacted]\"}\nSet approve to true to run it; anything else denies it."
    );
    assert!(client.seen.try_recv().is_err());
}
