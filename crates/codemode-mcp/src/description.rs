//! The `exec` and `wait` definitions `codemode serve` answers to `tools/list`, fitted to the
//! catalog they describe (docs/mcp.md, "The `exec` description in serve").
//!
//! - A catalog with native tools (OpenClaw core, plugin or client entries, `source` other than
//!   `mcp`) gets the contract's definitions unchanged: [`codemode_facade::exec_tool`] with the MCP
//!   namespace prompt (docs/contract/surface.md#s2-4, docs/contract/mcp.md#s7-5) and
//!   [`codemode_facade::wait_tool`].
//! - A catalog of MCP tools only (what `serve --mcp-config` aggregates) gets [`mcp_exec_tool`]:
//!   the contract's text there would call `ALL_TOOLS` "the complete compact catalog" and show
//!   `tools.search` examples, both empty for such a catalog, and name the `MCP` namespace last.
//!   Its description leads with `MCP`, `MCP.$api()` and `API.list`/`API.read`; the input schema
//!   and argument checks are the contract's (docs/contract/surface.md#s2-2), only the `code`
//!   property's description points at `MCP` instead of `ALL_TOOLS`.

use codemode_catalog::Catalog;
use codemode_facade::surface::{exec_parameters, EXEC_DESCRIPTION_LANGUAGE, EXEC_TOOL_NAME};
use codemode_facade::{exec_tool, wait_tool, ToolDefinition};
use serde_json::{json, Value};

/// The first paragraph of the `exec` description for a catalog of MCP tools only.
pub const MCP_EXEC_DESCRIPTION_BASE: &str = "Run JavaScript or TypeScript in code mode over MCP servers. Their tools are in the `MCP` global, grouped by server: call one as `await MCP.<server>.<tool>({ ...input })` with one object argument. Find them first: `await MCP.$api()` lists the servers and their tool counts, `await MCP.<server>.$api()` lists a server's tools with descriptions, `await MCP.<server>.$api('<tool>', { schema: true })` adds the input schema; `API.list(prefix?)` and `API.read(path)` read the same as TypeScript-style declaration files (`mcp/index.d.ts`, `mcp/<server>.d.ts`). Never invent a server or tool name. A call resolves to the server's raw result `{ content, structuredContent?, isError? }`: `isError: true` is a value to inspect, not an exception. Use `return` to pass the final value back; otherwise the result is `null`. Perform dependent calls in order; parallelize independent work only. Nested calls enforce tool policy and approvals. Node.js modules and `require`/`import` are NOT available; use the MCP tools for shell, file, network, or external actions.";

/// The line an MCP-only `exec` description ends with while no configured MCP server has
/// connected yet (the catalog is empty): the servers join later and `tools/list` changes then.
pub const MCP_EXEC_DESCRIPTION_NONE_YET: &str =
    "No MCP server is connected yet; `MCP` is empty until one joins.";

/// The `code` property's description in an MCP-only `exec` (the contract's names `ALL_TOOLS` and
/// `tools.search`, which such a catalog leaves empty).
pub const MCP_EXEC_CODE_DESCRIPTION: &str = "JavaScript or TypeScript source for one workflow. Call tools as `MCP.<server>.<tool>({...})`; find exact names with `MCP.$api()`, never invent them. Run dependent steps in order and never put dependent calls in Promise.all; return the final value. Node built-in modules are not available.";

/// True when `catalog` has no native tools (no entry whose source is OpenClaw or a client), so
/// `serve` describes `exec` by its MCP namespace (see the module documentation). An empty catalog
/// counts as MCP-only only when `mcp_configured` (MCP servers are configured but none has
/// connected yet); otherwise it is the contract's.
pub fn is_mcp_only(catalog: &Catalog, mcp_configured: bool) -> bool {
    let counts = catalog.source_counts();
    counts.openclaw == 0 && counts.client == 0 && (counts.mcp > 0 || mcp_configured)
}

