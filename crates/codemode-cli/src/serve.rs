//! `codemode serve`: code mode as an MCP server (stdio, or streamable HTTP: on loopback, or on
//! any address with bearer tokens).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use codemode_config::Enabled;
use codemode_mcp::server::DirectTools;
use codemode_mcp::{CodeModeServer, EnvSource};

use crate::host::{self, HostArgs};
use crate::output::Failure;

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Append logs to this file instead of standard error (standard output is the protocol).
    #[arg(long, value_name = "FILE")]
    pub(crate) log_file: Option<PathBuf>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks one) instead of
    /// stdio, until interrupted; the URL is printed on stderr. Loopback only, unless --auth.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// With --http: require bearer tokens. FILE lists `<sha256 hex of a token> <principal>` per
    /// line; each principal's runs are its own. Needed to bind a non-loopback address.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) auth: Option<PathBuf>,
    /// With --auth: at most this many parked runs per principal in this process (the process
    /// holds at most 64 in all; default 16).
    #[arg(long, value_name = "N", requires = "auth")]
    pub(crate) runs_per_principal: Option<usize>,
    /// With code mode off and one MCP server: serve its tools under their own names instead of
    /// `<server>__<tool>` (a transparent proxy of that server; policy, hooks and the trajectory
    /// still name them `<server>__<tool>`).
    #[arg(long)]
    pub(crate) bare_names: bool,
    #[command(flatten)]
    pub(crate) host: HostArgs,
    #[command(flatten)]
    pub(crate) state: crate::state::StateArgs,
}

/// The default `--runs-per-principal`: a quarter of the process's 64, so one principal cannot
/// take every slot.
const DEFAULT_RUNS_PER_PRINCIPAL: usize = 16;

/// Reads and parses `--auth FILE` through the checked operator-file path. Errors name the
/// option and the path, never a hash.
fn read_auth(path: &std::path::Path) -> Result<Arc<codemode_mcp::http_auth::HttpAuth>, Failure> {
    let text = crate::operator_files::read_operator_file(path)
        .map_err(|e| Failure::Usage(format!("--auth {}: {e}", path.display())))?;
    codemode_mcp::http_auth::HttpAuth::parse(&text)
        .map(Arc::new)
        .map_err(|e| Failure::Usage(format!("--auth {}: {e}", path.display())))
}

