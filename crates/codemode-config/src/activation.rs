//! The per-run activation decision (docs/contract/config.md#activation, docs/contract/config.md#auto,
//! docs/contract/surface.md#tool-search; docs/contract/config.md#activation "Activation").

use crate::catalog::{CodeModeTier, ModelSupport};
use crate::config::{CodeModeConfig, Enabled};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether the run has tools at all, after the effective tool policy is known. Runs that
/// intentionally have no tools never activate code mode, even with `enabled: true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTools {
    /// The run has its normal (effective) tools.
    #[default]
    Active,
    /// A raw model call: no tool surface at all.
    RawModelCall,
    /// The run was started with `disableTools: true`.
    DisableTools,
    /// `tools.allow` is an explicitly empty list.
    EmptyAllowList,
}

impl RunTools {
    /// Classifies a run from the host's flags; the first that applies wins, in the order
    /// raw model call, `disableTools`, empty `tools.allow`. `allow: None` means no allow list
    /// (everything the policy permits); `Some(&[])` is an empty allow list.
    pub fn from_run<S: AsRef<str>>(
        raw_model_call: bool,
        disable_tools: bool,
        allow: Option<&[S]>,
    ) -> RunTools {
        if raw_model_call {
            RunTools::RawModelCall
        } else if disable_tools {
            RunTools::DisableTools
        } else if allow.is_some_and(<[S]>::is_empty) {
            RunTools::EmptyAllowList
        } else {
            RunTools::Active
        }
    }
}

/// Everything about one run that activation depends on besides `enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunContext {
    /// Whether the run has tools. Default [`RunTools::Active`].
    pub tools: RunTools,
    /// The run's model as described by the provider catalog that served the run
    /// ([`crate::ProviderCatalogs::support`]). Default [`ModelSupport::UNLISTED`].
    pub model: ModelSupport,
    /// Whether Tool Search compaction is configured for the run. Code mode and Tool Search are
    /// mutually exclusive: when code mode engages, Tool Search does not apply.
    pub tool_search: bool,
    /// The run is routed through a native harness surface (for example an OpenAI-family model on
    /// the Codex-style harness) where OpenClaw code mode does not apply. Default `false`.
    pub native_harness: bool,
}

/// Why code mode did or did not engage. Serialised in snake_case (`"auto_preferred"`, …);
/// [`fmt::Display`] gives an English sentence for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivationReason {
    /// Not engaged: `enabled` is `false`.
    Disabled,
    /// Not engaged: a raw model call has no tools.
    RawModelCall,
    /// Not engaged: the run has `disableTools: true`.
    DisableTools,
    /// Not engaged: `tools.allow` is empty.
    EmptyAllowList,
    /// Not engaged: the model has no tool support (`compat.supportsTools: false`).
    NoToolSupport,
    /// Not engaged: the run goes through a native harness surface where code mode does not
    /// apply.
    NativeHarness,
    /// Engaged: `enabled` is `true` and the run has tools.
    Forced,
    /// Engaged: `enabled` is `"auto"` and the serving catalog flags the model `"preferred"`.
    AutoPreferred,
    /// Not engaged: `"auto"` and the model is `"capable"`.
    AutoCapable,
    /// Not engaged: `"auto"` and the model has no `compat.codeMode` flag (or is not listed).
    AutoUnflagged,
}

impl ActivationReason {
    /// Whether this reason means code mode engaged ([`Forced`](Self::Forced) or
    /// [`AutoPreferred`](Self::AutoPreferred)).
    pub const fn engages(self) -> bool {
        matches!(
            self,
            ActivationReason::Forced | ActivationReason::AutoPreferred
        )
    }
}

impl fmt::Display for ActivationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ActivationReason::Disabled => "tools.codeMode.enabled is false",
            ActivationReason::RawModelCall => "raw model calls have no tools",
            ActivationReason::DisableTools => "the run has disableTools: true",
            ActivationReason::EmptyAllowList => "the run's tools.allow list is empty",
            ActivationReason::NoToolSupport => "the model does not support tools",
            ActivationReason::NativeHarness => {
                "the run uses a native harness surface where code mode does not apply"
            }
            ActivationReason::Forced => "tools.codeMode.enabled is true",
            ActivationReason::AutoPreferred => {
                "enabled is \"auto\" and the serving catalog flags the model \"preferred\""
            }
            ActivationReason::AutoCapable => {
                "enabled is \"auto\" and the model is only \"capable\""
            }
            ActivationReason::AutoUnflagged => {
                "enabled is \"auto\" and the model has no compat.codeMode flag"
            }
        })
    }
}

/// The activation decision for one run. JSON:
/// `{"engaged":true,"reason":"auto_preferred","toolSearch":false}`.
///
/// `engaged` is what a host reports as `codeModeEngaged` once the code-mode surface is in place;
/// if it is `true` the run must get the code-mode surface or fail
/// ([`ActivationDecision::load_runtime`], [`crate::RuntimeUnavailable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivationDecision {
    /// Whether code mode owns the run's model tool surface.
    pub engaged: bool,
    /// Why.
    pub reason: ActivationReason,
    /// Whether Tool Search compaction applies: configured and code mode not engaged.
    pub tool_search: bool,
}

/// Decides whether code mode engages for a run. Evaluated after the effective tool policy is
/// known and before the model request is assembled. The first rule that applies wins:
///
/// 1. `enabled: false` → not engaged ([`ActivationReason::Disabled`]).
/// 2. A run without tools (raw model call, `disableTools`, empty `tools.allow`) → not engaged,
///    even with `true`.
/// 3. A model without tool support → not engaged, even with `true`.
/// 4. A native harness surface → not engaged, even with `true`.
/// 5. `enabled: true` → engaged ([`ActivationReason::Forced`]).
/// 6. `"auto"` → engaged only for a `"preferred"` model; `"capable"` and absent keep direct
///    tools.
///
/// Tool Search applies only when configured and code mode did not engage.
pub fn decide(enabled: Enabled, run: &RunContext) -> ActivationDecision {
    let reason = match (enabled, run.tools) {
        (Enabled::Off, _) => ActivationReason::Disabled,
        (_, RunTools::RawModelCall) => ActivationReason::RawModelCall,
        (_, RunTools::DisableTools) => ActivationReason::DisableTools,
        (_, RunTools::EmptyAllowList) => ActivationReason::EmptyAllowList,
        _ if !run.model.supports_tools => ActivationReason::NoToolSupport,
        _ if run.native_harness => ActivationReason::NativeHarness,
        (Enabled::On, RunTools::Active) => ActivationReason::Forced,
        (Enabled::Auto, RunTools::Active) => match run.model.tier {
            Some(CodeModeTier::Preferred) => ActivationReason::AutoPreferred,
            Some(CodeModeTier::Capable) => ActivationReason::AutoCapable,
            None => ActivationReason::AutoUnflagged,
        },
    };
    let engaged = reason.engages();
    ActivationDecision {
        engaged,
        reason,
        tool_search: run.tool_search && !engaged,
    }
}

impl CodeModeConfig {
    /// [`decide`] with this config's `enabled`.
    pub fn decide(&self, run: &RunContext) -> ActivationDecision {
        decide(self.enabled(), run)
    }
}
