//! The two `tools.search` limits a resolved config hands the catalog.

use serde::{Deserialize, Serialize};

/// The resolved search limits (config fields `maxSearchLimit` and `searchDefaultLimit`,
/// docs/contract/config.md#s1). The catalog (`Catalog::build`) rejects values outside `1..=50` and
/// `1..=max_search_limit`; the config (`CodeModeConfig::search_limits`) makes them. Here, under
/// both, so each has one home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchLimits {
    /// Cap applied to any requested limit (`1..=50`, default 50).
    pub max_search_limit: u32,
    /// Limit used when none (or a non-number) is given (`1..=max_search_limit`, default 8).
    pub search_default_limit: u32,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits {
            max_search_limit: 50,
            search_default_limit: 8,
        }
    }
}
