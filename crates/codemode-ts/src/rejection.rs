//! The rejections of source preparation and their exact messages (docs/contract/surface.md#s2-2, docs/contract/guest.md#s4-4 to #s4-7).

use codemode_bridge::Language;

/// The result code of every [`Rejection`] (docs/contract/guest.md#s4-4: "Each failure here is
/// `invalid_input`").
pub const INVALID_INPUT: &str = "invalid_input";

/// docs/contract/surface.md#s2-2 rule 1: `code` and `command` are both strings and differ.
pub const CODE_AND_COMMAND_MISMATCH: &str = "code and command must match when both are provided.";

/// docs/contract/surface.md#s2-2 rule 2: the chosen source is missing, not a string, or blank.
pub const MISSING_SOURCE: &str = "code or command must be a non-empty string.";

/// docs/contract/surface.md#s2-2 rule 3: `language` is present and not `"javascript"` or `"typescript"`.
pub const INVALID_LANGUAGE: &str = "language must be javascript or typescript.";

/// docs/contract/surface.md#s2-2 rule 4: `restartSafe` is present and not a boolean.
pub const INVALID_RESTART_SAFE: &str = "restartSafe must be a boolean.";

/// docs/contract/guest.md#s4-4 step 1: JavaScript is not in `config.languages`.
pub const JAVASCRIPT_DISABLED: &str = "code mode javascript input is disabled.";

/// docs/contract/guest.md#s4-4 step 1: TypeScript is not in `config.languages`.
pub const TYPESCRIPT_DISABLED: &str = "code mode typescript input is disabled.";

/// docs/contract/guest.md#s4-7: the start of every TypeScript transform failure; the diagnostics follow,
/// joined with `\n`.
pub const TYPESCRIPT_TRANSFORM_FAILED_PREFIX: &str = "typescript transform failed: ";

/// docs/contract/guest.md#s4-5: module access (import, dynamic `import()`, `import.meta`, `require(…)`).
pub const MODULE_ACCESS_DISABLED: &str = "code mode module access is disabled.";

/// docs/contract/guest.md#s4-6: a shell command sent as code.
pub const SHELL_SOURCE: &str = "code-mode exec runs JavaScript or TypeScript, not shell commands. Call shell, file, or other tools from guest JavaScript with tools.callValue and an exact tool id from ALL_TOOLS or tools.search. Do not retry the same shell command as code.";

/// Largest source `exec` accepts, in UTF-8 bytes (1 MiB). Preparation parses the whole source
/// (swc, not interruptible) before the deadline can be checked, so its size bounds the time
/// preparation can take past `timeoutMs` (docs/threat-model.md, "Deadlines"). A larger source
/// is [`Rejection::SourceTooLarge`].
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// Why an `exec` input was refused before any VM started (docs/contract/surface.md#s2-2 and docs/contract/guest.md#s4-4).
///
/// Every variant is reported as a `failed` result with `code` [`Rejection::code`]
/// (`"invalid_input"`) and error text [`Rejection::message`] (the `Display` output), which is the
/// exact message of the spec. No message contains a host path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// docs/contract/surface.md#s2-2 rule 1: `code and command must match when both are provided.`
    #[error("{}", CODE_AND_COMMAND_MISMATCH)]
    CodeAndCommandMismatch,
    /// docs/contract/surface.md#s2-2 rule 2: `code or command must be a non-empty string.`
    #[error("{}", MISSING_SOURCE)]
    MissingSource,
    /// docs/contract/surface.md#s2-2 rule 3: `language must be javascript or typescript.`
    #[error("{}", INVALID_LANGUAGE)]
    InvalidLanguage,
    /// docs/contract/surface.md#s2-2 rule 4: `restartSafe must be a boolean.`
    #[error("{}", INVALID_RESTART_SAFE)]
    InvalidRestartSafe,
    /// docs/contract/guest.md#s4-4 step 1: `code mode javascript input is disabled.` or
    /// `code mode typescript input is disabled.`
    #[error("{}", match .0 { Language::JavaScript => JAVASCRIPT_DISABLED, Language::TypeScript => TYPESCRIPT_DISABLED })]
    LanguageDisabled(Language),
    /// docs/contract/guest.md#s4-7: `typescript transform failed: ` + the diagnostics joined with `\n`. Each diagnostic
    /// reads `<line>:<column>: <message>`, with a 1-based line and a 1-based column (in
    /// characters) in the user's code, not the wrapper's.
    #[error("{}{}", TYPESCRIPT_TRANSFORM_FAILED_PREFIX, .diagnostics.join("\n"))]
    TypeScriptTransformFailed {
        /// The diagnostics, in source order, at least one.
        diagnostics: Vec<String>,
    },
    /// docs/contract/guest.md#s4-5: `code mode module access is disabled.`
    #[error("{}", MODULE_ACCESS_DISABLED)]
    ModuleAccessDisabled,
    /// docs/contract/guest.md#s4-6: the shell-source message ([`SHELL_SOURCE`]).
    #[error("{}", SHELL_SOURCE)]
    ShellSource,
    /// The source is over [`MAX_SOURCE_BYTES`] (this product's cap, docs/threat-model.md):
    /// `code mode source is too large: <bytes> bytes (at most 1048576 bytes).`
    #[error("code mode source is too large: {bytes} bytes (at most {MAX_SOURCE_BYTES} bytes).")]
    SourceTooLarge {
        /// The source's length in UTF-8 bytes.
        bytes: usize,
    },
}

impl Rejection {
    /// The result code: always `"invalid_input"` (docs/contract/guest.md#s4-4, docs/contract/decisions.md#d1).
    pub fn code(&self) -> &'static str {
        INVALID_INPUT
    }

    /// The exact error text of the `failed` result (the `Display` output).
    pub fn message(&self) -> String {
        self.to_string()
    }
}
