//! The agent turn ([`AgentTurn`]): prepare the payload, load the runtime failing closed, run
//! the script's calls (through [`crate::runner`]) and build the [`AgentEnvelope`].

use std::fmt;
use std::sync::Arc;

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::{namespace_prompt, Catalog, CatalogError, SearchLimits, ToolSpec};
use codemode_config::{RunTools, RuntimeUnavailable, ToolSurface};
use codemode_facade::pipeline::{ApprovalBroker, Approver, HookChain, ToolPipeline};
use codemode_facade::surface::{exec_tool, model_surface, wait_tool, ToolDefinition};
use codemode_facade::{CodeMode, RunEnv};
use codemode_telemetry::{
    AgentMeta, FanOut, MemorySink, ModelCost, RunMeta, TokenUsage, Trajectory, TrajectorySink,
    Transcript,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::activation::Activation;
use crate::payload::{
    check_payload, direct_only_id, direct_tool_definition, Payload, PayloadCheck, PayloadError,
    Prepared,
};
use crate::runner::Runner;
use crate::script::{Script, TurnStep};

/// Why an agent turn could not run; the host prints it as `{"status": "failed", "code", "error"}`.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Code mode engaged but the runtime could not load (fail closed, no direct fallback).
    #[error(transparent)]
    RuntimeUnavailable(#[from] RuntimeUnavailable),
    /// The engaged payload failed the check.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The tools cannot form a catalog (duplicate ids, blank names).
    #[error("catalog: {0}")]
    Catalog(#[from] CatalogError),
}

impl AgentError {
    /// `runtime_unavailable`, `payload_check_failed` or `invalid_tools`.
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::RuntimeUnavailable(_) => RuntimeUnavailable::CODE,
            AgentError::Payload(_) => PayloadError::CODE,
            AgentError::Catalog(_) => "invalid_tools",
        }
    }

    /// `{"status": "failed", "code": …, "error": …}`.
    pub fn to_json(&self) -> Value {
        json!({"status": "failed", "code": self.code(), "error": self.to_string()})
    }
}

/// Everything one agent turn runs with (see the module docs).
pub struct AgentTurn {
    /// The resolved activation ([`resolve_activation`]).
    pub activation: Activation,
    /// The effective tools before policy: core, plugin, MCP and client specs, in host order.
    pub specs: Vec<ToolSpec>,
    /// Runs every tool of `specs` (direct calls and nested calls alike).
    pub executor: Arc<dyn ToolExecutor>,
    /// Names of required direct tools: visible and cataloged when code mode is on.
    pub required_direct: Vec<String>,
    /// Definitions a host adds to the payload after the surface is built; with code mode on they
    /// go through the fail-closed check like any other tool.
    pub late_tools: Vec<ToolDefinition>,
    /// The owner scope of the turn's runs (also the trajectory's scope).
    pub scope: RunScope,
    /// The config's `before_tool_call` / `after_tool_call` hooks.
    pub hooks: HookChain,
    /// Who answers approvals; `None` denies them.
    pub approver: Option<Arc<dyn Approver>>,
    /// The model's cost config, for `costUsd`.
    pub model_cost: Option<ModelCost>,
    /// Another sink the trajectory goes to (a JSON-lines file); the envelope's transcript is
    /// always projected from an in-memory copy.
    pub trajectory_sink: Option<Arc<dyn TrajectorySink>>,
    /// Put the trajectory (every event as JSON) in the envelope.
    pub include_trajectory: bool,
}

impl AgentTurn {
    /// A turn over `specs` run by `executor`, with no hooks, approver, cost, required direct or
    /// late tools, and the default scope.
    pub fn new(
        activation: Activation,
        specs: Vec<ToolSpec>,
        executor: Arc<dyn ToolExecutor>,
    ) -> Self {
        AgentTurn {
            activation,
            specs,
            executor,
            required_direct: Vec::new(),
            late_tools: Vec::new(),
            scope: RunScope::default(),
            hooks: HookChain::new(),
            approver: None,
            model_cost: None,
            trajectory_sink: None,
            include_trajectory: false,
        }
    }

    fn limits(&self) -> SearchLimits {
        SearchLimits {
            max_search_limit: self.activation.config.max_search_limit() as u32,
            search_default_limit: self.activation.config.search_default_limit() as u32,
        }
    }

