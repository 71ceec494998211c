//! The resolved `tools.codeMode` config and its field table (docs/contract/config.md#configuration;
//! docs/contract/config.md#s1). Resolving a JSON value into it is `resolution.rs`'s job.
//!
//! Every numeric option is declared once, in the [`numeric_options!`] table below: its name (the
//! JSON key), default, clamp and doc. The macro generates the public [`NumericField`] constant,
//! the struct field, the getter, the clamping setter, [`NUMERIC_FIELDS`], [`FIELD_NAMES`] and the
//! by-name access ([`CodeModeConfig::numeric`], [`CodeModeConfig::set_numeric`]) that resolution
//! uses, so no list of fields can fall out of step with another (docs/config.md, "Adding a
//! limit").

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

use codemode_bridge::SearchLimits;

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
    /// The field whose resolved value is this field's effective maximum, when there is one
    /// (`searchDefaultLimit` is capped by `maxSearchLimit`). The capping field is resolved
    /// first; lowering it lowers this field.
    pub capped_by: Option<&'static str>,
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

/// Declares every numeric `tools.codeMode` option from one entry each (the way wasmtime declares
/// its option groups), and the [`CodeModeConfig`] that holds them. After the struct's doc and
/// `pub struct CodeModeConfig;`, an entry reads
///
/// ```text
/// /// doc of the option
/// CONST_NAME = "jsonKey", field_and_getter, setter: default D, range MIN..=MAX;
/// ```
///
/// optionally followed by `, capped by CAP_CONST (cap_field)` before the `;` for an option
/// whose effective maximum is another option's value. Generated: the public [`NumericField`]
/// `CONST_NAME`, the private field (serialised under `"jsonKey"`), its getter and clamping
/// setter, its place in [`NUMERIC_FIELDS`] and [`FIELD_NAMES`] (table order), and its arm in
/// [`CodeModeConfig::numeric`] / [`CodeModeConfig::set_numeric`], through which resolution
/// (`resolution.rs`) reads and writes every option.
macro_rules! numeric_options {
    (
        $(#[$struct_meta:meta])*
        pub struct CodeModeConfig;
        $(
        $(#[doc = $doc:literal])*
        $konst:ident = $name:literal, $field:ident, $setter:ident:
            default $default:literal, range $min:literal ..= $max:literal
            $(, capped by $cap_konst:ident ($cap_field:ident))?;
    )*) => {
        $(
            $(#[doc = $doc])*
            pub const $konst: NumericField = NumericField {
                name: $name,
                default: $default,
                min: $min,
                max: $max,
                capped_by: numeric_options!(@cap $($cap_konst)?),
            };
        )*

        /// How many numeric options [`NUMERIC_FIELDS`] holds.
        const NUMERIC_COUNT: usize = [$($name),*].len();

        /// Every numeric field, in the spec table's order.
        pub const NUMERIC_FIELDS: [NumericField; NUMERIC_COUNT] = [$($konst),*];

        /// Every field name `tools.codeMode` knows, in the spec table's order. Other keys are
        /// ignored (with an [`WarningKind::UnknownField`](crate::warning::WarningKind) warning).
        pub const FIELD_NAMES: [&str; 4 + NUMERIC_COUNT] =
            ["enabled", "runtime", "mode", "languages", $($name),*];

        $(#[$struct_meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", from = "Value")]
        pub struct CodeModeConfig {
            enabled: Enabled,
            runtime: GuestRuntime,
            mode: Mode,
            languages: Vec<Language>,
            $(
                #[serde(rename = $name)]
                $field: u64,
            )*
        }

        impl Default for CodeModeConfig {
            /// Every default of the spec's table (`enabled: "auto"`, `timeoutMs: 10000`, …): what
            /// an absent `tools.codeMode` resolves to.
            fn default() -> Self {
                CodeModeConfig {
                    enabled: Enabled::Auto,
                    runtime: GuestRuntime::QuickjsWasi,
                    mode: Mode::Only,
                    languages: DEFAULT_LANGUAGES.to_vec(),
                    $($field: $konst.default,)*
                }
            }
        }

        impl CodeModeConfig {
            $(
                #[doc = concat!("`", $name, "`: inside [`", stringify!($konst), "`]'s clamp",
                    $(" and at most `", stringify!($cap_field), "()`",)? ".")]
                pub fn $field(&self) -> u64 {
                    self.$field
                }

                #[doc = concat!("Sets `", $name, "`, clamped to [`", stringify!($konst),
                    "`]'s range (`0` is below the minimum and gives the minimum; `u64::MAX` gives \
                    the maximum)", $(" and to `", stringify!($cap_field), "()`",)?
                    ". An option this one caps is lowered to it when larger (never raised).")]
                pub fn $setter(&mut self, value: u64) -> &mut Self {
                    #[allow(unused_mut)]
                    let mut max = $konst.max;
                    $(max = max.min(self.$cap_field);)?
                    self.$field = value.clamp($konst.min, max);
                    self.lower_capped();
                    self
                }
            )*

            /// The value of a numeric field by its camelCase name (`"timeoutMs"`, …), `None` for
            /// other names.
            pub fn numeric(&self, name: &str) -> Option<u64> {
                match name {
                    $($name => Some(self.$field),)*
                    _ => None,
                }
            }

            /// Sets a numeric field by its camelCase name (`"timeoutMs"`, …) through its clamping
            /// setter and returns the value kept, or `None` (and no change) for any other name.
            pub fn set_numeric(&mut self, name: &str, value: u64) -> Option<u64> {
                match name {
                    $($name => Some(self.$setter(value).$field),)*
                    _ => None,
                }
            }

            /// Keeps every capped option at or under its cap (after a cap was lowered).
            fn lower_capped(&mut self) {
                $($(self.$field = self.$field.min(self.$cap_field);)?)*
            }
        }
    };
    (@cap) => { None };
    (@cap $cap_konst:ident) => { Some($cap_konst.name) };
}

