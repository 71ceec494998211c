//! The harness the MCP crate's tests share: its own test server binary (over stdio or in
//! `--http` mode), the hub connected to it, and nested calls through the hub's executor. What the
//! CLI's tests need too (npm servers, the Python SDK, child processes) is `codemode-test-support`.

// Each test binary includes this module and uses part of it.
#![allow(dead_code, unused_imports)]

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolError, ToolExecutor};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};
use serde_json::Value;

/// Our misbehaving rmcp test server (src/bin/codemode-mcp-testserver/main.rs).
pub(crate) fn testserver() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemode-mcp-testserver"))
}

/// One stdio server named `t` running `command args…`, with the per-server `timeout`.
pub(crate) fn stdio_config(
    command: &str,
    args: Vec<String>,
    timeout: Option<Duration>,
) -> McpServersConfig {
    McpServersConfig {
        servers: BTreeMap::from([(
            "t".to_string(),
            ServerConfig::Stdio {
                command: command.to_string(),
                args,
                env: BTreeMap::new(),
                cwd: None,
                timeout,
            },
        )]),
        ..Default::default()
    }
}

/// The test server over stdio as server `t`, started with `flags`.
pub(crate) fn stdio(flags: &[&str], timeout: Option<Duration>) -> McpServersConfig {
    stdio_config(
        &testserver().to_string_lossy(),
        flags.iter().map(|f| f.to_string()).collect(),
        timeout,
    )
}

/// The test server in `--http` mode; killed when dropped.
pub(crate) struct HttpServer {
    child: Child,
    /// The URL it printed (`http://127.0.0.1:<port>/mcp`).
    pub(crate) url: String,
}

impl HttpServer {
    /// Starts it with `flags` and reads the URL it prints first.
    pub(crate) fn start(flags: &[&str]) -> HttpServer {
        let mut child = codemode_test_support::process::spawn_with(
            Command::new(testserver()).arg("--http").args(flags),
            Stdio::null(),
            Stdio::piped(),
            Stdio::inherit(),
        );
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        HttpServer { child, url }
    }

    /// It as server `t`, with the per-server `timeout`.
    pub(crate) fn config(&self, timeout: Option<Duration>) -> McpServersConfig {
        McpServersConfig {
            servers: BTreeMap::from([(
                "t".to_string(),
                ServerConfig::Http {
                    url: self.url.clone(),
                    headers: BTreeMap::new(),
                    timeout,
                },
            )]),
            ..Default::default()
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The nested call of catalog entry `t__<tool>` (server `t`) with `input`.
pub(crate) fn tool_call(tool: &str, input: Value) -> ToolCall {
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

/// Calls catalog entry `t__<tool>` through the hub's executor, as a nested call would.
pub(crate) async fn call(hub: &McpHub, tool: &str, input: Value) -> Result<Value, ToolError> {
    hub.executor(None).execute(tool_call(tool, input)).await
}

/// The hub over `config` with the default options; asserts the first server connected.
pub(crate) async fn connect(config: &McpServersConfig) -> McpHub {
    let hub = McpHub::connect(config, ClientOptions::default()).await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    hub
}

/// Waits up to 10 s for `path` (a log the test server appends to) to hold at least one whole
/// line; returns its lines (none when it never did).
pub(crate) async fn log_lines(path: &std::path::Path) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.ends_with('\n') || std::time::Instant::now() > deadline {
            return text.lines().map(str::to_string).collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the test server learned of its client (`client_info`: the `initialize` params, or on
/// 2026-07-28 the request's `_meta`).
pub(crate) async fn client_info(hub: &McpHub) -> Value {
    let result = call(hub, "client_info", serde_json::json!({}))
        .await
        .unwrap();
    serde_json::from_str(text(&result)).unwrap()
}

/// `info` ([`client_info`]) is that of an `initialize` offering 2025-11-25, the newest revision
/// with the handshake, from codemode at this version.
pub(crate) fn assert_initialized_with_2025_11_25(info: &Value) {
    assert_eq!(info["protocolVersion"], "2025-11-25", "{info}");
    assert_eq!(
        info["clientInfo"],
        serde_json::json!({"name": "codemode", "version": env!("CARGO_PKG_VERSION")})
    );
}

/// A raw JSON-RPC MCP server in Node (no SDK), as the text of its script: it answers
/// `initialize` as server `name` with `capabilities` (a JavaScript object literal), hands every
/// other request `m` to `branches` (JavaScript `else if (…) { … }` branches that `send(…)` the
/// answer), and answers what they do not take with `-32601`.
pub(crate) fn raw_node_server(name: &str, capabilities: &str, branches: &str) -> String {
    [
        r#"
const rl = require("readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: "#,
        capabilities,
        r#", serverInfo: { name: ""#,
        name,
        r#"", version: "1" } } });
  }"#,
        branches,
        r#" else {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no " + m.method } });
  }
});
"#,
    ]
    .concat()
}

/// The text of a tool result's first content item.
pub(crate) fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text content: {result}"))
}

pub(crate) mod serve;
