//! Fuzz targets `dts_schema` and `mcp_namespace` (docs/threat-model.md, "Fuzzing"): a catalog
//! built from hostile MCP metadata (tool names, descriptions, input and output schemas: what a
//! server sends) renders its quick index, `describe` entries and `.d.ts` API files without
//! panicking, and the MCP namespace answers hostile paths and arguments with a value or an
//! error, never a panic.

#[path = "../../../xtask/fuzz/engine.rs"]
mod engine;

use codemode_catalog::{Catalog, McpNamespace, SearchLimits, ToolSpec};
use serde_json::{json, Value};

const LIMITS: SearchLimits = SearchLimits {
    max_search_limit: 50,
    search_default_limit: 8,
};

/// Bytes → (server, tool, description, input schema, output schema): the first three lines are
/// names, the rest JSON.
fn decode(bytes: &[u8]) -> Option<(String, String, String, Value, Option<Value>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.splitn(4, '\n');
    let server = lines.next()?.to_string();
    let tool = lines.next()?.to_string();
    let description = lines.next()?.to_string();
    let schemas: Value = serde_json::from_str(lines.next()?).ok()?;
    Some((
        server,
        tool,
        description,
        schemas.get("in").cloned().unwrap_or(Value::Null),
        schemas.get("out").cloned(),
    ))
}

fn generate(rng: &mut engine::Rng) -> Vec<u8> {
    let schema = |rng: &mut engine::Rng| {
        let mut s = json!({"type": "object", "properties": {}});
        for _ in 0..rng.below(5) {
            s["properties"][engine::key(rng)] = engine::json_value(rng, 5);
        }
        if rng.chance(3) {
            s["required"] = json!([engine::key(rng), engine::key(rng)]);
        }
        if rng.chance(4) {
            s = engine::json_value(rng, 6);
        }
        s
    };
    let schemas = json!({"in": schema(rng), "out": schema(rng)});
    format!(
        "{}\n{}\n{}\n{}",
        engine::string(rng).replace('\n', ""),
        engine::string(rng).replace('\n', ""),
        engine::string(rng).replace('\n', " "),
        schemas
    )
    .into_bytes()
}

fn catalog(bytes: &[u8]) -> Option<Catalog> {
    let (server, tool, description, input, output) = decode(bytes)?;
    let mut spec = ToolSpec::mcp_tool(server.clone(), tool, description).with_parameters(input);
    if let Some(out) = output {
        spec = spec.with_output_schema(out);
    }
    let other = ToolSpec::mcp_tool(server, "echo", "Echo.")
        .with_parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}));
    Catalog::build(vec![spec, other, ToolSpec::core("read", "Read.")], &LIMITS).ok()
}

fn seeds() -> Vec<Vec<u8>> {
    vec![
        b"docs\nsearch_docs\nSearch the docs.\n{\"in\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\",\"default\":3}},\"required\":[\"q\"]},\"out\":{\"type\":\"object\",\"properties\":{\"hits\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/h\"}}},\"$defs\":{\"h\":{\"type\":\"string\"}}}}".to_vec(),
        b"a-b\n*/declare x\n</tool>\n{\"in\":{\"anyOf\":[{\"type\":\"null\"},{\"enum\":[\"*/\",1,null]}]},\"out\":{\"$ref\":\"#\"}}".to_vec(),
    ]
}

#[test]
fn fuzz_dts_schema() {
    engine::run("dts_schema", &seeds(), Some(&generate), &|bytes| {
        let Some(catalog) = catalog(bytes) else {
            return;
        };
        let _ = catalog.all_tools();
        let _ = catalog.search(&json!("search docs"), None);
        for entry in catalog.all_tools() {
            let _ = catalog.describe(&entry.id);
        }
        let namespace = McpNamespace::build(&catalog);
        for file in namespace.api_files() {
            let _ = serde_json::to_string(&file);
        }
    });
}

