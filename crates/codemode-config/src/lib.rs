//! The `tools.codeMode` contract, with no dependency on the runtime, so agent runtimes can
//! resolve configuration and decide activation without loading wasmtime. Reference:
//! `docs/config.md`; sources: docs/contract/config.md#configuration, docs/contract/config.md#auto,
//! docs/contract/config.md#activation, and docs/contract/config.md#s1.
//!
//! - [`resolve`] turns one `tools.codeMode` value into a [`CodeModeConfig`] plus [`Warning`]s for
//!   every value that was ignored or clamped; [`CodeModeConfig::default`] is the absent config.
//! - [`resolve_for_agent`] resolves a whole config (`{"tools": {"codeMode": …}, "agents":
//!   {"list": […]}}`) for one agent, merging the agent's override over the global value.
//! - [`load_config_file`] reads such a file (JSON or JSON5) into a serialisable [`ConfigReport`].
//! - [`decide`] makes the per-run activation decision from `enabled`, the run's tools and the
//!   model's tier in the catalog that served the run ([`ProviderCatalogs`]).
//! - [`RuntimeUnavailable`] and [`ActivationDecision::load_runtime`] are the fail-closed contract.
//! - [`resolve_policy`] gives the run's [`ToolPolicy`] (`tools.allow` / `deny` /
//!   `approvals.require`, per agent) and [`resolve_hooks`] the command hooks ([`HookConfig`]), each
//!   with [`Warning`]s (docs/contract/host.md#h1 to #h3; `docs/docs/contract/host.md).
//!
//! ```
//! use codemode_config::{decide, resolve, Enabled, RunContext, ProviderCatalogs};
//! use serde_json::json;
//!
//! let resolved = resolve(&json!({"timeoutMs": 90000, "languages": ["typescript"]}));
//! assert_eq!(resolved.config.timeout_ms(), 60000);
//! assert_eq!(resolved.config.enabled(), Enabled::Auto);
//! assert_eq!(resolved.warnings[0].path, "tools.codeMode.timeoutMs");
//!
//! let run = RunContext {
//!     model: ProviderCatalogs::bundled().support("anthropic", "claude-opus-5"),
//!     ..RunContext::default()
//! };
//! assert!(decide(resolved.config.enabled(), &run).engaged);
//! ```

#![warn(missing_docs)]

mod activation;
mod agents;
mod catalog;
mod config;
mod fail_closed;
mod hooks;
mod load;
mod policy;
mod resolution;
mod warning;

pub use activation::{decide, ActivationDecision, ActivationReason, RunContext, RunTools};
pub use agents::resolve_for_agent;
pub use catalog::{
    weights_name, CatalogModel, CatalogProblem, CodeModeTier, ModelCompat, ModelSupport,
    ProviderCatalog, ProviderCatalogs, RowRef, SharedModelGroup, BUNDLED_CATALOGS_JSON,
};
pub use config::{
    CodeModeConfig, Enabled, GuestRuntime, Language, Mode, NumericField, DEFAULT_LANGUAGES,
    FIELD_NAMES, MAX_OUTPUT_BYTES, MAX_PENDING_TOOL_CALLS, MAX_SEARCH_LIMIT, MAX_SNAPSHOT_BYTES,
    MEMORY_LIMIT_BYTES, NUMERIC_FIELDS, SEARCH_DEFAULT_LIMIT, SNAPSHOT_TTL_SECONDS, TIMEOUT_MS,
};
pub use fail_closed::{RuntimeUnavailable, ToolSurface};
pub use hooks::{
    resolve_hooks, HookConfig, HookSpec, ResolvedHooks, DEFAULT_HOOK_TIMEOUT_MS,
    MAX_HOOK_TIMEOUT_MS, MIN_HOOK_TIMEOUT_MS,
};
pub use load::{load_config_file, load_config_value, parse_config_text, ConfigReport, LoadError};
pub use policy::{resolve_policy, ApprovalPolicy, ResolvedPolicy, ToolPattern, ToolPolicy};
pub use resolution::{resolve, Resolved};
pub use warning::{Warning, WarningKind};
