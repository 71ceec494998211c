//! Invariants over arbitrary input: the preparer never panics, and every rejection carries one of
//! the documented messages (docs/contract/surface.md#s2-2, docs/contract/guest.md#s4-4 to #s4-7).

use codemode_ts::{
    prepare_exec, prepare_source, Language, Rejection, CODE_AND_COMMAND_MISMATCH, INVALID_LANGUAGE,
    INVALID_RESTART_SAFE, JAVASCRIPT_DISABLED, MISSING_SOURCE, MODULE_ACCESS_DISABLED,
    SHELL_SOURCE, TYPESCRIPT_DISABLED, TYPESCRIPT_TRANSFORM_FAILED_PREFIX,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const BOTH: &[Language] = &[Language::JavaScript, Language::TypeScript];

/// Fragments that exercise the scanner, the parsers and both checks.
const FRAGMENTS: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "/",
    "/*",
    "*/",
    "//",
    "`",
    "${",
    "'",
    "\"",
    "\\",
    "\n",
    ";",
    ",",
    ".",
    "?.",
    "=",
    "=>",
    "<",
    ">",
    "!",
    "-",
    "--",
    " ",
    "#",
    "#!",
    "$",
    "@",
    "1",
    "x",
    "require",
    "import",
    "meta",
    "return",
    "await",
    "async",
    "function",
    "var",
    "let",
    "const",
    "class",
    "enum",
    "namespace",
    "as",
    "satisfies",
    "type",
    "interface",
    "declare",
    "ls",
    "pwd",
    "git",
    "jq",
    "-la",
    "/bin/",
    "./",
    "C:\\",
    "~/",
    "FOO=",
    "if [",
    "for x in",
    "case",
    "export",
    "\\u0065",
    "é",
    "\u{2028}",
    "\u{feff}",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..48).prop_map(|parts| parts.concat())
}

fn documented(rejection: &Rejection, language: Language) -> bool {
    let message = rejection.message();
    rejection.code() == "invalid_input"
        && (message == MODULE_ACCESS_DISABLED
            || message == SHELL_SOURCE
            || (language == Language::TypeScript
                && message.starts_with(TYPESCRIPT_TRANSFORM_FAILED_PREFIX)
                && message.len() > TYPESCRIPT_TRANSFORM_FAILED_PREFIX.len()))
}

fn check(source: &str) -> Result<(), TestCaseError> {
    for language in [Language::JavaScript, Language::TypeScript] {
        match prepare_source(source, language, BOTH) {
            Ok(javascript) => {
                if language == Language::JavaScript {
                    prop_assert_eq!(&javascript, source);
                }
            }
            Err(rejection) => prop_assert!(documented(&rejection, language), "{:?}", rejection),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_never_panic(source in any::<String>()) {
        check(&source)?;
    }

    #[test]
    fn token_soup_never_panics(source in soup()) {
        check(&source)?;
    }

    #[test]
    fn printable_ascii_never_panics(source in "[ -~\n]{0,120}") {
        check(&source)?;
    }

    #[test]
    fn arbitrary_exec_inputs_get_documented_messages(
        code in prop::option::of(prop_oneof![soup().prop_map(Value::from), Just(json!(1)), Just(Value::Null)]),
        command in prop::option::of(prop_oneof![soup().prop_map(Value::from), Just(json!(true))]),
        language in prop::option::of(prop_oneof![Just(json!("javascript")), Just(json!("typescript")), Just(json!("python")), Just(Value::Null)]),
        restart_safe in prop::option::of(prop_oneof![Just(json!(true)), Just(json!(false)), Just(json!("true"))]),
        languages in prop::sample::subsequence(vec![Language::JavaScript, Language::TypeScript], 0..=2),
    ) {
        let mut input = serde_json::Map::new();
        for (key, value) in [("code", code), ("command", command), ("language", language), ("restartSafe", restart_safe)] {
            if let Some(value) = value {
                input.insert(key.to_owned(), value);
            }
        }
        if let Err(rejection) = prepare_exec(&Value::Object(input), &languages) {
            let message = rejection.message();
            prop_assert!(
                [CODE_AND_COMMAND_MISMATCH, MISSING_SOURCE, INVALID_LANGUAGE, INVALID_RESTART_SAFE,
                 JAVASCRIPT_DISABLED, TYPESCRIPT_DISABLED, MODULE_ACCESS_DISABLED, SHELL_SOURCE]
                    .contains(&message.as_str())
                    || message.starts_with(TYPESCRIPT_TRANSFORM_FAILED_PREFIX),
                "{}", message
            );
        }
    }
}