    /// The specs the policy allows, judged by name and by the catalog id each would get.
    fn allowed_specs(&self) -> Result<Vec<ToolSpec>, CatalogError> {
        let policy = &self.activation.policy;
        if policy.is_default() {
            return Ok(self.specs.clone());
        }
        let catalog = Catalog::build(self.specs.clone(), &self.limits())?;
        let mut ids: Vec<Option<String>> = vec![None; self.specs.len()];
        for entry in catalog.entries() {
            ids[entry.spec_index()] = Some(entry.id().to_string());
        }
        Ok(self
            .specs
            .iter()
            .zip(ids)
            // A spec the catalog leaves out (direct-only) is judged under the id it is called
            // with, so `tools.deny: ["openclaw:core:image"]` removes it from the payload too.
            .filter(|(spec, id)| match id {
                Some(id) => policy.allows(&spec.name, id),
                None => policy.allows(&spec.name, &direct_only_id(spec)),
            })
            .map(|(spec, _)| spec.clone())
            .collect())
    }

    /// Builds the payload (and, when engaged, the catalog and the approved direct tools) and
    /// runs the fail-closed payload check. Does not load the runtime.
    pub fn prepare(&self) -> Result<Prepared, AgentError> {
        let decision = self.activation.decision;
        let has_tools = self.activation.tools == RunTools::Active;
        let specs = if has_tools {
            self.allowed_specs()?
        } else {
            Vec::new()
        };
        if !decision.engaged {
            let mut tools: Vec<ToolDefinition> = Vec::new();
            for spec in specs.iter().filter(|s| s.control.is_none() && s.allowed) {
                if !tools.iter().any(|t| t.name == spec.name) {
                    tools.push(direct_tool_definition(spec));
                }
            }
            if has_tools {
                tools.extend(self.late_tools.iter().cloned());
            }
            // Ids of the direct calls: the catalog's for cataloged tools.
            let catalog = Catalog::build(specs.clone(), &self.limits())?;
            return Ok(Prepared {
                payload: Payload { tools },
                catalog_specs: specs.clone(),
                specs,
                catalog: Arc::new(catalog),
                visible_tools: Vec::new(),
                payload_check: if has_tools {
                    PayloadCheck::NotEngaged
                } else {
                    PayloadCheck::NoTools
                },
            });
        }
        let required: Vec<&str> = self.required_direct.iter().map(String::as_str).collect();
        let surface = model_surface(specs.clone(), &required);
        let catalog = surface.build_catalog(&self.limits())?;
        let prompt = namespace_prompt(&catalog);
        let mut tools = vec![exec_tool(Some(&catalog), prompt.as_deref()), wait_tool()];
        for name in &surface.visible_tools[2..] {
            if let Some(spec) = specs
                .iter()
                .find(|s| &s.name == name && s.control.is_none())
            {
                tools.push(direct_tool_definition(spec));
            }
        }
        tools.extend(self.late_tools.iter().cloned());
        let payload = Payload { tools };
        check_payload(&payload, &surface.visible_tools[2..])?;
        Ok(Prepared {
            payload,
            specs,
            catalog: Arc::new(catalog),
            catalog_specs: surface.catalog_specs,
            visible_tools: surface.visible_tools,
            payload_check: PayloadCheck::Passed,
        })
    }

