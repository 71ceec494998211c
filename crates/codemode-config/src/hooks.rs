//! Command hooks (docs/contract/host.md#h2, docs/contract/host.md#h9): top-level `hooks.beforeToolCall` / `hooks.afterToolCall`,
//! each a list of `{match: "<pattern>", command: ["prog", "arg", …], timeoutMs?}`.
//!
//! This module only resolves the configuration; `codemode-facade`'s pipeline runs the commands.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agents::object_at;
use crate::policy::ToolPattern;
use crate::resolution::positive_integer;
use crate::warning::{Warning, WarningKind};

/// A hook's timeout when `timeoutMs` is absent: 5000 ms (docs/contract/host.md#h2).
pub const DEFAULT_HOOK_TIMEOUT_MS: u64 = 5000;
/// The smallest hook timeout used (ms); smaller values are raised to it.
pub const MIN_HOOK_TIMEOUT_MS: u64 = 100;
/// The largest hook timeout used (ms, ten minutes); larger values are lowered to it.
pub const MAX_HOOK_TIMEOUT_MS: u64 = 600_000;

/// The keys a hook entry may have.
const HOOK_FIELDS: [&str; 3] = ["match", "command", "timeoutMs"];

/// One configured command hook.
///
/// JSON (camelCase, as in the config): `{"match": "*write*", "command": ["sh", "-c", "…"],
/// "timeoutMs": 5000}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpec {
    /// The hook applies to calls whose tool name or catalog id matches this pattern.
    #[serde(rename = "match")]
    pub pattern: ToolPattern,
    /// The program and its arguments, run without a shell; never empty, `command[0]` non-empty.
    pub command: Vec<String>,
    /// How long the hook may take to answer, in milliseconds
    /// ([`MIN_HOOK_TIMEOUT_MS`]–[`MAX_HOOK_TIMEOUT_MS`]).
    pub timeout_ms: u64,
}

impl HookSpec {
    /// A hook on `pattern` running `command` with the default timeout.
    pub fn new(pattern: &str, command: &[&str]) -> Self {
        HookSpec {
            pattern: ToolPattern::new(pattern),
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout_ms: DEFAULT_HOOK_TIMEOUT_MS,
        }
    }

    /// The same hook with another timeout (ms, clamped to the allowed range).
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = ms.clamp(MIN_HOOK_TIMEOUT_MS, MAX_HOOK_TIMEOUT_MS);
        self
    }

    /// The timeout as a [`Duration`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The name reasons use for this hook: `command[0]` as written (`""` for an empty command).
    pub fn name(&self) -> &str {
        self.command.first().map(String::as_str).unwrap_or("")
    }

    /// True when the hook applies to a call of the tool `name` (catalog `id` when it has one).
    pub fn applies_to(&self, name: &str, id: Option<&str>) -> bool {
        self.pattern.matches_tool(name, id)
    }
}

/// The top-level `hooks` value: command hooks per event, in config order (they run in this
/// order). JSON: `{"beforeToolCall": [HookSpec, …], "afterToolCall": [HookSpec, …]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookConfig {
    /// `hooks.beforeToolCall`: run before a call is approved and executed.
    pub before_tool_call: Vec<HookSpec>,
    /// `hooks.afterToolCall`: run after a call returned (or failed).
    pub after_tool_call: Vec<HookSpec>,
}

impl HookConfig {
    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.before_tool_call.is_empty() && self.after_tool_call.is_empty()
    }
}

/// Resolved hooks and the warnings produced on the way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResolvedHooks {
    /// The usable hooks.
    pub hooks: HookConfig,
    /// Every ignored or replaced value, in config order.
    pub warnings: Vec<Warning>,
}

/// Resolves the top-level `hooks` of a whole config (`{"hooks": {…}, "tools": {…}, …}`).
///
/// Never fails; every unusable value is a [`Warning`] (paths like `hooks.beforeToolCall[1].command`):
/// - a root or `hooks` that is not an object, a `beforeToolCall`/`afterToolCall` that is not an
///   array, or an entry that is not an object: `invalid_shape`, ignored;
/// - a key of `hooks` or of an entry the format does not have: `unknown_field`, ignored;
/// - `command` missing, not an array of strings, empty, or with an empty program: `invalid_value`,
///   and the **hook is dropped** (it could never run);
/// - `match` missing, not a string or empty: `invalid_value`, and `"*"` is used, so the hook
///   applies to every call rather than to none (fail closed);
/// - `timeoutMs` not a positive integer: `not_positive_integer`, 5000 is used; below 100 or above
///   600000: `below_minimum` / `above_maximum`, clamped.
pub fn resolve_hooks(root: &Value) -> ResolvedHooks {
    let mut warnings = Vec::new();
    let mut hooks = HookConfig::default();
    let Some(root) = object_at(root, "", &mut warnings) else {
        return ResolvedHooks { hooks, warnings };
    };
    let Some(value) = root.get("hooks") else {
        return ResolvedHooks { hooks, warnings };
    };
    let Some(map) = object_at(value, "hooks", &mut warnings) else {
        return ResolvedHooks { hooks, warnings };
    };
    for (key, value) in map {
        let path = format!("hooks.{key}");
        match key.as_str() {
            "beforeToolCall" => hooks.before_tool_call = hook_list(value, &path, key, &mut warnings),
            "afterToolCall" => hooks.after_tool_call = hook_list(value, &path, key, &mut warnings),
            _ => warnings.push(Warning {
                path,
                field: key.clone(),
                given: value.clone(),
                used: Value::Null,
                kind: WarningKind::UnknownField,
                message: format!(
                    "hooks has no field {key:?} (only beforeToolCall and afterToolCall); it is ignored"
                ),
            }),
        }
    }
    ResolvedHooks { hooks, warnings }
}

