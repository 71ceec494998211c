//! Run metadata (docs/contract/host.md#h5, docs/contract/telemetry.md#run-metadata):
//! `meta.agentMeta` and `meta.toolSummary`, and the cost estimate from token usage.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::counters::BridgeCounters;
use crate::event::{EventKind, TrajectoryEvent};

/// Token usage of one provider round trip, or accumulated over a run: token counts per tier,
/// camelCase, missing fields 0: `{"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
}

impl Add for TokenUsage {
    type Output = TokenUsage;

    /// Tier-wise sum (saturating).
    fn add(self, o: TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.saturating_add(o.input),
            output: self.output.saturating_add(o.output),
            cache_read: self.cache_read.saturating_add(o.cache_read),
            cache_write: self.cache_write.saturating_add(o.cache_write),
        }
    }
}

impl AddAssign for TokenUsage {
    /// Tier-wise sum in place (saturating).
    fn add_assign(&mut self, o: TokenUsage) {
        *self = *self + o;
    }
}

/// A model's cost config: USD per **million** tokens per tier, camelCase, missing tiers 0:
/// `{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCost {
    /// USD per million uncached input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
    /// USD per million cache-read tokens.
    pub cache_read: f64,
    /// USD per million cache-write tokens.
    pub cache_write: f64,
}

impl ModelCost {
    /// The USD cost of `usage`: `Σ tokens × price / 1e6` over the four tiers, rounded to 1e-10
    /// USD so that sums print as the decimals they are (`0.0123`, not `0.012300000000000002`).
    /// Negative or non-finite prices count as 0.
    pub fn cost_usd(&self, usage: &TokenUsage) -> f64 {
        let price = |p: f64| if p.is_finite() && p > 0.0 { p } else { 0.0 };
        let micro = usage.input as f64 * price(self.input)
            + usage.output as f64 * price(self.output)
            + usage.cache_read as f64 * price(self.cache_read)
            + usage.cache_write as f64 * price(self.cache_write);
        ((micro / 1e6) * 1e10).round() / 1e10
    }
}

/// `costUsd` of docs/contract/host.md#h5: `Some` only when there is both usage and a cost config.
pub fn cost_usd(usage: Option<&TokenUsage>, cost: Option<&ModelCost>) -> Option<f64> {
    Some(cost?.cost_usd(usage?))
}

/// `meta.agentMeta`: `{"codeModeEngaged": true, "assistantTurns": 2, "bridgeCalls": {"search":
/// 0, "describe": 0, "call": 3}, "costUsd": 0.0123}` (`costUsd` left out when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMeta {
    /// Whether the code-mode surface actually replaced the model's tool list.
    pub code_mode_engaged: bool,
    /// Completed assistant/provider round trips.
    pub assistant_turns: u64,
    /// The run's cumulative bridge counts (summed over its code-mode runs).
    pub bridge_calls: BridgeCounters,
    /// Estimated USD cost; absent when the model has no cost data (or no usage was reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl AgentMeta {
    /// The record, with `costUsd` from [`cost_usd`].
    pub fn new(
        code_mode_engaged: bool,
        assistant_turns: u64,
        bridge_calls: BridgeCounters,
        usage: Option<&TokenUsage>,
        cost: Option<&ModelCost>,
    ) -> AgentMeta {
        AgentMeta {
            code_mode_engaged,
            assistant_turns,
            bridge_calls,
            cost_usd: cost_usd(usage, cost),
        }
    }
}

/// `meta.toolSummary`: provider-visible calls, `{"calls": 3, "byName": {"exec": 1, "wait": 2}}`
/// (names in byte order). Nested calls are not here; they are `agentMeta.bridgeCalls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    /// All provider-visible calls.
    pub calls: u64,
    /// Calls per tool name.
    pub by_name: BTreeMap<String, u64>,
}

impl ToolSummary {
    /// Counts one call of `name`.
    pub fn record(&mut self, name: &str) {
        self.calls += 1;
        *self.by_name.entry(name.to_string()).or_insert(0) += 1;
    }

