//! The `MCP` namespace model (docs/contract/mcp.md#s7-1 to #s7-5, docs/contract/examples.md#e26 to #e28): identifiers, paths, host checks,
//! `$api`, `API` files and the namespace prompt.

#[path = "support/examples.rs"]
mod examples;

use codemode_catalog::mcp::{map_input, to_identifier, ONE_OBJECT_ARGUMENT};
use codemode_catalog::{
    api_list, api_read, namespace_prompt, Catalog, McpNamespace, McpOperation, NamespaceAction,
    SearchLimits, ToolSpec,
};
use examples::e26_tool;
use serde_json::{json, Value};

fn build(specs: Vec<ToolSpec>) -> Catalog {
    Catalog::build(specs, &SearchLimits::default()).unwrap()
}

fn path(p: &str) -> Vec<String> {
    p.split('.').map(String::from).collect()
}

fn call(ns: &McpNamespace, p: &str, args: &[Value]) -> Result<NamespaceAction, String> {
    ns.request("mcp", &path(p), args).map_err(String::from)
}

const E26_DTS: &str =
    "type McpApiHeader = { header: string; tools?: unknown[]; schemas?: Record<string, unknown> };

type McpToolResult = { content: unknown[]; structuredContent?: unknown; isError?: boolean; _meta?: Record<string, unknown>; [key: string]: unknown };
type McpResourcesListResult = { resources: unknown[]; nextCursor?: string };
type McpResourcesReadResult = { contents: unknown[] };
type McpPromptsListResult = { prompts: unknown[]; nextCursor?: string };
type McpPromptsGetResult = { messages: unknown[]; description?: string };

declare namespace MCP.github {
  /** Return this TypeScript-style API header. */
  function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;

  /**
   * Create a GitHub issue.
   *
   * @param owner Repository owner
   * @param repo Repository 名称
   * @param title Issue title Shown in tracker
   */
  function createIssue(
    input: {
      /** Repository owner */
      owner: string;
      /** Repository 名称 */
      repo: string;
      /** Issue title Shown in tracker */
      title: string;
      /** Default: \"\". */
      body?: string;
    }
  ): Promise<McpToolResult>;
}";

const E26_INDEX: &str = "/// <reference path=\"./github.d.ts\" />

type McpApiHeader = { header: string; servers?: unknown[] };

declare const MCP: {
  /** List visible MCP servers and request server-specific headers. */
  $api(): Promise<McpApiHeader>;
  readonly github: typeof MCP.github;
};";

const E26_PROMPT: &str = "MCP namespace globals are available in code mode:
- MCP: MCP server tools grouped by server.
Read API files such as mcp/index.d.ts and mcp/<server>.d.ts for TypeScript-style MCP headers; visible servers: github. Node-backed name collisions use a sanitized node-id fragment prefix.
Call MCP tools as MCP.<server>.<tool>({ ...input }) with one object argument matching the header.";

#[test]
fn e26_identifiers_paths_and_call() {
    let catalog = build(vec![e26_tool()]);
    let ns = McpNamespace::build(&catalog);
    assert_eq!(ns.server_names(), vec![("github", "github")]);
    let paths = ns.callable_paths();
    assert_eq!(
        paths,
        vec![
            (path("$api"), None),
            (path("github.$api"), None),
            (
                path("github.createIssue"),
                Some("mcp:github:github__create_issue")
            ),
        ]
    );
    let action = call(
        &ns,
        "github.createIssue",
        &[json!({"owner": "openclaw", "repo": "openclaw", "title": "Ship it"})],
    )
    .unwrap();
    assert_eq!(
        action,
        NamespaceAction::Call {
            id: "mcp:github:github__create_issue".into(),
            input: json!({"owner": "openclaw", "repo": "openclaw", "title": "Ship it", "body": ""}),
        }
    );
    // The catalog's guest views still never show MCP.
    assert!(catalog.all_tools().is_empty());
}

#[test]
fn e26_api_root_and_server() {
    let ns = McpNamespace::build(&build(vec![e26_tool()]));
    let NamespaceAction::Api(root) = call(&ns, "$api", &[]).unwrap() else {
        panic!("root $api is answered by the host")
    };
    assert_eq!(
        root,
        json!({
            "kind": "mcp_api",
            "scope": "root",
            "header": E26_INDEX.split_once("\n\n").unwrap().1,
            "servers": [{"identifier": "github", "serverName": "github", "toolCount": 1}],
            "note": "Call MCP.<server>.$api() for a TypeScript-style header, then call tools with one object argument matching the shown input type."
        })
    );
    let NamespaceAction::Api(api) = call(
        &ns,
        "github.$api",
        &[json!("  createIssue "), json!({"schema": true})],
    )
    .unwrap() else {
        panic!("server $api is answered by the host")
    };
    let header = api["header"].as_str().unwrap();
    assert!(header.contains("function createIssue("));
    assert!(header.contains("@param title Issue title Shown in tracker"));
    assert!(header.contains("title: string;"));
    assert_eq!(header, E26_DTS);
    assert_eq!(api["schemas"]["createIssue"]["type"], "object");
    assert_eq!(api["kind"], "mcp_api");
    assert_eq!(api["scope"], "tool");
    assert_eq!(
        api["server"],
        json!({"identifier": "github", "serverName": "github"})
    );
    assert_eq!(
        api["tools"],
        json!([{"method": "createIssue", "path": ["createIssue"], "mcpTool": "create_issue", "operation": "tool", "description": "Create a GitHub issue."}])
    );
    assert_eq!(
        api["note"],
        "Call MCP tools with one object argument, for example MCP.server.tool({ requiredField: value })."
    );
    let keys: Vec<&str> = api
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["kind", "scope", "server", "header", "tools", "schemas", "note"]
    );
    // Raw MCP name and full dotted path select too; no schema option → no `schemas`.
    for selector in ["create_issue", "MCP.github.createIssue"] {
        let api = ns
            .api_server("github", Some(&json!(selector)), None)
            .unwrap();
        assert_eq!(api["scope"], "tool");
        assert!(api.get("schemas").is_none());
    }
    let all = ns
        .api_server("github", None, Some(&json!({"schema": 1})))
        .unwrap();
    assert_eq!(all["scope"], "tool"); // one tool on the server
    assert!(all.get("schemas").is_none());
    let none = ns
        .api_server("github", Some(&json!("missing")), None)
        .unwrap();
    assert_eq!(none["scope"], "server");
    assert_eq!(none["tools"], json!([]));
    assert!(ns.api_server("nope", None, None).is_none());
}

