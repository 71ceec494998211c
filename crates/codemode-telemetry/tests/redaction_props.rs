//! Properties of the redaction rule: no value under a sensitive key survives, at any depth, in
//! any event; the key test is exactly the regular expression of docs/contract/host.md#h4;
//! strings are cut exactly.

use codemode_telemetry::*;
use proptest::prelude::*;
use serde_json::{Map, Value};

const SECRET: &str = "LEAK";

/// Keys: sensitive spellings, near misses and arbitrary words.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "token",
            "accessToken",
            "ID_TOKEN",
            "secret",
            "clientSecret",
            "password",
            "PassWd",
            "apiKey",
            "api-key",
            "X_API_KEY",
            "authorization",
            "Cookie",
            "set-cookie",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "tok", "api key", "pass", "auth", "key", "path", "items"
        ])
        .prop_map(str::to_string),
        "[a-zA-Z_-]{0,10}",
    ]
}

/// Replaces every leaf of `v` with the secret marker (so a secret may be a deep structure).
fn poison(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(poison).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, poison(v))).collect()),
        _ => Value::String(SECRET.into()),
    }
}

/// JSON values whose secret markers sit only under sensitive keys.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(|entries| {
                let mut m = Map::new();
                for (k, v) in entries {
                    let v = if is_sensitive_key(&k) { poison(v) } else { v };
                    m.insert(k, v);
                }
                Value::Object(m)
            }),
        ]
    })
}

/// Every value under a sensitive key is exactly `"[redacted]"`.
fn check(v: &Value) -> Result<(), String> {
    match v {
        Value::Array(a) => a.iter().try_for_each(check),
        Value::Object(m) => m.iter().try_for_each(|(k, v)| {
            if is_sensitive_key(k) {
                if v != &Value::String(REDACTED.into()) {
                    return Err(format!("{k}: {v}"));
                }
                Ok(())
            } else {
                check(v)
            }
        }),
        _ => Ok(()),
    }
}

proptest! {
    #[test]
    fn no_redacted_value_survives(v in value()) {
        let out = redact_value(&v);
        prop_assert_eq!(check(&out), Ok(()));
        prop_assert!(!out.to_string().contains(SECRET), "{}", out);
        // Nothing else changes: the structure outside sensitive keys is kept.
        prop_assert_eq!(redact_value(&out), out.clone());
        // The same holds in every event that carries a value.
        let event = TrajectoryEvent::at("T", RunScope::default(), EventKind::NestedToolResult(
            NestedToolResultEvent {
                tool_call_id: "n".into(), parent_tool_call_id: None, code_mode_run_id: None,
                tool_id: "x".into(), tool_name: "x".into(), method: NestedMethod::Call,
                status: NestedStatus::Ok, duration_ms: 0, result: Some(v.clone()), error: None,
            }));
        prop_assert!(!event.to_json_line().contains(SECRET));
        let call = TrajectoryEvent::at("T", RunScope::default(), EventKind::ToolCall(ToolCallEvent {
            tool_call_id: "c".into(), tool_name: "exec".into(), tool_kind: ToolKind::CodeModeExec,
            tool_input_kind: None, input: serde_json::json!({"args": [v]}),
        }));
        prop_assert!(!call.to_json_line().contains(SECRET));
    }

    #[test]
    fn key_rule_is_the_spec_regex(k in "\\PC{0,16}|[a-zA-Z_-]{0,4}(token|secret|passw(or)?d|api[-_]?key|authorization|cookie|toke|apikkey)[a-zA-Z_-]{0,4}") {
        // The expression of docs/contract/host.md#h4,
        // /(token|secret|password|passwd|api[-_]?key|authorization|cookie)/i; `-u` gives
        // JavaScript's non-Unicode case folding (ASCII only).
        let re = regex::Regex::new("(?i-u)(token|secret|password|passwd|api[-_]?key|authorization|cookie)").unwrap();
        let mixed: String = k.chars().enumerate()
            .map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c })
            .collect();
        prop_assert_eq!(is_sensitive_key(&k), re.is_match(&k));
        prop_assert_eq!(is_sensitive_key(&mixed), re.is_match(&mixed));
    }

    #[test]
    fn cut_keeps_4096_chars_and_counts_the_rest(s in "\\PC{0,5000}") {
        let n = s.chars().count();
        let out = truncate_string(&s);
        if n <= MAX_STRING_CHARS {
            prop_assert_eq!(out, s);
        } else {
            let head: String = s.chars().take(MAX_STRING_CHARS).collect();
            prop_assert_eq!(out, format!("{head}…({} more)", n - MAX_STRING_CHARS));
        }
    }
}
