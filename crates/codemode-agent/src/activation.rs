//! Activation of one agent turn (docs/contract/config.md#activation): the agent's config and
//! policy, the serving model's support and the run flags decide whether code mode engages.

use codemode_config::{
    decide, resolve_for_agent, resolve_policy, ActivationDecision, CodeModeConfig, ModelSupport,
    ProviderCatalogs, RunContext, RunTools, ToolPolicy, Warning,
};
use codemode_telemetry::ModelCost;
use serde_json::Value;

/// How the run was started, besides its config and model: the flags of
/// docs/contract/config.md#activation that a host sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnFlags {
    /// A raw model call: no tool surface at all.
    pub raw_model_call: bool,
    /// The run was started with `disableTools: true`.
    pub disable_tools: bool,
    /// The run is routed through a native harness surface.
    pub native_harness: bool,
}

/// The resolved activation of one agent turn.
#[derive(Debug, Clone)]
pub struct Activation {
    /// The resolved `tools.codeMode` for the agent.
    pub config: CodeModeConfig,
    /// The agent's tool policy (`tools.allow` / `deny` / `approvals.require`).
    pub policy: ToolPolicy,
    /// The run's tools classification (active, raw, `disableTools`, empty allow list).
    pub tools: RunTools,
    /// The model as the serving catalog describes it.
    pub model: ModelSupport,
    /// The decision and its reason.
    pub decision: ActivationDecision,
    /// Every config and policy value that was ignored or clamped.
    pub warnings: Vec<Warning>,
}

/// Resolves activation for one turn (docs/contract/config.md#activation): the agent's
/// `tools.codeMode` and tool policy from `root`, the model's support from the provider catalog
/// that serves `model_ref` (`provider/model`; `None` or an unlisted model is tool-capable with no
/// tier), and the run flags. An empty `tools.allow` means the run has no tools.
pub fn resolve_activation(
    root: &Value,
    agent_id: Option<&str>,
    model_ref: Option<&str>,
    catalogs: &ProviderCatalogs,
    flags: TurnFlags,
) -> Activation {
    let resolved = resolve_for_agent(root, agent_id);
    let policy = resolve_policy(root, agent_id);
    let model = model_ref
        .and_then(|r| catalogs.model_ref(r))
        .map(|m| m.support())
        .unwrap_or(ModelSupport::UNLISTED);
    let empty: &[&str] = &[];
    let tools = RunTools::from_run(
        flags.raw_model_call,
        flags.disable_tools,
        policy.policy.allows_nothing().then_some(empty),
    );
    let decision = decide(
        resolved.config.enabled(),
        &RunContext {
            tools,
            model,
            tool_search: false,
            native_harness: flags.native_harness,
        },
    );
    let mut warnings = resolved.warnings;
    for w in policy.warnings {
        if !warnings
            .iter()
            .any(|o| o.path == w.path && o.kind == w.kind)
        {
            warnings.push(w);
        }
    }
    Activation {
        config: resolved.config,
        policy: policy.policy,
        tools,
        model,
        decision,
        warnings,
    }
}

/// The `cost` of `provider/model` in a provider catalog file's JSON (`{"catalogs": [{"provider",
/// "models": [{"id", "cost": {"input", "output", "cacheRead"?, "cacheWrite"?}}]}]}`, USD per
/// million tokens); `None` when the model or its cost is not listed.
pub fn model_cost(catalogs_json: &Value, model_ref: &str) -> Option<ModelCost> {
    let (provider, model) = model_ref.split_once('/')?;
    let catalog = catalogs_json
        .get("catalogs")?
        .as_array()?
        .iter()
        .find(|c| c.get("provider").and_then(Value::as_str) == Some(provider))?;
    let row = catalog
        .get("models")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
    serde_json::from_value(row.get("cost")?.clone()).ok()
}
