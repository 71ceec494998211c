//! MCP clients for the tests of `codemode-cli` and `codemode-mcp` (feature `mcp`): raw stateless
//! 2026-07-28 requests over streamable HTTP, and rmcp client handlers and calls.
//!
//! The 2026-07-28 revision (docs/mcp.md, "Stateless HTTP clients (2026-07-28)") has no session: each request carries the
//! protocol version, client info and capabilities in its `_meta`, and its method (and tool or
//! task name) in `Mcp-Method` / `Mcp-Name` headers. A response is a JSON body or an SSE stream.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Map, Value};

/// The JSON-RPC message with `id` in a response body `text`: the body itself when it is JSON,
/// else the first `data:` line of an SSE stream that is JSON with that `id`; `None` when neither.
pub fn jsonrpc_response(text: &str, id: u64) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().or_else(|| {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id") == Some(&json!(id)))
    })
}

/// Starts `codemode serve --http 127.0.0.1:0` followed by `args` (`codemode` is the binary at
/// `binary`; stdin and stdout closed, stderr written to `log`) and waits, 30 s at most, for the
/// URL it prints on stderr. Returns the child (killed when dropped) and the URL. Panics with the
/// log when `serve` exits first or prints no URL in time.
pub async fn serve_http<I, S>(binary: &Path, args: I, log: &Path) -> (tokio::process::Child, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = tokio::process::Command::new(binary)
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(url) = text
            .lines()
            .find_map(|l| l.strip_prefix("codemode: serving MCP over streamable HTTP at "))
        {
            return (child, url.trim().to_string());
        }
        assert!(child.try_wait().unwrap().is_none(), "serve exited: {text}");
        assert!(Instant::now() < deadline, "serve printed no URL: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the server answered one HTTP request.
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `WWW-Authenticate` header, when there is one.
    pub challenge: Option<String>,
    /// The response body.
    pub text: String,
}

/// Posts one stateless 2026-07-28 request `method` with `params` to `url`: its `_meta` is
/// replaced by the per-request one of client `raw` declaring `capabilities`; `Mcp-Name` is the
/// `name` (a tool) or `taskId` (a task) of the params when there is one; `bearer` is sent as
/// `Authorization: Bearer <token>`. Panics when the request cannot be sent.
pub async fn post_2026(
    url: &str,
    id: u64,
    method: &str,
    mut params: Value,
    capabilities: Value,
    bearer: Option<&str>,
) -> Reply {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    let name = params.get("name").or_else(|| params.get("taskId"));
    if let Some(name) = name.and_then(Value::as_str) {
        builder = builder.header("mcp-name", name);
    }
    if let Some(token) = bearer {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let response = builder.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    Reply {
        status,
        challenge,
        text,
    }
}

/// [`post_2026`] without a bearer token; the JSON-RPC response ([`jsonrpc_response`]). Panics
/// with the body when there is none with `id`.
pub async fn request_2026(
    url: &str,
    id: u64,
    method: &str,
    params: Value,
    capabilities: Value,
) -> Value {
    let reply = post_2026(url, id, method, params, capabilities, None).await;
    jsonrpc_response(&reply.text, id)
        .unwrap_or_else(|| panic!("no response to {method} with id {id}: {}", reply.text))
}

/// Calls tool `name` with `input` (a JSON object) over `client`; the result as JSON (`content`,
/// `structuredContent`, `isError`, …) or rmcp's error.
pub async fn call_tool<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    input: Value,
) -> Result<Value, rmcp::ServiceError> {
    let arguments: Map<String, Value> = input
        .as_object()
        .cloned()
        .unwrap_or_else(|| panic!("tool arguments are an object: {input}"));
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
    let result = client.call_tool(params).await?;
    Ok(serde_json::to_value(&result).unwrap())
}

/// Calls `exec` with `{code}` over `client`; the result as JSON. Panics on an rmcp error.
pub async fn exec_json<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    code: &str,
) -> Value {
    call_tool(client, "exec", json!({"code": code}))
        .await
        .unwrap()
}

/// An upstream MCP client that declares elicitation and accepts every request, recording each
/// message it was asked: an approval (codemode's schema asks for a boolean `approve`) is
/// granted, any other question gets `content`.
#[derive(Clone)]
pub struct Accepting {
    /// The messages of the elicitations, in the order they came.
    pub asked: Arc<Mutex<Vec<String>>>,
    /// The answer to a question that is not an approval.
    pub content: Value,
}

impl Accepting {
    /// Accepts with `content`, nothing asked yet.
    pub fn new(content: Value) -> Accepting {
        Accepting {
            asked: Arc::default(),
            content,
        }
    }

    /// The messages asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl rmcp::ClientHandler for Accepting {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("accepting-test-client", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push(request["message"].as_str().unwrap_or("").to_string());
        let content = if request["requestedSchema"]["properties"]["approve"].is_object() {
            json!({"approve": true})
        } else {
            self.content.clone()
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

/// One `notifications/progress`: `(progress, message)`.
pub type ProgressStep = (f64, Option<String>);

/// An upstream MCP client recording every `notifications/progress`.
#[derive(Clone, Default)]
pub struct Progress(pub Arc<Mutex<Vec<ProgressStep>>>);

impl Progress {
    /// Waits 300 ms for the last notifications, then checks the steps recorded, in the order
    /// the server sent them (rmcp runs a client's notification handlers as tasks of their own,
    /// so they may be recorded out of order; `progress` counts 1, 2, …): their messages are
    /// `expected`, or `expected` with `last.1` inserted at index `last.0` when one more came (a
    /// server's last step may be overtaken by its answer and then dropped).
    pub async fn assert_steps(&self, expected: &[&str], last: (usize, &str)) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut steps = self.0.lock().unwrap().clone();
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        let messages: Vec<&str> = steps.iter().filter_map(|(_, m)| m.as_deref()).collect();
        let mut expected = expected.to_vec();
        if messages.len() == expected.len() + 1 {
            expected.insert(last.0, last.1);
        }
        assert_eq!(messages, expected, "{steps:?}");
        let counts: Vec<f64> = steps.iter().map(|(p, _)| *p).collect();
        let numbered: Vec<f64> = (1..=expected.len()).map(|n| n as f64).collect();
        assert_eq!(counts, numbered);
    }
}

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push((params.progress, params.message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_body_is_the_response() {
        assert_eq!(
            jsonrpc_response(r#"{"jsonrpc": "2.0", "id": 3, "result": {}}"#, 7),
            Some(json!({"jsonrpc": "2.0", "id": 3, "result": {}}))
        );
    }

    #[test]
    fn an_sse_stream_answers_with_the_data_line_of_the_id() {
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":1}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":2}\n";
        assert_eq!(
            jsonrpc_response(stream, 3),
            Some(json!({"jsonrpc": "2.0", "id": 3, "result": 2}))
        );
        assert_eq!(jsonrpc_response(stream, 4), None);
    }
}
