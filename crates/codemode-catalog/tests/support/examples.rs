//! Worked examples (docs/contract/examples.md) that both the catalog's tests and the facade's
//! check, each from its side: the tools they start from and the catalog they must end with.
//! Included by path (`#[path = "…/codemode-catalog/tests/support/examples.rs"] mod examples;`).

// Each test binary that includes this module uses part of it.
#![allow(dead_code)]

use codemode_catalog::{Catalog, ToolSpec};
use serde_json::json;

/// docs/contract/examples.md#e26: GitHub's `create_issue` as an MCP tool, with a non-ASCII
/// description, a multi-line one and a defaulted optional `body`.
pub(crate) fn e26_tool() -> ToolSpec {
    ToolSpec::mcp_tool("github", "create_issue", "Create a GitHub issue.").with_parameters(json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository 名称"},
            "title": {"type": "string", "description": "Issue title\nShown in tracker"},
            "body": {"type": "string", "default": ""}
        },
        "required": ["owner", "repo", "title"]
    }))
}

/// docs/contract/examples.md#e3: from the control tools `exec` and `wait`, the core shell tool
/// `exec` and the plugin tool `fake_create_ticket`, the catalog holds exactly the last two.
pub(crate) fn assert_e3_catalog(catalog: &Catalog) {
    assert_eq!(catalog.len(), 2);
    let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id()).collect();
    assert_eq!(
        ids,
        [
            "openclaw:core:exec",
            "openclaw:fake-code-mode:fake_create_ticket"
        ]
    );
}
