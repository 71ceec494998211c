//! Properties over arbitrary JSON: resolution never panics, every numeric field is inside its
//! clamp, and resolving the serialised resolved config gives the same config without warnings.

use codemode_config::{
    resolve, resolve_for_agent, CodeModeConfig, ConfigReport, Language, FIELD_NAMES, NUMERIC_FIELDS,
};
use proptest::prelude::*;
use serde_json::{json, Map, Number, Value};

/// Numbers around every interesting boundary, plus arbitrary ones.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..300_000_000).prop_map(Value::from),
        (-3i64..3).prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (0u32..100_000).prop_map(|n| json!(n as f64)),
        (0u32..1000).prop_map(|n| json!(n as f64 + 0.5)),
        prop::sample::select(
            NUMERIC_FIELDS
                .iter()
                .flat_map(|f| [f.min - 1, f.min, f.max, f.max + 1, f.default])
                .collect::<Vec<_>>()
        )
        .prop_map(Value::from),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        prop::sample::select(vec![
            "auto",
            "javascript",
            "typescript",
            "quickjs-wasi",
            "only",
            "",
            "100",
            "true",
        ])
        .prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(FIELD_NAMES.to_vec()).prop_map(str::to_string),
        1 => "[a-zA-Z]{0,6}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A `tools.codeMode` value: mostly objects of known fields, sometimes anything.
fn code_mode_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec((key(), json_value()), 0..14)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => json_value(),
    ]
}

fn root() -> impl Strategy<Value = Value> {
    let agent = (
        prop::sample::select(vec!["ops", "chat", "x"]),
        code_mode_value(),
    )
        .prop_map(|(id, cm)| json!({"id": id, "tools": {"codeMode": cm}}));
    prop_oneof![
        4 => (code_mode_value(), prop::collection::vec(agent, 0..4))
            .prop_map(|(cm, list)| json!({"tools": {"codeMode": cm}, "agents": {"list": list}})),
        1 => json_value(),
    ]
}

fn check_invariants(c: &CodeModeConfig) -> Result<(), TestCaseError> {
    for field in NUMERIC_FIELDS {
        let v = c.numeric(field.name).unwrap();
        prop_assert!(v >= field.min && v <= field.max, "{} = {v}", field.name);
    }
    prop_assert!(c.search_default_limit() <= c.max_search_limit());
    prop_assert!(!c.languages().is_empty() && c.languages().len() <= 2);
    prop_assert!(c.languages().len() == 1 || c.languages()[0] != c.languages()[1]);
    // Round trip: the serialised config resolves to itself, silently.
    let again = resolve(&c.to_value());
    prop_assert_eq!(&again.config, c);
    prop_assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    let typed: CodeModeConfig = serde_json::from_value(c.to_value()).unwrap();
    prop_assert_eq!(&typed, c);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        // Failures are printed with their minimal input; no regression files in the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn resolve_any_code_mode_value(value in code_mode_value()) {
        let r = resolve(&value);
        check_invariants(&r.config)?;
        // Every warning names a path under tools.codeMode and a used value.
        for w in &r.warnings {
            prop_assert!(w.path.starts_with("tools.codeMode"));
            prop_assert!(!w.message.is_empty());
        }
        // A value used as given produces no warning: fields without a warning keep their input.
        if let Value::Object(map) = &value {
            let out = r.config.to_value();
            for (k, v) in map {
                let warned = r.warnings.iter().any(|w| &w.field == k);
                if FIELD_NAMES.contains(&k.as_str()) && !warned {
                    let used = &out[k.as_str()];
                    prop_assert!(
                        used == v || used.as_f64() == v.as_f64(),
                        "{} given {} used {}", k, v, used
                    );
                }
            }
        }
    }

    #[test]
    fn resolve_any_root(root in root(), agent in prop::option::of(prop::sample::select(vec!["ops", "chat", "x", "missing"]))) {
        let r = resolve_for_agent(&root, agent);
        check_invariants(&r.config)?;
        let report = ConfigReport::from_root(&root, agent);
        // Through a Value: serde_json's text parser may move a float by one ulp (no
        // float_roundtrip feature), which is not what this checks.
        let back: ConfigReport = serde_json::from_value(serde_json::to_value(&report).unwrap()).unwrap();
        prop_assert_eq!(&back, &report);
        let text = report.to_json_pretty();
        let parsed: ConfigReport = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(parsed.config, report.config);
    }

    #[test]
    fn languages_keep_first_positions(items in prop::collection::vec(
        prop::sample::select(vec!["javascript", "typescript", "python", "JavaScript"]), 0..6)) {
        let c = resolve(&json!({"languages": items})).config;
        let mut expected: Vec<Language> = Vec::new();
        for item in &items {
            if let Some(l) = Language::from_name(item) {
                if !expected.contains(&l) { expected.push(l); }
            }
        }
        if expected.is_empty() { expected = vec![Language::JavaScript, Language::TypeScript]; }
        prop_assert_eq!(c.languages(), expected);
    }
}
