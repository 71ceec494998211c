//! docs/contract/examples.md#s10 worked examples that the catalog decides (docs/contract/examples.md#e3 to #e6, docs/contract/examples.md#e10 to #e15, docs/contract/examples.md#e20, docs/contract/examples.md#e21, docs/contract/examples.md#e24 to #e26,
//! docs/contract/examples.md#e39), with exact strings, plus the quick-index bound scenarios of issue 4.

#[path = "support/examples.rs"]
mod examples;

use codemode_catalog::{
    Catalog, CatalogMode, ControlKind, SearchLimits, Source, ToolOrigin, ToolSpec,
};
use examples::assert_e3_catalog;
use serde_json::{json, Value};

const PLUGIN: &str = "fake-code-mode";
const RECOVERY: &str = "Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";

/// The spec's heading, written out independently of the crate's constant.
const HEADING: &str =
    "OpenClaw/plugin tool quick index (exact ids; descriptions are intentionally deferred):\n\
Each line is `id input -> output`; `-> ?` means unknown.\n\
OUTPUT DECLARED RULE: use declared fields for dependent calls in the first exec.\n\
OUTPUT UNKNOWN RULE: return the raw tool value unchanged; inspect or map it only in a later exec.";
const COMPLETE_FOOTER: &str = "Use these exact ids with tools.callValue; use ALL_TOOLS or tools.search inside exec when lookup is ambiguous.";

fn omitted_footer(n: usize) -> String {
    format!("{n} additional OpenClaw/plugin tools omitted from this prompt index. Use ALL_TOOLS or tools.search inside exec to find them.")
}

fn value_schema() -> Value {
    json!({"type": "object", "properties": {"value": {"type": "string"}}})
}

/// Fixture tool `<name>` of plugin `fake-code-mode`.
fn plugin_tool(name: &str) -> ToolSpec {
    ToolSpec::plugin(PLUGIN, name, format!("Fixture tool {name}.")).with_parameters(value_schema())
}

fn core_tool(name: &str) -> ToolSpec {
    ToolSpec::core(name, format!("Core tool {name}.")).with_parameters(value_schema())
}

fn ticket() -> ToolSpec {
    ToolSpec::plugin(PLUGIN, "fake_create_ticket", "Create a support ticket.")
        .with_parameters(value_schema())
}

fn build(specs: Vec<ToolSpec>) -> Catalog {
    Catalog::build(specs, &SearchLimits::default()).expect("catalog builds")
}

fn names(catalog: &Catalog) -> Vec<&str> {
    catalog.entries().iter().map(|e| e.name()).collect()
}

fn guest_names(catalog: &Catalog) -> Vec<String> {
    catalog.all_tools().into_iter().map(|e| e.name).collect()
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

#[test]
fn e3_control_tools_are_marked_not_named() {
    let catalog = build(vec![
        core_tool("exec").with_control(ControlKind::CodeMode),
        core_tool("wait").with_control(ControlKind::CodeMode),
        core_tool("exec"),
        ticket(),
    ]);
    assert_e3_catalog(&catalog);
    // tools.call("exec") resolves to the shell tool; tools.call("wait") is unknown.
    assert_eq!(catalog.lookup("exec").unwrap().id(), "openclaw:core:exec");
    assert_eq!(
        catalog.lookup("wait").unwrap_err(),
        format!("Unknown tool id: wait. {RECOVERY}")
    );
    // tools.exec exists because the shell exec is the only entry with that name.
    assert!(catalog
        .conveniences()
        .iter()
        .any(|c| c.name == "exec" && c.id == "openclaw:core:exec"));
}

#[test]
fn e4_direct_only_tools_are_not_cataloged() {
    let catalog = build(vec![
        core_tool("computer").with_catalog_mode(CatalogMode::DirectOnly),
        ticket(),
    ]);
    assert_eq!(names(&catalog), ["fake_create_ticket"]);
}

#[test]
fn e5_required_direct_tools_stay_cataloged_core_first() {
    let catalog = build(vec![ticket(), core_tool("message")]);
    assert_eq!(guest_names(&catalog), ["message", "fake_create_ticket"]);
}

#[test]
fn e6_mcp_message_is_cataloged_but_not_in_all_tools() {
    let catalog = build(vec![ToolSpec::mcp("chat", "message", "Send a message.")]);
    assert_eq!(names(&catalog), ["message"]);
    assert!(catalog.all_tools().is_empty());
    assert_eq!(catalog.source_counts().mcp, 1);
}

#[test]
fn e10_declared_output_first_and_no_descriptions() {
    let alpha = plugin_tool("alpha_tool").with_output_schema(json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "score": {"type": "number"}},
            "required": ["id", "score"],
            "additionalProperties": false
        }
    }));
    let catalog = build(vec![plugin_tool("zeta_tool"), alpha]);
    let index = catalog.quick_index().expect("index");
    assert_eq!(
        index,
        format!(
            "{HEADING}\n\
- \"openclaw:fake-code-mode:alpha_tool\" {{ value?: string }} -> Array<{{ id: string; score: number }}>\n\
- \"openclaw:fake-code-mode:zeta_tool\" {{ value?: string }} -> ?\n\n{COMPLETE_FOOTER}"
        )
    );
    assert!(index.contains("descriptions are intentionally deferred"));
    assert!(index.contains("OUTPUT DECLARED RULE"));
    assert!(!index.contains("Fixture tool"));
}

