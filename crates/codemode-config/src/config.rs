//! The resolved `tools.codeMode` config, its field table, and resolution of one `tools.codeMode`
//! value (docs/contract/config.md#configuration; docs/contract/config.md#s1).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;
use std::time::Duration;

/// One numeric field of the spec's config table: its camelCase name, default and inclusive clamp.
///
/// All numbers are plain integers in the field's unit (milliseconds, bytes, seconds or a count,
/// as the name says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumericField {
    /// The spec's camelCase field name, e.g. `"timeoutMs"`.
    pub name: &'static str,
    /// Used when the field is absent or not a positive integer.
    pub default: u64,
    /// Smallest value kept; smaller positive integers are raised to it.
    pub min: u64,
    /// Largest value kept; larger integers are lowered to it. For `searchDefaultLimit` this is the
    /// static bound; the effective bound is the resolved `maxSearchLimit`.
    pub max: u64,
}

impl NumericField {
    /// `value` clamped to `min..=max` (the static range; `searchDefaultLimit`'s effective upper
    /// bound is the resolved `maxSearchLimit`, which [`CodeModeConfig`]'s setter applies).
    pub const fn clamp(self, value: u64) -> u64 {
        if value < self.min {
            self.min
        } else if value > self.max {
            self.max
        } else {
            value
        }
    }
}

/// `timeoutMs`: the budget of one `exec`/`wait` call, in milliseconds. Default 10000, 100–60000.
pub const TIMEOUT_MS: NumericField = NumericField {
    name: "timeoutMs",
    default: 10_000,
    min: 100,
    max: 60_000,
};
/// `memoryLimitBytes`: the guest VM's memory cap, in bytes. Default 64 MiB, 1 MiB–1 GiB.
pub const MEMORY_LIMIT_BYTES: NumericField = NumericField {
    name: "memoryLimitBytes",
    default: 67_108_864,
    min: 1_048_576,
    max: 1_073_741_824,
};
/// `maxOutputBytes`: the output cap of one result, in bytes. Default 64 KiB, 1 KiB–10 MiB.
pub const MAX_OUTPUT_BYTES: NumericField = NumericField {
    name: "maxOutputBytes",
    default: 65_536,
    min: 1_024,
    max: 10_485_760,
};
/// `maxSnapshotBytes`: the cap on one suspended run's snapshot, in bytes. Default 10 MiB,
/// 1 KiB–256 MiB.
pub const MAX_SNAPSHOT_BYTES: NumericField = NumericField {
    name: "maxSnapshotBytes",
    default: 10_485_760,
    min: 1_024,
    max: 268_435_456,
};
/// `maxPendingToolCalls`: how many bridge requests one leg may leave pending. Default 16, 1–128.
pub const MAX_PENDING_TOOL_CALLS: NumericField = NumericField {
    name: "maxPendingToolCalls",
    default: 16,
    min: 1,
    max: 128,
};
/// `snapshotTtlSeconds`: how long a parked run waits for `wait`, in seconds. Default 900,
/// 1–86400.
pub const SNAPSHOT_TTL_SECONDS: NumericField = NumericField {
    name: "snapshotTtlSeconds",
    default: 900,
    min: 1,
    max: 86_400,
};
/// `searchDefaultLimit`: results of `tools.search` without a limit. Default 8, 1–`maxSearchLimit`
/// (the static `max` here is `maxSearchLimit`'s own maximum).
pub const SEARCH_DEFAULT_LIMIT: NumericField = NumericField {
    name: "searchDefaultLimit",
    default: 8,
    min: 1,
    max: 50,
};
/// `maxSearchLimit`: the largest `tools.search` limit. Default 50, 1–50. Resolved before
/// `searchDefaultLimit`.
pub const MAX_SEARCH_LIMIT: NumericField = NumericField {
    name: "maxSearchLimit",
    default: 50,
    min: 1,
    max: 50,
};

