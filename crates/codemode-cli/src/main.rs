//! `codemode`: run code-mode programs from a shell.
//!
//! - `codemode exec [FILE | -e CODE | -]` runs one program against the built-in workspace tools
//!   (`read`, `list`, `grep` under `--root`) or the static tools of `--tools FILE`, plus the MCP
//!   servers of `--mcp-config FILE` (as `MCP.<server>.<tool>({...})`), and prints
//!   the result as JSON; `waiting` results are followed with `wait` until the run completes or
//!   `--wall-clock-ms` passes. Calls that need approval are answered by `--approve all | none`,
//!   else by a `y/N` prompt on a terminal, else denied.
//! - `codemode session` reads `{"tool": "surface" | "exec" | "wait" | "approve", "args": {…},
//!   "id"?: …}` lines on stdin and writes one answer line each on stdout (the `id` echoed),
//!   keeping parked runs across lines.
//! - `exec`, `session` and `serve` apply the config's tool policy (`tools.allow`, `tools.deny`,
//!   `tools.approvals.require`) and command hooks (`hooks.beforeToolCall` /
//!   `hooks.afterToolCall`) to every nested call, and `--trajectory FILE` writes the runs'
//!   trajectory as JSON lines.
//! - `codemode serve [--mcp-config FILE]` serves code mode as an MCP server over stdio: exactly
//!   two tools, `exec` and `wait`, over the tools of the configured MCP servers. Logs go to
//!   stderr (or `--log-file`), never stdout.
//! - `codemode config [--config FILE] [--agent ID]` prints the resolved `tools.codeMode`, the
//!   warnings for every ignored or clamped value, and `source`: the file, or the spec's defaults
//!   (no file is the config `{}`: `enabled` `"auto"`, as `--config` with `{}` gives).
//! - `codemode catalog [--tools FILE | --root DIR] [--mcp-config FILE] …` shows what the model
//!   and the guest would see of the catalog `exec` runs against: `ALL_TOOLS`, the quick index,
//!   search hits, a described entry, (`--surface`) the provider-facing `exec`/`wait`
//!   definitions, or (`--tokens`, `tokens.rs`) what direct exposure and code mode cost in tokens.
//! - `codemode agent --script FILE …` runs one agent turn with a scripted model and prints its
//!   envelope `{payload, transcript, trajectory?, meta, …}` (`agent.rs`).
//!
//! - `codemode completions bash|zsh|fish|elvish|powershell` prints a shell completion script.
//!
//! Exit status: 0 completed (or a successful inspection), 1 failed, 2 bad usage, 141 (128 +
//! SIGPIPE, as a shell reports a Unix tool killed by a closed pipe) when the reader of standard
//! output went away: nothing is printed about it and cleanup (MCP servers, parked runs) still runs.

/// `eprintln!` that never panics: std's panics when standard error is closed (`2>&-`, a closed
/// pipe); a diagnostic nobody can read is dropped instead. Defined before the modules so every
/// one of them uses it (textual `macro_rules!` scoping shadows the prelude macro).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod agent;
mod approve;
mod host;
mod operator_files;
mod output;
mod progress;
mod serve;
mod session;
mod state;
mod static_tools;
mod tokens;
mod tools;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use codemode_bridge::Language;
use codemode_catalog::cli::CatalogView;
use codemode_facade::{ApprovalBroker, CodeMode, CodeModeResult};
use codemode_runtime::AbortHandle;
use host::HostArgs;
use output::{print_line, Failure, EXIT_STDOUT_CLOSED, STDOUT_CLOSED};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "codemode",
    version,
    about = "Code mode for LLM agents: run JavaScript or TypeScript that calls tools, in a QuickJS-in-wasm sandbox."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one program and print its result as JSON.
    Exec(ExecArgs),
    /// Drive exec/wait over JSON lines: one request per stdin line, one result per stdout line.
    Session(SessionArgs),
    /// Serve code mode as an MCP server over stdio: exactly two tools, exec and wait, over the
    /// tools of --mcp-config's MCP servers (and --tools or --root, when given).
    Serve(serve::ServeArgs),
    /// Print the resolved tools.codeMode config and its warnings as JSON.
    Config(ConfigArgs),
    /// Show a tool list as the model and guest would see it.
    Catalog(CatalogArgs),
    /// Run one agent turn with a scripted model and print its JSON envelope.
    Agent(agent::AgentArgs),
    /// List or purge the parked runs stored in a run store (--state dir:PATH or redis://…).
    State(state::StateCommandArgs),
    /// Print a shell completion script (e.g. `codemode completions bash > ~/.local/share/bash-completion/completions/codemode`).
    Completions(CompletionsArgs),
}

