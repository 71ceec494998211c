//! `cargo xtask layers`: the dependency-direction gate (docs/architecture.md#layers), a lint gate
//! of `cargo xtask test`. Three checks, each reporting the file (or manifest) and the edge:
//!
//! 1. **Crate direction**, over `cargo metadata`: every workspace crate has a layer in
//!    [`LAYERS`] (the order of the diagram in docs/architecture.md, which must name it), and a
//!    crate depends (normal, build or dev) only on crates of a strictly lower layer.
//! 2. **No import cycle between the modules of a crate**: an edge goes from the file that names a
//!    path (`use crate::a::B`, `crate::a::b::f()`, `super::C`, inside any `use` group) to the
//!    module file that path lands in (the longest prefix that is a module of the crate). Edges to
//!    the naming module itself or to its own submodules are not counted (a module owns its
//!    children and may re-export them); edges up to a parent are.
//! 3. **No import from the crate root**: a module other than the root names `crate::X` (or
//!    `super::X` from a top-level module) where `X` is not a module: it should import `X` from
//!    the module that defines it.
//!
//! Only `src/` of library and binary targets are read (every `mod x;` from each target's root,
//! `#[path]` honoured); comments, strings and `$crate` are skipped; inline modules belong to
//! their file. Test modules (`#[cfg(test)] mod tests { … }` or `#[cfg(test)] mod x;`) are not
//! read: nothing imports them, so they cannot close a cycle, and a test may reach across its
//! crate to check that two sides agree (the bridge's wire-format tests parse what they wrote).
//!
//! The parser reads tokens, not a syntax tree: a path is `crate`/`super` followed by `::`, then
//! identifiers, `::`, `{ … , … }` groups and `*`. That is every form the workspace writes; a path
//! spelt through a `use` alias (`use crate::a as x; x::f()`) is seen only at its `use`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each workspace crate's layer (docs/architecture.md#layers): a crate may depend only on crates
/// of a strictly lower layer. A new crate is added here and to the diagram.
pub(crate) const LAYERS: &[(&str, u32)] = &[
    ("codemode-bridge", 0),
    ("codemode-test-support", 0),
    ("codemode-files", 0),
    ("codemode-catalog", 1),
    ("codemode-config", 1),
    ("codemode-guest", 1),
    ("codemode-runtime", 1),
    ("codemode-snapshot", 1),
    ("codemode-telemetry", 1),
    ("codemode-ts", 1),
    ("codemode-facade", 2),
    ("codemode-agent", 3),
    ("codemode-mcp", 3),
    ("codemode-cli", 4),
    ("xtask", 5),
];

/// Findings tolerated for now, as (file relative to the workspace root, finding kind). Empty
/// when the workspace is clean; an entry is a debt with a plan, never a way to pass.
const ALLOWED: &[(&str, Kind)] = &[];

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A crate depends on a crate of the same or a higher layer, or has no layer.
    Direction,
    /// An edge of a module import cycle.
    Cycle,
    /// A module imports from its crate root.
    RootImport,
}

/// One problem, printed as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    /// The file, relative to the workspace root.
    pub(crate) file: String,
    /// 1-based line (0 for a whole manifest).
    pub(crate) line: usize,
    /// What kind of problem.
    pub(crate) kind: Kind,
    /// The edge, in words.
    pub(crate) message: String,
}

/// Runs every check on the workspace at `root`; `Err` lists each finding not in [`ALLOWED`].
pub(crate) fn check(root: &Path) -> Result<(), String> {
    let metadata = cargo_metadata(root)?;
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md"))
        .map_err(|e| format!("cannot read docs/architecture.md: {e}"))?;
    let mut findings = direction(root, &metadata, &architecture)?;
    for target in crate_roots(&metadata) {
        let modules = module_tree(&target)?;
        findings.extend(module_findings(root, &modules));
    }
    findings.sort();
    findings.dedup();
    let (allowed, failing): (Vec<_>, Vec<_>) = findings
        .into_iter()
        .partition(|f| ALLOWED.contains(&(f.file.as_str(), f.kind)));
    for f in &allowed {
        eprintln!("allowed: {}:{}: {}", f.file, f.line, f.message);
    }
    if failing.is_empty() {
        eprintln!("layers: crate direction, module cycles and crate-root imports are clean");
        return Ok(());
    }
    let list: Vec<String> = failing
        .iter()
        .map(|f| format!("{}:{}: {}", f.file, f.line, f.message))
        .collect();
    Err(format!(
        "{} layering problem(s) (docs/architecture.md#layers):\n{}",
        list.len(),
        list.join("\n")
    ))
}

