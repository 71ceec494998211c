//! `cargo xtask setup`'s part for the official MCP conformance suite: installs
//! [`SUITE`] (`@modelcontextprotocol/conformance`, pinned) into `target/conformance` with npm,
//! and beside it the suite's 2026-07-28 line, [`SUITE_2026`] (the newest `0.2.0-alpha` that
//! installs, pinned), under the npm alias [`SUITE_2026_ALIAS`] (two versions of one package
//! cannot share a `node_modules` under one name), and
//! Node 22 from npm's `node` package ([`NODE`], pinned) next to it when the system `node` is older
//! than 22 (the suite needs Node ≥ 22). `crates/codemode-cli/tests/integration/conformance.rs` runs it from
//! there: `target/conformance/node_modules/.bin/node` when that exists, else the system `node`.
//! A stamp file records what was installed, so a second run does nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The conformance suite's npm package and its exact version.
pub(crate) const SUITE: (&str, &str) = ("@modelcontextprotocol/conformance", "0.1.16");

/// The conformance suite's 2026-07-28 line: the newest `0.2.0-alpha` that installs
/// (0.2.0-alpha.12; npm's `latest` tag is still the 0.1 line).
pub(crate) const SUITE_2026: (&str, &str) = ("@modelcontextprotocol/conformance", "0.2.0-alpha.12");

/// The npm alias [`SUITE_2026`] is installed under:
/// `target/conformance/node_modules/<alias>/dist/index.js`.
pub(crate) const SUITE_2026_ALIAS: &str = "mcp-conformance-2026-07-28";

/// npm's `node` package (a Node binary shipped inside the registry package) and its exact
/// version, installed only when the system Node is older than [`MIN_NODE`].
pub(crate) const NODE: (&str, &str) = ("node", "22.23.3");

/// The oldest Node major version the suite runs on.
pub(crate) const MIN_NODE: u32 = 22;

/// Where setup installs the suite: `<workspace>/target/conformance`.
pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join("target").join("conformance")
}

/// The major version of `node` (a path or a name on `PATH`), `None` when it does not run.
fn node_major(node: &Path) -> Option<u32> {
    let out = Command::new(node).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    version
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// Installs [`SUITE`] (and [`NODE`] when the system Node is older than [`MIN_NODE`]) into
/// [`dir`] unless its stamp file already lists exactly these packages and the suite's entry
/// point exists. Needs npm (the MCP servers' setup step checked it already).
pub(crate) fn setup(
    root: &Path,
    run: impl Fn(&mut Command) -> Result<(), String>,
) -> Result<(), String> {
    let dir = dir(root);
    let stamp = dir.join("installed-versions.txt");
    let entry = dir
        .join("node_modules")
        .join(SUITE.0)
        .join("dist")
        .join("index.js");
    let entry_2026 = dir
        .join("node_modules")
        .join(SUITE_2026_ALIAS)
        .join("dist")
        .join("index.js");
    let system_node = node_major(Path::new("node"));
    let mut packages = vec![
        format!("{}@{}", SUITE.0, SUITE.1),
        format!("{SUITE_2026_ALIAS}@npm:{}@{}", SUITE_2026.0, SUITE_2026.1),
    ];
    if system_node.is_none_or(|major| major < MIN_NODE) {
        packages.push(format!("{}@{}", NODE.0, NODE.1));
    }
    let wanted: String = packages.iter().map(|p| format!("{p}\n")).collect();
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted)
        && entry.exists()
        && entry_2026.exists()
    {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&stamp);
    run(Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
        ])
        .arg(&dir)
        .args(&packages))?;
    for entry in [&entry, &entry_2026] {
        if !entry.exists() {
            return Err(format!(
                "npm install finished but {} is missing",
                entry.display()
            ));
        }
    }
    let node = dir.join("node_modules").join(".bin").join("node");
    let major = if node.exists() {
        node_major(&node)
    } else {
        system_node
    };
    match major {
        Some(major) if major >= MIN_NODE => {}
        found => {
            return Err(format!(
                "the conformance suite needs Node {MIN_NODE}+, found {}; npm's `node@{}` package \
                 did not install a working {}",
                found.map_or("none".to_owned(), |m| format!("Node {m}")),
                NODE.1,
                node.display()
            ))
        }
    }
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))
}
