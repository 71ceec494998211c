//! The lean JavaScript path (docs/source-preparation.md, "The lean path") gives exactly what the
//! full swc path gives: the same `Ok` text or the same rejection, for every program of every
//! test corpus in the workspace, every code block of the docs, and generated programs that put
//! the trigger words in comments, strings, templates, identifiers and unicode escapes. Also:
//! each trigger of docs/contract/guest.md#s4-5 and #s4-6 still takes the full path, and the
//! lean path really runs no parse.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use codemode_ts::{
    javascript_check_parse_count, javascript_needs_parse, prepare_source, prepare_source_with,
    CheckPath, Language, Rejection,
};
use proc_macro2::{TokenStream, TokenTree};
use proptest::prelude::*;

const BOTH: &[Language] = &[Language::JavaScript, Language::TypeScript];

/// Both paths on `source` in both languages; returns how many (language) runs were lean.
fn assert_same(source: &str) -> usize {
    let mut lean_runs = 0;
    for language in [Language::JavaScript, Language::TypeScript] {
        let before = javascript_check_parse_count();
        let lean = prepare_source_with(source, language, BOTH, CheckPath::Lean);
        let lean_parses = javascript_check_parse_count() - before;
        let full = prepare_source_with(source, language, BOTH, CheckPath::Full);
        assert_eq!(lean, full, "{language:?} {source:?}");
        assert_eq!(
            prepare_source(source, language, BOTH),
            lean,
            "{language:?} {source:?}"
        );
        if lean_parses == 0 {
            lean_runs += 1;
        }
    }
    lean_runs
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every string literal in a Rust file, macro bodies included (tokenized, not parsed, so
/// `assert_eq!(…)` and `proptest! { … }` arguments count).
fn rust_strings(text: &str, out: &mut BTreeSet<String>) {
    fn walk(stream: TokenStream, out: &mut BTreeSet<String>) {
        for tree in stream {
            match tree {
                TokenTree::Group(group) => walk(group.stream(), out),
                TokenTree::Literal(literal) => {
                    if let Ok(string) = syn::parse_str::<syn::LitStr>(&literal.to_string()) {
                        out.insert(string.value());
                    }
                }
                _ => {}
            }
        }
    }
    let stream = TokenStream::from_str(text).expect("a test file tokenizes");
    walk(stream, out);
}

/// The body of every fenced code block of a markdown file.
fn markdown_blocks(text: &str, out: &mut BTreeSet<String>) {
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match block.take() {
                Some(lines) => {
                    out.insert(lines.join("\n"));
                }
                None => block = Some(Vec::new()),
            }
        } else if let Some(lines) = &mut block {
            lines.push(line);
        }
    }
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == extension))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Every string literal of every integration-test file of the workspace's crates (this crate's
/// corpora first among them) and every code block of docs/ and docs/contract/.
fn corpus() -> BTreeSet<String> {
    let root = workspace_root();
    let mut strings = BTreeSet::new();
    let mut test_files = 0;
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
        .map(|entry| entry.path())
        .collect();
    crates.sort();
    for krate in crates {
        for file in files(&krate.join("tests"), "rs") {
            let text = std::fs::read_to_string(&file).expect("a readable test file");
            rust_strings(&text, &mut strings);
            test_files += 1;
        }
    }
    assert!(test_files >= 6, "found {test_files} test files");
    for dir in [root.join("docs"), root.join("docs/contract")] {
        for file in files(&dir, "md") {
            markdown_blocks(
                &std::fs::read_to_string(&file).expect("a doc"),
                &mut strings,
            );
        }
    }
    strings.retain(|s| !s.trim().is_empty() && s.len() <= 64 * 1024);
    strings
}

#[test]
fn every_corpus_program_gets_the_same_result() {
    let corpus = corpus();
    assert!(corpus.len() > 1000, "only {} programs", corpus.len());
    let mut lean_runs = 0;
    for source in &corpus {
        lean_runs += assert_same(source);
    }
    eprintln!(
        "{} corpus programs, {lean_runs} of {} runs (JavaScript and TypeScript) lean",
        corpus.len(),
        corpus.len() * 2
    );
    // Most corpus strings are no module or shell case: the lean path must decide more than half
    // of the runs, or it is not worth having (82% when it was written).
    assert!(
        lean_runs > corpus.len(),
        "{lean_runs} lean runs of {} programs",
        corpus.len()
    );
}

#[test]
fn each_module_trigger_takes_the_full_path() {
    for source in [
        "return import('fs');",
        "return import.meta;",
        "return require('fs');",
        "return require?.('fs');",
        "return (0, require)('fs');",
        "import x from 'fs';",
        r"return \u0072equire('fs');",
        r"return r\u{65}quire('fs');",
        r"return \u{69}mport('fs');",
        r"return \u0069\u006d\u0070\u006f\u0072\u0074.meta;",
        // The words anywhere decide nothing on their own: the parse tells them apart.
        "// import('fs')\nreturn 1;",
        "/* require('fs') */ return 1;",
        "return 'require(\"fs\")';",
        "return `import ${1}`;",
        "return /require(x)/.test(s);",
        "return api.import(1);",
        "return api.require;",
        "const require = 1; return require;",
        "$require('x')",
        "return é\u{301}import;",
        // `}` is an ASCII boundary for the regex fallback, even though the escape decodes to a letter.
        r"x = \u{41}require('fs') +",
        // Unparsable programs: the regex fallback must see them.
        "import 'fs' +",
        "require ('x') )",
    ] {
        assert!(javascript_needs_parse(source), "{source}");
        assert_same(source);
    }
}

