//! What every resolver of this crate reports about a value it did not use as given: one
//! [`Warning`] each, shared by the `tools.codeMode` resolution, the per-agent merge, the tool
//! policy and the hooks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// `agents.list[1].tools.codeMode.enabled`. [`resolve`](crate::resolve) roots paths at `tools.codeMode`.
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
