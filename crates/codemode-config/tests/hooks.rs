//! Command hook configuration (docs/contract/host.md#h2, docs/contract/host.md#h9) and the `codemode config` report's new fields,
//! with exact values.

mod common;

use codemode_config::{
    resolve_hooks, ConfigReport, HookConfig, HookSpec, ToolPattern, Warning, WarningKind,
    DEFAULT_HOOK_TIMEOUT_MS, MAX_HOOK_TIMEOUT_MS, MIN_HOOK_TIMEOUT_MS,
};
use serde_json::{json, Value};

#[test]
fn absent_hooks_are_empty() {
    let r = resolve_hooks(&json!({"tools": {}}));
    assert_eq!(r.hooks, HookConfig::default());
    assert!(r.hooks.is_empty());
    assert_eq!(r.warnings, vec![]);
}

#[test]
fn well_formed_hooks() {
    let r = resolve_hooks(&json!({"hooks": {
        "beforeToolCall": [
            {"match": "*write*", "command": ["sh", "-c", "exit 0"]},
            {"match": "openclaw:core:exec", "command": ["/usr/local/bin/guard"], "timeoutMs": 250}
        ],
        "afterToolCall": [{"match": "*", "command": ["redact", "--all"], "timeoutMs": 1000.0}]
    }}));
    assert_eq!(r.warnings, vec![]);
    assert_eq!(
        r.hooks,
        HookConfig {
            before_tool_call: vec![
                HookSpec::new("*write*", &["sh", "-c", "exit 0"]),
                HookSpec::new("openclaw:core:exec", &["/usr/local/bin/guard"]).with_timeout_ms(250),
            ],
            after_tool_call: vec![HookSpec::new("*", &["redact", "--all"]).with_timeout_ms(1000)],
        }
    );
    let first = &r.hooks.before_tool_call[0];
    assert_eq!(first.timeout_ms, DEFAULT_HOOK_TIMEOUT_MS);
    assert_eq!(DEFAULT_HOOK_TIMEOUT_MS, 5000);
    assert_eq!(first.timeout(), std::time::Duration::from_millis(5000));
    assert_eq!(first.name(), "sh");
    assert!(first.applies_to("fs_write", Some("mcp:fs:fs_write")));
    assert!(first.applies_to("x", Some("openclaw:core:write")));
    assert!(!first.applies_to("read", Some("openclaw:core:read")));
    assert_eq!(r.hooks.before_tool_call[1].name(), "/usr/local/bin/guard");
    // JSON shape: the config's own field names.
    assert_eq!(
        serde_json::to_value(&r.hooks.after_tool_call[0]).unwrap(),
        json!({"match": "*", "command": ["redact", "--all"], "timeoutMs": 1000})
    );
    let back: HookConfig = serde_json::from_value(serde_json::to_value(&r.hooks).unwrap()).unwrap();
    assert_eq!(back, r.hooks);
}

