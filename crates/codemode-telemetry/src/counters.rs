//! Per-run counters and the `telemetry` record on every result (docs/contract/telemetry.md#s9).

use std::ops::{Add, AddAssign};
use std::sync::atomic::{AtomicU64, Ordering};

use codemode_bridge::SourceCounts;
use serde::{Deserialize, Serialize};

/// The cumulative bridge counts of one code-mode run's catalog, across `exec` and `wait`.
///
/// Serialises as `{"search": 0, "describe": 0, "call": 0}`: the shape of
/// `meta.agentMeta.bridgeCalls` (docs/contract/host.md#h5). In a result's [`Telemetry`] the
/// same numbers appear as `searchCount`, `describeCount` and `callCount`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BridgeCounters {
    /// `tools.search` calls.
    pub search: u64,
    /// `tools.describe` calls.
    pub describe: u64,
    /// Tool calls: `call`, `callValue`, conveniences, namespace and `nodes` dispatches.
    pub call: u64,
}

impl Add for BridgeCounters {
    type Output = BridgeCounters;

    /// Field-wise sum (saturating), e.g. for an agent run that used several code-mode runs.
    fn add(self, other: BridgeCounters) -> BridgeCounters {
        BridgeCounters {
            search: self.search.saturating_add(other.search),
            describe: self.describe.saturating_add(other.describe),
            call: self.call.saturating_add(other.call),
        }
    }
}

impl AddAssign for BridgeCounters {
    /// Field-wise sum in place (saturating).
    fn add_assign(&mut self, other: BridgeCounters) {
        *self = *self + other;
    }
}

/// Which bridge counter a request bumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// `tools.search`.
    Search,
    /// `tools.describe`.
    Describe,
    /// Any tool call (`call`, `callValue`, conveniences, namespace, `nodes`).
    Call,
}

/// [`BridgeCounters`] shared between a run's dispatch tasks: lock-free, `Relaxed` increments
/// (the counts are statistics, not synchronisation).
#[derive(Debug, Default)]
pub struct AtomicBridgeCounters {
    search: AtomicU64,
    describe: AtomicU64,
    call: AtomicU64,
}

impl AtomicBridgeCounters {
    /// Counters starting at `start` (e.g. the counts of a restored run).
    pub fn new(start: BridgeCounters) -> AtomicBridgeCounters {
        AtomicBridgeCounters {
            search: AtomicU64::new(start.search),
            describe: AtomicU64::new(start.describe),
            call: AtomicU64::new(start.call),
        }
    }

    /// Adds one to `kind`'s counter and returns the new value.
    pub fn bump(&self, kind: CounterKind) -> u64 {
        let cell = match kind {
            CounterKind::Search => &self.search,
            CounterKind::Describe => &self.describe,
            CounterKind::Call => &self.call,
        };
        cell.fetch_add(1, Ordering::Relaxed).saturating_add(1)
    }

    /// The current counts.
    pub fn snapshot(&self) -> BridgeCounters {
        BridgeCounters {
            search: self.search.load(Ordering::Relaxed),
            describe: self.describe.load(Ordering::Relaxed),
            call: self.call.load(Ordering::Relaxed),
        }
    }
}

/// The `telemetry` field of every `exec`/`wait` result (docs/contract/telemetry.md#s9),
/// serialised in this order with camelCase keys:
///
/// ```json
/// {"catalogSize":3,"sources":{"openclaw":3,"mcp":0,"client":0},"searchCount":0,
///  "describeCount":0,"callCount":1,"visibleTools":["exec","wait"]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    /// Entries in the whole run catalog, MCP included.
    pub catalog_size: usize,
    /// Entries by source.
    pub sources: SourceCounts,
    /// `tools.search` calls in the run so far.
    pub search_count: u64,
    /// `tools.describe` calls in the run so far.
    pub describe_count: u64,
    /// Tool calls (`call`, `callValue`, conveniences, namespace and nodes dispatches) so far.
    pub call_count: u64,
    /// The model-visible tools: `exec`, `wait`, then retained direct tools (docs/contract/decisions.md#d3).
    pub visible_tools: Vec<String>,
}

impl Telemetry {
    /// A record from its parts.
    pub fn new(
        catalog_size: usize,
        sources: SourceCounts,
        counters: BridgeCounters,
        visible_tools: Vec<String>,
    ) -> Telemetry {
        Telemetry {
            catalog_size,
            sources,
            search_count: counters.search,
            describe_count: counters.describe,
            call_count: counters.call,
            visible_tools,
        }
    }

    /// The three bridge counts, as `meta.agentMeta.bridgeCalls` shows them.
    pub fn counters(&self) -> BridgeCounters {
        BridgeCounters {
            search: self.search_count,
            describe: self.describe_count,
            call: self.call_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telemetry_json_is_todays_shape() {
        let t = Telemetry::new(
            28,
            SourceCounts {
                openclaw: 3,
                mcp: 25,
                client: 0,
            },
            BridgeCounters {
                search: 1,
                describe: 2,
                call: 4,
            },
            vec!["exec".into(), "wait".into()],
        );
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(
            text,
            r#"{"catalogSize":28,"sources":{"openclaw":3,"mcp":25,"client":0},"searchCount":1,"describeCount":2,"callCount":4,"visibleTools":["exec","wait"]}"#
        );
        assert_eq!(serde_json::from_str::<Telemetry>(&text).unwrap(), t);
        assert_eq!(
            serde_json::to_string(&t.counters()).unwrap(),
            r#"{"search":1,"describe":2,"call":4}"#
        );
    }

    #[test]
    fn counters_add_and_bump() {
        let a = BridgeCounters {
            search: 1,
            describe: 0,
            call: u64::MAX,
        };
        let mut b = BridgeCounters {
            search: 2,
            describe: 3,
            call: 1,
        };
        b += a;
        assert_eq!(
            b,
            BridgeCounters {
                search: 3,
                describe: 3,
                call: u64::MAX
            }
        );
        let cells = AtomicBridgeCounters::new(BridgeCounters {
            search: 0,
            describe: 5,
            call: 1,
        });
        assert_eq!(cells.bump(CounterKind::Call), 2);
        assert_eq!(cells.bump(CounterKind::Search), 1);
        assert_eq!(cells.bump(CounterKind::Call), 3);
        assert_eq!(
            cells.snapshot(),
            BridgeCounters {
                search: 1,
                describe: 5,
                call: 3
            }
        );
    }
}