#[test]
fn e26_e27_api_files() {
    let ns = McpNamespace::build(&build(vec![e26_tool()]));
    let files = ns.api_files();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["mcp/index.d.ts", "mcp/github.d.ts"]);
    assert_eq!(files[0].content, E26_INDEX);
    assert_eq!(files[1].content, E26_DTS);
    assert_eq!(
        files[0].description,
        "Root MCP namespace declaration and server list."
    );
    assert_eq!(files[1].description, "MCP server declaration for github.");
    // bytes are UTF-8; the non-ASCII description makes them exceed the UTF-16 length.
    assert_eq!(files[1].bytes, 1145);
    assert_eq!(files[1].bytes, files[1].content.len());
    assert!(files[1].bytes > files[1].content.encode_utf16().count());
    assert_eq!(files[0].bytes, 267);
    assert!(files[0]
        .content
        .contains("/// <reference path=\"./github.d.ts\" />"));
    for prefix in [json!("mcp"), json!("mcp/"), json!("  mcp/ "), Value::Null] {
        let listed = api_list(&files, Some(&prefix));
        assert_eq!(
            listed,
            json!({"files": [
                {"path": "mcp/index.d.ts", "description": "Root MCP namespace declaration and server list.", "bytes": 267},
                {"path": "mcp/github.d.ts", "description": "MCP server declaration for github.", "bytes": 1145}
            ]})
        );
    }
    assert_eq!(api_list(&files, None)["files"].as_array().unwrap().len(), 2);
    assert_eq!(api_list(&files, Some(&json!("mc")))["files"], json!([]));
    assert_eq!(
        api_list(&files, Some(&json!("mcp/github.d.ts")))["files"][0]["path"],
        "mcp/github.d.ts"
    );
    let read = api_read(&files, "/mcp/github.d.ts").unwrap();
    assert!(read.content.contains("function createIssue("));
    assert!(read.content.contains("function $api("));
    assert_eq!(
        serde_json::to_value(read).unwrap(),
        json!({"path": "mcp/github.d.ts", "description": "MCP server declaration for github.", "bytes": 1145, "content": E26_DTS})
    );
    for bad in [
        "",
        "/",
        "mcp//github.d.ts",
        "mcp/./github.d.ts",
        "mcp/../x",
        "mcp/",
    ] {
        assert_eq!(
            api_read(&files, bad).unwrap_err(),
            "invalid API file path",
            "{bad:?}"
        );
    }
    assert_eq!(
        api_read(&files, "mcp/gitlab.d.ts").unwrap_err(),
        "Unknown API file: mcp/gitlab.d.ts"
    );
}

#[test]
fn e26_prompt() {
    let catalog = build(vec![e26_tool()]);
    assert_eq!(namespace_prompt(&catalog).unwrap(), E26_PROMPT);
    assert_eq!(McpNamespace::build(&catalog).prompt().unwrap(), E26_PROMPT);
}

#[test]
fn prompt_never_reads_schemas_and_lists_identifiers() {
    let catalog = build(vec![
        ToolSpec::mcp_tool("chrome-devtools", "take_snapshot", "SECRET_DESCRIPTION")
            .with_parameters(json!({"type": "object", "properties": {"SECRET_PARAM": {}}})),
        e26_tool(),
        ToolSpec::mcp_tool("tools", "x", "x"),
    ]);
    let prompt = namespace_prompt(&catalog).unwrap();
    assert!(prompt.contains("visible servers: chromeDevtools, github, tools2."));
    assert!(!prompt.contains("SECRET"));
    assert!(!prompt.contains("take"));
    // No MCP entries with metadata → no prompt, no files, unknown namespace.
    let plain = build(vec![ToolSpec::mcp("github", "github__create_issue", "d")]);
    assert_eq!(namespace_prompt(&plain), None);
    let ns = McpNamespace::build(&plain);
    assert!(ns.is_empty());
    assert!(ns.api_files().is_empty());
    assert_eq!(ns.prompt(), None);
    assert_eq!(
        call(&ns, "$api", &[]).unwrap_err(),
        "Unknown code mode namespace: mcp"
    );
}

