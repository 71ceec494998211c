//! Tool policy (docs/contract/host.md#h1, docs/contract/host.md#h3, docs/contract/host.md#h9): patterns, deny-wins, empty allow, per-agent replace/add,
//! and every warning, with exact values.

mod common;

use codemode_config::{resolve_policy, ToolPattern, ToolPolicy, Warning, WarningKind};
use serde_json::{json, Value};

fn policy(root: Value, agent: Option<&str>) -> ToolPolicy {
    let resolved = resolve_policy(&root, agent);
    assert_eq!(resolved.warnings, vec![], "unexpected warnings");
    resolved.policy
}

fn warnings(root: Value, agent: Option<&str>) -> Vec<(String, String, Value, Value, WarningKind)> {
    resolve_policy(&root, agent)
        .warnings
        .into_iter()
        .map(|w| (w.path, w.field, w.given, w.used, w.kind))
        .collect()
}

fn strings(patterns: &[ToolPattern]) -> Vec<&str> {
    patterns.iter().map(ToolPattern::as_str).collect()
}

#[test]
fn star_matches_any_run_of_characters() {
    let p = ToolPattern::new("openclaw:*:re*d");
    assert!(p.matches("openclaw:core:read"));
    assert!(p.matches("openclaw:plugin-x:red"));
    assert!(!p.matches("openclaw::rd"));
    assert!(p.matches("openclaw::red"));
    assert!(!p.matches("mcp:core:read"));
    assert!(!p.matches("openclaw:core:reads"));
    assert!(ToolPattern::new("*").matches(""));
    assert!(ToolPattern::new("*write*").matches("fs_write_file"));
    assert!(ToolPattern::new("a*b*c").matches("abc"));
    assert!(!ToolPattern::new("a*b*c").matches("acb"));
    // Literal characters other than `*` are literal (no `?` or `[…]` syntax).
    assert!(!ToolPattern::new("rea?").matches("read"));
    assert!(ToolPattern::new("rea?").matches("rea?"));
}

#[test]
fn patterns_are_trimmed_and_case_insensitive() {
    assert!(ToolPattern::new("  Read ").matches("read"));
    assert!(ToolPattern::new("read").matches(" READ"));
    assert_eq!(ToolPattern::new("  Read ").as_str(), "Read");
}

#[test]
fn a_pattern_matches_the_name_or_the_id() {
    let p = ToolPattern::new("read");
    assert!(p.matches_tool("read", Some("openclaw:core:read")));
    assert!(p.matches_tool("read", None));
    let by_id = ToolPattern::new("openclaw:core:read");
    assert!(by_id.matches_tool("read", Some("openclaw:core:read")));
    assert!(!by_id.matches_tool("read", None));
    assert!(!by_id.matches_tool("read", Some("mcp:fs:read")));
}

#[test]
fn absent_allow_allows_everything() {
    let p = policy(json!({}), None);
    assert_eq!(p, ToolPolicy::default());
    assert!(p.is_default());
    assert!(p.allows("read", "openclaw:core:read"));
    assert!(p.allows("anything", "mcp:x:anything"));
    assert!(!p.allows_nothing());
    assert!(!p.requires_approval("read", "openclaw:core:read"));
}

#[test]
fn empty_allow_allows_nothing() {
    let p = policy(json!({"tools": {"allow": []}}), None);
    assert_eq!(p.allow, Some(vec![]));
    assert!(p.allows_nothing());
    assert!(!p.allows("read", "openclaw:core:read"));
    assert!(!p.allows("", ""));
}

#[test]
fn allow_by_name_or_id_and_deny_wins() {
    let p = policy(
        json!({"tools": {"allow": ["read", "openclaw:core:*"], "deny": ["exec", "mcp:*:delete*"]}}),
        None,
    );
    assert_eq!(
        strings(p.allow.as_deref().unwrap()),
        ["read", "openclaw:core:*"]
    );
    assert_eq!(strings(&p.deny), ["exec", "mcp:*:delete*"]);
    assert!(p.allows("read", "mcp:fs:read")); // by name
    assert!(p.allows("grep", "openclaw:core:grep")); // by id
    assert!(!p.allows("exec", "openclaw:core:exec")); // allowed by id, denied by name
    assert!(!p.allows("list", "mcp:fs:list")); // not allowed
                                               // deny wins even without allow
    let d = policy(json!({"tools": {"deny": ["*delete*"]}}), None);
    assert!(!d.allows("delete_file", "mcp:fs:delete_file"));
    assert!(!d.allows("rm", "mcp:delete:rm"));
    assert!(d.allows("rm", "mcp:fs:rm"));
    // a catch-all deny beats a catch-all allow
    let all = policy(json!({"tools": {"allow": ["*"], "deny": ["*"]}}), None);
    assert!(!all.allows("read", "openclaw:core:read"));
}

