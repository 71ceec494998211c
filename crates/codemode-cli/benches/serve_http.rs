//! What an MCP client pays to reach an MCP server's tool through `codemode serve --http`
//! (issue 26 item 6; figures and how to read them: docs/benchmarks.md, "Through `serve
//! --http`"). Every figure is one request/answer of rmcp's client, as a user's program makes it:
//!
//! - `direct_stdio_call`: rmcp's client runs `codemode-mcp-fixture` as its own stdio child and
//!   calls its tool `test_simple_text`: the call made without codemode.
//! - `serve_off_call`: rmcp's streamable HTTP client calls `fixture__test_simple_text` on the
//!   real `codemode serve --http` binary with code mode off (the aggregating gateway: the HTTP
//!   hop, policy, hooks, the trajectory, then the same stdio call to the fixture).
//! - `serve_exec_call`: the same client calls `exec` with code mode on, a program that makes
//!   that call (`MCP.fixture.testSimpleText({})`, the namespace camel-cases tool names) and returns its text.
//! - `serve_exec_trivial`: `exec` of `return 1+2` (code mode's own floor through HTTP).
//!
//! `cargo bench` builds only this package's binaries: build the fixture first with
//! `cargo build --release -p codemode-mcp --bin codemode-mcp-fixture` (the bench says so when
//! it is missing). Each server runs with its own `HOME`, so the compiled guest is cached in a
//! temporary directory (the first `serve` start compiles it once, before any sample).
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ()>;

/// `codemode-mcp-fixture`, next to the `codemode` binary being measured.
fn fixture_binary() -> PathBuf {
    let fixture = Path::new(env!("CARGO_BIN_EXE_codemode")).with_file_name("codemode-mcp-fixture");
    assert!(
        fixture.exists(),
        "{} is missing: run `cargo build --release -p codemode-mcp --bin codemode-mcp-fixture` first",
        fixture.display()
    );
    fixture
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string());
    let params = match args {
        Value::Object(map) => params.with_arguments(map),
        _ => params,
    };
    client.call_tool(params).await.expect("tools/call")
}

/// The first text block of `result`.
fn text(result: &CallToolResult) -> String {
    result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone()
}

/// `codemode serve --http 127.0.0.1:0` over the fixture (named `fixture`) with `config`, in
/// `dir` (its `HOME`), and rmcp's HTTP client connected once `tool` is listed.
async fn serve(dir: &Path, config: Value, tool: &str) -> (tokio::process::Child, Client) {
    let servers = dir.join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"fixture": {"command": fixture_binary()}}}).to_string(),
    )
    .unwrap();
    let config_file = dir.join("config.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let log = dir.join("serve.log");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--http", "127.0.0.1:0", "--mcp-config"])
        .arg(&servers)
        .arg("--config")
        .arg(&config_file)
        .env_clear()
        .env("HOME", dir)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("codemode serve starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    let url = loop {
        let printed = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(url) = printed
            .lines()
            .find_map(|l| l.strip_prefix("codemode: serving MCP over streamable HTTP at "))
        {
            break url.trim().to_string();
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "serve exited: {printed}"
        );
        assert!(Instant::now() < deadline, "serve printed no URL: {printed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .expect("client handshake");
    // The fixture connects in the background; wait until its tools are served.
    loop {
        let listed = client.list_all_tools().await.expect("tools/list");
        if listed.iter().any(|t| t.name == tool) {
            break;
        }
        assert!(Instant::now() < deadline, "{tool} never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, client)
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let (off_dir, on_dir) = (home.path().join("off"), home.path().join("on"));
    std::fs::create_dir_all(&off_dir).unwrap();
    std::fs::create_dir_all(&on_dir).unwrap();

    let direct: Client = rt.block_on(async {
        ().serve(TokioChildProcess::new(tokio::process::Command::new(fixture_binary())).unwrap())
            .await
            .expect("fixture handshake")
    });
    let (off_child, off) = rt.block_on(serve(
        &off_dir,
        json!({"tools": {"codeMode": false}}),
        "fixture__test_simple_text",
    ));
    let (on_child, on) = rt.block_on(serve(&on_dir, json!({}), "exec"));

    let expected = rt.block_on(async { text(&call(&direct, "test_simple_text", json!({})).await) });
    let program = json!({"code":
        "return (await MCP.fixture.testSimpleText({})).content[0].text;"});
    // With code mode on, `exec` is listed before the fixture has connected: wait for it.
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let result = call(&on, "exec", program.clone()).await;
            let value = result.structured_content.expect("structuredContent");
            if value["value"] == json!(expected) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the fixture never answered: {value}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut group = c.benchmark_group("serve_http");
    group.bench_function("direct_stdio_call", |b| {
        b.iter(|| {
            let result = rt.block_on(call(&direct, "test_simple_text", json!({})));
            assert_eq!(text(&result), expected);
        })
    });
    group.bench_function("serve_off_call", |b| {
        b.iter(|| {
            let result = rt.block_on(call(&off, "fixture__test_simple_text", json!({})));
            assert_eq!(text(&result), expected);
        })
    });
    group.bench_function("serve_exec_call", |b| {
        b.iter(|| {
            let result = rt.block_on(call(&on, "exec", program.clone()));
            let value = result.structured_content.expect("structuredContent");
            assert_eq!(value["status"], "completed", "{value}");
            assert_eq!(value["value"], json!(expected));
        })
    });
    let trivial = json!({"code": "return 1+2"});
    group.bench_function("serve_exec_trivial", |b| {
        b.iter(|| {
            let result = rt.block_on(call(&on, "exec", trivial.clone()));
            let value = result.structured_content.expect("structuredContent");
            assert_eq!(value["value"], 3, "{value}");
        })
    });
    group.finish();
    rt.block_on(async {
        for client in [direct, off, on] {
            let _ = client.cancel().await;
        }
    });
    drop((off_child, on_child));
}

criterion_group!(serve_http, benches);
criterion_main!(serve_http);
