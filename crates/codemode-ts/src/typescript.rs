//! The TypeScript step (docs/contract/guest.md#s4-4 step 2, docs/contract/guest.md#s4-7): module check on the TypeScript tree,
//! type strip with swc, module check on the emitted JavaScript.

use std::sync::atomic::{AtomicU64, Ordering};

use swc_core::common::comments::SingleThreadedComments;
use swc_core::common::{BytePos, Globals, Mark, Span, Spanned, GLOBALS};
use swc_core::ecma::ast::{EsVersion, Pass, Program, Script};
use swc_core::ecma::codegen::text_writer::{JsWriter, WriteJs};
use swc_core::ecma::codegen::{Config as CodegenConfig, Emitter, Result as WriteResult};
use swc_core::ecma::transforms::base::{fixer::fixer, hygiene::hygiene, resolver};
use swc_core::ecma::transforms::typescript::{typescript, Config as TsConfig};

use crate::checks::{check_javascript, CheckPath};
use crate::depth::{self, Depth};
use crate::module_access::{masked_source_has_module_access, tree_has_module_access};
use crate::parse::{self, Grammar, Parsed};
use crate::rejection::Rejection;

/// How many times the TypeScript transform ran in this process.
static TRANSFORMS: AtomicU64 = AtomicU64::new(0);

/// How many times this process ran swc's TypeScript transform (the strip pass), counted when it
/// starts. JavaScript cells never run it (docs/contract/guest.md#s4-7, docs/contract/examples.md#e33), so the count does not change
/// while only JavaScript cells are prepared; tests and diagnostics use this to check that.
pub fn typescript_transform_count() -> u64 {
    TRANSFORMS.load(Ordering::Relaxed)
}

/// Strips the types from a TypeScript cell (docs/contract/guest.md#s4-7) and applies the module checks of
/// docs/contract/guest.md#s4-4 step 2 on the way. Returns the JavaScript body (without the wrapper) to run.
///
/// The code is parsed with swc's TypeScript grammar as the body of
/// `(async () => {\n<code>\n})()`, so top-level `await` and `return` work. `enum`, `namespace`
/// and parameter properties are compiled, class fields stay native (ES2022), and everything
/// type-only (`interface`, `type`, `declare`, annotations, `as`, `satisfies`, `!`, generics) is
/// removed. There is no type checking. Comments are kept.
///
/// Errors:
/// - [`Rejection::ModuleAccessDisabled`] when the TypeScript tree (or, for a source swc cannot
///   parse at all, the masked regex fallback of docs/contract/guest.md#s4-5) or the emitted JavaScript contains module
///   access;
/// - [`Rejection::TypeScriptTransformFailed`] for any parse diagnostic, each as
///   `<line>:<column>: <message>` in the user's code; also when the code closes the wrapper's
///   braces early (`}); …`), since the result could not be re-wrapped faithfully.
pub fn strip_typescript(source: &str) -> Result<String, Rejection> {
    strip(source, false, CheckPath::Lean)
}

/// [`strip_typescript`], followed by the shell check of docs/contract/guest.md#s4-6 when `shell_check`
/// (text steps on `source`, parsing steps on the emitted JavaScript). `path` is how the checks
/// of the emitted JavaScript decide ([`CheckPath`]); the TypeScript itself is always parsed.
pub(crate) fn strip(source: &str, shell_check: bool, path: CheckPath) -> Result<String, Rejection> {
    let depth = depth::measure(source);
    let javascript = parse::with_stack_for(&depth, || strip_types(source, &depth))?;
    check_javascript(source, &javascript, shell_check, path)?;
    Ok(javascript)
}

