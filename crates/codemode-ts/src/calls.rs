//! The `tools.<name>(` calls in a program's text, with their lines and columns, in one pass
//! (the facade's missing-convenience scan reads them; docs/source-preparation.md, "Tools
//! calls").
//!
//! A text search, not a parse: it runs on every cell before the first leg, so its cost must be
//! linear in the cell whatever its shape (docs/threat-model.md, "Deadlines"). The text is
//! searched for `tools.` once, and line and column are advanced over the text between two
//! hits, never recounted from the line's start (recounting made 100,000 calls on one line cost
//! 6 s).

/// One `tools.<name>(` in a program's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsCall<'a> {
    /// The line of `name`, counted from 1; lines are separated by `\n` (as `str::lines`).
    pub line: usize,
    /// The column of `name`'s first character, in characters, counted from 1 (where the
    /// engine's "not a function" error points).
    pub column: usize,
    /// The identifier after `tools.`: `[A-Za-z_$][A-Za-z0-9_$]*`.
    pub name: &'a str,
}

/// Every `tools.<identifier>(` in `text`, in text order: `tools` not preceded by an identifier
/// character or `.` (so neither `mytools.x(` nor `a.tools.x(`), and only whitespace of the
/// same line between the identifier and `(`. Strings and comments are not told apart (a
/// `tools.a(` inside a string literal is listed too). Linear: each byte is looked at a bounded
/// number of times, whatever the number of calls per line.
pub fn tools_calls(text: &str) -> impl Iterator<Item = ToolsCall<'_>> + '_ {
    let mut position = Position::default();
    calls(text).map(move |(at, name)| {
        let (line, column) = position.advance(text, at);
        ToolsCall { line, column, name }
    })
}

/// A line and column in a text, advanced forward only (so all advances over one text cost one
/// pass over it).
#[derive(Debug, Default)]
struct Position {
    /// Bytes of the text already counted.
    counted: usize,
    /// `\n`s before `counted`.
    line: usize,
    /// Characters between the last `\n` before `counted` (or the start) and `counted`.
    column: usize,
}

impl Position {
    /// Moves to byte `at` of `text` (not before the last position, on a character boundary)
    /// and returns its line and column, both counted from 1.
    fn advance(&mut self, text: &str, at: usize) -> (usize, usize) {
        let between = &text[self.counted..at];
        match between.rfind('\n') {
            Some(last) => {
                self.line += between.bytes().filter(|b| *b == b'\n').count();
                self.column = between[last + 1..].chars().count();
            }
            None => self.column += between.chars().count(),
        }
        self.counted = at;
        (self.line + 1, self.column + 1)
    }
}

/// The byte offset and the identifier of every call [`tools_calls`] lists.
fn calls(text: &str) -> impl Iterator<Item = (usize, &str)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let start = at + text[at..].find("tools.")?;
        at = start + "tools.".len();
        let preceded_by_ident = text[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.');
        if preceded_by_ident {
            continue;
        }
        let ident_len = text[at..]
            .char_indices()
            .find(|&(i, c)| {
                !(c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
            })
            .map_or(text.len() - at, |(i, _)| i);
        if ident_len == 0 {
            continue;
        }
        let ident = &text[at..at + ident_len];
        let called = text[at + ident_len..]
            .chars()
            .find(|c| *c == '\n' || !c.is_whitespace())
            == Some('(');
        if called {
            return Some((at, ident));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(usize, usize, &str)> {
        tools_calls(text)
            .map(|c| (c.line, c.column, c.name))
            .collect()
    }

    #[test]
    fn finds_every_call_with_its_column() {
        assert_eq!(
            found("await tools.read({}); tools.nope ({}); tools.b(1)"),
            [(1, 13, "read"), (1, 29, "nope"), (1, 46, "b")]
        );
        assert!(found("const t = mytools.nope({})").is_empty());
        assert!(found("x.tools.nope({})").is_empty());
        assert!(found("tools.nope; tools.").is_empty());
        assert!(found("tools.1a(); tools.é()").is_empty());
        assert_eq!(found("tools.$a_1(1)"), [(1, 7, "$a_1")]);
        // Columns count characters, not bytes; a tab or a carriage return is a space.
        assert_eq!(found("'é😀'; tools.b\t\r(1)"), [(1, 13, "b")]);
    }

    #[test]
    fn lines_and_columns_follow_the_text_across_lines() {
        assert_eq!(
            found("tools.a(1)\r\n  tools.b(2); tools.c\n(3)\n\n\u{e9} tools.d (4) tools.e(5)"),
            [(1, 7, "a"), (2, 9, "b"), (5, 9, "d"), (5, 21, "e")]
        );
    }

    /// 200,000 calls on one line (2.8 MB): recounting the line's characters for every call
    /// (quadratic: 100,000 calls took 6.1 s in a release build) would take minutes in a debug
    /// build; one pass takes milliseconds, far under the bound.
    #[test]
    fn many_calls_on_one_line_scan_in_linear_time() {
        let program = "tools.nope(1);".repeat(200_000);
        let started = std::time::Instant::now();
        let calls: Vec<_> = tools_calls(&program).collect();
        let elapsed = started.elapsed();
        assert_eq!(calls.len(), 200_000);
        assert_eq!(
            calls[199_999],
            ToolsCall {
                line: 1,
                column: 199_999 * 14 + 7,
                name: "nope"
            }
        );
        assert!(elapsed < std::time::Duration::from_secs(2), "{elapsed:?}");
    }
}
