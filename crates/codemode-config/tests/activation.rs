//! The activation table: each of false/true/"auto" × preferred/capable/absent/no-tool-support ×
//! tools-present/no-tools, plus Tool Search exclusivity and the native-harness case.

use codemode_config::{
    decide, resolve, ActivationReason as R, CodeModeTier, Enabled, ModelSupport, ProviderCatalogs,
    RunContext, RunTools,
};
use serde_json::json;

const PREFERRED: ModelSupport = ModelSupport {
    supports_tools: true,
    tier: Some(CodeModeTier::Preferred),
};
const CAPABLE: ModelSupport = ModelSupport {
    supports_tools: true,
    tier: Some(CodeModeTier::Capable),
};
const ABSENT: ModelSupport = ModelSupport {
    supports_tools: true,
    tier: None,
};
/// A model without tool support, even one (wrongly) flagged preferred.
const NO_TOOLS_MODEL: ModelSupport = ModelSupport {
    supports_tools: false,
    tier: Some(CodeModeTier::Preferred),
};

#[test]
fn activation_table() {
    let models = [
        ("preferred", PREFERRED),
        ("capable", CAPABLE),
        ("absent", ABSENT),
        ("no-tool-support", NO_TOOLS_MODEL),
    ];
    // (enabled, model, tools) → expected reason; engaged iff Forced/AutoPreferred.
    let expected = |enabled: Enabled, model: &str, tools: RunTools| -> R {
        match (enabled, model, tools) {
            (Enabled::Off, _, _) => R::Disabled,
            (_, _, RunTools::RawModelCall) => R::RawModelCall,
            (_, _, RunTools::DisableTools) => R::DisableTools,
            (_, _, RunTools::EmptyAllowList) => R::EmptyAllowList,
            (_, "no-tool-support", _) => R::NoToolSupport,
            (Enabled::On, _, _) => R::Forced,
            (Enabled::Auto, "preferred", _) => R::AutoPreferred,
            (Enabled::Auto, "capable", _) => R::AutoCapable,
            (Enabled::Auto, _, _) => R::AutoUnflagged,
        }
    };
    let mut rows = Vec::new();
    for enabled in [Enabled::Off, Enabled::On, Enabled::Auto] {
        for (name, model) in models {
            for tools in [
                RunTools::Active,
                RunTools::RawModelCall,
                RunTools::DisableTools,
                RunTools::EmptyAllowList,
            ] {
                let run = RunContext {
                    tools,
                    model,
                    ..RunContext::default()
                };
                let d = decide(enabled, &run);
                let want = expected(enabled, name, tools);
                assert_eq!(d.reason, want, "{enabled} {name} {tools:?}");
                assert_eq!(d.engaged, matches!(want, R::Forced | R::AutoPreferred));
                rows.push(format!(
                    "{enabled} × {name} × {tools:?} → engaged={} ({:?})",
                    d.engaged, d.reason
                ));
            }
        }
    }
    assert_eq!(rows.len(), 3 * 4 * 4);
    // The exact engaged cells: true × {preferred, capable, absent} and auto × preferred, with
    // tools present.
    let engaged: Vec<_> = rows.iter().filter(|r| r.contains("engaged=true")).collect();
    assert_eq!(
        engaged,
        [
            "true × preferred × Active → engaged=true (Forced)",
            "true × capable × Active → engaged=true (Forced)",
            "true × absent × Active → engaged=true (Forced)",
            "\"auto\" × preferred × Active → engaged=true (AutoPreferred)",
        ]
    );
}

#[test]
fn tool_search_is_exclusive_with_code_mode() {
    for enabled in [Enabled::Off, Enabled::On, Enabled::Auto] {
        for model in [PREFERRED, CAPABLE, ABSENT, NO_TOOLS_MODEL] {
            let run = RunContext {
                model,
                tool_search: true,
                ..RunContext::default()
            };
            let d = decide(enabled, &run);
            assert_eq!(d.tool_search, !d.engaged, "{enabled} {model:?}");
            let no_search = decide(
                enabled,
                &RunContext {
                    tool_search: false,
                    ..run
                },
            );
            assert!(!no_search.tool_search);
            assert_eq!(no_search.engaged, d.engaged);
        }
    }
}

#[test]
fn native_harness_never_engages() {
    for enabled in [Enabled::On, Enabled::Auto] {
        let run = RunContext {
            model: PREFERRED,
            native_harness: true,
            ..RunContext::default()
        };
        let d = decide(enabled, &run);
        assert_eq!((d.engaged, d.reason), (false, R::NativeHarness));
    }
}

#[test]
fn run_tools_from_flags() {
    let none: Option<&[&str]> = None;
    assert_eq!(RunTools::from_run(false, false, none), RunTools::Active);
    assert_eq!(
        RunTools::from_run(false, false, Some(&["read"][..])),
        RunTools::Active
    );
    assert_eq!(
        RunTools::from_run(false, false, Some(&[] as &[&str])),
        RunTools::EmptyAllowList
    );
    assert_eq!(
        RunTools::from_run(false, true, Some(&[] as &[&str])),
        RunTools::DisableTools
    );
    assert_eq!(RunTools::from_run(true, true, none), RunTools::RawModelCall);
}

#[test]
fn decisions_from_config_and_bundled_catalogs() {
    let catalogs = ProviderCatalogs::bundled();
    let auto = resolve(&json!({})).config;
    let run = |provider: &str, model: &str| RunContext {
        model: catalogs.support(provider, model),
        ..RunContext::default()
    };
    // First-party preferred rows engage under "auto".
    assert!(auto.decide(&run("anthropic", "claude-opus-5")).engaged);
    assert!(auto.decide(&run("kimi", "k3")).engaged);
    assert!(auto.decide(&run("minimax", "MiniMax-M3")).engaged);
    // The tier comes from the catalog that served the run: resellers declare "capable".
    let d = auto.decide(&run("novita", "moonshotai/kimi-k3"));
    assert_eq!((d.engaged, d.reason), (false, R::AutoCapable));
    // Unlisted models (e.g. any Ollama-served local model) keep direct tools under "auto"…
    let d = auto.decide(&run("ollama", "llama3.3"));
    assert_eq!((d.engaged, d.reason), (false, R::AutoUnflagged));
    // …and engage when forced.
    let forced = resolve(&json!(true)).config;
    assert!(forced.decide(&run("ollama", "llama3.3")).engaged);
    // Lookups are exact: a different casing is another (unlisted) model.
    assert_eq!(
        catalogs.support("minimax", "minimax-m3"),
        ModelSupport::UNLISTED
    );
}

#[test]
fn decision_json_shape() {
    let d = decide(
        Enabled::Auto,
        &RunContext {
            model: PREFERRED,
            tool_search: true,
            ..Default::default()
        },
    );
    assert_eq!(
        serde_json::to_value(d).unwrap(),
        json!({"engaged": true, "reason": "auto_preferred", "toolSearch": false})
    );
    assert_eq!(
        R::AutoPreferred.to_string(),
        "enabled is \"auto\" and the serving catalog flags the model \"preferred\""
    );
}
