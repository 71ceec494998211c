//! A call of a convenience function that does not exist (`tools.file_write({})`) says what an
//! unknown id says.
//!
//! `tools` is frozen and a missing name is `undefined` (the E2E plan checks `typeof tools.deploy`
//! for a denied tool), so the engine's own error is `TypeError: not a function`, which names
//! nothing. Before the first leg the run notes, per line of the program, the `tools.<name>(`
//! calls whose name is neither a bridge function nor a convenience of this catalog (usually
//! none, so nothing is kept); when the run then fails with that `TypeError` at one of those
//! lines, the message gains the catalog's unknown-tool text with its "Did you mean"
//! suggestions (docs/contract/catalog.md#s3-4-suggestions). A program that catches the
//! `TypeError` itself still sees the engine's text.

use std::collections::HashMap;

use codemode_catalog::Catalog;

/// The engine's message for calling a value that is not a function.
const NOT_A_FUNCTION: &str = "TypeError: not a function";

/// The name the guest gives the user's script in stack frames (`<name>:<line>:<column>`).
const USER_SCRIPT: &str = "user.js:";

/// The members of `tools` that are not conveniences (docs/contract/catalog.md#s3-4).
const BRIDGE_MEMBERS: [&str; 4] = codemode_bridge::TOOLS_MEMBER_NAMES;

/// Calls of missing convenience names in a program: `(line, column, name)`, both counted from 1
/// (the column is the name's first character, where the engine's error points).
#[derive(Debug, Default)]
pub(crate) struct MissingConveniences(Vec<(usize, usize, String)>);

impl MissingConveniences {
    /// Scans `javascript` (the prepared body, line-for-line the user's program) for
    /// `tools.<identifier>(` (spaces allowed before the parenthesis) whose identifier is neither
    /// a bridge member nor one of `catalog`'s conveniences.
    ///
    /// The cost follows the program, not the catalog: a program without `tools.` returns at
    /// once, and each distinct called name that is not a bridge member costs one
    /// [`Catalog::lookup`] (a hash lookup; a name the catalog lacks also computes its
    /// suggestions, which the failing call needs anyway). No set of the catalog's names is
    /// built per exec (docs/benchmarks.md, "Lean JavaScript path"). A convenience is a name
    /// carried by exactly one guest-visible entry ([`Catalog::conveniences`]); ids are
    /// `<source>:<owner>:<name>` and never an identifier, so `lookup` of an identifier answers
    /// by name, and `Ok` with that name means exactly one such entry.
    pub(crate) fn scan(javascript: &str, catalog: &Catalog) -> MissingConveniences {
        if !javascript.contains("tools.") {
            return MissingConveniences::default();
        }
        let mut found = Vec::new();
        for (index, line) in javascript.lines().enumerate() {
            for (column, name) in calls(line) {
                if !BRIDGE_MEMBERS.contains(&name) {
                    found.push((index + 1, column, name));
                }
            }
        }
        let mut missing: HashMap<&str, bool> = HashMap::new();
        found.retain(|(_, _, name)| {
            *missing.entry(*name).or_insert_with(|| {
                !catalog
                    .lookup(name)
                    .is_ok_and(|entry| entry.name() == *name)
            })
        });
        MissingConveniences(
            found
                .into_iter()
                .map(|(line, column, name)| (line, column, name.to_string()))
                .collect(),
        )
    }

