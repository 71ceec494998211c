//! `"$result:<callId>.<path>"` references: a scripted call's arguments may name a value of an
//! earlier call's result ([`resolve_references`]).

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The prefix of a result reference in a scripted call's arguments:
/// `"$result:<callId>.<dotted path>"`.
pub const RESULT_REFERENCE_PREFIX: &str = "$result:";

/// A `"$result:…"` reference that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The referenced call has not produced a result (it comes later, or does not exist).
    #[error("{reference:?}: call {call_id:?} has no result yet")]
    NoResult {
        /// The reference as written.
        reference: String,
        /// Its call id.
        call_id: String,
    },
    /// The result has nothing at the path.
    #[error("{reference:?}: the result of call {call_id:?} has no value at {path:?}")]
    NoValue {
        /// The reference as written.
        reference: String,
        /// Its call id.
        call_id: String,
        /// The dotted path.
        path: String,
    },
}

/// Replaces every string `"$result:<callId>.<dotted.path>"` anywhere in `value` (object values
/// and array items, at any depth) with the value at that path in the result of call `callId`
/// (`"$result:<callId>"` alone is the whole result). A path segment is an object key, or an
/// array index when the value there is an array. For `exec` and `wait` the result is the
/// code-mode result object (`runId`, `value`, …); for direct tools the tool result
/// (`{content, details}`, or `{error}` when it failed).
pub fn resolve_references(
    value: &Value,
    results: &HashMap<String, Value>,
) -> Result<Value, ReferenceError> {
    match value {
        Value::String(s) if s.starts_with(RESULT_REFERENCE_PREFIX) => {
            let rest = &s[RESULT_REFERENCE_PREFIX.len()..];
            let (call_id, path) = rest.split_once('.').unwrap_or((rest, ""));
            let result = results
                .get(call_id)
                .ok_or_else(|| ReferenceError::NoResult {
                    reference: s.clone(),
                    call_id: call_id.to_string(),
                })?;
            let mut at = result;
            if !path.is_empty() {
                for segment in path.split('.') {
                    let next = match at {
                        Value::Object(map) => map.get(segment),
                        Value::Array(items) => {
                            segment.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => None,
                    };
                    at = next.ok_or_else(|| ReferenceError::NoValue {
                        reference: s.clone(),
                        call_id: call_id.to_string(),
                        path: path.to_string(),
                    })?;
                }
            }
            Ok(at.clone())
        }
        Value::Array(items) => items
            .iter()
            .map(|v| resolve_references(v, results))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), resolve_references(v, results)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}