/// The TypeScript half of [`strip`]: module check on the TypeScript tree, strip, emit.
fn strip_types(source: &str, depth: &Depth) -> Result<String, Rejection> {
    let comments = SingleThreadedComments::default();
    let mut parsed = parse::parse_wrapped(source, Grammar::TypeScript, Some(&comments), depth);

    let has_module_access = match &parsed.script {
        Some(script) => tree_has_module_access(script),
        None => masked_source_has_module_access(source),
    };
    if has_module_access {
        return Err(Rejection::ModuleAccessDisabled);
    }
    if parsed.too_deep_at.is_some() || !parsed.errors.is_empty() {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: parsed.diagnostics(),
        });
    }
    let Some(mut script) = parsed.script.take() else {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: parsed.diagnostics(),
        });
    };
    if parse::wrapper_body_mut(&mut script).is_none() {
        let position = script.body.get(1).map_or((1, 1), |statement| {
            parsed.user_position(statement.span().lo)
        });
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: vec![format!(
                "{}:{}: the code closes the braces of its async function wrapper; it must be a function body",
                position.0, position.1
            )],
        });
    }

    TRANSFORMS.fetch_add(1, Ordering::Relaxed);
    let body = GLOBALS.set(&Globals::new(), || {
        let unresolved_mark = Mark::new();
        let top_level_mark = Mark::new();
        let config = TsConfig {
            native_class_properties: true,
            ts_enum_is_mutable: true,
            no_empty_export: true,
            ..TsConfig::default()
        };
        let mut program = Program::Script(script);
        (
            resolver(unresolved_mark, top_level_mark, true),
            typescript(config, unresolved_mark, top_level_mark),
            hygiene(),
            fixer(Some(&comments)),
        )
            .process(&mut program);
        let Program::Script(mut script) = program else {
            return None;
        };
        parse::wrapper_body_mut(&mut script).map(std::mem::take)
    });
    let Some(body) = body else {
        return Err(Rejection::TypeScriptTransformFailed {
            diagnostics: vec!["1:1: the transform did not keep the async function wrapper".into()],
        });
    };

    let emitted = Script {
        span: Default::default(),
        body,
        shebang: None,
    };
    Ok(emit(&parsed, &emitted, &comments))
}

/// Prints the stripped statements as ES2022 source with the kept comments, without a trailing
/// newline, keeping every token that has a source position on the user's line and, where the
/// output has not run ahead, at the user's column (docs/contract/decisions.md#d13): the runtime
/// wraps the result exactly as it wraps JavaScript, so backtraces of a TypeScript cell cite the
/// user's own lines.
fn emit(parsed: &Parsed, script: &Script, comments: &SingleThreadedComments) -> String {
    let mut buffer = Vec::new();
    {
        let mut emitter = Emitter {
            cfg: CodegenConfig::default().with_target(EsVersion::Es2022),
            cm: parsed.cm.clone(),
            comments: Some(comments),
            wr: KeepLines::new(
                JsWriter::new(parsed.cm.clone(), "\n", &mut buffer, None),
                parsed,
            ),
        };
        // Writing into a Vec cannot fail.
        let _ = emitter.emit_script(script);
    }
    let mut javascript = String::from_utf8_lossy(&buffer).into_owned();
    let trimmed = javascript.trim_end().len();
    javascript.truncate(trimmed);
    javascript
}

/// Where the writer is with respect to template literals.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Template {
    /// Inside a template's text (after `` ` `` or a substitution's `}`): nothing may be inserted.
    Text,
    /// Inside a `${…}` substitution, with this many unclosed `{`.
    Code(u32),
}

/// A [`WriteJs`] around swc's writer that lays tokens out on the user's lines (Babel's
/// `retainLines`, plus columns). swc's emitter reports the source position of most tokens
/// (`add_srcmap`, and the spans it passes to the writer); before the next token this writer adds
/// line breaks until the output reaches that token's line, and spaces until it reaches its
/// column. The emitter's own line breaks are replaced by spaces (after a `//` comment one is
/// kept), and indentation is dropped, so the output never runs ahead of the source on its own.
///
/// Safety of the layout: only whitespace between tokens changes, and never inside template text.
/// A line break is never put where one would change the program: after `return`, `throw`,
/// `break`, `continue`, `yield`, `async`, `get`, `set`, `static` and `accessor`, or before `=>`,
/// `++` and `--` (the "no line terminator here" positions and class-member modifiers). swc writes
/// every semicolon, so no other line break matters.
struct KeepLines<'a, W: WriteJs> {
    inner: W,
    /// The wrapped source (`WRAPPER_PREFIX` + code + `WRAPPER_SUFFIX`) and its start position.
    source: &'a str,
    start: u32,
    /// Byte offsets (in `source`) just after each `\n`: the starts of lines 2, 3, …
    line_starts: Vec<usize>,
    /// Output position: 1-based line and column of the next character.
    line: usize,
    column: usize,
    /// Where the next token belongs: the user's (line, column) of the last reported position.
    target: Option<(usize, usize)>,
    /// The emitter asked for a line break that has not been written.
    pending_break: bool,
    /// The last text written was a `//` comment: the next line break must be written.
    line_comment: bool,
    /// The last token was one after which a line break would change the program.
    no_break_after: bool,
    /// Template literals being written, innermost last.
    templates: Vec<Template>,
}

