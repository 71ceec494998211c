//! Smoke tests of the `codemode-mcp-testserver` fixture itself, speaking raw JSON-RPC lines over
//! its stdin/stdout (no rmcp client), so the client tests can rely on exactly this behaviour.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);
/// The newest protocol version that still has an `initialize` handshake (rmcp's
/// `ProtocolVersion::LATEST_WITH_INITIALIZE`).
const PROTOCOL_VERSION: &str = "2025-11-25";

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(common::testserver())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn codemode-mcp-testserver");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// The next message from the server; `None` when stdout closed.
    fn next(&self) -> Option<Value> {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(line) => Some(serde_json::from_str(&line).expect("a JSON-RPC line")),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server in {TIMEOUT:?}"),
        }
    }

    /// Sends a request and returns its response (notifications in between are skipped).
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next().expect("a response before stdout closed");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let response = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "testserver_smoke", "version": "0"}
            }),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }

    fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(start.elapsed() < TIMEOUT, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("tool name").to_owned())
        .collect()
}

const ALL_TOOLS: [&str; 13] = [
    "echo",
    "fail",
    "protocol_error",
    "hang",
    "slow",
    "crash",
    "add_tool",
    "env",
    "client_info",
    "big",
    "ask",
    "task_slow",
    "task_polls",
];

#[test]
fn tools_resources_prompts_and_crash() {
    let mut server = Server::start(&[]);
    let init = server.initialize();
    assert_eq!(
        init["result"],
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}},
                "prompts": {}, "resources": {}, "tools": {"listChanged": true}
            },
            "serverInfo": {"name": "codemode-mcp-testserver", "version": env!("CARGO_PKG_VERSION")}
        })
    );

    let list = server.request(1, "tools/list", json!({}));
    assert_eq!(tool_names(&list), ALL_TOOLS);
    assert_eq!(list["result"].get("nextCursor"), None);
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );

    assert_eq!(
        server.call(2, "echo", json!({"text": "hi"}))["result"],
        json!({
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"echo": "hi"},
            "isError": false
        })
    );
    assert_eq!(
        server.call(3, "fail", json!({}))["result"],
        json!({"content": [{"type": "text", "text": "it failed"}], "isError": true})
    );
    let error = server.call(4, "protocol_error", json!({}));
    assert_eq!(
        error["error"],
        json!({"code": -32602, "message": "bad params from testserver"})
    );
    assert_eq!(
        server.call(5, "slow", json!({"ms": 10}))["result"]["content"],
        json!([{"type": "text", "text": "slept 10"}])
    );

    // add_tool: the notification arrives before the answer, and the new tool echoes.
    server.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "add_tool", "arguments": {}}}));
    assert_eq!(
        server.next(),
        Some(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    );
    assert_eq!(
        server.next().expect("add_tool answer")["result"]["content"],
        json!([{"type": "text", "text": "added added_1"}])
    );
    let list = server.request(7, "tools/list", json!({}));
    assert_eq!(
        tool_names(&list).last().map(String::as_str),
        Some("added_1")
    );
    assert_eq!(
        server.call(8, "added_1", json!({"text": "x"}))["result"]["structuredContent"],
        json!({"echo": "x"})
    );

    assert_eq!(
        server.request(9, "resources/list", json!({}))["result"],
        json!({"resources": [{"uri": "memo://one", "name": "one", "mimeType": "text/plain"}]})
    );
    assert_eq!(
        server.request(10, "resources/read", json!({"uri": "memo://one"}))["result"],
        json!({"contents": [{"uri": "memo://one", "mimeType": "text/plain", "text": "first memo"}]})
    );
    let prompts = server.request(11, "prompts/list", json!({}));
    assert_eq!(prompts["result"]["prompts"][0]["name"], "brief");
    assert_eq!(
        prompts["result"]["prompts"][0]["arguments"][0]["required"],
        true
    );
    assert_eq!(
        server.request(
            12,
            "prompts/get",
            json!({"name": "brief", "arguments": {"topic": "cats"}})
        )["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Brief about cats"}}])
    );

    server.send(json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
        "params": {"name": "crash", "arguments": {}}}));
    assert_eq!(server.next(), None, "crash answers nothing");
    assert_eq!(server.wait().code(), Some(3));
}

#[test]
fn pages_split_the_tool_list() {
    let mut server = Server::start(&["--pages", "3"]);
    server.initialize();
    let mut names = Vec::new();
    let mut cursors = Vec::new();
    let mut params = json!({});
    for id in 1.. {
        let page = server.request(id, "tools/list", params);
        names.extend(tool_names(&page));
        match page["result"].get("nextCursor") {
            Some(cursor) => {
                cursors.push(cursor.clone());
                params = json!({"cursor": cursor});
            }
            None => break,
        }
    }
    assert_eq!(names, ALL_TOOLS);
    assert_eq!(cursors, [json!("1"), json!("2")]);
}

#[test]
fn exit_after_init_dies_after_the_handshake() {
    let mut server = Server::start(&["--exit-after-init"]);
    assert_eq!(
        server.initialize()["result"]["protocolVersion"],
        PROTOCOL_VERSION
    );
    assert_eq!(server.wait().code(), Some(4));
}