#[test]
fn e28_resources_and_prompts() {
    let catalog = build(vec![
        ToolSpec::mcp_operation("docs", McpOperation::ResourcesRead, "resources_read", "Read a resource.")
            .with_parameters(json!({"type": "object", "properties": {"uri": {"type": "string", "description": "Resource URI"}}, "required": ["uri"]})),
        ToolSpec::mcp_operation("docs", McpOperation::PromptsGet, "prompts_get", "Get a prompt.")
            .with_parameters(json!({"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object", "additionalProperties": {"type": "string"}}}, "required": ["name"]})),
        ToolSpec::mcp_operation("docs", McpOperation::ResourcesList, "resources_list", "List resources."),
        ToolSpec::mcp_operation("docs", McpOperation::PromptsList, "prompts_list", "List prompts."),
    ]);
    let ns = McpNamespace::build(&catalog);
    let methods: Vec<&str> = ns.servers()[0]
        .methods
        .iter()
        .map(|m| m.method.as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "prompts.get",
            "prompts.list",
            "resources.list",
            "resources.read"
        ]
    );
    let api = ns.api_server("docs", None, None).unwrap();
    let header = api["header"].as_str().unwrap();
    assert!(header.contains("namespace resources"));
    assert_eq!(api["scope"], "server");
    assert_eq!(
        call(&ns, "docs.resources.read", &[json!({"uri": "memo://one"})]).unwrap(),
        NamespaceAction::Call {
            id: "mcp:docs:docs__resources_read".into(),
            input: json!({"uri": "memo://one"})
        }
    );
    assert_eq!(
        call(
            &ns,
            "docs.prompts.get",
            &[json!({"name": "brief", "arguments": {"topic": "mcp"}})]
        )
        .unwrap(),
        NamespaceAction::Call {
            id: "mcp:docs:docs__prompts_get".into(),
            input: json!({"name": "brief", "arguments": {"topic": "mcp"}})
        }
    );
    assert_eq!(
        call(&ns, "docs.resources.list", &[]).unwrap(),
        NamespaceAction::Call {
            id: "mcp:docs:docs__resources_list".into(),
            input: json!({})
        }
    );
    let selected = ns
        .api_server("docs", Some(&json!("resources.read")), None)
        .unwrap();
    assert_eq!(selected["scope"], "tool");
    assert_eq!(selected["tools"][0]["path"], json!(["resources", "read"]));
    assert_eq!(selected["tools"][0]["operation"], "resources_read");
    insta::assert_snapshot!("docs_server_dts", ns.api_files()[1].content);
}

#[test]
fn identifier_rules() {
    assert_eq!(to_identifier("create_issue", "tool"), "createIssue");
    assert_eq!(to_identifier("take-snapshot", "tool"), "takeSnapshot");
    assert_eq!(to_identifier("Take.Snapshot", "tool"), "takeSnapshot");
    assert_eq!(to_identifier("2fa-code", "tool"), "faCode");
    assert_eq!(to_identifier("", "tool"), "tool");
    assert_eq!(to_identifier("--", "server"), "server");
    assert_eq!(to_identifier("123", "tool"), "tool");
    assert_eq!(to_identifier("名称", "tool"), "tool");
}

