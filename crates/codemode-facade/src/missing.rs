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
    /// `tools.<identifier>(` ([`codemode_ts::tools_calls`]: one linear pass, whatever the
    /// program's shape) whose identifier is neither a bridge member nor a convenience
    /// (`is_convenience`: the run context's hash lookup, docs/guest-abi.md "Run context").
    ///
    /// Each call costs one hash lookup and nothing is computed per catalog entry: the "Did you
    /// mean" suggestions are asked for by [`MissingConveniences::explain`] when a call fails
    /// (docs/threat-model.md, "Deadlines"). Usually nothing is kept.
    pub(crate) fn scan(
        javascript: &str,
        is_convenience: impl Fn(&str) -> bool,
    ) -> MissingConveniences {
        MissingConveniences(
            codemode_ts::tools_calls(javascript)
                .filter(|call| !BRIDGE_MEMBERS.contains(&call.name) && !is_convenience(call.name))
                .map(|call| (call.line, call.column, call.name.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn known() -> HashSet<&'static str> {
        ["read"].into_iter().collect()
    }

    /// `(column, name)` of the missing calls on one line, with `read` the only convenience.
    fn names(line: &str) -> Vec<(usize, String)> {
        let known = known();
        MissingConveniences::scan(line, |name| known.contains(name))
            .0
            .into_iter()
            .map(|(l, column, name)| {
                assert_eq!(l, 1);
                (column, name)
            })
            .collect()
    }

    /// What the run asks: the catalog's run context (docs/guest-abi.md, "Run context").
    fn scan(program: &str, catalog: &Catalog) -> Vec<(usize, usize, String)> {
        let context = catalog.run_context(crate::prepare::lazy_run_context);
        MissingConveniences::scan(program, |name| context.convenience(name).is_some()).0
    }

    #[test]
    fn finds_every_missing_name_with_its_column() {
        assert_eq!(
            names("await tools.read({}); tools.nope ({}); tools.b(1)"),
            [(29, "nope".to_string()), (46, "b".to_string())]
        );
        assert!(names("tools.read({}); tools.callValue('a')").is_empty());
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
            scan(program, &catalog),
            [
                (2, 32, "file_write".to_string()),
                (3, 7, "file_write".to_string()),
                (3, 28, "nope".to_string()),
            ]
        );
        assert!(scan("return tools.read({})", &catalog).is_empty());
        assert!(scan("return 1 + 2", &catalog).is_empty());
        assert!(scan("tools.search('a'); tools.call('b', {})", &catalog).is_empty());
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
            let missing = scan(&program, &catalog);
            let expected = !conveniences.contains(&name) && !BRIDGE_MEMBERS.contains(&name);
            assert_eq!(missing.len(), usize::from(expected), "{name}: {missing:?}");
        }
    }
}
