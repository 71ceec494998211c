//! The rejections of source preparation and their exact messages (behaviour.md §2.2, §4.4–§4.7).

use codemode_bridge::Language;

/// The result code of every [`Rejection`] (behaviour.md §4.4: "Each failure here is
/// `invalid_input`").
pub const INVALID_INPUT: &str = "invalid_input";

/// behaviour.md §2.2 rule 1: `code` and `command` are both strings and differ.
pub const CODE_AND_COMMAND_MISMATCH: &str = "code and command must match when both are provided.";

/// behaviour.md §2.2 rule 2: the chosen source is missing, not a string, or blank.
pub const MISSING_SOURCE: &str = "code or command must be a non-empty string.";

/// behaviour.md §2.2 rule 3: `language` is present and not `"javascript"` or `"typescript"`.
pub const INVALID_LANGUAGE: &str = "language must be javascript or typescript.";

/// behaviour.md §2.2 rule 4: `restartSafe` is present and not a boolean.
pub const INVALID_RESTART_SAFE: &str = "restartSafe must be a boolean.";

/// behaviour.md §4.4 step 1: JavaScript is not in `config.languages`.
pub const JAVASCRIPT_DISABLED: &str = "code mode javascript input is disabled.";

/// behaviour.md §4.4 step 1: TypeScript is not in `config.languages`.
pub const TYPESCRIPT_DISABLED: &str = "code mode typescript input is disabled.";

/// behaviour.md §4.7: the start of every TypeScript transform failure; the diagnostics follow,
/// joined with `\n`.
pub const TYPESCRIPT_TRANSFORM_FAILED_PREFIX: &str = "typescript transform failed: ";

/// behaviour.md §4.5: module access (import, dynamic `import()`, `import.meta`, `require(…)`).
pub const MODULE_ACCESS_DISABLED: &str = "code mode module access is disabled.";

/// behaviour.md §4.6: a shell command sent as code.
pub const SHELL_SOURCE: &str = "code-mode exec runs JavaScript or TypeScript, not shell commands. Call shell, file, or other tools from guest JavaScript with tools.callValue and an exact tool id from ALL_TOOLS or tools.search. Do not retry the same shell command as code.";

/// Why an `exec` input was refused before any VM started (behaviour.md §2.2 and §4.4).
///
/// Every variant is reported as a `failed` result with `code` [`Rejection::code`]
/// (`"invalid_input"`) and error text [`Rejection::message`] (the `Display` output), which is the
/// exact message of the spec. No message contains a host path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// §2.2 rule 1: `code and command must match when both are provided.`
    #[error("{}", CODE_AND_COMMAND_MISMATCH)]
    CodeAndCommandMismatch,
    /// §2.2 rule 2: `code or command must be a non-empty string.`
    #[error("{}", MISSING_SOURCE)]
    MissingSource,
    /// §2.2 rule 3: `language must be javascript or typescript.`
    #[error("{}", INVALID_LANGUAGE)]
    InvalidLanguage,
    /// §2.2 rule 4: `restartSafe must be a boolean.`
    #[error("{}", INVALID_RESTART_SAFE)]
    InvalidRestartSafe,
    /// §4.4 step 1: `code mode javascript input is disabled.` or
    /// `code mode typescript input is disabled.`
    #[error("{}", match .0 { Language::JavaScript => JAVASCRIPT_DISABLED, Language::TypeScript => TYPESCRIPT_DISABLED })]
    LanguageDisabled(Language),
    /// §4.7: `typescript transform failed: ` + the diagnostics joined with `\n`. Each diagnostic
    /// reads `<line>:<column>: <message>`, with a 1-based line and a 1-based column (in
    /// characters) in the user's code, not the wrapper's.
    #[error("{}{}", TYPESCRIPT_TRANSFORM_FAILED_PREFIX, .diagnostics.join("\n"))]
    TypeScriptTransformFailed {
        /// The diagnostics, in source order, at least one.
        diagnostics: Vec<String>,
    },
    /// §4.5: `code mode module access is disabled.`
    #[error("{}", MODULE_ACCESS_DISABLED)]
    ModuleAccessDisabled,
    /// §4.6: the shell-source message ([`SHELL_SOURCE`]).
    #[error("{}", SHELL_SOURCE)]
    ShellSource,
}

impl Rejection {
    /// The result code: always `"invalid_input"` (behaviour.md §4.4, D1).
    pub fn code(&self) -> &'static str {
        INVALID_INPUT
    }

    /// The exact error text of the `failed` result (the `Display` output).
    pub fn message(&self) -> String {
        self.to_string()
    }
}