#[test]
fn tool_identifier_collisions_and_reserved_names() {
    let names = [
        "read-file",
        "read_file",
        "read.file",
        "delete",
        "constructor",
        "prototype",
        "__proto__",
        "default",
        "return",
        "enum",
        "class",
        "",
        "resources",
        "prompts",
        "$api",
        "tools",
        "MCP",
        "json",
    ];
    let specs = names
        .iter()
        .map(|n| ToolSpec::mcp_tool("fs", *n, "t"))
        .collect();
    let ns = McpNamespace::build(&build(specs));
    let server = &ns.servers()[0];
    let by_tool = |raw: &str| {
        server
            .methods
            .iter()
            .find(|m| m.mcp_tool == raw)
            .map(|m| m.method.clone())
            .unwrap()
    };
    // Ids sort as `fs__-`/`fs__.`/`fs___`… so `read-file` is first, then `read.file`.
    assert_eq!(by_tool("read-file"), "readFile");
    assert_eq!(by_tool("read.file"), "readFile2");
    assert_eq!(by_tool("read_file"), "readFile3");
    assert_eq!(by_tool("delete"), "delete2");
    assert_eq!(by_tool("constructor"), "constructor2");
    assert_eq!(by_tool("prototype"), "prototype2");
    assert_eq!(by_tool("__proto__"), "proto");
    assert_eq!(by_tool("default"), "default2");
    assert_eq!(by_tool("return"), "return2");
    assert_eq!(by_tool("enum"), "enum2");
    assert_eq!(by_tool("class"), "class2");
    assert_eq!(by_tool(""), "tool");
    assert_eq!(by_tool("resources"), "resources2");
    assert_eq!(by_tool("prompts"), "prompts2");
    assert_eq!(by_tool("$api"), "api");
    assert_eq!(by_tool("tools"), "tools2");
    assert_eq!(by_tool("MCP"), "mCP");
    assert_eq!(by_tool("json"), "json2");
    // All three read tools are reachable and dispatch to their own ids.
    for (p, id) in [
        ("fs.readFile", "mcp:fs:fs__read-file"),
        ("fs.readFile2", "mcp:fs:fs__read.file"),
        ("fs.readFile3", "mcp:fs:fs__read_file"),
        ("fs.delete2", "mcp:fs:fs__delete"),
        ("fs.tool", "mcp:fs:fs__"),
    ] {
        match call(&ns, p, &[]).unwrap() {
            NamespaceAction::Call { id: got, .. } => assert_eq!(got, id),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn server_identifiers() {
    let ns = McpNamespace::build(&build(vec![
        ToolSpec::mcp_tool("chrome-devtools", "a", "t"),
        ToolSpec::mcp_tool("Chrome_Devtools", "a", "t"),
        ToolSpec::mcp_tool("class", "a", "t"),
        ToolSpec::mcp_tool("__proto__", "a", "t"),
        ToolSpec::mcp_tool("9", "a", "t"),
        ToolSpec::mcp_tool("index", "a", "t"),
    ]));
    let ids: Vec<(&str, &str)> = ns.server_names();
    assert_eq!(
        ids,
        vec![
            ("chromeDevtools", "Chrome_Devtools"),
            ("chromeDevtools2", "chrome-devtools"),
            ("class2", "class"),
            ("index", "index"),
            ("proto", "__proto__"),
            ("server", "9"),
        ]
    );
    // A server called `index` lives inside mcp/index.d.ts.
    let files = ns.api_files();
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "mcp/index.d.ts",
            "mcp/chromeDevtools.d.ts",
            "mcp/chromeDevtools2.d.ts",
            "mcp/class2.d.ts",
            "mcp/proto.d.ts",
            "mcp/server.d.ts"
        ]
    );
    assert!(files[0].content.contains("declare namespace MCP.index {"));
    assert!(files[0]
        .content
        .contains("  readonly index: typeof MCP.index;"));
    assert!(!files[0].content.contains("./index.d.ts"));
    assert_eq!(
        namespace_prompt(&build(vec![ToolSpec::mcp_tool("9", "a", "t")])).unwrap(),
        McpNamespace::build(&build(vec![ToolSpec::mcp_tool("9", "a", "t")]))
            .prompt()
            .unwrap()
    );
}

#[test]
fn host_check_messages_in_order() {
    let ns = McpNamespace::build(&build(vec![e26_tool()]));
    let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // 1. unknown namespace (checked before the path).
    assert_eq!(
        ns.request("nodes", &p(&["__proto__"]), &[]).unwrap_err(),
        "Unknown code mode namespace: nodes"
    );
    // 2. bad segments.
    for (seg, shown) in [
        ("", "(empty)"),
        ("a\0b", "a\0b"),
        ("__proto__", "__proto__"),
        ("constructor", "constructor"),
        ("prototype", "prototype"),
    ] {
        assert_eq!(
            ns.request("mcp", &p(&["github", seg]), &[]).unwrap_err(),
            format!("Invalid code mode namespace path segment: {shown}")
        );
    }
    // 3. not callable.
    for (segs, joined) in [
        (&["github"][..], "github"),
        (&["github", "create_issue"][..], "github.create_issue"),
        (&["github", "$serverName"][..], "github.$serverName"),
        (&["github", "createIssue", "x"][..], "github.createIssue.x"),
        (
            &["github", "resources", "list"][..],
            "github.resources.list",
        ),
        (&[][..], ""),
    ] {
        assert_eq!(
            ns.request("mcp", &p(segs), &[]).unwrap_err(),
            format!("Code mode namespace path is not callable: {joined}")
        );
    }
    // 4. one object argument.
    let full = json!({"owner": "o", "repo": "r", "title": "t"});
    for args in [
        vec![full.clone(), json!({})],
        vec![json!(null)],
        vec![json!([])],
        vec![json!("x")],
        vec![json!(1)],
    ] {
        assert_eq!(
            call(&ns, "github.createIssue", &args).unwrap_err(),
            ONE_OBJECT_ARGUMENT
        );
    }
    assert_eq!(
        ONE_OBJECT_ARGUMENT,
        "MCP namespace tools accept one object argument."
    );
    // 6. required keys, in `required` order.
    assert_eq!(
        call(&ns, "github.createIssue", &[]).unwrap_err(),
        "Missing required MCP namespace arguments: owner, repo, title"
    );
    assert_eq!(
        call(
            &ns,
            "github.createIssue",
            &[json!({"owner": "o", "repo": "r"})]
        )
        .unwrap_err(),
        "Missing required MCP namespace argument: title"
    );
}

#[test]
fn defaults_fill_missing_keys_only() {
    let schema = json!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "default": 10},
            "mode": {"type": "string", "default": "fast"},
            "flag": {"type": "boolean", "default": false},
            "nested": {"type": "object", "default": {"a": [1, null]}},
            "__proto__": {"default": {"polluted": true}},
            "plain": {"type": "string"}
        },
        "required": ["mode", "__proto__"]
    });
    let input = map_input(Some(&schema), &[json!({"mode": "slow", "flag": null})]).unwrap();
    assert_eq!(
        input,
        json!({"mode": "slow", "flag": null, "limit": 10, "nested": {"a": [1, null]}, "__proto__": {"polluted": true}})
    );
    // A default satisfies a required key (it is an own property once filled).
    assert_eq!(
        map_input(Some(&schema), &[]).unwrap()["mode"],
        json!("fast")
    );
    // No schema, a non-object schema or non-object properties: the input passes through.
    assert_eq!(
        map_input(None, &[json!({"x": 1})]).unwrap(),
        json!({"x": 1})
    );
    assert_eq!(map_input(Some(&json!(true)), &[]).unwrap(), json!({}));
    assert_eq!(
        map_input(Some(&json!({"properties": [1], "required": "x"})), &[]).unwrap(),
        json!({})
    );
}

#[test]
fn required_keys_must_be_own_properties() {
    // Keys every JavaScript object inherits from Object.prototype never satisfy `required`.
    let schema = json!({
        "type": "object",
        "properties": {"__proto__": {"type": "object"}, "toString": {"type": "string"}},
        "required": ["__proto__", "toString", "constructor", "hasOwnProperty"]
    });
    assert_eq!(
        map_input(Some(&schema), &[json!({})]).unwrap_err(),
        "Missing required MCP namespace arguments: __proto__, toString, constructor, hasOwnProperty"
    );
    assert_eq!(
        map_input(
            Some(&schema),
            &[json!({"__proto__": {}, "toString": "s", "constructor": 1})]
        )
        .unwrap_err(),
        "Missing required MCP namespace argument: hasOwnProperty"
    );
}

