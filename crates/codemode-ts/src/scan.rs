//! A small, forgiving JavaScript/TypeScript tokenizer for the two places where swc's parser cannot
//! help: masking an unparsable program for the regex fallback of docs/contract/guest.md#s4-5, and the
//! nesting-depth guard that runs before swc (see `depth.rs`).
//!
//! It never fails: unterminated strings, templates, comments and regular expressions end at the
//! end of the line or the source. A `/` starts a regular expression where an expression may start
//! (after an operator, an opening bracket, `}`, a keyword such as `return` or `typeof`, or at the
//! start), and is a division after an identifier, a literal, `)` or `]` — the usual heuristic,
//! which is what "recognisable regex literals" in docs/contract/guest.md#s4-5 refers to.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokKind {
    /// `// …`, `/* … */` or a leading `#!…` line.
    Comment,
    /// A single- or double-quoted string literal.
    Str,
    /// One chunk of a template literal: from `` ` `` or the `}` that closes a substitution, to
    /// `${` or the closing `` ` ``.
    Template,
    /// A regular-expression literal, flags included.
    Regex,
    /// An identifier, keyword or private name (`#x`).
    Word,
    /// A numeric literal.
    Number,
    /// A punctuator (longest match) or any other single character.
    Punct,
}

/// One token: `start..end` is its byte range in the source, `mask` the byte range whose text
/// the regex fallback hides (empty for code tokens).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tok {
    pub kind: TokKind,
    pub start: usize,
    pub end: usize,
    pub mask: (usize, usize),
    /// A line terminator (or a multi-line comment) precedes the token.
    pub nl_before: bool,
    /// A template chunk that ends with `${` (a substitution follows).
    pub opens_substitution: bool,
}

impl Tok {
    pub(crate) fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }

    /// A template chunk that starts a new template literal (with `` ` ``).
    pub(crate) fn opens_template(&self, src: &str) -> bool {
        self.kind == TokKind::Template && src.as_bytes()[self.start] == b'`'
    }

    /// A template chunk that continues after a substitution (starts with `}`).
    pub(crate) fn resumes_template(&self, src: &str) -> bool {
        self.kind == TokKind::Template && src.as_bytes()[self.start] == b'}'
    }
}

/// JavaScript line terminators (ECMAScript LineTerminator).
pub(crate) fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

pub(crate) use codemode_bridge::js::{is_js_whitespace, js_trim};

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic()
        || c == '$'
        || c == '_'
        || c == '\\'
        || (!c.is_ascii() && c.is_alphabetic())
}

fn is_ident_part(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || c == '$'
        || c == '_'
        || c == '\\'
        || c == '\u{200c}'
        || c == '\u{200d}'
        || (!c.is_ascii() && c.is_alphanumeric())
}

/// Keywords after which a `/` starts a regular expression.
const REGEX_AFTER_WORDS: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
    "extends",
];

/// Punctuators, longest first within each leading character's group (longest match wins).
const PUNCTUATORS: &[&str] = &[
    ">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!=",
    "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
    "**", "<<", ">>",
];

fn char_at(src: &str, i: usize) -> Option<char> {
    src.get(i..).and_then(|rest| rest.chars().next())
}

