//! The MCP client against our misbehaving rmcp test server (src/bin/codemode-mcp-testserver/main.rs):
//! pagination caps, repeated cursors, hanging and crashing tools, stderr floods, tool-list
//! changes and notification storms.

use crate::common;

use std::time::{Duration, Instant};

use codemode_bridge::ToolError;
use codemode_mcp::hub::MAX_RELISTS;
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};
use serde_json::json;

use common::{call, stdio_config};

/// The test server over stdio as server `t`, started with `flags`.
fn testserver(flags: &[&str]) -> McpServersConfig {
    common::stdio(flags, None)
}

fn options() -> ClientOptions {
    ClientOptions {
        call_timeout: Duration::from_millis(2_000),
        connect_timeout: Duration::from_millis(10_000),
        max_list_pages: 5,
        ..ClientOptions::default()
    }
}

async fn hub(flags: &[&str]) -> McpHub {
    McpHub::connect(&testserver(flags), options()).await
}

fn tool_names(hub: &McpHub) -> Vec<String> {
    hub.specs().into_iter().map(|s| s.name).collect()
}

const TOOLS: [&str; 13] = [
    "t__echo",
    "t__fail",
    "t__protocol_error",
    "t__hang",
    "t__slow",
    "t__crash",
    "t__add_tool",
    "t__env",
    "t__client_info",
    "t__big",
    "t__ask",
    "t__task_slow",
    "t__task_polls",
];

