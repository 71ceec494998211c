//! Property tests: hints never panic and respect their bounds; the quick index is bounded,
//! deterministic and description-free; search results are the spec's top-`limit` ranking.

use codemode_catalog::{
    input_hint, output_hint, Catalog, SearchLimits, Source, ToolOrigin, ToolSpec,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Keys, including non-identifiers, unicode and long ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,8}",
        "[ -~]{0,12}",
        "\\PC{0,6}",
        (130usize..400).prop_map(|n| "k".repeat(n)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!(7)),
        prop::sample::select(vec![
            "string", "number", "integer", "boolean", "null", "object", "array", "bogus"
        ])
        .prop_map(|t| json!({"type": t})),
        prop::collection::vec(
            prop_oneof![
                any::<i64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                "\\PC{0,20}".prop_map(Value::from),
                Just(Value::Null),
                Just(json!({"x": 1})),
            ],
            0..12
        )
        .prop_map(|values| json!({"enum": values})),
        "\\PC{0,120}".prop_map(|s| json!({"const": s})),
        Just(json!({"$ref": "#"})),
        Just(json!({"type": "string", "nullable": true})),
        Just(json!({"nullable": "yes"})),
    ]
}

/// Schema-like JSON: objects built from the keywords the renderer understands, mixed with junk.
fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(8, 256, 24, |inner| {
        prop_oneof![
            (
                prop::collection::vec((key(), inner.clone()), 0..24),
                prop::collection::vec(key(), 0..6),
                prop::option::of(prop_oneof![
                    Just(json!(false)),
                    Just(json!(true)),
                    inner.clone()
                ]),
            )
                .prop_map(|(props, required, additional)| {
                    let mut map = Map::new();
                    map.insert("type".into(), json!("object"));
                    map.insert(
                        "properties".into(),
                        Value::Object(props.into_iter().collect()),
                    );
                    map.insert("required".into(), json!(required));
                    if let Some(a) = additional {
                        map.insert("additionalProperties".into(), a);
                    }
                    Value::Object(map)
                }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            prop::collection::vec(inner.clone(), 0..10).prop_map(|v| json!({"anyOf": v})),
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|v| json!({"oneOf": v, "type": "string"})),
            prop::collection::vec(
                prop::sample::select(vec!["string", "null", "object", "array", "integer"]),
                0..6
            )
            .prop_map(|t| json!({"type": t, "additionalProperties": false})),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"allOf": [a], "items": b})),
        ]
    })
}

fn spec_strategy() -> impl Strategy<Value = ToolSpec> {
    (
        prop_oneof![
            "[a-z_]{1,12}",
            "[ -~&&[^#]]{1,20}",
            (1usize..3000).prop_map(|n| format!("t_{}", "z".repeat(n))),
        ],
        0usize..6,
        prop::option::of(schema()),
        prop::option::of(schema()),
        any::<u32>(),
    )
        .prop_map(|(name, origin, parameters, output_schema, tag)| {
            let origin = match origin {
                0 => ToolOrigin::Core,
                1 => ToolOrigin::Plugin {
                    plugin_id: "bundled-plugin".into(),
                    bundled: true,
                    replay_safe: false,
                },
                2 => ToolOrigin::Plugin {
                    plugin_id: format!("owner-{}", "o".repeat((tag % 200) as usize)),
                    bundled: false,
                    replay_safe: true,
                },
                3 => ToolOrigin::Mcp {
                    server_name: "srv".into(),
                    safe_server_name: "srv".into(),
                    plugin_id: None,
                    tool_name: None,
                    operation: Default::default(),
                },
                _ => ToolOrigin::Client {
                    owner: Some("app".into()),
                },
            };
            let mut spec = ToolSpec::new(
                name,
                format!("#DESCRIPTION-{tag}# never in the index"),
                origin,
            );
            spec.parameters = parameters;
            spec.output_schema = output_schema;
            spec
        })
}

