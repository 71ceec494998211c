//! Where the tests find their MCP servers.

use std::path::PathBuf;

/// The npm MCP server binary `name` (`mcp-server-everything`, …) from `$CODEMODE_MCP_SERVERS`,
/// else `<workspace>/target/mcp-servers/node_modules/.bin`; `cargo xtask setup` installs them.
#[allow(dead_code)]
pub(crate) fn npm_server(name: &str) -> PathBuf {
    let dir = std::env::var_os("CODEMODE_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/mcp-servers/node_modules/.bin")
        });
    let path = dir.join(name);
    assert!(
        path.exists(),
        "MCP test server {name} is not installed; run `cargo xtask setup`"
    );
    path
}

/// Our misbehaving rmcp test server (src/bin/codemode-mcp-testserver.rs).
#[allow(dead_code)]
pub(crate) fn testserver() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemode-mcp-testserver"))
}
