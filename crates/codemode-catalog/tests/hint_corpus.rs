//! Snapshot tests of the hint renderer and the quick index over real MCP servers' tool schemas.
//!
//! Fixtures under `tests/fixtures/mcp/` are the `tools/list` answers of servers published on the
//! npm registry, captured with `tests/fixtures/mcp/list-tools.mjs` (see the README there).

use std::fs;
use std::path::Path;

use codemode_catalog::{input_hint, output_hint, Catalog, SearchLimits, ToolSpec};
use serde_json::Value;

const SERVERS: [&str; 5] = [
    "server-everything",
    "server-filesystem",
    "server-github",
    "server-memory",
    "server-sequential-thinking",
];

fn fixture(server: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(format!("{server}.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tools(fixture: &Value) -> &Vec<Value> {
    fixture["tools"].as_array().expect("tools array")
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// One block per tool: its input hint and, when it declares an `outputSchema`, the output hint
/// it would get if it were trusted (`(incomplete)` when none).
fn render_server(server: &str) -> String {
    let fixture = fixture(server);
    let mut out = format!(
        "{} {} ({} {})\n",
        fixture["package"].as_str().unwrap(),
        fixture["version"].as_str().unwrap(),
        fixture["serverInfo"]["name"].as_str().unwrap(),
        fixture["serverInfo"]["version"].as_str().unwrap(),
    );
    for tool in tools(&fixture) {
        let input = input_hint(tool.get("inputSchema"));
        assert!(utf16(&input) <= 300, "{input}");
        out.push_str(&format!(
            "\n{}\n  input:  {input}\n",
            tool["name"].as_str().unwrap()
        ));
        if let Some(schema) = tool.get("outputSchema") {
            let output = output_hint(schema);
            if let Some(text) = &output {
                assert!(utf16(text) <= 850);
            }
            out.push_str(&format!(
                "  output: {}\n",
                output.as_deref().unwrap_or("(incomplete)")
            ));
        }
    }
    out
}

#[test]
fn hints_server_everything() {
    insta::assert_snapshot!(render_server("server-everything"));
}

#[test]
fn hints_server_filesystem() {
    insta::assert_snapshot!(render_server("server-filesystem"));
}

#[test]
fn hints_server_github() {
    insta::assert_snapshot!(render_server("server-github"));
}

#[test]
fn hints_server_memory() {
    insta::assert_snapshot!(render_server("server-memory"));
}

#[test]
fn hints_server_sequential_thinking() {
    insta::assert_snapshot!(render_server("server-sequential-thinking"));
}

/// The corpus as plugin tools (one plugin per server): the quick index the model would see, and
/// the guarantee that MCP-sourced copies of the same tools stay `unknown` and out of the index.
#[test]
fn corpus_quick_index() {
    let mut specs = Vec::new();
    let mut total = 0;
    for server in SERVERS {
        let fixture = fixture(server);
        for tool in tools(&fixture) {
            total += 1;
            let name = tool["name"].as_str().unwrap();
            let description = tool["description"].as_str().unwrap_or_default();
            let mut spec = ToolSpec::plugin(server, name, description);
            spec.parameters = tool.get("inputSchema").cloned();
            spec.output_schema = tool.get("outputSchema").cloned();
            specs.push(spec.clone());
            // The same tool through MCP: untrusted.
            let mut remote = ToolSpec::mcp(server, name, description);
            remote.parameters = spec.parameters.clone();
            remote.output_schema = spec.output_schema.clone();
            specs.push(remote);
        }
    }
    assert_eq!(total, 63);
    let catalog = Catalog::build(specs, &SearchLimits::default()).unwrap();
    assert_eq!(catalog.len(), 126);
    assert!(catalog
        .entries()
        .iter()
        .filter(|e| !e.is_guest_visible())
        .all(|e| e.compact().input == "unknown" && e.compact().output.is_none()));
    let index = catalog.quick_index().unwrap();
    assert!(utf16(index) <= 8000);
    assert!(!index.contains("mcp:"));
    insta::assert_snapshot!(index);
}