/// Every numeric field, in the spec table's order.
pub const NUMERIC_FIELDS: [NumericField; 8] = [
    TIMEOUT_MS,
    MEMORY_LIMIT_BYTES,
    MAX_OUTPUT_BYTES,
    MAX_SNAPSHOT_BYTES,
    MAX_PENDING_TOOL_CALLS,
    SNAPSHOT_TTL_SECONDS,
    SEARCH_DEFAULT_LIMIT,
    MAX_SEARCH_LIMIT,
];

/// Every field name `tools.codeMode` knows, in the spec table's order. Other keys are ignored
/// (with an [`WarningKind::UnknownField`] warning).
pub const FIELD_NAMES: [&str; 12] = [
    "enabled",
    "runtime",
    "mode",
    "languages",
    "timeoutMs",
    "memoryLimitBytes",
    "maxOutputBytes",
    "maxSnapshotBytes",
    "maxPendingToolCalls",
    "snapshotTtlSeconds",
    "searchDefaultLimit",
    "maxSearchLimit",
];

/// `tools.codeMode.enabled`: the activation gate (docs/contract/config.md#auto).
///
/// Serialises as JSON `false`, `true` or `"auto"`, exactly as users write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Enabled {
    /// `false`: code mode is off for every run.
    Off,
    /// `true`: code mode engages for every tool-capable run, whatever the model.
    On,
    /// `"auto"` (the default): code mode engages only for models their provider catalog marks
    /// `"preferred"`.
    #[default]
    Auto,
}

impl Enabled {
    /// The value as it appears in config: `false`, `true` or `"auto"`.
    pub fn to_value(self) -> Value {
        match self {
            Enabled::Off => Value::Bool(false),
            Enabled::On => Value::Bool(true),
            Enabled::Auto => Value::String("auto".into()),
        }
    }

    /// Reads `false`, `true` or `"auto"`; anything else is `None`.
    pub fn from_value(value: &Value) -> Option<Enabled> {
        match value {
            Value::Bool(false) => Some(Enabled::Off),
            Value::Bool(true) => Some(Enabled::On),
            Value::String(s) if s == "auto" => Some(Enabled::Auto),
            _ => None,
        }
    }
}

impl fmt::Display for Enabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Enabled::Off => "false",
            Enabled::On => "true",
            Enabled::Auto => "\"auto\"",
        })
    }
}

impl Serialize for Enabled {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Enabled::Off => serializer.serialize_bool(false),
            Enabled::On => serializer.serialize_bool(true),
            Enabled::Auto => serializer.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Enabled {
    /// Strict: only `false`, `true` and `"auto"` (config resolution is lenient, see [`resolve`]).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Enabled::from_value(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "enabled must be false, true or \"auto\", got {value}"
            ))
        })
    }
}

/// `tools.codeMode.runtime`: the guest runtime; only `"quickjs-wasi"` exists. (Named
/// `GuestRuntime` so it does not clash with `codemode_runtime::Runtime`, the wasmtime host.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum GuestRuntime {
    /// QuickJS compiled to WASI, run in wasmtime.
    #[default]
    #[serde(rename = "quickjs-wasi")]
    QuickjsWasi,
}

impl GuestRuntime {
    /// `"quickjs-wasi"`.
    pub const fn as_str(self) -> &'static str {
        "quickjs-wasi"
    }
}

/// `tools.codeMode.mode`: only `"only"` exists (expose control and direct-only tools, catalog the
/// rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Mode {
    /// `"only"`.
    #[default]
    #[serde(rename = "only")]
    Only,
}

impl Mode {
    /// `"only"`.
    pub const fn as_str(self) -> &'static str {
        "only"
    }
}

/// A guest source language (shared with `codemode-ts` through `codemode-bridge`).
pub use codemode_bridge::Language;

/// The default `languages`: `["javascript", "typescript"]`.
pub const DEFAULT_LANGUAGES: [Language; 2] = Language::ALL;

