//! `cargo xtask citations`: every reference to the contract resolves, and nothing cites the old
//! out-of-repository spec files any more.
//!
//! Scanned: `crates/**/*.rs`, `crates/**/*.js`, `xtask/**/*.rs`, `docs/**/*.md` and `README.md`
//! (`target/` and `node_modules/` directories are skipped). A reference is
//!
//! - a repository path `docs/contract/<file>.md`, optionally `#<anchor>`, optionally followed by
//!   ` to #<anchor>` (a range), anywhere in a file; or
//! - in a Markdown file, a relative link `](<path>)` that resolves into `docs/contract/`, and, in
//!   the contract's own files, a same-file link `](#<anchor>)`.
//!
//! The file must exist and every anchor must be defined in it, by `<a id="…">` or as the
//! GitHub slug of a heading. Any remaining mention of the three old spec file names fails too,
//! except in `docs/contract/` (whose README may say where the contract came from, and whose
//! files link to each other by bare file name).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The old spec files (split so that this file does not mention them itself).
const OLD_NAMES: [[&str; 2]; 3] = [["behaviour", ".md"], ["code-mode", ".md"], ["host", ".md"]];

const CONTRACT_DIR: &str = "docs/contract";

/// One problem: where, and what.
struct Problem {
    file: String,
    line: usize,
    message: String,
}

/// Runs the check over the repository at `root`; `Err` lists every problem, one per line.
pub(crate) fn check(root: &Path) -> Result<(), String> {
    let anchors = contract_anchors(root)?;
    let mut files = Vec::new();
    collect(root, &root.join("crates"), &["rs", "js"], &mut files);
    collect(root, &root.join("xtask"), &["rs"], &mut files);
    collect(root, &root.join("docs"), &["md"], &mut files);
    if root.join("README.md").is_file() {
        files.push(PathBuf::from("README.md"));
    }
    // This checker names the old files by necessity (its tests and docs).
    files.retain(|f| slash(f) != "xtask/src/citations.rs");
    files.sort();

    let mut problems = Vec::new();
    let mut references = 0usize;
    for rel in &files {
        let text = match fs::read_to_string(root.join(rel)) {
            Ok(t) => t,
            Err(_) => continue, // not UTF-8 or vanished: nothing to cite in it
        };
        let rel_str = slash(rel);
        let in_contract = rel_str.starts_with(&format!("{CONTRACT_DIR}/"));
        let is_md = rel_str.ends_with(".md");
        for (index, line) in text.lines().enumerate() {
            let mut report = |message: String| {
                problems.push(Problem {
                    file: rel_str.clone(),
                    line: index + 1,
                    message,
                })
            };
            for (file, anchors_here) in plain_references(line) {
                references += 1;
                check_one(&anchors, &file, &anchors_here, &mut report);
            }
            if is_md {
                for target in markdown_targets(line) {
                    if let Some((file, anchor)) = resolve_link(rel, &target, in_contract) {
                        references += 1;
                        check_one(&anchors, &file, &anchor.into_iter().collect(), &mut report);
                    }
                }
            }
            if !in_contract {
                for name in old_citations(root, rel, is_md, line) {
                    report(format!(
                        "cites `{name}`, which is outside the repository; cite docs/contract/ instead"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        eprintln!(
            "citations: {references} references in {} files resolve; no old spec citations",
            files.len()
        );
        return Ok(());
    }
    let mut out = String::new();
    for p in &problems {
        out.push_str(&format!("{}:{}: {}\n", p.file, p.line, p.message));
    }
    out.push_str(&format!("{} citation problem(s)", problems.len()));
    Err(out)
}

fn check_one(
    anchors: &BTreeMap<String, BTreeSet<String>>,
    file: &str,
    wanted: &Vec<String>,
    report: &mut impl FnMut(String),
) {
    let Some(defined) = anchors.get(file) else {
        report(format!("{CONTRACT_DIR}/{file} does not exist"));
        return;
    };
    for anchor in wanted {
        if !defined.contains(anchor) {
            report(format!("{CONTRACT_DIR}/{file} has no anchor #{anchor}"));
        }
    }
}

/// `docs/contract/<file>.md(#a)?( to #b)?` occurrences in a line: (file, anchors).
fn plain_references(line: &str) -> Vec<(String, Vec<String>)> {
    let prefix = format!("{CONTRACT_DIR}/");
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find(&prefix) {
        let after = &rest[at + prefix.len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(after.len());
        let mut name = &after[..name_len];
        // a sentence may end right after the path
        while name.ends_with('.') && !name.ends_with(".md") {
            name = &name[..name.len() - 1];
        }
        if !name.ends_with(".md") {
            // `docs/contract/` alone, or a directory mention: not a file reference
            rest = &after[name_len..];
            continue;
        }
        let mut tail = &after[name.len()..];
        let mut anchors = Vec::new();
        if let Some(a) = tail.strip_prefix('#') {
            let (anchor, t) = take_anchor(a);
            anchors.push(anchor.to_string());
            tail = t;
            if let Some(b) = tail.strip_prefix(" to #") {
                let (anchor, t) = take_anchor(b);
                anchors.push(anchor.to_string());
                tail = t;
            }
        }
        out.push((name.to_string(), anchors));
        rest = tail;
    }
    out
}

fn take_anchor(s: &str) -> (&str, &str) {
    let len = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(s.len());
    (&s[..len], &s[len..])
}

/// The targets of Markdown inline links `[text](target)` in a line.
fn markdown_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.to_string());
        rest = &after[end..];
    }
    out
}

/// A Markdown link target from the file `from` (repository-relative) that lands in the contract
/// directory: (file name, anchor). Absolute URLs and links elsewhere give `None`.
fn resolve_link(from: &Path, target: &str, in_contract: bool) -> Option<(String, Option<String>)> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a.to_string())),
        None => (target, None),
    };
    if path.is_empty() {
        // same-file anchor: only checked inside the contract
        if !in_contract {
            return None;
        }
        let name = from.file_name()?.to_str()?.to_string();
        return Some((name, anchor));
    }
    let joined = from.parent().unwrap_or(Path::new("")).join(path);
    let mut parts: Vec<String> = Vec::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(s) => parts.push(s.to_str()?.to_string()),
            _ => {}
        }
    }
    let normal = parts.join("/");
    let name = normal.strip_prefix(&format!("{CONTRACT_DIR}/"))?;
    if name.contains('/') || !name.ends_with(".md") {
        return None;
    }
    Some((name.to_string(), anchor))
}

