//! One stateless 2026-07-28 request with raw HTTP: shared by the tests of codemode-mcp (through
//! `common`) and of codemode-cli (by path), which play a current client against `serve`.

use serde_json::{json, Value};

/// One stateless 2026-07-28 request `method` with `params` (its `_meta` is replaced by the
/// per-request one, declaring `capabilities`) from client `raw`; the JSON-RPC response, read
/// from a JSON body or from the SSE stream's `data:` lines. `Mcp-Name` is the `name` (a tool)
/// or `taskId` (a task) of the params, when there is one.
pub(crate) async fn request_2026(
    url: &str,
    id: u64,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    let name = params.get("name").or_else(|| params.get("taskId"));
    if let Some(name) = name.and_then(Value::as_str) {
        builder = builder.header("mcp-name", name);
    }
    let text = builder
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str::<Value>(&text)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message.get("id") == Some(&json!(id)))
        })
        .unwrap_or_else(|| panic!("no response with id {id}: {text}"))
}
