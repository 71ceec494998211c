//! Criterion benchmarks (issue 4): build a 10,000-tool catalog, render its quick index, run
//! 1,000 searches. Schemas are the real MCP corpus under `tests/fixtures/mcp`, cycled.
// `criterion_group!` generates undocumented public functions.
#![allow(missing_docs)]

use std::fs;
use std::hint::black_box;
use std::path::Path;

use codemode_catalog::index::{quick_index_line, render_quick_index};
use codemode_catalog::{Catalog, SearchLimits, Source, ToolOrigin, ToolSpec};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};

const TOOLS: usize = 10_000;

fn corpus() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    let mut tools = Vec::new();
    for server in [
        "server-everything",
        "server-filesystem",
        "server-github",
        "server-memory",
        "server-sequential-thinking",
    ] {
        let text = fs::read_to_string(dir.join(format!("{server}.json"))).expect("fixture");
        let fixture: Value = serde_json::from_str(&text).expect("fixture json");
        tools.extend(fixture["tools"].as_array().expect("tools").iter().cloned());
    }
    tools
}

/// 10,000 tools: 40% core/plugin with real input schemas (a quarter of them with a closed output
/// schema), 30% MCP, 30% client.
fn specs() -> Vec<ToolSpec> {
    let corpus = corpus();
    let closed = json!({"type": "object", "properties": {"id": {"type": "string"}, "ok": {"type": "boolean"}}, "required": ["id", "ok"], "additionalProperties": false});
    (0..TOOLS)
        .map(|i| {
            let tool = &corpus[i % corpus.len()];
            let name = format!("{}_{i:05}", tool["name"].as_str().unwrap_or("tool"));
            let description = tool["description"].as_str().unwrap_or_default().to_string();
            let origin = match i % 10 {
                0 | 1 => ToolOrigin::Core,
                2 | 3 => ToolOrigin::Plugin {
                    plugin_id: format!("plugin-{}", i % 37),
                    bundled: i % 3 == 0,
                    replay_safe: false,
                },
                4..=6 => ToolOrigin::Mcp {
                    server_name: format!("server-{}", i % 11),
                    safe_server_name: format!("server_{}", i % 11),
                    plugin_id: None,
                    tool_name: None,
                    operation: Default::default(),
                },
                _ => ToolOrigin::Client {
                    owner: Some("app".into()),
                },
            };
            let mut spec = ToolSpec::new(name, description, origin);
            spec.parameters = tool.get("inputSchema").cloned();
            if i % 4 == 0 {
                spec.output_schema = Some(closed.clone());
            }
            spec
        })
        .collect()
}

const QUERIES: [&str; 10] = [
    "read file",
    "create issue",
    "github pull request",
    "memory entities",
    "directory",
    "openclaw:core:read_file",
    "sum",
    "",
    "search code repositories",
    "no-such-tool-anywhere",
];

fn benches(c: &mut Criterion) {
    let specs = specs();
    let limits = SearchLimits::default();

    c.bench_function("build 10k-tool catalog", |b| {
        b.iter_batched(
            || specs.clone(),
            |specs| black_box(Catalog::build(specs, &limits).expect("builds")),
            BatchSize::LargeInput,
        )
    });

    let catalog = Catalog::build(specs.clone(), &limits).expect("builds");
    let mut indexed: Vec<_> = catalog
        .entries()
        .iter()
        .filter(|e| e.source() == Source::Openclaw)
        .map(|e| e.compact())
        .collect();
    indexed.sort_by(|a, b| {
        a.output
            .is_none()
            .cmp(&b.output.is_none())
            .then_with(|| a.id.encode_utf16().cmp(b.id.encode_utf16()))
    });
    let lines: Vec<String> = indexed
        .iter()
        .map(|e| quick_index_line(&e.id, &e.input, e.output.as_deref()))
        .collect();
    assert_eq!(
        render_quick_index(&lines).as_deref(),
        catalog.quick_index(),
        "bench renders the catalog's own index"
    );
    c.bench_function("render quick index of 10k-tool catalog", |b| {
        b.iter(|| black_box(render_quick_index(black_box(&lines))))
    });

    // Search over 10,000 guest-visible tools (the MCP quarter re-homed as client tools), one
    // query at a time, the index built beforehand; and the index build itself, which the first
    // search of a catalog pays (docs/benchmarks.md, "Search").
    let visible: Vec<ToolSpec> = specs
        .iter()
        .cloned()
        .map(|mut spec| {
            if matches!(spec.origin, ToolOrigin::Mcp { .. }) {
                spec.origin = ToolOrigin::Client {
                    owner: Some("mcp-bridge".into()),
                };
            }
            spec
        })
        .collect();
    let visible_catalog = Catalog::build(visible.clone(), &limits).expect("builds");
    assert_eq!(visible_catalog.all_tools().len(), TOOLS);
    c.bench_function("search index build, 10k tools", |b| {
        b.iter_batched(
            || Catalog::build(visible.clone(), &limits).expect("builds"),
            |catalog| black_box(catalog.search_entries("x", 1).len()),
            BatchSize::LargeInput,
        )
    });
    for query in ["read file", "create a pull request in a repository", "sum"] {
        let value = Value::String(query.to_string());
        black_box(visible_catalog.search(&value, None).expect("search"));
        c.bench_function(&format!("search {query:?}, 10k tools"), |b| {
            b.iter(|| {
                black_box(
                    visible_catalog
                        .search(black_box(&value), None)
                        .expect("search"),
                )
            })
        });
    }

    let queries: Vec<Value> = (0..1000)
        .map(|i| Value::String(QUERIES[i % QUERIES.len()].to_string()))
        .collect();
    c.bench_function("1000 searches over 10k-tool catalog", |b| {
        b.iter(|| {
            for query in &queries {
                black_box(catalog.search(query, None).expect("search"));
            }
        })
    });
}

criterion_group! {
    name = catalog_benches;
    config = Criterion::default().sample_size(10);
    targets = benches
}
criterion_main!(catalog_benches);