/// Drops later specs whose id would repeat, so the set builds.
fn dedupe(specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let mut seen = std::collections::HashSet::new();
    specs
        .into_iter()
        .filter(|s| {
            let owner = match &s.origin {
                ToolOrigin::Core => "core".to_string(),
                ToolOrigin::Plugin { plugin_id, .. } => format!("p:{plugin_id}"),
                ToolOrigin::Mcp { .. } => "mcp".into(),
                ToolOrigin::Client { .. } => "client".into(),
            };
            !s.name.trim().is_empty() && seen.insert((owner, s.name.clone()))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn hints_never_panic_and_stay_bounded(schema in schema()) {
        let input = input_hint(Some(&schema));
        prop_assert!(utf16(&input) <= 300, "{}", input);
        prop_assert!(!input.is_empty());
        if let Some(output) = output_hint(&schema) {
            prop_assert!(utf16(&output) <= 850, "{}", output);
        }
        // Deterministic.
        prop_assert_eq!(input_hint(Some(&schema)), input);
    }
}

// Catalog-level properties build whole catalogs (compiling every declared output schema), so
// they run fewer cases.
proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn quick_index_is_bounded_deterministic_and_description_free(
        specs in prop::collection::vec(spec_strategy(), 0..120),
        rotate in 0usize..1000,
    ) {
        let specs = dedupe(specs);
        let catalog = Catalog::build(specs.clone(), &SearchLimits::default()).unwrap();
        let mut permuted = specs.clone();
        if !permuted.is_empty() {
            let k = rotate % permuted.len();
            permuted.rotate_left(k);
        }
        let again = Catalog::build(permuted, &SearchLimits::default()).unwrap();
        prop_assert_eq!(catalog.quick_index(), again.quick_index());

        let openclaw = catalog.entries().iter().filter(|e| e.source() == Source::Openclaw).count();
        match catalog.quick_index() {
            None => prop_assert_eq!(openclaw, 0),
            Some(index) => {
                prop_assert!(utf16(index) <= 8000);
                prop_assert!(!index.contains("#DESCRIPTION-"));
                let lines = index.lines().filter(|l| l.starts_with("- \"")).count();
                let omitted = openclaw - lines;
                if omitted > 0 {
                    let footer = format!("\n\n{omitted} additional OpenClaw/plugin tools omitted from this prompt index. Use ALL_TOOLS or tools.search inside exec to find them.");
                    prop_assert!(index.ends_with(&footer));
                } else {
                    prop_assert!(index.ends_with("\n\nUse these exact ids with tools.callValue; use ALL_TOOLS or tools.search inside exec when lookup is ambiguous."));
                }
            }
        }
        // Every compact entry respects the hint bounds and trust rules.
        for entry in catalog.entries() {
            let compact = entry.compact();
            prop_assert!(utf16(&compact.input) <= 300);
            if entry.source() != Source::Openclaw {
                prop_assert_eq!(compact.input.as_str(), "unknown");
                prop_assert!(compact.output.is_none());
            }
        }
    }

    #[test]
    fn search_is_a_consistent_ranking(
        specs in prop::collection::vec(spec_strategy(), 0..60),
        query in prop_oneof!["[a-z_ :]{0,12}", "\\PC{0,10}", Just(String::new())],
        limit in prop::option::of(1u64..80),
        max in 1u32..=50,
    ) {
        let limits = SearchLimits { max_search_limit: max, search_default_limit: max.min(8) };
        let catalog = Catalog::build(dedupe(specs), &limits).unwrap();
        let limit_value = limit.map(Value::from);
        let hits = catalog.search(&Value::String(query.clone()), limit_value.as_ref()).unwrap();
        let cap = limit.map_or(limits.search_default_limit as usize, |l| (l as usize).min(max as usize));
        prop_assert!(hits.len() <= cap);
        let all = catalog.all_tools();
        let ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
        // Guest-visible entries only, each at most once.
        for hit in &hits {
            prop_assert!(all.contains(hit));
        }
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        prop_assert_eq!(unique.len(), ids.len());
        // A query without a letter or digit lists the catalog in order, after an entry whose id
        // or name it is.
        let whole = query.trim().to_lowercase();
        if !query.chars().any(char::is_alphanumeric) {
            let exact = |e: &&codemode_catalog::CompactEntry| {
                e.id.to_lowercase() == whole || e.name.to_lowercase() == whole
            };
            let expected: Vec<String> = all
                .iter()
                .filter(exact)
                .chain(all.iter().filter(|e| !exact(e)))
                .take(cap)
                .map(|e| e.id.clone())
                .collect();
            prop_assert_eq!(&ids, &expected);
        }
        // An exact id comes first; an exact name is in the first hits.
        if let Some(exact) = all.iter().find(|e| e.id.to_lowercase() == whole) {
            prop_assert_eq!(&ids[0], &exact.id);
        } else if let Some(exact) = all.iter().find(|e| e.name.to_lowercase() == whole) {
            let named = all.iter().filter(|e| e.name.to_lowercase() == whole).count();
            prop_assert!(ids[..named.min(cap)].contains(&exact.id));
        }
        // The ranking is one order: every shorter limit gives a prefix of it.
        for shorter in 1..=ids.len() {
            let prefix: Vec<String> = catalog
                .search_entries(&query, shorter)
                .into_iter()
                .map(|e| e.id().to_string())
                .collect();
            prop_assert_eq!(&prefix[..], &ids[..shorter]);
        }
    }
}
