//! The MCP answer of one code-mode result (`call_result`), the note naming unavailable MCP
//! servers, the `_meta`/`structuredContent` keys they use, and a downstream `input_required`
//! passed through (`input_required_of`, for tools, prompts and resources alike).

use std::sync::Arc;

use codemode_facade::ToolDefinition;
use rmcp::model::{
    CallToolResult, ContentBlock, InputRequests, InputRequiredResult, JsonObject, Tool,
};
use serde_json::Value;

/// The model-visible note of an `exec` result when configured MCP servers are unavailable:
/// `MCP servers unavailable in this run (calling MCP.<server> throws the reason): "a": <reason>; "b": <reason>.`
/// `None` when every server is reachable.
pub fn unavailable_note(unavailable: &[crate::hub::Unavailable]) -> Option<String> {
    if unavailable.is_empty() {
        return None;
    }
    let list: Vec<String> = unavailable
        .iter()
        .map(|u| format!("{:?}: {}", u.server, u.reason))
        .collect();
    Some(format!(
        "MCP servers unavailable in this run (calling MCP.<server> throws the reason): {}.",
        list.join("; ")
    ))
}

/// An MCP tool from a code-mode tool definition (name, description, input schema).
pub(super) fn mcp_tool(definition: ToolDefinition) -> Tool {
    let schema: JsonObject = match definition.parameters {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(definition.name, definition.description, Arc::new(schema))
}

/// The `_meta` key of a result's telemetry (`{catalogSize, sources, searchCount, …}`,
/// docs/contract/lifecycle.md#s5-1), which the model-visible text leaves out.
pub const META_TELEMETRY: &str = "codemode/telemetry";

/// How long a `tools/list` answer may be reused (its 2026-07-28 `ttlMs`, with `cacheScope:
/// "private"`) when every configured MCP server is reachable: a catalog change is announced by
/// `notifications/tools/list_changed` and on `subscriptions/listen`, so a client that listens
/// never serves a stale list, and one that does not refetches after a minute. While a server is
/// connecting or failed the answer's `ttlMs` is 0.
pub const TOOLS_LIST_TTL_MS: u64 = 60_000;

/// The `structuredContent` key of the [`unavailable_note`] (the text block after the result
/// says the same): `{"status": …, …, "note": "MCP servers unavailable in this run …"}`.
pub const NOTE_KEY: &str = "note";

/// The `_meta` key of the servers an `exec` could not reach: `[{server, reason}]`.
pub const META_UNAVAILABLE: &str = "codemode/unavailableServers";

/// The MCP answer for one code-mode result (`result` is its JSON, docs/contract/lifecycle.md#s5-1):
/// the result without its `telemetry` as one text block of compact JSON and as
/// `structuredContent`, `isError` exactly when `status` is `failed`, and the telemetry in
/// `_meta` under [`META_TELEMETRY`], where clients and logs see it and the model does not pay
/// for it. A second text block names the MCP servers the run could not reach
/// ([`unavailable_note`]; also in `structuredContent` under [`NOTE_KEY`], and as a list in
/// `_meta` under [`META_UNAVAILABLE`]).
pub(super) fn call_result(
    mut result: Value,
    unavailable: &[crate::hub::Unavailable],
) -> CallToolResult {
    let failed = result.get("status").and_then(Value::as_str) == Some("failed");
    let telemetry = result
        .as_object_mut()
        .and_then(|object| object.remove("telemetry"));
    let text = serde_json::to_string(&result).unwrap_or_default();
    let mut content = vec![ContentBlock::text(text)];
    if let Some(note) = unavailable_note(unavailable) {
        content.push(ContentBlock::text(note));
    }
    let mut meta = JsonObject::new();
    if let Some(telemetry) = telemetry {
        meta.insert(META_TELEMETRY.to_string(), telemetry);
    }
    if !unavailable.is_empty() {
        meta.insert(
            META_UNAVAILABLE.to_string(),
            serde_json::to_value(unavailable).unwrap_or(Value::Null),
        );
    }
    if let (Some(note), Some(object)) = (unavailable_note(unavailable), result.as_object_mut()) {
        // Some clients hand the model `structuredContent` only (Claude Code).
        object.insert(NOTE_KEY.to_string(), Value::String(note));
    }
    let mut answer = CallToolResult::success(content);
    answer.structured_content = Some(result);
    answer.is_error = Some(failed);
    if !meta.is_empty() {
        answer.meta = Some(meta.into());
    }
    answer
}

/// The downstream `input_required` answer `asked`: its `inputRequests` as they are, the
/// server's `requestState` sealed by `seal`. Err: a message when the requests are not MCP
/// input requests.
pub(super) fn input_required_of(
    asked: &Value,
    seal: impl FnOnce(&str) -> String,
) -> Result<InputRequiredResult, String> {
    let requests = match asked.get("inputRequests") {
        None | Some(Value::Null) => None,
        Some(requests) => Some(
            serde_json::from_value::<InputRequests>(requests.clone())
                .map_err(|e| format!("asked for input that is not an MCP input request: {e}"))?,
        ),
    };
    let state = asked.get("requestState").and_then(Value::as_str).map(seal);
    Ok(InputRequiredResult::new(requests, state))
}