#[test]
fn each_shell_step_that_reads_the_parse_takes_the_full_path() {
    // Steps 9-12 of docs/contract/guest.md#s4-6: a command (known or not) or a path followed by
    // more text.
    for (source, expected) in [
        ("ls -la", Err(Rejection::ShellSource)),
        ("git status", Err(Rejection::ShellSource)),
        ("cat ./notes.txt", Err(Rejection::ShellSource)),
        ("./run.sh --fast", Err(Rejection::ShellSource)),
        ("FOO=1 make build", Err(Rejection::ShellSource)),
        ("jq .name", Err(Rejection::ShellSource)),
        ("ls; pwd", Err(Rejection::ShellSource)),
        ("echo hi > out.txt", Err(Rejection::ShellSource)),
        ("x = 1; return x;", Ok(())),
        ("find (1)\nfunction find() {}", Ok(())),
        ("ls -la\nvar ls = 1;", Ok(())),
        ("foo bar", Err(Rejection::ShellSource)),
        ("/^a/.test('a')", Ok(())),
    ] {
        assert!(javascript_needs_parse(source), "{source}");
        assert_same(source);
        assert_eq!(
            prepare_source(source, Language::JavaScript, BOTH).map(|_| ()),
            expected,
            "{source}"
        );
    }
}

#[test]
fn text_decided_cells_take_the_lean_path() {
    // Steps 1-8 decide these (a shebang, control syntax, a command alone, keywords, `export`,
    // globals, calls): no parse, same result.
    for (source, expected) in [
        ("return 1+2", Ok(())),
        ("const r = await tools.search('x'); return r;", Ok(())),
        ("await tools.callValue('a', {}); return 1", Ok(())),
        ("tools.read({ path: 'a' })", Ok(())),
        ("// a comment\nreturn 1", Ok(())),
        ("export const x = 1", Ok(())),
        ("text(`done`)", Ok(())),
        ("#!/bin/sh\necho hi", Err(Rejection::ShellSource)),
        ("if [ -f x ]; then echo; fi", Err(Rejection::ShellSource)),
        (
            "for f in *.txt; do echo $f; done",
            Err(Rejection::ShellSource),
        ),
        ("ls", Err(Rejection::ShellSource)),
        ("  pwd  \n", Err(Rejection::ShellSource)),
        ("FOO=1 ", Ok(())),
        ("unknownName", Ok(())),
        // A syntax error the text decides is QuickJS's to report, on both paths.
        ("return (1 +", Ok(())),
        ("const = ;", Ok(())),
    ] {
        assert!(!javascript_needs_parse(source), "{source}");
        let before = javascript_check_parse_count();
        let result = prepare_source(source, Language::JavaScript, BOTH);
        assert_eq!(
            javascript_check_parse_count(),
            before,
            "{source} was parsed"
        );
        assert_eq!(result, expected.map(|()| source.to_owned()), "{source}");
        assert_same(source);
    }
}

#[test]
fn the_full_path_parses_every_cell() {
    let before = javascript_check_parse_count();
    assert_eq!(
        prepare_source_with("return 1+2", Language::JavaScript, BOTH, CheckPath::Full),
        Ok("return 1+2".to_owned())
    );
    assert_eq!(javascript_check_parse_count(), before + 1);
}

/// Fragments that put the trigger words of both checks in every position: code, comments,
/// strings, templates, regexes, longer identifiers, member names and unicode escapes.
const FRAGMENTS: &[&str] = &[
    "import",
    "require",
    "export",
    "meta",
    "imported",
    "requireAuth",
    "_import",
    "import_",
    "reimport",
    "$require",
    "require$",
    "api.",
    ".import",
    "\\u0069mport",
    "r\\u0065quire",
    "\\u{72}equire",
    "\\u{41}",
    "\\u0061",
    "\\u",
    "\\",
    "(",
    ")",
    "('fs')",
    "{",
    "}",
    ".",
    ";",
    "\n",
    " ",
    "  ",
    "//",
    "/*",
    "*/",
    "/",
    "'",
    "\"",
    "`",
    "${",
    "#!",
    "#",
    "=",
    "+",
    "-",
    "--",
    "-la",
    "x",
    "é",
    "1",
    "return",
    "await",
    "const",
    "var",
    "let",
    "function",
    "async",
    "tools",
    "text",
    "ls",
    "git",
    "cat",
    "echo",
    "jq",
    "pwd",
    "./",
    "~/",
    "/bin/",
    "C:\\",
    "FOO=1",
    "if [",
    "for x in",
    "while true;",
    "case x in",
    "|",
    "&",
    ">",
    "<",
    "\u{2028}",
    "\u{feff}",
];

fn program() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn generated_programs_get_the_same_result(source in program()) {
        assert_same(&source);
    }

    #[test]
    fn printable_ascii_gets_the_same_result(source in "[ -~\n]{0,80}") {
        assert_same(&source);
    }

    #[test]
    fn arbitrary_strings_get_the_same_result(source in any::<String>()) {
        assert_same(&source);
    }
}