/// A resolved `tools.codeMode`: every field present, every number inside its clamp.
///
/// Serialises to the spec's camelCase shape, e.g.
/// `{"enabled":"auto","runtime":"quickjs-wasi","mode":"only","languages":["javascript","typescript"],"timeoutMs":10000,…}`.
/// Deserialising goes through [`resolve`] (silently), so a deserialised value always keeps the
/// invariants below; resolving the serialised form of a resolved config gives the same config.
///
/// Invariants, kept by every way to obtain or change a value (the fields are private; read them
/// with the getters, change them with the clamping `set_*` methods): each numeric field lies in
/// its [`NumericField`] clamp; `1 <= search_default_limit <= max_search_limit <= 50`;
/// `languages` is non-empty, without duplicates, in the order given. So a host cannot hand the
/// runtime a limit outside the spec's ranges (for instance a `timeoutMs` that overflows a
/// deadline).
///
/// ```
/// use codemode_config::CodeModeConfig;
///
/// let mut config = CodeModeConfig::default();
/// config.set_timeout_ms(u64::MAX).set_max_search_limit(3);
/// assert_eq!(config.timeout_ms(), 60_000);
/// assert_eq!(config.search_default_limit(), 3); // lowered with maxSearchLimit
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "Value")]
pub struct CodeModeConfig {
    enabled: Enabled,
    runtime: GuestRuntime,
    mode: Mode,
    languages: Vec<Language>,
    timeout_ms: u64,
    memory_limit_bytes: u64,
    max_output_bytes: u64,
    max_snapshot_bytes: u64,
    max_pending_tool_calls: u64,
    snapshot_ttl_seconds: u64,
    search_default_limit: u64,
    max_search_limit: u64,
}

impl Default for CodeModeConfig {
    /// Every default of the spec's table (`enabled: "auto"`, `timeoutMs: 10000`, …): what an
    /// absent `tools.codeMode` resolves to.
    fn default() -> Self {
        CodeModeConfig {
            enabled: Enabled::Auto,
            runtime: GuestRuntime::QuickjsWasi,
            mode: Mode::Only,
            languages: DEFAULT_LANGUAGES.to_vec(),
            timeout_ms: TIMEOUT_MS.default,
            memory_limit_bytes: MEMORY_LIMIT_BYTES.default,
            max_output_bytes: MAX_OUTPUT_BYTES.default,
            max_snapshot_bytes: MAX_SNAPSHOT_BYTES.default,
            max_pending_tool_calls: MAX_PENDING_TOOL_CALLS.default,
            snapshot_ttl_seconds: SNAPSHOT_TTL_SECONDS.default,
            search_default_limit: SEARCH_DEFAULT_LIMIT.default,
            max_search_limit: MAX_SEARCH_LIMIT.default,
        }
    }
}

impl From<Value> for CodeModeConfig {
    /// [`resolve`] without the warnings.
    fn from(value: Value) -> Self {
        resolve(&value).config
    }
}

impl CodeModeConfig {
    /// [`resolve`] without the warnings: the runtime's path from a `tools.codeMode` value to
    /// typed limits.
    pub fn from_value(value: &Value) -> Self {
        resolve(value).config
    }

    /// The activation gate (`enabled`). Default [`Enabled::Auto`].
    pub fn enabled(&self) -> Enabled {
        self.enabled
    }

    /// The guest runtime (`runtime`): always [`GuestRuntime::QuickjsWasi`].
    pub fn runtime(&self) -> GuestRuntime {
        self.runtime
    }

    /// The tool mode (`mode`): always [`Mode::Only`].
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Languages `exec` accepts (`languages`), in the configured order: non-empty, no
    /// duplicates. Default `["javascript", "typescript"]`.
    pub fn languages(&self) -> &[Language] {
        &self.languages
    }