#[test]
fn timeouts_are_clamped_with_warnings() {
    assert_eq!((MIN_HOOK_TIMEOUT_MS, MAX_HOOK_TIMEOUT_MS), (100, 600_000));
    let r = resolve_hooks(&json!({"hooks": {"beforeToolCall": [
        {"match": "a", "command": ["x"], "timeoutMs": 5},
        {"match": "b", "command": ["x"], "timeoutMs": 9999999},
        {"match": "c", "command": ["x"], "timeoutMs": 0},
        {"match": "d", "command": ["x"], "timeoutMs": "100"},
        {"match": "e", "command": ["x"], "timeoutMs": 1.5},
        {"match": "f", "command": ["x"], "timeoutMs": 100}
    ]}}));
    let used: Vec<u64> = r
        .hooks
        .before_tool_call
        .iter()
        .map(|h| h.timeout_ms)
        .collect();
    assert_eq!(used, [100, 600_000, 5000, 5000, 5000, 100]);
    let w = common::warning_tuples(&r.warnings);
    assert_eq!(
        w,
        vec![
            ("hooks.beforeToolCall[0].timeoutMs", "timeoutMs", &json!(5), &json!(100), WarningKind::BelowMinimum,
             "hooks.beforeToolCall[0].timeoutMs 5 is below the minimum 100; 100 is used"),
            ("hooks.beforeToolCall[1].timeoutMs", "timeoutMs", &json!(9999999), &json!(600000), WarningKind::AboveMaximum,
             "hooks.beforeToolCall[1].timeoutMs 9999999 is above the maximum 600000; 600000 is used"),
            ("hooks.beforeToolCall[2].timeoutMs", "timeoutMs", &json!(0), &json!(5000), WarningKind::NotPositiveInteger,
             "hooks.beforeToolCall[2].timeoutMs must be a positive integer; 5000 is used"),
            ("hooks.beforeToolCall[3].timeoutMs", "timeoutMs", &json!("100"), &json!(5000), WarningKind::NotPositiveInteger,
             "hooks.beforeToolCall[3].timeoutMs must be a positive integer; 5000 is used"),
            ("hooks.beforeToolCall[4].timeoutMs", "timeoutMs", &json!(1.5), &json!(5000), WarningKind::NotPositiveInteger,
             "hooks.beforeToolCall[4].timeoutMs must be a positive integer; 5000 is used"),
        ]
    );
}

#[test]
fn bad_commands_drop_the_hook() {
    let r = resolve_hooks(&json!({"hooks": {"afterToolCall": [
        {"match": "a"},
        {"match": "b", "command": "sh -c 'exit 0'"},
        {"match": "c", "command": []},
        {"match": "d", "command": ["sh", 1]},
        {"match": "e", "command": [""]},
        {"match": "f", "command": ["ok"]}
    ]}}));
    assert_eq!(r.hooks.after_tool_call, vec![HookSpec::new("f", &["ok"])]);
    let w: Vec<(&str, &Value, &Value, WarningKind)> = r
        .warnings
        .iter()
        .map(|w| (w.path.as_str(), &w.given, &w.used, w.kind))
        .collect();
    assert_eq!(
        w,
        vec![
            (
                "hooks.afterToolCall[0].command",
                &Value::Null,
                &Value::Null,
                WarningKind::InvalidValue
            ),
            (
                "hooks.afterToolCall[1].command",
                &json!("sh -c 'exit 0'"),
                &Value::Null,
                WarningKind::InvalidValue
            ),
            (
                "hooks.afterToolCall[2].command",
                &json!([]),
                &Value::Null,
                WarningKind::InvalidValue
            ),
            (
                "hooks.afterToolCall[3].command",
                &json!(["sh", 1]),
                &Value::Null,
                WarningKind::InvalidValue
            ),
            (
                "hooks.afterToolCall[4].command",
                &json!([""]),
                &Value::Null,
                WarningKind::InvalidValue
            ),
        ]
    );
    assert_eq!(
        r.warnings[0].message,
        "hooks.afterToolCall[0].command must be a non-empty array of strings [\"program\", \"arg\", …] with a non-empty program; the hook is ignored"
    );
    assert!(r.warnings.iter().all(|w| w.field == "command"));
}

#[test]
fn bad_match_applies_the_hook_to_every_call() {
    let r = resolve_hooks(&json!({"hooks": {"beforeToolCall": [
        {"command": ["a"]},
        {"match": 3, "command": ["b"]},
        {"match": " ", "command": ["c"]}
    ]}}));
    let patterns: Vec<&str> = r
        .hooks
        .before_tool_call
        .iter()
        .map(|h| h.pattern.as_str())
        .collect();
    assert_eq!(patterns, ["*", "*", "*"]);
    assert!(r.hooks.before_tool_call[0].applies_to("anything", None));
    assert_eq!(
        r.warnings[0],
        Warning {
            path: "hooks.beforeToolCall[0].match".into(),
            field: "match".into(),
            given: Value::Null,
            used: json!("*"),
            kind: WarningKind::InvalidValue,
            message: "hooks.beforeToolCall[0].match must be a non-empty pattern string; \"*\" is used, so the hook applies to every call".into(),
        }
    );
    let given: Vec<&Value> = r.warnings.iter().map(|w| &w.given).collect();
    assert_eq!(given, [&Value::Null, &json!(3), &json!(" ")]);
    assert_eq!(ToolPattern::new("*"), r.hooks.before_tool_call[2].pattern);
}