/// `cargo metadata --no-deps` as JSON.
fn cargo_metadata(root: &Path) -> Result<serde_json::Value, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata is not JSON: {e}"))
}

fn packages(metadata: &serde_json::Value) -> &[serde_json::Value] {
    metadata["packages"].as_array().map_or(&[], Vec::as_slice)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Check 1: every workspace crate has a layer named in the architecture doc, and depends only
/// downwards.
fn direction(
    root: &Path,
    metadata: &serde_json::Value,
    architecture: &str,
) -> Result<Vec<Finding>, String> {
    let layer = |name: &str| LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l);
    let members: BTreeSet<&str> = packages(metadata)
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut findings = Vec::new();
    for package in packages(metadata) {
        let name = package["name"].as_str().unwrap_or_default();
        let manifest = relative(
            root,
            Path::new(package["manifest_path"].as_str().unwrap_or_default()),
        );
        let Some(own) = layer(name) else {
            findings.push(Finding {
                file: manifest,
                line: 0,
                kind: Kind::Direction,
                message: format!(
                    "crate {name} has no layer: add it to LAYERS in xtask/src/layers.rs and to \
                     the diagram in docs/architecture.md"
                ),
            });
            continue;
        };
        if name != "xtask" && !architecture.contains(name) {
            findings.push(Finding {
                file: "docs/architecture.md".into(),
                line: 0,
                kind: Kind::Direction,
                message: format!("the layer diagram does not name crate {name}"),
            });
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if !members.contains(dep_name) {
                continue;
            }
            let kind = dep["kind"].as_str().unwrap_or("normal");
            match layer(dep_name) {
                Some(l) if l < own => {}
                Some(l) => findings.push(Finding {
                    file: manifest.clone(),
                    line: 0,
                    kind: Kind::Direction,
                    message: format!(
                        "{name} (layer {own}) depends ({kind}) on {dep_name} (layer {l}): \
                         a crate depends only on lower layers"
                    ),
                }),
                None => {} // reported as its own crate
            }
        }
    }
    Ok(findings)
}

/// One crate root to walk: the package directory and the root file (`src/lib.rs`, `src/main.rs`,
/// `src/bin/x.rs`).
struct CrateRoot {
    src: PathBuf,
}

fn crate_roots(metadata: &serde_json::Value) -> Vec<CrateRoot> {
    let mut roots = Vec::new();
    for package in packages(metadata) {
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> = target["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k.as_str())
                .collect();
            let is_code = kinds
                .iter()
                .any(|k| matches!(*k, "lib" | "rlib" | "bin" | "proc-macro"));
            let src = PathBuf::from(target["src_path"].as_str().unwrap_or_default());
            // Only the crate's own sources: src/ (integration tests, benches and examples are
            // separate crates with no modules of their own to cycle).
            if is_code && src.components().any(|c| c.as_os_str() == "src") {
                roots.push(CrateRoot { src });
            }
        }
    }
    roots
}

/// A module of one crate: its path from the crate root, its file, and what it names.
struct Module {
    /// `[]` for the root, `["mcp", "route"]` for `mcp/route.rs`.
    path: Vec<String>,
    file: PathBuf,
    /// Every `crate::…`/`super::…` path named in the file: (line, absolute path, inline-module
    /// depth it was written at).
    refs: Vec<(usize, Vec<String>)>,
    /// Inline modules declared in the file (absolute paths), which belong to it.
    inline: Vec<Vec<String>>,
}

/// Walks `mod x;` declarations from `root.src`.
fn module_tree(root: &CrateRoot) -> Result<Vec<Module>, String> {
    let mut modules = Vec::new();
    let mut queue = vec![(Vec::<String>::new(), root.src.clone())];
    while let Some((path, file)) = queue.pop() {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let tokens = tokenize(&text);
        let parsed = parse_module(&tokens, &path);
        // Where `mod x;` files live: next to a root or `mod.rs`, else in a folder named after
        // the module.
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let child_dir = if path.is_empty() || name == "mod.rs" {
            dir.clone()
        } else {
            dir.join(file.file_stem().unwrap_or_default())
        };
        for (child, explicit) in &parsed.children {
            let child_file = match explicit {
                Some(p) => dir.join(p),
                None => {
                    let flat = child_dir.join(format!("{}.rs", child.last().unwrap()));
                    if flat.exists() {
                        flat
                    } else {
                        child_dir.join(child.last().unwrap()).join("mod.rs")
                    }
                }
            };
            queue.push((child.clone(), child_file));
        }
        modules.push(Module {
            path,
            file,
            refs: parsed.refs,
            inline: parsed.inline,
        });
    }
    Ok(modules)
}

