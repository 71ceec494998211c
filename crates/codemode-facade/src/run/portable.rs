//! Portable parked runs (docs/snapshot-store.md, "What is portable"): the part of a parked
//! [`Run`] that can be written to a durable run store and restored by another process, and the
//! restore itself.
//!
//! Written: the VM snapshot (with the pending bridge requests), settled results not yet
//! delivered, output not yet delivered, the main promise's settlement, refused requests, the
//! effective `restartSafe`, the parent tool-call id of the `exec`, the telemetry counts and the
//! ledger of calls in flight (`pipeline/ledger.rs`: each call's nested id, start and pending
//! approval). Not written: the executor, in-flight tasks, this process's approval broker, the
//! trajectory sink; a restored run takes those from the `wait`'s `RunEnv`. A request that was in
//! flight in the process that wrote the record is dispatched again when it has no effect
//! (`yield_control`, `search`, `describe`) or when its tool waited for an approval (asked again
//! under the same `approvalId`), and otherwise settles with [`lost_call_message`] inside the
//! program; its `nested_tool_result` (status `error`) is recorded in the trajectory of the `wait`
//! that resumes the run here ([`Run::record_resumed`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use codemode_bridge::{BridgeMethod, BridgeRequest, Delivery, OutputItem, RunScope};
use codemode_runtime::Snapshot;
use codemode_snapshot::SnapshotStore;
use codemode_telemetry::{
    AtomicBridgeCounters, BridgeCounters, EventKind, NestedStatus, NestedToolResultEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{wait_reason, Run};
use crate::dispatch::{nested_method, Counters};
use crate::env::RunEnv;
use crate::failure::telemetry;
use crate::pipeline::ledger::LedgerCall;
use crate::result::{CodeModeResult, PendingToolCall};

/// The first bytes of a portable run (format 1): then the header's JSON length (u32 little
/// endian), the header, the snapshot bytes (`Snapshot::to_bytes`).
const MAGIC: &[u8] = b"CMPORT1";

/// The error a tool call in flight in a process that stopped settles with, inside the program.
pub(crate) fn lost_call_message(id: &str) -> String {
    format!("tool call \"{id}\" was lost: the codemode process running it stopped")
}

/// A settlement: the value or the error message.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Settlement {
    Value(Value),
    Error(String),
}

impl From<&Result<Value, String>> for Settlement {
    fn from(outcome: &Result<Value, String>) -> Self {
        match outcome {
            Ok(value) => Settlement::Value(value.clone()),
            Err(error) => Settlement::Error(error.clone()),
        }
    }
}

impl From<Settlement> for Result<Value, String> {
    fn from(settlement: Settlement) -> Self {
        match settlement {
            Settlement::Value(value) => Ok(value),
            Settlement::Error(error) => Err(error),
        }
    }
}

/// The header of a portable run.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    restart_safe: bool,
    parent_tool_call_id: Option<String>,
    output: Vec<OutputItem>,
    main: Option<Settlement>,
    /// Settled requests not yet delivered, in settlement order (bridge id, settlement).
    arrived: Vec<(String, Settlement)>,
    refused: HashMap<String, String>,
    /// The telemetry counts so far (`searchCount`, `describeCount`, `callCount`).
    counters: BridgeCounters,
    /// Nested tool calls started so far (the `<seq>` of nested call ids continues from it).
    nested: u64,
    /// The calls in flight by bridge id (`pipeline/ledger.rs`); absent in records written
    /// before it existed.
    #[serde(default)]
    in_flight: HashMap<String, LedgerCall>,
}

