//! Parsing a cell the way the runtime runs it: as the body of `(async () => {\n<code>\n})()`
//! (docs/contract/guest.md#s4-1, docs/contract/guest.md#s4-5-static "Static check"), as a script, with the latest ECMAScript syntax.

use swc_core::common::comments::Comments;
use swc_core::common::{sync::Lrc, BytePos, FileName, SourceFile, SourceMap, Span, Spanned};
use swc_core::ecma::ast::{ArrowFunctionBody, Callee, EsVersion, Expr, Script, Stmt};
use swc_core::ecma::parser::error::{Error as ParseError, SyntaxError};
use swc_core::ecma::parser::{parse_file_as_script, EsSyntax, Syntax, TsSyntax};

use crate::depth::{self, Depth};
use crate::scan;
use crate::wrapper::{wrap_source, SCRIPT_NAME, WRAPPER_PREFIX, WRAPPER_SUFFIX};

/// The stack every swc run gets regardless of depth. In an unoptimised build,
/// `the_stack_budget_suffices` passes with 1 MiB (and 32 KiB per unit) and crashes with 512 KiB
/// (and 8 KiB per unit); this doubles the former.
const BASE_STACK_BYTES: usize = 2 * 1024 * 1024;

/// The stack per unit of the depth bound. The costliest constructs measured (nested functions,
/// classes, namespaces, parentheses; TypeScript through parse, module check, strip, fixer,
/// codegen and `Drop`) ran with 8 KiB per unit in an unoptimised build and crashed with 2 KiB
/// (with the 2 MiB base); this is four times the former.
const STACK_BYTES_PER_LEVEL: usize = 32 * 1024;

/// The stack swc needs for a source with this depth bound, in bytes.
pub(crate) fn stack_budget(depth: &Depth) -> usize {
    BASE_STACK_BYTES + depth.max.min(depth::MAX_DEPTH + 1) * STACK_BYTES_PER_LEVEL
}

/// Runs `f` with at least [`stack_budget`] bytes of stack: on the current stack when that much
/// remains, else on a fresh stack of that size (only the touched part is ever committed).
pub(crate) fn with_stack_for<R>(depth: &Depth, f: impl FnOnce() -> R) -> R {
    let budget = stack_budget(depth);
    stacker::maybe_grow(budget, budget, f)
}

/// Which grammar to parse with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grammar {
    /// Plain ECMAScript (latest), as QuickJS sees it.
    JavaScript,
    /// TypeScript (no JSX): `enum`, `namespace`, `declare`, annotations, `as`, `satisfies`, `!`.
    TypeScript,
}

/// A wrapped source and what swc made of it.
pub(crate) struct Parsed {
    pub cm: Lrc<SourceMap>,
    pub file: Lrc<SourceFile>,
    /// The script, when swc produced one; `None` also when the depth guard refused the source.
    pub script: Option<Script>,
    /// Every error swc reported, recoverable ones included. Empty when the source parses.
    pub errors: Vec<ParseError>,
    /// The byte offset (in the user's code) where the depth guard refused the source.
    pub too_deep_at: Option<usize>,
}

impl Parsed {
    /// The source parsed without any error.
    pub(crate) fn clean_script(&self) -> Option<&Script> {
        self.script.as_ref().filter(|_| self.errors.is_empty())
    }
}

/// Parses `code` wrapped in the runtime's async arrow; `depth` is `depth::measure(code)`. A
/// source deeper than `depth::MAX_DEPTH` is not parsed. Never panics; call inside
/// [`with_stack_for`] with the same `depth`.
pub(crate) fn parse_wrapped(
    code: &str,
    grammar: Grammar,
    comments: Option<&dyn Comments>,
    depth: &Depth,
) -> Parsed {
    let cm: Lrc<SourceMap> = Default::default();
    let file = cm.new_source_file(
        FileName::Custom(SCRIPT_NAME.into()).into(),
        wrap_source(code),
    );
    let too_deep_at = depth.exceeded_at;
    if too_deep_at.is_some() {
        return Parsed {
            cm,
            file,
            script: None,
            errors: Vec::new(),
            too_deep_at,
        };
    }
    let syntax = match grammar {
        Grammar::JavaScript => Syntax::Es(EsSyntax::default()),
        Grammar::TypeScript => Syntax::Typescript(TsSyntax::default()),
    };
    // swc's parser can panic on some inputs (an `unreachable!()` on `0%A%~\n`\\1``, found by
    // the proptests): model code is hostile, so a panic counts as a parse failure instead of
    // taking the host down.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut errors = Vec::new();
        let result =
            parse_file_as_script(&file, syntax, EsVersion::latest(), comments, &mut errors);
        (result, errors)
    }));
    let (script, errors) = match outcome {
        Ok((Ok(script), errors)) => (Some(script), errors),
        Ok((Err(fatal), mut errors)) => {
            errors.push(fatal);
            (None, errors)
        }
        Err(_) => (
            None,
            vec![ParseError::new(
                Span::new(file.start_pos, file.end_pos),
                SyntaxError::Unexpected {
                    got: "input the parser could not handle".into(),
                    expected: "a valid program",
                },
            )],
        ),
    };
    Parsed {
        cm,
        file,
        script,
        errors,
        too_deep_at: None,
    }
}

