//! The checks every cell's JavaScript goes through (docs/contract/guest.md#s4-4 steps 3 and 4): the module
//! check of docs/contract/guest.md#s4-5 and the shell check of docs/contract/guest.md#s4-6. Used by `prepare` for JavaScript cells and by
//! `typescript` on the stripped output, so `typescript` does not depend on `prepare`.

use crate::depth;
use crate::module_access::{masked_source_has_module_access, tree_has_module_access};
use crate::parse::{self, Grammar};
use crate::rejection::Rejection;
use crate::shell::is_shell_source;

/// The module check (docs/contract/guest.md#s4-5) on `javascript` and, with `shell_check`, the shell check
/// (docs/contract/guest.md#s4-6) with `original` as the text the model sent. Parses `javascript` with swc's plain
/// ECMAScript grammar as the body of the runtime's wrapper, on a stack sized for it.
///
/// # Errors
/// [`Rejection::ModuleAccessDisabled`], then (with `shell_check`) [`Rejection::ShellSource`].
pub(crate) fn check_javascript(
    original: &str,
    javascript: &str,
    shell_check: bool,
) -> Result<(), Rejection> {
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
