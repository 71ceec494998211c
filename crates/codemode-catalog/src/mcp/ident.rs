//! Server and tool identifiers (docs/contract/mcp.md#s7-1): camel-casing, the fallback names, and the
//! numeric suffixes that keep identifiers unique and clear of keywords, reserved globals and
//! forbidden names.

use std::collections::HashSet;

use crate::js::{cmp_utf16, is_identifier};

/// docs/contract/mcp.md#s7-1 keywords: a generated identifier equal to one of these gets a numeric suffix.
pub const KEYWORDS: [&str; 36] = [
    "break",
    "case",
    "catch",
    "continue",
    "debugger",
    "default",
    "do",
    "else",
    "finally",
    "for",
    "function",
    "if",
    "return",
    "switch",
    "throw",
    "try",
    "var",
    "while",
    "with",
    "null",
    "true",
    "false",
    "instanceof",
    "typeof",
    "void",
    "delete",
    "new",
    "in",
    "this",
    "const",
    "class",
    "extends",
    "export",
    "import",
    "super",
    "enum",
];

/// docs/contract/mcp.md#s7-1 reserved globals: a generated identifier equal to one of these gets a numeric suffix.
pub const RESERVED_GLOBALS: [&str; 29] = [
    "ALL_TOOLS",
    "agents",
    "API",
    "Array",
    "Boolean",
    "catalog",
    "clearTimeout",
    "Date",
    "Error",
    "globalThis",
    "log",
    "json",
    "JSON",
    "Map",
    "Math",
    "MCP",
    "namespaces",
    "nodes",
    "Number",
    "Object",
    "Promise",
    "phase",
    "Set",
    "setTimeout",
    "skills",
    "String",
    "text",
    "tools",
    "yield_control",
];

/// Path segments that are never valid (docs/contract/mcp.md#s7-1 step 4, docs/contract/mcp.md#s7-2 step 2).
pub const FORBIDDEN_SEGMENTS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Names reserved inside every server object (docs/contract/mcp.md#s7-1): tools never get these identifiers.
pub const RESERVED_SERVER_MEMBERS: [&str; 3] = ["$api", "resources", "prompts"];

/// docs/contract/mcp.md#s7-1 steps 1–3: camel-case the `[A-Za-z0-9]+` words of `name`, strip leading characters
/// outside `[A-Za-z_$]`, and fall back to `fallback` when nothing is left.
///
/// `create_issue` → `createIssue`, `take-snapshot` → `takeSnapshot`, `2fa` → `fa`, `""` →
/// `fallback`.
pub fn to_identifier(name: &str, fallback: &str) -> String {
    let mut out = String::new();
    for (i, word) in name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.push(first.to_ascii_lowercase());
            } else {
                out.push(first.to_ascii_uppercase());
            }
            out.push_str(chars.as_str());
        }
    }
    let stripped =
        out.trim_start_matches(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '$'));
    if is_identifier(stripped) {
        stripped.to_string()
    } else {
        fallback.to_string()
    }
}

fn is_reserved(candidate: &str) -> bool {
    KEYWORDS.contains(&candidate)
        || RESERVED_GLOBALS.contains(&candidate)
        || FORBIDDEN_SEGMENTS.contains(&candidate)
}

/// docs/contract/mcp.md#s7-1 step 4: `base`, else `base2`, `base3`, … — the first candidate that is not in `used`,
/// not a keyword, not a reserved global and not `__proto__`/`constructor`/`prototype`. The
/// result is added to `used`.
pub fn unique_identifier(base: &str, used: &mut HashSet<String>) -> String {
    let mut candidate = base.to_string();
    let mut n = 2u64;
    while used.contains(&candidate) || is_reserved(&candidate) {
        candidate = format!("{base}{n}");
        n += 1;
    }
    used.insert(candidate.clone());
    candidate
}

/// Server identifiers for a list of safe server names, sorted and de-duplicated first (docs/contract/mcp.md#s7-1):
/// returns `(safe name, identifier)` in safe-name order.
pub(super) fn server_identifiers(mut safe_names: Vec<&str>) -> Vec<(&str, String)> {
    safe_names.sort_by(|a, b| cmp_utf16(a, b));
    safe_names.dedup();
    let mut used = HashSet::new();
    safe_names
        .into_iter()
        .map(|safe| {
            (
                safe,
                unique_identifier(&to_identifier(safe, "server"), &mut used),
            )
        })
        .collect()
}
