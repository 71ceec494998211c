//! `codemode catalog --tokens`: how many tokens a model is shown for the same tools with direct
//! exposure and with code mode, per server and in total, in two real tokenizers (o200k_base and
//! cl100k_base, `tiktoken-rs`), and a one-line recommendation (docs/catalog.md, "What code mode
//! saves: `catalog --tokens`").
//!
//! *Direct exposure* is every tool as a `tools/list` entry would carry it to the model:
//! `{"name", "description", "inputSchema"}` in compact JSON, one object per tool. *Code mode* is
//! what the host shows instead: the `exec` and `wait` definitions ([`codemode_facade::surface_tools`],
//! with the quick index and the MCP namespace prompt in `exec`'s description) plus the tools that
//! stay direct (direct-only tools). What a program later reads costs extra: a server's whole
//! `mcp/<server>.d.ts`, or one tool's `mcp/<server>/<tool>.d.ts`; the table shows both.

use std::collections::{BTreeMap, HashSet};

use codemode_catalog::{Catalog, McpNamespace, ToolOrigin, ToolSpec};
use serde_json::{json, Value};
use tiktoken_rs::CoreBPE;

/// Token counts in the two tokenizers: `[o200k_base, cl100k_base]`.
pub(crate) type Tokens = [usize; 2];

/// The tokenizers, in [`Tokens`] order.
fn tokenizers() -> [&'static CoreBPE; 2] {
    [
        tiktoken_rs::o200k_base_singleton(),
        tiktoken_rs::cl100k_base_singleton(),
    ]
}

/// `text`'s length in both tokenizers (ordinary encoding: special-token text counts as text).
pub(crate) fn count(text: &str) -> Tokens {
    let [o200k, cl100k] = tokenizers();
    [
        o200k.encode_ordinary(text).len(),
        cl100k.encode_ordinary(text).len(),
    ]
}

fn add(a: Tokens, b: Tokens) -> Tokens {
    [a[0] + b[0], a[1] + b[1]]
}

/// A tool as direct exposure shows it: the `tools/list` entry `{name, description, inputSchema}`
/// (an absent schema is the empty object schema MCP requires), compact JSON.
pub(crate) fn direct_json(spec: &ToolSpec) -> String {
    let schema = spec
        .parameters
        .clone()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    json!({"name": spec.name, "description": spec.description, "inputSchema": schema}).to_string()
}

/// One row of the table: a server (or the non-MCP tools).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The configured server name, or `(core, plugin and client tools)`.
    pub group: String,
    /// Tools in the group.
    pub tools: usize,
    /// Direct exposure of the group's tools.
    pub direct: Tokens,
    /// The server's whole `mcp/<server>.d.ts` (`None` for non-MCP tools).
    pub server_dts: Option<Tokens>,
    /// The largest ratio, in o200k tokens, of one tool's `mcp/<server>/<tool>.d.ts` to that
    /// tool's direct entry (`None` for non-MCP tools).
    pub worst_tool_ratio: Option<f64>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Report {
    /// Per group, servers in name order, non-MCP tools first.
    pub rows: Vec<Row>,
    /// Direct exposure of every tool.
    pub direct: Tokens,
    /// `exec` + `wait` definitions as shown to the model.
    pub surface: Tokens,
    /// Tools that stay direct under code mode (direct-only), as direct entries.
    pub direct_only: Tokens,
}

impl Report {
    /// What code mode shows: the surface plus the direct-only tools.
    pub(crate) fn code_mode(&self) -> Tokens {
        add(self.surface, self.direct_only)
    }

    /// Every server's `.d.ts` read once, in o200k tokens, on top of [`Report::code_mode`].
    fn code_mode_reading_every_header(&self) -> usize {
        self.code_mode()[0]
            + self
                .rows
                .iter()
                .filter_map(|r| r.server_dts.map(|t| t[0]))
                .sum::<usize>()
    }
}

/// Builds the report for `specs` (the tools the policy allows, as [`crate::host::Host::specs`]
/// gives them) and the `catalog` built from them.
pub(crate) fn report(specs: &[ToolSpec], catalog: &Catalog) -> Report {
    let cataloged: HashSet<usize> = catalog.entries().iter().map(|e| e.spec_index()).collect();
    let namespace = McpNamespace::build(catalog);
    let tool_files: BTreeMap<String, String> = namespace
        .tool_files()
        .into_iter()
        .map(|f| (f.path, f.content))
        .collect();
    let mut groups: BTreeMap<(bool, String), Row> = BTreeMap::new();
    let mut direct = [0, 0];
    let mut direct_only = [0, 0];
    for (index, spec) in specs.iter().enumerate() {
        let cost = count(&direct_json(spec));
        direct = add(direct, cost);
        if !cataloged.contains(&index) {
            direct_only = add(direct_only, cost);
        }
        let (is_mcp, group) = match &spec.origin {
            ToolOrigin::Mcp { server_name, .. } => (true, server_name.clone()),
            _ => (false, "(core, plugin and client tools)".to_string()),
        };
        let row = groups.entry((is_mcp, group.clone())).or_insert(Row {
            group,
            tools: 0,
            direct: [0, 0],
            server_dts: None,
            worst_tool_ratio: None,
        });
        row.tools += 1;
        row.direct = add(row.direct, cost);
    }
    // MCP servers: the server file and the per-tool files, by the namespace's identifiers.
    for server in namespace.servers() {
        let Some(row) = groups.get_mut(&(true, server.server_name.clone())) else {
            continue;
        };
        let file = namespace
            .api_files()
            .into_iter()
            .find(|f| f.path == format!("mcp/{}.d.ts", server.identifier));
        row.server_dts = file.map(|f| count(&f.content));
        for method in &server.methods {
            let path = format!("mcp/{}/{}.d.ts", server.identifier, method.method);
            let (Some(dts), Some(spec)) = (
                tool_files.get(&path),
                catalog.entry(&method.id).map(|e| &specs[e.spec_index()]),
            ) else {
                continue;
            };
            let ratio = count(dts)[0] as f64 / count(&direct_json(spec))[0].max(1) as f64;
            row.worst_tool_ratio = Some(row.worst_tool_ratio.map_or(ratio, |r: f64| r.max(ratio)));
        }
    }
    let tools: Value = json!(codemode_facade::surface_tools(catalog));
    Report {
        rows: groups.into_values().collect(),
        direct,
        surface: count(&tools.to_string()),
        direct_only,
    }
}

