//! Catalog behaviour: ids and order, entry shapes, search, lookup, conveniences, output
//! contracts, replay safety and the CLI views (docs/contract/catalog.md#s3, docs/contract/catalog.md#s3-1).

use codemode_catalog::cli::{self, CatalogView};
use codemode_catalog::{
    Catalog, CatalogError, CatalogGroup, LookupOp, SearchLimits, Source, ToolOrigin, ToolSpec,
    DEFAULT_READ_ONLY_CORE_TOOLS,
};
use serde_json::{json, Value};

const RECOVERY: &str = "Use tools.search to find a tool, tools.describe to inspect it, then tools.call with the exact id or name.";

fn build(specs: Vec<ToolSpec>) -> Catalog {
    Catalog::build(specs, &SearchLimits::default()).expect("catalog builds")
}

fn plugin(id: &str, name: &str, bundled: bool, replay_safe: bool) -> ToolSpec {
    ToolSpec::new(
        name,
        format!("{name} tool"),
        ToolOrigin::Plugin {
            plugin_id: id.into(),
            bundled,
            replay_safe,
        },
    )
}

fn mcp(server: &str, safe: &str, plugin_id: Option<&str>, name: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        "mcp tool",
        ToolOrigin::Mcp {
            server_name: server.into(),
            safe_server_name: safe.into(),
            plugin_id: plugin_id.map(String::from),
            tool_name: None,
            operation: Default::default(),
        },
    )
}

fn ids(catalog: &Catalog) -> Vec<&str> {
    catalog.entries().iter().map(|e| e.id()).collect()
}

