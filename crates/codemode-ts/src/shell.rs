//! Shell-source rejection (docs/contract/guest.md#s4-6): shell commands sent as code.
//!
//! Text steps read the original source; parsing steps (9 and 10) read the prepared JavaScript,
//! parsed as the body of the runtime's wrapper. The first step that decides wins.

use std::sync::LazyLock;

use regex::Regex;
use swc_core::ecma::ast::{
    ArrowExpr, FnDecl, Function, ObjectPatProp, Pat, StaticBlock, VarDecl, VarDeclKind,
};
use swc_core::ecma::visit::{Visit, VisitWith};

use crate::parse::Parsed;
use crate::scan::{is_js_whitespace, is_line_terminator, js_trim};

/// The known command words of docs/contract/guest.md#s4-6.
pub(crate) const KNOWN_WORDS: &[&str] = &[
    "alias",
    "apt",
    "awk",
    "bash",
    "bg",
    "brew",
    "builtin",
    "bun",
    "cargo",
    "cat",
    "cd",
    "chmod",
    "cmd",
    "command",
    "cp",
    "curl",
    "cut",
    "date",
    "declare",
    "df",
    "dir",
    "docker",
    "dotnet",
    "du",
    "echo",
    "env",
    "exec",
    "exit",
    "export",
    "fg",
    "file",
    "find",
    "getopts",
    "git",
    "go",
    "gradle",
    "grep",
    "hash",
    "head",
    "help",
    "hostname",
    "id",
    "java",
    "javac",
    "jobs",
    "jq",
    "kill",
    "kubectl",
    "ln",
    "local",
    "logout",
    "ls",
    "make",
    "mkdir",
    "mvn",
    "mv",
    "node",
    "npm",
    "npx",
    "perl",
    "php",
    "pip",
    "pip3",
    "pnpm",
    "poetry",
    "popd",
    "powershell",
    "printf",
    "ps",
    "pushd",
    "pwd",
    "pwsh",
    "pytest",
    "python",
    "python3",
    "read",
    "readonly",
    "rg",
    "rm",
    "ruby",
    "rustc",
    "rustup",
    "sed",
    "set",
    "sh",
    "shift",
    "sleep",
    "sort",
    "source",
    "stat",
    "sudo",
    "swift",
    "systemctl",
    "tail",
    "tar",
    "tee",
    "test",
    "touch",
    "trap",
    "tree",
    "type",
    "ulimit",
    "umask",
    "uname",
    "uniq",
    "unset",
    "unzip",
    "uv",
    "uvx",
    "vitest",
    "wait",
    "wc",
    "wget",
    "which",
    "whoami",
    "xargs",
    "yarn",
    "zip",
    "zsh",
];

/// The keywords of docs/contract/guest.md#s4-6: never a command unless also a known word.
pub(crate) const KEYWORDS: &[&str] = &[
    "abstract",
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "declare",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "namespace",
    "new",
    "null",
    "of",
    "private",
    "protected",
    "public",
    "return",
    "satisfies",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// The globals of docs/contract/guest.md#s4-6: never a command.
pub(crate) const GLOBALS: &[&str] = &[
    "ALL_TOOLS",
    "tools",
    "console",
    "eval",
    "globalThis",
    "Infinity",
    "NaN",
    "JSON",
    "Math",
    "Intl",
    "Reflect",
    "Proxy",
    "Promise",
    "Symbol",
    "Object",
    "Array",
    "Function",
    "Boolean",
    "Number",
    "String",
    "BigInt",
    "Date",
    "RegExp",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "Error",
    "EvalError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "TypeError",
    "URIError",
    "AggregateError",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
];

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the §4.6 patterns are valid")
}

/// An anchored pattern of docs/contract/guest.md#s4-6 and a necessary condition on the text it
/// can match, read off the pattern's first characters. The regex is compiled (on first use)
/// and run only for text that passes the condition: compiling its Unicode classes costs
/// milliseconds, a large part of a process's cold start (docs/benchmarks.md, "Cold start,
/// issue 26 item 4"), and most cells, being code, pass none of them.
struct Step {
    /// False only for text the regex cannot match.
    may_match: fn(&str) -> bool,
    regex: LazyLock<Regex>,
}

impl Step {
    /// The regex's match at the start of `text`, if any.
    fn find<'t>(&self, text: &'t str) -> Option<regex::Match<'t>> {
        if (self.may_match)(text) {
            self.regex.find(text)
        } else {
            None
        }
    }

    fn is_match(&self, text: &str) -> bool {
        self.find(text).is_some()
    }
}

