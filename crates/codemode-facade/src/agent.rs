//! Agent turns (docs/contract/host.md#h6): one scripted model turn end to end, the Rust API under
//! `codemode agent`.
//!
//! An agent turn takes a config (the whole root value: `tools.codeMode`, `tools.allow` / `deny`,
//! `agents.list`), a model ref (`provider/model`), the provider catalogs that serve it (models with
//! `compat.codeMode` tiers, docs/contract/config.md#compat-flag), the effective tools (core,
//! plugin, MCP and client specs, each possibly direct-only, with one executor for all of them) and
//! a [`Script`] of assistant turns. It then:
//!
//! 1. resolves activation ([`resolve_activation`]: `false`, `true`, `"auto"` with the model's
//!    tier, per-agent overrides; runs without tools never engage,
//!    docs/contract/config.md#activation);
//! 2. builds the provider payload ([`Payload`]): the direct tool definitions when code mode is
//!    off, or `exec`, `wait` and the retained direct tools when it is on
//!    (docs/contract/surface.md#s2-1);
//! 3. enforces the fail-closed payload check on an engaged run ([`check_payload`]: exactly one
//!    `exec`, one `wait`, otherwise only approved direct tools), and loads the runtime failing
//!    closed ([`codemode_config::RuntimeUnavailable`]);
//! 4. runs the script's tool calls in order: `exec` / `wait` through [`CodeMode`], every other
//!    payload tool directly through the [`ToolPipeline`] (policy, hooks, approvals), with
//!    `"$result:<callId>.<path>"` references resolved against earlier results
//!    ([`resolve_references`]);
//! 5. returns one [`AgentEnvelope`]: `{payload: {tools}, transcript, trajectory?, meta,
//!    activation, runtime, finalText?}` (docs/contract/host.md#h5 for `meta`).
//!
//! ```
//! use codemode_facade::{resolve_references, Script};
//! use serde_json::json;
//!
//! let script = Script::from_json(r#"{"turns": [
//!     {"toolCalls": [{"id": "c1", "name": "exec", "arguments": {"code": "return 1"}}],
//!      "usage": {"input": 100, "output": 20}},
//!     {"text": "done"}
//! ]}"#).unwrap();
//! assert_eq!(script.turns.len(), 2);
//!
//! let mut results = std::collections::HashMap::new();
//! results.insert("c1".to_string(), json!({"status": "waiting", "runId": "cm_1"}));
//! let args = resolve_references(&json!({"runId": "$result:c1.runId"}), &results).unwrap();
//! assert_eq!(args, json!({"runId": "cm_1"}));
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{RunScope, ToolCall, ToolExecutor};
use codemode_catalog::{
    namespace_prompt, Catalog, CatalogError, CatalogMode, SearchLimits, ToolSpec,
};
use codemode_config::{
    decide, resolve_for_agent, resolve_policy, ActivationDecision, CodeModeConfig, ModelSupport,
    ProviderCatalogs, RunContext, RunTools, RuntimeUnavailable, ToolPolicy, ToolSurface, Warning,
};
use codemode_runtime::AbortHandle;
use codemode_telemetry::{
    AgentMeta, BridgeCounters, EventKind, FanOut, MemorySink, ModelCost, RunMeta, TokenUsage,
    ToolCallEvent, ToolInputKind, ToolKind, ToolResultEvent, ToolStatus, ToolSummary, Trajectory,
    TrajectorySink, Transcript,
};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::pipeline::{ApprovalBroker, Approver, HookChain, ToolPipeline};
use crate::surface::{
    exec_tool, model_surface, wait_tool, ToolDefinition, EXEC_TOOL_NAME, WAIT_TOOL_NAME,
};
use crate::{CodeMode, RunEnv};

/// The prefix of a result reference in a scripted call's arguments:
/// `"$result:<callId>.<dotted path>"`.
pub const RESULT_REFERENCE_PREFIX: &str = "$result:";

// ---------------------------------------------------------------------------------------------
// The scripted model
// ---------------------------------------------------------------------------------------------