fn hit_ids(hits: &[codemode_catalog::CompactEntry]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn ids_and_group_order() {
    let catalog = build(vec![
        ToolSpec::client(Some("app".into()), "select_file", "Pick a file."),
        ToolSpec::client(None, "confirm", "Confirm."),
        ToolSpec::client(Some("  ".into()), "blank_owner", "Blank owner."),
        mcp(
            "GitHub",
            "github",
            Some("bundle-mcp"),
            "github__create_issue",
        ),
        mcp("Docs", "", Some("docs-bridge"), "docs__read"),
        mcp("Nameless", " ", None, "anon"),
        plugin("bundle-mcp", "bare_mcp_tool", true, false),
        plugin("zeta-plugin", "zz", false, false),
        plugin("browser", "browser_request", true, false),
        plugin(" padded ", "padded_tool", false, false),
        ToolSpec::core("message", "Send a message."),
        ToolSpec::core("exec", "Run a shell command."),
    ]);
    assert_eq!(
        ids(&catalog),
        [
            "openclaw:core:exec",
            "openclaw:core:message",
            "openclaw:browser:browser_request",
            "openclaw:padded:padded_tool",
            "openclaw:zeta-plugin:zz",
            "mcp:bundle-mcp:bare_mcp_tool",
            "mcp:docs-bridge:docs__read",
            "mcp:github:github__create_issue",
            "mcp:mcp:anon",
            "client:app:select_file",
            "client:client:blank_owner",
            "client:client:confirm",
        ]
    );
    let groups: Vec<CatalogGroup> = catalog.entries().iter().map(|e| e.group()).collect();
    assert_eq!(groups[2], CatalogGroup::BundledPlugin);
    assert_eq!(groups[3], CatalogGroup::ExternalPlugin);
    assert_eq!(groups[5], CatalogGroup::Mcp);
    let source_names: Vec<&str> = catalog
        .entries()
        .iter()
        .map(|e| e.compact().source_name.as_deref().unwrap())
        .collect();
    assert_eq!(
        source_names,
        [
            "core",
            "core",
            "browser",
            "padded",
            "zeta-plugin",
            "bundle-mcp",
            "docs-bridge",
            "github",
            "mcp",
            "app",
            "client",
            "client"
        ]
    );
    let counts = catalog.source_counts();
    assert_eq!((counts.openclaw, counts.mcp, counts.client), (5, 4, 3));
    // The telemetry `sources` shape (docs/contract/telemetry.md#s9), keys in this order.
    assert_eq!(
        serde_json::to_string(&counts).unwrap(),
        r#"{"openclaw":5,"mcp":4,"client":3}"#
    );
    assert_eq!(catalog.len(), 12);
    assert_eq!(catalog.all_tools().len(), 8);
    assert!(catalog.has_mcp());
    // Entries map back to their input position.
    assert_eq!(catalog.entries()[0].spec_index(), 11);
}

#[test]
fn ids_sort_in_utf16_code_unit_order() {
    // U+FF01 sorts after U+1F600 in UTF-16 (0xFF01 > 0xD83D), before it in code points.
    let catalog = build(vec![
        ToolSpec::core("\u{FF01}", "fullwidth"),
        ToolSpec::core("😀", "emoji"),
        ToolSpec::core("B", "upper"),
        ToolSpec::core("a", "lower"),
    ]);
    assert_eq!(
        ids(&catalog),
        [
            "openclaw:core:B",
            "openclaw:core:a",
            "openclaw:core:😀",
            "openclaw:core:\u{FF01}"
        ]
    );
}

#[test]
fn membership_drops_denied_direct_only_and_control_tools() {
    let catalog = build(vec![
        ToolSpec::core("denied", "d").with_allowed(false),
        ToolSpec::core("computer", "c")
            .with_catalog_mode(codemode_catalog::CatalogMode::DirectOnly),
        ToolSpec::core("exec", "code mode").with_control(codemode_catalog::ControlKind::CodeMode),
        ToolSpec::core("read", "r"),
    ]);
    assert_eq!(ids(&catalog), ["openclaw:core:read"]);
    assert_eq!(
        catalog.lookup("openclaw:core:denied").unwrap_err(),
        // The id's tokens (openclaw, core) match every core entry: +12 each.
        format!("Unknown tool id: openclaw:core:denied. Did you mean: read? {RECOVERY}")
    );
}

#[test]
fn build_errors_name_the_tools() {
    let err = Catalog::build(
        vec![
            ToolSpec::core("read", "a"),
            ToolSpec::core("other", "b"),
            plugin("core", "read", false, false),
        ],
        &SearchLimits::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "duplicate catalog id \"openclaw:core:read\": tool #0 (core tool \"read\") and tool #2 (plugin \"core\" tool \"read\") both map to it"
    );
    assert!(matches!(
        err,
        CatalogError::DuplicateId {
            first_index: 0,
            second_index: 2,
            ..
        }
    ));

    // A duplicate that never enters the catalog is not an error.
    assert!(Catalog::build(
        vec![
            ToolSpec::core("read", "a"),
            ToolSpec::core("read", "b").with_allowed(false)
        ],
        &SearchLimits::default()
    )
    .is_ok());

    let err = Catalog::build(vec![ToolSpec::core(" ", "a")], &SearchLimits::default()).unwrap_err();
    assert_eq!(err.to_string(), "tool #0 (core) has an empty name");
    let err = Catalog::build(
        vec![plugin(" ", "x", false, false)],
        &SearchLimits::default(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "tool #0 (\"x\") has a blank plugin id");
    for (max, default) in [(0, 1), (51, 8), (5, 6), (5, 0)] {
        let err = Catalog::build(
            vec![],
            &SearchLimits {
                max_search_limit: max,
                search_default_limit: default,
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), format!("invalid search limits: maxSearchLimit must be 1-50 and searchDefaultLimit 1-maxSearchLimit (got maxSearchLimit {max}, searchDefaultLimit {default})"));
    }
}

#[test]
fn compact_and_described_shapes() {
    let closed = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false});
    let catalog = build(vec![
        ToolSpec::core("read", "Read a file.")
            .with_label("Read")
            .with_parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
            .with_output_schema(closed.clone()),
        plugin("fake-code-mode", "noop", false, false),
        ToolSpec::client(Some("app".into()), "pick", "Pick.")
            .with_parameters(json!({"type": "object", "properties": {"x": {"type": "string"}}}))
            .with_output_schema(closed.clone()),
        mcp("gh", "gh", None, "gh__issue").with_output_schema(closed.clone()),
    ]);
    let all = serde_json::to_string(&catalog.all_tools()).unwrap();
    assert_eq!(
        all,
        concat!(
            r#"[{"id":"openclaw:core:read","name":"read","label":"Read","description":"Read a file.","source":"openclaw","sourceName":"core","input":"{ path: string }","output":"{ ok: boolean }"},"#,
            r#"{"id":"openclaw:fake-code-mode:noop","name":"noop","description":"noop tool","source":"openclaw","sourceName":"fake-code-mode","input":"unknown"},"#,
            r#"{"id":"client:app:pick","name":"pick","description":"Pick.","source":"client","sourceName":"app","input":"unknown"}]"#
        )
    );
    let read = serde_json::to_value(catalog.describe("read").unwrap()).unwrap();
    assert_eq!(
        read,
        json!({
            "id": "openclaw:core:read", "name": "read", "label": "Read", "description": "Read a file.",
            "source": "openclaw", "sourceName": "core", "input": "{ path: string }", "output": "{ ok: boolean }",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "outputSchema": closed
        })
    );
    let keys: Vec<String> = read.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "id",
            "name",
            "label",
            "description",
            "source",
            "sourceName",
            "input",
            "output",
            "parameters",
            "outputSchema"
        ]
    );
    // No parameters → {}; client output claims are neither promoted nor exposed.
    let noop = serde_json::to_value(catalog.describe("noop").unwrap()).unwrap();
    assert_eq!(noop["parameters"], json!({}));
    let pick = serde_json::to_value(catalog.describe("client:app:pick").unwrap()).unwrap();
    assert_eq!(pick.get("output"), None);
    assert_eq!(pick.get("outputSchema"), None);
    assert_eq!(pick["parameters"]["properties"]["x"]["type"], "string");
    let gh = catalog.entry("mcp:gh:gh__issue").unwrap();
    assert_eq!(gh.compact().output, None);
    assert_eq!(gh.output_schema(), None);
}

