//! `failed` results made outside a run's settle loop: refusals of bad input, VM errors, and
//! `wait` failures before any run is known; and the result code of each VM error.

use codemode_runtime::VmError;

use crate::dispatch::Counters;
use crate::env::RunEnv;
use crate::limits::LimitExceeded;
use crate::result::{CodeModeResult, ErrorCode, Telemetry};

/// The result code for a VM error; the message is always the error's `Display`.
pub(crate) fn map_vm_error(
    e: &VmError,
    config: &codemode_config::CodeModeConfig,
) -> (ErrorCode, String) {
    if *e == VmError::Timeout {
        return (
            ErrorCode::Timeout,
            LimitExceeded::timeout(config.timeout_ms()).to_string(),
        );
    }
    let code = match e {
        VmError::Timeout => ErrorCode::Timeout,
        VmError::Aborted => ErrorCode::Aborted,
        VmError::Trap(_) | VmError::Unavailable(_) => ErrorCode::RuntimeUnavailable,
        VmError::Protocol(_) | VmError::Poisoned(_) | VmError::UnknownRequest(_) => {
            ErrorCode::InternalError
        }
    };
    (code, e.to_string())
}

pub(crate) fn telemetry(env: &RunEnv, counters: &Counters) -> Telemetry {
    Telemetry::new(
        env.catalog.len(),
        env.catalog.source_counts(),
        counters.bridge.snapshot(),
        env.visible_tools.clone(),
    )
}

/// A refused `exec` (bad arguments or source): `failed`/`invalid_input`, no run created.
pub(crate) fn refusal(env: &RunEnv, message: String) -> CodeModeResult {
    failure(env, ErrorCode::InvalidInput, &message, false)
}

/// The `timeout` failure of a run whose budget ran out while its source of `source_bytes`
/// bytes was being prepared ([`LimitExceeded::preparation_timeout`]).
pub(crate) fn preparation_timeout(env: &RunEnv, source_bytes: usize) -> CodeModeResult {
    let message = LimitExceeded::preparation_timeout(source_bytes, env.config.timeout_ms());
    failure(env, ErrorCode::Timeout, &message.to_string(), false)
}

/// A failure for a VM error (its code and `Display`) with the env's telemetry and no run.
pub(crate) fn vm_failure(env: &RunEnv, e: &VmError) -> CodeModeResult {
    let (code, message) = map_vm_error(e, &env.config);
    failure(env, code, &message, false)
}

/// A failure with the env's telemetry and no run.
pub(crate) fn failure(
    env: &RunEnv,
    code: ErrorCode,
    message: &str,
    replay_safe: bool,
) -> CodeModeResult {
    CodeModeResult::Failed {
        error: message.to_string(),
        code: Some(code),
        output: Vec::new(),
        replay_safe,
        telemetry: telemetry(env, &Counters::default()),
    }
}

/// A refused `wait` for an unknown or foreign run: no catalog is known, so telemetry is empty.
pub(crate) fn bare_refusal(message: &str) -> CodeModeResult {
    bare_failure(ErrorCode::InvalidInput, message)
}

/// The refusal of an `exec` over a host's per-caller cap on parked runs: `failed`, code
/// `invalid_input`, the store's own text `too many suspended code mode runs.`, no run.
pub fn too_many_suspended() -> CodeModeResult {
    bare_refusal(&codemode_snapshot::StoreError::TooManySuspended.to_string())
}

/// A `wait` failure before any run is known (empty telemetry).
pub(crate) fn bare_failure(code: ErrorCode, message: &str) -> CodeModeResult {
    CodeModeResult::Failed {
        error: message.to_string(),
        code: Some(code),
        output: Vec::new(),
        replay_safe: false,
        telemetry: Telemetry::new(
            0,
            codemode_catalog::SourceCounts::default(),
            codemode_telemetry::BridgeCounters::default(),
            vec!["exec".into(), "wait".into()],
        ),
    }
}
