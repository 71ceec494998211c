//! Static tools declared in JSON (`codemode exec --tools FILE`, `codemode session --tools FILE`):
//! fixed behaviour for trying programs and for scenario tests, from any language.
//!
//! The file is a JSON array; each element is a tool spec in the one tools-file format
//! (`{name, label?, description?, parameters?, outputSchema?, origin?, …}`, parsed by
//! [`codemode_catalog::cli::parse_tool_entry`], `description` defaulting to `""`; `codemode
//! catalog --tools` reads the same file and ignores the behaviour keys) plus exactly one
//! behaviour key and an optional delay:
//!
//! - `"result": <any JSON>`: the call returns `result` as its `details`;
//! - `"error": "<message>"`: the call fails; the guest sees `new Error(message)`;
//! - `"echo": true`: the call returns `details` `{"input": <the input it received>}`;
//! - `"resultByAction": {"<action>": <any JSON>, …}`: the call returns the value under the
//!   input's `action` (a string) as its `details`, and fails with
//!   `no result for action "<action>"` when there is none (for tools such as `nodes`, called
//!   with `{action: "status"}` and `{action: "invoke", …}`);
//! - `"delayMs": <non-negative integer>`: the call settles after this many milliseconds.
//!
//! Successful calls return the tool-result shape `{content: [{type: "text", text: <JSON of
//! details>}], details}`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use serde_json::{Map, Value};

/// The keys a static tool adds to a catalog tool spec (the catalog ignores them).
const STATIC_KEYS: [&str; 5] = codemode_catalog::cli::BEHAVIOUR_KEYS;

/// The behaviour keys; a tool has exactly one.
const BEHAVIOUR_KEYS: [&str; 4] = ["result", "error", "echo", "resultByAction"];

/// What one static tool does when called.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Behaviour {
    /// Return this value as the result's `details`.
    Result(Value),
    /// Fail with this message.
    Error(String),
    /// Return `{"input": <input>}` as `details`.
    Echo,
    /// Return the value under the input's `action` as `details`; fail without one.
    ResultByAction(Map<String, Value>),
}

/// The behaviour of one declared tool and how long it takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StaticTool {
    /// What the call returns.
    pub behaviour: Behaviour,
    /// How long the call takes before it settles.
    pub delay: Duration,
}

/// A parsed static tools file: the catalog specs and, at the same positions, their behaviour.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StaticToolsFile {
    /// One spec per element, in file order (the input of [`Catalog::build`]).
    pub specs: Vec<ToolSpec>,
    /// One behaviour per element, in file order.
    pub tools: Vec<StaticTool>,
}

/// A short name for a JSON value's type, for error messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    codemode_catalog::cli::json_kind(value)
}

/// Reads `delayMs`: a non-negative integer number of milliseconds (`5` or `5.0`).
fn parse_delay(value: &Value) -> Option<Duration> {
    if let Some(ms) = value.as_u64() {
        return Some(Duration::from_millis(ms));
    }
    let ms = value.as_f64()?;
    // Integral floats up to 2^53 are exact; anything else is not a whole number of ms.
    (ms >= 0.0 && ms.fract() == 0.0 && ms <= 9_007_199_254_740_992.0)
        .then(|| Duration::from_millis(ms as u64))
}

