//! What `codemode exec`, `session` and `serve` share: the host options (tools, workspace root,
//! MCP servers, config, agent, timeout, trajectory) and the [`Host`] that builds each run's
//! environment.
//!
//! The host half of every nested call (docs/contract/host.md#h1 to #h4) is set up here once per
//! command: the config's tool policy filters every tool spec (built-in, `--tools`, MCP) before
//! the catalog is built, so denied tools are absent from `ALL_TOOLS`, the quick index, `MCP` and
//! the `.d.ts` files (an empty `allow` gives an empty catalog: docs/contract/host.md#h9); the
//! config's command hooks become a [`HookChain`]; `--trajectory FILE` opens the trajectory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_config::{CodeModeConfig, ConfigReport, Enabled, ToolPolicy};
use codemode_facade::{ApprovalBroker, HookChain, RunEnv};
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig};
use codemode_telemetry::{FanOut, JsonLinesSink, TracingSink, Trajectory};
use serde_json::{json, Value};

use crate::output::Failure;
use crate::{progress, static_tools, tools};

/// Options that decide the tools, config and scope of the runs.
#[derive(Args)]
pub(crate) struct HostArgs {
    /// JSON array of static tools to run against instead of the built-in workspace tools:
    /// {name, description?, parameters?, outputSchema?, origin?, result | error | echo, delayMs?}.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Workspace root the built-in read/list/grep tools may read (`exec` and `session` default
    /// to the current directory; `serve` has no built-in tools without it).
    #[arg(long, value_name = "DIR", conflicts_with = "tools")]
    pub root: Option<PathBuf>,
    /// MCP servers to aggregate, in the {"mcpServers": {name: {command, args, env} | {url,
    /// headers}}} format of Claude Desktop and Cursor. Their tools are reachable as
    /// MCP.SERVER.TOOL({...}).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Budget of one request to an MCP server, in ms (at least 100).
    #[arg(long, value_name = "N", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub mcp_timeout_ms: u64,
    /// Budget for connecting to an MCP server and listing its tools, in ms (at least 100); a
    /// server's own `connectTimeoutMs` wins. Long by default because `npx -y` downloads the
    /// package on first use; a server that fails (exits, refuses) fails at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MCP_CONNECT_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(100..))]
    pub mcp_connect_timeout_ms: u64,
    /// The cell's timeoutMs: budget of each exec/wait call in ms (clamped to 100-60000).
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
    /// Config file in the spec's shape: {"tools": {"codeMode": …}, "agents": {"list": […]}}.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Agent id whose per-agent override applies; also the owner of the runs.
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Write the trajectory (every exec/wait, nested tool call, approval and park, redacted) to
    /// FILE as JSON lines; the file is created with mode 0600 or truncated.
    #[arg(long, value_name = "FILE")]
    pub trajectory: Option<PathBuf>,
}

/// `--mcp-connect-timeout-ms`'s default: 180 s, room for a first `npx -y` download on a slow
/// machine (docs/mcp.md, "Servers that are not connected").
pub(crate) const DEFAULT_MCP_CONNECT_TIMEOUT_MS: u64 = 180_000;

/// Loads a config file (JSON or JSON5), or without one the spec's defaults, the config `{}`:
/// `enabled` is then `"auto"` (docs/contract/decisions.md#d8), exactly what `--config` with `{}`
/// gives. The CLI runs code mode for every `enabled` but `false`: a command line has no model
/// whose preference `"auto"` would wait for.
pub(crate) fn load_config(
    path: Option<&Path>,
    agent: Option<&str>,
) -> Result<ConfigReport, Failure> {
    match path {
        Some(path) => codemode_config::load_config_file(path, agent)
            .map_err(|e| Failure::Usage(e.to_string())),
        None => Ok(ConfigReport::from_root(&json!({}), agent)),
    }
}

/// The result every `exec` and `wait` gets when the resolved config disables code mode.
pub(crate) fn disabled_result() -> Value {
    json!({"status": "failed", "error": "code mode is disabled.", "code": "invalid_input"})
}

