//! A program that does not parse is the model's mistake, not the host's: its error says so and
//! cites a position inside the program (issue 25, docs/contract/decisions.md#d16).
//!
//! The guest parses the wrapped program; QuickJS reports a parse failure as a `SyntaxError`
//! whose only frame is the bare position `at openclaw-code-mode:user.js:<line>:<column>` (the
//! prelude has already mapped the wrapped line to the user's, docs/contract/decisions.md#d13).
//! A program that ends mid-expression (`return (1 +`) makes the parser meet the wrapper's own
//! closing `}` on the line after the program; that position is clamped to the end of the
//! program's last line and the message names the end of the input instead of the `}` the user
//! never wrote.

use crate::wrapper::SCRIPT_NAME;

/// The sentence appended to a program's syntax error (issue 25).
pub const NO_TOOLS_DISPATCHED: &str =
    "No tools were dispatched; correct the JavaScript source and submit it again.";

/// Where a program ends, as the guest counts lines (docs/contract/decisions.md#d13):
/// `\n`-separated lines and the last one's length in UTF-16 units (a trailing `\r` aside).
/// Kept by a run instead of its source, to place a syntax error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramEnd {
    /// Number of lines (at least 1).
    pub lines: usize,
    /// Length of the last line in UTF-16 units.
    pub last_line_units: usize,
}

impl ProgramEnd {
    /// The end of `javascript` (the prepared program, line for line the user's).
    pub fn of(javascript: &str) -> ProgramEnd {
        let last = javascript.rsplit('\n').next().unwrap_or("");
        ProgramEnd {
            lines: javascript.matches('\n').count() + 1,
            last_line_units: last.trim_end_matches('\r').encode_utf16().count(),
        }
    }
}

/// For the uncaught error text of a run whose program ends at `end`: when it is the parse
/// failure of the program itself, the text to report with `invalid_input`: the error with its
/// position kept inside the program, then a line with [`NO_TOOLS_DISPATCHED`]. `None` for any
/// other error, including a `SyntaxError` thrown while the program ran (`JSON.parse("x")`,
/// `eval("(")`), which has a call frame.
///
/// `SyntaxError: unexpected token in expression: '}'\n    at openclaw-code-mode:user.js:2:1`
/// for the one-line `return (1 +` becomes `SyntaxError: unexpected end of input\n    at
/// openclaw-code-mode:user.js:1:12\nNo tools were dispatched; …`.
pub fn program_syntax_error(error: &str, end: ProgramEnd) -> Option<String> {
    let (message, rest) = error.split_once('\n')?;
    if !message.starts_with("SyntaxError: ") || rest.contains('\n') {
        return None;
    }
    let position = rest.trim().strip_prefix("at ")?.strip_prefix(SCRIPT_NAME)?;
    let (line, column) = position.strip_prefix(':')?.split_once(':')?;
    let (line, column): (usize, usize) = (line.parse().ok()?, column.parse().ok()?);
    let (message, line, column) = if line > end.lines {
        let message = if message.ends_with("'}'") {
            "SyntaxError: unexpected end of input"
        } else {
            message
        };
        (message, end.lines, end.last_line_units + 1)
    } else {
        (message, line, column)
    };
    Some(format!(
        "{message}\n    at {SCRIPT_NAME}:{line}:{column}\n{NO_TOOLS_DISPATCHED}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_parse_failures_become_recoverable() {
        assert_eq!(
            program_syntax_error(
                "SyntaxError: unexpected token in expression: '}'\n    at openclaw-code-mode:user.js:2:1",
                ProgramEnd::of("return (1 +")
            )
            .as_deref(),
            Some("SyntaxError: unexpected end of input\n    at openclaw-code-mode:user.js:1:12\nNo tools were dispatched; correct the JavaScript source and submit it again.")
        );
        // Inside the program: the position stays.
        assert_eq!(
            program_syntax_error(
                "SyntaxError: expecting ';'\n    at openclaw-code-mode:user.js:2:7",
                ProgramEnd::of("const x = 1;\nretun x")
            )
            .as_deref(),
            Some("SyntaxError: expecting ';'\n    at openclaw-code-mode:user.js:2:7\nNo tools were dispatched; correct the JavaScript source and submit it again.")
        );
        // A multi-line program that ends early cites its last line's end (CRLF aside).
        assert_eq!(
            program_syntax_error(
                "SyntaxError: unexpected token in expression: '}'\n    at openclaw-code-mode:user.js:3:1",
                ProgramEnd::of("const a = [\r\n  1,")
            )
            .as_deref(),
            Some("SyntaxError: unexpected end of input\n    at openclaw-code-mode:user.js:2:5\nNo tools were dispatched; correct the JavaScript source and submit it again.")
        );
    }

    #[test]
    fn other_errors_are_left_alone() {
        for error in [
            // Thrown at run time: a call frame.
            "SyntaxError: unexpected token in JSON\n    at parse (native)\n    at <anonymous> (openclaw-code-mode:user.js:1:6)",
            "SyntaxError: x\n    at <anonymous> (openclaw-code-mode:user.js:1)",
            "TypeError: not a function\n    at openclaw-code-mode:user.js:1:1",
            "SyntaxError: no frame",
            "SyntaxError: other script\n    at <eval>:1:2",
        ] {
            assert_eq!(
                program_syntax_error(error, ProgramEnd::of("return 1")),
                None,
                "{error}"
            );
        }
    }
}