/// Checks 2 and 3 over one crate's modules.
fn module_findings(root: &Path, modules: &[Module]) -> Vec<Finding> {
    // Every module path (file or inline) → index of the file module holding it.
    let mut owner: BTreeMap<&[String], usize> = BTreeMap::new();
    for (i, m) in modules.iter().enumerate() {
        owner.insert(&m.path, i);
        for inline in &m.inline {
            owner.insert(inline, i);
        }
    }
    let mut findings = Vec::new();
    // edges[from] = {to: first (line, path text)}
    let mut edges: Vec<BTreeMap<usize, (usize, String)>> = vec![BTreeMap::new(); modules.len()];
    for (i, m) in modules.iter().enumerate() {
        for (line, path) in &m.refs {
            let longest = (0..=path.len())
                .rev()
                .find(|&n| owner.contains_key(&path[..n]))
                .unwrap_or(0);
            let target = owner[&path[..longest]];
            let text = format!("crate::{}", path.join("::"));
            if longest == 0 {
                // Names an item of the crate root.
                if !m.path.is_empty() && !path.is_empty() {
                    findings.push(Finding {
                        file: relative(root, &m.file),
                        line: *line,
                        kind: Kind::RootImport,
                        message: format!(
                            "imports `{}` from the crate root ({text}): import it from the \
                             module that defines it",
                            path[0]
                        ),
                    });
                }
                continue;
            }
            let to = &modules[target].path;
            if target == i || to.starts_with(&m.path) {
                continue; // itself or one of its own submodules
            }
            edges[i].entry(target).or_insert((*line, text));
        }
    }
    for component in strongly_connected(&edges) {
        if component.len() < 2 {
            continue;
        }
        let names: Vec<String> = component
            .iter()
            .map(|&i| relative(root, &modules[i].file))
            .collect();
        for &from in &component {
            for (&to, (line, text)) in &edges[from] {
                if component.contains(&to) {
                    findings.push(Finding {
                        file: relative(root, &modules[from].file),
                        line: *line,
                        kind: Kind::Cycle,
                        message: format!(
                            "import cycle edge to {} ({text}); the cycle joins {}",
                            relative(root, &modules[to].file),
                            names.join(", ")
                        ),
                    });
                }
            }
        }
    }
    findings
}

/// Tarjan's strongly connected components of `edges` (each a sorted list of nodes).
fn strongly_connected(edges: &[BTreeMap<usize, (usize, String)>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeMap<usize, (usize, String)>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s.edges[v].keys().copied().collect();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort_unstable();
            s.out.push(component);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A token of Rust source with comments and the insides of literals dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// A string literal's contents (for `#[path = "…"]`).
    Str(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// Splits `text` into `(line, token)`s, skipping comments, char literals and lifetimes.
fn tokenize(text: &str) -> Vec<(usize, Tok)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let count_lines =
        |from: usize, to: usize| chars[from..to].iter().filter(|&&c| c == '\n').count();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count_lines(start, i.min(chars.len()));
        } else if c == '"' || ((c == 'r' || c == 'b') && raw_or_byte_string_start(&chars, i)) {
            let start = i;
            let (contents, end) = string_literal(&chars, i);
            line += count_lines(start, end);
            out.push((line, Tok::Str(contents)));
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let word = word.strip_prefix("r#").map(str::to_owned).unwrap_or(word);
            out.push((line, Tok::Ident(word)));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            out.push((line, Tok::PathSep));
            i += 2;
        } else {
            out.push((line, Tok::Punct(c)));
            i += 1;
        }
    }
    out
}