fn search_catalog() -> Catalog {
    build(vec![
        ToolSpec::core("read", "Read a file from disk.").with_label("Reader"),
        ToolSpec::core("read_many", "Read many files."),
        ToolSpec::core("write", "Write a file; can read back."),
        ToolSpec::core("grep", "Search file contents."),
        ToolSpec::core("zz_tie", "zz_tie tool"),
        plugin("a", "aa_tie", false, false),
        ToolSpec::core("at", "Run a command at a given time."),
        mcp("fs", "fs", None, "read_remote"),
    ])
}

/// The ranking rules of docs/contract/catalog.md#s3-3 (docs/contract/decisions.md#d15).
#[test]
fn search_ranks_exact_hits_then_bm25_in_catalog_order() {
    let catalog = search_catalog();
    // Exact name first; then the name field (read_many) outweighs the description (write).
    let hits = catalog.search(&json!("read"), None).unwrap();
    assert_eq!(
        hit_ids(&hits),
        [
            "openclaw:core:read",
            "openclaw:core:read_many",
            "openclaw:core:write"
        ]
    );
    // An exact id (case-insensitive) comes first even where the name field would rank
    // another entry higher; the words of the id still score ("core" is the owner field).
    let hits = catalog.search(&json!("OPENCLAW:CORE:WRITE"), None).unwrap();
    assert_eq!(hits[0].id, "openclaw:core:write");
    // Stemming: "reading" and "files" meet "read", "file" and "files"; stopwords ("the", "of")
    // count for nothing; an entry answering both terms outranks one answering one.
    let hits = catalog
        .search(&json!("reading the files of"), None)
        .unwrap();
    assert_eq!(
        hit_ids(&hits),
        [
            "openclaw:core:read",
            "openclaw:core:read_many",
            "openclaw:core:write",
            "openclaw:core:grep"
        ]
    );
    // Equal scores keep catalog order (core before plugin), not id order.
    let hits = catalog.search(&json!("tie"), None).unwrap();
    assert_eq!(
        hit_ids(&hits),
        ["openclaw:core:zz_tie", "openclaw:a:aa_tie"]
    );
    // No word at all: every guest entry in catalog order; MCP never appears.
    let hits = catalog.search(&json!("  ¿¡ "), None).unwrap();
    assert_eq!(
        hit_ids(&hits),
        [
            "openclaw:core:at",
            "openclaw:core:grep",
            "openclaw:core:read",
            "openclaw:core:read_many",
            "openclaw:core:write",
            "openclaw:core:zz_tie",
            "openclaw:a:aa_tie"
        ]
    );
    assert_eq!(catalog.search(&json!(""), None).unwrap(), hits);
    assert!(catalog.search(&json!("remote"), None).unwrap().is_empty());
    // Stopwords only: nothing scores, but an exact name still answers.
    assert!(catalog.search(&json!("the"), None).unwrap().is_empty());
    assert_eq!(
        hit_ids(&catalog.search(&json!("At"), None).unwrap()),
        ["openclaw:core:at"]
    );
    // A synonym expands the query ("lookup" also searches "search"), and an unknown word
    // expands to the indexed words it begins ("contents" is indexed as "content").
    assert_eq!(
        hit_ids(&catalog.search(&json!("lookup"), None).unwrap()),
        ["openclaw:core:grep"]
    );
    assert_eq!(
        hit_ids(&catalog.search(&json!("cont"), None).unwrap()),
        ["openclaw:core:grep"]
    );
}

