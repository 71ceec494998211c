//! Resolution of one `tools.codeMode` value into a [`CodeModeConfig`] and its [`Warning`]s
//! (docs/contract/config.md#configuration; docs/contract/config.md#s1). Every numeric option is
//! resolved from the field table ([`NUMERIC_FIELDS`]) through [`CodeModeConfig::set_numeric`],
//! both generated from the one declaration in `config.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{
    CodeModeConfig, Enabled, GuestRuntime, Language, Mode, NumericField, DEFAULT_LANGUAGES,
    FIELD_NAMES, NUMERIC_FIELDS,
};
use crate::warning::{Warning, WarningKind};

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
            Some(enabled) => {
                config.set_enabled(enabled);
            }
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
        config.set_languages(&languages);
        if let Some((kind, message)) = problem {
            let used = Value::from(
                config
                    .languages()
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>(),
            );
            warnings.push(warning(e, used, kind, message));
        }
    }

    // A capped field's maximum is its cap's resolved value, so capping fields are resolved
    // first; warnings are still reported in table order.
    let mut per_field: Vec<Vec<Warning>> = vec![Vec::new(); NUMERIC_FIELDS.len()];
    let uncapped = NUMERIC_FIELDS
        .iter()
        .enumerate()
        .filter(|(_, f)| f.capped_by.is_none());
    let capped = NUMERIC_FIELDS
        .iter()
        .enumerate()
        .filter(|(_, f)| f.capped_by.is_some());
    for (i, field) in uncapped.chain(capped) {
        let max = field
            .capped_by
            .and_then(|cap| config.numeric(cap))
            .map_or(field.max, |cap| cap.min(field.max));
        let value = resolve_number(*field, max, get(field.name), &mut per_field[i]);
        config.set_numeric(field.name, value);
    }
    warnings.extend(per_field.into_iter().flatten());

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
            if let (Some(cap), true) = (field.capped_by, used != field.default) {
                message.push_str(&format!(", clamped to {cap} {used}"));
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
            let (kind, message) = if let Some(cap) = field.capped_by {
                (
                    WarningKind::AboveMaxSearchLimit,
                    format!(
                        "{} {} is above {cap} {max}; {max} is used",
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