fn hook_list(value: &Value, path: &str, field: &str, warnings: &mut Vec<Warning>) -> Vec<HookSpec> {
    let Value::Array(items) = value else {
        warnings.push(Warning {
            path: path.to_string(),
            field: field.to_string(),
            given: value.clone(),
            used: Value::Array(Vec::new()),
            kind: WarningKind::InvalidShape,
            message: format!("{path} must be an array of hooks; it is ignored"),
        });
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| hook_entry(item, &format!("{path}[{i}]"), warnings))
        .collect()
}

fn hook_entry(value: &Value, path: &str, warnings: &mut Vec<Warning>) -> Option<HookSpec> {
    let map = object_at(value, path, warnings)?;
    let pattern = match_pattern(map, path, warnings);
    let command = command(map, path, warnings);
    let timeout_ms = timeout_ms(map, path, warnings);
    for (key, value) in map {
        if !HOOK_FIELDS.contains(&key.as_str()) {
            warnings.push(Warning {
                path: format!("{path}.{key}"),
                field: key.clone(),
                given: value.clone(),
                used: Value::Null,
                kind: WarningKind::UnknownField,
                message: format!(
                    "a hook has no field {key:?} (only match, command and timeoutMs); it is ignored"
                ),
            });
        }
    }
    Some(HookSpec {
        pattern,
        command: command?,
        timeout_ms,
    })
}

fn match_pattern(map: &Map<String, Value>, path: &str, warnings: &mut Vec<Warning>) -> ToolPattern {
    let given = map.get("match");
    if let Some(Value::String(s)) = given {
        if !s.trim().is_empty() {
            return ToolPattern::new(s);
        }
    }
    warnings.push(Warning {
        path: format!("{path}.match"),
        field: "match".into(),
        given: given.cloned().unwrap_or(Value::Null),
        used: Value::from("*"),
        kind: WarningKind::InvalidValue,
        message: format!(
            "{path}.match must be a non-empty pattern string; \"*\" is used, so the hook applies to every call"
        ),
    });
    ToolPattern::new("*")
}

fn command(
    map: &Map<String, Value>,
    path: &str,
    warnings: &mut Vec<Warning>,
) -> Option<Vec<String>> {
    let given = map.get("command");
    if let Some(Value::Array(items)) = given {
        let strings: Option<Vec<String>> = items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect();
        if let Some(strings) = strings {
            if strings.first().is_some_and(|p| !p.is_empty()) {
                return Some(strings);
            }
        }
    }
    warnings.push(Warning {
        path: format!("{path}.command"),
        field: "command".into(),
        given: given.cloned().unwrap_or(Value::Null),
        used: Value::Null,
        kind: WarningKind::InvalidValue,
        message: format!(
            "{path}.command must be a non-empty array of strings [\"program\", \"arg\", …] with a non-empty program; the hook is ignored"
        ),
    });
    None
}

fn timeout_ms(map: &Map<String, Value>, path: &str, warnings: &mut Vec<Warning>) -> u64 {
    let Some(given) = map.get("timeoutMs") else {
        return DEFAULT_HOOK_TIMEOUT_MS;
    };
    let (used, kind, message) = match positive_integer(given) {
        None => (
            DEFAULT_HOOK_TIMEOUT_MS,
            WarningKind::NotPositiveInteger,
            format!(
                "{path}.timeoutMs must be a positive integer; {DEFAULT_HOOK_TIMEOUT_MS} is used"
            ),
        ),
        Some(ms) if ms < MIN_HOOK_TIMEOUT_MS => (
            MIN_HOOK_TIMEOUT_MS,
            WarningKind::BelowMinimum,
            format!(
                "{path}.timeoutMs {ms} is below the minimum {MIN_HOOK_TIMEOUT_MS}; {MIN_HOOK_TIMEOUT_MS} is used"
            ),
        ),
        Some(ms) if ms > MAX_HOOK_TIMEOUT_MS => (
            MAX_HOOK_TIMEOUT_MS,
            WarningKind::AboveMaximum,
            format!(
                "{path}.timeoutMs {ms} is above the maximum {MAX_HOOK_TIMEOUT_MS}; {MAX_HOOK_TIMEOUT_MS} is used"
            ),
        ),
        Some(ms) => return ms,
    };
    warnings.push(Warning {
        path: format!("{path}.timeoutMs"),
        field: "timeoutMs".into(),
        given: given.clone(),
        used: Value::from(used),
        kind,
        message,
    });
    used
}
