//! What `codemode exec` and `codemode session` share: the host options (tools, workspace root,
//! config, agent, timeout) and the run environment built from them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::{Catalog, SearchLimits};
use codemode_config::{ConfigReport, Enabled};
use codemode_facade::RunEnv;
use serde_json::{json, Value};

use crate::{static_tools, tools, Failure};

/// Options that decide the tools, config and scope of the runs.
#[derive(Args)]
pub struct HostArgs {
    /// JSON array of static tools to run against instead of the built-in workspace tools:
    /// {name, description?, parameters?, outputSchema?, origin?, result | error | echo, delayMs?}.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Workspace root the built-in tools may read (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "tools")]
    pub root: Option<PathBuf>,
    /// The cell's timeoutMs: budget of each exec/wait call in ms (clamped to 100-60000).
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// Config file in the spec's shape: {"tools": {"codeMode": …}, "agents": {"list": […]}}.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Agent id whose per-agent override applies; also the owner of the runs.
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
}

/// Loads a config file (JSON or JSON5), or the default `{"tools": {"codeMode": true}}`.
pub fn load_config(path: Option<&Path>, agent: Option<&str>) -> Result<ConfigReport, Failure> {
    match path {
        Some(path) => codemode_config::load_config_file(path, agent)
            .map_err(|e| Failure::Usage(e.to_string())),
        None => Ok(ConfigReport::from_root(
            &json!({"tools": {"codeMode": true}}),
            agent,
        )),
    }
}

/// The result every `exec` and `wait` gets when the resolved config disables code mode.
pub fn disabled_result() -> Value {
    json!({"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"})
}

/// Builds the run environment: resolved config (with `--timeout-ms` applied; warnings go to
/// stderr), catalog and executor (static tools from `--tools`, else the workspace tools under
/// `--root`) and the owner scope (`--agent`). `Ok(None)` when the config disables code mode.
pub fn run_env(args: &HostArgs) -> Result<Option<RunEnv>, Failure> {
    let mut report = load_config(args.config.as_deref(), args.agent.as_deref())?;
    for warning in &report.warnings {
        eprintln!("codemode: config: {}", warning.message);
    }
    if let Some(ms) = args.timeout_ms {
        let mut value = serde_json::to_value(&report.config).unwrap_or(Value::Null);
        value["timeoutMs"] = json!(ms);
        let resolved = codemode_config::resolve(&value);
        for warning in &resolved.warnings {
            eprintln!("codemode: --timeout-ms: {}", warning.message);
        }
        report.config = resolved.config;
    }
    if report.config.enabled == Enabled::Off {
        return Ok(None);
    }

    let limits = SearchLimits {
        max_search_limit: report.config.max_search_limit as u32,
        search_default_limit: report.config.search_default_limit as u32,
    };
    let (catalog, executor): (Catalog, Arc<dyn ToolExecutor>) = match &args.tools {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
            let (catalog, executor) = static_tools::StaticTools::load(&text, &limits)
                .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
            (catalog, Arc::new(executor))
        }
        None => {
            let root = args.root.clone().unwrap_or_else(|| PathBuf::from("."));
            let executor = tools::WorkspaceTools::new(&root)
                .map_err(|e| Failure::Usage(format!("--root {}: {e}", root.display())))?;
            let catalog = Catalog::build(tools::specs(), &limits)
                .map_err(|e| Failure::Run(format!("catalog: {e}")))?;
            (catalog, Arc::new(executor))
        }
    };
    let scope = RunScope {
        agent_id: args.agent.clone(),
        ..RunScope::default()
    };
    Ok(Some(RunEnv::new(
        report.config,
        Arc::new(catalog),
        executor,
        scope,
    )))
}

/// The multi-threaded async runtime the runs and their tool calls use.
pub fn async_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(format!("cannot start the async runtime: {e}")))
}