/// `codemode serve`: one MCP session over stdin/stdout until the client closes it, or, with
/// `--http ADDR`, any number of streamable HTTP sessions on a loopback address; either way
/// until SIGINT or SIGTERM. Then (over HTTP with a durable `--state`) the runs in flight park into
/// the store first (docs/deployment.md, "Stopping"), the process's parked runs are dropped (their
/// records stay in a durable store) and every MCP server child is stopped (stdin closed, 3 s,
/// then SIGKILL to its process group), so none outlives `serve`. `--auth FILE` requires bearer
/// tokens and allows a non-loopback `--http` (docs/deployment.md, "Bearer tokens and principals").
pub(crate) fn serve(args: ServeArgs) -> Result<ExitCode, Failure> {
    // A bad --state or a durable one without a key refuses to start before anything else.
    let state = args.state.check()?;
    let request_state_key = state.request_state_key();
    let auth = args.auth.as_deref().map(read_auth).transpose()?;
    if let Some(addr) = args.http {
        if !addr.ip().is_loopback() && auth.is_none() {
            return Err(Failure::Usage(format!(
                "--http {addr}: not a loopback address; code mode hands whoever can reach it the configured tools, so serve it on 127.0.0.1 or ::1, or require bearer tokens with --auth FILE"
            )));
        }
    }
    if args.host.mcp_config.is_none() && args.host.root.is_none() && args.host.tools.is_none() {
        eprintln!(
            "codemode: serving an empty catalog (exec runs programs, but they have no tools to call); add tools with --mcp-config FILE (MCP servers), --root DIR (workspace tools) or --tools FILE"
        );
    }
    let runtime = host::async_runtime()?;
    // Registered before any child starts, so a signal during startup is not lost either.
    let stop = {
        let _entered = runtime.enter();
        stop_signal().map_err(|e| Failure::Run(format!("cannot handle signals: {e}")))?
    };
    // MCP servers connect in the background: `initialize`, `tools/list` and `exec` are answered
    // at once, and a server that joins later is announced by `list_changed` (docs/mcp.md).
    // The store opens (a directory checked, Redis reached) before any MCP server starts.
    let code_mode = Arc::new(crate::state::code_mode(state, &runtime)?);
    let host = host::host_with(&args.host, &runtime, false, true)?.map(Arc::new);
    let source: Arc<dyn EnvSource> = Arc::new(ServeSource(host.clone()));
    let mut server = CodeModeServer::new(code_mode.clone(), source);
    if let Some(key) = request_state_key {
        let states = codemode_mcp::mrtr::RequestStates::with_key(key.to_vec())
            .map_err(|e| Failure::Run(format!("cannot seal MRTR request states: {e}")))?;
        server = server.with_request_states(Arc::new(states));
    }
    let mut bare_names_apply = false;
    if let Some(host) = &host {
        // Downstream elicitation and sampling go to the client of the latest call.
        server = server.with_forwarder(host.forward.clone());
        if let (Enabled::Off, Some(hub)) = (host.config().enabled(), &host.hub) {
            // Code mode off: a plain aggregating MCP server of the configured servers, their
            // calls still through the config's policy, hooks and approvals (docs/mcp.md).
            let ttl = host.config().snapshot_ttl();
            let mut direct = DirectTools::new(hub.clone(), ttl);
            if args.bare_names {
                let servers = hub.status().len();
                if servers != 1 {
                    host.shutdown(&runtime);
                    return Err(Failure::Usage(format!(
                        "--bare-names serves one MCP server's tools under their own names; the config has {servers}"
                    )));
                }
                direct = direct.with_bare_names();
                bare_names_apply = true;
            }
            server = server
                .with_host(host.serve_host())
                .with_direct_tools(direct);
        }
    }
    if args.bare_names && !bare_names_apply {
        if let Some(host) = &host {
            host.shutdown(&runtime);
        }
        return Err(Failure::Usage(
            "--bare-names needs code mode off ({\"tools\": {\"codeMode\": false}} in --config) and --mcp-config".into(),
        ));
    }
    if let Some(auth) = auth {
        server = server.with_http_auth(
            auth,
            Some(
                args.runs_per_principal
                    .unwrap_or(DEFAULT_RUNS_PER_PRINCIPAL),
            ),
        );
    }
    let served = match args.http {
        None => runtime.block_on(async move {
            tokio::select! {
                served = server.serve_stdio() => served,
                signal = stop => {
                    tracing::info!("{signal}: stopping");
                    Ok(())
                }
            }
        }),
        Some(addr) => runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(codemode_mcp::server::ServeError::Io)?;
            let local = listener
                .local_addr()
                .map_err(codemode_mcp::server::ServeError::Io)?;
            eprintln!("codemode: serving MCP over streamable HTTP at http://{local}/mcp");
            let shutdown = tokio_util::sync::CancellationToken::new();
            let stopping = shutdown.clone();
            tokio::spawn(async move {
                let signal = stop.await;
                tracing::info!("{signal}: stopping");
                stopping.cancel();
            });
            server.serve_http(listener, shutdown).await
        }),
    };
    code_mode.clear();
    if let Some(host) = &host {
        host.shutdown(&runtime);
    }
    runtime.shutdown_background();
    served.map_err(|e| Failure::Run(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// The run environments of `codemode serve`: the host's (`None` when code mode is disabled;
/// the host is still there for its MCP servers, served directly).
struct ServeSource(Option<Arc<host::Host>>);

impl EnvSource for ServeSource {
    fn unavailable(&self) -> Vec<codemode_mcp::Unavailable> {
        match self.0.as_ref().and_then(|host| host.hub.as_ref()) {
            Some(hub) => hub.unavailable(),
            None => Vec::new(),
        }
    }

    fn mcp_configured(&self) -> bool {
        let hub = self.0.as_ref().and_then(|host| host.hub.as_ref());
        hub.is_some_and(|hub| !hub.status().is_empty())
    }

    fn catalog_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        let hub = self.0.as_ref()?.hub.as_ref()?;
        Some(hub.subscribe_generation())
    }

    fn run_env(&self, scope: codemode_bridge::RunScope) -> Option<codemode_facade::RunEnv> {
        let host = self.0.as_ref()?;
        if host.config().enabled() == Enabled::Off {
            return None;
        }
        match host.run_env(scope) {
            // The MCP client sees exactly `exec` and `wait`: a direct-only tool of the tools
            // file is not served (docs/contract/decisions.md#d3 is about what the model sees).
            Ok(mut env) => {
                env.visible_tools.truncate(2);
                Some(env)
            }
            Err(Failure::Usage(e) | Failure::Run(e)) => {
                tracing::error!("cannot build the run environment: {e}");
                None
            }
        }
    }
}

/// A future that resolves with the name of the first SIGINT or SIGTERM (on Windows: Ctrl-C)
/// received after this call. Must be called inside the tokio runtime. Errors: the `io::Error` of
/// registering a handler.
fn stop_signal(
) -> std::io::Result<std::pin::Pin<Box<dyn std::future::Future<Output = &'static str> + Send>>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(Box::pin(async move {
            tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            }
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }))
    }
}
