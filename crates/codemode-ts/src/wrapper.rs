//! The wrapper the runtime evaluates a cell in (docs/contract/guest.md#s4-1 "Wrapping"). Every parse in
//! this crate is of the wrapped source, so positions map back by subtracting one line.
//!
//! The wrapper and the script name are defined once, in `codemode_bridge::abi` (the guest wraps
//! the code with the same function); this module gives them this crate's names.

/// The text the runtime puts before the user's code (docs/contract/guest.md#s4-1 "Wrapping"):
/// `(async () => {` and a newline. The code is a function body, so top-level `await` and `return`
/// work; backtrace line numbers are one higher than the user's.
pub use codemode_bridge::abi::WRAPPER_PREFIX;

/// The text the runtime puts after the user's code (docs/contract/guest.md#s4-1): a newline and `})()`.
pub use codemode_bridge::abi::WRAPPER_SUFFIX;

/// The script name the runtime evaluates the wrapped code under (docs/contract/guest.md#s4-1).
pub use codemode_bridge::abi::USER_SCRIPT_NAME as SCRIPT_NAME;

/// Wraps prepared JavaScript exactly as the runtime evaluates it (docs/contract/guest.md#s4-1):
/// `(async () => {\n<code>\n})()`. Returns a new string of `code.len() + 20` bytes.
pub use codemode_bridge::abi::wrap_user_code as wrap_source;
