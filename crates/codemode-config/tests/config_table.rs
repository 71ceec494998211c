//! Every row of the spec's config table (docs/contract/config.md#configuration, docs/contract/config.md#s1), with exact
//! values and the warning each ignored or clamped value produces.

use codemode_config::{
    resolve, resolve_for_agent, CodeModeConfig, Enabled, GuestRuntime, Language, Mode, WarningKind,
    FIELD_NAMES, NUMERIC_FIELDS,
};
use serde_json::{json, Value};

/// (field, default, min, max) exactly as the spec's table, written out independently of the
/// crate's constants.
const TABLE: [(&str, u64, u64, u64); 8] = [
    ("timeoutMs", 10000, 100, 60000),
    ("memoryLimitBytes", 67108864, 1048576, 1073741824),
    ("maxOutputBytes", 65536, 1024, 10485760),
    ("maxSnapshotBytes", 10485760, 1024, 268435456),
    ("maxPendingToolCalls", 16, 1, 128),
    ("snapshotTtlSeconds", 900, 1, 86400),
    ("searchDefaultLimit", 8, 1, 50),
    ("maxSearchLimit", 50, 1, 50),
];

fn one(field: &str, value: Value) -> (u64, Vec<(String, Value, Value, WarningKind)>) {
    let resolved = resolve(&json!({ field: value }));
    let got = resolved.config.numeric(field).unwrap();
    let warnings = resolved
        .warnings
        .into_iter()
        .map(|w| (w.path, w.given, w.used, w.kind))
        .collect();
    (got, warnings)
}

#[test]
fn constants_match_the_spec_table() {
    for ((name, default, min, max), field) in TABLE.iter().zip(NUMERIC_FIELDS) {
        assert_eq!(
            (*name, *default, *min, *max),
            (field.name, field.default, field.min, field.max)
        );
    }
}

#[test]
fn defaults() {
    let c = CodeModeConfig::default();
    assert_eq!(c.enabled(), Enabled::Auto);
    assert_eq!(c.runtime(), GuestRuntime::QuickjsWasi);
    assert_eq!(c.mode(), Mode::Only);
    assert_eq!(
        c.languages(),
        vec![Language::JavaScript, Language::TypeScript]
    );
    for (name, default, _, _) in TABLE {
        assert_eq!(c.numeric(name), Some(default), "{name}");
    }
    assert_eq!(c.timeout(), std::time::Duration::from_millis(10000));
    assert_eq!(c.snapshot_ttl(), std::time::Duration::from_secs(900));
    // {} and absent fields resolve to the defaults, silently.
    let r = resolve(&json!({}));
    assert_eq!(r.config, c);
    assert!(r.warnings.is_empty());
    assert_eq!(resolve_for_agent(&json!({}), None), resolve(&json!({})));
}

#[test]
fn every_numeric_row() {
    for (name, default, min, max) in TABLE {
        let path = format!("tools.codeMode.{name}");
        // In range: used as given, no warning (min, max, and the default itself).
        for v in [min, max, default] {
            assert_eq!(one(name, json!(v)), (v, vec![]), "{name}={v}");
        }
        // Lower clamp (only where a positive integer can be below the minimum).
        if min > 1 {
            assert_eq!(
                one(name, json!(min - 1)),
                (
                    min,
                    vec![(
                        path.clone(),
                        json!(min - 1),
                        json!(min),
                        WarningKind::BelowMinimum
                    )]
                ),
                "{name} below min"
            );
            assert_eq!(one(name, json!(1)).0, min, "{name}=1");
        }
        // Upper clamp.
        let kind = if name == "searchDefaultLimit" {
            WarningKind::AboveMaxSearchLimit
        } else {
            WarningKind::AboveMaximum
        };
        assert_eq!(
            one(name, json!(max + 1)),
            (max, vec![(path.clone(), json!(max + 1), json!(max), kind)]),
            "{name} above max"
        );
        assert_eq!(one(name, json!(u64::MAX)).0, max, "{name}=u64::MAX");
        assert_eq!(one(name, json!(1e300)).0, max, "{name}=1e300");
        // Not a positive integer: the default, then the clamp.
        for bad in [
            json!(1.5),
            json!(0),
            json!(0.0),
            json!(-5),
            json!(-1.0),
            json!(i64::MIN),
            json!("100"),
            json!(null),
            json!(true),
            json!([100]),
            json!({"value": 100}),
        ] {
            assert_eq!(
                one(name, bad.clone()),
                (
                    default,
                    vec![(
                        path.clone(),
                        bad.clone(),
                        json!(default),
                        WarningKind::NotPositiveInteger
                    )]
                ),
                "{name}={bad}"
            );
        }
        // An integral float counts as the integer (JavaScript Number.isInteger).
        assert_eq!(one(name, json!(min as f64)), (min, vec![]), "{name} float");
    }
}