/// Tokenizes `src`. Linear in the length; never panics.
pub(crate) fn scan(src: &str) -> Vec<Tok> {
    let bytes = src.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    // `true` marks a `${` substitution, `false` an ordinary `{`.
    let mut braces: Vec<bool> = Vec::new();
    let mut regex_allowed = true;
    let mut nl_before = false;
    let mut i = 0;

    while let Some(c) = char_at(src, i) {
        if is_line_terminator(c) {
            nl_before = true;
            i += c.len_utf8();
            continue;
        }
        if is_js_whitespace(c) {
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let next = char_at(src, i + c.len_utf8());
        let mut opens_substitution = false;
        let (kind, end, mask) = match c {
            '/' if next == Some('/') => {
                let end = line_end(src, i);
                (TokKind::Comment, end, (start, end))
            }
            '#' if start == 0 && next == Some('!') => {
                let end = line_end(src, i);
                (TokKind::Comment, end, (start, end))
            }
            '/' if next == Some('*') => {
                let end = src[i + 2..]
                    .find("*/")
                    .map_or(src.len(), |at| i + 2 + at + 2);
                if src[start..end].chars().any(is_line_terminator) {
                    nl_before = true;
                }
                (TokKind::Comment, end, (start, end))
            }
            '\'' | '"' => {
                let (end, closed) = scan_string(src, i, c);
                (
                    TokKind::Str,
                    end,
                    (start + 1, if closed { end - 1 } else { end }),
                )
            }
            '`' => {
                let (end, mask, opens) = scan_template(src, i);
                opens_substitution = opens;
                (TokKind::Template, end, mask)
            }
            '}' if braces.last() == Some(&true) => {
                braces.pop();
                let (end, mask, opens) = scan_template(src, i);
                opens_substitution = opens;
                (TokKind::Template, end, mask)
            }
            '/' if regex_allowed => match scan_regex(src, i) {
                Some((end, body_end)) => (TokKind::Regex, end, (start + 1, body_end)),
                None => (TokKind::Punct, i + 1, (start, start)),
            },
            '0'..='9' => (TokKind::Number, scan_number(src, i), (start, start)),
            '.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                (TokKind::Number, scan_number(src, i), (start, start))
            }
            '#' if next.is_some_and(is_ident_start) => {
                (TokKind::Word, scan_word(src, i + 1), (start, start))
            }
            _ if is_ident_start(c) => (TokKind::Word, scan_word(src, i), (start, start)),
            _ => {
                let rest = &src[i..];
                let len = PUNCTUATORS
                    .iter()
                    .find(|p| rest.starts_with(*p))
                    // `?.` followed by a digit is `?` then a number (`a?.5:1`).
                    .filter(|p| **p != "?." || !rest[2..].starts_with(|d: char| d.is_ascii_digit()))
                    .map_or(c.len_utf8(), |p| p.len());
                (TokKind::Punct, i + len, (start, start))
            }
        };

        let tok = Tok {
            kind,
            start,
            end,
            mask,
            nl_before,
            opens_substitution,
        };
        nl_before = false;
        match kind {
            TokKind::Comment => {}
            TokKind::Str | TokKind::Number | TokKind::Regex => regex_allowed = false,
            TokKind::Template => {
                if tok.opens_substitution {
                    braces.push(true);
                    regex_allowed = true;
                } else {
                    regex_allowed = false;
                }
            }
            TokKind::Word => regex_allowed = REGEX_AFTER_WORDS.contains(&tok.text(src)),
            TokKind::Punct => {
                let text = tok.text(src);
                match text {
                    "{" => braces.push(false),
                    "}" => {
                        braces.pop();
                    }
                    _ => {}
                }
                regex_allowed = !matches!(text, ")" | "]" | "++" | "--");
            }
        }
        debug_assert!(end > start && bytes.len() >= end);
        i = end;
        toks.push(tok);
    }
    toks
}

/// The index of the next line terminator at or after `i`, or the end.
fn line_end(src: &str, i: usize) -> usize {
    src[i..]
        .char_indices()
        .find(|(_, c)| is_line_terminator(*c))
        .map_or(src.len(), |(at, _)| i + at)
}

/// A string literal starting at `i` with `quote`: `(end, closed)`. It ends before an unescaped
/// line terminator when unterminated.
fn scan_string(src: &str, i: usize, quote: char) -> (usize, bool) {
    let mut j = i + 1;
    while let Some(c) = char_at(src, j) {
        if c == quote {
            return (j + 1, true);
        }
        if c == '\\' {
            j += 1;
            if let Some(escaped) = char_at(src, j) {
                j += escaped.len_utf8();
                if escaped == '\r' && char_at(src, j) == Some('\n') {
                    j += 1;
                }
            }
            continue;
        }
        if c == '\n' || c == '\r' {
            return (j, false);
        }
        j += c.len_utf8();
    }
    (j, false)
}

/// A template chunk starting at `i` (on `` ` `` or `}`): `(end, mask, opens_substitution)`.
fn scan_template(src: &str, i: usize) -> (usize, (usize, usize), bool) {
    let mut j = i + 1;
    while let Some(c) = char_at(src, j) {
        match c {
            '`' => return (j + 1, (i + 1, j), false),
            '\\' => {
                j += 1;
                if let Some(escaped) = char_at(src, j) {
                    j += escaped.len_utf8();
                }
            }
            '$' if char_at(src, j + 1) == Some('{') => {
                return (j + 2, (i + 1, j), true);
            }
            _ => j += c.len_utf8(),
        }
    }
    (j.min(src.len()), (i + 1, j.min(src.len())), false)
}

/// A regular expression starting at `i`: `(end, closing_slash)`, or `None` when it does not
/// close on its line (then the `/` is treated as division).
fn scan_regex(src: &str, i: usize) -> Option<(usize, usize)> {
    let mut j = i + 1;
    let mut in_class = false;
    loop {
        let c = char_at(src, j)?;
        if is_line_terminator(c) {
            return None;
        }
        match c {
            '\\' => {
                j += 1;
                let escaped = char_at(src, j)?;
                if is_line_terminator(escaped) {
                    return None;
                }
                j += escaped.len_utf8();
                continue;
            }
            '[' => in_class = true,
            ']' => in_class = false,
            '/' if !in_class => {
                let body_end = j;
                let mut end = j + 1;
                while let Some(flag) = char_at(src, end).filter(|f| is_ident_part(*f) && *f != '\\')
                {
                    end += flag.len_utf8();
                }
                return Some((end, body_end));
            }
            _ => {}
        }
        j += c.len_utf8();
    }
}

