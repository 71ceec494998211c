//! MCP both ways (placeholder while the crate is being built).
