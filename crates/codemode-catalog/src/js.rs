//! JavaScript-compatible string and number helpers.
//!
//! The guest and the model see text produced by a JavaScript reference, so lengths, ordering,
//! trimming and literal rendering follow JavaScript semantics exactly: lengths are UTF-16 code
//! units (`String.prototype.length`), ordering is code-unit order (the default `<` on strings),
//! `trim` uses ECMAScript's WhiteSpace + LineTerminator set, and literals render like
//! `JSON.stringify`.

use std::cmp::Ordering;

use serde_json::Value;

/// Length of `s` in UTF-16 code units (JavaScript's `s.length`).
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// True when `s` is longer than `max` UTF-16 code units, without scanning more of a long string
/// than needed (a UTF-8 string of `n` bytes never has more than `n` UTF-16 units).
pub fn utf16_longer_than(s: &str, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let mut units = 0usize;
    for c in s.chars() {
        units += c.len_utf16();
        if units > max {
            return true;
        }
    }
    false
}

/// Compares two strings in UTF-16 code-unit order (JavaScript's default string order).
///
/// This differs from Rust's `str` order (code-point order) only between supplementary-plane
/// characters and BMP characters at or above U+E000.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

pub use codemode_bridge::js::{is_identifier, is_js_whitespace, js_trim};

/// `JSON.stringify(s)` for a string: quotes plus JSON escapes (control characters as `\u` plus four hex digits
/// with lowercase hex, except the short forms `\b \f \n \r \t`).
pub fn json_string(s: &str) -> String {
    // serde_json's escaping matches JSON.stringify for well-formed strings (Rust strings cannot
    // hold lone surrogates), so serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// `String(n)` / `JSON.stringify(n)` for a finite JSON number, following ECMAScript's
/// Number::toString: integral values below 1e21 print without a fraction (`1.0` → `1`), large and
/// tiny magnitudes use exponent form (`1e+21`, `1e-7`), and integers beyond 2^53 print as the
/// nearest double does (`12345678901234567890` → `12345678901234567000`).
pub fn js_number(n: &serde_json::Number) -> String {
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        if u <= EXACT {
            return u.to_string();
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT {
            return i.to_string();
        }
    }
    match n.as_f64() {
        Some(f) => js_f64(f),
        None => n.to_string(),
    }
}

/// ECMAScript Number::toString(10) for an `f64`.
pub fn js_f64(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f == 0.0 {
        return "0".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    // `{:e}` gives the shortest round-trip digits: "d.ddddde<exp>".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = match sci.split_once('e') {
        Some(parts) => parts,
        None => return format!("{sign}{sci}"),
    };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let exp: i64 = exp.parse().unwrap_or(0);
    let k = digits.len() as i64;
    // value = 0.d1d2..dk × 10^n
    let n = exp + 1;
    let body = if k <= n && n <= 21 {
        let mut s = digits.clone();
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
        s
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        let mut s = String::from("0.");
        s.extend(std::iter::repeat_n('0', (-n) as usize));
        s.push_str(&digits);
        s
    } else {
        let e = n - 1;
        let exp_sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{exp_sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{exp_sign}{}", e.abs())
        }
    };
    format!("{sign}{body}")
}

/// `JSON.stringify(v)` for a primitive JSON value (`null`, boolean, number, string); `None` for
/// arrays and objects.
pub fn primitive_literal(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(js_number(n)),
        Value::String(s) => Some(json_string(s)),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// `JSON.stringify(v)` for any JSON value, with JavaScript number formatting ([`js_number`]);
/// object keys keep their order.
pub fn json_stringify(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(json_stringify).collect::<Vec<_>>().join(",")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}:{}", json_string(k), json_stringify(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        primitive => primitive_literal(primitive).unwrap_or_default(),
    }
}

/// `s` cut to at most `max` UTF-16 code units (`max` ≥ 1): unchanged when it fits, otherwise the
/// longest prefix of whole characters of at most `max - 1` units followed by `…`.
pub fn cut_utf16(s: &str, max: usize) -> String {
    if utf16_len(s) <= max {
        return s.to_string();
    }
    let mut units = 0;
    let mut out = String::new();
    for c in s.chars() {
        units += c.len_utf16();
        if units > max - 1 {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        let cases = [
            ("1.0", "1"),
            ("-0.0", "0"),
            ("1.5", "1.5"),
            ("1e21", "1e+21"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.25e-7", "1.25e-7"),
            ("12345678901234567890", "12345678901234567000"),
            ("-9007199254740993", "-9007199254740992"),
            ("9007199254740992", "9007199254740992"),
            ("42", "42"),
            ("-7", "-7"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
        ];
        for (json, expected) in cases {
            let v: Value = serde_json::from_str(json).unwrap();
            assert_eq!(primitive_literal(&v).unwrap(), expected, "{json}");
        }
    }

    #[test]
    fn doubles_print_like_javascript() {
        assert_eq!(js_f64(1.2345678901234568e20), "123456789012345680000");
        assert_eq!(js_f64(-1.5e-7), "-1.5e-7");
        assert_eq!(js_f64(123.456), "123.456");
        assert_eq!(js_f64(1e-6), "0.000001");
        assert_eq!(js_f64(f64::NAN), "NaN");
        assert_eq!(js_f64(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn strings_quote_like_json_stringify() {
        assert_eq!(
            json_string("a\"b\\c\n\u{1}\u{7f}é"),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\""
        );
    }

    #[test]
    fn trim_uses_the_ecmascript_set() {
        assert_eq!(js_trim("\u{FEFF}\u{3000} x \n"), "x");
        // U+0085 (NEL) is Unicode White_Space but not ECMAScript whitespace.
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
    }

    #[test]
    fn utf16_order_and_length() {
        assert_eq!(utf16_len("a😀"), 3);
        assert!(utf16_longer_than("😀😀", 3));
        assert!(!utf16_longer_than("😀😀", 4));
        // U+FF01 is above the surrogate range in code points but below it in UTF-16 units.
        assert_eq!(cmp_utf16("\u{FF01}", "😀"), Ordering::Greater);
        assert_eq!("\u{FF01}".cmp("😀"), Ordering::Less);
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("$a_1"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("é"));
    }
}
