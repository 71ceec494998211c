//! The run context a guest reads its catalog globals from (`tools`, `ALL_TOOLS`, `API`, `MCP`,
//! `namespaces`; docs/guest-abi.md, "Run context").
//!
//! A [`RunContext`] is built once per catalog and shared (`Arc`) by every exec of it: the host
//! keeps it in the VM's host state and the guest copies a section in through the
//! `codemode.context_*` imports only when a program first touches the global that needs it. A
//! trivial exec therefore costs the same with 10 or 10,000 cataloged tools.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::js::is_identifier;
use crate::method::TOOLS_MEMBER_NAMES;

/// One section of a [`RunContext`], as numbered by the `codemode.context_len` /
/// `codemode.context_read` imports (docs/guest-abi.md, "Run context").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ContextSection {
    /// `ALL_TOOLS`: JSON array of the compact catalog entries, in catalog order.
    Tools = 0,
    /// `API` virtual files: JSON array of `{path, description, bytes, content}`.
    ApiFiles = 1,
    /// The `MCP` namespace: JSON `{paths: [[segment, …]], serverNames: [[identifier, serverName]],
    /// offline: [[identifier, serverName, message]]}` (`offline`: configured servers that are not
    /// connected; `MCP.<identifier>` throws `message`, docs/mcp.md).
    Mcp = 2,
    /// The `tools.<name>` conveniences: JSON array of `[name, id]` pairs, in catalog order.
    Conveniences = 3,
}

impl ContextSection {
    /// Every section, in index order.
    pub const ALL: [ContextSection; 4] = [
        ContextSection::Tools,
        ContextSection::ApiFiles,
        ContextSection::Mcp,
        ContextSection::Conveniences,
    ];

    /// The section with this import index, `None` for any other number.
    pub fn from_index(index: u32) -> Option<ContextSection> {
        ContextSection::ALL.get(index as usize).copied()
    }
}

#[derive(Debug)]
struct Inner {
    /// The JSON text of each [`ContextSection`], by index.
    sections: [Box<str>; 4],
    /// Convenience name → tool id, for `codemode.context_convenience`.
    conveniences: HashMap<String, String>,
    /// Whether the `MCP` global exists (a callable path, or a configured server that is offline).
    has_mcp: bool,
    /// Set for the eager install: the whole context JSON handed to `setup` in `cm_start`.
    eager: Option<Box<str>>,
}

/// The catalog half of a run's guest globals, cheap to clone (one `Arc`). See the module docs.
#[derive(Debug, Clone)]
pub struct RunContext(Arc<Inner>);

