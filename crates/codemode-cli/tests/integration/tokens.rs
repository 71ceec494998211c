//! `codemode catalog --tokens` over the three pinned npm MCP servers (`cargo xtask setup`,
//! CODEMODE_MCP_SERVERS): the table of what direct exposure and code mode show a model, counted
//! with the real o200k and cl100k tokenizers, and one tool's declaration file costing no more
//! than its direct schema plus 20% (docs/catalog.md, "What code mode saves").

use std::process::{Command, Output};

use codemode_test_support::{memory_server, npm_server, servers_file};

/// One parsed server row: (server, tools, direct o200k, direct cl100k, .d.ts o200k, ratio).
fn row(line: &str) -> (String, usize, usize, usize, usize, f64) {
    let cols: Vec<&str> = line.split_whitespace().collect();
    let ratio = cols[6]
        .trim_start_matches('≤')
        .trim_end_matches('×')
        .parse()
        .unwrap();
    (
        cols[0].to_string(),
        cols[1].parse().unwrap(),
        cols[2].parse().unwrap(),
        cols[3].parse().unwrap(),
        cols[4].parse().unwrap(),
        ratio,
    )
}

/// The three pinned servers' config, written into `dir`.
fn three_servers(dir: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join("files");
    std::fs::create_dir(&root).unwrap();
    servers_file(
        dir,
        serde_json::json!({
            "everything": {"command": npm_server("mcp-server-everything")},
            "memory": memory_server(dir),
            "filesystem": {"command": npm_server("mcp-server-filesystem"), "args": [root]},
        }),
    )
}

/// Runs `codemode catalog --tokens` over [`three_servers`] in a temporary directory.
fn tokens_table() -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = three_servers(dir.path());
    Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["catalog", "--tokens", "--mcp-config"])
        .arg(&file)
        .output()
        .unwrap()
}

/// Issue 28 item 5's bound on one tool's declaration file: for every tool of the three pinned
/// servers (their `tools/list` tools and the `resources.*`/`prompts.*` methods), reading
/// `mcp/<server>/<tool>.d.ts` costs at most 1.2 times the tool's direct `tools/list` entry in
/// o200k tokens. The table's column is each server's worst tool, rounded up; measured 1.16×
/// (everything), 0.89× (filesystem) and 1.14× (memory) with the lean per-tool block
/// (docs/mcp.md, "One tool's declaration").
#[test]
fn one_tool_declaration_within_a_fifth_of_its_schema() {
    let out = tokens_table();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows: Vec<_> = stdout.lines().skip(2).take(3).map(row).collect();
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["everything", "filesystem", "memory"],
        "{stdout}"
    );
    for (name, tools, .., ratio) in rows {
        assert!(tools > 0, "{name}");
        assert!(
            ratio > 0.0 && ratio <= 1.2,
            "{name}: one tool's .d.ts is {ratio}× its direct schema\n{stdout}"
        );
    }
}

#[test]
fn tokens_table_for_the_three_pinned_servers() {
    let out = tokens_table();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The table, for `cargo test -- --nocapture` and the README.
    println!("{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("server"), "{stdout}");
    // `catalog` has the built-in read/list/grep tools by default: their row comes first.
    assert!(
        lines[1].starts_with("(core, plugin and client tools) "),
        "{stdout}"
    );
    let rows: Vec<_> = lines[2..5].iter().map(|l| row(l)).collect();
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["everything", "filesystem", "memory"], "{stdout}");
    for (name, tools, o200k, cl100k, dts, ratio) in &rows {
        assert!(
            *tools > 0 && *o200k > 0 && *cl100k > 0 && *dts > 0,
            "{name}"
        );
        // One tool's `mcp/<server>/<tool>.d.ts` against its direct schema: at most 1.2×
        // (`one_tool_declaration_within_a_fifth_of_its_schema`).
        assert!(
            *ratio > 0.0 && *ratio <= 1.2,
            "{name}: one tool's .d.ts is {ratio}× its schema"
        );
    }
    let total = |prefix: &str| -> (usize, usize) {
        let line = lines.iter().find(|l| l.starts_with(prefix)).unwrap();
        let cols: Vec<usize> = line[prefix.len()..]
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect();
        (cols[cols.len() - 2], cols[cols.len() - 1])
    };
    let direct = total("total, direct exposure");
    let code = total("total, code mode (exec + wait + direct-only)");
    let builtin: Vec<usize> = lines[1]["(core, plugin and client tools)".len()..]
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect();
    assert_eq!(builtin[0], 3, "{stdout}");
    assert_eq!(
        direct.0,
        builtin[1] + rows.iter().map(|r| r.2).sum::<usize>(),
        "{stdout}"
    );
    assert_eq!(
        direct.1,
        builtin[2] + rows.iter().map(|r| r.3).sum::<usize>(),
        "{stdout}"
    );
    assert!(code.0 < direct.0 && code.1 < direct.1, "{stdout}");
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("Recommendation: enable code mode with `\"enabled\": \"auto\"`"),
        "{last}"
    );
}