/// Step 3: `export ` followed by a declaration keyword, `{`, `*` or `=`.
static EXPORT: Step = Step {
    may_match: |text| text.starts_with("export"),
    regex: LazyLock::new(|| {
        regex(
            r"^export\s+(?:(?:const|let|var|function|class|default|enum|interface|type|namespace|declare|abstract|async|as|import)(?-u:\b)|[{*=])",
        )
    }),
};

/// Step 4: `if [`, `if test`, `while <x>;`, `for <x> in`, `for ((…)); do`, `case <x> in`,
/// `function <name> {`.
static CONTROL: Step = Step {
    may_match: |text| {
        ["if", "while", "for", "case", "function"]
            .iter()
            .any(|word| text.starts_with(word))
    },
    regex: LazyLock::new(|| {
        regex(concat!(
            r"^(?:if\s+(?:\[|test(?-u:\b))",
            r"|while\s+[^\s(;][^;\n]*;",
            r"|for\s+[A-Za-z_](?-u:\w)*\s+in(?-u:\b)",
            r"|for\s*\(\(.*?\)\)\s*;\s*do(?-u:\b)",
            r"|case\s+\S+\s+in(?-u:\b)",
            r"|function\s+[A-Za-z_][\w-]*\s*\{)",
        ))
    }),
};

/// Step 5: one leading `NAME=value` assignment and the blanks after it; the value may be quoted,
/// and a quoted value may span lines. The blanks may hold line breaks: `NODE_ENV=test` on a
/// line of its own, then `npm test`, is a shell session too (issue 25).
static ASSIGNMENT: Step = Step {
    may_match: |text| {
        let bytes = text.as_bytes();
        let name = bytes
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        name > 0 && !bytes[0].is_ascii_digit() && bytes.get(name) == Some(&b'=')
    },
    regex: LazyLock::new(|| {
        regex(
            r#"^[A-Za-z_](?-u:\w)*=(?:"(?:[^"\\]|\\[\s\S])*"|'[^']*'|[^\s"'`;&|<>]*)[ \t\r\n\u{2028}\u{2029}]+"#,
        )
    }),
};

/// Step 6: an optional `/bin/`, `/usr/bin/` or `/usr/local/bin/` prefix and a word.
static COMMAND: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^(/bin/|/usr/bin/|/usr/local/bin/)?([A-Za-z_][A-Za-z0-9_-]*)"));

/// Steps 7 and 12: a path (`./x`, `../x`, `.\x`, `..\x`, `~/x`, `/x`, `C:\x`).
static PATH: Step = Step {
    may_match: |text| {
        let bytes = text.as_bytes();
        matches!(bytes.first(), Some(b'.' | b'~' | b'/'))
            || (bytes.first().is_some_and(u8::is_ascii_alphabetic) && bytes.get(1) == Some(&b':'))
    },
    regex: LazyLock::new(|| regex(r"^(?:\.{1,2}[/\\]|~/|/|[A-Za-z]:\\)[^\s;&|<>]")),
};

/// Step 12: a flag (`-x`, `--flag`).
static FLAG: LazyLock<Regex> = LazyLock::new(|| regex(r"^--?[A-Za-z0-9]"));

/// Step 12: a redirection (`>`, `>>`, `<`, `2>`, `&>`).
static REDIRECTION: LazyLock<Regex> = LazyLock::new(|| regex(r"^(?:>|<|2>|&>)"));

/// The command found by step 6.
struct Command<'a> {
    name: &'a str,
    known: bool,
}

/// What the text steps of docs/contract/guest.md#s4-6 (1–8, which read only the original
/// source) make of a cell.
pub(crate) enum TextSteps<'a> {
    /// Steps 1–8 decided: `true` for a shell command, `false` for code.
    Decided(bool),
    /// Steps 9–12 need the parse of the prepared JavaScript.
    NeedParse(PendingSteps<'a>),
}

/// What steps 9–12 carry over from steps 1–8: the command of step 6 (`None` when step 7's path
/// stands in for it) and the text after the command or the path.
pub(crate) struct PendingSteps<'a> {
    command: Option<Command<'a>>,
    rest: &'a str,
}

/// Whether the source is a shell command rather than code (docs/contract/guest.md#s4-6, steps 1–12).
/// `original` is the cell as the model sent it; `prepared` is the parse of the JavaScript that
/// would run (for JavaScript cells, of `original` itself).
pub(crate) fn is_shell_source(original: &str, prepared: &Parsed) -> bool {
    match text_steps(original) {
        TextSteps::Decided(verdict) => verdict,
        TextSteps::NeedParse(pending) => pending.finish(prepared),
    }
}

