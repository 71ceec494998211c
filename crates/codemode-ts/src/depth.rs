//! The nesting-depth guard.
//!
//! swc's parser, visitors, transforms, code generator and `Drop` of the syntax tree all recurse
//! once per nesting level; a hostile cell such as 100 000 `(` would overflow the stack and abort
//! the host. Before swc sees a source, [`measure`] bounds the depth of the tree the source can
//! produce, from its tokens alone. Sources above [`MAX_DEPTH`] are never given to swc (they count
//! as unparsable), and swc runs on a stack sized for the measured bound
//! (`parse::with_stack_for`).
//!
//! The bound is conservative: it counts every bracket, operator and keyword that can start a
//! nested construct, and only forgets them where a construct provably ended: `;` and `,`, and a
//! line break (or a `}`) after a complete expression followed by a token that cannot continue it.

use crate::scan::{scan, Tok, TokKind};

/// The deepest syntax tree (in the guard's units) that swc is given. Far beyond any cell a model
/// writes; QuickJS itself refuses much shallower programs.
pub(crate) const MAX_DEPTH: usize = 1_000;

/// The depth bound of one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Depth {
    /// The largest bound reached (at most `MAX_DEPTH + 1`: measuring stops there).
    pub max: usize,
    /// The byte offset of the token where the bound first exceeded [`MAX_DEPTH`].
    pub exceeded_at: Option<usize>,
}

/// Words that can start or continue a nested construct.
const NESTING_WORDS: &[&str] = &[
    "abstract",
    "as",
    "async",
    "asserts",
    "await",
    "case",
    "catch",
    "class",
    "const",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "finally",
    "for",
    "function",
    "get",
    "if",
    "implements",
    "in",
    "infer",
    "instanceof",
    "interface",
    "is",
    "keyof",
    "let",
    "module",
    "namespace",
    "new",
    "of",
    "private",
    "protected",
    "public",
    "readonly",
    "return",
    "satisfies",
    "set",
    "static",
    "switch",
    "throw",
    "try",
    "type",
    "typeof",
    "unique",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Words that continue the expression or statement before them.
const CONTINUATION_WORDS: &[&str] = &[
    "as",
    "catch",
    "else",
    "extends",
    "finally",
    "implements",
    "in",
    "instanceof",
    "of",
    "satisfies",
    "while",
];

/// Bounds the depth of the syntax tree of `src`. Linear in its length.
pub(crate) fn measure(src: &str) -> Depth {
    measure_tokens(src, &scan(src))
}

fn measure_tokens(src: &str, toks: &[Tok]) -> Depth {
    let mut max = 0;
    // One entry per open bracket or template substitution: the run of the enclosing level.
    let mut frames: Vec<usize> = Vec::new();
    let mut saved_total = 0usize;
    let mut run = 0usize;
    let mut prev: Option<&Tok> = None;

    for tok in toks.iter().filter(|t| t.kind != TokKind::Comment) {
        let text = tok.text(src);
        if let Some(p) = prev {
            let boundary_before = tok.nl_before || p.text(src) == "}";
            if boundary_before && ends_expression(p, src) && starts_statement(tok, src) {
                run = 0;
            }
        }

        let resumes = tok.resumes_template(src);
        let closes = resumes || (tok.kind == TokKind::Punct && matches!(text, ")" | "]" | "}"));
        if closes {
            if let Some(saved) = frames.pop() {
                saved_total -= saved;
                run = saved + 1;
            }
        }
        let opens = tok.opens_substitution
            || (tok.kind == TokKind::Punct && matches!(text, "(" | "[" | "{"));
        match tok.kind {
            TokKind::Punct if matches!(text, ";" | ",") => run = 0,
            TokKind::Punct if !closes && !opens => run += 1,
            TokKind::Word if NESTING_WORDS.contains(&text) => run += 1,
            TokKind::Template if tok.opens_template(src) => run += 1,
            _ => {}
        }
        if opens {
            frames.push(run);
            saved_total += run;
            run = 0;
        }
        max = max.max(frames.len() + saved_total + run);
        if max > MAX_DEPTH {
            return Depth {
                max,
                exceeded_at: Some(tok.start),
            };
        }
        prev = Some(tok);
    }
    Depth {
        max,
        exceeded_at: None,
    }
}

/// A token after which an expression can be complete.
fn ends_expression(tok: &Tok, src: &str) -> bool {
    let text = tok.text(src);
    match tok.kind {
        TokKind::Word => !NESTING_WORDS.contains(&text),
        TokKind::Number | TokKind::Str | TokKind::Regex => true,
        TokKind::Template => !tok.opens_substitution,
        TokKind::Punct => matches!(text, ")" | "]" | "}" | "++" | "--"),
        TokKind::Comment => false,
    }
}

/// A token that cannot continue the expression before it.
fn starts_statement(tok: &Tok, src: &str) -> bool {
    let text = tok.text(src);
    match tok.kind {
        TokKind::Word => !CONTINUATION_WORDS.contains(&text),
        TokKind::Number | TokKind::Str => true,
        TokKind::Punct => matches!(text, "++" | "--" | "!" | "~" | "{" | "@"),
        TokKind::Template | TokKind::Regex | TokKind::Comment => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str) -> Option<usize> {
        measure(src).exceeded_at
    }

    #[test]
    fn deep_constructs_are_caught() {
        let n = MAX_DEPTH + 1;
        for deep in [
            format!("{}1{}", "(".repeat(n), ")".repeat(n)),
            format!("{}1", "!".repeat(n)),
            format!("{}1", "a=".repeat(n)),
            format!("{}1", "a?b:".repeat(n)),
            format!("{}1", "a=>".repeat(n)),
            format!("{}b", "a.".repeat(n)),
            format!("a{}", "()".repeat(n)),
            format!("a{}", "`x`".repeat(n)),
            format!("{}1", "if(a)".repeat(n)),
            format!("{}1", "new ".repeat(n)),
            format!("x = 1{}", " + 1".repeat(n)),
            format!("{}1", "a=\n".repeat(n)),
            format!("{}{}", "`${".repeat(n), "}`".repeat(n)),
        ] {
            assert!(check(&deep).is_some(), "{}", &deep[..40]);
        }
    }

    #[test]
    fn long_flat_programs_pass() {
        let statements = "const value = items.map((item) => item.id + 1);\n".repeat(5_000);
        assert_eq!(check(&statements), None);
        let no_semicolons = "let a = b\nif (a) { a = c(a) }\n".repeat(5_000);
        assert_eq!(check(&no_semicolons), None);
        let one_line = format!("[{}]", "1, ".repeat(20_000));
        assert_eq!(check(&one_line), None);
        let deep_ok = format!(
            "{}1{}",
            "(".repeat(MAX_DEPTH - 2),
            ")".repeat(MAX_DEPTH - 2)
        );
        assert_eq!(check(&deep_ok), None);
    }

    #[test]
    fn typical_cells_are_shallow() {
        let cell = "const hits = await tools.search(\"ticket\", { limit: 5 });\nreturn hits.map((hit) => hit.id).filter((id) => id.includes(\"x\"));";
        assert_eq!(measure(cell).max, 9);
        assert_eq!(measure("").max, 0);
        assert_eq!(measure("((1))").max, 2);
    }
}