#[test]
fn malformed_shapes_and_unknown_keys() {
    assert_eq!(
        resolve_hooks(&json!({"hooks": []})).warnings,
        vec![Warning {
            path: "hooks".into(),
            field: String::new(),
            given: json!([]),
            used: json!({}),
            kind: WarningKind::InvalidShape,
            message: "hooks must be an object; it is ignored".into(),
        }]
    );
    let r = resolve_hooks(&json!({"hooks": {
        "beforeToolCall": {"match": "*", "command": ["x"]},
        "afterToolCall": ["nope", {"match": "*", "command": ["y"], "timeout": 5}],
        "onError": []
    }}));
    assert_eq!(r.hooks.before_tool_call, vec![]);
    assert_eq!(r.hooks.after_tool_call, vec![HookSpec::new("*", &["y"])]);
    let w: Vec<(&str, &str, WarningKind, &str)> = r
        .warnings
        .iter()
        .map(|w| {
            (
                w.path.as_str(),
                w.field.as_str(),
                w.kind,
                w.message.as_str(),
            )
        })
        .collect();
    assert_eq!(
        w,
        vec![
            ("hooks.beforeToolCall", "beforeToolCall", WarningKind::InvalidShape,
             "hooks.beforeToolCall must be an array of hooks; it is ignored"),
            ("hooks.afterToolCall[0]", "", WarningKind::InvalidShape,
             "hooks.afterToolCall[0] must be an object; it is ignored"),
            ("hooks.afterToolCall[1].timeout", "timeout", WarningKind::UnknownField,
             "a hook has no field \"timeout\" (only match, command and timeoutMs); it is ignored"),
            ("hooks.onError", "onError", WarningKind::UnknownField,
             "hooks has no field \"onError\" (only beforeToolCall and afterToolCall); it is ignored"),
        ]
    );
}

#[test]
fn report_carries_policy_hooks_and_their_warnings() {
    let root = json!({
        "tools": {"codeMode": true, "deny": ["exec"], "allow": ["read", 1]},
        "hooks": {"beforeToolCall": [{"match": "*", "command": ["guard"], "timeoutMs": 5}]},
        "agents": {"list": [{"id": "ops", "tools": {"deny": ["grep"]}}]}
    });
    let report = ConfigReport::from_root(&root, Some("ops"));
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["warnings"], json!([]));
    assert_eq!(
        value["toolPolicy"],
        json!({"allow": ["read"], "deny": ["exec", "grep"], "approvals": {"require": []}})
    );
    assert_eq!(
        value["hooks"],
        json!({"beforeToolCall": [{"match": "*", "command": ["guard"], "timeoutMs": 100}], "afterToolCall": []})
    );
    let paths: Vec<&str> = report
        .host_warnings
        .iter()
        .map(|w| w.path.as_str())
        .collect();
    assert_eq!(
        paths,
        ["tools.allow[1]", "hooks.beforeToolCall[0].timeoutMs"]
    );
    let back: ConfigReport = serde_json::from_str(&report.to_json_pretty()).unwrap();
    assert_eq!(back, report);
}

#[test]
fn report_without_policy_or_hooks_keeps_its_old_shape() {
    let report = ConfigReport::from_root(&json!({"tools": {"codeMode": true}}), None);
    let value = serde_json::to_value(&report).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["agentId", "config", "warnings"]);
}

#[test]
fn report_does_not_repeat_shared_warnings() {
    // The root and unknown-agent warnings come from tools.codeMode resolution once.
    let report = ConfigReport::from_root(&json!("garbage"), None);
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(report.host_warnings, vec![]);
    let report = ConfigReport::from_root(&json!({"tools": 3}), Some("ghost"));
    let kinds: Vec<WarningKind> = report.warnings.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        [WarningKind::InvalidShape, WarningKind::UnknownAgent]
    );
    assert_eq!(report.host_warnings, vec![]);
}
