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
//! 3. A string that holds a secret as text is redacted inside (issue 25: a tool that repeats
//!    its input as JSON text, an error text quoting a request, a hook's reason): when the
//!    string mentions a sensitive word at all, (a) a string that is a JSON object or array is
//!    parsed, redacted by these rules and written back compactly; (b) otherwise each JSON
//!    object or array embedded in it (up to [`MAX_EMBEDDED_JSON`] tries) is; (c) then every
//!    `<sensitive key>: <value>` or `<sensitive key>=<value>` left in the text (quoted or
//!    not, `\"`-escaped or not, `Bearer`/`Basic` schemes included) gets `[redacted]` for its
//!    value. Rule 3 runs before rule 2, so a cut never hides JSON from it. Text without a
//!    sensitive word is returned as it was, byte for byte.
//!
//! Object keys are never cut (cutting could merge two keys); only values are.

use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// How many embedded JSON values one string may try to parse (rule 3b); bounds the work on a
/// hostile text made of brackets.
pub const MAX_EMBEDDED_JSON: usize = 64;

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

/// `key: value` pairs in free text whose key holds a sensitive word (rule 3c).
fn key_value_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(
            r#"(?i)((?:token|secret|password|passwd|api[-_]?key|authorization|cookie)[a-z0-9_-]*\\*["']?(?:\s*:\s*|=))(\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'[^']*'|(?:(?:bearer|basic|token)\s+)?[^\s"'\\,;&(){}\[\]]+)"#,
        )
        .expect("valid pattern")
    })
}

/// Whether `value` has a sensitive key at any depth, or a string holding one (rule 3).
fn holds_secret(value: &Value) -> bool {
    match value {
        Value::String(s) => is_sensitive_key(s),
        Value::Array(items) => items.iter().any(holds_secret),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| is_sensitive_key(k) || holds_secret(v)),
        _ => false,
    }
}

/// `json` parsed, redacted and written back when it is a JSON object or array holding a
/// secret; `None` when it is not JSON or holds none.
fn redact_json_text(json: &str) -> Option<String> {
    let mut value: Value = serde_json::from_str(json).ok()?;
    if !matches!(value, Value::Object(_) | Value::Array(_)) || !holds_secret(&value) {
        return None;
    }
    let original = value.clone();
    redact_in_place(&mut value);
    if value == original {
        return None;
    }
    serde_json::to_string(&value).ok()
}

/// Rule 3 on one string: `None` when it holds no secret as text (see the module docs).
pub fn redact_text(text: &str) -> Option<String> {
    if !is_sensitive_key(text) {
        return None;
    }
    let trimmed = text.trim();
    if trimmed.starts_with(['{', '[']) {
        if let Some(whole) = redact_json_text(trimmed) {
            return Some(whole);
        }
    }
    // (b) JSON values embedded in prose.
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut tries = 0;
    while let Some(start) = rest.find(['{', '[']) {
        if tries == MAX_EMBEDDED_JSON {
            break;
        }
        tries += 1;
        let candidate = &rest[start..];
        let mut stream = serde_json::Deserializer::from_str(candidate).into_iter::<Value>();
        match stream.next() {
            Some(Ok(_)) => {
                let end = stream.byte_offset();
                out.push_str(&rest[..start]);
                match redact_json_text(&candidate[..end]) {
                    Some(redacted) => out.push_str(&redacted),
                    None => out.push_str(&candidate[..end]),
                }
                rest = &candidate[end..];
            }
            _ => {
                out.push_str(&rest[..=start]);
                rest = &candidate[1..];
            }
        }
    }
    out.push_str(rest);
    // (c) `key: value` left in the text.
    let redacted = key_value_pattern().replace_all(&out, |c: &Captures| {
        let value = &c[2];
        let replacement = if value.starts_with("\\\"") {
            "\\\"[redacted]\\\""
        } else if value.starts_with('"') {
            "\"[redacted]\""
        } else if value.starts_with('\'') {
            "'[redacted]'"
        } else {
            REDACTED
        };
        format!("{}{replacement}", &c[1])
    });
    (redacted != text).then(|| redacted.into_owned())
}

/// Rules 3 and 2 on one string: its secrets redacted, then cut to [`MAX_STRING_CHARS`].
pub fn redact_string(text: &str) -> String {
    match redact_text(text) {
        Some(redacted) => truncate_string(&redacted),
        None => truncate_string(text),
    }
}

/// A copy of `value` with the rules applied (see the module docs).
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_string(s)),
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
        Value::String(s) => {
            if let Some(redacted) = redact_text(s) {
                *s = redacted;
            }
            // More bytes than the limit is necessary (not sufficient) for more characters.
            if s.len() > MAX_STRING_CHARS {
                *s = truncate_string(s);
            }
        }
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
    fn secrets_inside_text() {
        let cases = [
            // Whole-string JSON, compacted only when something was redacted.
            (
                r#"{"input": {"token": "s3cr3t", "n": 1}}"#,
                r#"{"input":{"token":"[redacted]","n":1}}"#,
            ),
            (r#"[{"password": 1}]"#, r#"[{"password":"[redacted]"}]"#),
            // JSON inside JSON text inside JSON text.
            (
                r#"{"text": "{\"apiKey\": \"k\"}"}"#,
                r#"{"text":"{\"apiKey\":\"[redacted]\"}"}"#,
            ),
            // Embedded in prose.
            (
                r#"failed: {"auth": {"cookie": "c"}} (retry)"#,
                r#"failed: {"auth":{"cookie":"[redacted]"}} (retry)"#,
            ),
            // Escaped JSON that does not parse, key-value text, header schemes.
            (
                r#"body={\"token\":\"s3 cr3t\"}"#,
                r#"body={\"token\":\"[redacted]\"}"#,
            ),
            ("api_key=abc&x=1", "api_key=[redacted]&x=1"),
            ("Authorization: Basic dXNlcjpw", "Authorization: [redacted]"),
            ("SECRET_TOKEN: 'a b'", "SECRET_TOKEN: '[redacted]'"),
            // A program's object literal.
            (
                r#"await tools.call("x", {auth: {token: "sk-1"}});"#,
                r#"await tools.call("x", {auth: {token: "[redacted]"}});"#,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(redact_text(text).as_deref(), Some(want), "{text}");
            assert_eq!(redact_value(&json!(text)), json!(want), "{text}");
            let mut v = json!([text]);
            redact_in_place(&mut v);
            assert_eq!(v, json!([want]), "{text}");
        }
        // Untouched, byte for byte: no sensitive word, or one that holds no value.
        for text in [
            r#"{"a":  1}"#,
            "the token expired",
            r#"{"note": "token expired"}"#,
            "[[[[[[[[ token",
            // An assignment in a program is not a `key=value` pair.
            "const token = await getToken();",
        ] {
            assert_eq!(redact_text(text), None, "{text}");
            assert_eq!(redact_value(&json!(text)), json!(text));
        }
        // Redacted before cut: a secret past the cut point of a long JSON text is still found,
        // and one at its start is never left half-cut.
        let long = format!(r#"{{"pad": "{}", "token": "s3cr3t"}}"#, "x".repeat(5000));
        let got = redact_string(&long);
        assert!(
            !got.contains("s3cr3t") && got.starts_with(r#"{"pad":"xxx"#),
            "{got}"
        );
        // A hostile text of brackets costs bounded work and stays as it was.
        let brackets = format!("token {}", "[{".repeat(100_000));
        assert_eq!(redact_text(&brackets), None);
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
