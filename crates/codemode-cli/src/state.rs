//! Where `serve` and `session` keep parked runs (`--state URL`, `--state-key-file FILE`;
//! docs/snapshot-store.md, "Backends" and "Sealing"), and `codemode state list|purge` for an
//! operator.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use codemode_facade::CodeMode;
use codemode_runtime::Runtime;
use codemode_snapshot::{open, StateKeys, StateUrl, STATE_KEY_ENV};
use serde_json::json;

use crate::output::Failure;

/// The run-store options of `serve` and `session`.
#[derive(Args, Clone, Debug)]
pub(crate) struct StateArgs {
    /// Where parked runs are kept: memory (the default: lost when the process stops), dir:PATH
    /// (one process survives its own restart) or redis://HOST:PORT[/DB] (shared by every
    /// process using it). dir: and redis:// seal runs with CODEMODE_STATE_KEY (32 bytes,
    /// standard base64) or --state-key-file, and refuse to start without a key.
    #[arg(long, value_name = "URL", default_value = "memory")]
    pub(crate) state: String,
    /// Sealing keys, one standard-base64 32-byte key per line (`#` comments): the first seals,
    /// every one opens (rotation). Mode 600; with CODEMODE_STATE_KEY, that key seals.
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: Option<PathBuf>,
}

impl StateArgs {
    fn url(&self) -> Result<StateUrl, Failure> {
        self.state
            .parse()
            .map_err(|e: codemode_snapshot::backend::url::StateUrlError| {
                Failure::Usage(e.to_string())
            })
    }
}

/// A checked `--state`: the URL and its sealing keys.
pub(crate) struct State {
    url: StateUrl,
    keys: Option<StateKeys>,
}

impl StateArgs {
    /// Checks the URL and the keys before anything starts: a durable store without a key
    /// refuses to start, naming the setting (exit 2).
    pub(crate) fn check(&self) -> Result<State, Failure> {
        let url = self.url()?;
        let env_key = std::env::var(STATE_KEY_ENV).ok();
        let keys = StateKeys::for_state(&url, env_key.as_deref(), self.state_key_file.as_deref())
            .map_err(|e| Failure::Usage(e.to_string()))?;
        Ok(State { url, keys })
    }
}

/// The label of the key `serve` seals MRTR `requestState`s with when it has sealing keys.
const REQUEST_STATE_KEY_LABEL: &str = "codemode-mrtr-request-state-v1";

impl State {
    /// The key `serve` seals MRTR `requestState`s with: derived from the sealing key when there
    /// is one, so every process sharing a durable store accepts the others' states (an MRTR
    /// retry may reach any instance behind a balancer; docs/deployment.md, "Approvals across
    /// instances"); `None` without keys (a key per process, as before).
    pub(crate) fn request_state_key(&self) -> Option<[u8; 32]> {
        self.keys
            .as_ref()
            .map(|keys| keys.derive(REQUEST_STATE_KEY_LABEL))
    }
}

/// The code-mode front over the process-wide runtime and `state`'s run store (opened here:
/// `dir:` checks its directory, `redis://` connects).
pub(crate) fn code_mode(
    state: State,
    runtime: &tokio::runtime::Runtime,
) -> Result<CodeMode, Failure> {
    runtime.block_on(async {
        let store = open(&state.url)
            .await
            .map_err(|e| Failure::Run(e.to_string()))?;
        let runtime = Runtime::global().map_err(|e| Failure::Run(e.to_string()))?;
        CodeMode::with_store(runtime, store, state.keys).map_err(|e| Failure::Usage(e.to_string()))
    })
}

/// `codemode state`: stored runs, for an operator.
#[derive(Args)]
pub(crate) struct StateCommandArgs {
    #[command(subcommand)]
    action: StateAction,
    /// The run store: dir:PATH or redis://HOST:PORT[/DB] (as given to serve/session).
    #[arg(long, value_name = "URL", global = true, default_value = "memory")]
    state: String,
}

#[derive(Subcommand)]
enum StateAction {
    /// Print the stored runs that have not expired, as a JSON array of
    /// {runId, owner, expiresAtMs} (headers only: no key needed, nothing is opened).
    List,
    /// Remove expired stored runs (with --all: every stored run); prints {"purged": N}.
    Purge {
        /// Remove every stored run, expired or not (their runs can no longer be resumed).
        #[arg(long)]
        all: bool,
    },
}

/// Runs `codemode state list|purge`.
pub(crate) fn command(args: StateCommandArgs) -> Result<ExitCode, Failure> {
    let url = StateArgs {
        state: args.state.clone(),
        state_key_file: None,
    }
    .url()?;
    if !url.is_durable() {
        return Err(Failure::Usage(
            "codemode state needs --state dir:PATH or --state redis://HOST:PORT[/DB] (memory holds nothing outside a running process)".into(),
        ));
    }
    let runtime = crate::host::async_runtime()?;
    let out = runtime.block_on(async {
        let store = open(&url).await?;
        Ok::<_, codemode_snapshot::RunStoreError>(match args.action {
            StateAction::List => json!(store.list().await?),
            StateAction::Purge { all: false } => json!({"purged": store.purge_expired().await?}),
            StateAction::Purge { all: true } => json!({"purged": store.purge_all().await?}),
        })
    });
    let out = out.map_err(|e| Failure::Run(e.to_string()))?;
    println!("{out}");
    Ok(ExitCode::SUCCESS)
}