/// The `exec` definition for a catalog of MCP tools only: [`MCP_EXEC_DESCRIPTION_BASE`], the
/// contract's language guidance (docs/contract/surface.md#s2-4 part 5), then `"\n\n"` and the MCP
/// namespace prompt (docs/contract/mcp.md#s7-5, which names the visible servers), or
/// [`MCP_EXEC_DESCRIPTION_NONE_YET`] when the catalog has no MCP entry yet. The schema is
/// [`exec_parameters`] with the `code` description [`MCP_EXEC_CODE_DESCRIPTION`].
pub fn mcp_exec_tool(catalog: &Catalog) -> ToolDefinition {
    let mut description = String::from(MCP_EXEC_DESCRIPTION_BASE);
    description.push_str(EXEC_DESCRIPTION_LANGUAGE);
    description.push_str("\n\n");
    match codemode_catalog::namespace_prompt(catalog).filter(|p| !p.is_empty()) {
        Some(prompt) => description.push_str(&prompt),
        None => description.push_str(MCP_EXEC_DESCRIPTION_NONE_YET),
    }
    let mut parameters = exec_parameters();
    if let Some(code) = parameters.pointer_mut("/properties/code") {
        *code = json!({"type": "string", "description": MCP_EXEC_CODE_DESCRIPTION});
    }
    ToolDefinition {
        name: EXEC_TOOL_NAME.into(),
        description,
        parameters,
        hide_from_channel_progress: None,
    }
}

/// `exec` and `wait` for `catalog` (`None`: code mode is disabled, the contract's "unknown
/// catalog" `exec`): [`mcp_exec_tool`] when [`is_mcp_only`], else the contract's
/// [`exec_tool`] with the namespace prompt; `wait` is always [`wait_tool`].
pub fn serve_tools(catalog: Option<&Catalog>, mcp_configured: bool) -> [ToolDefinition; 2] {
    let exec = match catalog {
        Some(catalog) if is_mcp_only(catalog, mcp_configured) => mcp_exec_tool(catalog),
        Some(catalog) => {
            let prompt = codemode_catalog::namespace_prompt(catalog);
            exec_tool(Some(catalog), prompt.as_deref())
        }
        None => exec_tool(None, None),
    };
    [exec, wait_tool()]
}

/// The `code` property description of an `exec` definition's schema (for tests and hosts that
/// check which text a definition carries); `None` when the schema has none.
pub fn code_description(parameters: &Value) -> Option<&str> {
    parameters.pointer("/properties/code/description")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_catalog::{SearchLimits, ToolSpec};
    use codemode_facade::surface::EXEC_CODE_DESCRIPTION;

    fn mcp_spec(server: &str, tool: &str) -> ToolSpec {
        ToolSpec::mcp_tool(server, tool, "A tool.")
    }

    #[test]
    fn an_mcp_only_catalog_leads_with_mcp() {
        let catalog = Catalog::build(
            vec![mcp_spec("memory", "read_graph")],
            &SearchLimits::default(),
        )
        .unwrap();
        assert!(is_mcp_only(&catalog, false));
        let [exec, wait] = serve_tools(Some(&catalog), true);
        assert!(exec.description.starts_with(MCP_EXEC_DESCRIPTION_BASE));
        assert!(
            !exec.description.contains("ALL_TOOLS"),
            "{}",
            exec.description
        );
        assert!(!exec.description.contains("tools.search"));
        assert!(!exec.description.contains("OpenClaw"));
        assert!(exec.description.contains("visible servers: memory"));
        assert!(exec.description.contains("`API.list(prefix?)`"));
        assert_eq!(
            code_description(&exec.parameters),
            Some(MCP_EXEC_CODE_DESCRIPTION)
        );
        assert!(MCP_EXEC_CODE_DESCRIPTION.chars().count() < 320);
        assert_eq!(exec.parameters["required"], json!(["code"]));
        assert_eq!(wait, wait_tool());
    }

    #[test]
    fn an_empty_catalog_of_configured_servers_says_none_joined_yet() {
        let catalog = Catalog::build(Vec::new(), &SearchLimits::default()).unwrap();
        let [exec, _] = serve_tools(Some(&catalog), true);
        assert!(exec
            .description
            .ends_with(&format!("\n\n{MCP_EXEC_DESCRIPTION_NONE_YET}")));
        // Without configured MCP servers an empty catalog keeps the contract's text.
        let [exec, _] = serve_tools(Some(&catalog), false);
        assert_eq!(exec, exec_tool(Some(&catalog), None));
    }

    #[test]
    fn a_catalog_with_native_tools_keeps_the_contract_text() {
        let catalog = Catalog::build(
            vec![
                ToolSpec::core("echo", "Echo."),
                mcp_spec("memory", "read_graph"),
            ],
            &SearchLimits::default(),
        )
        .unwrap();
        assert!(!is_mcp_only(&catalog, true));
        let [exec, _] = serve_tools(Some(&catalog), true);
        let prompt = codemode_catalog::namespace_prompt(&catalog);
        assert_eq!(exec, exec_tool(Some(&catalog), prompt.as_deref()));
        assert_eq!(
            code_description(&exec.parameters),
            Some(EXEC_CODE_DESCRIPTION)
        );
    }
}
