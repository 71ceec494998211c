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

/// Issue 27 item 2: 20,000 nested objects (JSON5) and 100,000 nested arrays used to overflow the
/// stack of every subcommand (exit 134); now they are a parse error naming the file. Run on a
/// 1 MiB thread, so a parser recursing past the limit would still overflow here.
#[test]
fn deeply_nested_config_files_are_an_error_not_a_stack_overflow() {
    let objects = file(&format!(
        "{{tools: {{codeMode: {}1{}}}}}",
        "{a:".repeat(20_000),
        "}".repeat(20_000)
    ));
    let arrays = file(&format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)));
    let (objects_err, arrays_err) = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            (
                load_config_file(objects.path(), None)
                    .unwrap_err()
                    .to_string(),
                load_config_file(arrays.path(), None)
                    .unwrap_err()
                    .to_string(),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(
        objects_err.ends_with(
            "is not valid JSON or JSON5: nested deeper than 127 levels at line 1 column 395"
        ),
        "{objects_err}"
    );
    assert!(
        arrays_err.ends_with(
            "is not valid JSON or JSON5: nested deeper than 127 levels at line 1 column 128"
        ),
        "{arrays_err}"
    );
    // 127 levels are fine in both syntaxes.
    let deepest = format!("{}1{}", "[".repeat(127), "]".repeat(127));
    assert!(parse_config_text(&deepest).is_ok());
    assert!(parse_config_text(&format!("{deepest} // JSON5")).is_ok());
}

/// A FIFO or another non-regular file is refused at once (it used to block in `open`), and so is a
/// symbolic link (docs/threat-model.md, "Files an operator names").
#[cfg(unix)]
#[test]
fn config_files_go_through_the_checked_path() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = codemode_test_support::files::fifo(dir.path(), "config.json");
    assert_eq!(
        load_config_file(&fifo, None).unwrap_err().to_string(),
        format!(
            "cannot read config file {}: it is a FIFO (named pipe), not a regular file",
            fifo.display()
        )
    );
    let target = dir.path().join("real.json");
    std::fs::write(&target, "{}").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(
        load_config_file(&link, None).unwrap_err().to_string(),
        format!(
            "cannot read config file {}: it is a symbolic link; name the file it points to",
            link.display()
        )
    );
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
