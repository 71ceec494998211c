//! The scripted model: a [`Script`] of assistant turns, parsed from JSON with every unknown key
//! and malformed value refused ([`ScriptError`] names the turn and call).

use std::collections::HashSet;
use std::time::Duration;

use codemode_telemetry::TokenUsage;
use serde_json::{json, Map, Value};

/// A scripted model: the assistant turns of one agent run, in order.
///
/// JSON: `{"turns": [turn, …]}` where each turn is `{"toolCalls": [call, …]}` or
/// `{"text": "…"}`, and may add `"usage": {"input", "output", "cacheRead"?, "cacheWrite"?}`
/// (token counts of that round trip) and `"delayMs": N` (the model takes this long before the
/// turn's calls are made, e.g. to let a parked run's TTL pass). A call is `{"id", "name",
/// "arguments"?, "abort"?}`: `arguments` defaults to `{}`; `"abort": true` makes the call with
/// its abort signal already raised (a cancelled turn). Unknown keys are errors.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The assistant turns.
    pub turns: Vec<ScriptTurn>,
}

/// One assistant turn of a [`Script`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptTurn {
    /// What the model answers.
    pub step: TurnStep,
    /// Token usage of this provider round trip.
    pub usage: Option<TokenUsage>,
    /// How long the model takes before the turn's calls are made.
    pub delay: Duration,
}

/// What an assistant turn says: tool calls or a final text.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStep {
    /// Tool calls, run in order.
    ToolCalls(Vec<ScriptToolCall>),
    /// A final text answer.
    Text(String),
}

/// One provider-visible tool call of a scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptToolCall {
    /// The provider's tool-call id (unique in the script).
    pub id: String,
    /// The tool name, one of the payload's.
    pub name: String,
    /// The arguments, possibly with `"$result:<callId>.<path>"` references.
    pub arguments: Value,
    /// Make the call with its abort signal already raised.
    pub abort: bool,
}

/// A script file that is not in the format of [`Script`]; the message names the turn and call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("script: {0}")]
pub struct ScriptError(pub String);

impl Script {
    /// Parses a script file (JSON).
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ScriptError(format!("not JSON: {e}")))?;
        Script::from_value(&value)
    }

    /// Reads a script from its JSON value.
    pub fn from_value(value: &Value) -> Result<Script, ScriptError> {
        let root = value
            .as_object()
            .ok_or_else(|| ScriptError("expected an object {\"turns\": [...]}".into()))?;
        unknown_keys(root, &["turns"], "the script")?;
        let turns = root
            .get("turns")
            .and_then(Value::as_array)
            .ok_or_else(|| ScriptError("\"turns\" must be an array".into()))?;
        let mut ids = HashSet::new();
        let mut parsed = Vec::with_capacity(turns.len());
        for (index, turn) in turns.iter().enumerate() {
            parsed.push(parse_turn(index, turn, &mut ids)?);
        }
        Ok(Script { turns: parsed })
    }

    /// Every tool call of the script, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ScriptToolCall> {
        self.turns.iter().flat_map(|t| match &t.step {
            TurnStep::ToolCalls(calls) => calls.as_slice(),
            TurnStep::Text(_) => &[],
        })
    }
}

fn unknown_keys(map: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), ScriptError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(ScriptError(format!(
            "{what}: unknown key {key:?} (expected {})",
            known
                .iter()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(()),
    }
}

fn parse_turn(
    index: usize,
    turn: &Value,
    ids: &mut HashSet<String>,
) -> Result<ScriptTurn, ScriptError> {
    let who = format!("turn #{index}");
    let map = turn
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: expected an object")))?;
    unknown_keys(map, &["toolCalls", "text", "usage", "delayMs"], &who)?;
    let step = match (map.get("toolCalls"), map.get("text")) {
        (Some(calls), None) => {
            let calls = calls
                .as_array()
                .ok_or_else(|| ScriptError(format!("{who}: \"toolCalls\" must be an array")))?;
            if calls.is_empty() {
                return Err(ScriptError(format!("{who}: \"toolCalls\" is empty")));
            }
            let mut parsed = Vec::with_capacity(calls.len());
            for (n, call) in calls.iter().enumerate() {
                parsed.push(parse_call(&format!("{who} call #{n}"), call, ids)?);
            }
            TurnStep::ToolCalls(parsed)
        }
        (None, Some(Value::String(text))) => TurnStep::Text(text.clone()),
        (None, Some(_)) => return Err(ScriptError(format!("{who}: \"text\" must be a string"))),
        _ => {
            return Err(ScriptError(format!(
                "{who}: needs exactly one of \"toolCalls\" or \"text\""
            )))
        }
    };
    let usage = match map.get("usage") {
        None => None,
        Some(usage) => Some(parse_usage(&who, usage)?),
    };
    let delay = match map.get("delayMs") {
        None => Duration::ZERO,
        Some(v) => Duration::from_millis(v.as_u64().ok_or_else(|| {
            ScriptError(format!("{who}: \"delayMs\" must be a non-negative integer"))
        })?),
    };
    Ok(ScriptTurn { step, usage, delay })
}

fn parse_usage(who: &str, usage: &Value) -> Result<TokenUsage, ScriptError> {
    let map = usage
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: \"usage\" must be an object")))?;
    unknown_keys(
        map,
        &["input", "output", "cacheRead", "cacheWrite"],
        &format!("{who} usage"),
    )?;
    let count = |key: &str, required: bool| -> Result<u64, ScriptError> {
        match map.get(key) {
            None if !required => Ok(0),
            None => Err(ScriptError(format!("{who}: usage needs \"{key}\""))),
            Some(v) => v.as_u64().ok_or_else(|| {
                ScriptError(format!(
                    "{who}: usage \"{key}\" must be a non-negative integer"
                ))
            }),
        }
    };
    Ok(TokenUsage {
        input: count("input", true)?,
        output: count("output", true)?,
        cache_read: count("cacheRead", false)?,
        cache_write: count("cacheWrite", false)?,
    })
}

fn parse_call(
    who: &str,
    call: &Value,
    ids: &mut HashSet<String>,
) -> Result<ScriptToolCall, ScriptError> {
    let map = call
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: expected an object")))?;
    unknown_keys(map, &["id", "name", "arguments", "abort"], who)?;
    let text = |key: &str| -> Result<String, ScriptError> {
        match map.get(key).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
            _ => Err(ScriptError(format!(
                "{who}: \"{key}\" must be a non-empty string"
            ))),
        }
    };
    let id = text("id")?;
    if id.contains('.') {
        return Err(ScriptError(format!(
            "{who}: id {id:?} must not contain '.' (it ends a $result: reference)"
        )));
    }
    if !ids.insert(id.clone()) {
        return Err(ScriptError(format!("{who}: duplicate call id {id:?}")));
    }
    let name = text("name")?;
    let abort = match map.get("abort") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ScriptError(format!("{who}: \"abort\" must be a boolean"))),
    };
    Ok(ScriptToolCall {
        id,
        name,
        arguments: map.get("arguments").cloned().unwrap_or_else(|| json!({})),
        abort,
    })
}
