//! The config conventions of Claude Code and Cursor against a real child: `${VAR}` expansion,
//! the safe default environment of stdio servers, and a per-server `timeoutMs`.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use codemode_mcp::{ClientOptions, McpHub, McpServersConfig};
use serde_json::json;

use common::call;

/// The child sees exactly the SDKs' default variables that are set here, plus its configured
/// `env` with `${VAR}` expanded from this process's environment, and nothing else (cargo's
/// `CARGO_*` variables, which this test process has, do not reach it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_child_gets_the_safe_default_environment_plus_its_env() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it for tests");
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let config = McpServersConfig::from_value(&json!({"mcpServers": {"t": {
        "command": common::testserver(),
        "env": {
            "FROM_PARENT": "${CARGO_MANIFEST_DIR}",
            "WITH_DEFAULT": "${CODEMODE_TEST_SURELY_UNSET_VARIABLE:-fallback value}",
            "PLAIN": "a $literal dollar"
        }
    }}}))
    .unwrap();
    let hub = McpHub::connect(&config, ClientOptions::default()).await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    let result = call(&hub, "env", json!({})).await.unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    let child: BTreeMap<String, String> = serde_json::from_str(text).unwrap();

    let mut expected: BTreeMap<String, String> =
        ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .filter(|(_, v)| !v.starts_with("()"))
            .collect();
    assert!(expected.contains_key("PATH"), "the test needs PATH set");
    expected.insert("FROM_PARENT".into(), manifest_dir);
    expected.insert("WITH_DEFAULT".into(), "fallback value".into());
    expected.insert("PLAIN".into(), "a $literal dollar".into());
    assert_eq!(child, expected);
    hub.shutdown().await;
}

/// A configured value wins over an inherited default variable of the same name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_env_overrides_an_inherited_default() {
    let config = McpServersConfig::from_value(&json!({"mcpServers": {"t": {
        "command": common::testserver(),
        "env": {"HOME": "/nonexistent/home", "TERM": "dumb"}
    }}}))
    .unwrap();
    let hub = McpHub::connect(&config, ClientOptions::default()).await;
    let result = call(&hub, "env", json!({})).await.unwrap();
    let child: BTreeMap<String, String> =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(child["HOME"], "/nonexistent/home");
    assert_eq!(child["TERM"], "dumb");
    assert_eq!(child.get("PATH"), std::env::var("PATH").ok().as_ref());
    hub.shutdown().await;
}

/// An unset variable without a default is a config error naming the server, field and
/// variable; nothing is started.
#[test]
fn an_unset_variable_is_a_config_error() {
    let err = McpServersConfig::from_value(&json!({"mcpServers": {"github": {
        "url": "https://api.example.com/mcp",
        "headers": {"Authorization": "Bearer ${CODEMODE_TEST_SURELY_UNSET_TOKEN}"}
    }}}))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"github\": \"headers.Authorization\" uses ${CODEMODE_TEST_SURELY_UNSET_TOKEN}, but CODEMODE_TEST_SURELY_UNSET_TOKEN is not set (set it, or give a default: ${CODEMODE_TEST_SURELY_UNSET_TOKEN:-default})"
    );
}

/// `timeoutMs` replaces the hub-wide call timeout for that server only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_ms_is_the_servers_call_timeout() {
    let config = McpServersConfig::from_value(&json!({"mcpServers": {"t": {
        "command": common::testserver(),
        "timeoutMs": 300
    }}}))
    .unwrap();
    let options = ClientOptions {
        call_timeout: Duration::from_secs(60),
        ..ClientOptions::default()
    };
    let hub = McpHub::connect(&config, options).await;
    let started = Instant::now();
    let err = call(&hub, "hang", json!({})).await.unwrap_err();
    assert_eq!(
        err,
        codemode_bridge::ToolError::unavailable(
            "MCP server \"t\" did not answer tools/call \"hang\" within 300 ms"
        )
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    hub.shutdown().await;
}