    /// Milliseconds per `exec`/`wait` call (`timeoutMs`): inside [`TIMEOUT_MS`]'s clamp, 100..=60000.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// Guest memory cap in bytes (`memoryLimitBytes`): inside [`MEMORY_LIMIT_BYTES`]'s clamp, 1048576..=1073741824.
    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_bytes
    }

    /// Output cap per result in bytes (`maxOutputBytes`): inside [`MAX_OUTPUT_BYTES`]'s clamp, 1024..=10485760.
    pub fn max_output_bytes(&self) -> u64 {
        self.max_output_bytes
    }

    /// Snapshot cap per suspended run in bytes (`maxSnapshotBytes`): inside [`MAX_SNAPSHOT_BYTES`]'s clamp, 1024..=268435456.
    pub fn max_snapshot_bytes(&self) -> u64 {
        self.max_snapshot_bytes
    }

    /// Pending bridge requests allowed per leg (`maxPendingToolCalls`): inside [`MAX_PENDING_TOOL_CALLS`]'s clamp, 1..=128.
    pub fn max_pending_tool_calls(&self) -> u64 {
        self.max_pending_tool_calls
    }

    /// Seconds a parked run is kept (`snapshotTtlSeconds`): inside [`SNAPSHOT_TTL_SECONDS`]'s clamp, 1..=86400.
    pub fn snapshot_ttl_seconds(&self) -> u64 {
        self.snapshot_ttl_seconds
    }

    /// `tools.search` results when no limit is given (`searchDefaultLimit`):
    /// `1..=max_search_limit()` ([`SEARCH_DEFAULT_LIMIT`]).
    pub fn search_default_limit(&self) -> u64 {
        self.search_default_limit
    }

    /// The largest `tools.search` limit (`maxSearchLimit`): `1..=50` ([`MAX_SEARCH_LIMIT`]).
    pub fn max_search_limit(&self) -> u64 {
        self.max_search_limit
    }

    /// Sets the activation gate.
    pub fn set_enabled(&mut self, enabled: Enabled) -> &mut Self {
        self.enabled = enabled;
        self
    }

    /// Sets the accepted languages: duplicates are dropped keeping the first position, and an
    /// empty list gives the default `["javascript", "typescript"]` (as [`resolve`] does).
    pub fn set_languages(&mut self, languages: &[Language]) -> &mut Self {
        let mut kept: Vec<Language> = Vec::with_capacity(languages.len());
        for &language in languages {
            if !kept.contains(&language) {
                kept.push(language);
            }
        }
        if kept.is_empty() {
            kept = DEFAULT_LANGUAGES.to_vec();
        }
        self.languages = kept;
        self
    }

    /// Sets milliseconds per `exec`/`wait` call (`timeoutMs`), clamped to [`TIMEOUT_MS`]'s range 100..=60000 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_timeout_ms(&mut self, value: u64) -> &mut Self {
        self.timeout_ms = TIMEOUT_MS.clamp(value);
        self
    }

    /// Sets guest memory cap in bytes (`memoryLimitBytes`), clamped to [`MEMORY_LIMIT_BYTES`]'s range 1048576..=1073741824 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_memory_limit_bytes(&mut self, value: u64) -> &mut Self {
        self.memory_limit_bytes = MEMORY_LIMIT_BYTES.clamp(value);
        self
    }

    /// Sets output cap per result in bytes (`maxOutputBytes`), clamped to [`MAX_OUTPUT_BYTES`]'s range 1024..=10485760 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_max_output_bytes(&mut self, value: u64) -> &mut Self {
        self.max_output_bytes = MAX_OUTPUT_BYTES.clamp(value);
        self
    }

    /// Sets snapshot cap per suspended run in bytes (`maxSnapshotBytes`), clamped to [`MAX_SNAPSHOT_BYTES`]'s range 1024..=268435456 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_max_snapshot_bytes(&mut self, value: u64) -> &mut Self {
        self.max_snapshot_bytes = MAX_SNAPSHOT_BYTES.clamp(value);
        self
    }

    /// Sets pending bridge requests allowed per leg (`maxPendingToolCalls`), clamped to [`MAX_PENDING_TOOL_CALLS`]'s range 1..=128 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_max_pending_tool_calls(&mut self, value: u64) -> &mut Self {
        self.max_pending_tool_calls = MAX_PENDING_TOOL_CALLS.clamp(value);
        self
    }

    /// Sets seconds a parked run is kept (`snapshotTtlSeconds`), clamped to [`SNAPSHOT_TTL_SECONDS`]'s range 1..=86400 (`0` is below the
    /// minimum and gives the minimum; `u64::MAX` gives the maximum).
    pub fn set_snapshot_ttl_seconds(&mut self, value: u64) -> &mut Self {
        self.snapshot_ttl_seconds = SNAPSHOT_TTL_SECONDS.clamp(value);
        self
    }

    /// Sets `searchDefaultLimit`, clamped to `1..=max_search_limit()`.
    pub fn set_search_default_limit(&mut self, value: u64) -> &mut Self {
        self.search_default_limit = value.clamp(SEARCH_DEFAULT_LIMIT.min, self.max_search_limit);
        self
    }

    /// Sets `maxSearchLimit`, clamped to `1..=50`; `searchDefaultLimit` is lowered to it when it
    /// is larger (and never raised), so `searchDefaultLimit <= maxSearchLimit` holds.
    pub fn set_max_search_limit(&mut self, value: u64) -> &mut Self {
        self.max_search_limit = MAX_SEARCH_LIMIT.clamp(value);
        self.search_default_limit = self.search_default_limit.min(self.max_search_limit);
        self
    }

    /// Sets a numeric field by its camelCase name (`"timeoutMs"`, …) through its clamping
    /// setter and returns the value kept, or `None` (and no change) for any other name.
    pub fn set_numeric(&mut self, name: &str, value: u64) -> Option<u64> {
        match name {
            "timeoutMs" => self.set_timeout_ms(value),
            "memoryLimitBytes" => self.set_memory_limit_bytes(value),
            "maxOutputBytes" => self.set_max_output_bytes(value),
            "maxSnapshotBytes" => self.set_max_snapshot_bytes(value),
            "maxPendingToolCalls" => self.set_max_pending_tool_calls(value),
            "snapshotTtlSeconds" => self.set_snapshot_ttl_seconds(value),
            "searchDefaultLimit" => self.set_search_default_limit(value),
            "maxSearchLimit" => self.set_max_search_limit(value),
            _ => return None,
        };
        self.numeric(name)
    }

    /// `timeoutMs` as a [`Duration`] (at most 60 s).
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// `snapshotTtlSeconds` as a [`Duration`] (at most one day).
    pub fn snapshot_ttl(&self) -> Duration {
        Duration::from_secs(self.snapshot_ttl_seconds)
    }

    /// Whether `exec` accepts `language`.
    pub fn allows(&self, language: Language) -> bool {
        self.languages.contains(&language)
    }

    /// The value of a numeric field by its camelCase name (`"timeoutMs"`, …), `None` for other
    /// names.
    pub fn numeric(&self, name: &str) -> Option<u64> {
        Some(match name {
            "timeoutMs" => self.timeout_ms,
            "memoryLimitBytes" => self.memory_limit_bytes,
            "maxOutputBytes" => self.max_output_bytes,
            "maxSnapshotBytes" => self.max_snapshot_bytes,
            "maxPendingToolCalls" => self.max_pending_tool_calls,
            "snapshotTtlSeconds" => self.snapshot_ttl_seconds,
            "searchDefaultLimit" => self.search_default_limit,
            "maxSearchLimit" => self.max_search_limit,
            _ => return None,
        })
    }

    /// This config as a JSON object in the spec's camelCase shape.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("CodeModeConfig always serialises")
    }
}