#[test]
fn approvals_require_patterns() {
    let p = policy(
        json!({"tools": {"approvals": {"require": ["*write*", "openclaw:core:exec"]}}}),
        None,
    );
    assert_eq!(
        strings(&p.approvals.require),
        ["*write*", "openclaw:core:exec"]
    );
    assert!(p.requires_approval("fs_write", "mcp:fs:fs_write"));
    assert!(p.requires_approval("exec", "openclaw:core:exec"));
    assert!(!p.requires_approval("exec", "mcp:shell:exec"));
    assert!(!p.requires_approval("read", "openclaw:core:read"));
    // approvals do not restrict what is allowed
    assert!(p.allows("fs_write", "mcp:fs:fs_write"));
}

fn agents_root() -> Value {
    json!({
        "tools": {"allow": ["read", "grep"], "deny": ["exec"], "approvals": {"require": ["write"]}},
        "agents": {"list": [
            {"id": "ops", "tools": {"allow": ["*"], "deny": ["mcp:*"], "approvals": {"require": ["grep"]}}},
            {"id": "chat", "tools": {"deny": ["grep"]}},
            {"id": "mute", "tools": {"allow": []}},
            {"id": "plain"},
            {"id": "ops", "tools": {"allow": ["never-used"]}}
        ]}
    })
}

#[test]
fn agent_allow_replaces_and_agent_deny_adds() {
    let ops = policy(agents_root(), Some("ops"));
    assert_eq!(strings(ops.allow.as_deref().unwrap()), ["*"]);
    assert_eq!(strings(&ops.deny), ["exec", "mcp:*"]);
    assert_eq!(strings(&ops.approvals.require), ["write", "grep"]);
    assert!(ops.allows("list", "openclaw:core:list")); // the global allow is replaced
    assert!(!ops.allows("exec", "openclaw:core:exec")); // the global deny still applies
    assert!(!ops.allows("read", "mcp:fs:read")); // the agent's deny is added
    assert!(ops.requires_approval("grep", "openclaw:core:grep"));
    assert!(ops.requires_approval("write", "openclaw:core:write"));

    let chat = policy(agents_root(), Some("chat"));
    assert_eq!(strings(chat.allow.as_deref().unwrap()), ["read", "grep"]); // inherited
    assert_eq!(strings(&chat.deny), ["exec", "grep"]);
    assert!(chat.allows("read", "openclaw:core:read"));
    assert!(!chat.allows("grep", "openclaw:core:grep"));

    let mute = policy(agents_root(), Some("mute"));
    assert!(mute.allows_nothing());
    assert_eq!(strings(&mute.deny), ["exec"]);

    let plain = policy(agents_root(), Some("plain"));
    assert_eq!(plain, policy(agents_root(), None));
}

#[test]
fn unknown_agent_uses_the_global_policy_with_a_warning() {
    let resolved = resolve_policy(&agents_root(), Some("ghost"));
    assert_eq!(resolved.policy, policy(agents_root(), None));
    assert_eq!(
        resolved.warnings,
        vec![Warning {
            path: "agents.list".into(),
            field: String::new(),
            given: json!("ghost"),
            used: Value::Null,
            kind: WarningKind::UnknownAgent,
            message: "no agent \"ghost\" in agents.list; the global tools policy applies".into(),
        }]
    );
}

#[test]
fn malformed_pattern_lists() {
    // A non-array allow allows nothing (fail closed); a single string is one pattern.
    let r = resolve_policy(
        &json!({"tools": {"allow": 5, "deny": "exec", "approvals": {"require": {"x": 1}}}}),
        None,
    );
    assert_eq!(r.policy.allow, Some(vec![]));
    assert_eq!(strings(&r.policy.deny), ["exec"]);
    assert_eq!(r.policy.approvals.require, vec![]);
    let w = common::warning_tuples(&r.warnings);
    assert_eq!(
        w,
        vec![
            (
                "tools.allow",
                "allow",
                &json!(5),
                &json!([]),
                WarningKind::InvalidShape,
                "tools.allow must be an array of patterns; no tool is allowed"
            ),
            (
                "tools.deny",
                "deny",
                &json!("exec"),
                &json!(["exec"]),
                WarningKind::InvalidShape,
                "tools.deny must be an array of patterns; the string is used as one pattern"
            ),
            (
                "tools.approvals.require",
                "require",
                &json!({"x": 1}),
                &json!([]),
                WarningKind::InvalidShape,
                "tools.approvals.require must be an array of patterns; it is ignored"
            ),
        ]
    );
}

