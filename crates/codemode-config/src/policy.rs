//! Tool policy (docs/contract/host.md#h1, docs/contract/host.md#h3, docs/contract/host.md#h9): `tools.allow`, `tools.deny` and `tools.approvals.require`,
//! globally and per agent under `agents.list[].tools`.
//!
//! ```json5
//! {
//!   tools: {
//!     allow: ["openclaw:core:*", "search_*"],   // absent: every tool; []: no tool
//!     deny: ["openclaw:core:exec"],              // deny wins over allow
//!     approvals: { require: ["*write*"] },       // these calls wait for a person
//!     codeMode: true,
//!   },
//!   agents: { list: [
//!     // `allow` replaces the global allow; `deny` and `approvals.require` are added.
//!     { id: "ops", tools: { allow: ["*"], deny: ["mcp:*"] } },
//!   ] },
//! }
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agents::{find_agent, object_at, unknown_agent};
use crate::warning::{Warning, WarningKind};

/// A tool pattern (docs/contract/host.md#h1): `*` matches any run of characters (also none); every other
/// character matches itself. A pattern matches a tool when it matches the tool's name
/// (`read`) or its catalog id (`openclaw:core:read`).
///
/// *Choice where the spec is silent:* patterns and candidates are compared after trimming
/// surrounding whitespace and case-insensitively, as the reference normalises tool names; so
/// `Read` matches `read`. Serialises as the trimmed pattern string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct ToolPattern {
    /// The trimmed pattern, as written.
    text: String,
    /// The trimmed pattern, lower-cased, for matching.
    folded: Vec<char>,
}

impl ToolPattern {
    /// A pattern from its text (trimmed). An empty pattern matches only an empty name.
    pub fn new(text: &str) -> Self {
        let text = text.trim().to_string();
        let folded = text.to_lowercase().chars().collect();
        ToolPattern { text, folded }
    }

    /// The pattern as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the pattern matches `candidate` (trimmed, case-insensitive).
    pub fn matches(&self, candidate: &str) -> bool {
        let candidate: Vec<char> = candidate.trim().to_lowercase().chars().collect();
        glob(&self.folded, &candidate)
    }

    /// True when the pattern matches the tool's `name` or, when given, its catalog `id`.
    pub fn matches_tool(&self, name: &str, id: Option<&str>) -> bool {
        self.matches(name) || id.is_some_and(|id| self.matches(id))
    }
}

impl From<String> for ToolPattern {
    fn from(text: String) -> Self {
        ToolPattern::new(&text)
    }
}

impl From<ToolPattern> for String {
    fn from(pattern: ToolPattern) -> Self {
        pattern.text
    }
}

/// Glob matching where `*` is the only wildcard: linear backtracking over the last star.
fn glob(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// True when any of `patterns` matches the tool.
fn any_matches(patterns: &[ToolPattern], name: &str, id: Option<&str>) -> bool {
    patterns.iter().any(|p| p.matches_tool(name, id))
}

/// `tools.approvals` (docs/contract/host.md#h3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalPolicy {
    /// Calls of tools matching one of these patterns need approval before they run.
    pub require: Vec<ToolPattern>,
}

/// The effective tool policy of a run (docs/contract/host.md#h1, docs/contract/host.md#h3, docs/contract/host.md#h9). The default allows every tool and
/// requires no approval.
///
/// JSON (camelCase), as `codemode config` prints it:
/// `{"allow": null | ["pattern", …], "deny": […], "approvals": {"require": […]}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPolicy {
    /// `None`: every tool is allowed. `Some([])`: no tool is (an empty catalog; in an agent turn
    /// code mode does not activate). Otherwise a tool must match one of the patterns.
    pub allow: Option<Vec<ToolPattern>>,
    /// A tool matching one of these is denied, whatever `allow` says.
    pub deny: Vec<ToolPattern>,
    /// `tools.approvals`.
    pub approvals: ApprovalPolicy,
}