/// Why a configured value was not used as given. Serialised in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A whole value had the wrong shape and was ignored (a `tools.codeMode` that is not
    /// `false`/`true`/`"auto"`/an object, a `tools` or config root that is not an object, an
    /// `agents.list` that is not an array).
    InvalidShape,
    /// `enabled`, `runtime`, `mode` or `languages` had an unsupported value; the default is used.
    InvalidValue,
    /// A numeric field was not a positive integer; its default is used (then clamped).
    NotPositiveInteger,
    /// A positive integer below the field's minimum; the minimum is used.
    BelowMinimum,
    /// An integer above the field's maximum; the maximum is used.
    AboveMaximum,
    /// `searchDefaultLimit` above the resolved `maxSearchLimit`; `maxSearchLimit` is used.
    AboveMaxSearchLimit,
    /// `languages` held unknown names, duplicates or nothing; the filtered list (or the default)
    /// is used.
    LanguagesFiltered,
    /// A key `tools.codeMode` does not know; ignored.
    UnknownField,
    /// The requested agent id has no entry in `agents.list`; the global value applies.
    UnknownAgent,
}

/// One value that was ignored or clamped during resolution, so a host can tell its user.
///
/// JSON shape (camelCase):
/// `{"path":"tools.codeMode.timeoutMs","field":"timeoutMs","given":90000,"used":60000,"kind":"above_maximum","message":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// Where the value sits in the user's config, dotted, e.g. `tools.codeMode.timeoutMs` or
    /// `agents.list[1].tools.codeMode.enabled`. [`resolve`] roots paths at `tools.codeMode`.
    pub path: String,
    /// The `tools.codeMode` field concerned (`"timeoutMs"`, …), or `""` when the warning is about
    /// a whole value (root, `tools`, `tools.codeMode`, `agents.list`).
    pub field: String,
    /// The value as the user wrote it.
    pub given: Value,
    /// The value used instead (`null` when the value was dropped without replacement, as for an
    /// unknown field).
    pub used: Value,
    /// Why.
    pub kind: WarningKind,
    /// A one-line English explanation.
    pub message: String,
}

