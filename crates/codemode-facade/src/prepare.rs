//! Preparing a cell before its VM starts: the `exec` input's source (argument checks, the
//! TypeScript strip, the module and shell checks) and the guest's run context of the catalog.

use std::time::Instant;

use codemode_bridge::RunContext;
use codemode_catalog::Catalog;
use serde_json::{json, Value};

use crate::env::RunEnv;
use crate::failure::{failure, preparation_timeout, refusal};
use crate::result::{CodeModeResult, ErrorCode};

/// Sources longer than this many bytes are prepared on a blocking thread under the deadline;
/// shorter ones inline (a thread hop would cost the fast path more than their parse).
const PREPARE_INLINE_BYTES: usize = 64 * 1024;

/// Prepares an `exec` input (docs/contract/guest.md#s4-4): the argument checks, the source cap
/// (`codemode_ts::MAX_SOURCE_BYTES`), the TypeScript strip and the module and shell checks.
/// A large source is prepared on a blocking thread, and the answer comes at `deadline` at the
/// latest: `timeout` with the contract's message while the parse finishes in the background
/// (bounded by the source cap; docs/threat-model.md, "Deadlines"). Errors: the refusal result.
pub(crate) async fn prepare(
    env: &RunEnv,
    input: &Value,
    deadline: Instant,
) -> Result<codemode_ts::PreparedExec, Box<CodeModeResult>> {
    let source_bytes = ["code", "command"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let prepared =
        if source_bytes <= PREPARE_INLINE_BYTES || source_bytes > codemode_ts::MAX_SOURCE_BYTES {
            codemode_ts::prepare_exec(input, env.config.languages())
        } else {
            let owned = input.clone();
            let languages = env.config.languages().to_vec();
            let work =
                tokio::task::spawn_blocking(move || codemode_ts::prepare_exec(&owned, &languages));
            match tokio::time::timeout_at(deadline.into(), work).await {
                Ok(Ok(prepared)) => prepared,
                Ok(Err(join)) => {
                    return Err(Box::new(failure(
                        env,
                        ErrorCode::InternalError,
                        &format!("source preparation failed: {join}"),
                        false,
                    )))
                }
                Err(_) => return Err(Box::new(preparation_timeout(env, source_bytes))),
            }
        };
    prepared.map_err(|rejection| Box::new(refusal(env, rejection.message())))
}

/// The lazily installed run context of `catalog` (docs/guest-abi.md, "Run context"): its JSON
/// sections and conveniences, built once per catalog ([`Catalog::run_context`]).
pub(crate) fn lazy_run_context(catalog: &Catalog) -> RunContext {
    let namespace = catalog.mcp_namespace();
    let paths: Vec<Vec<String>> = namespace
        .callable_paths()
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    // Configured servers that are not connected keep `MCP` defined (docs/mcp.md, "Servers that
    // are not connected").
    let has_mcp = !paths.is_empty() || !namespace.offline().is_empty();
    let mcp = json!({
        "paths": paths,
        "serverNames": namespace.server_names(),
        "offline": namespace.offline_context(),
    });
    let conveniences = catalog
        .conveniences()
        .iter()
        .map(|c| (c.name.clone(), c.id.clone()))
        .collect();
    RunContext::new(
        json!(catalog.all_tools()).to_string(),
        json!(api_files(&namespace)).to_string(),
        mcp.to_string(),
        has_mcp,
        conveniences,
    )
}

/// The run context as every exec built it before lazy installation: the whole JSON, made for
/// this exec and handed to the guest's `setup` in `cm_start` ([`RunEnv::install_catalog_eagerly`],
/// for the `catalog_scale` benchmark).
pub(crate) fn eager_run_context(catalog: &Catalog) -> RunContext {
    let namespace = codemode_catalog::McpNamespace::build(catalog);
    let mcp = json!({
        "paths": namespace.callable_paths().into_iter().map(|(path, _)| path).collect::<Vec<_>>(),
        "serverNames": namespace.server_names(),
        "offline": namespace.offline_context(),
    });
    RunContext::eager(
        json!({
            "tools": catalog.all_tools(),
            "apiFiles": api_files(&namespace),
            "mcp": mcp,
        })
        .to_string(),
    )
}

/// The guest's `API` files: the contract's (docs/contract/mcp.md#s7-4), then one per tool
/// (docs/mcp.md, "One tool's declaration").
fn api_files(namespace: &codemode_catalog::McpNamespace) -> Vec<codemode_catalog::ApiFile> {
    let mut files = namespace.api_files();
    files.extend(namespace.tool_files());
    files
}
