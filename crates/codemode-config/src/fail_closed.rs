//! The fail-closed contract (docs/contract/config.md#configuration, docs/contract/config.md#fail-closed, docs/contract/config.md#fail-closed): an engaged run
//! whose runtime cannot load fails; it never falls back to broad direct tool exposure.

use crate::activation::{ActivationDecision, ActivationReason};
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::future::Future;

/// The error an engaged run fails with when the QuickJS-WASI runtime cannot load (module or VM
/// cannot be compiled, instantiated or created). Its error code is `runtime_unavailable`
/// ([`RuntimeUnavailable::CODE`]).
///
/// This is a run failure, not an `exec` result: the facade returns it instead of assembling the
/// model request, and must not expose the run's tools directly instead. It holds for `enabled:
/// true` and for `"auto"` runs whose model resolved as preferred alike.
///
/// JSON: `{"code":"runtime_unavailable","reason":"forced","cause":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error(
    "code mode is engaged for this run ({reason}) but the quickjs-wasi runtime could not load: \
     {cause}; the run fails instead of exposing its tools directly"
)]
pub struct RuntimeUnavailable {
    /// Always [`RuntimeUnavailable::CODE`].
    pub code: String,
    /// Why code mode engaged ([`ActivationReason::Forced`] or
    /// [`ActivationReason::AutoPreferred`]).
    pub reason: ActivationReason,
    /// The load error, as text.
    pub cause: String,
}

impl RuntimeUnavailable {
    /// The spec's error code: `"runtime_unavailable"`.
    pub const CODE: &'static str = "runtime_unavailable";

    /// The error for an engaged run whose runtime failed with `cause`.
    pub fn new(reason: ActivationReason, cause: impl Display) -> Self {
        RuntimeUnavailable {
            code: Self::CODE.to_string(),
            reason,
            cause: cause.to_string(),
        }
    }
}

/// The model tool surface a run gets: there is no variant for "engaged but runtime missing",
/// which is [`RuntimeUnavailable`] instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSurface<R> {
    /// Code mode did not engage: normal tool exposure. The runtime was not loaded.
    Direct,
    /// Code mode engaged and its runtime `R` loaded: expose `exec`, `wait` and the required
    /// direct-only tools.
    CodeMode(R),
}

impl ActivationDecision {
    /// Loads the runtime only when code mode engaged, failing closed.
    ///
    /// - not engaged → `Ok(ToolSurface::Direct)` without calling `load`;
    /// - engaged and `load` succeeds → `Ok(ToolSurface::CodeMode(runtime))`;
    /// - engaged and `load` fails → `Err(RuntimeUnavailable)`; the run must fail.
    pub fn load_runtime<R, E: Display>(
        &self,
        load: impl FnOnce() -> Result<R, E>,
    ) -> Result<ToolSurface<R>, RuntimeUnavailable> {
        if !self.engaged {
            return Ok(ToolSurface::Direct);
        }
        load()
            .map(ToolSurface::CodeMode)
            .map_err(|e| RuntimeUnavailable::new(self.reason, e))
    }

    /// [`load_runtime`](Self::load_runtime) for an asynchronous loader.
    pub async fn load_runtime_async<R, E: Display, F: Future<Output = Result<R, E>>>(
        &self,
        load: impl FnOnce() -> F,
    ) -> Result<ToolSurface<R>, RuntimeUnavailable> {
        if !self.engaged {
            return Ok(ToolSurface::Direct);
        }
        load()
            .await
            .map(ToolSurface::CodeMode)
            .map_err(|e| RuntimeUnavailable::new(self.reason, e))
    }
}