/// A scripted model: the assistant turns of one agent run, in order.
///
/// JSON: `{"turns": [turn, …]}` where each turn is `{"toolCalls": [call, …]}` or
/// `{"text": "…"}`, and may add `"usage": {"input", "output", "cacheRead"?, "cacheWrite"?}`
/// (token counts of that round trip) and `"delayMs": N` (the model takes this long before the
/// turn's calls are made, e.g. to let a parked run's TTL pass). A call is `{"id", "name",
/// "arguments"?, "abort"?}`: `arguments` defaults to `{}`; `"abort": true` makes the call with
/// its abort signal already raised (a cancelled turn). Unknown keys are errors.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The assistant turns.
    pub turns: Vec<ScriptTurn>,
}

/// One assistant turn of a [`Script`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptTurn {
    /// What the model answers.
    pub step: TurnStep,
    /// Token usage of this provider round trip.
    pub usage: Option<TokenUsage>,
    /// How long the model takes before the turn's calls are made.
    pub delay: Duration,
}

/// What an assistant turn says: tool calls or a final text.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStep {
    /// Tool calls, run in order.
    ToolCalls(Vec<ScriptToolCall>),
    /// A final text answer.
    Text(String),
}

/// One provider-visible tool call of a scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptToolCall {
    /// The provider's tool-call id (unique in the script).
    pub id: String,
    /// The tool name, one of the payload's.
    pub name: String,
    /// The arguments, possibly with `"$result:<callId>.<path>"` references.
    pub arguments: Value,
    /// Make the call with its abort signal already raised.
    pub abort: bool,
}

/// A script file that is not in the format of [`Script`]; the message names the turn and call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("script: {0}")]
pub struct ScriptError(pub String);

impl Script {
    /// Parses a script file (JSON).
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ScriptError(format!("not JSON: {e}")))?;
        Script::from_value(&value)
    }

    /// Reads a script from its JSON value.
    pub fn from_value(value: &Value) -> Result<Script, ScriptError> {
        let root = value
            .as_object()
            .ok_or_else(|| ScriptError("expected an object {\"turns\": [...]}".into()))?;
        unknown_keys(root, &["turns"], "the script")?;
        let turns = root
            .get("turns")
            .and_then(Value::as_array)
            .ok_or_else(|| ScriptError("\"turns\" must be an array".into()))?;
        let mut ids = HashSet::new();
        let mut parsed = Vec::with_capacity(turns.len());
        for (index, turn) in turns.iter().enumerate() {
            parsed.push(parse_turn(index, turn, &mut ids)?);
        }
        Ok(Script { turns: parsed })
    }

    /// Every tool call of the script, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ScriptToolCall> {
        self.turns.iter().flat_map(|t| match &t.step {
            TurnStep::ToolCalls(calls) => calls.as_slice(),
            TurnStep::Text(_) => &[],
        })
    }
}

fn unknown_keys(map: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), ScriptError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(ScriptError(format!(
            "{what}: unknown key {key:?} (expected {})",
            known
                .iter()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(()),
    }
}

fn parse_turn(
    index: usize,
    turn: &Value,
    ids: &mut HashSet<String>,
) -> Result<ScriptTurn, ScriptError> {
    let who = format!("turn #{index}");
    let map = turn
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: expected an object")))?;
    unknown_keys(map, &["toolCalls", "text", "usage", "delayMs"], &who)?;
    let step = match (map.get("toolCalls"), map.get("text")) {
        (Some(calls), None) => {
            let calls = calls
                .as_array()
                .ok_or_else(|| ScriptError(format!("{who}: \"toolCalls\" must be an array")))?;
            if calls.is_empty() {
                return Err(ScriptError(format!("{who}: \"toolCalls\" is empty")));
            }
            let mut parsed = Vec::with_capacity(calls.len());
            for (n, call) in calls.iter().enumerate() {
                parsed.push(parse_call(&format!("{who} call #{n}"), call, ids)?);
            }
            TurnStep::ToolCalls(parsed)
        }
        (None, Some(Value::String(text))) => TurnStep::Text(text.clone()),
        (None, Some(_)) => return Err(ScriptError(format!("{who}: \"text\" must be a string"))),
        _ => {
            return Err(ScriptError(format!(
                "{who}: needs exactly one of \"toolCalls\" or \"text\""
            )))
        }
    };
    let usage = match map.get("usage") {
        None => None,
        Some(usage) => Some(parse_usage(&who, usage)?),
    };
    let delay = match map.get("delayMs") {
        None => Duration::ZERO,
        Some(v) => Duration::from_millis(v.as_u64().ok_or_else(|| {
            ScriptError(format!("{who}: \"delayMs\" must be a non-negative integer"))
        })?),
    };
    Ok(ScriptTurn { step, usage, delay })
}

fn parse_usage(who: &str, usage: &Value) -> Result<TokenUsage, ScriptError> {
    let map = usage
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: \"usage\" must be an object")))?;
    unknown_keys(
        map,
        &["input", "output", "cacheRead", "cacheWrite"],
        &format!("{who} usage"),
    )?;
    let count = |key: &str, required: bool| -> Result<u64, ScriptError> {
        match map.get(key) {
            None if !required => Ok(0),
            None => Err(ScriptError(format!("{who}: usage needs \"{key}\""))),
            Some(v) => v.as_u64().ok_or_else(|| {
                ScriptError(format!(
                    "{who}: usage \"{key}\" must be a non-negative integer"
                ))
            }),
        }
    };
    Ok(TokenUsage {
        input: count("input", true)?,
        output: count("output", true)?,
        cache_read: count("cacheRead", false)?,
        cache_write: count("cacheWrite", false)?,
    })
}