/// Misspelt names and ids get "Did you mean" (edit distance), and so do needles whose words
/// the search index matches (docs/contract/catalog.md#s3-4-suggestions, issue 25).
#[test]
fn unknown_tools_suggest_misspellings_and_search_hits() {
    let catalog = build(vec![
        ToolSpec::plugin("weather", "weather", "Current conditions for a location."),
        ToolSpec::core("read", "Read a file from disk."),
        ToolSpec::core("ls", "List directory contents."),
        ToolSpec::plugin("email", "email_send", "Send an email message."),
    ]);
    let message = |needle: &str| catalog.resolve_call(needle).unwrap_err().to_string();
    assert_eq!(
        message("wether"),
        format!("Unknown tool id: wether. Did you mean: weather? {RECOVERY}")
    );
    assert_eq!(
        message("reed"),
        format!("Unknown tool id: reed. Did you mean: read? {RECOVERY}")
    );
    // A misspelt id: `read` first; the others share the id's words `openclaw` and `core`.
    assert_eq!(
        message("openclaw:core:raed"),
        format!(
            "Unknown tool id: openclaw:core:raed. Did you mean: read, ls, email_send? {RECOVERY}"
        )
    );
    // Stemmed words through the search index: no token of "reading_files" is a token of `read`.
    assert_eq!(
        message("reading_files"),
        format!("Unknown tool id: reading_files. Did you mean: read? {RECOVERY}")
    );
    // Two typos in a short name are too many; nothing shares a word.
    assert_eq!(
        message("lx_zz"),
        format!("Unknown tool id: lx_zz. {RECOVERY}")
    );
}

