//! The simplest [`EnvSource`]: one config, catalog and executor for every session, as an embedding
//! host that serves a fixed tool set needs (and the server tests use).

use std::sync::Arc;

use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::Catalog;
use codemode_config::CodeModeConfig;
use codemode_facade::RunEnv;

use crate::server::EnvSource;

/// An [`EnvSource`] that gives every call `RunEnv::new(config, catalog, executor, scope)`: code
/// mode always on, no tool source ever unavailable.
pub struct FixedSource {
    /// The resolved `tools.codeMode` config of every run.
    pub config: CodeModeConfig,
    /// The catalog every run sees.
    pub catalog: Arc<Catalog>,
    /// What runs the catalog's tools.
    pub executor: Arc<dyn ToolExecutor>,
}

impl EnvSource for FixedSource {
    fn run_env(&self, scope: RunScope) -> Option<RunEnv> {
        Some(RunEnv::new(
            self.config.clone(),
            self.catalog.clone(),
            self.executor.clone(),
            scope,
        ))
    }
}
