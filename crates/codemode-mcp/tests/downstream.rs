//! What the client sends downstream, against the test server over stdio and streamable HTTP:
//! the protocol version it offers, `notifications/cancelled` for calls that time out or whose
//! caller gave up, and calls that fail at once (not after the timeout) when a reply is too large
//! or the server dies mid-call.

mod common;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolExecutor};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};
use serde_json::{json, Value};

fn stdio(flags: &[&str], timeout: Option<Duration>) -> McpServersConfig {
    McpServersConfig {
        servers: BTreeMap::from([(
            "t".to_string(),
            ServerConfig::Stdio {
                command: common::testserver().to_string_lossy().into_owned(),
                args: flags.iter().map(|f| f.to_string()).collect(),
                env: BTreeMap::new(),
                cwd: None,
                timeout,
            },
        )]),
    }
}

/// The test server in `--http` mode; killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(flags: &[&str]) -> HttpServer {
        let mut child = Command::new(common::testserver())
            .arg("--http")
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        HttpServer { child, url }
    }

    fn config(&self, timeout: Option<Duration>) -> McpServersConfig {
        McpServersConfig {
            servers: BTreeMap::from([(
                "t".to_string(),
                ServerConfig::Http {
                    url: self.url.clone(),
                    headers: BTreeMap::new(),
                    timeout,
                },
            )]),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tool_call(tool: &str, input: Value) -> ToolCall {
    let name = format!("t__{tool}");
    ToolCall {
        tool_id: format!("mcp:t:{name}"),
        tool_name: name,
        input,
        scope: RunScope::default(),
        bridge_id: "bridge:namespace:1".into(),
        tool_call_id: "tool_search_code:test:t:1".into(),
        parent_tool_call_id: None,
        code_mode_run_id: None,
    }
}

async fn call(hub: &McpHub, tool: &str, input: Value) -> Result<Value, String> {
    hub.executor(None).execute(tool_call(tool, input)).await
}

async fn connect(config: &McpServersConfig) -> McpHub {
    let hub = McpHub::connect(config, ClientOptions::default()).await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    hub
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .expect("a text content")
}

/// The `initialize` params the server received offer 2025-11-25, the newest revision with the
/// initialize handshake (rmcp's `LATEST_WITH_INITIALIZE`), not 2026-07-28.
async fn offers_a_version_with_initialize(config: McpServersConfig) {
    let hub = connect(&config).await;
    let result = call(&hub, "client_info", json!({})).await.unwrap();
    let info: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(info["protocolVersion"], "2025-11-25", "{info}");
    assert_eq!(
        info["clientInfo"],
        json!({"name": "codemode", "version": env!("CARGO_PKG_VERSION")})
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_offers_a_protocol_version_with_initialize_over_stdio() {
    offers_a_version_with_initialize(stdio(&[], None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_offers_a_protocol_version_with_initialize_over_http() {
    let server = HttpServer::start(&[]);
    offers_a_version_with_initialize(server.config(None)).await;
}