#[test]
fn search_limit_rules() {
    let specs = (0..60)
        .map(|i| ToolSpec::core(format!("t{i:02}"), "x"))
        .collect();
    let catalog = build(specs);
    let count = |limit: Option<Value>| {
        catalog
            .search(&json!(""), limit.as_ref())
            .map(|h| h.len())
            .map_err(String::from)
    };
    assert_eq!(count(None), Ok(8));
    assert_eq!(count(Some(json!("3"))), Ok(8));
    assert_eq!(count(Some(Value::Null)), Ok(8));
    assert_eq!(count(Some(json!({"limit": 2}))), Ok(8));
    assert_eq!(count(Some(json!(2))), Ok(2));
    assert_eq!(count(Some(json!(2.0))), Ok(2));
    assert_eq!(count(Some(json!(1e300))), Ok(50));
    assert_eq!(count(Some(json!(u64::MAX))), Ok(50));
    for bad in [
        json!(0),
        json!(-1),
        json!(1.5),
        json!(0.5),
        json!(-3.0),
        json!(i64::MIN),
    ] {
        assert_eq!(
            count(Some(bad.clone())),
            Err("limit must be a positive integer.".to_string()),
            "{bad}"
        );
    }
    for bad in [json!(null), json!(1), json!({"q": "x"}), json!(["x"])] {
        assert_eq!(
            catalog.search(&bad, None).unwrap_err(),
            "search query must be a string."
        );
    }
    let hits = catalog
        .search_with_options(&json!(""), Some(&json!({"limit": 3})))
        .unwrap();
    assert_eq!(
        hit_ids(&hits),
        [
            "openclaw:core:t00",
            "openclaw:core:t01",
            "openclaw:core:t02"
        ]
    );
    assert_eq!(
        catalog
            .search_with_options(&json!(""), Some(&json!(3)))
            .unwrap()
            .len(),
        8
    );
    assert_eq!(
        catalog
            .search_with_options(&json!("t"), Some(&json!({"limit": 0})))
            .unwrap_err(),
        "limit must be a positive integer."
    );
}

#[test]
fn lookup_exact_id_then_unique_name() {
    let catalog = build(vec![
        plugin("a", "shared", false, false),
        plugin("b", "shared", false, false),
        ToolSpec::core("read", "Read a file."),
        // A tool whose *name* is another tool's id: the exact id still wins.
        plugin("weird", "openclaw:core:read", false, false),
    ]);
    assert_eq!(
        catalog.lookup("  openclaw:core:read\n").unwrap().id(),
        "openclaw:core:read"
    );
    assert_eq!(
        catalog.lookup("\u{FEFF}read\u{3000}").unwrap().id(),
        "openclaw:core:read"
    );
    assert_eq!(
        catalog.lookup(" shared ").unwrap_err(),
        "Ambiguous tool name: shared; use an exact tool id."
    );
    assert_eq!(
        catalog.lookup("openclaw:a:shared").unwrap().id(),
        "openclaw:a:shared"
    );
    // Names match exactly (case-sensitive).
    assert!(catalog.lookup("READ").is_err());
    assert_eq!(
        catalog
            .lookup_value(&json!(1), LookupOp::Describe)
            .unwrap_err(),
        "describe id must be a string."
    );
    assert_eq!(
        catalog
            .lookup_value(&json!(null), LookupOp::Call)
            .unwrap_err(),
        "call id must be a string."
    );
    assert_eq!(
        catalog
            .lookup_value(&json!({}), LookupOp::CallValue)
            .unwrap_err(),
        "callValue id must be a string."
    );
    assert_eq!(
        catalog
            .lookup_value(&json!("read"), LookupOp::Call)
            .unwrap()
            .id(),
        "openclaw:core:read"
    );
}

#[test]
fn suggestions_score_cap_and_use_ids_for_shared_names() {
    let catalog = build(vec![
        plugin("a", "create_ticket", false, false),
        plugin("b", "create_ticket", false, false),
        ToolSpec::core("ticket_list", "List tickets."),
        ToolSpec::core("notes", "Write notes about a ticket."),
        ToolSpec::core("unrelated", "Nothing."),
        mcp("t", "t", None, "ticket"),
    ]);
    // "ticket": ids of the shared name (40 via id-contains + 12 token) tie with ticket_list
    // (40 + 12); notes scores 12 + 8; unrelated 0; MCP is never suggested.
    assert_eq!(
        catalog.lookup("ticket").unwrap_err(),
        format!("Unknown tool id: ticket. Did you mean: openclaw:a:create_ticket, openclaw:b:create_ticket, ticket_list? {RECOVERY}")
    );
    assert_eq!(
        catalog.suggestions("ticket"),
        [
            "openclaw:a:create_ticket",
            "openclaw:b:create_ticket",
            "ticket_list"
        ]
    );
    // "notes_ticket": notes gets 40 (needle contains name) + 40 (token) + 12 + 12.
    assert_eq!(catalog.suggestions("notes_ticket")[0], "notes");
    assert!(catalog.suggestions("zzz").is_empty());
}