/// Splits one element into its spec and its behaviour. `index` is its position in the file.
fn parse_tool(index: usize, item: Value) -> Result<(ToolSpec, StaticTool), String> {
    let Value::Object(mut map) = item else {
        return Err(format!(
            "tool #{index}: expected an object, got {}",
            kind_of(&item)
        ));
    };
    let who = codemode_catalog::cli::tool_label(index, &map);
    let mut taken: Map<String, Value> = Map::new();
    for key in STATIC_KEYS {
        if let Some(value) = map.remove(key) {
            taken.insert(key.to_string(), value);
        }
    }
    let behaviours: Vec<&str> = BEHAVIOUR_KEYS
        .into_iter()
        .filter(|k| taken.contains_key(*k))
        .collect();
    let behaviour = match behaviours.as_slice() {
        [] => {
            return Err(format!(
                "{who}: needs one of \"result\", \"resultByAction\", \"error\" or \"echo\""
            ))
        }
        ["result"] => Behaviour::Result(taken["result"].clone()),
        ["error"] => match &taken["error"] {
            Value::String(message) => Behaviour::Error(message.clone()),
            other => {
                return Err(format!(
                    "{who}: \"error\" must be a string, got {}",
                    kind_of(other)
                ))
            }
        },
        ["echo"] => match &taken["echo"] {
            Value::Bool(true) => Behaviour::Echo,
            other => return Err(format!("{who}: \"echo\" must be true, got {other}")),
        },
        ["resultByAction"] => match &taken["resultByAction"] {
            Value::Object(by_action) => Behaviour::ResultByAction(by_action.clone()),
            other => {
                return Err(format!(
                    "{who}: \"resultByAction\" must be an object, got {}",
                    kind_of(other)
                ))
            }
        },
        several => {
            return Err(format!(
                "{who}: has {}; give exactly one of \"result\", \"resultByAction\", \"error\" or \"echo\"",
                several
                    .iter()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))
        }
    };
    let delay = match taken.get("delayMs") {
        None => Duration::ZERO,
        Some(value) => parse_delay(value).ok_or_else(|| {
            format!("{who}: \"delayMs\" must be a non-negative integer (milliseconds), got {value}")
        })?,
    };
    let spec = codemode_catalog::cli::parse_tool_entry(index, map)?;
    Ok((spec, StaticTool { behaviour, delay }))
}

/// Parses a static tools file (see the module docs). Every error names the offending tool by
/// its 0-based position and, when it has one, its name.
pub(crate) fn parse(text: &str) -> Result<StaticToolsFile, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Array(items) = root else {
        return Err(format!(
            "expected a JSON array of tools, got {}",
            kind_of(&root)
        ));
    };
    let mut file = StaticToolsFile {
        specs: Vec::with_capacity(items.len()),
        tools: Vec::with_capacity(items.len()),
    };
    for (index, item) in items.into_iter().enumerate() {
        let (spec, tool) = parse_tool(index, item)?;
        file.specs.push(spec);
        file.tools.push(tool);
    }
    Ok(file)
}

/// Runs the static tools of one catalog, by catalog id.
pub(crate) struct StaticTools {
    by_id: HashMap<String, Arc<StaticTool>>,
}

impl StaticTools {
    /// Parses `text` and builds its catalog with `limits`; returns the catalog and the executor
    /// for its entries. Errors are the messages of [`parse`] and [`Catalog::build`].
    pub(crate) fn load(
        text: &str,
        limits: &SearchLimits,
    ) -> Result<(Catalog, StaticTools), String> {
        let file = parse(text)?;
        let catalog = Catalog::build(file.specs.clone(), limits).map_err(|e| e.to_string())?;
        let by_id = catalog
            .entries()
            .iter()
            .filter_map(|entry| {
                let tool = file.tools.get(entry.spec_index())?;
                Some((entry.id().to_string(), Arc::new(tool.clone())))
            })
            .collect();
        Ok((catalog, StaticTools { by_id }))
    }
}

impl StaticTools {
    /// Like [`StaticTools::load`], but returns the tool specs instead of the catalog, for hosts
    /// that merge them with other tools (MCP servers) into one catalog.
    pub(crate) fn load_specs(
        text: &str,
        limits: &SearchLimits,
    ) -> Result<(Vec<ToolSpec>, StaticTools), String> {
        let specs = parse(text)?.specs;
        let (_, tools) = StaticTools::load(text, limits)?;
        Ok((specs, tools))
    }
}

