//! Small things a first hour meets (issue 16 items 5 and 9): `--language` outside the schema is
//! a usage error, `codemode config` says where its values came from and agrees with
//! `--config {}`, and `codemode completions SHELL` prints a completion script.

use crate::common;

use serde_json::{json, Value};

use common::output as codemode;

#[test]
fn an_unknown_language_is_a_usage_error() {
    let out = codemode(&["exec", "--language", "ts", "-e", "return 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: invalid value 'ts' for '--language <LANGUAGE>'\n  [possible values: javascript, typescript]\n"
        ),
        "{stderr}"
    );
    let out = codemode(&[
        "exec",
        "--language",
        "typescript",
        "-e",
        "const n: number = 1; return n",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["value"], 1);
}

#[test]
fn config_defaults_are_the_empty_config_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = common::write_file(dir.path(), "empty.json", "{}");
    let defaults: Value = serde_json::from_slice(&codemode(&["config"]).stdout).unwrap();
    let from_file: Value =
        serde_json::from_slice(&codemode(&["config", "--config", empty.to_str().unwrap()]).stdout)
            .unwrap();
    assert_eq!(defaults["config"]["enabled"], "auto");
    assert_eq!(defaults["config"], from_file["config"]);
    assert_eq!(
        defaults["source"],
        "defaults: no --config file, so the config {}: enabled defaults to \"auto\" (the CLI runs code mode unless enabled is false)"
    );
    assert_eq!(from_file["source"], json!(empty.to_str().unwrap()));
    // "auto" runs in the CLI: only enabled false disables code mode.
    let out = codemode(&["exec", "-e", "return 'runs'"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["value"],
        "runs"
    );
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "_codemode()"),
        ("zsh", "#compdef codemode"),
        ("fish", "complete -c codemode"),
    ] {
        let out = codemode(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: {script}");
        for word in ["exec", "session", "catalog", "--surface", "completions"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    let out = codemode(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn index_explain_says_why_an_output_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let tools = common::write_file(
        dir.path(),
        "tools.json",
        r#"[{"name": "plain", "description": "No schema.", "result": 1},
 {"name": "open", "description": "Open.", "outputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}, "result": {"a": "x"}},
 {"name": "closed", "description": "Closed.", "outputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}, "result": {"a": "x"}},
 {"name": "broken", "description": "Broken.", "outputSchema": {"type": 5}, "result": 1}]"#,
    );
    let tools = tools.to_str().unwrap();
    let index = codemode(&["catalog", "--tools", tools, "--index"]);
    let explained = codemode(&["catalog", "--tools", tools, "--index", "--explain"]);
    assert_eq!(explained.status.code(), Some(0));
    let index = String::from_utf8(index.stdout).unwrap();
    let explained = String::from_utf8(explained.stdout).unwrap();
    assert_eq!(
        explained,
        format!(
            "{}\n\nWhy `-> ?`:\n\
             - \"openclaw:core:broken\": its outputSchema is not valid JSON Schema (the tool cannot be called until it is fixed)\n\
             - \"openclaw:core:open\": its outputSchema has no complete compact form: an object without \"additionalProperties\": false, an unsupported keyword ($ref, allOf, patternProperties, if, prefixItems, ...), a union mixed with a base shape, or more depth, properties, literal values or characters than a hint may show\n\
             - \"openclaw:core:plain\": it declares no outputSchema\n",
            index.trim_end_matches('\n')
        )
    );
    assert!(index.contains("- \"openclaw:core:closed\" unknown -> { a: string }\n"));
    let out = codemode(&["catalog", "--explain"]);
    assert_eq!(out.status.code(), Some(2));
}