#[test]
fn behaviour_doc_number_examples() {
    // "0, -5, 1.5 and "100" give the default, timeout 90000 gives 60000, and 50 gives 100."
    for bad in [json!(0), json!(-5), json!(1.5), json!("100")] {
        assert_eq!(one("timeoutMs", bad).0, 10000);
    }
    assert_eq!(one("timeoutMs", json!(90000)).0, 60000);
    assert_eq!(one("timeoutMs", json!(50)).0, 100);
}

#[test]
fn search_default_limit_is_clamped_to_max_search_limit() {
    // docs/contract/examples.md#e1: {enabled: true, maxSearchLimit: 3} → searchDefaultLimit 3, maxSearchLimit 3, silently
    // (the user gave no searchDefaultLimit).
    let r = resolve(&json!({"enabled": true, "maxSearchLimit": 3}));
    assert_eq!(r.config.enabled(), Enabled::On);
    assert_eq!(
        (r.config.search_default_limit(), r.config.max_search_limit()),
        (3, 3)
    );
    assert!(r.warnings.is_empty());

    // Given above maxSearchLimit → maxSearchLimit, with a warning.
    let r = resolve(&json!({"searchDefaultLimit": 20, "maxSearchLimit": 10}));
    assert_eq!(
        (r.config.search_default_limit(), r.config.max_search_limit()),
        (10, 10)
    );
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].kind, WarningKind::AboveMaxSearchLimit);
    assert_eq!(r.warnings[0].used, json!(10));

    // Equal is fine; below is fine.
    let r = resolve(&json!({"searchDefaultLimit": 10, "maxSearchLimit": 10}));
    assert_eq!((r.config.search_default_limit(), r.warnings.len()), (10, 0));
    let r = resolve(&json!({"searchDefaultLimit": 2, "maxSearchLimit": 10}));
    assert_eq!((r.config.search_default_limit(), r.warnings.len()), (2, 0));

    // maxSearchLimit is clamped first (99 → 50), then searchDefaultLimit to it.
    let r = resolve(&json!({"searchDefaultLimit": 70, "maxSearchLimit": 99}));
    assert_eq!(
        (r.config.search_default_limit(), r.config.max_search_limit()),
        (50, 50)
    );
    let kinds: Vec<_> = r
        .warnings
        .iter()
        .map(|w| (w.field.as_str(), w.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("searchDefaultLimit", WarningKind::AboveMaxSearchLimit),
            ("maxSearchLimit", WarningKind::AboveMaximum)
        ]
    );

    // An invalid searchDefaultLimit falls back to 8, then is clamped to maxSearchLimit.
    let r = resolve(&json!({"searchDefaultLimit": 0, "maxSearchLimit": 5}));
    assert_eq!(r.config.search_default_limit(), 5);
    assert_eq!(r.warnings[0].used, json!(5));
    assert_eq!(r.warnings[0].kind, WarningKind::NotPositiveInteger);

    // An invalid maxSearchLimit falls back to 50.
    let r = resolve(&json!({"searchDefaultLimit": 30, "maxSearchLimit": "3"}));
    assert_eq!(
        (r.config.search_default_limit(), r.config.max_search_limit()),
        (30, 50)
    );
}

