//! The code-mode model surface: `exec` and `wait` (docs/contract/surface.md#s2-2, docs/contract/surface.md#s2-3, docs/contract/lifecycle.md#runs; docs/contract/lifecycle.md#s5).
//!
//! [`CodeMode`] is the per-process front: it owns the shared [`Runtime`](codemode_runtime::Runtime) and the in-process map
//! of parked runs. A host calls [`CodeMode::exec`] with a [`RunEnv`] (resolved config, run-scoped
//! catalog, tool executor, owner scope) and the model's `exec` arguments, and
//! [`CodeMode::wait`] with the caller's scope and the `wait` arguments. Both return a
//! [`CodeModeResult`]; nothing here panics or returns `Err` on model input (docs/contract/decisions.md#d1).
//!
//! One `exec` runs the cell in a fresh VM, dispatches its bridge requests concurrently to the
//! executor and feeds results back as they settle (auto-drain) until the program completes or
//! the deadline (`timeoutMs`) passes; then the run parks as a snapshot under `runId` while its
//! tool calls keep running, and `wait` resumes it.
//!
//! The crate root is an index. Modules, one job each, depending in one direction:
//!
//! - [`surface`]: the model surface (the `exec` / `wait` definitions and the visible tools);
//! - [`result`]: the result object of `exec` and `wait`;
//! - [`pipeline`]: the host half of every tool call (hooks, command hooks, approvals, the tool
//!   pipeline and the model-visible outer calls), over `result`;
//! - [`limits`] and [`messages`]: the facade's fixed error texts;
//! - `env` ([`RunEnv`]), `failure` (results of runs that never started), `prepare` (the source
//!   and the run context), `nodes`, `missing`, `dispatch` (one run's bridge requests), `run` (one
//!   run: legs, the settle loop, parking) and `code_mode` ([`CodeMode`]) on top.
//!
//! [`prelude`] is what an embedding host imports.

mod code_mode;
mod dispatch;
mod env;
mod failure;
pub mod limits;
pub mod messages;
mod missing;
mod nodes;
pub mod pipeline;
mod prepare;
pub mod result;
mod run;
pub mod surface;

pub use code_mode::{CodeMode, SharedTasks};
pub use env::RunEnv;
pub use failure::too_many_suspended;
pub use limits::LimitExceeded;
pub use nodes::NODES_TOOL_ID;
pub use pipeline::{
    ApprovalBroker, ApprovalDecision, ApprovalRequest, Approver, CallError, HookChain, ToolHook,
    ToolPipeline,
};
pub use result::{CodeModeResult, ErrorCode, PendingApproval, PendingToolCall, WaitReason};
pub use surface::{exec_tool, model_surface, surface_tools, wait_tool, Surface, ToolDefinition};

/// At most this many runs are parked per process (docs/contract/lifecycle.md#s5-4).
pub use codemode_snapshot::MAX_SUSPENDED_RUNS;

/// The crates an embedding host may need beyond [`prelude`], re-exported so that one
/// dependency on `codemode-facade` is enough.
pub use codemode_bridge as bridge;
/// See [`bridge`].
pub use codemode_catalog as catalog;
/// See [`bridge`].
pub use codemode_config as config;
/// See [`bridge`].
pub use codemode_runtime as runtime;
/// See [`bridge`].
pub use codemode_telemetry as telemetry;

/// The Rust blocks of README.md and docs/, compiled (and run, unless marked `no_run` or
/// `ignore` with the reason in the block) as doctests of this crate by `cargo test --workspace`,
/// so the snippets a reader copies keep compiling. Not part of the API.
#[cfg(doctest)]
pub mod doc_snippets {
    #[doc = include_str!("../../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../../docs/catalog.md")]
    pub struct Catalog;
    #[doc = include_str!("../../../docs/config.md")]
    pub struct Config;
    #[doc = include_str!("../../../docs/host.md")]
    pub struct Host;
    #[doc = include_str!("../../../docs/snapshot-store.md")]
    pub struct SnapshotStore;
    #[doc = include_str!("../../../docs/source-preparation.md")]
    pub struct SourcePreparation;
}

pub mod prelude {
    //! What a Rust host embedding code mode needs, in one import (`crates/codemode-facade/examples/
    //! embed.rs` is a complete program):
    //!
    //! - [`CodeMode`] runs `exec` / `wait` and keeps parked runs; [`CodeModeResult`] is their answer;
    //! - [`RunEnv`] is one run's environment (config, catalog, [`ToolExecutor`], owner scope);
    //! - [`ToolExecutor`] (with [`ToolCall`], [`ToolFuture`], [`ToolError`]) runs the nested tool
    //!   calls;
    //! - [`AbortHandle`] cancels a run;
    //! - [`ToolSpec`] and [`Catalog::build`] (with [`SearchLimits`]) build the catalog;
    //! - [`CodeModeConfig`] (or [`resolve_config`] from the spec's JSON shape) is `tools.codeMode`;
    //! - [`surface_tools`] gives the `exec` and `wait` definitions to show the model.
    //!
    //! ```
    //! use codemode_facade::prelude::*;
    //!
    //! let catalog = Catalog::build(
    //!     vec![ToolSpec::core("weather", "Current weather for a city.")],
    //!     &SearchLimits::default(),
    //! )
    //! .unwrap();
    //! let [exec, wait] = surface_tools(&catalog);
    //! assert!(exec.description.contains("\"openclaw:core:weather\""));
    //! assert_eq!(wait.name, "wait");
    //! let config = resolve_config(&serde_json::json!({"timeoutMs": 5000})).config;
    //! assert_eq!(config.timeout_ms(), 5000);
    //! ```

    pub use crate::code_mode::CodeMode;
    pub use crate::env::RunEnv;
    pub use crate::pipeline::{ApprovalBroker, ApprovalDecision, HookChain};
    pub use crate::result::{CodeModeResult, ErrorCode};
    pub use crate::surface::{surface_tools, ToolDefinition};
    pub use codemode_bridge::{RunScope, ToolCall, ToolError, ToolExecutor, ToolFuture};
    pub use codemode_catalog::{Catalog, CatalogMode, SearchLimits, ToolOrigin, ToolSpec};
    pub use codemode_config::{resolve as resolve_config, CodeModeConfig, ToolPolicy};
    pub use codemode_runtime::AbortHandle;
}