numeric_options! {
    /// A resolved `tools.codeMode`: every field present, every number inside its clamp.
    ///
    /// Serialises to the spec's camelCase shape, e.g.
    /// `{"enabled":"auto","runtime":"quickjs-wasi","mode":"only","languages":["javascript","typescript"],"timeoutMs":10000,…}`.
    /// Deserialising goes through [`resolve`](crate::resolve) (silently), so a deserialised value always keeps the
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
    pub struct CodeModeConfig;

    /// `timeoutMs`: the budget of one `exec`/`wait` call, in milliseconds. Default 10000, 100–60000.
    TIMEOUT_MS = "timeoutMs", timeout_ms, set_timeout_ms:
        default 10_000, range 100..=60_000;
    /// `memoryLimitBytes`: the guest VM's memory cap, in bytes. Default 64 MiB, 1 MiB–1 GiB.
    MEMORY_LIMIT_BYTES = "memoryLimitBytes", memory_limit_bytes, set_memory_limit_bytes:
        default 67_108_864, range 1_048_576..=1_073_741_824;
    /// `maxOutputBytes`: the output cap of one result, in bytes. Default 64 KiB, 1 KiB–10 MiB.
    MAX_OUTPUT_BYTES = "maxOutputBytes", max_output_bytes, set_max_output_bytes:
        default 65_536, range 1_024..=10_485_760;
    /// `maxSnapshotBytes`: the cap on one suspended run's snapshot, in bytes. Default 10 MiB,
    /// 1 KiB–256 MiB.
    MAX_SNAPSHOT_BYTES = "maxSnapshotBytes", max_snapshot_bytes, set_max_snapshot_bytes:
        default 10_485_760, range 1_024..=268_435_456;
    /// `maxPendingToolCalls`: how many bridge requests one leg may leave pending. Default 16, 1–128.
    MAX_PENDING_TOOL_CALLS = "maxPendingToolCalls", max_pending_tool_calls, set_max_pending_tool_calls:
        default 16, range 1..=128;
    /// `snapshotTtlSeconds`: how long a parked run waits for `wait`, in seconds. Default 900,
    /// 1–86400.
    SNAPSHOT_TTL_SECONDS = "snapshotTtlSeconds", snapshot_ttl_seconds, set_snapshot_ttl_seconds:
        default 900, range 1..=86_400;
    /// `searchDefaultLimit`: results of `tools.search` without a limit. Default 8, 1–`maxSearchLimit`
    /// (the static `max` here is `maxSearchLimit`'s own maximum).
    SEARCH_DEFAULT_LIMIT = "searchDefaultLimit", search_default_limit, set_search_default_limit:
        default 8, range 1..=50, capped by MAX_SEARCH_LIMIT (max_search_limit);
    /// `maxSearchLimit`: the largest `tools.search` limit. Default 50, 1–50. Resolved before
    /// `searchDefaultLimit`.
    MAX_SEARCH_LIMIT = "maxSearchLimit", max_search_limit, set_max_search_limit:
        default 50, range 1..=50;
}

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
    /// Strict: only `false`, `true` and `"auto"` (config resolution is lenient, see [`resolve`](crate::resolve)).
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

impl CodeModeConfig {
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

    /// Sets the activation gate.
    pub fn set_enabled(&mut self, enabled: Enabled) -> &mut Self {
        self.enabled = enabled;
        self
    }

    /// Sets the accepted languages: duplicates are dropped keeping the first position, and an
    /// empty list gives the default `["javascript", "typescript"]` (as [`resolve`](crate::resolve) does).
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

    /// The two `tools.search` limits the catalog takes (`maxSearchLimit`, `searchDefaultLimit`),
    /// the one place a config becomes [`SearchLimits`].
    pub fn search_limits(&self) -> SearchLimits {
        // Both are at most 50 (their clamps), so the casts are exact.
        SearchLimits {
            max_search_limit: self.max_search_limit as u32,
            search_default_limit: self.search_default_limit as u32,
        }
    }

    /// This config as a JSON object in the spec's camelCase shape.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("CodeModeConfig always serialises")
    }
}