fn with_operations(tools: &[&str]) -> Vec<String> {
    tools
        .iter()
        .copied()
        .chain([
            "t__resources_list",
            "t__resources_read",
            "t__resources_templates",
            "t__prompts_list",
            "t__prompts_get",
        ])
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paginated_listing_is_read_whole() {
    let hub = hub(&["--pages", "3"]).await;
    assert_eq!(tool_names(&hub), with_operations(&TOOLS));
    assert_eq!(hub.status()[0].warnings, Vec::<String>::new());
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_cursor_and_endless_cursor_stop() {
    let repeat = hub(&["--repeat-cursor"]).await;
    let status = &repeat.status()[0];
    assert!(status.connected);
    assert_eq!(
        status.warnings,
        [
            "MCP server \"t\": tools/list repeated cursor \"same\"; stopped",
            "MCP server \"t\": skipped 13 tools with a missing, empty or duplicate name (\"echo\", \"fail\", \"protocol_error\", \"hang\", \"slow\", \"crash\", \"add_tool\", \"env\", \"client_info\", \"big\", …)"
        ]
    );
    // The first page was read, the second (same cursor) was read once more, then it stopped.
    assert_eq!(status.tools, 13);
    repeat.shutdown().await;

    let endless = hub(&["--endless-cursor"]).await;
    let status = &endless.status()[0];
    assert!(status.connected);
    assert_eq!(
        status.warnings,
        [
            "MCP server \"t\": tools/list stopped after 5 pages",
            "MCP server \"t\": skipped 52 tools with a missing, empty or duplicate name (\"echo\", \"fail\", \"protocol_error\", \"hang\", \"slow\", \"crash\", \"add_tool\", \"env\", \"client_info\", \"big\", …)"
        ]
    );
    assert_eq!(status.tools, 13);
    endless.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_errors_and_timeouts() {
    let hub = hub(&[]).await;
    assert_eq!(
        call(&hub, "echo", json!({"text": "hi"})).await.unwrap(),
        json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"echo": "hi"}, "isError": false})
    );
    assert_eq!(
        call(&hub, "fail", json!({})).await.unwrap(),
        json!({"content": [{"type": "text", "text": "it failed"}], "isError": true})
    );
    assert_eq!(
        call(&hub, "protocol_error", json!({})).await,
        Err(ToolError::failed(
            "MCP server \"t\" refused tools/call \"protocol_error\": bad params from testserver"
        ))
    );
    let started = Instant::now();
    assert_eq!(
        call(&hub, "hang", json!({})).await,
        Err(ToolError::unavailable(
            "MCP server \"t\" did not answer tools/call \"hang\" within 2000 ms"
        ))
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is still good after a timeout.
    assert_eq!(
        call(&hub, "slow", json!({"ms": 50})).await.unwrap()["content"][0]["text"],
        "slept 50"
    );
    assert_eq!(
        call(&hub, "echo", json!("not an object")).await,
        Err(ToolError::invalid_input(
            "MCP tools take one object argument."
        ))
    );
    assert_eq!(
        call(&hub, "resources_read", json!({"uri": "memo://one"}))
            .await
            .unwrap()["contents"][0]["text"],
        "first memo"
    );
    assert_eq!(
        call(&hub, "resources_list", json!({})).await.unwrap()["resources"][0]["uri"],
        "memo://one"
    );
    assert_eq!(
        call(
            &hub,
            "prompts_get",
            json!({"name": "brief", "arguments": {"topic": "mcp"}})
        )
        .await
        .unwrap()["messages"][0]["content"]["text"],
        "Brief about mcp"
    );
    assert_eq!(
        call(&hub, "resources_read", json!({})).await,
        Err(ToolError::invalid_input(
            "resources.read needs a string uri."
        ))
    );
    assert_eq!(hub.client("t").unwrap().connects(), 1);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_child_fails_the_call_and_the_next_call_restarts_it() {
    let hub = hub(&[]).await;
    let started = Instant::now();
    let crashed = call(&hub, "crash", json!({})).await.unwrap_err();
    assert_eq!(crashed.kind(), codemode_bridge::ToolErrorKind::Unavailable);
    let crashed = crashed.to_string();
    assert!(
        crashed.starts_with("MCP server \"t\" closed the connection during tools/call \"crash\""),
        "{crashed}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        call(&hub, "echo", json!({"text": "back"})).await.unwrap()["content"][0]["text"],
        "back"
    );
    assert_eq!(hub.client("t").unwrap().connects(), 2);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_does_not_block_calls() {
    let hub = hub(&["--flood-stderr"]).await;
    assert!(hub.status()[0].connected);
    let started = Instant::now();
    for i in 0..20 {
        let text = format!("n{i}");
        assert_eq!(
            call(&hub, "echo", json!({"text": text})).await.unwrap()["content"][0]["text"],
            text
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(hub.client("t").unwrap().stderr_tail().len() <= 2_048);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_catalog() {
    let hub = hub(&[]).await;
    let seen = hub.generation();
    assert!(!tool_names(&hub).contains(&"t__added_1".to_string()));
    assert_eq!(
        call(&hub, "add_tool", json!({})).await.unwrap()["content"][0]["text"],
        "added added_1"
    );
    let now = hub.changed_since(seen, Duration::from_secs(5)).await;
    assert_eq!(now, seen + 1);
    assert!(tool_names(&hub).contains(&"t__added_1".to_string()));
    assert_eq!(
        call(&hub, "added_1", json!({"text": "new"})).await.unwrap()["content"][0]["text"],
        "new"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_child_after_init_is_reported_not_fatal() {
    let hub = hub(&["--legacy-only", "--exit-after-init"]).await;
    let status = &hub.status()[0];
    assert!(!status.connected);
    assert!(
        status
            .error
            .as_deref()
            .unwrap_or("")
            .starts_with("MCP server \"t\""),
        "{status:?}"
    );
    assert_eq!(hub.specs(), vec![]);
    hub.shutdown().await;
}

/// A server that sends `tools/list_changed` from inside every `tools/list` cannot make the
/// client list it forever: an unchanged listing ends the refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_storm_does_not_loop() {
    let hub = hub(&["--list-changed-on-list"]).await;
    assert!(hub.status()[0].connected);
    let client = hub.client("t").unwrap();
    // Settled: no new listing for 1.5 s, longer than `MIN_RELIST_INTERVAL` (a notification rmcp
    // hands over after its refresh ended starts one more refresh, a second later; under load
    // that happens). At most 10 s: a loop, one listing a second, never gets such a window.
    let mut settled = client.listings();
    let mut quiet_since = std::time::Instant::now();
    let started = std::time::Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(1_500) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still listing after 10 s: {} listings",
            client.listings()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = client.listings();
        if now != settled {
            settled = now;
            quiet_since = std::time::Instant::now();
        }
    }
    assert!(settled <= 3, "{settled} listings");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(client.listings(), settled);
    assert_eq!(tool_names(&hub), with_operations(&TOOLS));
    hub.shutdown().await;
}

/// A hub over the test server with `flags`, checked to have connected within 3 s (a server's
/// notifications never hold up the connect), and the server's client.
async fn quickly_connected(flags: &[&str]) -> (McpHub, std::sync::Arc<codemode_mcp::ServerClient>) {
    let started = Instant::now();
    let hub = hub(flags).await;
    assert!(hub.status()[0].connected);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    let client = hub.client("t").unwrap();
    (hub, client)
}

/// A server that notifies on every `tools/list` and whose listing never repeats is listed at
/// most `1 + MAX_RELISTS` times in a row and at most once per `MIN_RELIST_INTERVAL`, and does not
/// hold up the connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_listings_with_list_changed_are_bounded() {
    let started = Instant::now();
    let (hub, client) = quickly_connected(&["--list-changed-on-list", "--rotating-tools"]).await;
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    // One listing at connect, then at most one a second (normally exactly MAX_RELISTS more,
    // then none: a notification rmcp hands over only after the refresh ended may start another).
    let listings = client.listings();
    let bound = 1 + started.elapsed().as_secs() + 1;
    assert!(
        (1 + MAX_RELISTS as u64..=bound).contains(&listings),
        "{listings} listings in {:?}",
        started.elapsed()
    );
    hub.shutdown().await;
}

/// The routing table keeps the ids of a server's current and previous listing only: a run may
/// still hold the previous catalog, older ids are gone (names that change on every listing do
/// not grow it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_keep_the_current_and_previous_listing() {
    let hub = hub(&["--rotating-tools"]).await;
    for _ in 0..3 {
        let seen = hub.generation();
        call(&hub, "add_tool", json!({})).await.unwrap(); // sends list_changed once
        assert!(hub.changed_since(seen, Duration::from_secs(5)).await > seen);
    }
    let client = hub.client("t").unwrap();
    let n = client.listings();
    assert_eq!(n, 4);
    let names = tool_names(&hub);
    assert!(names.contains(&format!("t__gen_{n}")), "{names:?}");
    let previous = format!("gen_{}", n - 1);
    assert_eq!(
        call(&hub, &previous, json!({"text": "still"}))
            .await
            .unwrap_err(),
        ToolError::failed(format!(
            "MCP server \"t\" refused tools/call \"{previous}\": unknown tool {previous}"
        ))
    );
    let older = call(&hub, "gen_1", json!({"text": "gone"}))
        .await
        .unwrap_err();
    assert_eq!(
        older,
        ToolError::unknown_tool("no tool executor for mcp:t:t__gen_1")
    );
    hub.shutdown().await;
}

/// A server that floods `list_changed` while its listing keeps changing neither holds up the
/// connect nor gets listed more than once per `MIN_RELIST_INTERVAL`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_flood_is_rate_limited() {
    let (hub, client) =
        quickly_connected(&["--legacy-only", "--flood-list-changed", "--rotating-tools"]).await;
    let before = client.listings();
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let during = client.listings() - before;
    assert!((2..=4).contains(&during), "{during} listings in 3.5 s");
    hub.shutdown().await;
}

/// Connecting and listing together are bounded by the connect timeout, not by one call timeout
/// per page: 7 pages of 400 ms each do not fit in 1 s, although each page fits its 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_listing_is_bounded_by_the_connect_timeout() {
    let options = ClientOptions {
        connect_timeout: Duration::from_millis(1_000),
        ..options()
    };
    let started = Instant::now();
    let hub = McpHub::connect(
        &testserver(&["--pages", "7", "--slow-list", "400"]),
        options,
    )
    .await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2_500), "{took:?}");
    let status = &hub.status()[0];
    assert!(!status.connected);
    assert_eq!(
        status.error.as_deref(),
        Some("MCP server \"t\" did not finish connecting and listing within 1000 ms")
    );
    assert_eq!(hub.specs(), vec![]);
    hub.shutdown().await;
}

