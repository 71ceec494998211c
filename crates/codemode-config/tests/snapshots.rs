//! insta snapshots: the resolved defaults, and the warnings (and report) for a messy config.

use codemode_config::{resolve_for_agent, CodeModeConfig, ConfigReport, ProviderCatalogs};
use serde_json::json;

#[test]
fn resolved_defaults() {
    insta::assert_json_snapshot!("resolved_defaults", CodeModeConfig::default());
}

fn messy_root() -> serde_json::Value {
    json!({
        "tools": {"codeMode": {
            "enabled": "yes",
            "runtime": "v8",
            "mode": "all",
            "languages": ["typescript", "python", "typescript", "JavaScript"],
            "timeoutMs": 90000,
            "memoryLimitBytes": 1024,
            "maxOutputBytes": "65536",
            "maxSnapshotBytes": 1.5,
            "maxPendingToolCalls": 0,
            "snapshotTtlSeconds": -5,
            "searchDefaultLimit": 40,
            "maxSearchLimit": 20,
            "timeoutMS": 500
        }},
        "agents": {"list": [
            {"id": "ops", "tools": {"codeMode": {"enabled": true, "snapshotTtlSeconds": 100000, "maxSearchLimit": 99}}}
        ]}
    })
}

#[test]
fn messy_config_warnings() {
    let global = resolve_for_agent(&messy_root(), None);
    insta::assert_json_snapshot!("messy_global_warnings", global.warnings);
    let ops = ConfigReport::from_root(&messy_root(), Some("ops"));
    insta::assert_json_snapshot!("messy_ops_report", ops);
    let missing = ConfigReport::from_root(&messy_root(), Some("missing"));
    insta::assert_json_snapshot!("messy_missing_agent_warnings", missing.warnings);
}

#[test]
fn bundled_preferred_models() {
    let preferred: Vec<String> = ProviderCatalogs::bundled()
        .preferred()
        .into_iter()
        .map(|(p, m)| format!("{p}/{m}"))
        .collect();
    insta::assert_json_snapshot!("bundled_preferred_models", preferred);
}