    /// Runs the turn: [`prepare`](Self::prepare), load the runtime through `load` only when
    /// code mode engaged (failing closed with [`AgentError::RuntimeUnavailable`]), then every
    /// scripted call in order, and returns the envelope.
    pub async fn run<E: fmt::Display>(
        self,
        script: &Script,
        load: impl FnOnce() -> Result<Arc<CodeMode>, E>,
    ) -> Result<AgentEnvelope, AgentError> {
        let prepared = self.prepare()?;
        let code_mode = match self.activation.decision.load_runtime(load)? {
            ToolSurface::Direct => None,
            ToolSurface::CodeMode(code_mode) => Some(code_mode),
        };
        let transforms_before = codemode_ts::typescript_transform_count();
        let memory = Arc::new(MemorySink::new());
        let sink: Arc<dyn TrajectorySink> = match &self.trajectory_sink {
            Some(extra) => Arc::new(FanOut::new(vec![memory.clone(), extra.clone()])),
            None => memory.clone(),
        };
        let trajectory = Trajectory::new(sink, self.scope.clone());
        let approvals = self.approver.as_ref().map(|approver| {
            Arc::new(ApprovalBroker::with_delegate(
                self.activation.config.snapshot_ttl(),
                approver.clone(),
            ))
        });
        let pipeline = {
            let p = ToolPipeline::new(self.executor.clone())
                .with_policy(self.activation.policy.clone())
                .with_hooks(self.hooks.clone())
                .with_trajectory(trajectory.clone());
            match &approvals {
                Some(broker) => p.with_approver(broker.clone()),
                None => p,
            }
        };
        let mut env = RunEnv::new(
            self.activation.config.clone(),
            prepared.catalog.clone(),
            self.executor.clone(),
            self.scope.clone(),
        )
        .with_policy(self.activation.policy.clone())
        .with_hooks(self.hooks.clone())
        .with_trajectory(trajectory);
        if let Some(broker) = approvals {
            env = env.with_approvals(broker);
        }
        env.visible_tools = prepared.visible_tools.clone();
        let mut runner = Runner::new(env, &prepared, code_mode.as_deref(), pipeline);
        let mut usage: Option<TokenUsage> = None;
        let mut final_text = None;
        let mut turns = 0u64;
        for turn in &script.turns {
            if !turn.delay.is_zero() {
                tokio::time::sleep(turn.delay).await;
            }
            turns += 1;
            if let Some(u) = turn.usage {
                usage = Some(usage.unwrap_or_default() + u);
            }
            match &turn.step {
                TurnStep::Text(text) => final_text = Some(text.clone()),
                TurnStep::ToolCalls(calls) => {
                    for call in calls {
                        runner.call(call).await;
                    }
                }
            }
        }
        let (bridge, tool_summary) = runner.finish();
        let meta = RunMeta {
            agent_meta: AgentMeta::new(
                self.activation.decision.engaged,
                turns,
                bridge,
                usage.as_ref(),
                self.model_cost.as_ref(),
            ),
            tool_summary,
        };
        let events = memory.events();
        let transcript = Transcript::from_events(&events);
        let runtime = RuntimeStats {
            parked_runs: code_mode.as_ref().map_or(0, |c| c.parked_runs()),
            typescript_transforms: codemode_ts::typescript_transform_count() - transforms_before,
        };
        if let Some(code_mode) = &code_mode {
            code_mode.clear();
        }
        Ok(AgentEnvelope {
            payload: prepared.payload,
            transcript,
            trajectory: self
                .include_trajectory
                .then(|| events.iter().map(|e| e.to_json()).collect()),
            meta,
            activation: ActivationReport {
                engaged: self.activation.decision.engaged,
                reason: self.activation.decision.reason,
                payload_check: prepared.payload_check,
                visible_tools: prepared.visible_tools,
            },
            runtime,
            final_text,
        })
    }
}

/// The envelope's `activation`: `{"engaged", "reason", "payloadCheck", "visibleTools"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivationReport {
    /// Whether code mode owned the tool surface.
    pub engaged: bool,
    /// Why (`forced`, `auto_preferred`, `disabled`, `disable_tools`, …).
    pub reason: codemode_config::ActivationReason,
    /// Whether the payload check ran.
    pub payload_check: PayloadCheck,
    /// The code-mode visible tools (empty when not engaged).
    pub visible_tools: Vec<String>,
}

/// The envelope's `runtime`: what the turn left behind, `{"parkedRuns", "typescriptTransforms"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    /// Runs still parked when the script ended (before the turn drops them).
    pub parked_runs: usize,
    /// TypeScript transforms performed during the turn (0 on JavaScript-only paths).
    pub typescript_transforms: u64,
}

/// The result of one agent turn (docs/contract/host.md#h6), printed by `codemode agent`:
/// `{"payload": {"tools"}, "transcript", "trajectory"?, "meta", "activation", "runtime",
/// "finalText"?}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEnvelope {
    /// The tool definitions the model received.
    pub payload: Payload,
    /// Provider-visible calls with nested calls under their `exec` / `wait`.
    pub transcript: Transcript,
    /// Every trajectory event (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Vec<Value>>,
    /// `{agentMeta, toolSummary}` (docs/contract/host.md#h5).
    pub meta: RunMeta,
    /// The activation decision and payload check.
    pub activation: ActivationReport,
    /// Runtime state after the script.
    pub runtime: RuntimeStats,
    /// The last text turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
}

impl AgentEnvelope {
    /// The envelope as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
