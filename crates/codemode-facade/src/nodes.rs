//! The host side of the guest's `nodes` global (docs/contract/nodes.md#s8,
//! docs/contract/host.md#h7).
//!
//! The prelude only forwards `nodes.list()`, `nodes.get(idOrName)` and a handle's
//! `invoke(command, params?)` as `nodes` bridge requests; everything that decides what reaches the
//! core tool `openclaw:core:nodes` happens here, in Rust, where user code cannot patch it:
//! argument checks, the `status`/`invoke` tool inputs, the projection of the status details to
//! paired nodes, id-before-name matching and every error message. The tool itself is called
//! through the dispatcher's ordinary executor path, so policy, hooks, approvals, telemetry and
//! `callCount` apply as for any nested call.
//!
//! Bridge arguments (JSON-adapted by the prelude):
//! - `{action: "list"}` → the paired nodes, `[{id, name, platform?, connected, commands}]`;
//! - `{action: "get", idOrName}` → `{id, name, listDir}` (`listDir`: the node advertises
//!   `fs.listDir`); the prelude turns it into the frozen handle;
//! - `{action: "invoke", node, command, paramsJson}` → the tool's value (its `details`), where
//!   `paramsJson` is the guest's `JSON.stringify` of the adapted `params ?? {}`.

use serde_json::{json, Map, Value};

/// The catalog id of the core tool behind `nodes` (docs/contract/nodes.md#s8).
pub const NODES_TOOL_ID: &str = "openclaw:core:nodes";

/// The command a node advertises for `listDir(path)`.
pub(crate) const FS_LIST_DIR: &str = "fs.listDir";

/// `nodes.get id or name must be a non-empty string.`
pub(crate) const GET_ID_REQUIRED: &str = "nodes.get id or name must be a non-empty string.";
/// `nodes.invoke node id must be a non-empty string.`
pub(crate) const INVOKE_NODE_REQUIRED: &str = "nodes.invoke node id must be a non-empty string.";
/// `nodes.invoke command must be a non-empty string.`
pub(crate) const INVOKE_COMMAND_REQUIRED: &str = "nodes.invoke command must be a non-empty string.";
/// `unsupported nodes bridge action.`
pub(crate) const UNSUPPORTED_ACTION: &str = "unsupported nodes bridge action.";
/// `no paired nodes`
pub(crate) const NO_PAIRED_NODES: &str = "no paired nodes";

/// One `nodes` bridge request, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodesRequest {
    /// `nodes.list()`.
    List,
    /// `nodes.get(idOrName)` with the trimmed, non-empty query.
    Get(String),
    /// `handle.invoke(command, params?)`: the tool input to send.
    Invoke(Value),
}

/// A non-blank string (ECMAScript `trim`), trimmed; `None` for anything else.
fn non_blank(value: Option<&Value>) -> Option<&str> {
    let s = value?.as_str()?;
    let trimmed = codemode_catalog::js::js_trim(s);
    (!trimmed.is_empty()).then_some(trimmed)
}

impl NodesRequest {
    /// Checks the bridge arguments. Errors: [`GET_ID_REQUIRED`], [`INVOKE_NODE_REQUIRED`],
    /// [`INVOKE_COMMAND_REQUIRED`], [`UNSUPPORTED_ACTION`] (any other `action`, or none).
    pub(crate) fn parse(args: &Value) -> Result<NodesRequest, &'static str> {
        match args.get("action").and_then(Value::as_str) {
            Some("list") => Ok(NodesRequest::List),
            Some("get") => non_blank(args.get("idOrName"))
                .map(|q| NodesRequest::Get(q.to_string()))
                .ok_or(GET_ID_REQUIRED),
            Some("invoke") => {
                // Sent as given (not trimmed), as the reference's tool input does.
                let node = args
                    .get("node")
                    .and_then(Value::as_str)
                    .filter(|s| !codemode_catalog::js::js_trim(s).is_empty())
                    .ok_or(INVOKE_NODE_REQUIRED)?;
                let command = args
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|s| !codemode_catalog::js::js_trim(s).is_empty())
                    .ok_or(INVOKE_COMMAND_REQUIRED)?;
                let params_json = match args.get("paramsJson") {
                    Some(Value::String(text)) => text.clone(),
                    _ => "{}".to_string(),
                };
                Ok(NodesRequest::Invoke(invoke_input(
                    node,
                    command,
                    &params_json,
                )))
            }
            _ => Err(UNSUPPORTED_ACTION),
        }
    }
}

/// The nodes tool input behind `nodes.list()` and `nodes.get`: `{"action": "status"}`.
pub(crate) fn status_input() -> Value {
    json!({"action": "status"})
}

