//! Fuzz target `config_text` (docs/threat-model.md, "Fuzzing"): config files (`--config`, JSON
//! or JSON5) through `parse_config_text`, then every resolver the CLI runs on them (code mode
//! config, per agent, tool policy) never panics, and the resolved numbers stay in range.

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use serde_json::json;

fn config(rng: &mut engine::Rng) -> Vec<u8> {
    let mut value = json!({
        "tools": {"codeMode": engine::json_value(rng, 4), "allow": engine::json_value(rng, 2),
                  "deny": engine::json_value(rng, 2), "approvals": engine::json_value(rng, 3)},
        "agents": {"list": [{"id": engine::string(rng), "tools": {"codeMode": engine::json_value(rng, 3)}}]},
    });
    if rng.chance(3) {
        value = engine::json_value(rng, 6);
    }
    value.to_string().into_bytes()
}

#[test]
fn fuzz_config_text() {
    let seeds = vec![
        br#"{"tools":{"codeMode":{"enabled":true,"timeoutMs":90000,"languages":["typescript"]}}}"#.to_vec(),
        b"{tools: {codeMode: 'auto', allow: ['read*'], /* json5 */ deny: [\"mcp:*\"],}}".to_vec(),
        br#"{"agents":{"list":[{"id":"ops","tools":{"codeMode":false}}]},"tools":{"codeMode":{"maxSearchLimit":3}}}"#.to_vec(),
    ];
    engine::run("config_text", &seeds, Some(&config), &|bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let Ok(root) = codemode_config::parse_config_text(text) else {
            return;
        };
        let code_mode = root
            .get("tools")
            .and_then(|t| t.get("codeMode"))
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let resolved = codemode_config::resolve(&code_mode).config;
        assert!((100..=60000).contains(&resolved.timeout_ms()));
        assert!((1..=resolved.max_search_limit()).contains(&resolved.search_default_limit()));
        let _ = codemode_config::resolve_for_agent(&root, Some("ops"));
        let _ = codemode_config::resolve_policy(&root, None);
    });
}

/// Fuzz target `config_file` (docs/threat-model.md, "Fuzzing"): the bytes of a `--config` file,
/// written to a real file and loaded the way every subcommand loads it (`load_config_file`: the
/// checked read, the depth-limited JSON/JSON5 parse, the resolvers for an agent), never panic or
/// overflow the stack; a refusal is a `LoadError` naming the file. The engine's deep-nesting
/// mutation reaches 100,000 levels, far past the 127 the parse accepts.
#[test]
fn fuzz_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json5");
    let seeds = vec![
        br#"{"tools":{"codeMode":{"enabled":true,"timeoutMs":90000}},"hooks":{"beforeToolCall":[{"match":"exec","command":["true"]}]}}"#.to_vec(),
        b"// json5\n{tools: {codeMode: {languages: ['typescript',], maxOutputBytes: 0x100}, approvals: {require: ['publish']}}, agents: {list: [{id: 'ops', tools: {codeMode: false}}]}}".to_vec(),
        format!("{{tools: {{codeMode: {}1{}}}}}", "{a:".repeat(2_000), "}".repeat(2_000)).into_bytes(),
    ];
    engine::run("config_file", &seeds, Some(&config), &|bytes| {
        std::fs::write(&path, bytes).unwrap();
        match codemode_config::load_config_file(&path, Some("ops")) {
            Ok(report) => {
                let config = &report.config;
                assert!((100..=60000).contains(&config.timeout_ms()));
                let _ = report.to_json_pretty();
            }
            Err(e) => {
                let message = e.to_string();
                assert!(message.contains(path.to_str().unwrap()), "{message}");
            }
        }
    });
}