fn parse_call(
    who: &str,
    call: &Value,
    ids: &mut HashSet<String>,
) -> Result<ScriptToolCall, ScriptError> {
    let map = call
        .as_object()
        .ok_or_else(|| ScriptError(format!("{who}: expected an object")))?;
    unknown_keys(map, &["id", "name", "arguments", "abort"], who)?;
    let text = |key: &str| -> Result<String, ScriptError> {
        match map.get(key).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
            _ => Err(ScriptError(format!(
                "{who}: \"{key}\" must be a non-empty string"
            ))),
        }
    };
    let id = text("id")?;
    if id.contains('.') {
        return Err(ScriptError(format!(
            "{who}: id {id:?} must not contain '.' (it ends a $result: reference)"
        )));
    }
    if !ids.insert(id.clone()) {
        return Err(ScriptError(format!("{who}: duplicate call id {id:?}")));
    }
    let name = text("name")?;
    let abort = match map.get("abort") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ScriptError(format!("{who}: \"abort\" must be a boolean"))),
    };
    Ok(ScriptToolCall {
        id,
        name,
        arguments: map.get("arguments").cloned().unwrap_or_else(|| json!({})),
        abort,
    })
}

/// A `"$result:…"` reference that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The referenced call has not produced a result (it comes later, or does not exist).
    #[error("{reference:?}: call {call_id:?} has no result yet")]
    NoResult {
        /// The reference as written.
        reference: String,
        /// Its call id.
        call_id: String,
    },
    /// The result has nothing at the path.
    #[error("{reference:?}: the result of call {call_id:?} has no value at {path:?}")]
    NoValue {
        /// The reference as written.
        reference: String,
        /// Its call id.
        call_id: String,
        /// The dotted path.
        path: String,
    },
}