/// The nodes tool input of an invoke:
/// `{"action": "invoke", "node", "invokeCommand", "invokeParamsJson"}`.
pub(crate) fn invoke_input(node: &str, command: &str, params_json: &str) -> Value {
    json!({
        "action": "invoke",
        "node": node,
        "invokeCommand": command,
        "invokeParamsJson": params_json,
    })
}

/// A paired node as `nodes.list()` shows it (docs/contract/host.md#h7).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// `nodeId`.
    pub(crate) id: String,
    /// `displayName` trimmed, or `nodeId` when that is empty or absent.
    pub(crate) name: String,
    /// `platform`, when it is a non-empty string.
    pub(crate) platform: Option<String>,
    /// `connected === true`.
    pub(crate) connected: bool,
    /// The string entries of `commands`.
    pub(crate) commands: Vec<String>,
}

impl Node {
    /// `{id, name, platform?, connected, commands}`.
    pub(crate) fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), json!(self.id));
        map.insert("name".into(), json!(self.name));
        if let Some(platform) = &self.platform {
            map.insert("platform".into(), json!(platform));
        }
        map.insert("connected".into(), json!(self.connected));
        map.insert("commands".into(), json!(self.commands));
        Value::Object(map)
    }

    /// What `nodes.get` answers the prelude: `{id, name, listDir}`.
    pub(crate) fn handle_value(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "listDir": self.commands.iter().any(|c| c == FS_LIST_DIR),
        })
    }
}

/// The entries of the status details `{nodes: [...]}`; anything else has none. Entries without
/// a string `nodeId` are skipped.
fn status_entries(details: &Value) -> impl Iterator<Item = (&Map<String, Value>, &str)> {
    details
        .get("nodes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let map = entry.as_object()?;
            let id = map.get("nodeId")?.as_str()?;
            Some((map, id))
        })
}