    /// `error` with the unknown-tool text appended to its first line when it is the engine's
    /// "not a function" raised at the line and column of a missing convenience call (another
    /// call failing on that line is not mistaken for it); otherwise `None`.
    /// E.g. `TypeError: not a function: tools.file_write is not a convenience function. Unknown
    /// tool id: file_write. Did you mean: write? Use tools.search …` followed by the frames.
    pub(crate) fn explain(&self, error: &str, catalog: &Catalog) -> Option<String> {
        let rest = error.strip_prefix(NOT_A_FUNCTION)?;
        if self.0.is_empty() || !(rest.is_empty() || rest.starts_with('\n')) {
            return None;
        }
        let after = &error[error.find(USER_SCRIPT)? + USER_SCRIPT.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let line: usize = after[..digits].parse().ok()?;
        let after = after[digits..].strip_prefix(':')?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let column: usize = after[..digits].parse().ok()?;
        let name = &self
            .0
            .iter()
            .find(|(l, c, _)| *l == line && *c == column)?
            .2;
        Some(format!(
            "{NOT_A_FUNCTION}: tools.{name} is not a convenience function. {}{rest}",
            catalog.unknown_tool(name)
        ))
    }
}

/// Every `tools.<identifier>(` on `line`, with the identifier's column (characters, from 1).
fn calls(line: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = line[at..].find("tools.") {
        let start = at + offset;
        at = start + "tools.".len();
        let preceded_by_ident = line[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.');
        if preceded_by_ident {
            continue;
        }
        let ident_len = line[at..]
            .char_indices()
            .find(|&(i, c)| {
                !(c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
            })
            .map_or(line.len() - at, |(i, _)| i);
        if ident_len == 0 {
            continue;
        }
        let ident = &line[at..at + ident_len];
        if line[at + ident_len..].trim_start().starts_with('(') {
            found.push((line[..at].chars().count() + 1, ident));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn known() -> HashSet<&'static str> {
        ["read", "search", "describe", "call", "callValue"]
            .into_iter()
            .collect()
    }

    fn names(line: &str) -> Vec<(usize, String)> {
        let known = known();
        calls(line)
            .into_iter()
            .filter(|(_, name)| !known.contains(name))
            .map(|(column, name)| (column, name.to_string()))
            .collect()
    }

    #[test]
    fn finds_every_missing_name_with_its_column() {
        assert_eq!(
            names("await tools.read({}); tools.nope ({}); tools.b(1)"),
            [(29, "nope".to_string()), (46, "b".to_string())]
        );
        assert!(names("const t = mytools.nope({})").is_empty());
        assert!(names("x.tools.nope({})").is_empty());
        assert!(names("tools.read({}); tools.callValue('a')").is_empty());
        assert!(names("tools.nope; tools.").is_empty());
        assert_eq!(names("tools.$a_1(1)"), [(7, "$a_1".to_string())]);
    }

    #[test]
    fn scan_keeps_only_names_the_catalog_lacks() {
        use codemode_catalog::{SearchLimits, ToolSpec};
        let catalog = Catalog::build(
            vec![
                ToolSpec::core("read", "Read a file."),
                ToolSpec::core("write", "Write a file."),
            ],
            &SearchLimits::default(),
        )
        .unwrap();
        let program = "const a = await tools.read({});\n\
                       await tools.search('x'); tools.file_write({}); tools.write({})\n\
                       tools.file_write(1); tools.nope ()";
        assert_eq!(
            MissingConveniences::scan(program, &catalog).0,
            [
                (2, 32, "file_write".to_string()),
                (3, 7, "file_write".to_string()),
                (3, 28, "nope".to_string()),
            ]
        );
        assert!(MissingConveniences::scan("return tools.read({})", &catalog)
            .0
            .is_empty());
        assert!(MissingConveniences::scan("return 1 + 2", &catalog)
            .0
            .is_empty());
        assert!(
            MissingConveniences::scan("tools.search('a'); tools.call('b', {})", &catalog)
                .0
                .is_empty()
        );
    }

    #[test]
    fn scan_agrees_with_the_catalogs_conveniences() {
        use codemode_catalog::{SearchLimits, ToolSpec};
        // `read` is carried by two guest-visible entries (no convenience), `search` is
        // reserved, `hidden` is an MCP tool (not guest-visible), `write` and `deploy_1` are conveniences.
        let catalog = Catalog::build(
            vec![
                ToolSpec::core("read", "Read a file."),
                ToolSpec::plugin("files", "read", "Read a file too."),
                ToolSpec::core("write", "Write a file."),
                ToolSpec::client(None, "deploy_1", "Deploy."),
                ToolSpec::core("search", "A core tool named like the bridge."),
                ToolSpec::mcp("docs", "hidden", "An MCP tool: not guest-visible."),
            ],
            &SearchLimits::default(),
        )
        .unwrap();
        let conveniences: Vec<&str> = catalog
            .conveniences()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(conveniences, ["write", "deploy_1"]);
        for name in [
            "read", "write", "deploy_1", "search", "hidden", "nope", "files",
        ] {
            let program = format!("await tools.{name}({{}})");
            let missing = MissingConveniences::scan(&program, &catalog).0;
            let expected = !conveniences.contains(&name) && !BRIDGE_MEMBERS.contains(&name);
            assert_eq!(missing.len(), usize::from(expected), "{name}: {missing:?}");
        }
    }
}