#[test]
fn fuzz_mcp_namespace() {
    let seeds = vec![
        b"[\"MCP\", [\"docs\", \"search_docs\"], [{\"q\": \"x\"}]]".to_vec(),
        b"[\"MCP\", [\"$api\", \"list\"], []]".to_vec(),
        b"[\"MCP\", [\"docs\", \"$api\"], [\"read\", \"docs.d.ts\"]]".to_vec(),
    ];
    let catalog = catalog(&seeds_first()).expect("seed catalog");
    let namespace = McpNamespace::build(&catalog);
    let generate = |rng: &mut engine::Rng| -> Vec<u8> {
        let path: Vec<Value> = (0..rng.below(4))
            .map(|_| {
                json!(
                    [
                        "docs",
                        "search_docs",
                        "echo",
                        "$api",
                        "list",
                        "read",
                        "__proto__",
                        "constructor"
                    ][rng.below(8)]
                )
            })
            .collect();
        let args: Vec<Value> = (0..rng.below(3))
            .map(|_| engine::json_value(rng, 5))
            .collect();
        json!([if rng.chance(8) { "mcp" } else { "MCP" }, path, args])
            .to_string()
            .into_bytes()
    };
    engine::run("mcp_namespace", &seeds, Some(&generate), &|bytes| {
        let Ok(Value::Array(parts)) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let ns = parts.first().and_then(Value::as_str).unwrap_or("");
        let path: Vec<String> = parts
            .get(1)
            .and_then(Value::as_array)
            .map(|p| {
                p.iter()
                    .map(|s| s.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default();
        let args: Vec<Value> = parts
            .get(2)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let _ = namespace.request(ns, &path, &args);
    });
}

fn seeds_first() -> Vec<u8> {
    seeds().remove(0)
}

/// Fuzz target `tools_file`: the static tools file (`codemode exec --tools`, `codemode catalog
/// --tools`; one parser, `parse_tools_file`) answers any text with specs or an error, and the
/// specs it accepts build a catalog or fail with an error, never a panic.
#[test]
fn fuzz_tools_file() {
    let seeds = vec![
        br#"[{"name": "weather", "description": "Forecast.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "result": {"ok": true}}]"#.to_vec(),
        br##"[{"name": "a", "origin": {"kind": "plugin", "pluginId": "p"}, "outputSchema": {"type": "array", "items": {"$ref": "#"}}, "delayMs": 5, "echo": true}, {"name": "a"}]"##.to_vec(),
        br#"[{"name": "deploy", "control": true, "catalogMode": "direct-only", "resultByAction": {"x": 1}, "error": "no"}]"#.to_vec(),
    ];
    let generate = |rng: &mut engine::Rng| -> Vec<u8> {
        let keys = [
            "name",
            "description",
            "parameters",
            "outputSchema",
            "origin",
            "catalogMode",
            "allowed",
            "control",
            "channel",
            "result",
            "error",
            "echo",
            "resultByAction",
            "delayMs",
        ];
        let entries: Vec<Value> = (0..rng.below(4))
            .map(|_| {
                let mut entry = serde_json::Map::new();
                for _ in 0..rng.below(6) {
                    let key = if rng.chance(6) {
                        engine::key(rng)
                    } else {
                        keys[rng.below(keys.len())].to_string()
                    };
                    let value = if key == "name" && rng.chance(2) {
                        Value::String(engine::string(rng))
                    } else {
                        engine::json_value(rng, 5)
                    };
                    entry.insert(key, value);
                }
                Value::Object(entry)
            })
            .collect();
        Value::Array(entries).to_string().into_bytes()
    };
    engine::run("tools_file", &seeds, Some(&generate), &|bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        if let Ok(specs) = codemode_catalog::cli::parse_tools_file(text) {
            if let Ok(catalog) = Catalog::build(specs, &LIMITS) {
                let _ = catalog.all_tools();
                let _ = catalog.quick_index();
            }
        }
    });
}
