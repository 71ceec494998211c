//! The typed guest errors: which variant each failure is, that its `Display` is the exact spec
//! message (docs/contract/catalog.md#s3-3, docs/contract/catalog.md#s3-4, docs/contract/catalog.md#s3-5, docs/contract/mcp.md#s7-2, docs/contract/mcp.md#s7-4), and how they convert and compare.

use codemode_catalog::mcp::map_input;
use codemode_catalog::{
    api_read, Catalog, ContractError, LookupError, LookupOp, McpNamespace, NamespaceError,
    SearchLimits, ToolSpec, UNKNOWN_TOOL_RECOVERY,
};
use serde_json::json;

fn catalog() -> Catalog {
    Catalog::build(
        vec![
            ToolSpec::core("read", "Read a file."),
            ToolSpec::plugin("a", "shared", "One."),
            ToolSpec::plugin("b", "shared", "Two."),
            ToolSpec::core("bad", "b").with_output_schema(json!({"type": "strnig"})),
            ToolSpec::core("typed", "t").with_output_schema(json!({"type": "string"})),
            ToolSpec::mcp_tool("github", "create_issue", "Create an issue.").with_parameters(
                json!({"type": "object", "properties": {"title": {"type": "string"}},
                       "required": ["title"]}),
            ),
        ],
        &SearchLimits::default(),
    )
    .unwrap()
}