#[test]
fn conveniences_are_unique_safe_names() {
    let catalog = build(vec![
        ToolSpec::core("read", "r"),
        ToolSpec::core("web-search", "not an identifier"),
        ToolSpec::core("search", "reserved"),
        ToolSpec::core("callValue", "reserved"),
        ToolSpec::core("$dollar_1", "ok"),
        plugin("a", "dup", false, false),
        plugin("b", "dup", false, false),
        ToolSpec::client(Some("app".into()), "pick", "client tools count"),
        mcp("m", "m", None, "read_mcp"),
        mcp("m2", "m2", None, "mcp_only"),
        ToolSpec::core("mcp_only_twin", "x"),
    ]);
    let names: Vec<(&str, &str)> = catalog
        .conveniences()
        .iter()
        .map(|c| (c.name.as_str(), c.id.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("$dollar_1", "openclaw:core:$dollar_1"),
            ("mcp_only_twin", "openclaw:core:mcp_only_twin"),
            ("read", "openclaw:core:read"),
            ("pick", "client:app:pick"),
        ]
    );
    // An MCP tool sharing a guest tool's name does not break its convenience.
    let catalog = build(vec![
        ToolSpec::core("read", "r"),
        mcp("m", "m", None, "read"),
    ]);
    assert_eq!(catalog.conveniences().len(), 1);
}

#[test]
fn output_contracts_compile_once_and_never_echo() {
    let catalog = build(vec![
        ToolSpec::core("good", "g").with_output_schema(json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
            "additionalProperties": false
        })),
        ToolSpec::core("bad", "b").with_output_schema(json!({"type": "strnig"})),
        ToolSpec::core("none", "n"),
        ToolSpec::client(None, "client_claim", "c").with_output_schema(json!({"type": "strnig"})),
    ]);
    let bad = catalog.entry("openclaw:core:bad").unwrap();
    assert_eq!(bad.compact().output, None);
    assert_eq!(
        catalog.resolve_call("bad").unwrap_err(),
        "Tool \"openclaw:core:bad\" has an invalid outputSchema."
    );
    // describe still works and shows the declared schema.
    assert_eq!(
        catalog.describe("bad").unwrap().output_schema,
        Some(json!({"type": "strnig"}))
    );
    assert_eq!(
        catalog
            .validate_output("openclaw:core:bad", &json!("x"))
            .unwrap_err(),
        "Tool \"openclaw:core:bad\" has an invalid outputSchema."
    );
    assert_eq!(
        catalog.validate_output("openclaw:core:good", &json!({"count": 3})),
        Ok(())
    );
    let secret = json!({"count": "SECRET-VALUE"});
    let err = catalog
        .validate_output("openclaw:core:good", &secret)
        .unwrap_err();
    assert_eq!(
        err,
        "Tool \"openclaw:core:good\" returned details that do not match its declared outputSchema."
    );
    assert!(!err.to_string().contains("SECRET"));
    assert_eq!(
        catalog.validate_output("openclaw:core:none", &json!([1, 2])),
        Ok(())
    );
    // Untrusted claims are never enforced.
    assert!(catalog.resolve_call("client_claim").is_ok());
    assert_eq!(
        catalog.validate_output("client:client:client_claim", &json!(1)),
        Ok(())
    );
    assert_eq!(
        catalog
            .validate_output("openclaw:core:missing", &json!(1))
            .unwrap_err(),
        format!(
            "Unknown tool id: openclaw:core:missing. Did you mean: bad, good, none? {RECOVERY}"
        )
    );
}