impl<'a, W: WriteJs> KeepLines<'a, W> {
    fn new(inner: W, parsed: &'a Parsed) -> Self {
        let source: &str = &parsed.file.src;
        let line_starts = source
            .bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        KeepLines {
            inner,
            source,
            start: parsed.file.start_pos.0,
            line_starts,
            line: 1,
            column: 1,
            target: None,
            pending_break: false,
            line_comment: false,
            no_break_after: false,
            templates: Vec::new(),
        }
    }

    /// The user's (line, column) of a source position; `None` for synthesized code and positions
    /// in the wrapper. The wrapper's first line is line 0 of the user's code.
    fn user_position(&self, pos: BytePos) -> Option<(usize, usize)> {
        if pos.is_dummy() || pos.0 < self.start {
            return None;
        }
        let offset = (pos.0 - self.start) as usize;
        if offset > self.source.len() {
            return None;
        }
        let index = self.line_starts.partition_point(|&s| s <= offset);
        if index == 0 || index > self.line_starts.len().saturating_sub(1) {
            // The wrapper's prefix line, or its suffix line.
            return None;
        }
        let line_start = self.line_starts[index - 1];
        let mut at = offset;
        while !self.source.is_char_boundary(at) {
            at -= 1;
        }
        let column = self.source[line_start..at].chars().count() + 1;
        Some((index, column))
    }

    fn note(&mut self, pos: BytePos) {
        if let Some(position) = self.user_position(pos) {
            self.target = Some(position);
        }
    }

    fn in_template_text(&self) -> bool {
        self.templates.last() == Some(&Template::Text)
    }

    /// Lays out the whitespace before a token `text` (its span start `pos`, when it has one).
    fn before(&mut self, pos: Option<BytePos>, text: &str) -> WriteResult {
        if let Some(pos) = pos {
            self.note(pos);
        }
        let target = self.target.take();
        if self.in_template_text() {
            return Ok(());
        }
        let may_break = !self.no_break_after && !matches!(text, "=>" | "++" | "--");
        if let Some((line, _)) = target {
            if line > self.line && may_break {
                // Raw line feeds: swc's writer folds consecutive `write_line`s into one.
                while self.line < line {
                    self.inner.write_str("\n")?;
                    self.line += 1;
                }
                self.column = 1;
                self.pending_break = false;
                self.line_comment = false;
            }
        }
        if self.pending_break {
            if self.line_comment {
                self.inner.write_str("\n")?;
                self.line += 1;
                self.column = 1;
            } else if self.column > 1 {
                self.inner.write_space()?;
                self.column += 1;
            }
            self.pending_break = false;
            self.line_comment = false;
        }
        if let Some((line, column)) = target {
            if line == self.line {
                while self.column < column {
                    self.inner.write_space()?;
                    self.column += 1;
                }
            }
        }
        Ok(())
    }

    /// Accounts for `text` once written, and remembers whether it forbids a following break.
    fn after(&mut self, text: &str) {
        match text.rfind('\n') {
            Some(at) => {
                self.line += text.matches('\n').count();
                self.column = text[at + 1..].chars().count() + 1;
            }
            None => self.column += text.chars().count(),
        }
        self.no_break_after = matches!(
            text,
            "return"
                | "throw"
                | "break"
                | "continue"
                | "yield"
                | "async"
                | "get"
                | "set"
                | "static"
                | "accessor"
        );
    }