#[test]
fn enabled_forms() {
    let cases = [
        (json!(true), Enabled::On, 0),
        (json!(false), Enabled::Off, 0),
        (json!("auto"), Enabled::Auto, 0),
        (json!({}), Enabled::Auto, 0),
        (json!({"timeoutMs": 1234}), Enabled::Auto, 0),
        (json!({"enabled": true}), Enabled::On, 0),
        (json!({"enabled": false}), Enabled::Off, 0),
        (json!({"enabled": "auto"}), Enabled::Auto, 0),
        // Garbage values of enabled → "auto", with a warning.
        (json!({"enabled": "true"}), Enabled::Auto, 1),
        (json!({"enabled": 1}), Enabled::Auto, 1),
        (json!({"enabled": null}), Enabled::Auto, 1),
        (json!({"enabled": "AUTO"}), Enabled::Auto, 1),
        // Garbage codeMode values → {}, with a warning.
        (json!("on"), Enabled::Auto, 1),
        (json!("Auto"), Enabled::Auto, 1),
        (json!(1), Enabled::Auto, 1),
        (json!(null), Enabled::Auto, 1),
        (json!([true]), Enabled::Auto, 1),
    ];
    for (value, enabled, warnings) in cases {
        let r = resolve(&value);
        assert_eq!(r.config.enabled(), enabled, "{value}");
        assert_eq!(r.warnings.len(), warnings, "{value}: {:?}", r.warnings);
        if warnings == 0 && (value.is_boolean() || value == json!("auto")) {
            // The short forms change nothing else.
            assert_eq!(
                r.config,
                CodeModeConfig::default().set_enabled(enabled).clone()
            );
        }
    }
    let r = resolve(&json!(42));
    assert_eq!(r.warnings[0].kind, WarningKind::InvalidShape);
    assert_eq!(r.warnings[0].path, "tools.codeMode");
    assert_eq!(r.warnings[0].used, json!({}));
    let r = resolve(&json!({"enabled": "yes"}));
    assert_eq!(
        (r.warnings[0].kind, &r.warnings[0].used),
        (WarningKind::InvalidValue, &json!("auto"))
    );
}

#[test]
fn runtime_and_mode_are_constants() {
    let r = resolve(&json!({"runtime": "quickjs-wasi", "mode": "only"}));
    assert!(r.warnings.is_empty());
    let r = resolve(&json!({"runtime": "v8", "mode": "all"}));
    assert_eq!(r.config.runtime(), GuestRuntime::QuickjsWasi);
    assert_eq!(r.config.mode(), Mode::Only);
    let w: Vec<_> = r
        .warnings
        .iter()
        .map(|w| (w.field.as_str(), w.given.clone(), w.used.clone(), w.kind))
        .collect();
    assert_eq!(
        w,
        [
            (
                "runtime",
                json!("v8"),
                json!("quickjs-wasi"),
                WarningKind::InvalidValue
            ),
            (
                "mode",
                json!("all"),
                json!("only"),
                WarningKind::InvalidValue
            ),
        ]
    );
    assert_eq!(resolve(&json!({"runtime": null})).warnings.len(), 1);
}

#[test]
fn languages_edge_cases() {
    use Language::{JavaScript as J, TypeScript as T};
    let cases: Vec<(Value, Vec<Language>, Option<WarningKind>)> = vec![
        (json!(["javascript", "typescript"]), vec![J, T], None),
        (json!(["typescript", "javascript"]), vec![T, J], None),
        (json!(["typescript"]), vec![T], None),
        (json!(["javascript"]), vec![J], None),
        // De-duplicated, first position kept.
        (
            json!(["typescript", "javascript", "typescript"]),
            vec![T, J],
            Some(WarningKind::LanguagesFiltered),
        ),
        (
            json!(["javascript", "javascript"]),
            vec![J],
            Some(WarningKind::LanguagesFiltered),
        ),
        // Unknown names, wrong case and non-strings are dropped.
        (
            json!(["python", "typescript", "JavaScript", 1, null]),
            vec![T],
            Some(WarningKind::LanguagesFiltered),
        ),
        // Empty (or empty after filtering) → default.
        (json!([]), vec![J, T], Some(WarningKind::LanguagesFiltered)),
        (
            json!(["ts", "js"]),
            vec![J, T],
            Some(WarningKind::LanguagesFiltered),
        ),
        // Not an array → default.
        (
            json!("typescript"),
            vec![J, T],
            Some(WarningKind::InvalidValue),
        ),
        (json!(null), vec![J, T], Some(WarningKind::InvalidValue)),
        (
            json!({"0": "typescript"}),
            vec![J, T],
            Some(WarningKind::InvalidValue),
        ),
    ];
    for (given, expected, warning) in cases {
        let r = resolve(&json!({ "languages": given }));
        assert_eq!(r.config.languages(), expected, "{given}");
        assert_eq!(r.warnings.first().map(|w| w.kind), warning, "{given}");
        if let Some(w) = r.warnings.first() {
            assert_eq!(w.given, given);
            assert_eq!(w.used, serde_json::to_value(&expected).unwrap());
        }
    }
    let c = resolve(&json!({"languages": ["typescript"]})).config;
    assert!(c.allows(T) && !c.allows(J));
}