/// The tools and config of a command: builds a [`RunEnv`] per run, so MCP servers whose tool
/// list changed (`notifications/tools/list_changed`) are seen by the next `exec`.
pub(crate) struct Host {
    config: CodeModeConfig,
    limits: SearchLimits,
    /// The built-in or `--tools` specs the policy allows.
    base_specs: Vec<ToolSpec>,
    /// `exec`, `wait` and the direct-only tools of `base_specs`: what a model driving these
    /// commands sees (telemetry `visibleTools`, docs/contract/decisions.md#d3).
    visible_tools: Vec<String>,
    executor: Arc<dyn ToolExecutor>,
    /// The config's tool policy (tools.allow / deny / approvals.require, for `--agent`).
    policy: ToolPolicy,
    /// The config's command hooks.
    hooks: HookChain,
    /// Where runs record their trajectory (disabled without `--trajectory` or tracing at INFO).
    trajectory: Trajectory,
    /// Who answers approvals; `None`: every approval is denied (or the caller adds its own).
    approvals: Option<Arc<ApprovalBroker>>,
    /// The connected MCP servers, when `--mcp-config` was given.
    pub hub: Option<McpHub>,
    /// Where the MCP servers' elicitation and sampling requests go (`serve`: the upstream
    /// client, see `codemode_mcp::forward`).
    pub forward: Arc<codemode_mcp::forward::Forwarder>,
    agent: Option<String>,
    /// The catalog of the last run, by MCP generation (catalogs are only rebuilt on change).
    cache: Mutex<Option<(u64, Arc<Catalog>)>>,
}

/// Builds the host: resolved config (with `--timeout-ms` applied; warnings, `hostWarnings`
/// included, go to stderr), its tool policy and hooks, static tools from `--tools` or the
/// workspace tools under `--root` (or the current directory when `builtins_by_default`) that the
/// policy allows, the MCP servers of `--mcp-config`, connected on `runtime` (servers that fail
/// are reported on stderr and left out), and the `--trajectory` file. `Ok(None)` when the config
/// disables code mode.
pub(crate) fn host(
    args: &HostArgs,
    runtime: &tokio::runtime::Runtime,
    builtins_by_default: bool,
) -> Result<Option<Host>, Failure> {
    build(args, runtime, builtins_by_default, true, false, false)
}

/// [`host`]; with `mcp_in_background` the MCP servers connect in the background instead
/// (`serve`: `initialize` is answered at once), and their failures reach stderr once every
/// first attempt has ended. Unlike [`host`] it builds the host even when the config disables
/// code mode (`Host::config` then says so): `serve` then serves the MCP servers' tools directly
/// (docs/mcp.md, "Code mode off").
pub(crate) fn host_with(
    args: &HostArgs,
    runtime: &tokio::runtime::Runtime,
    builtins_by_default: bool,
    mcp_in_background: bool,
) -> Result<Option<Host>, Failure> {
    build(
        args,
        runtime,
        builtins_by_default,
        true,
        mcp_in_background,
        true,
    )
}

/// The host of `codemode catalog`: like [`host`] with the built-in tools by default, except
/// that `--tools FILE` is read as a catalog only ([`codemode_catalog::cli::parse_tools_file`]:
/// the static tools' behaviour keys are accepted and ignored, and a file without them is fine),
/// since no call runs.
pub(crate) fn catalog_host(
    args: &HostArgs,
    runtime: &tokio::runtime::Runtime,
) -> Result<Option<Host>, Failure> {
    build(args, runtime, true, false, false, false)
}