/// A resolved config and the warnings produced on the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// The resolved config.
    pub config: CodeModeConfig,
    /// Every ignored or clamped value, in field-table order (whole-value shape warnings first,
    /// unknown fields last, in input order).
    pub warnings: Vec<Warning>,
}

/// One key of a normalised (and possibly merged) `tools.codeMode` object, remembering which
/// config object it came from (for warning paths).
#[derive(Debug, Clone)]
pub(crate) struct Entry<'a> {
    pub key: &'a str,
    pub value: &'a Value,
    /// Dotted path of the object holding the key, e.g. `tools.codeMode`.
    pub origin: &'a str,
}

/// Normalises one `tools.codeMode` value (docs/contract/config.md#s1): `true`/`false`/`"auto"` become
/// `{enabled: …}`, an object is used as is, and anything else becomes `{}` with an
/// [`WarningKind::InvalidShape`] warning.
pub(crate) fn normalize<'a>(
    value: &'a Value,
    origin: &'a str,
    warnings: &mut Vec<Warning>,
) -> Vec<Entry<'a>> {
    match value {
        Value::Bool(_) => vec![Entry {
            key: "enabled",
            value,
            origin,
        }],
        Value::String(s) if s == "auto" => vec![Entry {
            key: "enabled",
            value,
            origin,
        }],
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| Entry {
                key: key.as_str(),
                value,
                origin,
            })
            .collect(),
        other => {
            warnings.push(Warning {
                path: origin.to_string(),
                field: String::new(),
                given: other.clone(),
                used: Value::Object(Map::new()),
                kind: WarningKind::InvalidShape,
                message: format!(
                    "{origin} must be false, true, \"auto\" or an object; it is ignored as {{}}"
                ),
            });
            Vec::new()
        }
    }
}

/// `{...global, ...agent}`: agent keys replace global keys in place, new keys are appended.
pub(crate) fn merge<'a>(global: Vec<Entry<'a>>, agent: Vec<Entry<'a>>) -> Vec<Entry<'a>> {
    let mut merged = global;
    for entry in agent {
        match merged.iter_mut().find(|e| e.key == entry.key) {
            Some(slot) => *slot = entry,
            None => merged.push(entry),
        }
    }
    merged
}

