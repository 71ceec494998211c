//! Config files in the spec's shape, JSON and JSON5, and the report `codemode config` prints.

use codemode_config::{load_config_file, parse_config_text, ConfigReport, Enabled, LoadError};
use std::io::Write;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn json_file_with_agent() {
    let f = file(
        r#"{"tools": {"codeMode": {"enabled": false, "timeoutMs": 1234}},
            "agents": {"list": [{"id": "ops", "tools": {"codeMode": {"enabled": true}}}]}}"#,
    );
    let report = load_config_file(f.path(), Some("ops")).unwrap();
    assert_eq!(report.agent_id.as_deref(), Some("ops"));
    assert_eq!(report.config.enabled(), Enabled::On);
    assert_eq!(report.config.timeout_ms(), 1234);
    assert!(report.warnings.is_empty());
    let global = load_config_file(f.path(), None).unwrap();
    assert_eq!(global.config.enabled(), Enabled::Off);
    assert_eq!(global.agent_id, None);
    let json: serde_json::Value = serde_json::from_str(&report.to_json_pretty()).unwrap();
    assert_eq!(json["agentId"], "ops");
    assert_eq!(json["config"]["timeoutMs"], 1234);
    assert_eq!(json["warnings"], serde_json::json!([]));
}

#[test]
fn json5_file() {
    let f = file(
        "// code mode settings\n{\n  tools: {\n    codeMode: {\n      enabled: 'auto',\n      timeoutMs: 0x4e20, // 20000\n      languages: ['typescript',],\n    },\n  },\n}\n",
    );
    let report = load_config_file(f.path(), None).unwrap();
    assert_eq!(report.config.enabled(), Enabled::Auto);
    assert_eq!(report.config.timeout_ms(), 20000);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn errors() {
    let missing = load_config_file(std::path::Path::new("/nonexistent/codemode.json"), None);
    assert!(matches!(missing, Err(LoadError::Read { .. })));
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/codemode.json"));
    let f = file("{\"tools\": ");
    let err = load_config_file(f.path(), None).unwrap_err();
    assert!(matches!(err, LoadError::Parse { .. }));
    assert!(err.to_string().contains("not valid JSON or JSON5"), "{err}");
    assert!(parse_config_text("{a: }").is_err());
}

#[test]
fn empty_object_file_is_all_defaults() {
    let f = file("{}");
    let report = load_config_file(f.path(), Some("anyone")).unwrap();
    assert_eq!(report.config, Default::default());
    assert_eq!(report.warnings.len(), 1); // unknown agent
    let back: ConfigReport = serde_json::from_str(&report.to_json_pretty()).unwrap();
    assert_eq!(back, report);
}
