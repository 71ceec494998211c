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
//! use codemode_agent::{resolve_references, Script};
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
//!
//! Modules, one job each, depending in one direction: `script` (the scripted model),
//! `reference` (`$result:` references), `activation`, `payload` (the provider payload and its
//! fail-closed check), `runner` (one call at a time) and `turn` (the turn end to end).

mod activation;
mod payload;
mod reference;
mod runner;
mod script;
mod turn;

pub use activation::{model_cost, resolve_activation, Activation, TurnFlags};
pub use payload::{
    check_payload, direct_only_id, direct_tool_definition, Payload, PayloadCheck, PayloadError,
    Prepared,
};
pub use reference::{resolve_references, ReferenceError, RESULT_REFERENCE_PREFIX};
pub use script::{Script, ScriptError, ScriptToolCall, ScriptTurn, TurnStep};
pub use turn::{ActivationReport, AgentEnvelope, AgentError, AgentTurn, RuntimeStats};