impl StaticTool {
    /// Runs the tool once with `input`: waits `delay`, then settles per `behaviour`.
    pub(crate) async fn run(self: Arc<Self>, input: Value) -> Result<Value, ToolError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        match &self.behaviour {
            Behaviour::Result(details) => Ok(crate::tools::tool_result(details.clone())),
            Behaviour::Error(message) => Err(ToolError::failed(message.clone())),
            Behaviour::Echo => Ok(crate::tools::tool_result(
                serde_json::json!({"input": input}),
            )),
            Behaviour::ResultByAction(by_action) => {
                let action = input.get("action").and_then(Value::as_str).unwrap_or("");
                match by_action.get(action) {
                    Some(details) => Ok(crate::tools::tool_result(details.clone())),
                    None => Err(ToolError::invalid_input(format!(
                        "no result for action {action:?}"
                    ))),
                }
            }
        }
    }
}

impl ToolExecutor for StaticTools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        match self.by_id.get(&call.tool_id) {
            Some(tool) => Box::pin(tool.clone().run(call.input)),
            None => {
                let error =
                    ToolError::unknown_tool(format!("unknown static tool {}", call.tool_id));
                Box::pin(async move { Err(error) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(text: &str) -> String {
        parse(text).unwrap_err()
    }

    #[test]
    fn parses_behaviours_and_specs() {
        let file = parse(
            r#"[
                {"name": "a", "result": {"x": 1}},
                {"name": "b", "description": "Fails.", "error": "boom", "delayMs": 5},
                {"name": "c", "echo": true, "delayMs": 7.0,
                 "origin": {"kind": "plugin", "pluginId": "p"}, "parameters": {"type": "object"}},
                {"name": "d", "result": null}
            ]"#,
        )
        .unwrap();
        assert_eq!(
            file.tools,
            vec![
                StaticTool {
                    behaviour: Behaviour::Result(json!({"x": 1})),
                    delay: Duration::ZERO
                },
                StaticTool {
                    behaviour: Behaviour::Error("boom".into()),
                    delay: Duration::from_millis(5)
                },
                StaticTool {
                    behaviour: Behaviour::Echo,
                    delay: Duration::from_millis(7)
                },
                StaticTool {
                    behaviour: Behaviour::Result(Value::Null),
                    delay: Duration::ZERO
                },
            ]
        );
        assert_eq!(file.specs[0], ToolSpec::core("a", ""));
        assert_eq!(file.specs[1], ToolSpec::core("b", "Fails."));
        assert_eq!(
            file.specs[2],
            ToolSpec::plugin("p", "c", "").with_parameters(json!({"type": "object"}))
        );
    }

    #[test]
    fn rejects_bad_files() {
        assert_eq!(err("{}"), "expected a JSON array of tools, got an object");
        assert_eq!(
            err("[1"),
            "not valid JSON: EOF while parsing a list at line 1 column 2"
        );
        assert_eq!(err("[3]"), "tool #0: expected an object, got a number");
        assert_eq!(
            err(r#"[{"name": "a"}]"#),
            r#"tool #0 ("a"): needs one of "result", "resultByAction", "error" or "echo""#
        );
        assert_eq!(
            err(r#"[{"name": "a", "result": 1, "echo": true}]"#),
            r#"tool #0 ("a"): has "result" and "echo"; give exactly one of "result", "resultByAction", "error" or "echo""#
        );
        assert_eq!(
            err(r#"[{"name": "a", "error": 3}]"#),
            r#"tool #0 ("a"): "error" must be a string, got a number"#
        );
        assert_eq!(
            err(r#"[{"name": "a", "echo": false}]"#),
            r#"tool #0 ("a"): "echo" must be true, got false"#
        );
        assert_eq!(
            err(r#"[{"name": "a", "echo": true, "delayMs": -1}]"#),
            r#"tool #0 ("a"): "delayMs" must be a non-negative integer (milliseconds), got -1"#
        );
        assert_eq!(
            err(r#"[{"name": "a", "echo": true, "delayMs": 1.5}]"#),
            r#"tool #0 ("a"): "delayMs" must be a non-negative integer (milliseconds), got 1.5"#
        );
        assert_eq!(
            err(r#"[{"name": "a", "echo": true, "delayMs": "5"}]"#),
            r#"tool #0 ("a"): "delayMs" must be a non-negative integer (milliseconds), got "5""#
        );
        assert_eq!(
            err(r#"[{"name": "a", "result": 1}, {"result": 1}]"#),
            "tool #1: missing field `name`"
        );
        assert_eq!(
            err(r#"[{"name": "a", "result": 1, "delay": 3}]"#),
            "tool #0 (\"a\"): unknown field `delay`, expected one of `name`, `label`, \
             `description`, `parameters`, `outputSchema`, `origin`, `catalogMode`, `allowed`, \
             `control`, `channel`, `mcpDocs`, or one of `result`, `error`, `echo`, `resultByAction`, `delayMs`"
        );
    }

    #[tokio::test]
    async fn result_by_action_answers_per_action() {
        let file = parse(
            r#"[{"name": "nodes", "resultByAction": {"status": {"nodes": []}, "invoke": 1}}]"#,
        )
        .unwrap();
        let tool = Arc::new(file.tools[0].clone());
        assert_eq!(
            tool.clone().run(json!({"action": "status"})).await,
            Ok(
                json!({"content": [{"type": "text", "text": "{\"nodes\":[]}"}], "details": {"nodes": []}})
            )
        );
        assert_eq!(
            tool.clone()
                .run(json!({"action": "invoke", "node": "n"}))
                .await,
            Ok(json!({"content": [{"type": "text", "text": "1"}], "details": 1}))
        );
        assert_eq!(
            tool.clone().run(json!({"action": "pair"})).await,
            Err(ToolError::invalid_input("no result for action \"pair\""))
        );
        assert_eq!(
            tool.run(json!({})).await,
            Err(ToolError::invalid_input("no result for action \"\""))
        );
        assert_eq!(
            err(r#"[{"name": "a", "resultByAction": []}]"#),
            r#"tool #0 ("a"): "resultByAction" must be an object, got an array"#
        );
        assert_eq!(
            err(r#"[{"name": "a", "result": 1, "resultByAction": {}}]"#),
            r#"tool #0 ("a"): has "result" and "resultByAction"; give exactly one of "result", "resultByAction", "error" or "echo""#
        );
    }

    #[test]
    fn load_reports_catalog_errors() {
        let error = StaticTools::load(
            r#"[{"name": "a", "result": 1}, {"name": "a", "result": 2}]"#,
            &SearchLimits::default(),
        )
        .err()
        .unwrap();
        assert_eq!(
            error,
            "duplicate catalog id \"openclaw:core:a\": tool #0 (core tool \"a\") and tool #1 (core tool \"a\") both map to it"
        );
    }

    #[tokio::test]
    async fn runs_each_behaviour() {
        let (catalog, tools) = StaticTools::load(
            r#"[
                {"name": "a", "result": {"x": 1}},
                {"name": "b", "error": "boom", "delayMs": 20},
                {"name": "c", "echo": true, "origin": {"kind": "client"}}
            ]"#,
            &SearchLimits::default(),
        )
        .unwrap();
        assert_eq!(
            catalog.entries().iter().map(|e| e.id()).collect::<Vec<_>>(),
            vec!["openclaw:core:a", "openclaw:core:b", "client:client:c"]
        );
        let tool = |id: &str| tools.by_id[id].clone();
        assert_eq!(
            tool("openclaw:core:a").run(json!({})).await,
            Ok(json!({"content": [{"type": "text", "text": "{\"x\":1}"}], "details": {"x": 1}}))
        );
        let started = std::time::Instant::now();
        assert_eq!(
            tool("openclaw:core:b").run(json!({})).await,
            Err(ToolError::failed("boom"))
        );
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(
            tool("client:client:c").run(json!({"q": [1, "two"]})).await,
            Ok(json!({
                "content": [{"type": "text", "text": "{\"input\":{\"q\":[1,\"two\"]}}"}],
                "details": {"input": {"q": [1, "two"]}}
            }))
        );
        assert_eq!(tools.by_id.len(), 3);
    }
}
