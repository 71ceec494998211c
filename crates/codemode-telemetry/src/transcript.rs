//! The transcript projection (docs/contract/host.md#h4): provider-visible calls with their
//! arguments and results, and every nested call as a real tool call under the `exec` or `wait`
//! it happened in.
//!
//! Placement of a nested call started while provider calls are open (newest first):
//!
//! 1. the open `exec` whose id is the nested call's `parentToolCallId`;
//! 2. an open `wait` on the same code-mode run: its `runId` argument is the nested call's
//!    `codeModeRunId`, or is a run that the parent `exec` parked as (learned from that `exec`'s
//!    `tool_result` or from `run_parked`). Its `parentToolCallId` stays the original `exec`'s id,
//!    as the nested call id `tool_search_code:<exec id>:<tool>:<seq>` says
//!    (docs/contract/catalog.md#s3-5);
//! 3. otherwise the provider call named by `parentToolCallId`, if there was one;
//! 4. otherwise the only open `exec`/`wait`, if exactly one is open;
//! 5. otherwise it is kept in `unplacedNestedCalls`, never dropped.
//!
//! A nested call's result lands where its call was placed, whenever it arrives (a call started
//! during `exec` and settled during a later `wait` stays under the `exec`). Order is event order.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{EventKind, NestedStatus, ToolKind, ToolStatus, TrajectoryEvent};

/// How many provider call ids (and runs) [`Placer`] remembers before starting over.
const MAX_SEEN: usize = 65_536;

#[derive(Debug, Clone)]
struct OpenCall {
    id: String,
    kind: ToolKind,
    /// The `runId` argument of a `wait`.
    wait_run: Option<String>,
}

/// Tracks open provider calls and which `exec` each code-mode run belongs to; decides which
/// provider call owns a nested call (the rules in the module docs). Shared by the transcript and
/// the tracing sink.
#[derive(Debug, Default)]
pub(crate) struct Placer {
    open: Vec<OpenCall>,
    run_exec: HashMap<String, String>,
    seen: HashSet<String>,
}

impl Placer {
    /// Updates the state with one event (call before asking [`Placer::owner`] about it).
    pub(crate) fn observe(&mut self, kind: &EventKind) {
        // A long-lived tracing sink sees every call of a process: bound what is remembered
        // (only rule 3 of the module docs uses it, and only for calls still being discussed).
        if self.seen.len() >= MAX_SEEN {
            self.seen.clear();
        }
        if self.run_exec.len() >= MAX_SEEN {
            self.run_exec.clear();
        }
        match kind {
            EventKind::ToolCall(e) => {
                let wait_run = (e.tool_kind == ToolKind::CodeModeWait)
                    .then(|| e.input.get("runId").and_then(Value::as_str))
                    .flatten()
                    .map(str::to_string);
                self.seen.insert(e.tool_call_id.clone());
                self.open.push(OpenCall {
                    id: e.tool_call_id.clone(),
                    kind: e.tool_kind,
                    wait_run,
                });
            }
            EventKind::ToolResult(e) => {
                if let (ToolKind::CodeModeExec, Some(run)) = (e.tool_kind, &e.code_mode_run_id) {
                    self.run_exec.insert(run.clone(), e.tool_call_id.clone());
                }
                if let Some(i) = self.open.iter().rposition(|c| c.id == e.tool_call_id) {
                    let call = self.open.remove(i);
                    // A `wait` that completed ended its run: forget the run. (A failed `wait`
                    // may be a refusal that leaves the run parked, so it is remembered.)
                    if let (Some(run), ToolStatus::Completed) = (call.wait_run, e.status) {
                        self.run_exec.remove(&run);
                    }
                }
            }
            EventKind::RunExpired(e) | EventKind::RunAborted(e) => {
                if let Some(run) = &e.code_mode_run_id {
                    self.run_exec.remove(run);
                }
            }
            EventKind::RunParked(e) => {
                let exec = e.parent_tool_call_id.clone().or_else(|| {
                    self.open
                        .iter()
                        .any(|c| c.id == e.tool_call_id && c.kind == ToolKind::CodeModeExec)
                        .then(|| e.tool_call_id.clone())
                });
                if let Some(exec) = exec {
                    self.run_exec.insert(e.code_mode_run_id.clone(), exec);
                }
            }
            _ => {}
        }
    }