#[test]
fn unknown_fields_are_reported_and_ignored() {
    let r = resolve(&json!({"timeoutMS": 5, "enabled": true, "swarm": true}));
    assert_eq!(
        r.config,
        CodeModeConfig::default().set_enabled(Enabled::On).clone()
    );
    let w: Vec<_> = r
        .warnings
        .iter()
        .map(|w| (w.path.as_str(), w.kind))
        .collect();
    assert_eq!(
        w,
        [
            ("tools.codeMode.timeoutMS", WarningKind::UnknownField),
            ("tools.codeMode.swarm", WarningKind::UnknownField)
        ]
    );
    for name in FIELD_NAMES {
        assert!(resolve(&json!({ name: null }))
            .warnings
            .iter()
            .all(|w| w.kind != WarningKind::UnknownField));
    }
}

#[test]
fn e1_worked_examples() {
    let r = resolve_for_agent(&json!({"tools": {"codeMode": true}}), None);
    assert_eq!(r.config.enabled(), Enabled::On);

    let r = resolve_for_agent(
        &json!({"tools": {"codeMode": {"timeoutMs": 1234, "languages": ["typescript"]}}}),
        None,
    );
    assert_eq!(r.config.enabled(), Enabled::Auto);
    assert_eq!(r.config.runtime(), GuestRuntime::QuickjsWasi);
    assert_eq!(r.config.mode(), Mode::Only);
    assert_eq!(r.config.timeout_ms(), 1234);
    assert_eq!(r.config.languages(), vec![Language::TypeScript]);
    assert!(r.warnings.is_empty());

    let r = resolve(&json!({"enabled": true}));
    assert_eq!(r.config.enabled(), Enabled::On);

    let r = resolve(&json!({"enabled": true, "maxSearchLimit": 3}));
    assert_eq!(r.config.search_default_limit(), 3);
    assert_eq!(r.config.max_search_limit(), 3);
}

fn e2_root() -> Value {
    json!({
        "tools": {"codeMode": {"enabled": false, "timeoutMs": 1234, "searchDefaultLimit": 6}},
        "agents": {"list": [
            {"id": "ops", "tools": {"codeMode": {"enabled": true, "searchDefaultLimit": 4}}},
            {"id": "chat", "tools": {"codeMode": false}}
        ]}
    })
}

#[test]
fn e2_per_agent_overrides() {
    let root = e2_root();

    let ops = resolve_for_agent(&root, Some("ops"));
    assert_eq!(ops.config.enabled(), Enabled::On);
    assert_eq!(ops.config.timeout_ms(), 1234);
    assert_eq!(ops.config.search_default_limit(), 4);
    assert!(ops.warnings.is_empty());

    // Agent `false` overrides only `enabled`: the global timeout stays.
    let chat = resolve_for_agent(&root, Some("chat"));
    assert_eq!(chat.config.enabled(), Enabled::Off);
    assert_eq!(chat.config.timeout_ms(), 1234);
    assert_eq!(chat.config.search_default_limit(), 6);
    assert!(chat.warnings.is_empty());

    // Unknown agent → the global value, with a warning naming the id.
    let missing = resolve_for_agent(&root, Some("missing"));
    assert_eq!(missing.config, resolve_for_agent(&root, None).config);
    assert_eq!(missing.config.enabled(), Enabled::Off);
    assert_eq!(missing.warnings.len(), 1);
    assert_eq!(missing.warnings[0].kind, WarningKind::UnknownAgent);
    assert_eq!(missing.warnings[0].given, json!("missing"));
}