/// Resolves one `tools.codeMode` value (`false`, `true`, `"auto"`, an object, or anything else,
/// which counts as `{}`) into a [`CodeModeConfig`] and the list of values that were ignored or
/// clamped. Warning paths are rooted at `tools.codeMode`.
///
/// Rules (docs/contract/config.md#configuration, docs/contract/config.md#s1):
/// - `enabled`: `false`, `true` or `"auto"`; absent or anything else → `"auto"`.
/// - `runtime` / `mode`: constants `"quickjs-wasi"` / `"only"`; other values are ignored.
/// - `languages`: a non-array → default; otherwise only the exact strings `"javascript"` and
///   `"typescript"` are kept, de-duplicated keeping the first position; empty → default.
/// - numbers: only a positive integer counts (a JSON number with no fractional part, as
///   JavaScript's `Number.isInteger`, so `1000.0` counts and `1.5` does not); otherwise the
///   default applies; then the clamp. `maxSearchLimit` is resolved before `searchDefaultLimit`,
///   which is then clamped to it.
///
/// Never fails and never panics. `Value::Null` is not special: it resolves to the defaults with
/// one warning. For an absent config use [`CodeModeConfig::default`].
pub fn resolve(value: &Value) -> Resolved {
    let mut warnings = Vec::new();
    let entries = normalize(value, "tools.codeMode", &mut warnings);
    resolve_entries(&entries, warnings)
}