/// Replaces every string `"$result:<callId>.<dotted.path>"` anywhere in `value` (object values
/// and array items, at any depth) with the value at that path in the result of call `callId`
/// (`"$result:<callId>"` alone is the whole result). A path segment is an object key, or an
/// array index when the value there is an array. For `exec` and `wait` the result is the
/// code-mode result object (`runId`, `value`, …); for direct tools the tool result
/// (`{content, details}`, or `{error}` when it failed).
pub fn resolve_references(
    value: &Value,
    results: &HashMap<String, Value>,
) -> Result<Value, ReferenceError> {
    match value {
        Value::String(s) if s.starts_with(RESULT_REFERENCE_PREFIX) => {
            let rest = &s[RESULT_REFERENCE_PREFIX.len()..];
            let (call_id, path) = rest.split_once('.').unwrap_or((rest, ""));
            let result = results
                .get(call_id)
                .ok_or_else(|| ReferenceError::NoResult {
                    reference: s.clone(),
                    call_id: call_id.to_string(),
                })?;
            let mut at = result;
            if !path.is_empty() {
                for segment in path.split('.') {
                    let next = match at {
                        Value::Object(map) => map.get(segment),
                        Value::Array(items) => {
                            segment.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => None,
                    };
                    at = next.ok_or_else(|| ReferenceError::NoValue {
                        reference: s.clone(),
                        call_id: call_id.to_string(),
                        path: path.to_string(),
                    })?;
                }
            }
            Ok(at.clone())
        }
        Value::Array(items) => items
            .iter()
            .map(|v| resolve_references(v, results))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), resolve_references(v, results)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

// ---------------------------------------------------------------------------------------------
// Activation
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The provider payload and its fail-closed check
// ---------------------------------------------------------------------------------------------

/// The tool definitions a model would receive: `{"tools": [{name, description, parameters,
/// hideFromChannelProgress?}, …]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payload {
    /// The definitions, in payload order.
    pub tools: Vec<ToolDefinition>,
}

impl Payload {
    /// The tool names, in payload order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The definition of a tool exposed directly: its name, description and input schema (`{"type":
/// "object", "properties": {}}` when it declares none).
pub fn direct_tool_definition(spec: &ToolSpec) -> ToolDefinition {
    ToolDefinition {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        hide_from_channel_progress: None,
    }
}

/// Why an engaged run's payload failed the check of docs/contract/surface.md#s2-1; the run fails
/// closed with this message (code [`PayloadError::CODE`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// `exec` or `wait` does not appear exactly once.
    #[error("code mode payload check failed: the provider payload has {count} {name:?} tools (expected exactly one)")]
    ControlCount {
        /// `exec` or `wait`.
        name: &'static str,
        /// How many there are.
        count: usize,
    },
    /// A tool that is not an approved direct tool.
    #[error("code mode payload check failed: {name:?} is not an approved direct tool")]
    Unapproved {
        /// Its name.
        name: String,
    },
    /// A direct tool listed twice.
    #[error("code mode payload check failed: {name:?} appears more than once")]
    Duplicate {
        /// Its name.
        name: String,
    },
}

impl PayloadError {
    /// The error code of a failed payload check: `"payload_check_failed"`.
    pub const CODE: &'static str = "payload_check_failed";
}

/// The fail-closed payload check of an engaged run (docs/contract/surface.md#s2-1): exactly one
/// `exec`, exactly one `wait`, and every other tool an approved direct tool, each once. Checked
/// in this order; the first failure is returned.
pub fn check_payload(payload: &Payload, approved_direct: &[String]) -> Result<(), PayloadError> {
    for name in [EXEC_TOOL_NAME, WAIT_TOOL_NAME] {
        let count = payload.tools.iter().filter(|t| t.name == name).count();
        if count != 1 {
            return Err(PayloadError::ControlCount { name, count });
        }
    }
    let mut seen = HashSet::new();
    for tool in &payload.tools {
        if tool.name == EXEC_TOOL_NAME || tool.name == WAIT_TOOL_NAME {
            continue;
        }
        if !approved_direct.contains(&tool.name) {
            return Err(PayloadError::Unapproved {
                name: tool.name.clone(),
            });
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(PayloadError::Duplicate {
                name: tool.name.clone(),
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The turn
// ---------------------------------------------------------------------------------------------

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
        let mut runner = Runner {
            turn: &self,
            prepared: &prepared,
            code_mode: code_mode.as_deref(),
            pipeline,
            approvals,
            trajectory,
            results: HashMap::new(),
            run_counters: BTreeMap::new(),
            finished_counters: BridgeCounters::default(),
            summary: ToolSummary::default(),
        };
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
        let mut bridge = runner.finished_counters;
        for counters in runner.run_counters.values() {
            bridge += *counters;
        }
        let meta = RunMeta {
            agent_meta: AgentMeta::new(
                self.activation.decision.engaged,
                turns,
                bridge,
                usage.as_ref(),
                self.model_cost.as_ref(),
            ),
            tool_summary: runner.summary,
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

/// What [`AgentTurn::prepare`] built.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The provider payload.
    pub payload: Payload,
    /// The specs the policy allows (empty for a run without tools).
    pub specs: Vec<ToolSpec>,
    /// The run's catalog (code mode on) or a catalog of the direct tools (off; used for ids).
    pub catalog: Arc<Catalog>,
    /// The specs `catalog` was built from (its entries' `spec_index` points into this list).
    pub catalog_specs: Vec<ToolSpec>,
    /// `exec`, `wait` and the retained direct tools when engaged; empty otherwise.
    pub visible_tools: Vec<String>,
    /// Whether the fail-closed check ran.
    pub payload_check: PayloadCheck,
}

/// Whether the fail-closed payload check applied to the turn. JSON: `"passed"`, `"not_engaged"`
/// or `"no_tools"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadCheck {
    /// Code mode engaged and the payload passed.
    Passed,
    /// Code mode did not engage for a run with tools: normal exposure, no check.
    NotEngaged,
    /// The run has no tools (raw call, `disableTools`, empty allow list): no surface, no check.
    NoTools,
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

/// The state of a running turn.
struct Runner<'a> {
    turn: &'a AgentTurn,
    prepared: &'a Prepared,
    code_mode: Option<&'a CodeMode>,
    /// Direct calls go through this pipeline.
    pipeline: ToolPipeline,
    /// Answers approvals of direct and nested calls.
    approvals: Option<Arc<ApprovalBroker>>,
    trajectory: Trajectory,
    /// Results by call id, for `$result:` references.
    results: HashMap<String, Value>,
    /// The last bridge counters of each code-mode run, by run id.
    run_counters: BTreeMap<String, BridgeCounters>,
    /// Counters of runs that ended without ever parking.
    finished_counters: BridgeCounters,
    summary: ToolSummary,
}

/// The counters of a code-mode result's `telemetry`.
fn counters_of(result: &Value) -> BridgeCounters {
    let t = &result["telemetry"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    BridgeCounters {
        search: n("searchCount"),
        describe: n("describeCount"),
        call: n("callCount"),
    }
}

/// How a call was run: framed by the facade (`exec` / `wait`, which record their own
/// `tool_call` / `tool_result`) or by the runner (direct tools, refusals).
enum Dispatched {
    /// A code-mode result, already in the trajectory.
    Framed(Value),
    /// A direct call's `(status, result, error)`.
    Direct(ToolStatus, Value, Option<String>),
}

impl Runner<'_> {
    async fn call(&mut self, call: &ScriptToolCall) {
        let started = Instant::now();
        let engaged = self.code_mode.is_some();
        let kind = match call.name.as_str() {
            EXEC_TOOL_NAME if engaged => ToolKind::CodeModeExec,
            WAIT_TOOL_NAME if engaged => ToolKind::CodeModeWait,
            _ => ToolKind::Tool,
        };
        self.summary.record(&call.name);
        let dispatched = match resolve_references(&call.arguments, &self.results) {
            Ok(arguments) => self.dispatch(call, kind, arguments).await,
            Err(e) => Dispatched::Direct(
                ToolStatus::Failed,
                json!({"error": e.to_string()}),
                Some(e.to_string()),
            ),
        };
        let result = match dispatched {
            Dispatched::Framed(value) => value,
            Dispatched::Direct(status, result, error) => {
                let input = resolve_references(&call.arguments, &self.results)
                    .unwrap_or_else(|_| call.arguments.clone());
                let input_kind = (kind == ToolKind::CodeModeExec)
                    .then(|| ToolInputKind::of_exec_input(&input))
                    .flatten();
                self.trajectory.record(EventKind::ToolCall(ToolCallEvent {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    tool_kind: kind,
                    tool_input_kind: input_kind,
                    input,
                }));
                self.trajectory
                    .record(EventKind::ToolResult(ToolResultEvent {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        tool_kind: kind,
                        tool_input_kind: input_kind,
                        status,
                        code_mode_run_id: None,
                        duration_ms: started.elapsed().as_millis() as u64,
                        result: error.is_none().then(|| result.clone()),
                        error,
                    }));
                result
            }
        };
        self.results.insert(call.id.clone(), result);
    }

    /// Runs one call with its references resolved.
    async fn dispatch(
        &mut self,
        call: &ScriptToolCall,
        kind: ToolKind,
        arguments: Value,
    ) -> Dispatched {
        let failed = |error: String| {
            Dispatched::Direct(ToolStatus::Failed, json!({"error": error}), Some(error))
        };
        let abort = AbortHandle::new();
        if call.abort {
            abort.abort();
        }
        let scope = &self.turn.scope;
        if !self
            .prepared
            .payload
            .tools
            .iter()
            .any(|t| t.name == call.name)
        {
            return failed(format!(
                "tool {:?} is not in the provider payload",
                call.name
            ));
        }
        if let (Some(code_mode), ToolKind::CodeModeExec | ToolKind::CodeModeWait) =
            (self.code_mode, kind)
        {
            // The facade frames the call (outer hooks, `tool_call` / `tool_result`) and records
            // the run's own events into the same trajectory.
            let mut env = RunEnv::new(
                self.turn.activation.config.clone(),
                self.prepared.catalog.clone(),
                self.turn.executor.clone(),
                scope.clone(),
            )
            .with_policy(self.turn.activation.policy.clone())
            .with_hooks(self.turn.hooks.clone())
            .with_trajectory(self.trajectory.clone())
            .with_tool_call_id(call.id.clone());
            if let Some(broker) = &self.approvals {
                env = env.with_approvals(broker.clone());
            }
            env.visible_tools = self.prepared.visible_tools.clone();
            let result = if kind == ToolKind::CodeModeExec {
                code_mode.exec(&env, &arguments, &abort).await
            } else {
                code_mode.wait_with(&env, &arguments, &abort).await
            };
            let value = result.to_json();
            let counters = counters_of(&value);
            let run_id = match (kind, result.run_id()) {
                (_, Some(id)) => Some(id.to_string()),
                (ToolKind::CodeModeWait, None) => arguments
                    .get("runId")
                    .or_else(|| arguments.get("run_id"))
                    .and_then(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .filter(|id| self.run_counters.contains_key(id)),
                _ => None,
            };
            match &run_id {
                Some(id) => {
                    self.run_counters.insert(id.clone(), counters);
                }
                None => self.finished_counters += counters,
            }
            return Dispatched::Framed(value);
        }
        // A direct tool: through the pipeline with its catalog id.
        // The same filter the payload was built with: a denied or control spec sharing the name
        // of an offered tool is never what a direct call runs.
        let Some(index) = self
            .prepared
            .specs
            .iter()
            .position(|s| s.name == call.name && s.allowed && s.control.is_none())
        else {
            return failed(format!("tool {:?} has no executor", call.name));
        };
        let spec = &self.prepared.specs[index];
        let tool_id = self
            .prepared
            .catalog
            .entries()
            .iter()
            .find(|e| self.prepared.catalog_specs.get(e.spec_index()) == Some(spec))
            .map(|e| e.id().to_string())
            .unwrap_or_else(|| direct_only_id(spec));
        if abort.is_aborted() {
            return failed("the tool call was aborted".to_string());
        }
        let outcome = self
            .pipeline
            .call(ToolCall {
                tool_id,
                tool_name: spec.name.clone(),
                input: arguments,
                scope: scope.clone(),
                bridge_id: String::new(),
                tool_call_id: call.id.clone(),
                parent_tool_call_id: None,
                code_mode_run_id: None,
            })
            .await;
        match outcome {
            Ok(value) => Dispatched::Direct(ToolStatus::Completed, value, None),
            Err(error) => failed(error.to_string()),
        }
    }
}

/// The id a direct-only tool (never cataloged) is called under: what the catalog would assign
/// from its origin (`openclaw:core:<name>`, `openclaw:<plugin>:<name>`, `client:<owner>:<name>`,
/// `mcp:<server>:<name>`).
pub fn direct_only_id(spec: &ToolSpec) -> String {
    let mut probe = spec.clone();
    probe.catalog_mode = CatalogMode::Normal;
    probe.allowed = true;
    probe.control = None;
    Catalog::build(vec![probe], &SearchLimits::default())
        .ok()
        .and_then(|c| c.entries().first().map(|e| e.id().to_string()))
        .unwrap_or_else(|| format!("openclaw:core:{}", spec.name))
}