    /// The provider call id that owns a nested call with this parent and run, if any.
    pub(crate) fn owner(&self, parent: Option<&str>, run: Option<&str>) -> Option<String> {
        let hit = self.open.iter().rev().find(|c| match c.kind {
            ToolKind::CodeModeExec => parent == Some(c.id.as_str()),
            ToolKind::CodeModeWait => c.wait_run.as_deref().is_some_and(|r| {
                run == Some(r)
                    || (parent.is_some() && self.run_exec.get(r).map(String::as_str) == parent)
            }),
            ToolKind::Tool => false,
        });
        if let Some(c) = hit {
            return Some(c.id.clone());
        }
        if let Some(p) = parent.filter(|p| self.seen.contains(*p)) {
            return Some(p.to_string());
        }
        let mut code_mode = self.open.iter().filter(|c| c.kind != ToolKind::Tool);
        match (code_mode.next(), code_mode.next()) {
            (Some(only), None) => Some(only.id.clone()),
            _ => None,
        }
    }
}

/// A nested call as a real tool call: `{toolCallId, name, toolId, input, result,
/// parentToolCallId, status?, error?}` (`result` and `parentToolCallId` are `null` when unknown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedTranscriptCall {
    /// `tool_search_code:<parent>:<tool name>:<seq>`.
    pub tool_call_id: String,
    /// The registered tool name (what a direct call would be named).
    pub name: String,
    /// The catalog id.
    pub tool_id: String,
    /// The input, as redacted in the trajectory.
    pub input: Value,
    /// The tool result (`null` until it settles, and when it failed).
    pub result: Value,
    /// The original `exec` call's id.
    pub parent_tool_call_id: Option<String>,
    /// How it ended, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<NestedStatus>,
    /// The error message, when it did not end `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A provider-visible call: `{toolCallId, name, toolKind, arguments, status?, result, error?,
/// nestedCalls}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptCall {
    /// The provider's tool-call id.
    pub tool_call_id: String,
    /// The tool name (`exec`, `wait`, a direct tool).
    pub name: String,
    /// What kind of tool it is.
    pub tool_kind: ToolKind,
    /// The arguments, as redacted in the trajectory (`null` if its `tool_call` was missing).
    pub arguments: Value,
    /// The result's status, once it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// The result (`null` until it returns).
    pub result: Value,
    /// A direct tool's error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Nested calls placed under this call, in order.
    pub nested_calls: Vec<NestedTranscriptCall>,
}

/// The transcript of a sequence of trajectory events: `{"toolCalls": [...]}`, plus
/// `"unplacedNestedCalls": [...]` when some nested call had no provider call to go under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    /// Provider-visible calls in the order they were made.
    pub tool_calls: Vec<TranscriptCall>,
    /// Nested calls no provider call could own (see the module docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced_nested_calls: Vec<NestedTranscriptCall>,
}

impl Transcript {
    /// Projects `events` (in recorded order).
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a TrajectoryEvent>) -> Transcript {
        let mut b = TranscriptBuilder::default();
        for e in events {
            b.push(e);
        }
        b.finish()
    }

    /// The control calls (`exec`/`wait`) as `(name, arguments)` in order: what a replay of this
    /// transcript sends again. Arguments are as recorded, i.e. redacted: an `exec` whose `code`
    /// was longer than 4096 characters does not replay exactly.
    pub fn control_calls(&self) -> Vec<(&str, &Value)> {
        self.tool_calls
            .iter()
            .filter(|c| c.tool_kind != ToolKind::Tool)
            .map(|c| (c.name.as_str(), &c.arguments))
            .collect()
    }
}