/// Steps 1–8 of docs/contract/guest.md#s4-6 on the cell as the model sent it. They never look at
/// a parse, so a cell they decide needs none for the shell check (the lean path of
/// `checks::check_javascript`).
pub(crate) fn text_steps(original: &str) -> TextSteps<'_> {
    // 1. A shebang.
    let source = js_trim(original);
    if source.starts_with("#!") {
        return TextSteps::Decided(true);
    }
    // 2. Leading comments.
    let source = strip_leading_comments(source);
    // 3. Nothing left, or module syntax.
    if source.is_empty() || EXPORT.is_match(source) {
        return TextSteps::Decided(false);
    }
    // 4. Shell control syntax.
    if CONTROL.is_match(source) {
        return TextSteps::Decided(true);
    }
    // 5. Leading `NAME=value ` assignments.
    let mut source = source;
    while let Some(assignment) = ASSIGNMENT.find(source) {
        source = &source[assignment.end()..];
    }
    // 6. The command word.
    let command = find_command(source);
    // 7. An executable path stands in for a missing command.
    let rest = match &command {
        Some(command) => &source[command.1..],
        None => match PATH.find(source) {
            Some(_) => &source[token_end(source)..],
            None => return TextSteps::Decided(false),
        },
    };
    let command = command.map(|(command, _)| command);
    // 8. A command alone.
    if let Some(command) = &command {
        if js_trim(rest).is_empty() {
            return TextSteps::Decided(command.known);
        }
    }
    TextSteps::NeedParse(PendingSteps { command, rest })
}

impl PendingSteps<'_> {
    /// Steps 9–12 of docs/contract/guest.md#s4-6 with the parse of the prepared JavaScript.
    fn finish(self, prepared: &Parsed) -> bool {
        let PendingSteps { command, rest } = self;
        // 9. Not JavaScript at all.
        let Some(script) = prepared.clean_script() else {
            return true;
        };
        // 10. A hoisted declaration of the command's name makes it JavaScript.
        if let Some(command) = &command {
            let mut finder = HoistedDeclaration {
                name: command.name,
                function_depth: 0,
                found: false,
            };
            script.visit_with(&mut finder);
            if finder.found {
                return false;
            }
        }
        let known = command.as_ref().is_some_and(|command| command.known);
        // 11. A statement separator or a pipe after the command.
        let rest = rest.trim_start_matches([' ', '\t']);
        if rest.starts_with([';', '&', '|']) || rest.starts_with(is_line_terminator) {
            return known;
        }
        // 12. Arguments that only a shell command has.
        FLAG.is_match(rest)
            || PATH.is_match(rest)
            || (known && REDIRECTION.is_match(rest))
            || (command.is_some_and(|command| command.name == "jq") && rest.starts_with('.'))
    }
}

/// Step 2: removes leading `//…`, `/*…*/` and `#…` comments (and the white space around them).
fn strip_leading_comments(mut source: &str) -> &str {
    loop {
        source = source.trim_start_matches(is_js_whitespace);
        if source.starts_with("//") || source.starts_with('#') {
            source = source
                .find(is_line_terminator)
                .map_or("", |end| &source[end..]);
        } else if let Some(body) = source.strip_prefix("/*") {
            source = body.find("*/").map_or("", |end| &body[end + 2..]);
        } else {
            return source;
        }
    }
}

/// Step 6: the command at the start of `source` and the byte offset where it ends. A known word
/// (optionally with a `/bin/`-style prefix) or an identifier that is neither a keyword nor a
/// global, followed by the end, white space, or one of `;&|<>`.
fn find_command(source: &str) -> Option<(Command<'_>, usize)> {
    let captures = COMMAND.captures(source)?;
    let end = captures.get(0)?.end();
    let delimited = source[end..]
        .chars()
        .next()
        .is_none_or(|c| is_js_whitespace(c) || matches!(c, ';' | '&' | '|' | '<' | '>'));
    if !delimited {
        return None;
    }
    let name = captures.get(2)?.as_str();
    let known = KNOWN_WORDS.contains(&name);
    let prefixed = captures.get(1).is_some();
    if known {
        return Some((Command { name, known }, end));
    }
    if prefixed || KEYWORDS.contains(&name) || GLOBALS.contains(&name) {
        return None;
    }
    Some((Command { name, known }, end))
}

/// The end of the word at the start of `source`: the first white space or `;&|<>`.
fn token_end(source: &str) -> usize {
    source
        .find(|c: char| is_js_whitespace(c) || matches!(c, ';' | '&' | '|' | '<' | '>'))
        .unwrap_or(source.len())
}

/// Step 10: finds a hoisted (function-scoped) declaration of `name` in the cell's own function
/// body: `function name`, `function* name`, or `var` with `name` anywhere in its binding pattern
/// (also in `for (var … of/in …)` heads), outside nested functions.
struct HoistedDeclaration<'a> {
    name: &'a str,
    /// 0 at the script's top level, 1 inside the wrapper's arrow, more in nested functions.
    function_depth: usize,
    found: bool,
}