#[test]
fn empty_and_missing_schemas() {
    let ns = McpNamespace::build(&build(vec![
        ToolSpec::mcp_tool("s", "no_schema", ""),
        ToolSpec::mcp_tool("s", "empty_schema", "Empty.").with_parameters(json!({})),
        ToolSpec::mcp_tool("s", "bool_schema", "Bool.").with_parameters(json!(false)),
        ToolSpec::mcp_tool("s", "optional_only", "Opt.")
            .with_parameters(json!({"type": "object", "properties": {"q": {"type": "string"}}})),
    ]));
    let dts = &ns.api_files()[1].content;
    assert!(dts.contains(
        "  function noSchema(\n    input?: Record<string, never>\n  ): Promise<McpToolResult>;"
    ));
    assert!(dts.contains("  /**\n   * Empty.\n   */\n  function emptySchema(\n    input?: Record<string, never>\n  ): Promise<McpToolResult>;"));
    assert!(dts.contains("function boolSchema(\n    input?: Record<string, never>"));
    assert!(dts.contains("  function optionalOnly(\n    input?: {\n      q?: string;\n    }\n  ): Promise<McpToolResult>;"));
    let api = ns
        .api_server(
            "s",
            Some(&json!("noSchema")),
            Some(&json!({"schema": true})),
        )
        .unwrap();
    assert_eq!(api["schemas"], json!({"noSchema": {}}));
}

#[test]
fn types_render_per_spec() {
    let ns = McpNamespace::build(&build(vec![ToolSpec::mcp_tool("s", "t", "Types.")
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "e": {"enum": ["a", "b", 1, null, true]},
                "u": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
                "n": {"type": "number"},
                "i": {"type": "integer"},
                "arr": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}, "r": {"type": "boolean"}}, "required": ["r"]}},
                "obj": {"type": "object"},
                "multi": {"type": ["string", "null"]},
                "ref": {"$ref": "#/properties/obj"},
                "big": {"enum": (0..17).collect::<Vec<_>>()},
                "weird key": {"type": "string"},
                "any": {}
            },
            "required": ["n"]
        }))]));
    let dts = &ns.api_files()[1].content;
    let body = dts.split_once("function t(\n").unwrap().1;
    assert_eq!(
        body,
        "    input: {
      n: number;
      e?: \"a\" | \"b\" | 1 | null | true;
      u?: string | Array<number>;
      i?: number;
      arr?: Array<{ k?: string; r: boolean }>;
      obj?: Record<string, unknown>;
      multi?: string | null;
      ref?: unknown;
      big?: unknown;
      \"weird key\"?: string;
      any?: unknown;
    }
  ): Promise<McpToolResult>;
}"
    );
}

fn hostile_specs() -> Vec<ToolSpec> {
    let mut many = serde_json::Map::new();
    for i in 0..10_000 {
        many.insert(
            format!("p{i}"),
            json!({"type": "string", "description": format!("param {i} */ end")}),
        );
    }
    let long_key = "k".repeat(10_000);
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "object", "properties": {"a": deep, "b": {"type": "string"}}});
    }
    vec![
        ToolSpec::mcp_tool("h", "cyclic", "Cyclic */ refs */")
            .with_parameters(json!({
                "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
                "type": "object",
                "properties": {
                    "root": {"$ref": "#/$defs/node"},
                    "self": {"$ref": "#"},
                    "ptr": {"$ref": "#/properties/root/properties/next"}
                }
            })),
        ToolSpec::mcp_tool("h", "many", "Many.").with_parameters(json!({
            "type": "object",
            "properties": Value::Object(many),
            "required": (0..10_000).map(|i| format!("p{i}")).collect::<Vec<_>>()
        })),
        ToolSpec::mcp_tool("h", "long_key", "x".repeat(10_000)).with_parameters(json!({
            "type": "object",
            "properties": {long_key.clone(): {"type": "string", "description": "d".repeat(10_000)}, "ok": {"type": "string"}},
            "required": [long_key]
        })),
        ToolSpec::mcp_tool("h", "deep", "Deep.").with_parameters(json!({
            "type": "object", "properties": {"d": deep}
        })),
        ToolSpec::mcp_tool("h", "comment", "Ends */ here\n*/\n/* and */ again").with_parameters(json!({
            "type": "object",
            "properties": {"x*/y": {"type": "string", "description": "bad */ text", "default": "*/"}}
        })),
    ]
}