/// [`host`] and [`catalog_host`]: `runs_calls` false reads `--tools` without behaviours;
/// `mcp_in_background` as in [`host_with`]; `keep_disabled` builds the host even when the config
/// disables code mode (else that is `Ok(None)`).
fn build(
    args: &HostArgs,
    runtime: &tokio::runtime::Runtime,
    builtins_by_default: bool,
    runs_calls: bool,
    mcp_in_background: bool,
    keep_disabled: bool,
) -> Result<Option<Host>, Failure> {
    let mut report = load_config(args.config.as_deref(), args.agent.as_deref())?;
    for warning in report.warnings.iter().chain(&report.host_warnings) {
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
    if report.config.enabled() == Enabled::Off && !keep_disabled {
        return Ok(None);
    }
    let mcp_config = args
        .mcp_config
        .as_deref()
        .map(McpServersConfig::load)
        .transpose()
        .map_err(|e| Failure::Usage(format!("--mcp-config {e}")))?;

    let limits = report.config.search_limits();
    let (base_specs, base_executor): (Vec<ToolSpec>, Option<Arc<dyn ToolExecutor>>) =
        match (&args.tools, &args.root) {
            (Some(path), _) if !runs_calls => {
                let text = crate::operator_files::read_operator_file(path)
                    .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
                let specs = codemode_catalog::cli::parse_tools_file(&text)
                    .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
                (specs, None)
            }
            (Some(path), _) => {
                let text = crate::operator_files::read_operator_file(path)
                    .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
                let (specs, executor) = static_tools::StaticTools::load_specs(&text, &limits)
                    .map_err(|e| Failure::Usage(format!("--tools {}: {e}", path.display())))?;
                (specs, Some(Arc::new(executor)))
            }
            (None, root) if root.is_some() || builtins_by_default => {
                let root = root.clone().unwrap_or_else(|| PathBuf::from("."));
                let executor = tools::WorkspaceTools::new(&root)
                    .map_err(|e| Failure::Usage(format!("--root {}: {e}", root.display())))?;
                (tools::specs(), Some(Arc::new(executor)))
            }
            (None, _) => (Vec::new(), None),
        };
    let base_specs = allowed_specs(base_specs, &report.tool_policy, &limits)?;
    let trajectory = trajectory(args.trajectory.as_deref(), args.agent.as_deref())?;
    let forward = codemode_mcp::forward::Forwarder::new();
    let hub = mcp_config.map(|config| {
        let defaults = ClientOptions::default();
        let call_timeout = Duration::from_millis(args.mcp_timeout_ms);
        let options = ClientOptions {
            call_timeout,
            connect_timeout: Duration::from_millis(args.mcp_connect_timeout_ms),
            ..defaults
        };
        let names: Vec<&str> = config.servers.keys().map(String::as_str).collect();
        tracing::info!(
            "connecting to {} MCP server(s): {}",
            names.len(),
            names.join(", ")
        );
        let report = |hub: &McpHub| {
            for status in hub.status() {
                match &status.error {
                    None => tracing::info!(
                        "MCP server {}: connected, {} tool(s)",
                        status.name,
                        status.tools
                    ),
                    Some(_) => tracing::info!("MCP server {}: not connected", status.name),
                }
                if let Some(error) = &status.error {
                    eprintln!("codemode: {error}");
                }
                for warning in &status.warnings {
                    eprintln!("codemode: {warning}");
                }
            }
        };
        if mcp_in_background {
            let hub = {
                let _entered = runtime.enter();
                McpHub::start_forwarding(&config, options, forward.clone())
            };
            let budget = hub.connect_budget();
            let watched = hub.clone();
            runtime.spawn(async move {
                watched.settle(budget).await;
                report(&watched);
            });
            hub
        } else {
            let status = progress::Status::start(format!(
                "connecting to MCP server(s) {}",
                names.join(", ")
            ));
            let hub = runtime.block_on(McpHub::connect(&config, options));
            status.finish();
            report(&hub);
            hub
        }
    });
    let executor: Arc<dyn ToolExecutor> = match (&hub, base_executor) {
        (Some(hub), fallback) => Arc::new(hub.executor(fallback)),
        (None, Some(executor)) => executor,
        (None, None) => Arc::new(crate::tools::NoTools),
    };
    let visible_tools = codemode_facade::model_surface(base_specs.clone(), &[]).visible_tools;
    let host = Host {
        config: report.config,
        limits,
        base_specs,
        visible_tools,
        executor,
        policy: report.tool_policy,
        hooks: HookChain::from_config(&report.hooks),
        trajectory,
        approvals: None,
        hub,
        forward,
        agent: args.agent.clone(),
        cache: Mutex::new(None),
    };
    let catalog = host.catalog()?; // report a catalog that cannot be built now, not at the first exec
    let counts = catalog.source_counts();
    tracing::info!(
        "catalog: {} tool(s) ({} core/plugin, {} MCP, {} client)",
        catalog.len(),
        counts.openclaw,
        counts.mcp,
        counts.client
    );
    Ok(Some(host))
}

/// The specs of `specs` that `policy` allows (docs/contract/host.md#h1), checked by name and by the
/// catalog id each would get. Fails like the catalog does (duplicate ids, blank names).
pub(crate) fn allowed_specs(
    specs: Vec<ToolSpec>,
    policy: &ToolPolicy,
    limits: &SearchLimits,
) -> Result<Vec<ToolSpec>, Failure> {
    if policy.is_default() {
        return Ok(specs);
    }
    // The ids are the catalog's to assign: build it once to learn them.
    let catalog = Catalog::build(specs.clone(), limits)
        .map_err(|e| Failure::Usage(format!("catalog: {e}")))?;
    let mut ids: Vec<Option<&str>> = vec![None; specs.len()];
    for entry in catalog.entries() {
        ids[entry.spec_index()] = Some(entry.id());
    }
    Ok(specs
        .into_iter()
        .zip(ids)
        // A spec the catalog leaves out (direct-only) is judged under the id it is called with.
        .filter(|(spec, id)| match id {
            Some(id) => policy.allows(&spec.name, id),
            None => policy.allows(&spec.name, &codemode_agent::direct_only_id(spec)),
        })
        .map(|(spec, _)| spec)
        .collect())
}

/// The trajectory of the runs: with `--trajectory FILE`, that file (created 0600 or truncated)
/// fanned out with a [`TracingSink`] (its events show with
/// `CODEMODE_LOG=codemode::trajectory=info`);
/// otherwise the [`TracingSink`] alone when `CODEMODE_LOG` enables INFO for
/// `codemode::trajectory`, else disabled (no events are built).
fn trajectory(path: Option<&Path>, agent: Option<&str>) -> Result<Trajectory, Failure> {
    let scope = RunScope {
        agent_id: agent.map(str::to_string),
        ..RunScope::default()
    };
    let Some(path) = path else {
        let tracing_on = tracing::enabled!(
            target: codemode_telemetry::TRACING_TARGET,
            tracing::Level::INFO
        );
        return Ok(if tracing_on {
            Trajectory::new(Arc::new(TracingSink::new()), scope)
        } else {
            Trajectory::disabled()
        });
    };
    let file = JsonLinesSink::create(path)
        .map_err(|e| Failure::Usage(format!("--trajectory {}: {e}", path.display())))?;
    let sinks: Vec<Arc<dyn codemode_telemetry::TrajectorySink>> =
        vec![Arc::new(file), Arc::new(TracingSink::new())];
    Ok(Trajectory::new(Arc::new(FanOut::new(sinks)), scope))
}

impl Host {
    /// The catalog: the static or built-in tools plus the MCP servers' current entries, rebuilt
    /// only when an MCP server's tool list changed.
    pub(crate) fn catalog(&self) -> Result<Arc<Catalog>, Failure> {
        if let Some(hub) = &self.hub {
            hub.retry_failed();
        }
        let generation = self.hub.as_ref().map_or(0, McpHub::generation);
        // Servers still connecting or failed: `MCP.<server>` says so (docs/mcp.md, "Servers that
        // are not connected"); a catalog with one is rebuilt per run, so its time is current.
        let offline = self.hub.as_ref().map(McpHub::offline).unwrap_or_default();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, catalog)) = cache.as_ref() {
            if *seen == generation && offline.is_empty() && catalog.offline_mcp_servers().is_empty()
            {
                return Ok(catalog.clone());
            }
        }
        let specs = self.specs();
        let catalog = Arc::new(
            Catalog::build(specs, &self.limits)
                .map_err(|e| Failure::Usage(format!("catalog: {e}")))?
                .with_offline_mcp_servers(offline),
        );
        *cache = Some((generation, catalog.clone()));
        Ok(catalog)
    }

    /// The tools the catalog is built from, in the same order: the static or built-in tools,
    /// then the MCP servers' current entries (the policy applied to both).
    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.base_specs.clone();
        if let Some(hub) = &self.hub {
            specs.extend(hub.specs_allowed(&self.policy));
        }
        specs
    }

    /// The environment of one `exec` or `wait`: current catalog, executor, the config's policy
    /// and hooks, the approvals broker (when set), the trajectory, `scope` owned by `--agent`,
    /// and the visible tools (`exec`, `wait` and the tools file's direct-only tools).
    pub(crate) fn run_env(&self, scope: RunScope) -> Result<RunEnv, Failure> {
        let scope = RunScope {
            agent_id: self.agent.clone().or(scope.agent_id),
            ..scope
        };
        let mut env = RunEnv::new(
            self.config.clone(),
            self.catalog()?,
            self.executor.clone(),
            scope,
        )
        .with_policy(self.policy.clone())
        .with_hooks(self.hooks.clone())
        .with_trajectory(self.trajectory.clone());
        env.visible_tools = self.visible_tools.clone();
        Ok(match &self.approvals {
            Some(broker) => env.with_approvals(broker.clone()),
            None => env,
        })
    }

    /// Lets `broker` answer the approvals of every later run.
    pub(crate) fn set_approvals(&mut self, broker: Arc<ApprovalBroker>) {
        self.approvals = Some(broker);
    }

    /// The config's policy, hooks and the trajectory, as `serve` applies them to the calls it
    /// makes itself (code mode off: docs/mcp.md, "Code mode off").
    pub(crate) fn serve_host(&self) -> codemode_mcp::ServeHost {
        codemode_mcp::ServeHost::new()
            .with_policy(self.policy.clone())
            .with_hooks(self.hooks.clone())
            .with_trajectory(self.trajectory.clone())
    }

    /// The resolved config.
    pub(crate) fn config(&self) -> &CodeModeConfig {
        &self.config
    }

    /// Closes the MCP connections (children exit).
    pub(crate) fn shutdown(&self, runtime: &tokio::runtime::Runtime) {
        if let Some(hub) = &self.hub {
            runtime.block_on(hub.shutdown());
        }
    }
}

/// The multi-threaded async runtime the runs and their tool calls use.
pub(crate) fn async_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(format!("cannot start the async runtime: {e}")))
}