#[test]
fn e11_seventy_two_tools_fit_whole() {
    let specs = (0..72)
        .map(|i| {
            ToolSpec::plugin("catalog-owner", format!("tool_{i:03}"), "x")
                .with_parameters(value_schema())
        })
        .collect();
    let catalog = build(specs);
    let index = catalog.quick_index().unwrap();
    assert!(index.contains("\"openclaw:catalog-owner:tool_071\""));
    assert!(!index.contains("additional OpenClaw/plugin tools omitted"));
    assert!(index.ends_with(COMPLETE_FOOTER));
    assert_eq!(index.lines().filter(|l| l.starts_with("- ")).count(), 72);
}

#[test]
fn e12_oversized_line_is_skipped_not_a_stop() {
    let declared = json!({"type": "string"});
    let mut specs = vec![
        ToolSpec::plugin(PLUGIN, format!("a_{}", "z".repeat(9000)), "long")
            .with_parameters(value_schema())
            .with_output_schema(declared.clone()),
    ];
    for i in 0..4 {
        specs.push(plugin_tool(&format!("b_short_{i}")).with_output_schema(declared.clone()));
    }
    let catalog = build(specs);
    let index = catalog.quick_index().unwrap();
    assert!(utf16(index) <= 8000);
    assert!(!index.contains(&"z".repeat(9000)));
    for i in 0..4 {
        assert!(index.contains(&format!("\"openclaw:fake-code-mode:b_short_{i}\"")));
    }
    assert!(index.ends_with(&format!("\n\n{}", omitted_footer(1))));
    assert!(index.ends_with("1 additional OpenClaw/plugin tools omitted from this prompt index. Use ALL_TOOLS or tools.search inside exec to find them."));
}

#[test]
fn e13_plugin_only_catalog_has_no_mcp() {
    let catalog = build(vec![ticket(), plugin_tool("fake_noop")]);
    assert!(!catalog.has_mcp());
}

#[test]
fn e14_mcp_tools_never_reach_the_index() {
    let github = ToolSpec::new(
        "github__create_issue",
        "Create an issue.",
        ToolOrigin::Mcp {
            server_name: "github".into(),
            safe_server_name: "github".into(),
            plugin_id: Some("bundle-mcp".into()),
            tool_name: None,
            operation: Default::default(),
        },
    )
    .with_parameters(
        json!({"type": "object", "properties": {"malicious_prompt": {"type": "string"}}}),
    );
    let catalog = build(vec![ticket(), plugin_tool("fake_noop"), github]);
    assert!(catalog.has_mcp());
    let index = catalog.quick_index().unwrap();
    assert!(index.contains("\"openclaw:fake-code-mode:fake_noop\""));
    assert!(!index.contains("github__create_issue"));
    assert!(!index.contains("malicious_prompt"));
    let mcp = catalog.entry("mcp:github:github__create_issue").unwrap();
    assert_eq!(mcp.compact().input, "unknown");
    assert_eq!(mcp.source(), Source::Mcp);
}

#[test]
fn e15_tool_search_controls_are_dropped() {
    let mut specs: Vec<ToolSpec> = [
        "tool_search_code",
        "tool_search",
        "tool_describe",
        "tool_call",
    ]
    .iter()
    .map(|n| core_tool(n).with_control(ControlKind::ToolSearch))
    .collect();
    specs.push(ticket());
    let catalog = build(specs);
    assert_eq!(catalog.len(), 1);
    assert_eq!(names(&catalog), ["fake_create_ticket"]);
}

#[test]
fn e20_search_with_limit_one() {
    let catalog = build(vec![plugin_tool("fake_noop"), ticket()]);
    let hits = catalog.search(&json!("ticket"), Some(&json!(1))).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "openclaw:fake-code-mode:fake_create_ticket");
}

#[test]
fn e21_convenience_and_exact_id_resolve_to_the_same_tool() {
    let catalog = build(vec![ticket()]);
    let id = "openclaw:fake-code-mode:fake_create_ticket";
    assert_eq!(
        catalog.conveniences()[0],
        codemode_catalog::Convenience {
            name: "fake_create_ticket".into(),
            id: id.into()
        }
    );
    assert_eq!(catalog.resolve_call(id).unwrap().id(), id);
    assert_eq!(catalog.resolve_call("fake_create_ticket").unwrap().id(), id);
}