#[test]
fn hostile_schemas_render_within_bounds() {
    let ns = McpNamespace::build(&build(hostile_specs()));
    let files = ns.api_files();
    let dts = &files[1].content;
    // Every comment opened is closed exactly where the renderer closes it.
    for line in dts.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("/**") {
            assert!(
                rest.is_empty() || rest.ends_with("*/") && !rest[..rest.len() - 2].contains("*/"),
                "{line}"
            );
        } else if t.starts_with('*') && t != "*/" {
            assert!(!t.contains("*/"), "{line}");
        }
    }
    assert!(dts.contains(" * Cyclic *\\/ refs *\\/"));
    assert!(dts.contains("/** bad *\\/ text Default: \"*\\/\". */"));
    assert!(dts.contains("      root?: unknown;\n      self?: unknown;\n      ptr?: unknown;"));
    assert!(dts.contains("      [key: string]: unknown; // 9936 more parameters omitted"));
    assert!(dts.contains("      [key: string]: unknown; // 1 more parameters omitted"));
    // Bounded: header + 5 blocks of at most 16 KiB.
    assert!(files[1].bytes < 5 * 16 * 1024 + 2048, "{}", files[1].bytes);
    assert!(dts.lines().all(|l| l.len() < 4096));
    // Still callable with exact checks.
    let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
    let err = ns.request("mcp", &p("h.many"), &[json!({})]).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("Missing required MCP namespace arguments: p0, p1, p2,"));
    assert!(matches!(
        ns.request("mcp", &p("h.cyclic"), &[json!({"root": {}})])
            .unwrap(),
        NamespaceAction::Call { .. }
    ));
    // $api is bounded too: the 10k-property schema is over MAX_API_SCHEMA_BYTES and replaced
    // by a note; a 10k-character description is cut to MAX_API_DESCRIPTION_CHARS.
    let api = ns
        .api_server("h", Some(&json!("many")), Some(&json!({"schema": true})))
        .unwrap();
    let omitted = api["schemas"]["many"]["omitted"].as_str().unwrap();
    assert!(
        omitted.starts_with("schema of ")
            && omitted.ends_with(" bytes is over the 262144-byte limit of $api"),
        "{omitted}"
    );
    let api = ns
        .api_server("h", Some(&json!("longKey")), Some(&json!({"schema": true})))
        .unwrap();
    let description = api["tools"][0]["description"].as_str().unwrap();
    assert_eq!(description.chars().count(), 4000);
    assert!(description.ends_with('…'));
    assert_eq!(
        api["schemas"]["longKey"]["properties"]["ok"],
        json!({"type": "string"})
    );
}

#[test]
fn oversized_block_falls_back() {
    let mut props = serde_json::Map::new();
    for i in 0..64 {
        props.insert(
            format!("p{i}"),
            json!({"type": "string", "description": "w ".repeat(240)}),
        );
    }
    let ns = McpNamespace::build(&build(vec![ToolSpec::mcp_tool("h", "huge", "Huge.")
        .with_parameters(json!({"type": "object", "properties": Value::Object(props)}))]));
    let dts = &ns.api_files()[1].content;
    assert!(dts.ends_with(
        "  /** Declaration too large to show; call MCP.h.$api(\"huge\", { schema: true }) for the schema. */\n  function huge(\n    input?: Record<string, unknown>\n  ): Promise<McpToolResult>;\n}"
    ));
}

#[test]
fn realistic_server_snapshot() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/mcp/server-filesystem.json")).unwrap();
    let specs = fixture["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut spec = ToolSpec::mcp_tool(
                "filesystem",
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap_or_default(),
            );
            spec.parameters = t.get("inputSchema").cloned();
            spec
        })
        .collect();
    let ns = McpNamespace::build(&build(specs));
    let files = ns.api_files();
    assert_eq!(files[1].path, "mcp/filesystem.d.ts");
    assert_eq!(files[1].bytes, files[1].content.len());
    insta::assert_snapshot!("filesystem_server_dts", files[1].content);
}

#[test]
fn tools_file_carries_mcp_metadata() {
    let specs = codemode_catalog::cli::parse_tools_file(
        r#"[{"name": "docs__resources_read", "description": "Read.",
             "origin": {"kind": "mcp", "serverName": "Docs", "safeServerName": "docs",
                        "toolName": "resources_read", "operation": "resources_read"}},
            {"name": "docs__search", "description": "Search.",
             "origin": {"kind": "mcp", "serverName": "Docs", "safeServerName": "docs",
                        "toolName": "search"}},
            {"name": "docs__plain", "description": "No metadata.",
             "origin": {"kind": "mcp", "serverName": "Docs", "safeServerName": "docs"}}]"#,
    )
    .unwrap();
    assert_eq!(specs[1], {
        let mut s = ToolSpec::mcp_tool("docs", "search", "Search.");
        if let codemode_catalog::ToolOrigin::Mcp { server_name, .. } = &mut s.origin {
            *server_name = "Docs".into();
        }
        s
    });
    let back = serde_json::to_value(&specs[0].origin).unwrap();
    assert_eq!(
        back,
        json!({"kind": "mcp", "serverName": "Docs", "safeServerName": "docs", "toolName": "resources_read", "operation": "resources_read"})
    );
    let ns = McpNamespace::build(&build(specs));
    let paths: Vec<String> = ns
        .callable_paths()
        .into_iter()
        .map(|(p, _)| p.join("."))
        .collect();
    assert_eq!(
        paths,
        ["$api", "docs.$api", "docs.resources.read", "docs.search"]
    );
    assert_eq!(ns.server_names(), vec![("docs", "Docs")]);
    assert!(codemode_catalog::cli::parse_tools_file(
        r#"[{"name": "x", "description": "", "origin": {"kind": "mcp", "operation": "resources_delete"}}]"#
    )
    .is_err());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "integer", "default": 1})),
            Just(json!({"$ref": "#"})),
            Just(json!({"enum": ["a", 1, null]})),
            Just(json!(true)),
            Just(json!(null)),
            ".{0,12}".prop_map(|d| json!({"type": "string", "description": d})),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::btree_map(".{0,8}", inner.clone(), 0..6).prop_map(|m| {
                    let keys: Vec<String> = m.keys().take(2).cloned().collect();
                    json!({"type": "object", "properties": m, "required": keys})
                }),
                inner
                    .clone()
                    .prop_map(|i| json!({"type": "array", "items": i})),
                prop::collection::vec(inner, 0..10).prop_map(|v| json!({"anyOf": v})),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_names_and_schemas_render_and_route(
            tools in prop::collection::vec((".{0,10}", ".{0,10}", schema(), ".{0,20}"), 1..8)
        ) {
            let mut seen = std::collections::HashSet::new();
            let specs: Vec<ToolSpec> = tools
                .into_iter()
                .filter(|(server, tool, _, _)| seen.insert(format!("{server}__{tool}")) && !format!("{server}__{tool}").trim().is_empty())
                .map(|(server, tool, schema, desc)| ToolSpec::mcp_tool(server, tool, desc).with_parameters(schema))
                .collect();
            let Ok(catalog) = Catalog::build(specs, &SearchLimits::default()) else { return Ok(()); };
            let ns = McpNamespace::build(&catalog);
            for f in ns.api_files() {
                prop_assert_eq!(f.bytes, f.content.len());
                prop_assert_eq!(api_read(&ns.api_files(), &f.path).unwrap().content.clone(), f.content.clone());
            }
            let mut ids = std::collections::HashSet::new();
            for (path, id) in ns.callable_paths() {
                for seg in &path {
                    prop_assert!(seg == "$api" || codemode_catalog::js::is_identifier(seg), "{:?}", path);
                }
                match ns.request("mcp", &path, &[]) {
                    Ok(NamespaceAction::Call { id: got, .. }) => {
                        prop_assert_eq!(Some(got.as_str()), id);
                        prop_assert!(ids.insert(got));
                    }
                    Ok(NamespaceAction::Api(v)) => prop_assert_eq!(&v["kind"], "mcp_api"),
                    Err(e) => prop_assert!(e.to_string().starts_with("Missing required MCP namespace argument"), "{}", e),
                }
            }
            prop_assert!(ns.prompt().is_some());
        }
    }
}

