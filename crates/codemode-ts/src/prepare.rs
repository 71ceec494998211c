//! The entry points: docs/contract/guest.md#s4-4 in order.

use serde_json::Value;

use crate::checks::{check_javascript, lean_verdict, CheckPath};
use crate::input::{parse_exec_input, Language};
use crate::rejection::Rejection;
use crate::typescript;

/// A cell ready to run: the result of [`prepare_exec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedExec {
    /// The JavaScript function body to run: the source itself for JavaScript, the stripped
    /// output for TypeScript. The runtime wraps it as `(async () => {\n<javascript>\n})()`
    /// ([`crate::wrap_source`]).
    pub javascript: String,
    /// The cell's language (hook events report it as `toolInputKind`, docs/contract/surface.md#s2-2).
    pub language: Language,
    /// `true` when the input says `restartSafe: true`; the effective value also honours a host
    /// that forces restart-safe tools (docs/contract/surface.md#s2-2, docs/contract/lifecycle.md#s5-10).
    pub restart_safe: bool,
}

/// Prepares one `exec` call: the argument checks of docs/contract/surface.md#s2-2, then
/// [`prepare_source`] (language gate, TypeScript strip, module check, shell check; docs/contract/guest.md#s4-4).
///
/// `input` is the raw `exec` argument object (`code`, `command`, `language`, `restartSafe`);
/// `languages` is the resolved `config.languages` (docs/contract/config.md#s1). Nothing here starts a VM or touches the
/// file system; every failure is a [`Rejection`] to report as `failed` / `invalid_input` with
/// [`Rejection::message`].
pub fn prepare_exec(input: &Value, languages: &[Language]) -> Result<PreparedExec, Rejection> {
    let input = parse_exec_input(input)?;
    let javascript = prepare_source(&input.source, input.language, languages)?;
    Ok(PreparedExec {
        javascript,
        language: input.language,
        restart_safe: input.restart_safe,
    })
}

/// Prepares a source whose language is known (docs/contract/guest.md#s4-4), returning the JavaScript
/// function body to run. In order:
///
/// 1. the language gate: `language` must be in `languages`, else
///    [`Rejection::LanguageDisabled`];
/// 2. TypeScript only: [`crate::strip_typescript`] (module check on the TypeScript tree, strip,
///    module check on the output), which may fail with [`Rejection::ModuleAccessDisabled`] or
///    [`Rejection::TypeScriptTransformFailed`];
/// 3. JavaScript: the module check of docs/contract/guest.md#s4-5 on the source, parsed with swc's plain ECMAScript
///    parser (the TypeScript transform is never touched), or the masked regex fallback when it
///    does not parse → [`Rejection::ModuleAccessDisabled`];
/// 4. the shell check of docs/contract/guest.md#s4-6 → [`Rejection::ShellSource`].
///
/// A JavaScript source comes back unchanged, including one that does not parse: QuickJS then
/// reports the `SyntaxError` (docs/contract/examples.md#e36). The input rules (a blank source) are [`prepare_exec`]'s job.
///
/// Steps 3 and 4 take the lean path ([`CheckPath::Lean`]): a cell whose text decides them (see
/// [`javascript_needs_parse`]) is not parsed; the result is the one the parse gives.
pub fn prepare_source(
    source: &str,
    language: Language,
    languages: &[Language],
) -> Result<String, Rejection> {
    prepare_source_with(source, language, languages, CheckPath::Lean)
}

/// [`prepare_source`] with the checks of steps 3 and 4 taking `path`: [`CheckPath::Lean`] is
/// what `prepare_source` does, [`CheckPath::Full`] parses every cell's JavaScript with swc (the
/// reference the lean path is proven and benchmarked against). Both return the same `Ok` text or
/// the same [`Rejection`] for every input; only the time differs.
pub fn prepare_source_with(
    source: &str,
    language: Language,
    languages: &[Language],
    path: CheckPath,
) -> Result<String, Rejection> {
    if !languages.contains(&language) {
        return Err(Rejection::LanguageDisabled(language));
    }
    match language {
        Language::TypeScript => typescript::strip(source, true, path),
        Language::JavaScript => {
            check_javascript(source, source, true, path)?;
            Ok(source.to_owned())
        }
    }
}

/// Whether the JavaScript cell `source` needs swc's parse in [`prepare_source`]: `true` when it
/// contains the word `import` or `require` (anywhere, also in comments, strings or spelled with
/// unicode escapes; docs/contract/guest.md#s4-5), or when the text steps of the shell check
/// (docs/contract/guest.md#s4-6 steps 1–8) leave the verdict to the parse (the cell starts with
/// a word that is neither a keyword nor a global, or with a path, followed by more text).
/// `false` means the lean path decides both checks from the text. Pure and cheap (a few
/// substring searches and anchored regexes).
pub fn javascript_needs_parse(source: &str) -> bool {
    lean_verdict(source, source, true).is_none()
}
