//! The one helper only the MCP crate's tests can have: its own test server binary. The rest of
//! the harness (npm servers, the Python SDK) is `codemode-test-support`, shared with the CLI.

use std::path::PathBuf;

/// Our misbehaving rmcp test server (src/bin/codemode-mcp-testserver.rs).
pub(crate) fn testserver() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemode-mcp-testserver"))
}
