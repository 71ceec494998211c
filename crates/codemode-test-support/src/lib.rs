//! What the integration tests of the workspace's crates share, so no test file carries its own
//! copy of the harness:
//!
//! - where the real MCP servers and the Python MCP SDK that `cargo xtask setup` installs live
//!   (xtask/src/main.rs, xtask/src/python.rs): each location is the environment variable
//!   `cargo xtask test` sets, else the default under the workspace's `target/`;
//! - [`process`]: child processes run with a given stdin, and line-protocol children;
//! - [`files`]: files written into a test directory, and a program's JSON output;
//! - `mcp` (feature `mcp`, for the tests of codemode-cli and codemode-mcp): raw 2026-07-28 HTTP
//!   requests and rmcp client handlers.
//!
//! A dev-dependency only, never published; it depends on std and serde_json (and, with `mcp`,
//! on rmcp, reqwest and tokio) and on no crate of the workspace, so any crate can use it without
//! a dependency cycle.

use std::path::PathBuf;

pub mod files;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod process;

/// The workspace root (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The npm MCP server binary `name` (`mcp-server-everything`, `mcp-server-memory`, …) from
/// `$CODEMODE_MCP_SERVERS`, else `<workspace>/target/mcp-servers/node_modules/.bin`.
///
/// Panics (failing the test) with `MCP test server <name> is not installed; run `cargo xtask
/// setup`` when the binary is missing: these tests run real servers, never a stand-in.
pub fn npm_server(name: &str) -> PathBuf {
    let dir = std::env::var_os("CODEMODE_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/mcp-servers/node_modules/.bin"));
    let path = dir.join(name);
    assert!(
        path.exists(),
        "MCP test server {name} is not installed; run `cargo xtask setup`"
    );
    path
}

/// Writes `dir/servers.json`, the MCP config `{"mcpServers": servers}` (`servers` maps each
/// server's name to its entry), and returns its path.
pub fn servers_file(dir: &std::path::Path, servers: serde_json::Value) -> PathBuf {
    let path = dir.join("servers.json");
    let config = serde_json::json!({ "mcpServers": servers });
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The MCP config entry of npm's server-memory ([`npm_server`]) keeping its knowledge graph in
/// `dir/memory.jsonl`.
pub fn memory_server(dir: &std::path::Path) -> serde_json::Value {
    serde_json::json!({
        "command": npm_server("mcp-server-memory"),
        "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}
    })
}

/// [`servers_file`] with npm's server-everything ([`npm_server`]) as server `everything`.
pub fn everything_servers(dir: &std::path::Path) -> PathBuf {
    let everything = npm_server("mcp-server-everything");
    servers_file(
        dir,
        serde_json::json!({"everything": {"command": everything}}),
    )
}

/// The Python interpreter of a venv with the `mcp` SDK: `$CODEMODE_PYTHON_MCP`, else
/// `<workspace>/target/python-mcp/bin/python` (made by `cargo xtask setup`, xtask/src/python.rs);
/// `None` when neither exists.
pub fn python_with_mcp() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CODEMODE_PYTHON_MCP") {
        return Some(path.into());
    }
    let path = workspace_root().join("target/python-mcp/bin/python");
    path.exists().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"), "{manifest}");
    }
}