#[test]
fn e24_unknown_tool_suggests_write() {
    let catalog = build(vec![ToolSpec::plugin(
        PLUGIN,
        "write",
        "Write a file to the workspace",
    )]);
    assert_eq!(
        catalog.resolve_call("file_write").unwrap_err(),
        "Unknown tool id: file_write. Did you mean: write? Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."
    );
}

#[test]
fn e25_empty_catalog_has_no_suggestions() {
    let catalog = build(vec![]);
    assert_eq!(
        catalog.resolve_call("missing_tool").unwrap_err(),
        "Unknown tool id: missing_tool. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name."
    );
    assert_eq!(catalog.quick_index(), None);
}

#[test]
fn e26_mcp_entries_are_invisible_to_guest_views() {
    let catalog = build(vec![ToolSpec::new(
        "github__create_issue",
        "Create a GitHub issue.",
        ToolOrigin::Mcp {
            server_name: "github".into(),
            safe_server_name: "github".into(),
            plugin_id: None,
            tool_name: None,
            operation: Default::default(),
        },
    )]);
    assert_eq!(
        catalog.search(&json!("github create issue"), None).unwrap(),
        vec![]
    );
    assert!(catalog.all_tools().is_empty());
    let expected = "Unknown tool id: github__create_issue. Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";
    assert_eq!(
        catalog.describe("github__create_issue").unwrap_err(),
        expected
    );
    assert_eq!(
        catalog.resolve_call("github__create_issue").unwrap_err(),
        expected
    );
    // Not even the exact id reaches an MCP entry from the guest.
    assert!(catalog.lookup("mcp:github:github__create_issue").is_err());
}

#[test]
fn e39_search_is_capped_at_max_search_limit() {
    let limits = SearchLimits {
        max_search_limit: 3,
        search_default_limit: 3,
    };
    let specs = (0..5)
        .map(|i| plugin_tool(&format!("ticket_{i}")))
        .collect();
    let catalog = Catalog::build(specs, &limits).unwrap();
    assert_eq!(catalog.search(&json!("ticket"), None).unwrap().len(), 3);
    assert_eq!(
        catalog
            .search(&json!("ticket"), Some(&json!(50)))
            .unwrap()
            .len(),
        3
    );
}

/// 100 tools of a plugin with a long owner: the index keeps the longest prefix that fits (all
/// lines have the same length), exactly as docs/contract/surface.md#s2-5's arithmetic says.
#[test]
fn long_owner_index_is_cut_by_the_spec_arithmetic() {
    let owner = format!("long-owner-{}", "o".repeat(60));
    let specs = (0..100)
        .map(|i| {
            ToolSpec::plugin(&owner, format!("tool_{i:03}"), "d").with_parameters(value_schema())
        })
        .collect();
    let catalog = build(specs);
    let index = catalog.quick_index().unwrap();
    let line = |i: usize| format!("- \"openclaw:{owner}:tool_{i:03}\" {{ value?: string }} -> ?");
    let line_len = utf16(&line(0));
    let fits = |k: usize| {
        utf16(HEADING) + k * (1 + line_len) + 2 + utf16(&omitted_footer(100 - k)) <= 8000
    };
    let kept = (0..=100).rev().find(|&k| fits(k)).unwrap();
    assert_eq!((line_len, kept), (117, 64));
    let mut expected = String::from(HEADING);
    for i in 0..kept {
        expected.push('\n');
        expected.push_str(&line(i));
    }
    expected.push_str("\n\n");
    expected.push_str(&omitted_footer(100 - kept));
    assert_eq!(index, expected);
    assert!(utf16(index) <= 8000);
}

/// Six builds of the same tools, given in different orders, render identical views.
#[test]
fn six_identical_builds_render_identically() {
    let tools: Vec<ToolSpec> = (0..300)
        .map(|i| {
            let spec = ToolSpec::plugin(format!("owner-{}", i % 7), format!("tool_{i:03}"), "d")
                .with_parameters(value_schema());
            if i % 3 == 0 {
                spec.with_output_schema(json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}))
            } else {
                spec
            }
        })
        .collect();
    let first = build(tools.clone());
    let first_index = first.quick_index().unwrap().to_string();
    assert!(utf16(&first_index) <= 8000);
    let first_json = serde_json::to_string(&first.all_tools()).unwrap();
    for round in 1..6 {
        let mut shuffled = tools.clone();
        shuffled.rotate_left(round * 37);
        if round % 2 == 1 {
            shuffled.reverse();
        }
        let catalog = build(shuffled);
        assert_eq!(catalog.quick_index().unwrap(), first_index, "round {round}");
        assert_eq!(
            serde_json::to_string(&catalog.all_tools()).unwrap(),
            first_json
        );
    }
}