impl ToolPolicy {
    /// True when the tool (by `name` or catalog `id`) may be used: it matches `allow` (or
    /// `allow` is absent) and matches no `deny` pattern.
    pub fn allows(&self, name: &str, id: &str) -> bool {
        let id = Some(id).filter(|id| !id.is_empty());
        if any_matches(&self.deny, name, id) {
            return false;
        }
        match &self.allow {
            None => true,
            Some(allow) => any_matches(allow, name, id),
        }
    }

    /// True when a call of the tool needs approval: it matches `approvals.require`.
    pub fn requires_approval(&self, name: &str, id: &str) -> bool {
        let id = Some(id).filter(|id| !id.is_empty());
        any_matches(&self.approvals.require, name, id)
    }

    /// True when `allow` is present and empty: the run has no tools
    /// (`RunTools::empty_allow_list` for activation).
    pub fn allows_nothing(&self) -> bool {
        self.allow.as_ref().is_some_and(Vec::is_empty)
    }

    /// True for the default policy: everything allowed, nothing denied, no approvals.
    pub fn is_default(&self) -> bool {
        *self == ToolPolicy::default()
    }
}

/// A resolved policy and the warnings produced on the way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResolvedPolicy {
    /// The effective policy.
    pub policy: ToolPolicy,
    /// Every ignored or replaced value, in config order: global values first, then the agent's.
    pub warnings: Vec<Warning>,
}

/// Resolves the tool policy of a whole config (`{"tools": {…}, "agents": {"list": […]}}`) for
/// `agent_id` (`None`: the global policy).
///
/// The agent is the first `agents.list` entry whose `id` equals `agent_id`. Its `tools.allow`
/// **replaces** the global `allow` when present; its `tools.deny` and `tools.approvals.require`
/// are **added** to the global ones (docs/contract/host.md#h9; adding approvals is our choice, the safe one).
///
/// Never fails; every unusable value is a [`Warning`] (paths like `tools.allow[2]` or
/// `agents.list[0].tools.deny`, `field` the key concerned):
/// - a root, `tools`, `agents`, agent `tools` or `tools.approvals` that is not an object:
///   `invalid_shape`, ignored;
/// - `allow` / `deny` / `approvals.require` that is a single string: `invalid_shape`, used as a
///   one-pattern list; any other non-array: `invalid_shape`, used as `[]`, so a malformed
///   `allow` allows **no** tool (fail closed) and a malformed `deny` denies nothing extra;
/// - a pattern that is not a string, or is empty: `invalid_value`, dropped (an `allow` left
///   empty allows no tool);
/// - a key of `tools.approvals` other than `require`: `unknown_field`;
/// - an agent id with no entry: `unknown_agent`, the global policy applies.
pub fn resolve_policy(root: &Value, agent_id: Option<&str>) -> ResolvedPolicy {
    let mut warnings = Vec::new();
    let mut policy = ToolPolicy::default();
    let Some(root) = object_at(root, "", &mut warnings) else {
        return ResolvedPolicy { policy, warnings };
    };
    if let Some(tools) = root.get("tools") {
        if let Some(tools) = object_at(tools, "tools", &mut warnings) {
            let layer = read_layer(tools, "tools", &mut warnings);
            policy.allow = layer.allow;
            policy.deny = layer.deny;
            policy.approvals.require = layer.require;
        }
    }
    if let Some(id) = agent_id {
        match find_agent(root, id, &mut warnings) {
            Some((index, entry)) => {
                let path = format!("agents.list[{index}].tools");
                if let Some(tools) = entry.get("tools") {
                    if let Some(tools) = object_at(tools, &path, &mut warnings) {
                        let layer = read_layer(tools, &path, &mut warnings);
                        if layer.allow.is_some() {
                            policy.allow = layer.allow;
                        }
                        policy.deny.extend(layer.deny);
                        policy.approvals.require.extend(layer.require);
                    }
                }
            }
            None => warnings.push(unknown_agent(id, "tools policy")),
        }
    }
    ResolvedPolicy { policy, warnings }
}

