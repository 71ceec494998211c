//! Running things: the workspace root, child processes, `cargo` there, and the `cargo test`
//! command every test task shares (with the environment the MCP tests read).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{conformance, python};

/// The workspace root (xtask's parent directory).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Runs `cmd` (echoed to stderr first); `Err` names it and its exit status when it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// Whether `program arg` runs and succeeds (e.g. `clang-16 --version`).
pub(crate) fn have(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// `$CARGO` (or `cargo`) run in the workspace root.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// The `codemode` binary of the shared build ([`test_build`]): under `CARGO_TARGET_DIR`
/// (relative to the workspace) when set, else `target/`, in `debug/`.
pub(crate) fn codemode_bin() -> PathBuf {
    let root = root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        })
        .unwrap_or_else(|| root.join("target"));
    target.join("debug").join("codemode")
}

/// The npm MCP servers the `codemode-mcp` tests run: (package, exact version, binary in
/// `node_modules/.bin`).
pub(crate) const MCP_SERVERS: [(&str, &str, &str); 3] = [
    (
        "@modelcontextprotocol/server-everything",
        "2026.8.31",
        "mcp-server-everything",
    ),
    (
        "@modelcontextprotocol/server-memory",
        "2026.8.31",
        "mcp-server-memory",
    ),
    (
        "@modelcontextprotocol/server-filesystem",
        "2026.8.31",
        "mcp-server-filesystem",
    ),
];

/// Where setup installs [`MCP_SERVERS`] (a scratch npm prefix).
pub(crate) fn mcp_servers_dir() -> PathBuf {
    root().join("target").join("mcp-servers")
}

/// `cargo test --workspace` with the environment the MCP tests read (`CODEMODE_MCP_SERVERS`,
/// `CODEMODE_CONFORMANCE`, `CODEMODE_PYTHON_MCP`).
pub(crate) fn test_build() -> Command {
    let servers = mcp_servers_dir().join("node_modules").join(".bin");
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .env("CODEMODE_MCP_SERVERS", servers)
        .env("CODEMODE_CONFORMANCE", conformance::dir(&root()))
        .env("CODEMODE_PYTHON_MCP", python::interpreter(&root()));
    cmd
}

/// `npm install --no-audit --no-fund --save-exact --prefix <dir>` run by `program`, packages and
/// further options for the caller to add; `dir` is created first and its install `stamp` removed
/// (the caller writes it again once the install is whole, so a broken install is redone).
pub(crate) fn npm_install(
    program: impl AsRef<std::ffi::OsStr>,
    dir: &Path,
    stamp: &Path,
) -> Result<Command, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(stamp);
    let mut cmd = Command::new(program);
    cmd.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--prefix",
    ])
    .arg(dir);
    Ok(cmd)
}