/// Where a nested call sits: under a provider call (index) or unplaced, at an index.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Under(usize, usize),
    Unplaced(usize),
}

/// Builds a [`Transcript`] one event at a time (for hosts that project as they go).
#[derive(Debug, Default)]
pub struct TranscriptBuilder {
    placer: Placer,
    calls: Vec<TranscriptCall>,
    by_id: HashMap<String, usize>,
    nested: HashMap<String, Slot>,
    unplaced: Vec<NestedTranscriptCall>,
}

impl TranscriptBuilder {
    /// An empty builder.
    pub fn new() -> TranscriptBuilder {
        TranscriptBuilder::default()
    }

    fn call_index(&mut self, id: &str, name: &str, kind: ToolKind) -> usize {
        if let Some(&i) = self.by_id.get(id) {
            return i;
        }
        self.calls.push(TranscriptCall {
            tool_call_id: id.to_string(),
            name: name.to_string(),
            tool_kind: kind,
            arguments: Value::Null,
            status: None,
            result: Value::Null,
            error: None,
            nested_calls: Vec::new(),
        });
        self.by_id.insert(id.to_string(), self.calls.len() - 1);
        self.calls.len() - 1
    }

    fn place(&mut self, call: NestedTranscriptCall, run: Option<&str>) -> Slot {
        let id = call.tool_call_id.clone();
        let owner = self
            .placer
            .owner(call.parent_tool_call_id.as_deref(), run)
            .and_then(|o| self.by_id.get(&o).copied());
        let slot = match owner {
            Some(i) => {
                self.calls[i].nested_calls.push(call);
                Slot::Under(i, self.calls[i].nested_calls.len() - 1)
            }
            None => {
                self.unplaced.push(call);
                Slot::Unplaced(self.unplaced.len() - 1)
            }
        };
        self.nested.insert(id, slot);
        slot
    }

    fn slot_mut(&mut self, slot: Slot) -> &mut NestedTranscriptCall {
        match slot {
            Slot::Under(i, j) => &mut self.calls[i].nested_calls[j],
            Slot::Unplaced(j) => &mut self.unplaced[j],
        }
    }

    /// Adds one event. Approval and run lifecycle events only inform placement.
    pub fn push(&mut self, event: &TrajectoryEvent) {
        let kind = event.kind();
        self.placer.observe(kind);
        match kind {
            EventKind::ToolCall(e) => {
                // A reused id starts a new entry.
                self.by_id.remove(&e.tool_call_id);
                let i = self.call_index(&e.tool_call_id, &e.tool_name, e.tool_kind);
                self.calls[i].arguments = e.input.clone();
            }
            EventKind::ToolResult(e) => {
                let i = self.call_index(&e.tool_call_id, &e.tool_name, e.tool_kind);
                let call = &mut self.calls[i];
                call.status = Some(e.status);
                call.result = e.result.clone().unwrap_or(Value::Null);
                call.error = e.error.clone();
            }
            EventKind::NestedToolCall(e) => {
                let call = NestedTranscriptCall {
                    tool_call_id: e.tool_call_id.clone(),
                    name: e.tool_name.clone(),
                    tool_id: e.tool_id.clone(),
                    input: e.input.clone(),
                    result: Value::Null,
                    parent_tool_call_id: e.parent_tool_call_id.clone(),
                    status: None,
                    error: None,
                };
                self.place(call, e.code_mode_run_id.as_deref());
            }
            EventKind::NestedToolResult(e) => {
                let slot = match self.nested.get(&e.tool_call_id) {
                    Some(&slot) => slot,
                    None => {
                        let call = NestedTranscriptCall {
                            tool_call_id: e.tool_call_id.clone(),
                            name: e.tool_name.clone(),
                            tool_id: e.tool_id.clone(),
                            input: Value::Null,
                            result: Value::Null,
                            parent_tool_call_id: e.parent_tool_call_id.clone(),
                            status: None,
                            error: None,
                        };
                        self.place(call, e.code_mode_run_id.as_deref())
                    }
                };
                let call = self.slot_mut(slot);
                call.status = Some(e.status);
                call.result = e.result.clone().unwrap_or(Value::Null);
                call.error = e.error.clone();
            }
            _ => {}
        }
    }