/// The policy keys of one `tools` object.
struct Layer {
    allow: Option<Vec<ToolPattern>>,
    deny: Vec<ToolPattern>,
    require: Vec<ToolPattern>,
}

fn read_layer(tools: &Map<String, Value>, path: &str, warnings: &mut Vec<Warning>) -> Layer {
    let allow = tools
        .get("allow")
        .map(|v| patterns(v, &format!("{path}.allow"), "allow", warnings));
    let deny = tools
        .get("deny")
        .map(|v| patterns(v, &format!("{path}.deny"), "deny", warnings))
        .unwrap_or_default();
    let mut require = Vec::new();
    if let Some(approvals) = tools.get("approvals") {
        let approvals_path = format!("{path}.approvals");
        if let Some(approvals) = object_at(approvals, &approvals_path, warnings) {
            for (key, value) in approvals {
                if key == "require" {
                    require = patterns(
                        value,
                        &format!("{approvals_path}.require"),
                        "require",
                        warnings,
                    );
                } else {
                    warnings.push(Warning {
                        path: format!("{approvals_path}.{key}"),
                        field: key.clone(),
                        given: value.clone(),
                        used: Value::Null,
                        kind: WarningKind::UnknownField,
                        message: format!("{approvals_path} has no field {key:?}; it is ignored"),
                    });
                }
            }
        }
    }
    Layer {
        allow,
        deny,
        require,
    }
}

/// A pattern list at `path` (see [`resolve_policy`] for the rules).
pub(crate) fn patterns(
    value: &Value,
    path: &str,
    field: &str,
    warnings: &mut Vec<Warning>,
) -> Vec<ToolPattern> {
    match value {
        Value::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.trim().is_empty() => kept.push(ToolPattern::new(s)),
                    Value::String(_) => warnings.push(Warning {
                        path: format!("{path}[{i}]"),
                        field: field.to_string(),
                        given: item.clone(),
                        used: Value::Null,
                        kind: WarningKind::InvalidValue,
                        message: format!("{path}[{i}] is an empty pattern; it is ignored"),
                    }),
                    other => warnings.push(Warning {
                        path: format!("{path}[{i}]"),
                        field: field.to_string(),
                        given: other.clone(),
                        used: Value::Null,
                        kind: WarningKind::InvalidValue,
                        message: format!("{path}[{i}] must be a pattern string; it is ignored"),
                    }),
                }
            }
            kept
        }
        Value::String(s) if !s.trim().is_empty() => {
            warnings.push(Warning {
                path: path.to_string(),
                field: field.to_string(),
                given: value.clone(),
                used: Value::Array(vec![Value::from(s.trim())]),
                kind: WarningKind::InvalidShape,
                message: format!(
                    "{path} must be an array of patterns; the string is used as one pattern"
                ),
            });
            vec![ToolPattern::new(s)]
        }
        other => {
            let consequence = if field == "allow" {
                "no tool is allowed"
            } else {
                "it is ignored"
            };
            warnings.push(Warning {
                path: path.to_string(),
                field: field.to_string(),
                given: other.clone(),
                used: Value::Array(Vec::new()),
                kind: WarningKind::InvalidShape,
                message: format!("{path} must be an array of patterns; {consequence}"),
            });
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_basics() {
        let m = |p: &str, s: &str| ToolPattern::new(p).matches(s);
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("read", "read"));
        assert!(!m("read", "reads"));
        assert!(m("re*d", "read"));
        assert!(m("re*d", "red"));
        assert!(m("*d", "read"));
        assert!(!m("*x", "read"));
        assert!(m("a*b*c", "aXbYbZc"));
        assert!(!m("a*b*c", "aXbYbZ"));
        assert!(m("**", "x"));
        assert!(m("openclaw:*:read", "openclaw:core:read"));
        assert!(m(" READ ", "read"));
        assert!(!m("", "read"));
    }
}
