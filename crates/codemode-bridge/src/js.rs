//! JavaScript's lexical word lists, for Rust code that must agree with the guest: the white
//! space `String.prototype.trim` removes and the identifiers that become `tools.<name>`
//! conveniences. One home for the catalog, the source checks (`codemode-ts`) and the run
//! context.

/// ECMAScript `WhiteSpace` or `LineTerminator` (the set `String.prototype.trim` removes).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// JavaScript's `s.trim()`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// True for a JavaScript identifier in the restricted ASCII form `^[A-Za-z_$][A-Za-z0-9_$]*$`
/// (the names that get a `tools.<name>` convenience).
pub fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_removes_exactly_the_javascript_white_space() {
        assert_eq!(js_trim("\u{feff}\u{a0}\t a b\u{2028}\u{3000}\n"), "a b");
        assert_eq!(js_trim("\u{180e}x\u{200b}"), "\u{180e}x\u{200b}");
        let all: Vec<char> = (0..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .filter(|&c| is_js_whitespace(c))
            .collect();
        assert_eq!(all.len(), 25);
    }

    #[test]
    fn identifiers_are_the_ascii_form() {
        for name in ["a", "_", "$", "a1", "A_b$"] {
            assert!(is_identifier(name), "{name}");
        }
        for name in ["", "1a", "a-b", "é", "a b"] {
            assert!(!is_identifier(name), "{name}");
        }
    }
}
