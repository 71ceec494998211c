//! The worked examples of docs/contract/examples.md#s10 "Input and source checks" (docs/contract/examples.md#e16 to #e19), docs/contract/examples.md#e34 and docs/contract/examples.md#e40,
//! plus the argument checks of docs/contract/surface.md#s2-2 and the language gate of docs/contract/guest.md#s4-4, each with its exact message.

use codemode_ts::{
    is_module_access_reference_error, parse_exec_input, prepare_exec, prepare_source, ExecInput,
    Language, PreparedExec, Rejection, MODULE_ACCESS_DISABLED, SHELL_SOURCE,
};
use serde_json::{json, Value};

const BOTH: &[Language] = &[Language::JavaScript, Language::TypeScript];

fn rejection(input: Value) -> (String, String) {
    let rejection = prepare_exec(&input, BOTH).expect_err("the input must be rejected");
    (rejection.code().to_owned(), rejection.message())
}

fn invalid(message: &str) -> (String, String) {
    ("invalid_input".to_owned(), message.to_owned())
}

#[test]
fn e16_command_alone_is_the_source() {
    assert_eq!(
        prepare_exec(&json!({"command": "return 7;"}), BOTH),
        Ok(PreparedExec {
            javascript: "return 7;".into(),
            language: Language::JavaScript,
            restart_safe: false,
        })
    );
}

#[test]
fn e17_code_and_command_must_match() {
    assert_eq!(
        rejection(json!({"code": "return 1;", "command": "return 2;"})),
        invalid("code and command must match when both are provided.")
    );
}

/// docs/contract/examples.md#e18: each line is `code`, except `command:` (command only) and `both:` (equal code and
/// command); `\n` stands for a newline.
const E18_SHELL_INPUTS: &[&str] = &[
    r"ls -la /workspace/",
    r"ls -1",
    r"command: ls -la /workspace/",
    r"both: pwd",
    r"pwd;",
    r"pwd; // inspect the workspace",
    r"# inspect the workspace\npwd",
    r"#!/bin/sh\npwd",
    r"pwd\nls -la /workspace",
    r"pwd;ls -la /workspace",
    r"/bin/ls /workspace/",
    r"./gradlew test",
    r".\gradlew.bat test",
    r".\script.ps1",
    r"C:\workspace\run.cmd /q",
    r"/workspace/run.sh --verbose",
    r"sh -c 'ls /workspace/'",
    r"git status",
    r#"git status; const note = "git";"#,
    r"ls -1; const metadata = { ls: true };",
];

fn e18_input(line: &str) -> Value {
    let expand = |text: &str| text.replace(r"\n", "\n");
    if let Some(command) = line.strip_prefix("command: ") {
        json!({"command": expand(command)})
    } else if let Some(both) = line.strip_prefix("both: ") {
        json!({"code": expand(both), "command": expand(both)})
    } else {
        json!({"code": expand(line)})
    }
}

#[test]
fn e18_shell_inputs_are_rejected() {
    assert_eq!(E18_SHELL_INPUTS.len(), 20);
    for line in E18_SHELL_INPUTS {
        let (code, message) = rejection(e18_input(line));
        assert_eq!(code, "invalid_input", "{line}");
        assert_eq!(message, SHELL_SOURCE, "{line}");
        assert!(message.contains("JavaScript or TypeScript, not shell commands"));
    }
}

#[test]
fn e18_shell_inputs_are_rejected_as_typescript_too() {
    // The same lines as TypeScript fail before any VM: as shell source when they parse as
    // TypeScript, as a transform failure when they do not.
    for line in E18_SHELL_INPUTS {
        let mut input = e18_input(line);
        input["language"] = json!("typescript");
        let (code, message) = rejection(input);
        assert_eq!(code, "invalid_input", "{line}");
        assert!(
            message == SHELL_SOURCE || message.starts_with("typescript transform failed: "),
            "{line}: {message}"
        );
    }
}