#[test]
fn per_agent_merge_cases() {
    // An agent object without `enabled` inherits the global one.
    let root = json!({
        "tools": {"codeMode": true},
        "agents": {"list": [
            {"id": "a", "tools": {"codeMode": {"timeoutMs": 500}}},
            {"id": "b"},
            {"id": "c", "tools": {}},
            {"id": "d", "tools": {"codeMode": "auto"}},
            {"id": "e", "tools": {"codeMode": 7}},
            {"id": "f", "tools": {"codeMode": {"timeoutMs": 0}}},
            {"id": "a", "tools": {"codeMode": false}},
        ]}
    });
    let a = resolve_for_agent(&root, Some("a"));
    assert_eq!(
        (a.config.enabled(), a.config.timeout_ms()),
        (Enabled::On, 500)
    );
    // Entries without tools.codeMode use the global value.
    for id in ["b", "c"] {
        let r = resolve_for_agent(&root, Some(id));
        assert_eq!(
            r.config,
            CodeModeConfig::default().set_enabled(Enabled::On).clone()
        );
        assert!(r.warnings.is_empty());
    }
    assert_eq!(
        resolve_for_agent(&root, Some("d")).config.enabled(),
        Enabled::Auto
    );
    // A garbage agent value counts as {} (so the global value applies), with a warning at its
    // path.
    let e = resolve_for_agent(&root, Some("e"));
    assert_eq!(e.config.enabled(), Enabled::On);
    assert_eq!(e.warnings[0].path, "agents.list[4].tools.codeMode");
    assert_eq!(e.warnings[0].kind, WarningKind::InvalidShape);
    // A value that came from the agent reports the agent's path.
    let f = resolve_for_agent(&root, Some("f"));
    assert_eq!(f.config.timeout_ms(), 10000);
    assert_eq!(
        f.warnings[0].path,
        "agents.list[5].tools.codeMode.timeoutMs"
    );
    // The first matching entry wins.
    assert_eq!(
        resolve_for_agent(&root, Some("a")).config.enabled(),
        Enabled::On
    );

    // An agent overriding a clamped global value replaces it, and the global warning goes away.
    let root = json!({
        "tools": {"codeMode": {"timeoutMs": 5, "maxOutputBytes": 5}},
        "agents": {"list": [{"id": "x", "tools": {"codeMode": {"timeoutMs": 2000}}}]}
    });
    let x = resolve_for_agent(&root, Some("x"));
    assert_eq!(
        (x.config.timeout_ms(), x.config.max_output_bytes()),
        (2000, 1024)
    );
    let paths: Vec<_> = x.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(paths, ["tools.codeMode.maxOutputBytes"]);
}

#[test]
fn malformed_roots() {
    let cases = [
        (json!([]), ""),
        (json!({"tools": 1}), "tools"),
        (json!({"tools": {}, "agents": []}), "agents"),
        (json!({"tools": {}, "agents": {"list": {}}}), "agents.list"),
        (
            json!({"agents": {"list": [{"id": "ops", "tools": "x"}]}}),
            "agents.list[0].tools",
        ),
    ];
    for (root, path) in cases {
        let r = resolve_for_agent(&root, Some("ops"));
        assert_eq!(r.config, CodeModeConfig::default(), "{root}");
        assert_eq!(r.warnings[0].path, path, "{root}");
        assert_eq!(r.warnings[0].kind, WarningKind::InvalidShape, "{root}");
    }
    // Without an agent id, `agents` is not looked at.
    assert!(resolve_for_agent(&json!({"agents": 5}), None)
        .warnings
        .is_empty());
    // Non-object list entries and entries without a string id are skipped.
    let r = resolve_for_agent(
        &json!({"agents": {"list": [1, {"id": 2}, {"id": "ops", "tools": {"codeMode": true}}]}}),
        Some("ops"),
    );
    assert_eq!(r.config.enabled(), Enabled::On);
}

#[test]
fn serialises_to_camel_case_and_back() {
    let c =
        resolve(&json!({"enabled": false, "timeoutMs": 2500, "languages": ["typescript"]})).config;
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(
        v,
        json!({
            "enabled": false,
            "runtime": "quickjs-wasi",
            "mode": "only",
            "languages": ["typescript"],
            "timeoutMs": 2500,
            "memoryLimitBytes": 67108864,
            "maxOutputBytes": 65536,
            "maxSnapshotBytes": 10485760,
            "maxPendingToolCalls": 16,
            "snapshotTtlSeconds": 900,
            "searchDefaultLimit": 8,
            "maxSearchLimit": 50
        })
    );
    let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, FIELD_NAMES);
    let back: CodeModeConfig = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(back, c);
    assert_eq!(resolve(&v).config, c);
    assert!(resolve(&v).warnings.is_empty());
    // Deserialising goes through resolution, so invariants hold.
    let clamped: CodeModeConfig = serde_json::from_str(r#"{"timeoutMs": 1}"#).unwrap();
    assert_eq!(clamped.timeout_ms(), 100);
    assert_eq!(serde_json::to_value(Enabled::Auto).unwrap(), json!("auto"));
    assert!(serde_json::from_value::<Enabled>(json!("yes")).is_err());
}