fn project(map: &Map<String, Value>, id: &str) -> Node {
    let name = map
        .get("displayName")
        .and_then(Value::as_str)
        .map(codemode_catalog::js::js_trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(id);
    Node {
        id: id.to_string(),
        name: name.to_string(),
        platform: map
            .get("platform")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string),
        connected: map.get("connected") == Some(&Value::Bool(true)),
        commands: map
            .get("commands")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The paired nodes of the status details (`paired: true`), projected, in status order.
pub(crate) fn paired_nodes(details: &Value) -> Vec<Node> {
    status_entries(details)
        .filter(|(map, _)| map.get("paired") == Some(&Value::Bool(true)))
        .map(|(map, id)| project(map, id))
        .collect()
}

/// `nodes.list()`'s value: the paired nodes as JSON.
pub(crate) fn list_value(details: &Value) -> Value {
    Value::Array(paired_nodes(details).iter().map(Node::to_value).collect())
}

/// Chooses the node `query` (trimmed, non-empty) names, among the status details:
/// 1. a node whose `nodeId` equals `query` exactly: that node when it is paired;
/// 2. otherwise the paired nodes whose name (trimmed `displayName`, or id) equals `query`: the
///    one, or `multiple nodes paired: <their ids, sorted, ", ">` when several;
/// 3. no paired node matched: `no paired nodes` when none is paired, else
///    `node "<query>" is not paired (paired node ids: <paired ids, sorted, ", ">)`.
pub(crate) fn select(details: &Value, query: &str) -> Result<Node, String> {
    let paired = paired_nodes(details);
    let exact = status_entries(details).find(|(_, id)| *id == query);
    if let Some((_, id)) = exact {
        if let Some(node) = paired.iter().find(|n| n.id == id) {
            return Ok(node.clone());
        }
    } else {
        let named: Vec<&Node> = paired.iter().filter(|n| n.name == query).collect();
        match named.as_slice() {
            [only] => return Ok((*only).clone()),
            [_, _, ..] => {
                let mut ids: Vec<&str> = named.iter().map(|n| n.id.as_str()).collect();
                ids.sort_unstable();
                return Err(format!("multiple nodes paired: {}", ids.join(", ")));
            }
            [] => {}
        }
    }
    if paired.is_empty() {
        return Err(NO_PAIRED_NODES.to_string());
    }
    let mut ids: Vec<&str> = paired.iter().map(|n| n.id.as_str()).collect();
    ids.sort_unstable();
    Err(format!(
        "node \"{query}\" is not paired (paired node ids: {})",
        ids.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> Value {
        json!({"nodes": [
            {"nodeId": "mac-1", "displayName": "  Studio Mac ", "platform": "darwin",
             "connected": true, "paired": true, "commands": ["fs.listDir", 7, "system.run"]},
            {"nodeId": "pi-2", "displayName": "Kitchen", "connected": "yes", "paired": true,
             "commands": "none"},
            {"nodeId": "phone-3", "displayName": "Kitchen", "platform": "", "paired": true},
            {"nodeId": "old-4", "displayName": "Studio Mac", "paired": false, "connected": true},
            {"displayName": "no id", "paired": true},
            "junk"
        ]})
    }

    #[test]
    fn list_projects_paired_nodes() {
        assert_eq!(
            list_value(&status()),
            json!([
                {"id": "mac-1", "name": "Studio Mac", "platform": "darwin", "connected": true,
                 "commands": ["fs.listDir", "system.run"]},
                {"id": "pi-2", "name": "Kitchen", "connected": false, "commands": []},
                {"id": "phone-3", "name": "Kitchen", "connected": false, "commands": []}
            ])
        );
        assert_eq!(list_value(&json!({"nodes": "x"})), json!([]));
        assert_eq!(list_value(&json!(null)), json!([]));
        // A blank display name falls back to the id.
        assert_eq!(
            list_value(&json!({"nodes": [{"nodeId": "n", "displayName": "  ", "paired": true}]})),
            json!([{"id": "n", "name": "n", "connected": false, "commands": []}])
        );
    }

    #[test]
    fn select_matches_id_before_name() {
        let s = status();
        assert_eq!(select(&s, "mac-1").unwrap().id, "mac-1");
        assert_eq!(select(&s, "Studio Mac").unwrap().id, "mac-1");
        assert_eq!(
            select(&s, "mac-1").unwrap().handle_value(),
            json!({"id": "mac-1", "name": "Studio Mac", "listDir": true})
        );
        assert_eq!(
            select(&s, "pi-2").unwrap().handle_value(),
            json!({"id": "pi-2", "name": "Kitchen", "listDir": false})
        );
        // An id that names an unpaired node never falls through to a name.
        assert_eq!(
            select(&s, "old-4").unwrap_err(),
            "node \"old-4\" is not paired (paired node ids: mac-1, phone-3, pi-2)"
        );
        assert_eq!(
            select(&s, "Kitchen").unwrap_err(),
            "multiple nodes paired: phone-3, pi-2"
        );
        assert_eq!(
            select(&s, "nowhere").unwrap_err(),
            "node \"nowhere\" is not paired (paired node ids: mac-1, phone-3, pi-2)"
        );
        assert_eq!(
            select(&json!({"nodes": [{"nodeId": "a", "paired": false}]}), "a").unwrap_err(),
            NO_PAIRED_NODES
        );
        assert_eq!(select(&json!({}), "a").unwrap_err(), NO_PAIRED_NODES);
        // A paired node whose id equals another's display name: the id wins.
        let tie = json!({"nodes": [
            {"nodeId": "x", "displayName": "y", "paired": true},
            {"nodeId": "y", "displayName": "z", "paired": true}
        ]});
        assert_eq!(select(&tie, "y").unwrap().id, "y");
    }

    #[test]
    fn parse_checks_arguments() {
        assert_eq!(
            NodesRequest::parse(&json!({"action": "list"})),
            Ok(NodesRequest::List)
        );
        assert_eq!(
            NodesRequest::parse(&json!({"action": "get", "idOrName": " mac-1 "})),
            Ok(NodesRequest::Get("mac-1".into()))
        );
        for bad in [json!(null), json!(""), json!("  "), json!(3)] {
            assert_eq!(
                NodesRequest::parse(&json!({"action": "get", "idOrName": bad})),
                Err(GET_ID_REQUIRED)
            );
        }
        assert_eq!(
            NodesRequest::parse(&json!({"action": "invoke", "node": "n", "command": "c",
                                        "paramsJson": "{\"a\":1}"})),
            Ok(NodesRequest::Invoke(
                json!({"action": "invoke", "node": "n",
                "invokeCommand": "c", "invokeParamsJson": "{\"a\":1}"})
            ))
        );
        assert_eq!(
            NodesRequest::parse(&json!({"action": "invoke", "node": "n", "command": "c"})),
            Ok(NodesRequest::Invoke(
                json!({"action": "invoke", "node": "n",
                "invokeCommand": "c", "invokeParamsJson": "{}"})
            ))
        );
        assert_eq!(
            NodesRequest::parse(&json!({"action": "invoke", "node": " ", "command": "c"})),
            Err(INVOKE_NODE_REQUIRED)
        );
        assert_eq!(
            NodesRequest::parse(&json!({"action": "invoke", "node": "n", "command": null})),
            Err(INVOKE_COMMAND_REQUIRED)
        );
        for bad in [
            json!({"action": "exec"}),
            json!({}),
            json!([]),
            json!({"action": 1}),
        ] {
            assert_eq!(NodesRequest::parse(&bad), Err(UNSUPPORTED_ACTION));
        }
    }
}
