//! Redaction of values placed in trajectory events (docs/contract/host.md#h4).
//!
//! Two rules, applied at any depth of a JSON value:
//!
//! 1. The value under an object key matching
//!    `/(token|secret|password|passwd|api[-_]?key|authorization|cookie)/i` becomes the string
//!    `"[redacted]"`, whatever it was (string, number, object, array, `null`). The match is a
//!    substring match with ASCII case folding, which is what that JavaScript regular expression
//!    does without the `u` flag: `accessToken`, `X-API-KEY` and `set_cookie` match.
//! 2. A string longer than [`MAX_STRING_CHARS`] characters keeps its first 4096 characters and
//!    gets the marker `…(<n> more)`, where `<n>` is the number of characters removed.
//!    "Characters" are Unicode scalar values (Rust `char`s), not UTF-16 code units: a cut never
//!    splits a surrogate pair, and for text inside the Basic Multilingual Plane both counts agree.
//!
//! Object keys are never cut (cutting could merge two keys); only values are.

use serde_json::{Map, Value};

/// The replacement for a value under a sensitive key.
pub const REDACTED: &str = "[redacted]";

/// The longest string (in Unicode scalar values) kept whole.
pub const MAX_STRING_CHARS: usize = 4096;

/// Whether `key` matches `/(token|secret|password|passwd|api[-_]?key|authorization|cookie)/i`.
pub fn is_sensitive_key(key: &str) -> bool {
    const WORDS: [&str; 9] = [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "api-key",
        "api_key",
        "authorization",
        "cookie",
    ];
    let lower = key.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
}

/// `s` if it has at most [`MAX_STRING_CHARS`] characters, else its first 4096 characters
/// followed by `…(<n> more)`.
pub fn truncate_string(s: &str) -> String {
    match s.char_indices().nth(MAX_STRING_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => {
            let more = s[cut..].chars().count();
            format!("{}…({more} more)", &s[..cut])
        }
    }
}

/// A copy of `value` with both rules applied (see the module docs).
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(truncate_string(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let v = if is_sensitive_key(k) {
                    Value::String(REDACTED.to_string())
                } else {
                    redact_value(v)
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// [`redact_value`] in place, without copying what stays.
pub fn redact_in_place(value: &mut Value) {
    match value {
        // More bytes than the limit is necessary (not sufficient) for more characters.
        Value::String(s) if s.len() > MAX_STRING_CHARS => *s = truncate_string(s),
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_sensitive_key(k) {
                    *v = Value::String(REDACTED.to_string());
                } else {
                    redact_in_place(v);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_keys() {
        for k in [
            "token",
            "accessToken",
            "SECRET",
            "client_secret",
            "password",
            "passwd",
            "apiKey",
            "api-key",
            "X-API_KEY",
            "Authorization",
            "set-cookie",
            "Cookies",
        ] {
            assert!(is_sensitive_key(k), "{k}");
        }
        for k in [
            "tok",
            "api key",
            "api--key",
            "auth",
            "pass",
            "key",
            "path",
            "tokne",
            // U+212A KELVIN SIGN is not an ASCII "k", as in JavaScript without the `u` flag.
            "to\u{212A}en",
        ] {
            assert!(!is_sensitive_key(k), "{k}");
        }
    }

    #[test]
    fn nested_token_is_redacted_at_any_depth() {
        let input = json!({
            "path": "README.md",
            "auth": {"token": "abc123", "user": "ann", "nested": [{"refreshToken": {"v": 1}}]},
            "headers": [{"Authorization": "Bearer xyz"}, {"Accept": "*/*"}],
            "password": null,
        });
        let want = json!({
            "path": "README.md",
            "auth": {"token": "[redacted]", "user": "ann", "nested": [{"refreshToken": "[redacted]"}]},
            "headers": [{"Authorization": "[redacted]"}, {"Accept": "*/*"}],
            "password": "[redacted]",
        });
        assert_eq!(redact_value(&input), want);
        let mut in_place = input.clone();
        redact_in_place(&mut in_place);
        assert_eq!(in_place, want);
    }

    #[test]
    fn long_strings_are_cut_with_the_exact_marker() {
        let long = "a".repeat(10_000);
        let want = format!("{}…(5904 more)", "a".repeat(4096));
        assert_eq!(truncate_string(&long), want);
        assert_eq!(
            redact_value(&json!({"data": [long.clone()]})),
            json!({"data": [want.clone()]})
        );
        let mut v = json!(long);
        redact_in_place(&mut v);
        assert_eq!(v, json!(want));
        // Exactly 4096 characters stay whole; 4097 lose one.
        assert_eq!(truncate_string(&"b".repeat(4096)), "b".repeat(4096));
        assert_eq!(
            truncate_string(&"b".repeat(4097)),
            format!("{}…(1 more)", "b".repeat(4096))
        );
    }

    #[test]
    fn characters_are_unicode_scalar_values() {
        // 4096 two-byte and 10 four-byte (astral, two UTF-16 units each) characters.
        let s = format!("{}{}", "é".repeat(4096), "😀".repeat(10));
        assert_eq!(
            truncate_string(&s),
            format!("{}…(10 more)", "é".repeat(4096))
        );
        // 4096 bytes of multi-byte text are far fewer than 4096 characters: kept whole.
        let short = "é".repeat(3000);
        let mut v = json!(short.clone());
        redact_in_place(&mut v);
        assert_eq!(v, json!(short));
    }
}