/// docs/contract/examples.md#e19: JavaScript that must pass every check (the value each returns is the runtime's business).
const E19_JAVASCRIPT: &[&str] = &[
    "true;",
    "false;",
    "return true || false;",
    "return -1;",
    "return /foo/.test('foo');",
    "Infinity -1; return 42;",
    "eval; return typeof eval;",
    "if (true) { return -1; }",
    "for (let i = 0; i < 3; i++) { if (i === 2) { return i; } }",
    "function task() { return 7; } return task();",
    "// explain the guest program\nreturn 7;",
    "const ls = 7; return ls;",
];

#[test]
fn e19_javascript_passes_unchanged() {
    assert_eq!(E19_JAVASCRIPT.len(), 12);
    for code in E19_JAVASCRIPT {
        let prepared = prepare_exec(&json!({"code": code}), BOTH);
        assert_eq!(
            prepared.map(|prepared| prepared.javascript),
            Ok((*code).to_owned()),
            "{code}"
        );
    }
}

#[test]
fn e19_javascript_passes_as_typescript() {
    for code in E19_JAVASCRIPT {
        let prepared = prepare_exec(&json!({"code": code, "language": "typescript"}), BOTH);
        assert!(prepared.is_ok(), "{code}: {prepared:?}");
    }
}

#[test]
fn e34_typeof_of_module_globals_is_allowed() {
    let code = "return [typeof process, typeof module, typeof require];";
    assert_eq!(
        prepare_source(code, Language::JavaScript, BOTH),
        Ok(code.to_owned())
    );
}

/// docs/contract/examples.md#e40 inputs 1–5 and 9: caught by the static check.
const E40_STATIC: &[&str] = &[
    "const fs = require('node:fs'); return fs;",
    r"return r\u0065quire('node:fs');",
    "return require?.('node:fs');",
    "return (require)('node:fs');",
    "return (0, require)('node:fs');",
    "return import('node:fs');",
];

/// docs/contract/examples.md#e40 inputs 6–8: caught at run time by the `ReferenceError` rule.
const E40_RUN_TIME: &[(&str, &str)] = &[
    (
        "const load = require; return load('node:fs');",
        "ReferenceError: require is not defined",
    ),
    (
        "return module.require('node:fs');",
        "ReferenceError: module is not defined",
    ),
    (
        "return process.getBuiltinModule('node:fs');",
        "ReferenceError: process is not defined",
    ),
];

#[test]
fn e40_static_module_access_is_rejected() {
    for code in E40_STATIC {
        for language in ["javascript", "typescript"] {
            assert_eq!(
                rejection(json!({"code": code, "language": language})),
                invalid(MODULE_ACCESS_DISABLED),
                "{language}: {code}"
            );
        }
    }
}

#[test]
fn e40_aliases_pass_the_static_check_and_map_at_run_time() {
    for (code, uncaught) in E40_RUN_TIME {
        assert_eq!(
            prepare_source(code, Language::JavaScript, BOTH),
            Ok((*code).to_owned())
        );
        assert!(is_module_access_reference_error(uncaught), "{uncaught}");
    }
}

#[test]
fn harmless_look_alikes_pass() {
    for code in [
        "return api.import('x');",
        "return api[\"require\"](x);",
        "return api.import.meta;",
        "return api.require('x');",
        "return api?.import?.('x');",
        "const text = 'require(\"fs\") and import(\"fs\")'; return text;",
        "const text = \"import fs from 'fs'\"; return text;",
        "return `require('fs') import('fs') import.meta`;",
        "return /require\\(['\"]fs['\"]\\)/.test(x);",
        "return /import\\(/.source;",
        "// require('fs')\n/* import('fs') */\nreturn 1;",
        "const o = { require: 1, import: 2 }; return o.require + o.import;",
        "const { require: r } = api; return typeof r;",
        "class A { import() { return 1; } require() { return 2; } } return new A().import();",
    ] {
        assert_eq!(
            prepare_source(code, Language::JavaScript, BOTH),
            Ok(code.to_owned()),
            "{code}"
        );
        assert!(
            prepare_source(code, Language::TypeScript, BOTH).is_ok(),
            "typescript: {code}"
        );
    }
}