impl Parsed {
    /// `<line>:<column>` of a wrapped-source position, in the user's code: 1-based line, 1-based
    /// column in characters. Positions in the wrapper's first line map to `1:1`, positions in
    /// its last line to just after the end of the user's code.
    pub(crate) fn user_position(&self, pos: BytePos) -> (usize, usize) {
        let start = self.file.start_pos;
        let wrapped: &str = &self.file.src;
        let offset = (pos.0.saturating_sub(start.0) as usize).min(wrapped.len());
        let prefix = WRAPPER_PREFIX.len();
        let user_len = wrapped.len() - prefix - WRAPPER_SUFFIX.len();
        if offset < prefix {
            return (1, 1);
        }
        let user_offset = (offset - prefix).min(user_len);
        let user = &wrapped[prefix..prefix + user_len];
        let mut at = user_offset;
        while !user.is_char_boundary(at) {
            at -= 1;
        }
        user_line_column(user, at)
    }

    /// The diagnostics of a failed parse, in source order, de-duplicated:
    /// `<line>:<column>: <message>`.
    pub(crate) fn diagnostics(&self) -> Vec<String> {
        if let Some(at) = self.too_deep_at {
            let (line, column) = user_line_column(
                &self.file.src[WRAPPER_PREFIX.len()..self.file.src.len() - WRAPPER_SUFFIX.len()],
                at,
            );
            return vec![format!(
                "{line}:{column}: the code is nested too deeply (more than {} levels)",
                depth::MAX_DEPTH
            )];
        }
        let mut located: Vec<((usize, usize), String)> = self
            .errors
            .iter()
            .map(|error| {
                let (line, column) = self.user_position(error.span().lo);
                (
                    (line, column),
                    format!("{line}:{column}: {}", error.kind().msg()),
                )
            })
            .collect();
        located.sort();
        located.dedup();
        located.into_iter().map(|(_, text)| text).collect()
    }
}

/// 1-based line and column (in characters, a `\r\n` pair counting as one line break) of a byte
/// offset in `text`.
pub(crate) fn user_line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let mut line = 1;
    let mut column = 1;
    let mut chars = before.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if scan::is_line_terminator(c) {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// The statements of the wrapper's arrow body, when the script is exactly the wrapper
/// `(async () => { … })()` — that is, the user's code did not close the wrapper early.
pub(crate) fn wrapper_body_mut(script: &mut Script) -> Option<&mut Vec<Stmt>> {
    let [Stmt::Expr(statement)] = script.body.as_mut_slice() else {
        return None;
    };
    let Expr::Call(call) = &mut *statement.expr else {
        return None;
    };
    if !call.args.is_empty() {
        return None;
    }
    let Callee::Expr(callee) = &mut call.callee else {
        return None;
    };
    let mut callee: &mut Expr = callee;
    while let Expr::Paren(paren) = callee {
        callee = &mut paren.expr;
    }
    let Expr::Arrow(arrow) = callee else {
        return None;
    };
    if !arrow.is_async || !arrow.params.is_empty() {
        return None;
    }
    match &mut *arrow.body {
        ArrowFunctionBody::FunctionBody(body) => Some(&mut body.stmts),
        ArrowFunctionBody::Expr(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{prepare_source, Language};

    /// Runs `prepare_source` on a thread whose own stack is exactly the budget (plus a little for
    /// the thread's entry), so the budget is what swc really gets. A budget that is too small
    /// crashes the test binary.
    fn on_budgeted_thread(code: String, language: Language) {
        let budget = stack_budget(&depth::measure(&code)) + 64 * 1024;
        std::thread::Builder::new()
            .stack_size(budget)
            .spawn(move || {
                let _ = prepare_source(
                    &code,
                    language,
                    &[Language::JavaScript, Language::TypeScript],
                );
            })
            .expect("spawn")
            .join()
            .expect("no panic");
    }

    #[test]
    fn the_stack_budget_suffices() {
        let nested: &[(&str, &str)] = &[
            ("(", ")"),
            ("[", "]"),
            ("{a:", "}"),
            ("!", ""),
            ("a=", ""),
            ("a?b:", ""),
            ("a=>", ""),
            ("`${", "}`"),
            ("(function(){return ", "})()"),
            ("new (", ")"),
            ("await (async () => { return ", "})()"),
            ("{ m() { return ", "} }"),
            ("[function(){ return ", "}]"),
            ("`${(", ")}`"),
        ];
        let statements: &[(&str, &str)] = &[
            ("{", "}"),
            ("if(a)", ""),
            ("class A { m() { ", "} }"),
            ("namespace A { ", "}"),
            ("{ enum E { A } ", "}"),
            ("class A { constructor(private x: number) { ", "} }"),
            ("(function(){", "})();"),
        ];
        for language in [Language::JavaScript, Language::TypeScript] {
            for levels in [1, 10, 100, 300, 1000] {
                for (open, close) in nested {
                    on_budgeted_thread(
                        format!("return {}1{};", open.repeat(levels), close.repeat(levels)),
                        language,
                    );
                }
                for (open, close) in statements {
                    on_budgeted_thread(
                        format!("{}{}", open.repeat(levels), close.repeat(levels)),
                        language,
                    );
                }
                on_budgeted_thread(
                    format!(
                        "let x: {}number{} = 1;",
                        "Array<".repeat(levels),
                        ">".repeat(levels)
                    ),
                    language,
                );
                on_budgeted_thread(
                    format!("let a; if(a){{}}{}", "else if(a){}".repeat(levels)),
                    language,
                );
                on_budgeted_thread(
                    format!("let a; return a{}", "?.()".repeat(levels)),
                    language,
                );
                on_budgeted_thread(format!("return 1{}", " + 1".repeat(levels)), language);
            }
        }
    }
}