#[derive(Args)]
struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Args)]
struct ExecArgs {
    /// Program file (`.ts` runs as TypeScript), or `-` for standard input.
    file: Option<PathBuf>,
    /// Program text instead of a file.
    #[arg(
        short = 'e',
        long = "eval",
        value_name = "CODE",
        conflicts_with = "file"
    )]
    code: Option<String>,
    /// Source language (default: typescript for a .ts/.mts FILE, else javascript); anything
    /// else is a usage error, as the exec tool's schema allows only these two.
    #[arg(long, value_parser = Language::NAMES)]
    language: Option<String>,
    /// Stop following a waiting run after this many ms in total.
    #[arg(long, value_name = "N", default_value_t = 60_000)]
    wall_clock_ms: u64,
    /// Pretty-print the result.
    #[arg(long)]
    pretty: bool,
    /// Answer every approval (tools.approvals.require, a hook's "ask") with allow or deny,
    /// instead of asking on the terminal (without a terminal every approval is denied).
    #[arg(long, value_name = "all|none", value_enum)]
    approve: Option<approve::ApproveMode>,
    #[command(flatten)]
    host: HostArgs,
}

#[derive(Args)]
struct SessionArgs {
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    state: state::StateArgs,
}

#[derive(Args)]
struct ConfigArgs {
    /// Config file (JSON or JSON5).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Agent id whose per-agent override applies.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
}

#[derive(Args)]
struct CatalogArgs {
    /// Print ALL_TOOLS (the guest-visible compact entries; the default view).
    #[arg(long, group = "view")]
    json: bool,
    /// Print the exec description's quick index.
    #[arg(long, group = "view")]
    index: bool,
    /// With --index: after the index, say for each `-> ?` which rule made the output unknown.
    #[arg(long, requires = "index")]
    explain: bool,
    /// Print the provider-facing exec and wait definitions (name, description with the quick
    /// index, parameters) as a JSON array: what a host shows its model.
    #[arg(long, group = "view")]
    surface: bool,
    /// Print tools.search(QUERY) hits.
    #[arg(long, value_name = "QUERY", group = "view")]
    search: Option<String>,
    /// Limit for --search (read as JSON, as the guest would pass it).
    #[arg(long, value_name = "N", requires = "search")]
    limit: Option<String>,
    /// Print tools.describe(ID).
    #[arg(long, value_name = "ID", group = "view")]
    describe: Option<String>,
    /// Print the tokens a model is shown for these tools with direct exposure and with code
    /// mode (o200k and cl100k), per server and in total, and a recommendation.
    #[arg(long, group = "view")]
    tokens: bool,
    /// Pretty-print --surface (the other views are always pretty).
    #[arg(long)]
    pretty: bool,
    /// The tools, config and MCP servers, exactly as `exec` takes them (the same --tools file:
    /// behaviour keys such as `result` are accepted and ignored here).
    #[command(flatten)]
    host: HostArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("CODEMODE_LOG")
        // rmcp logs transport failures that the MCP client reports itself (one `codemode:` line).
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    // rmcp's OAuth code logs the authorization code and the token response at `debug`: never
    // below `info` there, whatever CODEMODE_LOG says (docs/mcp.md, "OAuth for HTTP servers").
    if let Ok(directive) = "rmcp::transport::auth=info".parse() {
        filter = filter.add_directive(directive);
    }
    let log_file = match &cli.command {
        Command::Serve(serve::ServeArgs {
            log_file: Some(path),
            ..
        }) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => Some(file),
            Err(e) => {
                eprintln!("codemode: --log-file {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    match log_file {
        Some(file) => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(Mutex::new(file))
            .init(),
        None => tracing_subscriber::fmt()
            .with_env_filter(filter)
            // Colour only for a person at a terminal, never into a pipe or a log file.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .init(),
    }
    let outcome = match cli.command {
        Command::Exec(args) => exec(args),
        Command::Session(args) => session::run(&args.host, &args.state),
        Command::Serve(args) => serve::serve(args),
        Command::Config(args) => config(args),
        Command::Catalog(args) => catalog(args),
        Command::Agent(args) => agent::run(args),
        Command::Completions(args) => completions(args),
        Command::State(args) => state::command(args),
    };
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return ExitCode::from(EXIT_STDOUT_CLOSED);
    }
    match outcome {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            eprintln!("codemode: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("codemode: {message}");
            ExitCode::from(1)
        }
    }
}

/// The exit status when the reader of standard output closed it: 128 + SIGPIPE (13).
/// `codemode completions SHELL`: the completion script clap_complete generates for this CLI.
fn completions(args: CompletionsArgs) -> Result<ExitCode, Failure> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "codemode", &mut script);
    let text = String::from_utf8_lossy(&script);
    print_line(text.trim_end_matches('\n'))?;
    Ok(ExitCode::SUCCESS)
}