/// Annotations and a declared `outputSchema` are documentation in the `.d.ts` and `$api`
/// (escaped, bounded), never quick-index hints; a tool that needs MCP tasks is left out with a
/// reason.
fn declared_specs() -> Vec<ToolSpec> {
    use codemode_catalog::McpToolDocs;
    vec![
        ToolSpec::mcp_tool("fs", "read_file", "Read a file.")
            .with_parameters(json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"]
            }))
            .with_mcp_docs(
                McpToolDocs::from_tool(&json!({
                    "annotations": {"readOnlyHint": true, "idempotentHint": true, "destructiveHint": "yes"},
                    "outputSchema": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}, "*/evil": {"type": "number"}},
                        "required": ["text"]
                    }
                }))
                .unwrap(),
            ),
        ToolSpec::mcp_tool("fs", "delete_file", "Delete a file.").with_mcp_docs(
            McpToolDocs::from_tool(&json!({"annotations": {"destructiveHint": true, "readOnlyHint": false}}))
                .unwrap(),
        ),
        ToolSpec::mcp_tool("fs", "index_all\n*/ x", "Index everything as a task.").with_mcp_docs(
            McpToolDocs::from_tool(&json!({"execution": {"taskSupport": "required"}})).unwrap(),
        ),
        ToolSpec::mcp_tool("fs", "maybe_task", "Optional tasks are fine.").with_mcp_docs(
            McpToolDocs::from_tool(&json!({"execution": {"taskSupport": "optional"}}))
                .unwrap_or_default(),
        ),
    ]
}

#[test]
fn declarations_render_hints_output_schemas_and_left_out_tools() {
    let catalog = build(declared_specs());
    let ns = McpNamespace::build(&catalog);
    let fs = ns.server("fs").unwrap();
    assert_eq!(
        fs.methods
            .iter()
            .map(|m| m.method.as_str())
            .collect::<Vec<_>>(),
        ["deleteFile", "maybeTask", "readFile"]
    );
    assert!(call(&ns, "fs.indexAll", &[]).is_err());
    let files = ns.api_files();
    let dts = &api_read(&files, "mcp/fs.d.ts").unwrap().content;
    let body = dts.split_once("declare namespace").unwrap().1;
    assert_eq!(
        body,
        r#" MCP.fs {
  /** Return this TypeScript-style API header. */
  function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;

  /**
   * Delete a file.
   * Server hints (unverified): readOnlyHint: false, destructiveHint: true.
   */
  function deleteFile(
    input?: Record<string, never>
  ): Promise<McpToolResult>;

  /**
   * Optional tasks are fine.
   */
  function maybeTask(
    input?: Record<string, never>
  ): Promise<McpToolResult>;

  /**
   * Read a file.
   * Server hints (unverified): readOnlyHint: true, idempotentHint: true.
   * Declared structuredContent (unverified): { text: string; "*\/evil"?: number }
   */
  function readFile(
    input: {
      path: string;
    }
  ): Promise<McpToolResult>;

  // Left out: "index_all\n*/ x": the server runs it only as an MCP task (execution.taskSupport "required"), which codemode does not support.
}"#
    );
    let api = ns
        .request(
            "mcp",
            &path("fs.$api"),
            &[json!("readFile"), json!({"schema": true})],
        )
        .unwrap();
    let NamespaceAction::Api(api) = api else {
        panic!("{api:?}")
    };
    assert_eq!(
        api["tools"],
        json!([{
            "method": "readFile", "path": ["readFile"], "mcpTool": "read_file", "operation": "tool",
            "description": "Read a file.",
            "annotations": {"readOnlyHint": true, "idempotentHint": true}
        }])
    );
    assert_eq!(
        api["outputSchemas"],
        json!({"readFile": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "*/evil": {"type": "number"}},
            "required": ["text"]
        }})
    );
    assert_eq!(api.get("leftOut"), None);
    let NamespaceAction::Api(all) = ns.request("mcp", &path("fs.$api"), &[]).unwrap() else {
        panic!()
    };
    assert_eq!(
        all["leftOut"],
        json!([{"mcpTool": "index_all\n*/ x", "reason": "the server runs it only as an MCP task (execution.taskSupport \"required\"), which codemode does not support"}])
    );
    // Documentation only: the quick index of an MCP entry stays `unknown` in and out.
    let entry = catalog
        .entries()
        .iter()
        .find(|e| e.id() == "mcp:fs:fs__read_file")
        .unwrap();
    assert_eq!(entry.compact().input, "unknown");
    assert_eq!(entry.compact().output, None);
    assert_eq!(entry.output_schema(), None);
}