    /// The transcript so far.
    pub fn finish(self) -> Transcript {
        Transcript {
            tool_calls: self.calls,
            unplaced_nested_calls: self.unplaced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{RunEndedEvent, ToolCallEvent, ToolResultEvent};
    use serde_json::json;

    fn call(id: &str, kind: ToolKind, input: Value) -> EventKind {
        EventKind::ToolCall(ToolCallEvent {
            tool_call_id: id.into(),
            tool_name: "x".into(),
            tool_kind: kind,
            tool_input_kind: None,
            input,
        })
    }

    fn result(id: &str, kind: ToolKind, status: ToolStatus, run: Option<&str>) -> EventKind {
        EventKind::ToolResult(ToolResultEvent {
            tool_call_id: id.into(),
            tool_name: "x".into(),
            tool_kind: kind,
            tool_input_kind: None,
            status,
            code_mode_run_id: run.map(str::to_string),
            duration_ms: 0,
            result: None,
            error: None,
        })
    }

    #[test]
    fn runs_are_forgotten_when_they_end() {
        let mut p = Placer::default();
        p.observe(&call("A", ToolKind::CodeModeExec, json!({})));
        p.observe(&result(
            "A",
            ToolKind::CodeModeExec,
            ToolStatus::Waiting,
            Some("cm_a"),
        ));
        p.observe(&call(
            "W1",
            ToolKind::CodeModeWait,
            json!({"runId": "cm_a"}),
        ));
        assert_eq!(p.owner(Some("A"), None).as_deref(), Some("W1"));
        p.observe(&result(
            "W1",
            ToolKind::CodeModeWait,
            ToolStatus::Waiting,
            Some("cm_a"),
        ));
        assert_eq!(p.run_exec.get("cm_a").map(String::as_str), Some("A"));
        // A refused wait (another session's, say) leaves the run parked and remembered.
        p.observe(&call(
            "W2",
            ToolKind::CodeModeWait,
            json!({"runId": "cm_a"}),
        ));
        p.observe(&result(
            "W2",
            ToolKind::CodeModeWait,
            ToolStatus::Failed,
            None,
        ));
        assert_eq!(p.run_exec.get("cm_a").map(String::as_str), Some("A"));
        p.observe(&call(
            "W3",
            ToolKind::CodeModeWait,
            json!({"runId": "cm_a"}),
        ));
        assert_eq!(p.owner(Some("A"), None).as_deref(), Some("W3"));
        p.observe(&result(
            "W3",
            ToolKind::CodeModeWait,
            ToolStatus::Completed,
            None,
        ));
        assert!(p.run_exec.is_empty());
        assert!(p.open.is_empty());
        // With nothing open, a known parent still owns its nested call (rule 3).
        assert_eq!(p.owner(Some("A"), None).as_deref(), Some("A"));
        assert_eq!(p.owner(Some("nope"), None), None);

        p.observe(&call("B", ToolKind::CodeModeExec, json!({})));
        p.observe(&result(
            "B",
            ToolKind::CodeModeExec,
            ToolStatus::Waiting,
            Some("cm_b"),
        ));
        p.observe(&EventKind::RunExpired(RunEndedEvent {
            code_mode_run_id: Some("cm_b".into()),
            parent_tool_call_id: Some("B".into()),
            reason: None,
        }));
        assert!(p.run_exec.is_empty());
    }
}