#[test]
fn malformed_patterns_are_dropped() {
    let r = resolve_policy(
        &json!({"tools": {"allow": ["read", 7, "", "  ", null, "grep"], "deny": [["x"]]}}),
        None,
    );
    assert_eq!(
        strings(r.policy.allow.as_deref().unwrap()),
        ["read", "grep"]
    );
    assert_eq!(r.policy.deny, vec![]);
    let w: Vec<(&str, &Value, WarningKind, &str)> = r
        .warnings
        .iter()
        .map(|w| (w.path.as_str(), &w.given, w.kind, w.message.as_str()))
        .collect();
    assert_eq!(
        w,
        vec![
            (
                "tools.allow[1]",
                &json!(7),
                WarningKind::InvalidValue,
                "tools.allow[1] must be a pattern string; it is ignored"
            ),
            (
                "tools.allow[2]",
                &json!(""),
                WarningKind::InvalidValue,
                "tools.allow[2] is an empty pattern; it is ignored"
            ),
            (
                "tools.allow[3]",
                &json!("  "),
                WarningKind::InvalidValue,
                "tools.allow[3] is an empty pattern; it is ignored"
            ),
            (
                "tools.allow[4]",
                &Value::Null,
                WarningKind::InvalidValue,
                "tools.allow[4] must be a pattern string; it is ignored"
            ),
            (
                "tools.deny[0]",
                &json!(["x"]),
                WarningKind::InvalidValue,
                "tools.deny[0] must be a pattern string; it is ignored"
            ),
        ]
    );
    assert!(r.warnings.iter().all(|w| w.used == Value::Null));
    assert_eq!(r.warnings[0].field, "allow");
    assert_eq!(r.warnings[4].field, "deny");

    // An allow whose every pattern is malformed allows nothing.
    let all_bad = resolve_policy(&json!({"tools": {"allow": [1, 2]}}), None);
    assert!(all_bad.policy.allows_nothing());
    assert_eq!(all_bad.warnings.len(), 2);
}

#[test]
fn malformed_objects_and_unknown_approval_keys() {
    assert_eq!(
        warnings(json!([1]), None),
        vec![(
            "".into(),
            "".into(),
            json!([1]),
            json!({}),
            WarningKind::InvalidShape
        )]
    );
    assert_eq!(
        warnings(json!({"tools": "all"}), None),
        vec![(
            "tools".into(),
            "".into(),
            json!("all"),
            json!({}),
            WarningKind::InvalidShape
        )]
    );
    let r = resolve_policy(
        &json!({"tools": {"approvals": ["write"]},
                "agents": {"list": [{"id": "a", "tools": {"approvals": {"require": ["x"], "requires": ["y"]}}}]}}),
        Some("a"),
    );
    assert_eq!(strings(&r.policy.approvals.require), ["x"]);
    assert_eq!(
        r.warnings,
        vec![
            Warning {
                path: "tools.approvals".into(),
                field: String::new(),
                given: json!(["write"]),
                used: json!({}),
                kind: WarningKind::InvalidShape,
                message: "tools.approvals must be an object; it is ignored".into(),
            },
            Warning {
                path: "agents.list[0].tools.approvals.requires".into(),
                field: "requires".into(),
                given: json!(["y"]),
                used: Value::Null,
                kind: WarningKind::UnknownField,
                message: "agents.list[0].tools.approvals has no field \"requires\"; it is ignored"
                    .into(),
            },
        ]
    );
    // An agent `tools` that is not an object, and an agents.list that is not an array.
    assert_eq!(
        warnings(
            json!({"agents": {"list": [{"id": "a", "tools": 3}]}}),
            Some("a")
        ),
        vec![(
            "agents.list[0].tools".into(),
            "".into(),
            json!(3),
            json!({}),
            WarningKind::InvalidShape
        )]
    );
    assert_eq!(
        warnings(json!({"agents": {"list": {"id": "a"}}}), Some("a")),
        vec![
            (
                "agents.list".into(),
                "".into(),
                json!({"id": "a"}),
                json!([]),
                WarningKind::InvalidShape
            ),
            (
                "agents.list".into(),
                "".into(),
                json!("a"),
                Value::Null,
                WarningKind::UnknownAgent
            ),
        ]
    );
    // A malformed agent allow is present, so it replaces the global one with nothing.
    let r = resolve_policy(
        &json!({"tools": {"allow": ["read"]}, "agents": {"list": [{"id": "a", "tools": {"allow": {}}}]}}),
        Some("a"),
    );
    assert!(r.policy.allows_nothing());
    assert_eq!(r.warnings[0].path, "agents.list[0].tools.allow");
    assert_eq!(r.warnings[0].kind, WarningKind::InvalidShape);
}

#[test]
fn policy_json_shape_round_trips() {
    let p = policy(
        json!({"tools": {"allow": [" read "], "deny": ["exec"], "approvals": {"require": ["w*"]}}}),
        None,
    );
    let value = serde_json::to_value(&p).unwrap();
    assert_eq!(
        value,
        json!({"allow": ["read"], "deny": ["exec"], "approvals": {"require": ["w*"]}})
    );
    let back: ToolPolicy = serde_json::from_value(value).unwrap();
    assert_eq!(back, p);
    assert_eq!(
        serde_json::to_value(ToolPolicy::default()).unwrap(),
        json!({"allow": null, "deny": [], "approvals": {"require": []}})
    );
}
