//! `codemode agent --script FILE …`: one agent turn with a scripted model
//! (docs/contract/host.md#h6), over [`codemode_agent::AgentTurn`].
//!
//! The turn resolves activation from `--config` (default `{}`: `tools.codeMode` is `"auto"`),
//! `--agent`, `--model provider/model` and `--provider-catalog FILE` (default: the bundled
//! catalogs), builds the provider payload over the tools of `--tools FILE` (static tools) and
//! `--mcp-config FILE` (MCP servers), enforces the fail-closed payload check, runs the script's
//! calls and prints one JSON envelope on stdout. `--trajectory FILE` also writes the trajectory
//! as JSON lines and puts it in the envelope.
//!
//! Exit status: 0 when the turn ran (whatever its calls returned), 1 when it failed closed
//! (`runtime_unavailable`, `payload_check_failed`; a `{"status": "failed", "code", "error"}`
//! object is printed instead of the envelope), 2 for bad usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use codemode_agent::{model_cost, resolve_activation, AgentTurn, Script, TurnFlags};
use codemode_bridge::{RunScope, ToolExecutor};
use codemode_catalog::{SearchLimits, ToolSpec};
use codemode_config::ProviderCatalogs;
use codemode_facade::pipeline::{ApprovalDecision, FixedApprover, HookChain};
use codemode_facade::CodeMode;
use codemode_mcp::{ClientOptions, McpHub, McpServersConfig};
use codemode_telemetry::JsonLinesSink;
use serde_json::Value;

use crate::output::{print_line, Failure};
use crate::{host, static_tools};

/// `codemode agent` options.
#[derive(Args)]
pub(crate) struct AgentArgs {
    /// The scripted model: {"turns": [{"toolCalls": [{id, name, arguments}]} | {"text": "…"}]},
    /// each turn with optional "usage" and "delayMs".
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Config file (JSON or JSON5): tools.codeMode, tools.allow / deny, agents.list, hooks.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Agent id whose per-agent overrides apply; also the owner of the runs.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// The run's model, provider/model (its compat.codeMode tier decides "auto").
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
    /// Provider catalogs {"catalogs": [{provider, models: [{id, compat?, cost?}]}]} instead of
    /// the bundled ones.
    #[arg(long, value_name = "FILE")]
    provider_catalog: Option<PathBuf>,
    /// Static tools (the `exec --tools` format; "catalogMode": "direct-only" keeps one visible).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// MCP servers ({"mcpServers": {…}}).
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// Write the trajectory to FILE as JSON lines (and include it in the envelope).
    #[arg(long, value_name = "FILE")]
    trajectory: Option<PathBuf>,
    /// A required direct tool: visible and cataloged when code mode is on (repeatable).
    #[arg(long = "direct", value_name = "NAME")]
    direct: Vec<String>,
    /// Start the run with disableTools: true (no tools; code mode never engages).
    #[arg(long)]
    disable_tools: bool,
    /// Answer every approval: all (allow) or none (deny, the default).
    #[arg(long, value_name = "all|none", default_value = "none")]
    approve: String,
    /// Pretty-print the envelope.
    #[arg(long)]
    pretty: bool,
}