/// Resolves normalised entries; `warnings` already holds the shape warnings.
pub(crate) fn resolve_entries(entries: &[Entry<'_>], mut warnings: Vec<Warning>) -> Resolved {
    let get = |name: &str| entries.iter().find(|e| e.key == name);
    let mut config = CodeModeConfig::default();

    if let Some(e) = get("enabled") {
        match Enabled::from_value(e.value) {
            Some(enabled) => config.enabled = enabled,
            None => warnings.push(warning(
                e,
                Enabled::Auto.to_value(),
                WarningKind::InvalidValue,
                "enabled must be false, true or \"auto\"; \"auto\" is used".into(),
            )),
        }
    }
    if let Some(e) = get("runtime") {
        if e.value.as_str() != Some(GuestRuntime::QuickjsWasi.as_str()) {
            warnings.push(warning(
                e,
                Value::from(GuestRuntime::QuickjsWasi.as_str()),
                WarningKind::InvalidValue,
                "the only supported runtime is \"quickjs-wasi\"".into(),
            ));
        }
    }
    if let Some(e) = get("mode") {
        if e.value.as_str() != Some(Mode::Only.as_str()) {
            warnings.push(warning(
                e,
                Value::from(Mode::Only.as_str()),
                WarningKind::InvalidValue,
                "the only supported mode is \"only\"".into(),
            ));
        }
    }
    if let Some(e) = get("languages") {
        let (languages, problem) = resolve_languages(e.value);
        config.languages = languages;
        if let Some((kind, message)) = problem {
            let used = Value::from(
                config
                    .languages
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>(),
            );
            warnings.push(warning(e, used, kind, message));
        }
    }

    for field in [
        TIMEOUT_MS,
        MEMORY_LIMIT_BYTES,
        MAX_OUTPUT_BYTES,
        MAX_SNAPSHOT_BYTES,
        MAX_PENDING_TOOL_CALLS,
        SNAPSHOT_TTL_SECONDS,
    ] {
        let value = resolve_number(field, field.max, get(field.name), &mut warnings);
        match field.name {
            "timeoutMs" => config.timeout_ms = value,
            "memoryLimitBytes" => config.memory_limit_bytes = value,
            "maxOutputBytes" => config.max_output_bytes = value,
            "maxSnapshotBytes" => config.max_snapshot_bytes = value,
            "maxPendingToolCalls" => config.max_pending_tool_calls = value,
            _ => config.snapshot_ttl_seconds = value,
        }
    }
    // maxSearchLimit is resolved first, but its warning is reported after searchDefaultLimit's,
    // in table order.
    let mut max_search_warnings = Vec::new();
    config.max_search_limit = resolve_number(
        MAX_SEARCH_LIMIT,
        MAX_SEARCH_LIMIT.max,
        get(MAX_SEARCH_LIMIT.name),
        &mut max_search_warnings,
    );
    config.search_default_limit = resolve_number(
        SEARCH_DEFAULT_LIMIT,
        config.max_search_limit,
        get(SEARCH_DEFAULT_LIMIT.name),
        &mut warnings,
    );
    warnings.append(&mut max_search_warnings);

    for e in entries {
        if !FIELD_NAMES.contains(&e.key) {
            warnings.push(warning(
                e,
                Value::Null,
                WarningKind::UnknownField,
                format!("tools.codeMode has no field {:?}; it is ignored", e.key),
            ));
        }
    }
    Resolved { config, warnings }
}

fn path_of(e: &Entry<'_>) -> String {
    format!("{}.{}", e.origin, e.key)
}

fn warning(e: &Entry<'_>, used: Value, kind: WarningKind, message: String) -> Warning {
    Warning {
        path: path_of(e),
        field: e.key.to_string(),
        given: e.value.clone(),
        used,
        kind,
        message,
    }
}

/// The filtered language list and, when it differs from what was given, why.
fn resolve_languages(value: &Value) -> (Vec<Language>, Option<(WarningKind, String)>) {
    let Value::Array(items) = value else {
        return (
            DEFAULT_LANGUAGES.to_vec(),
            Some((
                WarningKind::InvalidValue,
                "languages must be an array of \"javascript\"/\"typescript\"; the default is used"
                    .into(),
            )),
        );
    };
    let mut kept: Vec<Language> = Vec::new();
    for item in items {
        if let Some(language) = item.as_str().and_then(Language::from_name) {
            if !kept.contains(&language) {
                kept.push(language);
            }
        }
    }
    if kept.is_empty() {
        let message = if items.is_empty() {
            "languages is empty; the default is used"
        } else {
            "languages names neither \"javascript\" nor \"typescript\"; the default is used"
        };
        return (
            DEFAULT_LANGUAGES.to_vec(),
            Some((WarningKind::LanguagesFiltered, message.into())),
        );
    }
    let problem = (kept.len() != items.len()).then(|| {
        (
            WarningKind::LanguagesFiltered,
            "languages keeps only \"javascript\" and \"typescript\", each once, in first position"
                .into(),
        )
    });
    (kept, problem)
}

/// A JSON number that is an integer greater than zero (JavaScript `Number.isInteger(v) && v > 0`);
/// huge values saturate at `u64::MAX` (they are clamped anyway).
pub(crate) fn positive_integer(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(u) = n.as_u64() {
        return (u > 0).then_some(u);
    }
    if n.is_i64() {
        return None; // negative
    }
    let f = n.as_f64()?;
    if f.is_finite() && f > 0.0 && f.fract() == 0.0 {
        // `as` saturates at u64::MAX.
        Some(f as u64)
    } else {
        None
    }
}

fn resolve_number(
    field: NumericField,
    max: u64,
    entry: Option<&Entry<'_>>,
    warnings: &mut Vec<Warning>,
) -> u64 {
    let Some(e) = entry else {
        return field.default.clamp(field.min, max);
    };
    match positive_integer(e.value) {
        None => {
            let used = field.default.clamp(field.min, max);
            let mut message = format!(
                "{} must be a positive integer; the default {} is used",
                field.name, field.default
            );
            if used != field.default {
                message.push_str(&format!(", clamped to maxSearchLimit {used}"));
            }
            warnings.push(warning(
                e,
                Value::from(used),
                WarningKind::NotPositiveInteger,
                message,
            ));
            used
        }
        Some(n) if n < field.min => {
            warnings.push(warning(
                e,
                Value::from(field.min),
                WarningKind::BelowMinimum,
                format!(
                    "{} {n} is below the minimum {}; {} is used",
                    field.name, field.min, field.min
                ),
            ));
            field.min
        }
        Some(n) if n > max => {
            let (kind, message) = if field.name == SEARCH_DEFAULT_LIMIT.name {
                (
                    WarningKind::AboveMaxSearchLimit,
                    format!(
                        "{} {} is above maxSearchLimit {max}; {max} is used",
                        field.name, e.value
                    ),
                )
            } else {
                (
                    WarningKind::AboveMaximum,
                    format!(
                        "{} {} is above the maximum {max}; {max} is used",
                        field.name, e.value
                    ),
                )
            };
            warnings.push(warning(e, Value::from(max), kind, message));
            max
        }
        Some(n) => n,
    }
}