/// `McpHub::shutdown` ends the child: stdin closed, then SIGKILL after 3 s, and it is reaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let mut config = testserver(&["--flood-stderr"]);
    if let Some(ServerConfig::Stdio { env, .. }) = config.servers.get_mut("t") {
        env.insert(
            "CODEMODE_TESTSERVER_PID_FILE".into(),
            pid_file.to_string_lossy().into_owned(),
        );
    }
    let hub = McpHub::connect(&config, options()).await;
    assert!(hub.status()[0].connected);
    shuts_down_process(hub, &pid_file, "the test server").await;
}

/// Shuts `hub` down and checks that the process whose id is in `pid_file` is gone within 5 s.
async fn shuts_down_process(hub: McpHub, pid_file: &std::path::Path, what: &str) {
    let pid = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .to_string();
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(), "{what} {pid} is not running");
    hub.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(), "{what} {pid} outlived shutdown");
}

/// The requests of a raw JSON-RPC MCP server in Node (`common::raw_node_server`) whose
/// `tools/list` mixes good and malformed entries.
const MALFORMED_SERVER_BRANCHES: &str = r#" else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [
      { name: "good", inputSchema: { type: "object" } },
      { name: "bad_schema", inputSchema: "nope" },
      { description: "no name at all", inputSchema: { type: "object" } },
      { name: "", inputSchema: { type: "object" } },
      { name: "surrogate" },
      { name: "deep" },
      { name: "explode" },
      { name: "odd" },
    ] } });
  } else if (m.method === "tools/call" && m.params.name === "surrogate") {
    process.stdout.write("a log line on stdout\n");
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "cut \ud83d" }] } });
  } else if (m.method === "tools/call" && m.params.name === "deep") {
    let deep = {};
    for (let i = 0; i < 200; i++) deep = { d: deep };
    send({ jsonrpc: "2.0", id: m.id, result: { content: [], structuredContent: deep } });
  } else if (m.method === "tools/call" && m.params.name === "odd") {
    send({ jsonrpc: "2.0", id: m.id, result: {
      content: [{ type: "weird", x: 1 }, { type: "text" }], extra: true } });
  } else if (m.method === "tools/call" && m.params.name === "explode") {
    throw new TypeError("explode went off");
  } else if (m.method === "tools/call") {
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: m.params.name }] } });
  }"#;