#[test]
fn lookup_errors_are_typed_with_exact_messages() {
    let catalog = catalog();
    let err = catalog.search(&json!(1), None).unwrap_err();
    assert_eq!(err, LookupError::SearchQueryNotString);
    assert_eq!(err.to_string(), "search query must be a string.");
    let err = catalog.search(&json!("x"), Some(&json!(0))).unwrap_err();
    assert_eq!(err, LookupError::LimitNotPositiveInteger);
    assert_eq!(err.to_string(), "limit must be a positive integer.");

    for (op, message) in [
        (LookupOp::Describe, "describe id must be a string."),
        (LookupOp::Call, "call id must be a string."),
        (LookupOp::CallValue, "callValue id must be a string."),
    ] {
        let err = catalog.lookup_value(&json!(7), op).unwrap_err();
        assert_eq!(err, LookupError::NonStringId(op));
        assert_eq!(err.to_string(), message);
    }

    let err = catalog.lookup(" shared ").unwrap_err();
    assert_eq!(
        err,
        LookupError::AmbiguousName {
            needle: "shared".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "Ambiguous tool name: shared; use an exact tool id."
    );

    let err = catalog.describe("missing").unwrap_err();
    let LookupError::UnknownTool {
        needle,
        suggestions,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(needle, "missing");
    assert!(suggestions.is_empty());
    assert_eq!(
        err.to_string(),
        format!("Unknown tool id: missing. {UNKNOWN_TOOL_RECOVERY}")
    );
    assert_eq!(
        catalog.unknown_tool("read_file").to_string(),
        format!("Unknown tool id: read_file. Did you mean: read? {UNKNOWN_TOOL_RECOVERY}")
    );
    // MCP entries are never reachable through lookups.
    assert!(matches!(
        catalog.lookup("mcp:github:github__create_issue"),
        Err(LookupError::UnknownTool { .. })
    ));
    assert_eq!(
        LookupError::CatalogUnavailable.to_string(),
        "Tool Search catalog is unavailable for this run."
    );
}

#[test]
fn contract_errors_are_typed_with_exact_messages() {
    let catalog = catalog();
    let invalid = ContractError::InvalidOutputSchema {
        id: "openclaw:core:bad".into(),
    };
    assert_eq!(
        catalog.resolve_call("bad").unwrap_err(),
        LookupError::Contract(invalid.clone())
    );
    assert_eq!(
        invalid.to_string(),
        "Tool \"openclaw:core:bad\" has an invalid outputSchema."
    );
    let typed = catalog.entry("openclaw:core:typed").unwrap();
    let mismatch = typed.validate_output(&json!(42)).unwrap_err();
    assert_eq!(
        mismatch,
        ContractError::OutputMismatch {
            id: "openclaw:core:typed".into()
        }
    );
    assert_eq!(
        mismatch.to_string(),
        "Tool \"openclaw:core:typed\" returned details that do not match its declared outputSchema."
    );
    // The transparent wrapper keeps the message.
    assert_eq!(
        LookupError::from(mismatch.clone()).to_string(),
        mismatch.to_string()
    );
    assert_eq!(
        ContractError::BlockedBeforeExecution {
            id: "openclaw:core:read".into(),
            reason: "denied by policy".into()
        }
        .to_string(),
        "Tool \"openclaw:core:read\" was blocked before execution: denied by policy"
    );
}

#[test]
fn namespace_and_api_file_errors_are_typed_with_exact_messages() {
    let ns = McpNamespace::build(&catalog());
    let path = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cases = [
        (
            ns.request("nodes", &path(&["github"]), &[]).unwrap_err(),
            NamespaceError::UnknownNamespace("nodes".into()),
            "Unknown code mode namespace: nodes",
        ),
        (
            ns.request("mcp", &path(&["github", ""]), &[]).unwrap_err(),
            NamespaceError::InvalidSegment(String::new()),
            "Invalid code mode namespace path segment: (empty)",
        ),
        (
            ns.request("mcp", &path(&["github", "x", "y"]), &[])
                .unwrap_err(),
            NamespaceError::NotCallable(path(&["github", "x", "y"])),
            "Code mode namespace path is not callable: github.x.y",
        ),
        (
            ns.request("mcp", &path(&["github", "createIssue"]), &[json!(1)])
                .unwrap_err(),
            NamespaceError::OneObjectArgument,
            "MCP namespace tools accept one object argument.",
        ),
        (
            ns.request("mcp", &path(&["github", "createIssue"]), &[])
                .unwrap_err(),
            NamespaceError::MissingArguments(vec!["title".into()]),
            "Missing required MCP namespace argument: title",
        ),
    ];
    for (got, variant, message) in cases {
        assert_eq!(got, variant);
        assert_eq!(got.to_string(), message);
    }
    let schema = json!({"required": ["a", "b", "a"]});
    assert_eq!(
        map_input(Some(&schema), &[]).unwrap_err(),
        NamespaceError::MissingArguments(vec!["a".into(), "b".into()])
    );

    let files = ns.api_files();
    let err = api_read(&files, "mcp/../x").unwrap_err();
    assert_eq!(err, codemode_catalog::ApiFileError::InvalidPath);
    assert_eq!(err.to_string(), "invalid API file path");
    let err = api_read(&files, "/mcp/nope.d.ts").unwrap_err();
    assert_eq!(
        err,
        codemode_catalog::ApiFileError::UnknownFile("mcp/nope.d.ts".into())
    );
    assert_eq!(err.to_string(), "Unknown API file: mcp/nope.d.ts");
}

#[test]
fn errors_convert_to_and_compare_with_their_message() {
    let err = LookupError::AmbiguousName { needle: "x".into() };
    let message: String = err.clone().into();
    assert_eq!(message, "Ambiguous tool name: x; use an exact tool id.");
    assert_eq!(err, message);
    assert_eq!(err, "Ambiguous tool name: x; use an exact tool id.");
    assert_eq!(err, *"Ambiguous tool name: x; use an exact tool id.");
    // Equality is with the whole message: no prefix, no extension.
    assert_ne!(err, "Ambiguous tool name: x");
    assert_ne!(err, "Ambiguous tool name: x; use an exact tool id.!");
    assert_ne!(err, "");
    // `?` into a `Result<_, String>`, as the runtime settles bridge requests.
    fn settle(catalog: &Catalog) -> Result<(), String> {
        catalog.lookup("shared")?;
        Ok(())
    }
    assert_eq!(
        settle(&catalog()),
        Err("Ambiguous tool name: shared; use an exact tool id.".to_string())
    );
}