/// The one-line recommendation, following the config's guidance on choosing `enabled`
/// (docs/catalog.md, "What code mode saves"): code mode when it shows fewer tokens, with
/// `"auto"` (catalog-preferred models only) as the default choice and `true` only for a model
/// verified with it; direct exposure when code mode would show more.
pub(crate) fn recommendation(report: &Report) -> String {
    let direct = report.direct[0];
    let code = report.code_mode()[0];
    if direct == 0 {
        return "Recommendation: no tools to compare; nothing to decide.".to_string();
    }
    if code >= direct {
        return format!(
            "Recommendation: keep these tools direct (`\"enabled\": false`): code mode shows {code} o200k tokens, direct exposure {direct}; code mode pays off once the catalog grows."
        );
    }
    let saved = 100 - code * 100 / direct;
    let mut line = format!(
        "Recommendation: enable code mode with `\"enabled\": \"auto\"` (the default): it shows {code} o200k tokens instead of {direct} ({saved}% fewer) to catalog-preferred models and keeps others direct; use `true` only for a model you have verified with code mode."
    );
    let reading = report.code_mode_reading_every_header();
    if reading > direct {
        line.push_str(&format!(
            " A program that reads every server's .d.ts spends {reading} (more than direct): point models at one tool's mcp/<server>/<tool>.d.ts."
        ));
    }
    line
}

/// `r` rounded up to two decimals, so that the table's `≤` bound holds for every tool (less a
/// hair for the binary error of `r * 100`, which would otherwise turn 1.15 into 1.16).
fn ceil_hundredth(r: f64) -> f64 {
    (r * 100.0 - 1e-9).ceil() / 100.0
}

/// The table as text: one line per group, the totals, the recommendation.
pub(crate) fn render(report: &Report) -> String {
    let pair = |t: Tokens| format!("{:>7} {:>7}", t[0], t[1]);
    let mut out = String::new();
    out.push_str(&format!(
        "{:<36} {:>5}  {:>15}  {:>15}  {:>9}\n",
        "server", "tools", "direct o200k/cl100k", "server .d.ts", "1 tool"
    ));
    for row in &report.rows {
        out.push_str(&format!(
            "{:<36} {:>5}  {:>15}      {:>15}  {:>9}\n",
            row.group,
            row.tools,
            pair(row.direct),
            row.server_dts.map_or("-".to_string(), pair),
            row.worst_tool_ratio
                .map_or("-".to_string(), |r| format!("≤{:.2}×", ceil_hundredth(r))),
        ));
    }
    out.push_str(&format!(
        "{:<36} {:>5}  {:>15}\n",
        "total, direct exposure",
        report.rows.iter().map(|r| r.tools).sum::<usize>(),
        pair(report.direct)
    ));
    out.push_str(&format!(
        "{:<36} {:>5}  {:>15}\n",
        "total, code mode (exec + wait + direct-only)",
        "",
        pair(report.code_mode())
    ));
    out.push_str(&recommendation(report));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_catalog::SearchLimits;

    #[test]
    fn counts_are_real_tokenizer_counts() {
        // "hello world" is two tokens in both encodings.
        assert_eq!(count("hello world"), [2, 2]);
        assert_eq!(count(""), [0, 0]);
    }

    #[test]
    fn many_tools_recommend_code_mode_and_few_keep_direct() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Absolute path of the file to operate on."},
            "recursive": {"type": "boolean", "description": "Descend into subdirectories."}},
            "required": ["path"]});
        let many: Vec<ToolSpec> = (0..40)
            .map(|i| {
                ToolSpec::mcp_tool("files", format!("tool_{i}"), "Does one file thing well.")
                    .with_parameters(schema.clone())
            })
            .collect();
        let catalog = Catalog::build(many.clone(), &SearchLimits::default()).unwrap();
        let many_report = super::report(&many, &catalog);
        assert_eq!(many_report.rows.len(), 1);
        assert_eq!(many_report.rows[0].tools, 40);
        assert!(
            many_report.code_mode()[0] < many_report.direct[0],
            "{many_report:?}"
        );
        assert!(recommendation(&many_report)
            .starts_with("Recommendation: enable code mode with `\"enabled\": \"auto\"`"));
        // One tool's declaration against its direct entry: 61 against 65 o200k tokens for this
        // shape with the lean per-tool block (96 with the server file's block, `@param` copies
        // included; docs/mcp.md, "One tool's declaration").
        let ratio = many_report.rows[0].worst_tool_ratio.unwrap();
        assert_eq!(ratio, 61.0 / 65.0, "{many_report:?}");

        let one = vec![ToolSpec::core("ping", "Ping.")];
        let catalog = Catalog::build(one.clone(), &SearchLimits::default()).unwrap();
        let one_report = super::report(&one, &catalog);
        assert!(recommendation(&one_report).starts_with("Recommendation: keep these tools direct"));
    }
}
