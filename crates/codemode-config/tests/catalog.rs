//! Provider catalog tiers: the bundled data, shared-model grouping and validation.

use codemode_config::{
    weights_name, CatalogProblem, CodeModeTier, ProviderCatalogs, BUNDLED_CATALOGS_JSON,
};
use std::collections::BTreeSet;

#[test]
fn bundled_catalogs_pass_validation() {
    let catalogs = ProviderCatalogs::from_json(BUNDLED_CATALOGS_JSON).unwrap();
    let problems = catalogs.validate();
    assert!(
        problems.is_empty(),
        "{}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(&catalogs, ProviderCatalogs::bundled());
}

#[test]
fn bundled_preferred_table_is_the_specs() {
    // The docs/contract/config.md#preferred-models table, written out independently.
    let spec: &[(&str, &[&str])] = &[
        (
            "anthropic",
            &[
                "claude-fable-5",
                "claude-opus-5",
                "claude-sonnet-5",
                "claude-mythos-5",
                "claude-opus-4-8",
                "claude-haiku-4-5",
            ],
        ),
        ("deepseek", &["deepseek-v4-pro", "deepseek-v4-flash"]),
        (
            "google",
            &[
                "gemini-3-flash-preview",
                "gemini-3.1-pro-preview",
                "gemini-3.1-flash-lite",
                "gemini-3.5-flash",
                "gemini-3.5-flash-lite",
                "gemini-3.6-flash",
            ],
        ),
        ("kimi", &["k3", "k3-256k"]),
        ("minimax", &["MiniMax-M3"]),
        ("moonshot", &["kimi-k3"]),
        (
            "openai",
            &[
                "gpt-5.6",
                "gpt-5.6-sol",
                "gpt-5.6-terra",
                "gpt-5.6-luna",
                "gpt-5.5",
                "gpt-5.5-pro",
            ],
        ),
        ("xiaomi", &["mimo-v2.5"]),
        ("zai", &["glm-5.2", "glm-5.1"]),
    ];
    let want: Vec<(&str, &str)> = spec
        .iter()
        .flat_map(|(p, ms)| ms.iter().map(move |m| (*p, *m)))
        .collect();
    assert_eq!(ProviderCatalogs::bundled().preferred(), want);
}

#[test]
fn resellers_declare_capable_for_first_party_preferred_weights() {
    let resellers = [
        "baseten",
        "deepinfra",
        "github-copilot",
        "gmi",
        "novita",
        "nvidia",
        "ollama-cloud",
        "opencode",
        "opencode-go",
        "qianfan",
        "together",
        "venice",
        "volcengine-plan",
    ];
    let catalogs = ProviderCatalogs::bundled();
    let preferred_weights: BTreeSet<String> = catalogs
        .preferred()
        .iter()
        .map(|(p, m)| catalogs.model(p, m).unwrap().weights_name())
        .collect();
    for reseller in resellers {
        let catalog = catalogs
            .catalog(reseller)
            .unwrap_or_else(|| panic!("{reseller}"));
        assert!(!catalog.models.is_empty(), "{reseller}");
        for model in &catalog.models {
            assert_eq!(
                model.compat.code_mode,
                Some(CodeModeTier::Capable),
                "{reseller}/{}",
                model.id
            );
            assert!(
                preferred_weights.contains(&model.weights_name()),
                "{reseller}/{} groups with no first-party preferred row",
                model.id
            );
        }
    }
    let providers: Vec<_> = catalogs
        .catalogs
        .iter()
        .map(|c| c.provider.as_str())
        .collect();
    assert_eq!(providers.len(), 9 + resellers.len());
}

#[test]
fn spec_grouping_examples() {
    assert_eq!(weights_name("novita/moonshotai/kimi-k3"), "kimi-k3");
    assert_eq!(weights_name("nvidia/z-ai/glm-5.2"), "glm-5.2");
    assert_eq!(
        weights_name("together/deepseek-ai/DeepSeek-V4-Pro"),
        "deepseek-v4-pro"
    );
    assert_eq!(weights_name("MiniMax-M3"), "minimax-m3");
    let catalogs = ProviderCatalogs::bundled();
    let group = |key: &str| -> Vec<String> {
        catalogs
            .groups()
            .into_iter()
            .find(|g| g.weights == key)
            .unwrap()
            .rows
            .into_iter()
            .map(|r| format!("{}/{}", r.provider, r.id))
            .collect()
    };
    let kimi = group("kimi-k3");
    // The kimi catalog's k3 joins through its upstreamModel marker.
    for row in [
        "moonshot/kimi-k3",
        "kimi/k3",
        "novita/moonshotai/kimi-k3",
        "together/moonshotai/Kimi-K3",
    ] {
        assert!(kimi.contains(&row.to_string()), "{row} in {kimi:?}");
    }
    assert!(group("glm-5.2").contains(&"nvidia/z-ai/glm-5.2".to_string()));
    assert!(group("deepseek-v4-pro").contains(&"together/deepseek-ai/DeepSeek-V4-Pro".to_string()));
    // model_ref splits at the first '/'.
    let row = catalogs.model_ref("novita/moonshotai/kimi-k3").unwrap();
    assert_eq!(row.compat.code_mode, Some(CodeModeTier::Capable));
    assert!(catalogs.model_ref("kimi-k3").is_none());
}

#[test]
fn validation_reports_mixed_groups() {
    let catalogs = ProviderCatalogs::from_json(
        r#"{"catalogs": [
            {"provider": "moonshot", "models": [{"id": "kimi-k3", "compat": {"codeMode": "preferred"}}]},
            {"provider": "kimi", "models": [{"id": "k3", "upstreamModel": "moonshot/kimi-k3"}]},
            {"provider": "novita", "models": [
                {"id": "moonshotai/Kimi-K3"},
                {"id": "zai-org/glm-5.2", "compat": {"supportsTools": false}},
                {"id": "tiny", "compat": {"supportsTools": false, "codeMode": "capable"}}
            ]},
            {"provider": "zai", "models": [{"id": "glm-5.2", "compat": {"codeMode": "preferred", "supportsReasoning": true}}]},
            {"provider": "ollama", "models": [{"id": "llama3.3"}, {"id": "library/Llama3.3"}]},
            {"provider": "ollama", "models": [{"id": "llama3.3"}]}
        ]}"#,
    )
    .unwrap();
    let problems = catalogs.validate();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 3, "{text:#?}");
    assert!(
        matches!(&problems[0], CatalogProblem::DuplicateModel { row } if row.provider == "ollama" && row.id == "llama3.3")
    );
    assert!(
        matches!(&problems[1], CatalogProblem::TierWithoutToolSupport { row } if row.id == "tiny")
    );
    match &problems[2] {
        CatalogProblem::MixedTierStatement {
            weights,
            stated,
            unstated,
        } => {
            assert_eq!(weights, "kimi-k3");
            assert_eq!(
                stated.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                ["moonshot/kimi-k3 (preferred)"]
            );
            assert_eq!(
                unstated.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
                ["kimi/k3", "novita/moonshotai/Kimi-K3"]
            );
        }
        other => panic!("{other:?}"),
    }
    // glm-5.2: the novita row has no tool support, so it need not state a tier.
    assert!(text[2].contains("every row of a shared model must state its tier"));
    assert_eq!(
        serde_json::to_value(&problems[1]).unwrap(),
        serde_json::json!({"problem": "tier_without_tool_support", "row": {"provider": "novita", "id": "tiny", "tier": "capable"}})
    );
    // Other compat flags survive a round trip.
    let zai = catalogs.model("zai", "glm-5.2").unwrap();
    assert_eq!(
        zai.compat.other["supportsReasoning"],
        serde_json::json!(true)
    );
    assert!(
        !catalogs
            .model("novita", "zai-org/glm-5.2")
            .unwrap()
            .support()
            .supports_tools
    );
}

#[test]
fn unknown_tier_is_a_parse_error() {
    let err = ProviderCatalogs::from_json(
        r#"{"catalogs": [{"provider": "x", "models": [{"id": "m", "compat": {"codeMode": "unsupported"}}]}]}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("unsupported"), "{err}");
}