/// Runs `codemode agent`.
pub(crate) fn run(args: AgentArgs) -> Result<ExitCode, Failure> {
    let usage = |e: String| Failure::Usage(e);
    let script_text = crate::operator_files::read_operator_file(&args.script)
        .map_err(|e| usage(format!("--script {}: {e}", args.script.display())))?;
    let script = Script::from_json(&script_text)
        .map_err(|e| usage(format!("--script {}: {e}", args.script.display())))?;
    let root = match &args.config {
        Some(path) => codemode_config::load_config_value(path).map_err(|e| usage(e.to_string()))?,
        None => serde_json::json!({}),
    };
    let (catalogs, catalogs_json) = match &args.provider_catalog {
        Some(path) => {
            let text = crate::operator_files::read_operator_file(path)
                .map_err(|e| usage(format!("--provider-catalog {}: {e}", path.display())))?;
            let catalogs = ProviderCatalogs::from_json(&text)
                .map_err(|e| usage(format!("--provider-catalog {}: {e}", path.display())))?;
            let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            (catalogs, value)
        }
        None => (
            ProviderCatalogs::bundled().clone(),
            serde_json::from_str(codemode_config::BUNDLED_CATALOGS_JSON).unwrap_or(Value::Null),
        ),
    };
    if let Some(model) = &args.model {
        if model
            .split_once('/')
            .is_none_or(|(p, m)| p.is_empty() || m.is_empty())
        {
            return Err(usage(format!("--model {model:?}: expected provider/model")));
        }
    }
    let approver = match args.approve.as_str() {
        "all" => ApprovalDecision::allow(),
        "none" => ApprovalDecision::deny(),
        other => return Err(usage(format!("--approve {other:?}: expected all or none"))),
    };
    let flags = TurnFlags {
        disable_tools: args.disable_tools,
        ..TurnFlags::default()
    };
    let activation = resolve_activation(
        &root,
        args.agent.as_deref(),
        args.model.as_deref(),
        &catalogs,
        flags,
    );
    for warning in &activation.warnings {
        eprintln!("codemode: config: {}", warning.message);
    }
    let limits = activation.config.search_limits();
    let (mut specs, static_executor) = match &args.tools {
        Some(path) => {
            let text = crate::operator_files::read_operator_file(path)
                .map_err(|e| usage(format!("--tools {}: {e}", path.display())))?;
            let (specs, executor) = static_tools_with_direct(&text, &limits)
                .map_err(|e| usage(format!("--tools {}: {e}", path.display())))?;
            (specs, Some(executor))
        }
        None => (Vec::new(), None),
    };
    let mcp_config = args
        .mcp_config
        .as_deref()
        .map(McpServersConfig::load)
        .transpose()
        .map_err(|e| usage(format!("--mcp-config {e}")))?;
    let sink = match &args.trajectory {
        Some(path) => Some(
            JsonLinesSink::create(path)
                .map_err(|e| usage(format!("--trajectory {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let hooks = {
        let resolved = codemode_config::resolve_hooks(&root);
        HookChain::from_config(&resolved.hooks)
    };

    let runtime = host::async_runtime()?;
    let hub = mcp_config.map(|config| {
        let hub = runtime.block_on(McpHub::connect(&config, ClientOptions::default()));
        for status in hub.status() {
            if let Some(error) = &status.error {
                eprintln!("codemode: {error}");
            }
        }
        hub
    });
    let executor: Arc<dyn ToolExecutor> = match (&hub, static_executor) {
        (Some(hub), fallback) => {
            // The turn filters every spec by the policy (name and catalog id) before the
            // catalog is built, MCP ones included.
            specs.extend(hub.specs());
            Arc::new(hub.executor(fallback))
        }
        (None, Some(executor)) => executor,
        (None, None) => Arc::new(crate::tools::NoTools),
    };
    let cost = args
        .model
        .as_deref()
        .and_then(|m| model_cost(&catalogs_json, m));
    let mut turn = AgentTurn::new(activation, specs, executor);
    turn.required_direct = args.direct.clone();
    turn.scope = RunScope {
        agent_id: args.agent.clone(),
        ..RunScope::default()
    };
    turn.hooks = hooks;
    turn.approver = Some(Arc::new(FixedApprover(approver)));
    turn.model_cost = cost;
    turn.include_trajectory = sink.is_some();
    turn.trajectory_sink = sink.map(|s| Arc::new(s) as Arc<dyn codemode_telemetry::TrajectorySink>);
    let outcome =
        runtime.block_on(turn.run(&script, || CodeMode::with_global_runtime().map(Arc::new)));
    if let Some(hub) = &hub {
        runtime.block_on(hub.shutdown());
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    let (value, code) = match outcome {
        Ok(envelope) => (envelope.to_json(), ExitCode::SUCCESS),
        Err(e) => (e.to_json(), ExitCode::from(1)),
    };
    let text = if args.pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    }
    .unwrap_or_default();
    print_line(&text)?;
    Ok(code)
}

/// The specs of a static tools file and an executor that also runs its direct-only tools (which
/// the catalog leaves out), under the id the catalog would give them.
fn static_tools_with_direct(
    text: &str,
    limits: &SearchLimits,
) -> Result<(Vec<ToolSpec>, Arc<dyn ToolExecutor>), String> {
    let specs = static_tools::parse(text)?.specs;
    let mut items: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if let Some(items) = items.as_array_mut() {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            item.remove("catalogMode");
        }
    }
    let (_, executor) = static_tools::StaticTools::load(&items.to_string(), limits)?;
    Ok((specs, Arc::new(executor)))
}