/// Every contract file and the anchors it defines.
fn contract_anchors(root: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let dir = root.join(CONTRACT_DIR);
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut out = BTreeMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.ends_with(".md") {
            continue;
        }
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        let mut ids = BTreeSet::new();
        let mut fenced = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            let mut rest = line;
            while let Some(at) = rest.find("<a id=\"") {
                let after = &rest[at + 7..];
                let Some(end) = after.find('"') else { break };
                ids.insert(after[..end].to_string());
                rest = &after[end..];
            }
            let trimmed = line.trim_start();
            if trimmed.starts_with('#') {
                let heading = trimmed.trim_start_matches('#');
                if heading.starts_with(' ') {
                    ids.insert(slug(heading.trim()));
                }
            }
        }
        out.insert(name, ids);
    }
    Ok(out)
}

/// GitHub's heading slug: lower case, spaces to `-`, everything but letters, digits, `-` and `_`
/// dropped.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Repository-relative paths of files under `dir` with one of `exts`.
fn collect(root: &Path, dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && !name.starts_with('.') {
                collect(root, &path, exts, out);
            }
        } else if exts
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_path_buf());
            }
        }
    }
}

fn slash(path: &Path) -> String {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The old spec file names (`behaviour.md`, `code-mode.md`, `host.md`) that `line` of the file
/// `rel` cites. A repository path (`docs/contract/host.md`, `docs/host.md`) is not a citation; the
/// upstream spec sat under `spec/`. In a Markdown file a bare name is a relative link, fine when
/// that file exists beside it (`docs/host.md` linking `host.md`).
fn old_citations(root: &Path, rel: &Path, is_md: bool, line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for name in OLD_NAMES.iter().map(|p| p.concat()) {
        for (at, _) in line.match_indices(&name) {
            let before = &line[..at];
            let repo_path = before.ends_with('/') && !before.ends_with("spec/");
            let sibling = is_md
                && !before.ends_with('/')
                && rel
                    .parent()
                    .is_some_and(|dir| root.join(dir).join(&name).is_file());
            let word_start = before
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
            if word_start && !repo_path && !sibling {
                found.push(name.clone());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_references_with_ranges() {
        let refs = plain_references(
            "see docs/contract/lifecycle.md#s5-3, docs/contract/surface.md#s2-1 to #s2-5 and docs/contract/README.md.",
        );
        assert_eq!(
            refs,
            vec![
                ("lifecycle.md".to_string(), vec!["s5-3".to_string()]),
                (
                    "surface.md".to_string(),
                    vec!["s2-1".to_string(), "s2-5".to_string()]
                ),
                ("README.md".to_string(), vec![]),
            ]
        );
    }

    #[test]
    fn links_resolve_relative_to_the_file() {
        assert_eq!(
            resolve_link(
                Path::new("docs/catalog.md"),
                "contract/catalog.md#s3-1",
                false
            ),
            Some(("catalog.md".to_string(), Some("s3-1".to_string())))
        );
        assert_eq!(
            resolve_link(Path::new("README.md"), "docs/contract/guest.md", false),
            Some(("guest.md".to_string(), None))
        );
        assert_eq!(
            resolve_link(Path::new("docs/contract/guest.md"), "#s4-3", true),
            Some(("guest.md".to_string(), Some("s4-3".to_string())))
        );
        assert_eq!(
            resolve_link(Path::new("docs/catalog.md"), "../README.md", false),
            None
        );
    }

    #[test]
    fn heading_slugs() {
        assert_eq!(slug("Tool Search interaction"), "tool-search-interaction");
        assert_eq!(slug("§5.3 Parking and `wait`"), "53-parking-and-wait");
    }

    #[test]
    fn old_spec_citations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let rs = Path::new("crates/x/src/lib.rs");
        let md = Path::new("docs/architecture.md");
        assert_eq!(
            old_citations(root, rs, false, "see behaviour.md §5.3"),
            ["behaviour.md"]
        );
        assert_eq!(old_citations(root, rs, false, "(host.md H3)"), ["host.md"]);
        assert_eq!(
            old_citations(root, rs, false, "../shared/spec/code-mode.md"),
            ["code-mode.md"]
        );
        assert!(
            old_citations(root, rs, false, "docs/contract/host.md#h3 and docs/host.md").is_empty()
        );
        assert!(old_citations(root, rs, false, "my-host.md").is_empty());
        // docs/host.md exists beside docs/architecture.md: a bare link to it is fine there.
        assert!(old_citations(root, md, true, "[the host half](host.md)").is_empty());
        assert_eq!(
            old_citations(root, md, true, "[spec](behaviour.md)"),
            ["behaviour.md"]
        );
    }
}