    /// Counts the `tool_call` events of a trajectory.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a TrajectoryEvent>) -> ToolSummary {
        let mut summary = ToolSummary::default();
        for e in events {
            if let EventKind::ToolCall(c) = e.kind() {
                summary.record(&c.tool_name);
            }
        }
        summary
    }
}

/// The `meta` object: `{"agentMeta": {...}, "toolSummary": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMeta {
    /// Engagement and per-run stats.
    pub agent_meta: AgentMeta,
    /// Provider-visible calls.
    pub tool_summary: ToolSummary,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sonnet() -> ModelCost {
        ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        }
    }

    #[test]
    fn cost_arithmetic() {
        let usage = TokenUsage {
            input: 1200,
            output: 300,
            cache_read: 10_000,
            cache_write: 2_000,
        };
        // 1200×3 + 300×15 + 10000×0.3 + 2000×3.75 = 3600 + 4500 + 3000 + 7500 = 18600 µUSD.
        assert_eq!(sonnet().cost_usd(&usage), 0.0186);
        // One million output tokens at $15 is exactly $15.
        let million = TokenUsage {
            output: 1_000_000,
            ..TokenUsage::default()
        };
        assert_eq!(sonnet().cost_usd(&million), 15.0);
        assert_eq!(ModelCost::default().cost_usd(&usage), 0.0);
        // 7 input tokens at $0.1/M: 7e-7, exact after rounding.
        let tiny = ModelCost {
            input: 0.1,
            ..ModelCost::default()
        };
        assert_eq!(
            tiny.cost_usd(&TokenUsage {
                input: 7,
                ..TokenUsage::default()
            }),
            0.0000007
        );
        let bad = ModelCost {
            input: -1.0,
            output: f64::NAN,
            cache_read: f64::INFINITY,
            cache_write: 1.0,
        };
        assert_eq!(bad.cost_usd(&usage), 0.002);
        assert_eq!(cost_usd(Some(&usage), None), None);
        assert_eq!(cost_usd(None, Some(&sonnet())), None);
        // Usage accumulates over turns.
        let mut total = TokenUsage::default();
        total += usage;
        total += TokenUsage {
            input: 800,
            output: 700,
            cache_read: 0,
            cache_write: 0,
        };
        // (2000×3 + 1000×15 + 3000 + 7500) / 1e6 = 31500 µUSD.
        assert_eq!(cost_usd(Some(&total), Some(&sonnet())), Some(0.0315));
    }

    #[test]
    fn meta_json() {
        let mut summary = ToolSummary::default();
        summary.record("wait");
        summary.record("exec");
        summary.record("wait");
        let meta = RunMeta {
            agent_meta: AgentMeta::new(
                true,
                3,
                BridgeCounters {
                    search: 1,
                    describe: 0,
                    call: 3,
                },
                Some(&TokenUsage {
                    input: 1200,
                    output: 300,
                    cache_read: 10_000,
                    cache_write: 2_000,
                }),
                Some(&sonnet()),
            ),
            tool_summary: summary,
        };
        assert_eq!(
            serde_json::to_string(&meta).unwrap(),
            r#"{"agentMeta":{"codeModeEngaged":true,"assistantTurns":3,"bridgeCalls":{"search":1,"describe":0,"call":3},"costUsd":0.0186},"toolSummary":{"calls":3,"byName":{"exec":1,"wait":2}}}"#
        );
        let no_cost = AgentMeta::new(false, 1, BridgeCounters::default(), None, Some(&sonnet()));
        assert_eq!(
            serde_json::to_value(no_cost).unwrap(),
            json!({"codeModeEngaged": false, "assistantTurns": 1, "bridgeCalls": {"search": 0, "describe": 0, "call": 0}})
        );
        let usage: TokenUsage = serde_json::from_str(r#"{"input": 5, "cacheRead": 2}"#).unwrap();
        assert_eq!(
            usage,
            TokenUsage {
                input: 5,
                output: 0,
                cache_read: 2,
                cache_write: 0
            }
        );
        let cost: ModelCost = serde_json::from_str(r#"{"input": 3, "output": 15}"#).unwrap();
        assert_eq!(cost.cache_write, 0.0);
    }
}
