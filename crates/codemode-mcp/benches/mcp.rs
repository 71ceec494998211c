//! MCP benchmarks (docs/benchmarks.md, "MCP"): what one MCP tool call costs on top of an
//! in-process tool call, measured side by side against our rmcp test server over stdio.
//!
//! - `mcp_client_call`: `ServerClient::call_tool` round trip to the child (rmcp, JSON-RPC over
//!   pipes), no guest.
//! - `exec_mcp_call`: an `exec` making one `MCP.t.echo({...})` call.
//! - `exec_static_call`: the same `exec` shape calling an in-process tool instead.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, RunEnv};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};
use codemode_runtime::{AbortHandle, Runtime};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Map};

struct Echo;

impl ToolExecutor for Echo {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move {
            Ok(json!({"content": [{"type": "text", "text": call.input.to_string()}]}))
        })
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let config = McpServersConfig {
        servers: BTreeMap::from([(
            "t".to_string(),
            ServerConfig::Stdio {
                command: env!("CARGO_BIN_EXE_codemode-mcp-testserver").to_string(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: None,
                timeout: None,
            },
        )]),
        ..Default::default()
    };
    let hub = rt.block_on(McpHub::connect(&config, ClientOptions::default()));
    assert!(hub.status()[0].connected);
    let cm = CodeMode::new(Runtime::global().unwrap());
    let limits = SearchLimits::default();
    let code_mode_config = codemode_config::resolve(&json!(true)).config;
    let mcp_env = RunEnv::new(
        code_mode_config.clone(),
        Arc::new(Catalog::build(hub.specs(), &limits).unwrap()),
        Arc::new(hub.executor(None)),
        RunScope::default(),
    );
    let static_env = RunEnv::new(
        code_mode_config,
        Arc::new(Catalog::build(vec![ToolSpec::core("echo", "Echo.")], &limits).unwrap()),
        Arc::new(Echo),
        RunScope::default(),
    );
    let abort = AbortHandle::new();

    let client = hub.client("t").unwrap();
    c.bench_function("mcp_client_call", |b| {
        b.iter(|| {
            let mut args = Map::new();
            args.insert("text".into(), json!("hi"));
            let r = rt.block_on(client.call_tool("echo", args)).unwrap();
            assert_eq!(r["content"][0]["text"], "hi");
        })
    });
    let mcp_call = json!({"code": "return (await MCP.t.echo({text: 'hi'})).content[0].text;"});
    c.bench_function("exec_mcp_call", |b| {
        b.iter(|| {
            let r = rt.block_on(cm.exec(&mcp_env, &mcp_call, &abort)).to_json();
            assert_eq!(r["value"], "hi");
        })
    });
    let static_call = json!({"code": "return (await tools.callValue('openclaw:core:echo', {text: 'hi'})).content[0].text;"});
    c.bench_function("exec_static_call", |b| {
        b.iter(|| {
            let r = rt
                .block_on(cm.exec(&static_env, &static_call, &abort))
                .to_json();
            assert_eq!(r["value"], "{\"text\":\"hi\"}");
        })
    });
    rt.block_on(hub.shutdown());
}

criterion_group!(mcp, benches);
criterion_main!(mcp);
