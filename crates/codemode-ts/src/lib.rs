//! Source preparation for code mode: everything that happens to the model's code before a VM
//! starts (docs/contract/guest.md#s4-4).
//!
//! The steps, in order:
//!
//! 1. **Input rules** (docs/contract/surface.md#s2-2): `code` / `command` / `language` / `restartSafe`
//!    ([`parse_exec_input`]).
//! 2. **Language gate** (docs/contract/guest.md#s4-4 step 1): the language must be enabled in `config.languages`.
//! 3. **TypeScript** (docs/contract/guest.md#s4-7, TypeScript cells only): module check on the TypeScript tree, type strip
//!    with swc, module check on the emitted JavaScript ([`strip_typescript`]).
//! 4. **Module check** (docs/contract/guest.md#s4-5): `code mode module access is disabled.`
//! 5. **Shell check** (docs/contract/guest.md#s4-6): shell commands sent as code are rejected.
//!
//! The one entry point for an `exec` call is [`prepare_exec`]; [`prepare_source`] starts at step 2
//! for callers (such as a CLI) that already know the source and the language. Every failure is a
//! [`Rejection`], which the caller reports as a `failed` result with `code: "invalid_input"` and
//! [`Rejection::message`] as the error text. JavaScript cells never run the TypeScript transform
//! (docs/contract/examples.md#e33; see [`typescript_transform_count`]).
//!
//! Module access through aliases (`const load = require`, `module.require(…)`,
//! `process.getBuiltinModule(…)`) is caught at run time; [`is_module_access_reference_error`]
//! tells the runtime which uncaught errors map to the module-access message (docs/contract/guest.md#s4-5-runtime "At run time").

#![deny(missing_docs)]

mod calls;
mod checks;
mod depth;
mod input;
mod lean;
mod module_access;
mod parse;
mod prepare;
mod rejection;
mod scan;
mod shell;
mod syntax;
mod typescript;
mod wrapper;

pub use calls::{tools_calls, ToolsCall};
pub use checks::{javascript_check_parse_count, CheckPath};
pub use input::{parse_exec_input, ExecInput, Language};
pub use module_access::is_module_access_reference_error;
pub use prepare::{
    javascript_needs_parse, prepare_exec, prepare_source, prepare_source_with, PreparedExec,
};
pub use rejection::{
    Rejection, CODE_AND_COMMAND_MISMATCH, INVALID_INPUT, INVALID_LANGUAGE, INVALID_RESTART_SAFE,
    JAVASCRIPT_DISABLED, MAX_SOURCE_BYTES, MISSING_SOURCE, MODULE_ACCESS_DISABLED, SHELL_SOURCE,
    TYPESCRIPT_DISABLED, TYPESCRIPT_TRANSFORM_FAILED_PREFIX,
};
pub use syntax::{program_syntax_error, ProgramEnd, NO_TOOLS_DISPATCHED};
pub use typescript::{strip_typescript, typescript_transform_count};
pub use wrapper::{wrap_source, SCRIPT_NAME, WRAPPER_PREFIX, WRAPPER_SUFFIX};
