//! The checks every cell's JavaScript goes through (docs/contract/guest.md#s4-4 steps 3 and 4): the module
//! check of docs/contract/guest.md#s4-5 and the shell check of docs/contract/guest.md#s4-6. Used by `prepare` for JavaScript cells and by
//! `typescript` on the stripped output, so `typescript` does not depend on `prepare`.
//!
//! A cell takes the lean path when its text decides both checks: no module word
//! (`lean::may_access_modules`) and a shell verdict from the text steps 1–8
//! (`shell::text_steps`). Everything else is parsed with swc, as every cell was before; the
//! result is the same either way (the `lean_path` tests compare both on every corpus).

use crate::depth;
use crate::lean::may_access_modules;
use crate::module_access::{masked_source_has_module_access, tree_has_module_access};
use crate::parse::{self, Grammar};
use crate::rejection::Rejection;
use crate::shell::{self, is_shell_source, TextSteps};

/// How source preparation decides the module and shell checks of a cell's JavaScript
/// (docs/contract/guest.md#s4-5, docs/contract/guest.md#s4-6); see [`crate::prepare_source_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckPath {
    /// Decide from the text when it can (no `import`/`require` word, and a shell verdict from
    /// the text steps); parse with swc otherwise. What every `exec` uses.
    Lean,
    /// Always parse with swc: the reference the lean path is tested and benchmarked against.
    Full,
}

/// The module check (docs/contract/guest.md#s4-5) on `javascript` and, with `shell_check`, the shell check
/// (docs/contract/guest.md#s4-6) with `original` as the text the model sent. With [`CheckPath::Full`], or when
/// [`lean_verdict`] cannot decide, parses `javascript` with swc's plain ECMAScript grammar as
/// the body of the runtime's wrapper, on a stack sized for it.
///
/// # Errors
/// [`Rejection::ModuleAccessDisabled`], then (with `shell_check`) [`Rejection::ShellSource`].
pub(crate) fn check_javascript(
    original: &str,
    javascript: &str,
    shell_check: bool,
    path: CheckPath,
) -> Result<(), Rejection> {
    if path == CheckPath::Lean {
        if let Some(verdict) = lean_verdict(original, javascript, shell_check) {
            return verdict;
        }
    }
    parsed_checks(original, javascript, shell_check)
}

/// Both checks decided from the text alone, or `None` when only the parse can decide. `Some`
/// is always what [`parsed_checks`] returns: without a module word neither the tree check nor
/// the regex fallback can fire (`lean` module docs), and steps 1–8 of the shell check never read
/// the parse.
pub(crate) fn lean_verdict(
    original: &str,
    javascript: &str,
    shell_check: bool,
) -> Option<Result<(), Rejection>> {
    if may_access_modules(javascript) {
        return None;
    }
    if !shell_check {
        return Some(Ok(()));
    }
    match shell::text_steps(original) {
        TextSteps::Decided(true) => Some(Err(Rejection::ShellSource)),
        TextSteps::Decided(false) => Some(Ok(())),
        TextSteps::NeedParse(_) => None,
    }
}

thread_local! {
    /// How many times [`parsed_checks`] ran on this thread.
    static PARSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times the module and shell checks parsed a cell's JavaScript with swc on the
/// calling thread (per thread, so parallel tests do not disturb each other). A cell that takes
/// the lean path adds nothing; the TypeScript parse of a TypeScript cell is not counted here
/// (see [`crate::typescript_transform_count`]).
pub fn javascript_check_parse_count() -> u64 {
    PARSES.with(std::cell::Cell::get)
}

/// The checks on swc's parse of `javascript` (the full path).
fn parsed_checks(original: &str, javascript: &str, shell_check: bool) -> Result<(), Rejection> {
    PARSES.with(|parses| parses.set(parses.get() + 1));
    let depth = depth::measure(javascript);
    parse::with_stack_for(&depth, || {
        let parsed = parse::parse_wrapped(javascript, Grammar::JavaScript, None, &depth);
        // A program that does not parse is unparsable for docs/contract/guest.md#s4-5 even when swc recovered a tree;
        // that tree is checked as well, which can only add rejections the static check makes.
        let has_module_access = match parsed.clean_script() {
            Some(script) => tree_has_module_access(script),
            None => {
                masked_source_has_module_access(javascript)
                    || parsed.script.as_ref().is_some_and(tree_has_module_access)
            }
        };
        if has_module_access {
            return Err(Rejection::ModuleAccessDisabled);
        }
        if shell_check && is_shell_source(original, &parsed) {
            return Err(Rejection::ShellSource);
        }
        Ok(())
    })
}