impl Run {
    /// The portable part of this parked run (see the module docs); `None` when it holds no
    /// snapshot (it is not parked). Settlements waiting in the channel are taken in first.
    pub(crate) fn portable_bytes(&mut self) -> Option<Vec<u8>> {
        while let Ok(settled) = self.rx.try_recv() {
            self.accept(settled);
        }
        let snapshot = self.snapshot.as_ref()?.to_bytes();
        let header = Header {
            restart_safe: self.restart_safe,
            parent_tool_call_id: self.env.parent_tool_call_id.clone(),
            output: self.output.clone(),
            main: self.main.as_ref().map(Settlement::from),
            arrived: self
                .arrived
                .iter()
                .map(|d| (d.id.clone(), Settlement::from(&d.outcome)))
                .collect(),
            refused: self.refused.clone(),
            counters: self.dispatcher.counters.bridge.snapshot(),
            nested: self.dispatcher.counters.nested.load(Ordering::SeqCst),
            in_flight: self.dispatcher.ledger.entries(),
        };
        let header = serde_json::to_vec(&header).ok()?;
        let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + snapshot.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&u32::try_from(header.len()).ok()?.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&snapshot);
        Some(out)
    }

    /// Rebuilds a parked run from [`Run::portable_bytes`] under `run_id` for `owner`, with
    /// `env`'s config, catalog, executor and wiring (its scope replaced by `owner` and its parent
    /// tool-call id by the one stored), and
    /// starts its pending work: requests with no effect and tool calls that waited for an
    /// approval are dispatched again, other tool calls that were in flight settle with
    /// [`lost_call_message`] (their `nested_tool_result`s wait in the run for
    /// [`Run::record_resumed`]). The caller parks it in `store`.
    ///
    /// # Errors
    /// A message when the bytes are not a portable run or the snapshot does not parse.
    pub(crate) fn from_portable(
        env: &RunEnv,
        owner: &RunScope,
        store: SnapshotStore<Run>,
        run_id: &str,
        bytes: &[u8],
    ) -> Result<Run, String> {
        let (header, snapshot) = parse(run_id, bytes)?;
        let mut env = env.clone();
        env.parent_tool_call_id = header.parent_tool_call_id;
        env.scope = owner.clone();
        let mut run = Run::new(Arc::new(env), header.restart_safe, store);
        run.run_id = Some(run_id.to_string());
        run.pending = snapshot.pending().to_vec();
        run.snapshot = Some(snapshot);
        run.output = header.output;
        run.main = header.main.map(Into::into);
        run.refused = header.refused;
        run.dispatcher.counters = Arc::new(Counters {
            bridge: AtomicBridgeCounters::new(header.counters),
            nested: AtomicU64::new(header.nested),
        });
        run.arrived = header
            .arrived
            .into_iter()
            .map(|(id, settlement)| Delivery {
                id,
                outcome: settlement.into(),
            })
            .collect();
        run.dispatcher.ledger.restore(header.in_flight);
        let lost: Vec<BridgeRequest> = run
            .in_flight_calls()
            .filter(|p| !run.dispatcher.ledger.awaits_approval(&p.id))
            .cloned()
            .collect();
        for request in lost {
            let event = run.lost_event(&request, run_id);
            run.lost.push(event);
            run.arrived.push(Delivery {
                outcome: Err(lost_call_message(&request.id)),
                id: request.id,
            });
        }
        run.dispatch_new();
        Ok(run)
    }
}

impl Run {
    /// The `nested_tool_result` of `request`, lost with the process that ran it: status
    /// `error`, the lost-call message, the ids its `nested_tool_call` had there and the time
    /// since it started (from the ledger; a record without a ledger entry for it names the
    /// call by its bridge id and the tool by the `id` argument, with `durationMs` 0).
    fn lost_event(&self, request: &BridgeRequest, run_id: &str) -> NestedToolResultEvent {
        let call = self.dispatcher.ledger.take(&request.id);
        let now = codemode_snapshot::record::now_ms();
        let named = request.args.get("id").and_then(Value::as_str).unwrap_or("");
        let call = call.unwrap_or_else(|| LedgerCall {
            tool_call_id: request.id.clone(),
            tool_id: named.to_string(),
            tool_name: named.to_string(),
            method: nested_method(request.method),
            started_at_ms: now,
            awaiting_approval: None,
        });
        NestedToolResultEvent {
            tool_call_id: call.tool_call_id,
            parent_tool_call_id: self.env.parent_tool_call_id.clone(),
            code_mode_run_id: Some(run_id.to_string()),
            tool_id: call.tool_id,
            tool_name: call.tool_name,
            method: call.method,
            status: NestedStatus::Error,
            duration_ms: now.saturating_sub(call.started_at_ms),
            result: None,
            error: Some(lost_call_message(&request.id)),
        }
    }

    /// Records the `nested_tool_result`s of the calls lost with the process that last held the
    /// run (once; nothing for a run that was not restored from a record).
    pub(crate) fn record_lost(&mut self) {
        for event in std::mem::take(&mut self.lost) {
            self.trajectory.record(EventKind::NestedToolResult(event));
        }
    }
}