impl RunContext {
    /// A lazily installed context from its JSON sections: `tools_json` (array of compact
    /// entries), `api_files_json` (array of `{path, description, bytes, content}`), `mcp_json`
    /// (`{paths, serverNames, offline}`; `has_mcp` says whether `paths` or `offline` is non-empty) and the
    /// conveniences as `(name, id)` pairs in catalog order (the caller computes them with the
    /// catalog's rule, docs/contract/catalog.md#s3-4). The texts must be valid JSON; the guest
    /// parses them with `JSON.parse` and fails the touching access if they are not.
    pub fn new(
        tools_json: String,
        api_files_json: String,
        mcp_json: String,
        has_mcp: bool,
        conveniences: Vec<(String, String)>,
    ) -> RunContext {
        let pairs: Vec<[&str; 2]> = conveniences
            .iter()
            .map(|(name, id)| [name.as_str(), id.as_str()])
            .collect();
        // Serialising strings cannot fail.
        let conveniences_json = serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into());
        let map = conveniences.into_iter().collect();
        RunContext(Arc::new(Inner {
            sections: [
                tools_json.into(),
                api_files_json.into(),
                mcp_json.into(),
                conveniences_json.into(),
            ],
            conveniences: map,
            has_mcp,
            eager: None,
        }))
    }

    /// A context from the whole run-context JSON `{tools, apiFiles, mcp}` (every field optional),
    /// computing the conveniences with the catalog's rule from the entries' `name` and `id`.
    /// Errors: the text is not JSON.
    pub fn from_json(text: &str) -> Result<RunContext, serde_json::Error> {
        let value: Value = serde_json::from_str(text)?;
        let field = |key: &str, default: &str| match value.get(key) {
            Some(v) => v.to_string(),
            None => default.to_string(),
        };
        let tools: &[Value] = value
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for name in tools.iter().filter_map(|t| t.get("name")?.as_str()) {
            *counts.entry(name).or_default() += 1;
        }
        let conveniences = tools
            .iter()
            .filter_map(|t| Some((t.get("name")?.as_str()?, t.get("id")?.as_str()?)))
            .filter(|(name, _)| {
                is_identifier(name)
                    && !TOOLS_MEMBER_NAMES.contains(name)
                    && counts.get(name) == Some(&1)
            })
            .map(|(name, id)| (name.to_string(), id.to_string()))
            .collect();
        let has_mcp = value
            .get("mcp")
            .and_then(|m| m.get("paths"))
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty());
        Ok(RunContext::new(
            field("tools", "[]"),
            field("apiFiles", "[]"),
            field("mcp", r#"{"paths":[]}"#),
            has_mcp,
            conveniences,
        ))
    }

    /// The same context installed the way every exec did before lazy installation: the whole
    /// JSON goes into `cm_start` and `setup` builds every global up front. Kept for the
    /// `catalog_scale` benchmark's before/after comparison and for callers that hand
    /// `codemode_runtime::Vm::start` a JSON string.
    pub fn eager(text: String) -> RunContext {
        RunContext(Arc::new(Inner {
            sections: Default::default(),
            conveniences: HashMap::new(),
            has_mcp: false,
            eager: Some(text.into()),
        }))
    }

    /// The JSON text `cm_start` carries as [`crate::abi::StartInput::context`]: the whole
    /// context for an eager one, else `{"lazy":true,"mcp":<has_mcp>}` (a few bytes, whatever
    /// the catalog's size).
    pub fn start_json(&self) -> String {
        match &self.0.eager {
            Some(text) => text.to_string(),
            None => format!(r#"{{"lazy":true,"mcp":{}}}"#, self.0.has_mcp),
        }
    }

    /// The JSON text of one section (empty for an eager context, which the guest never asks).
    pub fn section(&self, section: ContextSection) -> &str {
        &self.0.sections[section as usize]
    }

    /// The tool id of the convenience `tools.<name>`, if the catalog has one.
    pub fn convenience(&self, name: &str) -> Option<&str> {
        self.0.conveniences.get(name).map(String::as_str)
    }
}

impl From<&str> for RunContext {
    /// An eager context from the whole run-context JSON ([`RunContext::eager`]).
    fn from(text: &str) -> RunContext {
        RunContext::eager(text.to_string())
    }
}

impl From<&String> for RunContext {
    /// An eager context from the whole run-context JSON ([`RunContext::eager`]).
    fn from(text: &String) -> RunContext {
        RunContext::eager(text.clone())
    }
}

impl From<&RunContext> for RunContext {
    fn from(context: &RunContext) -> RunContext {
        context.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_json_splits_sections_and_finds_conveniences() {
        let ctx = RunContext::from_json(
            r#"{"tools":[{"id":"a:x","name":"x"},{"id":"a:dup","name":"dup"},{"id":"b:dup","name":"dup"},
            {"id":"a:call","name":"call"},{"id":"a:bad","name":"bad-name"},{"id":"a:p","name":"__proto__"}],
            "mcp":{"paths":[["s","t"]],"serverNames":[]}}"#,
        )
        .unwrap();
        assert_eq!(ctx.convenience("x"), Some("a:x"));
        assert_eq!(ctx.convenience("__proto__"), Some("a:p"));
        assert_eq!(ctx.convenience("dup"), None);
        assert_eq!(ctx.convenience("call"), None);
        assert_eq!(ctx.convenience("bad-name"), None);
        assert_eq!(
            ctx.section(ContextSection::Conveniences),
            r#"[["x","a:x"],["__proto__","a:p"]]"#
        );
        assert_eq!(ctx.section(ContextSection::ApiFiles), "[]");
        assert_eq!(ctx.start_json(), r#"{"lazy":true,"mcp":true}"#);
        assert_eq!(
            RunContext::from(r#"{"tools":[]}"#).start_json(),
            r#"{"tools":[]}"#
        );
    }
}