/// `codemode config`'s `source` without `--config` (docs/contract/decisions.md#d8).
const DEFAULTS_SOURCE: &str = "defaults: no --config file, so the config {}: enabled defaults to \"auto\" (the CLI runs code mode unless enabled is false)";

fn config(args: ConfigArgs) -> Result<ExitCode, Failure> {
    let report = host::load_config(args.config.as_deref(), args.agent.as_deref())?;
    let mut printed = serde_json::to_value(&report).unwrap_or_default();
    // Where the values came from: the file, or the spec's defaults (the config `{}`).
    printed["source"] = match &args.config {
        Some(path) => json!(path.display().to_string()),
        None => json!(DEFAULTS_SOURCE),
    };
    print_line(&serde_json::to_string_pretty(&printed).unwrap_or_default())?;
    Ok(ExitCode::SUCCESS)
}

/// `codemode catalog`: one view of the catalog `exec` would run against (same `--tools`,
/// `--root`, `--mcp-config`, `--config` and `--agent`, so the tool policy applies too).
fn catalog(args: CatalogArgs) -> Result<ExitCode, Failure> {
    let runtime = host::async_runtime()?;
    let Some(host) = host::catalog_host(&args.host, &runtime)? else {
        print_line(&host::disabled_result().to_string())?;
        return Ok(ExitCode::from(1));
    };
    let catalog = host.catalog();
    let specs = host.specs();
    host.shutdown(&runtime);
    runtime.shutdown_background();
    let catalog = catalog?;
    if args.tokens {
        let report = tokens::report(&specs, &catalog);
        print_line(&tokens::render(&report))?;
        return Ok(ExitCode::SUCCESS);
    }
    let view = if let Some(query) = args.search {
        CatalogView::Search {
            query,
            limit: args.limit,
        }
    } else if let Some(id) = args.describe {
        CatalogView::Describe { id }
    } else if args.index && args.explain {
        CatalogView::IndexExplained
    } else if args.index {
        CatalogView::Index
    } else if args.surface {
        let tools = codemode_facade::surface_tools(&catalog);
        let text = if args.pretty {
            serde_json::to_string_pretty(&tools)
        } else {
            serde_json::to_string(&tools)
        }
        .unwrap_or_default();
        print_line(&text)?;
        return Ok(ExitCode::SUCCESS);
    } else {
        let _ = args.json;
        CatalogView::Json
    };
    match codemode_catalog::cli::render_view(&catalog, &view) {
        Ok(out) => {
            print_line(&out)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(Failure::Run(e)),
    }
}

fn exec(args: ExecArgs) -> Result<ExitCode, Failure> {
    let (code, from_ts_file) = match (&args.code, &args.file) {
        (Some(code), _) => (code.clone(), false),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut code = String::new();
            std::io::stdin()
                .read_to_string(&mut code)
                .map_err(|e| Failure::Usage(format!("cannot read standard input: {e}")))?;
            (code, false)
        }
        (None, Some(path)) => {
            let code = crate::operator_files::read_operator_file(path)
                .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
            (
                code,
                path.extension().is_some_and(|e| e == "ts" || e == "mts"),
            )
        }
        (None, None) => {
            return Err(Failure::Usage(
                "exec needs a program: FILE, -e CODE, or - for standard input".into(),
            ))
        }
    };
    let language = args.language.clone().unwrap_or_else(|| {
        if from_ts_file {
            Language::TypeScript.as_str()
        } else {
            Language::JavaScript.as_str()
        }
        .to_string()
    });

    let runtime = host::async_runtime()?;
    let Some(mut host) = host::host(&args.host, &runtime, true)? else {
        print_line(&host::disabled_result().to_string())?;
        return Ok(ExitCode::from(1));
    };
    let approvals = Arc::new(ApprovalBroker::with_delegate(
        host.config().snapshot_ttl(),
        approve::exec_approver(args.approve),
    ));
    host.set_approvals(approvals.clone());
    // The exec is tool call `call_1` and each wait after it the next number: nested calls are
    // `tool_search_code:call_1:<tool>:<n>`, and the trajectory names the calls the same way.
    let env = host
        .run_env(codemode_bridge::RunScope::default())?
        .with_tool_call_id("call_1");
    let input = json!({"code": code, "language": language});
    let wall_clock = Duration::from_millis(args.wall_clock_ms);
    tracing::info!("exec: running a {}-byte {language} program", code.len());
    let status = progress::Status::start(format!("running the {language} program"));
    let max_output_bytes = host.config().max_output_bytes();
    // One run, driven from one thread: its legs run in place there, with no hand-off to a leg
    // worker (docs/architecture.md, "Legs in place").
    let driven = codemode_runtime::with_legs_in_place("codemode-exec", || {
        runtime.block_on(async move {
            let code_mode =
                CodeMode::with_global_runtime().map_err(|e| Failure::Run(e.to_string()))?;
            let abort = AbortHandle::new();
            let started = Instant::now();
            let mut result = code_mode.exec(&env, &input, &abort).await;
            let mut output = result.output().to_vec();
            // The one printed result holds the output of every wait it followed, so it obeys
            // maxOutputBytes as a whole (docs/contract/lifecycle.md#s5-5, docs/threat-model.md):
            // past it, following stops and the run fails with output_limit_exceeded.
            let mut output_bytes = json_bytes(&output);
            let mut calls = 1;
            while let Some(run_id) = result.run_id().map(str::to_string) {
                if output_bytes > max_output_bytes {
                    result = CodeModeResult::Failed {
                        error: codemode_facade::limits::LimitExceeded::output(
                            Some(output_bytes),
                            max_output_bytes,
                        )
                        .to_string(),
                        code: Some(codemode_facade::ErrorCode::OutputLimitExceeded),
                        output: Vec::new(),
                        replay_safe: false,
                        telemetry: result.telemetry().clone(),
                    };
                    output.clear();
                    break;
                }
                if started.elapsed() >= wall_clock {
                    break;
                }
                calls += 1;
                let wait = env.clone().with_tool_call_id(format!("call_{calls}"));
                result = code_mode
                    .wait_with(&wait, &json!({"runId": run_id}), &abort)
                    .await;
                output.extend(result.output().iter().cloned());
                // At most one result past the limit is held: following stops at the next check.
                output_bytes = json_bytes(&output);
            }
            tracing::info!(
                "exec: {} after {} ms ({} exec/wait call(s), {} nested tool call(s))",
                result.to_json()["status"].as_str().unwrap_or("?"),
                started.elapsed().as_millis(),
                calls,
                result.telemetry().call_count
            );
            Ok::<_, Failure>((result, output))
        })
    });
    let result = driven.unwrap_or_else(|panic| Err(Failure::Run(panic.to_string())));
    status.finish();
    approvals.deny_all(None);
    host.shutdown(&runtime);
    let (result, output) = result?;
    // Print one result for the whole run: its final status with all output in order.
    let mut printed = result.to_json();
    printed["output"] = serde_json::to_value(&output).unwrap_or(json!([]));
    let text = if args.pretty {
        serde_json::to_string_pretty(&printed)
    } else {
        serde_json::to_string(&printed)
    }
    .unwrap_or_default();
    print_line(&text)?;
    Ok(match result {
        CodeModeResult::Completed { .. } => ExitCode::SUCCESS,
        CodeModeResult::Waiting { .. } => {
            eprintln!(
                "codemode: the run was still waiting after --wall-clock-ms {}",
                args.wall_clock_ms
            );
            ExitCode::from(1)
        }
        CodeModeResult::Failed { .. } => ExitCode::from(1),
    })
}

/// Bytes of `items`' compact JSON (the measure of docs/contract/lifecycle.md#s5-5).
fn json_bytes(items: &[codemode_bridge::OutputItem]) -> u64 {
    serde_json::to_string(items).map_or(0, |t| t.len() as u64)
}