/// Splits portable bytes into their header and snapshot.
///
/// # Errors
/// `stored code mode run <id> is unreadable: <why>` when they are not a portable run.
fn parse(run_id: &str, bytes: &[u8]) -> Result<(Header, Snapshot), String> {
    let malformed = |why: &str| format!("stored code mode run {run_id} is unreadable: {why}");
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("not a portable run"))?;
    let (len, rest) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| malformed("truncated"))?;
    let len = u32::from_le_bytes(*len) as usize;
    if rest.len() < len {
        return Err(malformed("truncated"));
    }
    let (header, snapshot) = rest.split_at(len);
    let header: Header =
        serde_json::from_slice(header).map_err(|e| malformed(&format!("header: {e}")))?;
    let snapshot = Snapshot::from_bytes(snapshot).map_err(|e| malformed(&e.to_string()))?;
    Ok((header, snapshot))
}

/// The catalog's fingerprint a stored run is sealed to: the hex SHA-256 of its tool ids, one per
/// line, in catalog order. A run restored against a catalog with other tools is refused.
pub(crate) fn catalog_fingerprint(catalog: &codemode_catalog::Catalog) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for entry in catalog.entries() {
        hasher.update(entry.id().as_bytes());
        hasher.update(b"\n");
    }
    hex(&hasher.finalize())
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sealed record this process last wrote for a run: the SHA-256 of its body and its expiry
/// (ms since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordStamp {
    pub(crate) digest: [u8; 32],
    pub(crate) expires_at_ms: u64,
}

impl Run {
    /// The record this process last wrote for the run (`None` when it wrote none): a record
    /// whose digest differs was written by another process since.
    pub(crate) fn record(&self) -> Option<RecordStamp> {
        self.record
    }

    /// The run's id once parked, else `""`.
    pub(crate) fn run_id_or_empty(&self) -> String {
        self.run_id.clone().unwrap_or_default()
    }

    /// Remembers the record just written for the run.
    pub(crate) fn set_record(&mut self, record: RecordStamp) {
        self.record = Some(record);
    }

    /// Pending requests that would be lost if the run were restored elsewhere: tool calls (and
    /// other host work with effects) not yet settled, refused or delivered. `yield_control`,
    /// `search` and `describe` are re-dispatched by a restore, so they never count.
    fn in_flight_calls(&self) -> impl Iterator<Item = &BridgeRequest> + '_ {
        self.pending
            .iter()
            .filter(|p| {
                !self.arrived.iter().any(|d| d.id == p.id) && !self.refused.contains_key(&p.id)
            })
            .filter(|p| {
                !matches!(
                    p.method,
                    BridgeMethod::Yield | BridgeMethod::Search | BridgeMethod::Describe
                )
            })
    }

    /// `true` while the parked run has tool calls in flight in this process (settlements
    /// waiting in the channel are taken in first): what an owner lease covers
    /// (docs/snapshot-store.md, "Owner leases and changes").
    pub(crate) fn has_calls_in_flight(&mut self) -> bool {
        while let Ok(settled) = self.rx.try_recv() {
            self.accept(settled);
        }
        self.in_flight_calls().next().is_some()
    }

    /// Poked after each of the run's requests settles.
    pub(crate) fn settled_signal(&self) -> Arc<tokio::sync::Notify> {
        self.dispatcher.settled.clone()
    }
}

/// The `waiting` result a `wait` answers for a run parked in another process that still runs
/// its tool calls, from the portable bytes of its record: the requests not yet settled there
/// (with `yield_control`s), no output (the owner keeps it for the `wait` that resumes the run), no
/// approvals (they wait in the owner's broker), and the telemetry counts of the record.
///
/// # Errors
/// A message when the bytes are not a portable run or the snapshot does not parse.
pub(crate) fn waiting_elsewhere(
    env: &RunEnv,
    run_id: &str,
    bytes: &[u8],
) -> Result<CodeModeResult, String> {
    let (header, snapshot) = parse(run_id, bytes)?;
    let settled: Vec<String> = header.arrived.into_iter().map(|(id, _)| id).collect();
    let unsettled: Vec<&BridgeRequest> = snapshot
        .pending()
        .iter()
        .filter(|p| p.method == BridgeMethod::Yield || !settled.contains(&p.id))
        .collect();
    let reason = wait_reason(&unsettled);
    let counters = Counters {
        bridge: AtomicBridgeCounters::new(header.counters),
        nested: AtomicU64::new(header.nested),
    };
    Ok(CodeModeResult::Waiting {
        run_id: run_id.to_string(),
        reason,
        pending_tool_calls: unsettled
            .iter()
            .map(|p| PendingToolCall {
                id: p.id.clone(),
                method: p.method,
            })
            .collect(),
        pending_approvals: Vec::new(),
        replay_safe: header.restart_safe,
        output: Vec::new(),
        telemetry: telemetry(env, &counters),
    })
}