/// True when `chars[i..]` starts a raw or byte string (`r"`, `r#"`, `b"`, `br"`, `br#"`), not
/// an identifier.
fn raw_or_byte_string_start(chars: &[char], i: usize) -> bool {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i;
    if chars[j] == 'b' {
        j += 1;
    }
    if chars.get(j) == Some(&'r') {
        j += 1;
        while chars.get(j) == Some(&'#') {
            j += 1;
        }
    }
    j > i && chars.get(j) == Some(&'"')
}

/// The contents of the string literal at `i` and the index just past it.
fn string_literal(chars: &[char], mut i: usize) -> (String, usize) {
    let mut raw = false;
    if chars[i] == 'b' {
        i += 1;
    }
    let mut hashes = 0;
    if chars[i] == 'r' {
        raw = true;
        i += 1;
        while chars[i] == '#' {
            hashes += 1;
            i += 1;
        }
    }
    i += 1; // the opening quote
    let mut contents = String::new();
    while i < chars.len() {
        let c = chars[i];
        if !raw && c == '\\' {
            if let Some(&escaped) = chars.get(i + 1) {
                contents.push(escaped);
            }
            i += 2;
            continue;
        }
        if c == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
            return (contents, i + 1 + hashes);
        }
        contents.push(c);
        i += 1;
    }
    (contents, i)
}

/// What one file declares and names.
struct Parsed {
    /// `mod x;` children: (absolute path, `#[path]` value).
    children: Vec<(Vec<String>, Option<String>)>,
    inline: Vec<Vec<String>>,
    refs: Vec<(usize, Vec<String>)>,
}

