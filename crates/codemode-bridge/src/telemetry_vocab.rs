//! Telemetry vocabulary shared by the catalog (which counts it), the telemetry crate (which
//! reports it) and the facade (which returns it): serde-only, so every crate can name the same
//! type (docs/contract/telemetry.md#s9).

use serde::{Deserialize, Serialize};

/// Catalog entries by source, over the whole run catalog (MCP entries included, although the
/// guest views hide them): the `telemetry.sources` record of every result.
///
/// Serialises as `{"openclaw": N, "mcp": N, "client": N}`, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SourceCounts {
    /// OpenClaw core and plugin entries.
    pub openclaw: usize,
    /// MCP entries.
    pub mcp: usize,
    /// Client entries.
    pub client: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_counts_json() {
        let counts = SourceCounts {
            openclaw: 3,
            mcp: 25,
            client: 1,
        };
        let text = serde_json::to_string(&counts).unwrap();
        assert_eq!(text, r#"{"openclaw":3,"mcp":25,"client":1}"#);
        assert_eq!(serde_json::from_str::<SourceCounts>(&text).unwrap(), counts);
    }
}