    fn token(&mut self, pos: Option<BytePos>, text: &str) -> WriteResult {
        self.before(pos, text)?;
        self.after(text);
        Ok(())
    }

    /// Tracks template literals through their punctuation.
    fn punct_state(&mut self, s: &str) {
        match (s, self.templates.last().copied()) {
            ("`", Some(Template::Text)) => {
                self.templates.pop();
            }
            ("`", _) => self.templates.push(Template::Text),
            ("${", Some(Template::Text)) => {
                if let Some(top) = self.templates.last_mut() {
                    *top = Template::Code(0);
                }
            }
            (_, Some(Template::Code(depth))) => {
                let opened = s.matches('{').count() as u32;
                let closed = s.matches('}').count() as u32;
                if closed > depth + opened {
                    // The substitution's closing `}`: back in the template's text.
                    if let Some(top) = self.templates.last_mut() {
                        *top = Template::Text;
                    }
                } else if let Some(top) = self.templates.last_mut() {
                    *top = Template::Code(depth + opened - closed);
                }
            }
            _ => {}
        }
    }
}

fn lo(span: Option<Span>) -> Option<BytePos> {
    span.map(|s| s.lo)
}

impl<W: WriteJs> WriteJs for KeepLines<'_, W> {
    fn increase_indent(&mut self) -> WriteResult {
        Ok(())
    }

    fn decrease_indent(&mut self) -> WriteResult {
        Ok(())
    }

    fn write_semi(&mut self, span: Option<Span>) -> WriteResult {
        self.token(lo(span), ";")?;
        self.inner.write_semi(span)
    }

    fn write_space(&mut self) -> WriteResult {
        if self.in_template_text() || self.pending_break {
            return Ok(());
        }
        self.column += 1;
        self.inner.write_space()
    }

    fn write_keyword(&mut self, span: Option<Span>, s: &'static str) -> WriteResult {
        self.token(lo(span), s)?;
        self.inner.write_keyword(span, s)
    }

    fn write_operator(&mut self, span: Option<Span>, s: &str) -> WriteResult {
        self.token(lo(span), s)?;
        self.inner.write_operator(span, s)
    }

    fn write_param(&mut self, s: &str) -> WriteResult {
        self.token(None, s)?;
        self.inner.write_param(s)
    }

    fn write_property(&mut self, s: &str) -> WriteResult {
        self.token(None, s)?;
        self.inner.write_property(s)
    }

    fn write_line(&mut self) -> WriteResult {
        if self.in_template_text() {
            self.line += 1;
            self.column = 1;
            return self.inner.write_line();
        }
        self.pending_break = true;
        Ok(())
    }

    fn write_lit(&mut self, span: Span, s: &str) -> WriteResult {
        self.token(Some(span.lo), s)?;
        self.inner.write_lit(span, s)
    }

    fn write_comment(&mut self, s: &str) -> WriteResult {
        self.token(None, s)?;
        if s == "//" {
            self.line_comment = true;
        }
        self.inner.write_comment(s)
    }

    fn write_str_lit(&mut self, span: Span, s: &str) -> WriteResult {
        self.token(Some(span.lo), s)?;
        self.inner.write_str_lit(span, s)
    }

    fn write_str(&mut self, s: &str) -> WriteResult {
        self.token(None, s)?;
        self.inner.write_str(s)
    }

    fn write_symbol(&mut self, span: Span, s: &str) -> WriteResult {
        self.token(Some(span.lo), s)?;
        self.inner.write_symbol(span, s)
    }

    fn write_punct(&mut self, span: Option<Span>, s: &'static str, commit: bool) -> WriteResult {
        self.token(lo(span), s)?;
        self.punct_state(s);
        self.inner.write_punct(span, s, commit)
    }

    fn care_about_srcmap(&self) -> bool {
        true
    }

    fn add_srcmap(&mut self, pos: BytePos) -> WriteResult {
        self.note(pos);
        Ok(())
    }

    fn commit_pending_semi(&mut self) -> WriteResult {
        self.inner.commit_pending_semi()
    }
}