/// [`MALFORMED_SERVER_BRANCHES`] as server `t` (the directory holds its script).
async fn malformed_hub() -> (McpHub, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("malformed.js");
    std::fs::write(
        &script,
        common::raw_node_server("malformed", "{ tools: {} }", MALFORMED_SERVER_BRANCHES),
    )
    .unwrap();
    let config = stdio_config("node", vec![script.to_string_lossy().into_owned()], None);
    (McpHub::connect(&config, options()).await, dir)
}

/// One malformed tool entry costs that entry, not the server's whole tool list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_tool_entries_are_skipped_not_fatal() {
    let (hub, _dir) = malformed_hub().await;
    let status = &hub.status()[0];
    assert!(status.connected, "{status:?}");
    assert_eq!(status.tools, 6);
    assert_eq!(
        status.warnings,
        ["MCP server \"t\": skipped 2 tools with a missing, empty or duplicate name (\"\", \"\")"]
    );
    let specs = hub.specs();
    assert_eq!(
        specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        [
            "t__good",
            "t__bad_schema",
            "t__surrogate",
            "t__deep",
            "t__explode",
            "t__odd"
        ]
    );
    // The malformed schema is dropped: the entry has no parameters.
    assert_eq!(specs[1].parameters, None);
    assert_eq!(
        call(&hub, "bad_schema", json!({})).await.unwrap()["content"][0]["text"],
        "bad_schema"
    );
    // A string cut inside a surrogate pair (what JSON.stringify emits for it) is repaired, and
    // a log line on stdout is skipped.
    assert_eq!(
        call(&hub, "surrogate", json!({})).await.unwrap()["content"][0]["text"],
        "cut \u{fffd}"
    );
    // A message nested past serde_json's limit cannot be read: the call fails at once and
    // says why (the filter found the reply's id and answered for it).
    assert_eq!(
        call(&hub, "deep", json!({})).await,
        Err(ToolError::failed(
            r#"MCP server "t" sent a reply to tools/call "deep" that was dropped: it is not JSON codemode can read (recursion limit exceeded at line 1 column 693)"#
        ))
    );
    // A crash names the error from the child's stderr, not its stack trace or version line.
    assert_eq!(
        call(&hub, "explode", json!({})).await,
        Err(ToolError::unavailable("MCP server \"t\" closed the connection during tools/call \"explode\": Transport closed (stderr: TypeError: explode went off)"))
    );
    hub.shutdown().await;
}

/// A server that could not start is tried again by `retry_failed` once its retry interval has
/// passed, and its tools then appear (the generation goes up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_was_down_is_retried() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.sh");
    let config = stdio_config(&script.to_string_lossy(), vec![], None);
    // 1 s, not less: the check below that nothing is retried too early must not find the
    // interval already over because a loaded machine took that long to fail the first attempt.
    let options = ClientOptions {
        retry_failed_after: Duration::from_millis(1_000),
        ..options()
    };
    let hub = McpHub::connect(&config, options).await;
    assert!(!hub.status()[0].connected);
    let seen = hub.generation();
    // Too early: nothing is retried before the interval.
    hub.retry_failed();
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(hub.client("t").unwrap().listings(), 1);

    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec {:?}\n", common::testserver()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    tokio::time::sleep(Duration::from_millis(1_050)).await;
    hub.retry_failed();
    assert_eq!(
        hub.changed_since(seen, Duration::from_secs(10)).await,
        seen + 1
    );
    assert!(hub.status()[0].connected);
    assert_eq!(tool_names(&hub), with_operations(&TOOLS));
    hub.shutdown().await;
}

/// Helpers a server starts (a wrapper's real server, a background job) end with it: the child
/// leads its own process group, and shutdown kills what is left of the group.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_servers_helpers_too() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("helper.pid");
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec '{}'",
        pid_file.display(),
        common::testserver().display()
    );
    let config = stdio_config("sh", vec!["-c".into(), script], None);
    let hub = McpHub::connect(&config, options()).await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    shuts_down_process(hub, &pid_file, "the server's helper").await;
}

/// A `tools/call` result rmcp's typed model does not know (an unknown content type, a text item
/// without `text`, an extra field) reaches the caller as the server sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusual_tool_result_is_passed_on_raw() {
    let (hub, _dir) = malformed_hub().await;
    assert_eq!(
        call(&hub, "odd", json!({})).await.unwrap(),
        json!({"content": [{"type": "weird", "x": 1}, {"type": "text"}], "extra": true})
    );
    hub.shutdown().await;
}
