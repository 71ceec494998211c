//! The wrapper the runtime evaluates a cell in (behaviour.md §4.1 "Wrapping"). Every parse in
//! this crate is of the wrapped source, so positions map back by subtracting one line.

/// The text the runtime puts before the user's code (behaviour.md §4.1 "Wrapping"):
/// `(async () => {` and a newline. The code is a function body, so top-level `await` and `return`
/// work; backtrace line numbers are one higher than the user's.
pub const WRAPPER_PREFIX: &str = "(async () => {\n";

/// The text the runtime puts after the user's code (behaviour.md §4.1): a newline and `})()`.
pub const WRAPPER_SUFFIX: &str = "\n})()";

/// The script name the runtime evaluates the wrapped code under (behaviour.md §4.1).
pub const SCRIPT_NAME: &str = "openclaw-code-mode:user.js";

/// Wraps prepared JavaScript exactly as the runtime evaluates it (behaviour.md §4.1):
/// `(async () => {\n<code>\n})()`. Returns a new string of `code.len() + 20` bytes.
pub fn wrap_source(code: &str) -> String {
    let mut wrapped =
        String::with_capacity(WRAPPER_PREFIX.len() + code.len() + WRAPPER_SUFFIX.len());
    wrapped.push_str(WRAPPER_PREFIX);
    wrapped.push_str(code);
    wrapped.push_str(WRAPPER_SUFFIX);
    wrapped
}
