//! The MCP client and the `MCP` namespace against real MCP servers from the npm registry
//! (`@modelcontextprotocol/server-everything`, `-memory`, `-filesystem`), installed by
//! `cargo xtask setup` into `target/mcp-servers`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::RunScope;
use codemode_catalog::{Catalog, SearchLimits};
use codemode_facade::{CodeMode, RunEnv};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};
use codemode_runtime::AbortHandle;
use serde_json::{json, Value};

fn stdio(command: std::path::PathBuf, args: &[&str], env: &[(&str, &str)]) -> ServerConfig {
    ServerConfig::Stdio {
        command: command.to_string_lossy().into_owned(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cwd: None,
        timeout: None,
    }
}

fn config(servers: Vec<(&str, ServerConfig)>) -> McpServersConfig {
    McpServersConfig {
        servers: servers
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect::<BTreeMap<_, _>>(),
        ..Default::default()
    }
}

fn env_for(hub: &McpHub) -> RunEnv {
    let catalog = Catalog::build(hub.specs(), &SearchLimits::default()).unwrap();
    let config = codemode_config::resolve(&json!({"timeoutMs": 30000})).config;
    RunEnv::new(
        config,
        Arc::new(catalog),
        Arc::new(hub.executor(None)),
        RunScope::default(),
    )
}

/// Runs one program to completion and returns the result JSON.
async fn run(hub: &McpHub, code: &str) -> Value {
    let cm = CodeMode::with_global_runtime().unwrap();
    let env = env_for(hub);
    let result = cm
        .exec(&env, &json!({"code": code}), &AbortHandle::new())
        .await;
    result.to_json()
}

/// `mcp-server-everything` alone, as server `everything`.
fn everything() -> McpServersConfig {
    config(vec![(
        "everything",
        stdio(
            codemode_test_support::npm_server("mcp-server-everything"),
            &[],
            &[],
        ),
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_tools_resources_prompts_and_api_files() {
    let hub = McpHub::connect(&everything(), ClientOptions::default()).await;
    let status = &hub.status()[0];
    assert!(status.connected, "{status:?}");
    assert_eq!(status.tools, 13);
    let specs = hub.specs();
    let ids: Vec<String> = specs
        .iter()
        .map(|s| format!("mcp:everything:{}", s.name))
        .collect();
    assert!(ids.contains(&"mcp:everything:everything__echo".to_string()));
    assert!(ids.contains(&"mcp:everything:everything__resources_read".to_string()));
    assert!(ids.contains(&"mcp:everything:everything__prompts_get".to_string()));
    assert!(ids.contains(&"mcp:everything:everything__resources_templates".to_string()));
    assert_eq!(specs.len(), 13 + 5);

    let r = run(
        &hub,
        r#"const echo = await MCP.everything.echo({message: "hi"});
const sum = await MCP.everything.getSum({a: 2, b: 3});
const res = await MCP.everything.resources.list({});
const first = await MCP.everything.resources.read({uri: "demo://resource/static/document/architecture.md"});
const templates = await MCP.everything.resources.templates();
const prompts = await MCP.everything.prompts.list({});
const p = await MCP.everything.prompts.get({name: "args-prompt", arguments: {city: "Paris"}});
const files = await API.list("mcp");
const decl = await API.read("mcp/everything.d.ts");
let missing; try { await MCP.everything.getSum({a: 1}); } catch (e) { missing = e.message; }
let direct; try { await tools.call("mcp:everything:everything__echo", {message: "x"}); } catch (e) { direct = e.message.split(".")[0]; }
return {echo: echo.content, sum: sum.content[0].text, resources: res.resources.length,
  firstUri: first.contents[0].uri,
  templates: templates.resourceTemplates.map((t) => t.uriTemplate),
  hasTemplates: decl.content.includes("function templates("), prompts: prompts.prompts.map((p) => p.name),
  prompt: p.messages[0].content.text, paths: files.files.map((f) => f.path),
  hasSum: decl.content.includes("function getSum("), missing, direct,
  inAll: ALL_TOOLS.length, server: MCP.everything.$serverName};"#,
    )
    .await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        r["value"],
        json!({
            "echo": [{"type": "text", "text": "Echo: hi"}],
            "sum": "The sum of 2 and 3 is 5.",
            "resources": 7,
            "firstUri": "demo://resource/static/document/architecture.md",
            "templates": ["demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"],
            "hasTemplates": true,
            "prompts": ["simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"],
            "prompt": "What's weather in Paris?",
            "paths": ["mcp/index.d.ts", "mcp/everything.d.ts"],
            "hasSum": true,
            "missing": "Missing required MCP namespace argument: b",
            "direct": "Unknown tool id: mcp:everything:everything__echo",
            "inAll": 0,
            "server": "everything"
        })
    );
    hub.shutdown().await;
}

/// The README's program: two servers, called in parallel, results joined in one exec.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_filesystem_servers_joined_in_one_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "hello from a file\n").unwrap();
    let memory_dir = tempfile::tempdir().unwrap();
    let memory_file = memory_dir.path().join("memory.jsonl");
    let hub = McpHub::connect(
        &config(vec![
            (
                "memory",
                stdio(
                    codemode_test_support::npm_server("mcp-server-memory"),
                    &[],
                    &[("MEMORY_FILE_PATH", memory_file.to_str().unwrap())],
                ),
            ),
            (
                "fs",
                stdio(
                    codemode_test_support::npm_server("mcp-server-filesystem"),
                    &[root.to_str().unwrap()],
                    &[],
                ),
            ),
        ]),
        ClientOptions::default(),
    )
    .await;
    assert!(
        hub.status().iter().all(|s| s.connected),
        "{:?}",
        hub.status()
    );
    let code = format!(
        r#"const root = {root:?};
const [listing, created] = await Promise.all([
  MCP.fs.listDirectory({{path: root}}),
  MCP.memory.createEntities({{entities: [{{name: "note.txt", entityType: "file", observations: ["says hello"]}}]}}),
]);
const text = await MCP.fs.readTextFile({{path: root + "/note.txt"}});
const graph = JSON.parse((await MCP.memory.readGraph({{}})).content[0].text);
const denied = (await MCP.fs.readTextFile({{path: "/etc/passwd"}})).isError;
return {{listing: listing.content[0].text, text: text.content[0].text,
  entities: graph.entities.map((e) => [e.name, e.observations]), created: created.isError ?? false, denied,
  servers: (await MCP.$api()).servers}};"#
    );
    let r = run(&hub, &code).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        r["value"],
        json!({
            "listing": "[FILE] note.txt",
            "text": "hello from a file\n",
            "entities": [["note.txt", ["says hello"]]],
            "created": false,
            "denied": true,
            "servers": [
                {"identifier": "fs", "serverName": "fs", "toolCount": 14},
                {"identifier": "memory", "serverName": "memory", "toolCount": 12}
            ]
        })
    );
    hub.shutdown().await;
}

/// A long-running tool past the per-call timeout fails with the timeout message, and the
/// connection stays usable; a tool error comes back as a result with `isError: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_running_tool_times_out_and_erroring_tool_returns_is_error() {
    let hub = McpHub::connect(
        &everything(),
        ClientOptions {
            call_timeout: Duration::from_millis(1_500),
            ..ClientOptions::default()
        },
    )
    .await;
    let r = run(
        &hub,
        r#"let slow; try { await MCP.everything.triggerLongRunningOperation({duration: 10, steps: 2}); } catch (e) { slow = e.message; }
const quick = await MCP.everything.triggerLongRunningOperation({duration: 0.2, steps: 2});
const bad = await MCP.everything.getSum({a: "x", b: 1}).then((r) => r.isError, (e) => e.message.slice(0, 40));
const after = await MCP.everything.echo({message: "still here"});
return {slow, quick: quick.content[0].text.slice(0, 40), bad, after: after.content[0].text};"#,
    )
    .await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(
        r["value"],
        json!({
            "slow": "MCP server \"everything\" did not answer tools/call \"trigger-long-running-operation\" within 1500 ms",
            "quick": "Long running operation completed. Durati",
            "bad": true,
            "after": "Echo: still here"
        })
    );
    hub.shutdown().await;
}

/// Starts `mcp-server-everything streamableHttp` on a free loopback port and waits until it
/// listens. The child is killed on drop.
fn start_http_everything(port: u16) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    let mut child =
        std::process::Command::new(codemode_test_support::npm_server("mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    loop {
        let line = lines.next().expect("server exited").unwrap();
        if line.contains("listening on port") {
            break;
        }
    }
    // Keep draining so the server never blocks on a full stderr pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Streamable HTTP: tools work; when the server restarts (its sessions are gone, HTTP 404) the
/// next call gets a fresh session instead of failing forever; a down server fails fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_server_and_expired_session() {
    let port = free_port();
    let mut server = start_http_everything(port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = McpHub::connect(
        &config(vec![(
            "web",
            ServerConfig::Http {
                url: url.clone(),
                timeout: None,
                headers: BTreeMap::from([("X-Test".to_string(), "1".to_string())]),
            },
        )]),
        ClientOptions {
            call_timeout: Duration::from_millis(10_000),
            ..ClientOptions::default()
        },
    )
    .await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    assert_eq!(hub.status()[0].tools, 13);
    let echo = r#"return (await MCP.web.echo({message: "over http"})).content[0].text;"#;
    let r = run(&hub, echo).await;
    assert_eq!(r["value"], "Echo: over http", "{r}");

    // Restart the server: the old session id is unknown to the new process.
    server.kill().unwrap();
    server.wait().unwrap();
    let mut server = start_http_everything(port);
    // The new process answers the old session id with HTTP 400 and an id-less JSON-RPC error:
    // the call in flight fails at once (a tools/call is never replayed, it may have had
    // effects), and the next call runs on a new session.
    let started = std::time::Instant::now();
    let r = run(
        &hub,
        r#"try { await MCP.web.echo({message: "lost"}); return "answered"; } catch (e) { return e.message; }"#,
    )
    .await;
    assert_eq!(
        r["value"],
        "MCP server \"web\" rejected the session during tools/call \"echo\" (Bad Request: No valid session ID provided); the next call reconnects",
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let r = run(&hub, echo).await;
    assert_eq!(r["value"], "Echo: over http", "{r}");
    assert_eq!(hub.client("web").unwrap().connects(), 2);

    // Down for good: the call fails with a message naming the server, and nothing hangs.
    server.kill().unwrap();
    server.wait().unwrap();
    let r = run(
        &hub,
        r#"try { await MCP.web.echo({message: "x"}); return "answered"; } catch (e) { return e.message.split(": ")[0]; }"#,
    )
    .await;
    assert_eq!(
        r["value"], "MCP server \"web\" closed the connection during tools/call \"echo\"",
        "{r}"
    );
    hub.shutdown().await;
}