#[test]
fn replay_safety_predicate() {
    let catalog = build(vec![
        ToolSpec::core("read", "r"),
        ToolSpec::core("write", "w"),
        plugin("safe", "lookup", false, true),
        plugin("unsafe", "mutate", false, false),
        plugin("chan", "post", false, true).with_channel(true),
        plugin("bundle-mcp", "bare", true, true),
        mcp("m", "m", None, "read"),
        ToolSpec::client(None, "read_client", "c"),
    ]);
    let safe = |id: &str| catalog.is_replay_safe(id, &DEFAULT_READ_ONLY_CORE_TOOLS);
    assert!(safe("openclaw:core:read"));
    assert!(safe(" openclaw:core:read "));
    assert!(!safe("read"), "names never count");
    assert!(!safe("openclaw:core:write"));
    assert!(safe("openclaw:safe:lookup"));
    assert!(!safe("openclaw:unsafe:mutate"));
    assert!(!safe("openclaw:chan:post"));
    assert!(!safe("mcp:bundle-mcp:bare"));
    assert!(!safe("mcp:m:read"));
    assert!(!safe("client:client:read_client"));
    assert!(!safe("openclaw:core:missing"));
    assert!(catalog.is_replay_safe("openclaw:core:write", &["write"]));
    assert!(!catalog.is_replay_safe("openclaw:core:read", &[]));
}

#[test]
fn catalog_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Catalog>();
}

#[test]
fn tools_file_and_cli_views() {
    let file = r#"[
        {"name": "fake_create_ticket", "description": "Create a ticket.",
         "origin": {"kind": "plugin", "pluginId": "fake-code-mode"},
         "parameters": {"type": "object", "properties": {"value": {"type": "string"}}}},
        {"name": "read", "label": "Read", "description": "Read a file.",
         "outputSchema": {"type": "string"}},
        {"name": "gh", "description": "MCP tool.",
         "origin": {"kind": "mcp", "serverName": "GitHub", "safeServerName": "github"}},
        {"name": "computer", "description": "Direct.", "catalogMode": "direct-only"},
        {"name": "exec", "description": "Code mode.", "control": "code-mode"},
        {"name": "denied", "description": "Denied.", "allowed": false}
    ]"#;
    let specs = cli::parse_tools_file(file).unwrap();
    assert_eq!(specs.len(), 6);
    assert_eq!(specs[1].origin, ToolOrigin::Core);
    let limits = SearchLimits::default();
    let catalog = cli::load_tools_file(file, &limits).unwrap();
    assert_eq!(catalog.len(), 3);

    let json_view = cli::render_view(&catalog, &CatalogView::Json).unwrap();
    let parsed: Value = serde_json::from_str(&json_view).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 2);
    assert_eq!(parsed[0]["id"], "openclaw:core:read");

    let index = cli::render_view(&catalog, &CatalogView::Index).unwrap();
    assert!(index.contains("- \"openclaw:core:read\" unknown -> string\n- \"openclaw:fake-code-mode:fake_create_ticket\" { value?: string } -> ?"));

    let search = |query: &str, limit: Option<&str>| {
        cli::run_catalog_command(
            file,
            &limits,
            &CatalogView::Search {
                query: query.into(),
                limit: limit.map(String::from),
            },
        )
    };
    let hits: Value = serde_json::from_str(&search("ticket", Some("1")).unwrap()).unwrap();
    assert_eq!(hits[0]["id"], "openclaw:fake-code-mode:fake_create_ticket");
    assert_eq!(
        search("ticket", Some("0")).unwrap_err(),
        "limit must be a positive integer."
    );
    assert_eq!(
        search("ticket", Some("2.5")).unwrap_err(),
        "limit must be a positive integer."
    );
    assert!(search("ticket", Some("many")).is_ok());

    let described =
        cli::render_view(&catalog, &CatalogView::Describe { id: "read".into() }).unwrap();
    let described: Value = serde_json::from_str(&described).unwrap();
    assert_eq!(described["outputSchema"], json!({"type": "string"}));
    assert_eq!(
        cli::render_view(&catalog, &CatalogView::Describe { id: "gh".into() }).unwrap_err(),
        format!("Unknown tool id: gh. {RECOVERY}")
    );

    let err = cli::run_catalog_command(
        r#"[{"name": "x", "descripton": "typo"}]"#,
        &limits,
        &CatalogView::Json,
    )
    .unwrap_err();
    assert!(
        err.starts_with(
            "tools file: tool #0 (\"x\"): unknown field `descripton`, expected one of `name`"
        ),
        "{err}"
    );
    let err =
        cli::run_catalog_command(r#"{"name": "x"}"#, &limits, &CatalogView::Json).unwrap_err();
    assert!(
        err.starts_with("tools file is not a JSON array of tool specs"),
        "{err}"
    );
    let err = cli::run_catalog_command(
        r#"[{"name": "x", "description": "a"}, {"name": "x", "description": "b"}]"#,
        &limits,
        &CatalogView::Json,
    )
    .unwrap_err();
    assert_eq!(err, "duplicate catalog id \"openclaw:core:x\": tool #0 (core tool \"x\") and tool #1 (core tool \"x\") both map to it");
    assert_eq!(
        cli::run_catalog_command("[]", &limits, &CatalogView::Index),
        Ok(String::new())
    );
    let err = cli::parse_tools_file(
        r#"[{"name": "x", "description": "a", "origin": {"kind": "plugin"}}]"#,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("missing field `pluginId`"),
        "{err}"
    );
}