fn scan_number(src: &str, i: usize) -> usize {
    let hex_like = src[i..].starts_with("0x") || src[i..].starts_with("0X");
    let mut j = i;
    let mut prev = '\0';
    while let Some(c) = char_at(src, j) {
        let exponent_sign = (c == '+' || c == '-') && matches!(prev, 'e' | 'E') && !hex_like;
        if !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || exponent_sign) {
            break;
        }
        prev = c;
        j += 1;
    }
    j
}

fn scan_word(src: &str, i: usize) -> usize {
    let mut j = i;
    while let Some(c) = char_at(src, j) {
        if c == '\\' {
            // `\u` with four hex digits, or `\u{…}`.
            j += 1;
            if char_at(src, j) == Some('u') {
                j += 1;
                if char_at(src, j) == Some('{') {
                    while let Some(h) = char_at(src, j) {
                        j += h.len_utf8();
                        if h == '}' {
                            break;
                        }
                    }
                } else {
                    let mut digits = 0;
                    while digits < 4 && char_at(src, j).is_some_and(|h| h.is_ascii_hexdigit()) {
                        j += 1;
                        digits += 1;
                    }
                }
            }
            continue;
        }
        if !is_ident_part(c) {
            break;
        }
        j += c.len_utf8();
    }
    j.max(i + 1).min(src.len())
}

/// The source with comments, string contents, template text and regex bodies replaced by spaces
/// (line terminators are kept). Quotes, backticks, `${`/`}` and slashes stay, so
/// `import 'x'` still reads as `import '…'` (docs/contract/guest.md#s4-5-unparsable "Unparsable programs").
pub(crate) fn mask(src: &str, toks: &[Tok]) -> String {
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for tok in toks {
        let (from, to) = tok.mask;
        if from >= to {
            continue;
        }
        out.push_str(&src[at..from]);
        for c in src[from..to].chars() {
            if is_line_terminator(c) {
                out.push(c);
            } else {
                out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
        }
        at = to;
    }
    out.push_str(&src[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokKind, &str)> {
        scan(src).iter().map(|t| (t.kind, t.text(src))).collect()
    }

    #[test]
    fn regex_versus_division() {
        assert_eq!(
            kinds("a / b / c"),
            vec![
                (TokKind::Word, "a"),
                (TokKind::Punct, "/"),
                (TokKind::Word, "b"),
                (TokKind::Punct, "/"),
                (TokKind::Word, "c"),
            ]
        );
        assert_eq!(
            kinds("x = /re[/]q/g.test(s)")[2],
            (TokKind::Regex, "/re[/]q/g")
        );
        assert_eq!(kinds("return /a/")[1], (TokKind::Regex, "/a/"));
        assert_eq!(kinds("(a) / 2")[3], (TokKind::Punct, "/"));
        assert_eq!(kinds("x++ / 2")[2], (TokKind::Punct, "/"));
        // A `/` that does not close on its line is a division.
        assert_eq!(kinds("= / 2\n/")[1], (TokKind::Punct, "/"));
    }

    #[test]
    fn templates_nest() {
        let src = "`a ${ `b ${c}` } d` / 2";
        assert_eq!(
            kinds(src),
            vec![
                (TokKind::Template, "`a ${"),
                (TokKind::Template, "`b ${"),
                (TokKind::Word, "c"),
                (TokKind::Template, "}`"),
                (TokKind::Template, "} d`"),
                (TokKind::Punct, "/"),
                (TokKind::Number, "2"),
            ]
        );
    }

    #[test]
    fn masks_keep_delimiters() {
        let src =
            "f('require(x)') // import('y')\n`import ${ require(1) } x`; x = /* a */ /import(/g";
        let expected = concat!(
            "f('          ')               \n",
            "`       ${ require(1) }  `; x =         /       /g"
        );
        assert_eq!(mask(src, &scan(src)), expected);
    }

    #[test]
    fn unicode_and_escapes() {
        assert_eq!(
            kinds("r\\u0065quire(1)")[0],
            (TokKind::Word, "r\\u0065quire")
        );
        assert_eq!(
            kinds("\u{e9}t\u{e9} = 1")[0],
            (TokKind::Word, "\u{e9}t\u{e9}")
        );
        assert_eq!(kinds("'ab\\'c' + 1")[0], (TokKind::Str, "'ab\\'c'"));
        assert_eq!(kinds("1e-5+2")[0], (TokKind::Number, "1e-5"));
        assert_eq!(kinds("0xe-5")[0], (TokKind::Number, "0xe"));
        assert_eq!(js_trim("\u{feff} x\u{2028}"), "x");
    }

    #[test]
    fn unterminated_constructs_end_cleanly() {
        assert_eq!(
            kinds("'abc\nd"),
            vec![(TokKind::Str, "'abc"), (TokKind::Word, "d")]
        );
        assert_eq!(kinds("/* x"), vec![(TokKind::Comment, "/* x")]);
        assert_eq!(kinds("`x ${"), vec![(TokKind::Template, "`x ${")]);
        assert_eq!(kinds("\\"), vec![(TokKind::Word, "\\")]);
    }
}
