//! Whole-config resolution: the global `tools.codeMode` with a per-agent override from
//! `agents.list` (docs/contract/config.md#s1-per-agent "Per-agent"; worked example docs/contract/examples.md#e2).

use crate::resolution::{merge, normalize, resolve_entries, Resolved};
use crate::warning::{Warning, WarningKind};
use serde_json::{Map, Value};

/// Resolves `tools.codeMode` for one agent from a whole config in the spec's shape:
///
/// ```json
/// {"tools": {"codeMode": …}, "agents": {"list": [{"id": "ops", "tools": {"codeMode": …}}]}}
/// ```
///
/// The matching agent's value (the first entry whose `id` equals `agent_id`) is normalised like
/// the global one and shallow-merged over it, `{...global, ...agent}`: an agent `false` overrides
/// only `enabled`, an agent object without `enabled` inherits the global one, and an agent entry
/// without `tools.codeMode` uses the global value. `agent_id: None` resolves the global value.
///
/// Never fails. Everything that could not be used becomes a [`Warning`]: a root, `tools`, `agents`
/// or agent `tools` that is not an object, an `agents.list` that is not an array, an agent id with
/// no entry ([`WarningKind::UnknownAgent`]; the global value applies), and every field warning of
/// [`crate::resolve`], with paths pointing at the object the value came from
/// (`tools.codeMode.timeoutMs` or `agents.list[1].tools.codeMode.timeoutMs`).
pub fn resolve_for_agent(root: &Value, agent_id: Option<&str>) -> Resolved {
    let mut warnings = Vec::new();
    let empty = Map::new();
    let root_map = object_at(root, "", &mut warnings).unwrap_or(&empty);
    let tools = root_map
        .get("tools")
        .and_then(|t| object_at(t, "tools", &mut warnings));
    let global_value = tools.and_then(|t| t.get("codeMode"));

    // The agent's entry, if any, and its code-mode value with that value's path.
    let mut agent_value: Option<(&Value, String)> = None;
    if let Some(id) = agent_id {
        match find_agent(root_map, id, &mut warnings) {
            Some((index, entry)) => {
                let tools_path = format!("agents.list[{index}].tools");
                let agent_tools = entry
                    .get("tools")
                    .and_then(|t| object_at(t, &tools_path, &mut warnings));
                if let Some(value) = agent_tools.and_then(|t| t.get("codeMode")) {
                    agent_value = Some((value, format!("{tools_path}.codeMode")));
                }
            }
            None => warnings.push(unknown_agent(id, "tools.codeMode")),
        }
    }

    let global = match global_value {
        Some(value) => normalize(value, "tools.codeMode", &mut warnings),
        None => Vec::new(),
    };
    let entries = match &agent_value {
        Some((value, path)) => merge(global, normalize(value, path, &mut warnings)),
        None => global,
    };
    resolve_entries(&entries, warnings)
}

/// The warning for an agent id with no `agents.list` entry: `what` (the global
/// `tools.codeMode`, or the global tools policy) applies instead.
pub(crate) fn unknown_agent(id: &str, what: &str) -> Warning {
    Warning {
        path: "agents.list".into(),
        field: String::new(),
        given: Value::from(id),
        used: Value::Null,
        kind: WarningKind::UnknownAgent,
        message: format!("no agent {id:?} in agents.list; the global {what} applies"),
    }
}

/// `value` as an object, or an [`WarningKind::InvalidShape`] warning at `path` (`""` is the
/// root). Shared by the `tools.codeMode`, policy and hook resolvers.
pub(crate) fn object_at<'a>(
    value: &'a Value,
    path: &str,
    warnings: &mut Vec<Warning>,
) -> Option<&'a Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        other => {
            let name = if path.is_empty() {
                "the config root"
            } else {
                path
            };
            warnings.push(Warning {
                path: path.to_string(),
                field: String::new(),
                given: other.clone(),
                used: Value::Object(Map::new()),
                kind: WarningKind::InvalidShape,
                message: format!("{name} must be an object; it is ignored"),
            });
            None
        }
    }
}

/// The first `agents.list` entry whose `id` is `id`, with its index (shape warnings for a
/// malformed `agents` or `agents.list`). Shared with the policy resolver.
pub(crate) fn find_agent<'a>(
    root: &'a Map<String, Value>,
    id: &str,
    warnings: &mut Vec<Warning>,
) -> Option<(usize, &'a Map<String, Value>)> {
    let agents = object_at(root.get("agents")?, "agents", warnings)?;
    let list = agents.get("list")?;
    let Value::Array(list) = list else {
        warnings.push(Warning {
            path: "agents.list".into(),
            field: String::new(),
            given: list.clone(),
            used: Value::Array(Vec::new()),
            kind: WarningKind::InvalidShape,
            message: "agents.list must be an array; it is ignored".into(),
        });
        return None;
    };
    list.iter().enumerate().find_map(|(index, entry)| {
        let entry = entry.as_object()?;
        (entry.get("id").and_then(Value::as_str) == Some(id)).then_some((index, entry))
    })
}
