//! The source size cap (issue 15 item 4, docs/threat-model.md "Deadlines"): a source over
//! `MAX_SOURCE_BYTES` is refused before it is parsed, with a message naming its size and the cap.

use codemode_ts::{prepare_exec, Language, Rejection, MAX_SOURCE_BYTES};
use serde_json::json;

const BOTH: [Language; 2] = [Language::JavaScript, Language::TypeScript];

#[test]
fn a_source_over_the_cap_is_refused_with_its_size() {
    let code = format!("return 1;{}", " ".repeat(MAX_SOURCE_BYTES));
    for language in ["javascript", "typescript"] {
        let err = prepare_exec(&json!({"code": code, "language": language}), &BOTH).unwrap_err();
        assert_eq!(err, Rejection::SourceTooLarge { bytes: 1_048_585 });
        assert_eq!(
            err.message(),
            "code mode source is too large: 1048585 bytes (at most 1048576 bytes)."
        );
        assert_eq!(err.code(), "invalid_input");
    }
    // Multi-byte characters count in UTF-8 bytes.
    let wide = "é".repeat(MAX_SOURCE_BYTES / 2 + 1);
    assert_eq!(
        prepare_exec(&json!({"code": format!("'{wide}'")}), &BOTH).unwrap_err(),
        Rejection::SourceTooLarge { bytes: 1_048_580 }
    );
}

#[test]
fn a_source_at_the_cap_is_prepared() {
    let code = format!("return 1;{}", " ".repeat(MAX_SOURCE_BYTES - 9));
    assert_eq!(code.len(), MAX_SOURCE_BYTES);
    let prepared = prepare_exec(&json!({ "code": code }), &BOTH).unwrap();
    assert_eq!(prepared.javascript, code);
}
