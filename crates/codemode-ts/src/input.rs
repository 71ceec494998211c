//! The `exec` argument checks (docs/contract/surface.md#s2-2-checks "Argument checks").

use serde_json::Value;

use crate::rejection::Rejection;

pub use codemode_bridge::Language;

/// An `exec` input that passed the argument checks of docs/contract/surface.md#s2-2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecInput {
    /// The source: `command` if it is a string, else `code`. Never blank; kept verbatim
    /// (untrimmed).
    pub source: String,
    /// `language`, defaulting to [`Language::JavaScript`].
    pub language: Language,
    /// `true` only when the input says `restartSafe: true`. The effective value is this **or**
    /// the host forcing restart-safe tools (docs/contract/surface.md#s2-2), which the caller decides.
    pub restart_safe: bool,
}

/// Applies the argument checks of docs/contract/surface.md#s2-2 to a raw `exec` input, in order:
///
/// 1. `code` and `command` are both strings and differ → [`Rejection::CodeAndCommandMismatch`];
/// 2. the source (`command` if it is a string, else `code`) is missing, not a string, or blank
///    (only JavaScript whitespace and line terminators, as `String.prototype.trim` sees them) → [`Rejection::MissingSource`];
/// 3. `language` is present and not `"javascript"` / `"typescript"` →
///    [`Rejection::InvalidLanguage`];
/// 4. `restartSafe` is present and not a boolean → [`Rejection::InvalidRestartSafe`].
///
/// Right after rule 2, a source over [`crate::MAX_SOURCE_BYTES`] is
/// [`Rejection::SourceTooLarge`] (before anything parses it).
///
/// "Present" means the key exists, so an explicit `null` is checked like any other value. An
/// input that is not a JSON object has no source and fails rule 2. Unknown keys are ignored.
pub fn parse_exec_input(input: &Value) -> Result<ExecInput, Rejection> {
    let field = |name: &str| input.as_object().and_then(|object| object.get(name));
    let code = field("code");
    let command = field("command");

    if let (Some(Value::String(code)), Some(Value::String(command))) = (code, command) {
        if code != command {
            return Err(Rejection::CodeAndCommandMismatch);
        }
    }

    let source = match (command, code) {
        (Some(Value::String(command)), _) => command,
        (_, Some(Value::String(code))) => code,
        _ => return Err(Rejection::MissingSource),
    };
    if crate::scan::js_trim(source).is_empty() {
        return Err(Rejection::MissingSource);
    }
    if source.len() > crate::rejection::MAX_SOURCE_BYTES {
        return Err(Rejection::SourceTooLarge {
            bytes: source.len(),
        });
    }

    let language = match field("language") {
        None => Language::JavaScript,
        Some(value) => value
            .as_str()
            .and_then(Language::from_name)
            .ok_or(Rejection::InvalidLanguage)?,
    };

    let restart_safe = match field("restartSafe") {
        None => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(Rejection::InvalidRestartSafe),
    };

    Ok(ExecInput {
        source: source.clone(),
        language,
        restart_safe,
    })
}
