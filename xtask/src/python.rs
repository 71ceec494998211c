//! The Python MCP SDK the interoperability tests drive as a real MCP client (`codemode-mcp`'s
//! `tests/server.rs` stateless-HTTP and `tests/integration/elicitation.rs` tests): a virtual environment in
//! `target/python-mcp` with the pinned [`MCP_SDK`] from PyPI. `cargo xtask test` exports its
//! interpreter as `CODEMODE_PYTHON_MCP`; the tests skip (with a message) only when that variable is
//! unset and no venv exists, which CI never sees because `setup` makes it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned SDK: `mcp` on PyPI (2.3 speaks both the stateless 2026-07-28 era, its default
/// `Client`, and the legacy initialize handshake).
const MCP_SDK: &str = "mcp==2.3.0";

/// The venv directory under the repository's `target/`.
pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join("target").join("python-mcp")
}

/// The venv's interpreter, the value of `CODEMODE_PYTHON_MCP`.
pub(crate) fn interpreter(root: &Path) -> PathBuf {
    dir(root).join("bin").join("python")
}

/// Creates the venv and installs [`MCP_SDK`] unless the stamp file records exactly that
/// requirement and the interpreter exists. `run` runs a command and fails on a non-zero exit.
///
/// Errors: no `python3`, or `python3 -m venv` failing (on Debian the `python3-venv` package is
/// installed with apt when running as root, else the error names it), or pip failing.
pub(crate) fn setup(
    root: &Path,
    run: fn(&mut Command) -> Result<(), String>,
) -> Result<(), String> {
    let venv = dir(root);
    let python = interpreter(root);
    let stamp = venv.join("installed-requirement.txt");
    if python.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == MCP_SDK) {
        return Ok(());
    }
    let have_python = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_python {
        return Err(
            "`python3` was not found; the MCP interoperability tests need Python 3.10+ \
                    with venv (on Debian: apt-get install python3 python3-venv)"
                .into(),
        );
    }
    let make_venv = || {
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .output()
            .map_err(|e| format!("python3 -m venv: {e}"))
    };
    let out = make_venv()?;
    if !out.status.success() {
        let is_root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if is_root && Path::new("/etc/debian_version").exists() {
            run(Command::new("apt-get").args(["install", "-y", "-qq", "python3-venv"]))?;
            let again = make_venv()?;
            if !again.status.success() {
                return Err(format!(
                    "python3 -m venv {} failed: {}",
                    venv.display(),
                    String::from_utf8_lossy(&again.stderr).trim()
                ));
            }
        } else {
            return Err(format!(
                "python3 -m venv {} failed: {}\nOn Debian run: sudo apt-get install -y python3-venv",
                venv.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        MCP_SDK,
    ]))?;
    std::fs::write(&stamp, format!("{MCP_SDK}\n")).map_err(|e| format!("{}: {e}", stamp.display()))
}