#[test]
fn source_strings() {
    assert_eq!(Source::Openclaw.as_str(), "openclaw");
    assert_eq!(
        serde_json::to_value(Source::Client).unwrap(),
        json!("client")
    );
}

#[test]
fn tool_spec_json_form() {
    let err = cli::parse_tools_file(
        r#"[{"name": "x", "description": "a", "origin": {"kind": "plugin", "pluginId": "p", "replaysafe": true}}]"#,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("unknown field `replaysafe`"),
        "{err}"
    );
    let err = cli::parse_tools_file(
        r#"[{"name": "x", "description": "a", "origin": {"kind": "core", "extra": 1}}]"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown field `extra`"), "{err}");
    let specs = cli::parse_tools_file(
        r#"[{"name": "x", "description": "a", "channel": true,
             "origin": {"kind": "plugin", "pluginId": "p", "bundled": true, "replaySafe": true}},
            {"name": "y", "description": "b", "origin": {"kind": "client"}},
            {"name": "z", "description": "c", "control": "tool-search",
             "origin": {"kind": "mcp", "serverName": "S", "safeServerName": "s", "pluginId": "bundle-mcp"}}]"#,
    )
    .unwrap();
    assert_eq!(
        specs[0].origin,
        ToolOrigin::Plugin {
            plugin_id: "p".into(),
            bundled: true,
            replay_safe: true
        }
    );
    assert!(specs[0].channel);
    assert_eq!(specs[1].origin, ToolOrigin::Client { owner: None });
    assert_eq!(
        specs[2].control,
        Some(codemode_catalog::ControlKind::ToolSearch)
    );
    let mut specs = specs;
    specs.push(ToolSpec::core("w", "d"));
    assert_eq!(
        serde_json::to_value(&specs[3]).unwrap(),
        json!({"name": "w", "description": "d", "origin": {"kind": "core"}, "catalogMode": "normal", "allowed": true})
    );
    // Specs round-trip through their JSON form.
    let text = serde_json::to_string(&specs).unwrap();
    assert_eq!(cli::parse_tools_file(&text).unwrap(), specs);
}
