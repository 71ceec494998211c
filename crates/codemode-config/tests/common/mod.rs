//! What the config crate's integration tests share.

// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use codemode_config::{Warning, WarningKind};
use serde_json::Value;

/// Each warning as `(path, field, given, used, kind, message)`, for exact comparison.
pub(crate) fn warning_tuples(
    warnings: &[Warning],
) -> Vec<(&str, &str, &Value, &Value, WarningKind, &str)> {
    warnings
        .iter()
        .map(|w| {
            (
                w.path.as_str(),
                w.field.as_str(),
                &w.given,
                &w.used,
                w.kind,
                w.message.as_str(),
            )
        })
        .collect()
}
