//! Configured MCP servers that are not connected (docs/mcp.md, "Servers that are not
//! connected"): `MCP` exists, `MCP.<server>` of a server still connecting or failed throws
//! `MCP server "<name>" is not connected: …`, and `API.list()` says so. Every probe runs with the
//! lazily and the eagerly installed run context over the real runtime.

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, OfflineServer, OfflineState, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::{json, Value};

/// Answers every call with its tool name.
struct Exec;

impl ToolExecutor for Exec {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move { Ok(json!({"content": [{"type": "text", "text": call.tool_name}]})) })
    }
}

fn offline() -> Vec<OfflineServer> {
    vec![
        OfflineServer {
            server_name: "memory".into(),
            safe_server_name: "memory".into(),
            state: OfflineState::Connecting {
                elapsed: Duration::from_millis(41_700),
            },
        },
        OfflineServer {
            server_name: "broken-fs".into(),
            safe_server_name: "broken-fs".into(),
            state: OfflineState::Failed {
                reason: "MCP server \"broken-fs\" failed to connect: No such file or directory"
                    .into(),
            },
        },
    ]
}

/// Runs `code` against `specs` plus the offline servers, lazily and eagerly installed, and
/// returns the value (both modes must agree).
async fn run(specs: Vec<ToolSpec>, code: &str) -> Value {
    let catalog = Catalog::build(specs, &SearchLimits::default())
        .unwrap()
        .with_offline_mcp_servers(offline());
    let lazy = RunEnv::new(
        codemode_config::resolve(&json!(true)).config,
        Arc::new(catalog),
        Arc::new(Exec),
        RunScope::default(),
    );
    let mut eager = lazy.clone();
    eager.install_catalog_eagerly = true;
    let cm = CodeMode::new(Runtime::global().unwrap());
    let mut values = Vec::new();
    for env in [&lazy, &eager] {
        let result = cm
            .exec(env, &json!({"code": code}), &AbortHandle::new())
            .await
            .to_json();
        assert_eq!(result["status"], "completed", "{result}");
        values.push(result["value"].clone());
    }
    assert_eq!(values[0], values[1], "lazy and eager installs differ");
    values.remove(0)
}

const PROBE: &str = r#"
const thrown = (f) => { try { f(); return null; } catch (e) { return [e.constructor.name, e.message]; } };
return {
  type: typeof MCP,
  keys: Object.keys(MCP),
  inNamespaces: "MCP" in namespaces,
  memory: thrown(() => MCP.memory.createEntities({})),
  brokenFs: thrown(() => MCP.brokenFs),
  has: "memory" in MCP,
  files: (await API.list()).files.map((f) => [f.path, f.description]),
};
"#;

#[tokio::test]
async fn only_offline_servers_still_define_mcp_and_each_throws_why() {
    let value = run(vec![ToolSpec::core("read", "Read a file.")], PROBE).await;
    assert_eq!(
        value,
        json!({
            "type": "object",
            "keys": [],
            "inNamespaces": true,
            "memory": ["Error", "MCP server \"memory\" is not connected: still connecting for 41 s"],
            "brokenFs": ["Error", "MCP server \"broken-fs\" is not connected: failed: MCP server \"broken-fs\" failed to connect: No such file or directory"],
            "has": true,
            "files": [
                ["mcp/index.d.ts", "Root MCP namespace declaration and server list."],
                ["mcp/memory.d.ts", "MCP server \"memory\" is not connected: still connecting for 41 s."],
                ["mcp/brokenFs.d.ts", "MCP server \"broken-fs\" is not connected: failed: MCP server \"broken-fs\" failed to connect: No such file or directory."],
            ],
        })
    );
}

#[tokio::test]
async fn connected_servers_work_beside_offline_ones() {
    let specs = vec![ToolSpec::mcp_tool("docs", "get_page", "Read one page.")];
    let value = run(
        specs,
        r#"
const page = await MCP.docs.getPage({});
let offline;
try { MCP.memory; } catch (e) { offline = e.message; }
const index = await API.read("mcp/index.d.ts");
return { keys: Object.keys(MCP), page: page.content[0].text, offline,
         indexNotes: index.content.split("\n").filter((l) => l.startsWith("// MCP.")) };
"#,
    )
    .await;
    assert_eq!(
        value,
        json!({
            "keys": ["docs", "$api"],
            "page": "docs__get_page",
            "offline": "MCP server \"memory\" is not connected: still connecting for 41 s",
            "indexNotes": [
                "// MCP.memory: MCP server \"memory\" is not connected: still connecting for 41 s.",
                "// MCP.brokenFs: MCP server \"broken-fs\" is not connected: failed: MCP server \"broken-fs\" failed to connect: No such file or directory.",
            ],
        })
    );
}

#[tokio::test]
async fn no_configured_server_means_no_mcp_global() {
    let catalog = Catalog::build(
        vec![ToolSpec::core("read", "Read a file.")],
        &SearchLimits::default(),
    )
    .unwrap();
    let env = RunEnv::new(
        codemode_config::resolve(&json!(true)).config,
        Arc::new(catalog),
        Arc::new(Exec),
        RunScope::default(),
    );
    let result = CodeMode::new(Runtime::global().unwrap())
        .exec(
            &env,
            &json!({"code": "return typeof MCP;"}),
            &AbortHandle::new(),
        )
        .await
        .to_json();
    assert_eq!(result["value"], "undefined", "{result}");
}