/// Reads one file's tokens: its `mod` declarations and every `crate::`/`super::` path, made
/// absolute.
fn parse_module(tokens: &[(usize, Tok)], file_path: &[String]) -> Parsed {
    let ident = |i: usize| match tokens.get(i) {
        Some((_, Tok::Ident(w))) => Some(w.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| tokens.get(i).map(|(_, x)| x) == Some(t);
    let mut parsed = Parsed {
        children: Vec::new(),
        inline: Vec::new(),
        refs: Vec::new(),
    };
    // The inline module stack: (name, brace depth at which it closes, is a test module).
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_path: Option<String> = None;
    // Set by `#[cfg(test)]`, taken by the next `mod`, dropped by any other item.
    let mut pending_test = false;
    let current = |inline: &[(String, usize, bool)]| {
        let mut p = file_path.to_vec();
        p.extend(inline.iter().map(|(n, _, _)| n.clone()));
        p
    };
    let cfg_test = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    let mut i = 0;
    while i < tokens.len() {
        let (line, tok) = &tokens[i];
        match tok {
            Tok::Punct('{') => {
                depth += 1;
                pending_test = false;
            }
            Tok::Punct(';') => pending_test = false,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Punct('#')
                if tokens.len() >= i + cfg_test.len()
                    && tokens[i..i + cfg_test.len()]
                        .iter()
                        .map(|(_, t)| t)
                        .eq(cfg_test.iter()) =>
            {
                pending_test = true;
                i += cfg_test.len();
                continue;
            }
            Tok::Punct('#') if is(i + 1, &Tok::Punct('[')) && ident(i + 2) == Some("path") => {
                if let Some((_, Tok::Str(p))) = tokens.get(i + 4) {
                    pending_path = Some(p.clone());
                }
            }
            Tok::Ident(w) if w == "mod" => {
                let test =
                    std::mem::take(&mut pending_test) || inline.iter().any(|(_, _, test)| *test);
                if let Some(name) = ident(i + 1) {
                    let mut path = current(&inline);
                    path.push(name.to_owned());
                    if is(i + 2, &Tok::Punct(';')) {
                        let explicit = pending_path.take();
                        if !test {
                            parsed.children.push((path, explicit));
                        }
                        i += 3;
                        continue;
                    } else if is(i + 2, &Tok::Punct('{')) {
                        parsed.inline.push(path);
                        inline.push((name.to_owned(), depth, test));
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(w)
                if matches!(
                    w.as_str(),
                    "fn" | "use"
                        | "struct"
                        | "enum"
                        | "impl"
                        | "const"
                        | "static"
                        | "trait"
                        | "type"
                        | "macro_rules"
                ) =>
            {
                pending_test = false;
            }
            Tok::Ident(w)
                if (w == "crate" || w == "super")
                    && is(i + 1, &Tok::PathSep)
                    && !(i > 0 && is(i - 1, &Tok::Punct('$')))
                    && !(i > 0 && is(i - 1, &Tok::PathSep)) =>
            {
                let mut base = if w == "crate" {
                    Vec::new()
                } else {
                    current(&inline)
                };
                let mut j = i;
                if w == "super" {
                    // super::super::…
                    while ident(j) == Some("super") && is(j + 1, &Tok::PathSep) {
                        base.pop();
                        j += 2;
                    }
                } else {
                    j += 2;
                }
                let mut paths = Vec::new();
                let end = use_tree(tokens, j, base, &mut paths);
                if !inline.iter().any(|(_, _, test)| *test) {
                    for p in paths {
                        parsed.refs.push((*line, p));
                    }
                }
                i = end.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parsed
}

/// Reads a path tree at `i` (after `prefix::`): identifiers joined by `::`, `{…}` groups, `*`.
/// Pushes every complete path into `out`; returns the index after the tree.
fn use_tree(
    tokens: &[(usize, Tok)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i).map(|(_, t)| t) {
            Some(Tok::Ident(w)) if w == "self" => {
                i += 1;
            }
            Some(Tok::Ident(w)) => {
                prefix.push(w.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match tokens.get(i).map(|(_, t)| t) {
                        Some(Tok::Punct('}')) | None => {
                            return i + 1;
                        }
                        Some(Tok::Punct(',')) => i += 1,
                        _ => {
                            let before = i;
                            i = use_tree(tokens, i, prefix.clone(), out);
                            // `as alias` after a leaf.
                            if matches!(tokens.get(i).map(|(_, t)| t), Some(Tok::Ident(w)) if w == "as")
                            {
                                i += 2;
                            }
                            if i == before {
                                i += 1;
                            }
                        }
                    }
                }
            }
            _ => {
                out.push(prefix);
                return i;
            }
        }
        if matches!(tokens.get(i).map(|(_, t)| t), Some(Tok::PathSep)) {
            i += 1;
            continue;
        }
        out.push(prefix);
        return i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(src: &str, at: &[&str]) -> Vec<Vec<String>> {
        let at: Vec<String> = at.iter().map(|s| s.to_string()).collect();
        parse_module(&tokenize(src), &at)
            .refs
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    fn p(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn paths_in_use_groups_code_and_super_are_made_absolute() {
        let src = r#"
            // use crate::commented::Out;
            /// [`crate::doc::Link`]
            use crate::{a::B, c::{self, D as E}, F};
            fn f() { let s = "crate::in_string"; crate::g::h(); '\''; }
            mod inner { use super::*; use super::super::Up; }
            macro_rules! m { () => { $crate::Root } }
            #[cfg(test)]
            mod tests { use crate::Skipped; }
            #[cfg(test)]
            fn only_in_tests() {}
            mod after { use crate::Kept; }
        "#;
        assert_eq!(
            refs(src, &["x", "y"]),
            vec![
                p(&["a", "B"]),
                p(&["c"]),
                p(&["c", "D"]),
                p(&["F"]),
                p(&["g", "h"]),
                p(&["x", "y"]),
                p(&["x", "Up"]),
                p(&["Kept"]),
            ]
        );
    }

    #[test]
    fn mod_declarations_are_children_with_their_path_attribute() {
        let parsed = parse_module(
            &tokenize(
                "mod a;\n#[path = \"../b.rs\"]\nmod b;\n#[cfg(test)] mod t { mod inner; }\n\
                 #[cfg(test)]\nmod tested;\nmod c { mod d; }",
            ),
            &p(&["top"]),
        );
        assert_eq!(
            parsed.children,
            vec![
                (p(&["top", "a"]), None),
                (p(&["top", "b"]), Some("../b.rs".into())),
                (p(&["top", "c", "d"]), None),
            ]
        );
        assert_eq!(parsed.inline, vec![p(&["top", "t"]), p(&["top", "c"])]);
    }

    #[test]
    fn cycles_are_strongly_connected_components() {
        let mut edges = vec![BTreeMap::new(); 4];
        edges[0].insert(1, (1, String::new()));
        edges[1].insert(2, (1, String::new()));
        edges[2].insert(0, (1, String::new()));
        edges[2].insert(3, (1, String::new()));
        let mut components = strongly_connected(&edges);
        components.sort();
        assert_eq!(components, vec![vec![0, 1, 2], vec![3]]);
    }
}
