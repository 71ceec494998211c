//! Code-mode telemetry, below the facade and free of wasmtime and tokio (`docs/telemetry.md`).
//!
//! - [`counters`]: the per-run bridge counters ([`BridgeCounters`], [`AtomicBridgeCounters`])
//!   and the `telemetry` record on every result ([`Telemetry`], with [`SourceCounts`] from `codemode-bridge`;
//!   docs/contract/telemetry.md#s9).
//! - [`event`]: trajectory events (docs/contract/host.md#h4), one JSON line each
//!   ([`TrajectoryEvent`], [`EventKind`]), redacted when built.
//! - [`redact`]: the redaction rule for inputs, results and errors.
//! - [`sink`]: the [`TrajectorySink`] trait, the JSON-lines file sink, the in-memory sink, the
//!   `tracing` sink, the fan-out, and the [`Trajectory`] handle a run records through.
//! - [`transcript`]: the transcript projection, nested calls under their `exec`/`wait`.
//! - [`meta`]: run metadata (docs/contract/host.md#h5): `agentMeta`, `toolSummary`, `costUsd`.
#![deny(missing_docs)]

pub mod counters;
pub mod event;
pub mod meta;
pub mod redact;
pub mod sink;
pub mod transcript;

pub use codemode_bridge::{RunScope, SourceCounts};
pub use counters::{AtomicBridgeCounters, BridgeCounters, CounterKind, Telemetry};
pub use event::{
    now_rfc3339, parse_json_lines, ApprovalDecision, ApprovalRequestedEvent, ApprovalResolvedEvent,
    EventKind, NestedMethod, NestedStatus, NestedToolCallEvent, NestedToolResultEvent, ParkReason,
    ParseError, RunEndedEvent, RunParkedEvent, RunResumedEvent, ToolCallEvent, ToolInputKind,
    ToolKind, ToolResultEvent, ToolStatus, TrajectoryEvent,
};
pub use meta::{cost_usd, AgentMeta, ModelCost, RunMeta, TokenUsage, ToolSummary};
pub use redact::{
    is_sensitive_key, redact_string, redact_text, redact_value, truncate_string, MAX_STRING_CHARS,
    REDACTED,
};
pub use sink::{
    FanOut, JsonLinesSink, MemorySink, TracingSink, Trajectory, TrajectorySink, TRACING_TARGET,
};
pub use transcript::{NestedTranscriptCall, Transcript, TranscriptBuilder, TranscriptCall};