impl HoistedDeclaration<'_> {
    fn in_cell_scope(&self) -> bool {
        self.function_depth <= 1
    }

    fn binds(&self, pat: &Pat) -> bool {
        match pat {
            Pat::Ident(binding) => binding.id.sym == *self.name,
            Pat::Array(array) => array.elems.iter().flatten().any(|elem| self.binds(elem)),
            Pat::Object(object) => object.props.iter().any(|prop| match prop {
                ObjectPatProp::KeyValue(key_value) => self.binds(&key_value.value),
                ObjectPatProp::Assign(assign) => assign.key.id.sym == *self.name,
                ObjectPatProp::Rest(rest) => self.binds(&rest.arg),
            }),
            Pat::Rest(rest) => self.binds(&rest.arg),
            Pat::Assign(assign) => self.binds(&assign.left),
            Pat::Expr(_) | Pat::Invalid(_) => false,
        }
    }
}

impl Visit for HoistedDeclaration<'_> {
    fn visit_fn_decl(&mut self, decl: &FnDecl) {
        if self.in_cell_scope() && decl.ident.sym == *self.name {
            self.found = true;
        }
        decl.visit_children_with(self);
    }

    fn visit_var_decl(&mut self, decl: &VarDecl) {
        if self.in_cell_scope()
            && decl.kind == VarDeclKind::Var
            && decl
                .decls
                .iter()
                .any(|declarator| self.binds(&declarator.name))
        {
            self.found = true;
        }
        decl.visit_children_with(self);
    }

    fn visit_function(&mut self, function: &Function) {
        self.function_depth += 1;
        function.visit_children_with(self);
        self.function_depth -= 1;
    }

    fn visit_arrow_expr(&mut self, arrow: &ArrowExpr) {
        self.function_depth += 1;
        arrow.visit_children_with(self);
        self.function_depth -= 1;
    }

    fn visit_static_block(&mut self, block: &StaticBlock) {
        self.function_depth += 1;
        block.visit_children_with(self);
        self.function_depth -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{Step, ASSIGNMENT, CONTROL, EXPORT, PATH};

    /// Cells and fragments around the steps' patterns: shell, code, edge characters.
    const CORPUS: &[&str] = &[
        "export const x = 1",
        "export{a}",
        "export *",
        "exports.x = 1",
        "if [ -f x ]; then echo; fi",
        "if test -d x",
        "while true; do sleep 1; done",
        "for i in 1 2 3; do echo $i; done",
        "for ((i=0;i<3;i++)); do echo; done",
        "case $x in a) ;; esac",
        "function deploy { echo; }",
        "function-x { }",
        "NODE_ENV=test npm test",
        "_x='y z' ls",
        "A=\"multi\nline\" B=2\n cmd",
        "a1=b\u{2028}c",
        "x==y",
        "1x=2 y",
        "é=1 x",
        "./run.sh --flag",
        "../up/x",
        ".\\win",
        "..\\win",
        "~/bin/tool",
        "/usr/bin/env node",
        "C:\\tools\\x.exe",
        "c:\\",
        "z:x",
        ".x",
        "~x",
        "return 1+2",
        "const r = await tools.read({path: 'a'}); return r;",
        "ls -la",
        "  leading",
        "",
        "\u{feff}export const y = 2",
    ];

    /// A step's condition never rules out text its regex matches: every suffix of every corpus
    /// entry is tried (the patterns are anchored at the start).
    fn assert_necessary(name: &str, step: &Step) {
        let mut matched = 0;
        for cell in CORPUS {
            for (start, _) in cell.char_indices() {
                let text = &cell[start..];
                let regex_matches = step.regex.is_match(text);
                matched += usize::from(regex_matches);
                assert!(
                    !regex_matches || (step.may_match)(text),
                    "{name}: the condition rules out {text:?}, which the regex matches"
                );
                assert_eq!(step.is_match(text), regex_matches, "{name}: {text:?}");
            }
        }
        assert!(matched > 0, "{name}: the corpus never matches");
    }

    #[test]
    fn each_condition_is_necessary_for_its_regex() {
        assert_necessary("EXPORT", &EXPORT);
        assert_necessary("CONTROL", &CONTROL);
        assert_necessary("ASSIGNMENT", &ASSIGNMENT);
        assert_necessary("PATH", &PATH);
    }

    #[test]
    fn ordinary_code_passes_no_condition() {
        for code in ["return 1+2", "const x = await tools.read({path: 'a'})"] {
            for (name, step) in [
                ("EXPORT", &EXPORT),
                ("CONTROL", &CONTROL),
                ("ASSIGNMENT", &ASSIGNMENT),
                ("PATH", &PATH),
            ] {
                assert!(!(step.may_match)(code), "{name}: {code:?}");
            }
        }
    }
}