#[test]
fn argument_checks_in_order() {
    let cases: Vec<(Value, &str)> = vec![
        // Rule 1 wins over every later rule.
        (
            json!({"code": "a", "command": "b", "language": "ruby", "restartSafe": 1}),
            "code and command must match when both are provided.",
        ),
        (
            json!({"code": " x", "command": "x"}),
            "code and command must match when both are provided.",
        ),
        // Rule 2.
        (json!({}), "code or command must be a non-empty string."),
        (
            json!({"code": ""}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"code": " \n\t\u{feff}"}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"code": 7}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"code": null}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"command": "   "}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"command": "", "code": ""}),
            "code or command must be a non-empty string.",
        ),
        (
            json!({"code": "", "language": "ruby"}),
            "code or command must be a non-empty string.",
        ),
        (
            json!("return 1;"),
            "code or command must be a non-empty string.",
        ),
        (
            json!(["return 1;"]),
            "code or command must be a non-empty string.",
        ),
        // Rule 3.
        (
            json!({"code": "return 1;", "language": "ruby"}),
            "language must be javascript or typescript.",
        ),
        (
            json!({"code": "return 1;", "language": "JavaScript"}),
            "language must be javascript or typescript.",
        ),
        (
            json!({"code": "return 1;", "language": null}),
            "language must be javascript or typescript.",
        ),
        (
            json!({"code": "return 1;", "language": 1, "restartSafe": "yes"}),
            "language must be javascript or typescript.",
        ),
        // Rule 4.
        (
            json!({"code": "return 1;", "restartSafe": "true"}),
            "restartSafe must be a boolean.",
        ),
        (
            json!({"code": "return 1;", "restartSafe": null}),
            "restartSafe must be a boolean.",
        ),
        (
            json!({"code": "return 1;", "restartSafe": 1}),
            "restartSafe must be a boolean.",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(rejection(input.clone()), invalid(message), "{input}");
    }
}

#[test]
fn accepted_inputs() {
    assert_eq!(
        parse_exec_input(
            &json!({"code": "return 1;", "language": "typescript", "restartSafe": true, "extra": 1})
        ),
        Ok(ExecInput {
            source: "return 1;".into(),
            language: Language::TypeScript,
            restart_safe: true,
        })
    );
    // A non-string `code` next to a string `command` is not compared (rule 1 needs two strings).
    assert_eq!(
        parse_exec_input(&json!({"code": 5, "command": " return 2; "})),
        Ok(ExecInput {
            source: " return 2; ".into(),
            language: Language::JavaScript,
            restart_safe: false,
        })
    );
    assert_eq!(
        parse_exec_input(&json!({"code": "return 3;", "command": null, "restartSafe": false}))
            .map(|input| (input.source, input.restart_safe)),
        Ok(("return 3;".into(), false))
    );
}

#[test]
fn language_gate() {
    assert_eq!(
        prepare_exec(&json!({"code": "return 1;"}), &[Language::TypeScript]),
        Err(Rejection::LanguageDisabled(Language::JavaScript))
    );
    assert_eq!(
        prepare_exec(&json!({"code": "return 1;"}), &[Language::TypeScript])
            .unwrap_err()
            .message(),
        "code mode javascript input is disabled."
    );
    assert_eq!(
        prepare_exec(
            &json!({"code": "return 1;", "language": "typescript"}),
            &[Language::JavaScript]
        )
        .unwrap_err()
        .message(),
        "code mode typescript input is disabled."
    );
    assert_eq!(
        prepare_exec(&json!({"code": "return 1;"}), &[])
            .unwrap_err()
            .message(),
        "code mode javascript input is disabled."
    );
    // The gate runs before the TypeScript transform: a broken TypeScript cell with TypeScript
    // disabled reports the gate.
    assert_eq!(
        prepare_source("const = ;", Language::TypeScript, &[Language::JavaScript])
            .unwrap_err()
            .message(),
        "code mode typescript input is disabled."
    );
    // ... and after the input rules.
    assert_eq!(
        prepare_exec(&json!({"code": ""}), &[])
            .unwrap_err()
            .message(),
        "code or command must be a non-empty string."
    );
}
