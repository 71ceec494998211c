//! What a server declares beyond input schemas reaches the `MCP` namespace's declarations as
//! documentation: tool annotations, `outputSchema` and resource templates. The server is a raw
//! JSON-RPC server in Node.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use codemode_catalog::{api_read, Catalog, McpNamespace, SearchLimits};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig, ServerConfig};

/// The requests of the test server (`common::raw_node_server`): one tool with annotations and an
/// `outputSchema`, and one resource template.
const SERVER_BRANCHES: &str = r#" else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [
      { name: "read_file", description: "Read a file.",
        inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
        annotations: { readOnlyHint: true, openWorldHint: false },
        outputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
    ] } });
  } else if (m.method === "resources/templates/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { resourceTemplates: [
      { uriTemplate: "file:///{path}", name: "file" } ] } });
  }"#;

async fn hub(dir: &std::path::Path) -> McpHub {
    let script = dir.join("declared.js");
    std::fs::write(
        &script,
        common::raw_node_server("declared", "{ tools: {}, resources: {} }", SERVER_BRANCHES),
    )
    .unwrap();
    let config = McpServersConfig {
        servers: BTreeMap::from([(
            "fs".to_string(),
            ServerConfig::Stdio {
                command: "node".into(),
                args: vec![script.to_string_lossy().into_owned()],
                env: BTreeMap::new(),
                cwd: None,
                timeout: Some(Duration::from_secs(10)),
            },
        )]),
        ..Default::default()
    };
    let hub = McpHub::connect(&config, ClientOptions::default()).await;
    assert!(hub.status()[0].connected, "{:?}", hub.status());
    hub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_and_output_schema_reach_the_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path()).await;
    let catalog = Catalog::build(hub.specs(), &SearchLimits::default()).unwrap();
    let ns = McpNamespace::build(&catalog);
    let files = ns.api_files();
    let dts = &api_read(&files, "mcp/fs.d.ts").unwrap().content;
    let read_file = dts
        .split("\n\n")
        .find(|block| block.contains("function readFile("))
        .unwrap();
    assert_eq!(
        read_file,
        "  /**
   * Read a file.
   * Server hints (unverified): readOnlyHint: true, openWorldHint: false.
   * Declared structuredContent (unverified): { text: string }
   */
  function readFile(
    input: {
      path: string;
    }
  ): Promise<McpToolResult>;"
    );
    // `$api` carries the hints and, with `{schema: true}`, the declared output schema.
    let api = codemode_catalog::mcp::api_server(
        ns.server("fs").unwrap(),
        Some(&serde_json::json!("readFile")),
        Some(&serde_json::json!({"schema": true})),
    );
    assert_eq!(
        api["tools"][0]["annotations"],
        serde_json::json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(
        api["outputSchemas"]["readFile"],
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    hub.shutdown().await;
}

/// Resource templates are listed as `MCP.<server>.resources.templates()` and declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_templates_are_listed_and_declared() {
    use codemode_bridge::{RunScope, ToolCall, ToolExecutor};
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path()).await;
    let catalog = Catalog::build(hub.specs(), &SearchLimits::default()).unwrap();
    let ns = McpNamespace::build(&catalog);
    let path = vec![
        "fs".to_string(),
        "resources".to_string(),
        "templates".to_string(),
    ];
    let codemode_catalog::NamespaceAction::Call { id, input } =
        ns.request("mcp", &path, &[]).unwrap()
    else {
        panic!("not a call")
    };
    assert_eq!(id, "mcp:fs:fs__resources_templates");
    let result = hub
        .executor(None)
        .execute(ToolCall {
            tool_id: id,
            tool_name: "fs__resources_templates".into(),
            input,
            scope: RunScope::default(),
            bridge_id: "bridge:namespace:1".into(),
            tool_call_id: "tool_search_code:test:fs:1".into(),
            parent_tool_call_id: None,
            code_mode_run_id: None,
        })
        .await
        .unwrap();
    assert_eq!(
        result,
        serde_json::json!({"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "file"}]})
    );
    let files = ns.api_files();
    let dts = &api_read(&files, "mcp/fs.d.ts").unwrap().content;
    let block = dts
        .split("\n\n")
        .find(|block| block.contains("function templates("))
        .unwrap();
    assert_eq!(
        block,
        "    /**
     * List the resource templates of MCP server fs (URI templates such as file:///{path}; fill one in and read it with resources.read). Without a cursor every page is read.
     *
     * @param cursor? Cursor from a previous page; omit to read every page.
     */
    function templates(
      input?: {
        /** Cursor from a previous page; omit to read every page. */
        cursor?: string;
      }
    ): Promise<{ resourceTemplates: unknown[]; nextCursor?: string }>;
  }
}"
    );
    hub.shutdown().await;
}
