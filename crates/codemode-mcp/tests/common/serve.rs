//! A `CodeModeServer` over echo tools whose policy requires approval for some of them, served
//! over streamable HTTP on a loopback port, for the MRTR and Tasks tests (which send it raw
//! stateless 2026-07-28 requests with `codemode_test_support::mcp::request_2026`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_bridge::{ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::CodeMode;
use codemode_mcp::server::ServeError;
use codemode_mcp::source::FixedSource;
use codemode_mcp::{CodeModeServer, ServeHost};
use codemode_runtime::Runtime;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Every tool records that it ran and echoes its input as `details` (and as JSON text); `slow`
/// answers after 3 s, `hang` never. A future dropped before it answered (a cancelled call) counts
/// in `dropped`.
pub(crate) struct EchoTools {
    /// The tool names, in the order their calls started.
    pub(crate) ran: Arc<Mutex<Vec<String>>>,
    /// How many calls were dropped before they answered.
    pub(crate) dropped: Arc<AtomicUsize>,
}

/// Counts a drop in `.0` unless `.1` says the call answered.
struct CountDrop(Arc<AtomicUsize>, bool);

impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl ToolExecutor for EchoTools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        self.ran.lock().unwrap().push(call.tool_name.clone());
        let dropped = self.dropped.clone();
        Box::pin(async move {
            let mut guard = CountDrop(dropped, false);
            match call.tool_name.as_str() {
                "slow" => tokio::time::sleep(Duration::from_secs(3)).await,
                "hang" => std::future::pending::<()>().await,
                _ => {}
            }
            guard.1 = true;
            Ok(
                json!({"content": [{"type": "text", "text": call.input.to_string()}], "details": call.input}),
            )
        })
    }
}

/// What a test reads back from the [`EchoTools`] of its server.
pub(crate) struct Recorded {
    /// [`EchoTools::ran`].
    pub(crate) ran: Arc<Mutex<Vec<String>>>,
    /// [`EchoTools::dropped`].
    pub(crate) dropped: Arc<AtomicUsize>,
}

impl Recorded {
    /// The tools that ran so far.
    pub(crate) fn ran(&self) -> Vec<String> {
        self.ran.lock().unwrap().clone()
    }
}

/// A server over the core tools `tools` (each an [`EchoTools`] tool) whose policy requires
/// approval for `require` (`tools.approvals.require`), with the code-mode config `config`.
pub(crate) fn approval_server(
    config: &Value,
    tools: &[&str],
    require: &[&str],
) -> (CodeModeServer, Recorded) {
    let config = codemode_config::resolve(config).config;
    let specs = tools
        .iter()
        .map(|name| ToolSpec::core(*name, "A tool."))
        .collect();
    let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
    let recorded = Recorded {
        ran: Arc::new(Mutex::new(Vec::new())),
        dropped: Arc::new(AtomicUsize::new(0)),
    };
    let source = FixedSource {
        config,
        catalog,
        executor: Arc::new(EchoTools {
            ran: recorded.ran.clone(),
            dropped: recorded.dropped.clone(),
        }),
    };
    let policy = codemode_config::resolve_policy(
        &json!({"tools": {"approvals": {"require": require}}}),
        None,
    )
    .policy;
    let code_mode = Arc::new(CodeMode::new(Runtime::global().unwrap()));
    let server = CodeModeServer::new(code_mode, Arc::new(source))
        .with_host(ServeHost::new().with_policy(policy));
    (server, recorded)
}

/// An [`approval_server`] served over streamable HTTP on a loopback port.
pub(crate) struct HttpFixture {
    /// `http://127.0.0.1:<port>/mcp`.
    pub(crate) url: String,
    /// What its tools did.
    pub(crate) recorded: Recorded,
    shutdown: CancellationToken,
    serving: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl HttpFixture {
    /// Serves `approval_server(config, tools, require)`.
    pub(crate) async fn start(config: &Value, tools: &[&str], require: &[&str]) -> HttpFixture {
        let (server, recorded) = approval_server(config, tools, require);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let serving = tokio::spawn(server.serve_http(listener, shutdown.clone()));
        HttpFixture {
            url,
            recorded,
            shutdown,
            serving,
        }
    }

    /// The tools that ran so far.
    pub(crate) fn ran(&self) -> Vec<String> {
        self.recorded.ran()
    }

    /// Stops serving; the server must end cleanly.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        self.serving.await.unwrap().unwrap();
    }
}

/// Reads what one of the Python SDK clients of tests/python reports, one line each: `ELICIT
/// <json>` for an elicitation it answered, `RESULT <json>` (the program's result) last; other
/// lines are kept for the panic. Waits at most 60 s. Returns the result and the elicitations.
pub(crate) async fn python_report(
    output: impl tokio::io::AsyncRead + Unpin,
) -> (Value, Vec<Value>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(output).lines();
    let mut elicited = Vec::new();
    let mut other = Vec::new();
    let result = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(json) = line.strip_prefix("ELICIT ") {
                elicited.push(serde_json::from_str::<Value>(json).unwrap());
            } else if let Some(json) = line.strip_prefix("RESULT ") {
                return serde_json::from_str::<Value>(json).unwrap();
            } else {
                other.push(line);
            }
        }
        panic!("the Python client ended without a result: {other:?}");
    })
    .await
    .expect("the Python client reports within 60 s");
    (result, elicited)
}

/// The result of the program that calls `write` and `deploy` at once after the client approved
/// `write` and declined `deploy`.
pub(crate) fn assert_write_approved_deploy_declined(result: &Value) {
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"],
        json!([
            {"tool": "write", "token": "s3cret"},
            "Tool \"openclaw:core:deploy\" was not approved: declined",
        ])
    );
}