/// One tool's file `mcp/<server>/<method>.d.ts` (docs/mcp.md, "One tool's declaration") is the
/// lean block: the description once (one line stays one line), each parameter's description
/// once on the parameter (no `@param` copy), `input: {` on the `function` line, and none of the
/// server file's preamble, hints or declared output type, which the server file keeps.
#[test]
fn one_tools_file_is_the_lean_block() {
    use codemode_catalog::McpToolDocs;
    let catalog = build(vec![
        ToolSpec::mcp_tool("gh", "create_issue", "Create a GitHub issue.\n\n  Titles are required. ")
            .with_parameters(json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "string", "description": "Repository owner"},
                    "title": {"type": "string"},
                    "labels": {"type": "array", "items": {"type": "string"}, "default": []},
                    "draft": {"type": "boolean", "description": "*/ draft", "default": false}
                },
                "required": ["title", "owner"]
            }))
            .with_mcp_docs(
                McpToolDocs::from_tool(&json!({
                    "annotations": {"readOnlyHint": false},
                    "outputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}}
                }))
                .unwrap(),
            ),
        ToolSpec::mcp_tool("gh", "ping", "Ping."),
        ToolSpec::mcp_tool("gh", "quiet", "").with_parameters(json!({
            "type": "object", "properties": {"verbose": {"type": "boolean"}}
        })),
        ToolSpec::mcp_operation("gh", McpOperation::ResourcesRead, "resources_read", "Read a resource.")
            .with_parameters(json!({"type": "object", "properties": {"uri": {"type": "string", "description": "Resource URI"}}, "required": ["uri"]})),
    ]);
    let ns = McpNamespace::build(&catalog);
    let mut files = ns.api_files();
    files.extend(ns.tool_files());
    let read = |p: &str| api_read(&files, p).unwrap().content.clone();
    assert_eq!(
        read("mcp/gh/createIssue.d.ts"),
        r#"declare namespace MCP.gh {
  /**
   * Create a GitHub issue.
   * Titles are required.
   */
  function createIssue(input: {
    title: string;
    /** Repository owner */
    owner: string;
    /** Default: []. */
    labels?: Array<string>;
    /** *\/ draft Default: false. */
    draft?: boolean;
  }): Promise<McpToolResult>;
}"#
    );
    assert_eq!(
        read("mcp/gh/ping.d.ts"),
        "declare namespace MCP.gh {\n  /** Ping. */\n  function ping(input?: Record<string, never>): Promise<McpToolResult>;\n}"
    );
    assert_eq!(
        read("mcp/gh/quiet.d.ts"),
        "declare namespace MCP.gh {\n  function quiet(input?: {\n    verbose?: boolean;\n  }): Promise<McpToolResult>;\n}"
    );
    assert_eq!(
        read("mcp/gh/resources.read.d.ts"),
        "declare namespace MCP.gh.resources {\n  /** Read a resource. */\n  function read(input: {\n    /** Resource URI */\n    uri: string;\n  }): Promise<McpResourcesReadResult>;\n}"
    );
    // The server file keeps the contract's block, with the hints and the output type.
    let server = read("mcp/gh.d.ts");
    assert!(
        server.contains("   * Server hints (unverified): readOnlyHint: false.\n   * Declared structuredContent (unverified): { number?: number }\n   *\n   * @param owner Repository owner\n   * @param draft? *\\/ draft\n   */\n  function createIssue(\n    input: {\n"),
        "{server}"
    );
    // Listed only under their directory, with the byte count of what `read` returns.
    let listed = api_list(&files, Some(&json!("mcp/gh/")));
    assert_eq!(
        listed["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [
            "mcp/gh/createIssue.d.ts",
            "mcp/gh/ping.d.ts",
            "mcp/gh/quiet.d.ts",
            "mcp/gh/resources.read.d.ts"
        ]
    );
    assert_eq!(
        listed["files"][1]["bytes"],
        json!(read("mcp/gh/ping.d.ts").len())
    );
    assert_eq!(
        api_list(&files, Some(&json!("mcp")))["files"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// Every per-tool file of the real `server-memory` fixture (input schemas, annotations and
/// output schemas as the server lists them): what a model reads for one tool.
#[test]
fn realistic_tool_files_snapshot() {
    use codemode_catalog::McpToolDocs;
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/mcp/server-memory.json")).unwrap();
    let specs = fixture["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut spec = ToolSpec::mcp_tool(
                "memory",
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap_or_default(),
            );
            spec.parameters = t.get("inputSchema").cloned();
            match McpToolDocs::from_tool(t) {
                Some(docs) => spec.with_mcp_docs(docs),
                None => spec,
            }
        })
        .collect();
    let ns = McpNamespace::build(&build(specs));
    let all: Vec<String> = ns
        .tool_files()
        .iter()
        .map(|f| {
            assert_eq!(f.bytes, f.content.len());
            format!("// {}\n{}\n", f.path, f.content)
        })
        .collect();
    insta::assert_snapshot!("memory_tool_files", all.join("\n"));
}
