//! The lean JavaScript path: deciding the module check (docs/contract/guest.md#s4-5) of a cell
//! that cannot contain module access without parsing it.
//!
//! The module check of a JavaScript cell (`checks::check_javascript`) parses the cell as a
//! script, so its tree holds statements only: no `import` declaration and no `export` (those
//! are module items). What the tree check can then find is `import(…)`, `import.meta`, and a
//! call of the identifier `require`; what the regex fallback for an unparsable cell can find is
//! the text `import` or `require` between ASCII word boundaries. Both need the word `import` or
//! `require` in the text — literally, or as an identifier spelled with unicode escapes
//! (`r\u0065quire`, `\u{69}mport`), which swc decodes. [`may_access_modules`] looks for both
//! spellings, so it answers `true` for every cell the full check could reject, and `false`
//! decides the check without swc. It over-approximates on purpose: the words in comments,
//! strings, templates and member names (`api.import()`) also answer `true`, and the cell then
//! takes the full path, which tells them apart.

/// The words without which no module access can be found in a script (see the module docs).
const MODULE_WORDS: [&str; 2] = ["import", "require"];

/// Whether `javascript` contains `import` or `require` as a word: not preceded and not followed
/// by an ASCII word character (`[A-Za-z0-9_]`), in the text itself or in the text with every
/// `\uXXXX` and `\u{X…}` escape decoded. `false` means neither the tree check nor the regex
/// fallback of docs/contract/guest.md#s4-5 can find module access in it.
pub(crate) fn may_access_modules(javascript: &str) -> bool {
    has_module_word(javascript)
        || (javascript.contains("\\u") && has_module_word(&decode_unicode_escapes(javascript)))
}

/// A module word with no ASCII word character on either side. Every identifier swc reads as
/// `import`/`require` and every regex-fallback match has non-word neighbours (an identifier's
/// neighbours are not identifier characters; the fallback's `\b` is ASCII), so this is a
/// superset of both.
fn has_module_word(text: &str) -> bool {
    let bytes = text.as_bytes();
    let is_word = |at: usize| {
        bytes
            .get(at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    MODULE_WORDS.iter().any(|word| {
        text.match_indices(word).any(|(at, _)| {
            let before = at.checked_sub(1).is_some_and(is_word);
            !before && !is_word(at + word.len())
        })
    })
}

/// `text` with every well-formed unicode escape (`\u` and four hex digits, or `\u{` hex digits
/// `}` naming a scalar value) replaced by its character, wherever it stands; anything else is
/// kept as it is. Decoding inside strings and comments too only adds words, never removes one
/// that an identifier escape spells.
fn decode_unicode_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\u") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match decode_escape(after) {
            Some((c, len)) => {
                out.push(c);
                rest = &after[len..];
            }
            None => {
                out.push_str("\\u");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character and the length (bytes after `\u`) of an escape body: `XXXX` or `{X…}`.
fn decode_escape(after: &str) -> Option<(char, usize)> {
    let (digits, len) = match after.strip_prefix('{') {
        Some(braced) => {
            let end = braced.find('}')?;
            (&braced[..end], end + 2)
        }
        None => (after.get(..4)?, 4),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let value = u32::from_str_radix(digits, 16).ok()?;
    Some((char::from_u32(value)?, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_words_and_their_boundaries() {
        for hit in [
            "import('x')",
            "require('x')",
            "$require('x')",
            "x.import()",
            "'import'",
            "// require",
            "r\\u0065quire('x')",
            "\\u{69}mport.meta",
            "\\u{000069}mport.meta",
            "\\u0072\\u0065\\u0071\\u0075\\u0069\\u0072\\u0065(1)",
            "é require",
            "éimport(1)",
            "require$",
            "a\\u{20}import",
            // The fallback regex reads the raw text, where `}` is a boundary.
            "\\u{41}require",
        ] {
            assert!(may_access_modules(hit), "{hit}");
        }
        for miss in [
            "return 1+2",
            "const imported = 1",
            "requireAuth()",
            "reimport(1)",
            "_require(1)",
            "import_(1)",
            "require9(1)",
            "\\u0061import(1)",
            "'\\u00e9'",
            "\\u00",
            "\\u{}",
            "\\u{110000}mport",
            "\\uD800",
        ] {
            assert!(!may_access_modules(miss), "{miss}");
        }
    }

    #[test]
    fn decoding_keeps_what_is_not_an_escape() {
        assert_eq!(decode_unicode_escapes("a\\u0062c"), "abc");
        assert_eq!(decode_unicode_escapes("\\u{1F600}!"), "\u{1F600}!");
        assert_eq!(decode_unicode_escapes("\\u12"), "\\u12");
        assert_eq!(decode_unicode_escapes("\\u{zz}"), "\\u{zz}");
        assert_eq!(decode_unicode_escapes("\\\\u0041"), "\\A");
        assert_eq!(decode_unicode_escapes("x\\u"), "x\\u");
        assert_eq!(decode_unicode_escapes("\\u00e9\\u"), "é\\u");
    }
}
