//! The MCP client and the `MCP` namespace against real MCP servers from the npm registry
//! (`@modelcontextprotocol/server-everything`, `-memory`, `-filesystem`), installed by
//! `cargo xtask setup` into `target/mcp-servers`.

mod common;

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
    }
}

fn config(servers: Vec<(&str, ServerConfig)>) -> McpServersConfig {
    McpServersConfig {
        servers: servers
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect::<BTreeMap<_, _>>(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_tools_resources_prompts_and_api_files() {
    let hub = McpHub::connect(
        &config(vec![(
            "everything",
            stdio(common::npm_server("mcp-server-everything"), &[], &[]),
        )]),
        ClientOptions::default(),
    )
    .await;
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
    assert_eq!(specs.len(), 13 + 4);

    let r = run(
        &hub,
        r#"const echo = await MCP.everything.echo({message: "hi"});
const sum = await MCP.everything.getSum({a: 2, b: 3});
const res = await MCP.everything.resources.list({});
const first = await MCP.everything.resources.read({uri: "demo://resource/static/document/architecture.md"});
const prompts = await MCP.everything.prompts.list({});
const p = await MCP.everything.prompts.get({name: "args-prompt", arguments: {city: "Paris"}});
const files = await API.list("mcp");
const decl = await API.read("mcp/everything.d.ts");
let missing; try { await MCP.everything.getSum({a: 1}); } catch (e) { missing = e.message; }
let direct; try { await tools.call("mcp:everything:everything__echo", {message: "x"}); } catch (e) { direct = e.message.split(".")[0]; }
return {echo: echo.content, sum: sum.content[0].text, resources: res.resources.length,
  firstUri: first.contents[0].uri, prompts: prompts.prompts.map((p) => p.name),
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
