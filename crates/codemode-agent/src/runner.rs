//! Runs a turn's scripted calls in order: `exec` / `wait` through [`CodeMode`], every other
//! payload tool directly through the [`ToolPipeline`], each framed in the trajectory.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use codemode_bridge::ToolCall;
use codemode_facade::pipeline::ToolPipeline;
use codemode_facade::surface::{EXEC_TOOL_NAME, WAIT_TOOL_NAME};
use codemode_facade::{CodeMode, RunEnv};
use codemode_runtime::AbortHandle;
use codemode_telemetry::{
    BridgeCounters, EventKind, ToolCallEvent, ToolInputKind, ToolKind, ToolResultEvent, ToolStatus,
    ToolSummary,
};
use serde_json::{json, Value};

use crate::payload::{direct_only_id, Prepared};
use crate::reference::resolve_references;
use crate::script::ScriptToolCall;

/// The state of a running turn.
pub(crate) struct Runner<'a> {
    /// The environment of the turn's `exec` / `wait` calls (config, catalog, executor, scope,
    /// policy, hooks, approvals, trajectory, visible tools); each call adds its own id.
    env: RunEnv,
    prepared: &'a Prepared,
    code_mode: Option<&'a CodeMode>,
    /// Direct calls go through this pipeline.
    pipeline: ToolPipeline,
    /// Results by call id, for `$result:` references.
    results: HashMap<String, Value>,
    /// The last bridge counters of each code-mode run, by run id.
    run_counters: BTreeMap<String, BridgeCounters>,
    /// Counters of runs that ended without ever parking.
    finished_counters: BridgeCounters,
    summary: ToolSummary,
}

/// The counters of a code-mode result's `telemetry`.
fn counters_of(result: &Value) -> BridgeCounters {
    let t = &result["telemetry"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    BridgeCounters {
        search: n("searchCount"),
        describe: n("describeCount"),
        call: n("callCount"),
    }
}

/// How a call was run: framed by the facade (`exec` / `wait`, which record their own
/// `tool_call` / `tool_result`) or by the runner (direct tools, refusals).
enum Dispatched {
    /// A code-mode result, already in the trajectory.
    Framed(Value),
    /// A direct call's `(status, result, error)`.
    Direct(ToolStatus, Value, Option<String>),
}

impl<'a> Runner<'a> {
    /// A runner that has run nothing yet: `env` frames the `exec` / `wait` calls (it records
    /// into the turn's trajectory), `pipeline` runs the direct calls.
    pub(crate) fn new(
        env: RunEnv,
        prepared: &'a Prepared,
        code_mode: Option<&'a CodeMode>,
        pipeline: ToolPipeline,
    ) -> Self {
        Runner {
            env,
            prepared,
            code_mode,
            pipeline,
            results: HashMap::new(),
            run_counters: BTreeMap::new(),
            finished_counters: BridgeCounters::default(),
            summary: ToolSummary::default(),
        }
    }

    /// The bridge counters of every code-mode run of the turn (the last ones of each run) and
    /// the per-tool call counts.
    pub(crate) fn finish(self) -> (BridgeCounters, ToolSummary) {
        let mut bridge = self.finished_counters;
        for counters in self.run_counters.values() {
            bridge += *counters;
        }
        (bridge, self.summary)
    }

    /// Runs one scripted call and keeps its result for later `$result:` references.
    pub(crate) async fn call(&mut self, call: &ScriptToolCall) {
        let started = Instant::now();
        let engaged = self.code_mode.is_some();
        let kind = match call.name.as_str() {
            EXEC_TOOL_NAME if engaged => ToolKind::CodeModeExec,
            WAIT_TOOL_NAME if engaged => ToolKind::CodeModeWait,
            _ => ToolKind::Tool,
        };
        self.summary.record(&call.name);
        let dispatched = match resolve_references(&call.arguments, &self.results) {
            Ok(arguments) => self.dispatch(call, kind, arguments).await,
            Err(e) => Dispatched::Direct(
                ToolStatus::Failed,
                json!({"error": e.to_string()}),
                Some(e.to_string()),
            ),
        };
        let result = match dispatched {
            Dispatched::Framed(value) => value,
            Dispatched::Direct(status, result, error) => {
                let input = resolve_references(&call.arguments, &self.results)
                    .unwrap_or_else(|_| call.arguments.clone());
                let input_kind = (kind == ToolKind::CodeModeExec)
                    .then(|| ToolInputKind::of_exec_input(&input))
                    .flatten();
                self.env
                    .trajectory
                    .record(EventKind::ToolCall(ToolCallEvent {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        tool_kind: kind,
                        tool_input_kind: input_kind,
                        input,
                    }));
                self.env
                    .trajectory
                    .record(EventKind::ToolResult(ToolResultEvent {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        tool_kind: kind,
                        tool_input_kind: input_kind,
                        status,
                        code_mode_run_id: None,
                        duration_ms: started.elapsed().as_millis() as u64,
                        result: error.is_none().then(|| result.clone()),
                        error,
                    }));
                result
            }
        };
        self.results.insert(call.id.clone(), result);
    }

    /// Runs one call with its references resolved.
    async fn dispatch(
        &mut self,
        call: &ScriptToolCall,
        kind: ToolKind,
        arguments: Value,
    ) -> Dispatched {
        let failed = |error: String| {
            Dispatched::Direct(ToolStatus::Failed, json!({"error": error}), Some(error))
        };
        let abort = AbortHandle::new();
        if call.abort {
            abort.abort();
        }
        if !self
            .prepared
            .payload
            .tools
            .iter()
            .any(|t| t.name == call.name)
        {
            return failed(format!(
                "tool {:?} is not in the provider payload",
                call.name
            ));
        }
        if let (Some(code_mode), ToolKind::CodeModeExec | ToolKind::CodeModeWait) =
            (self.code_mode, kind)
        {
            // The facade frames the call (outer hooks, `tool_call` / `tool_result`) and records
            // the run's own events into the same trajectory.
            let env = self.env.clone().with_tool_call_id(call.id.clone());
            let result = if kind == ToolKind::CodeModeExec {
                code_mode.exec(&env, &arguments, &abort).await
            } else {
                code_mode.wait_with(&env, &arguments, &abort).await
            };
            let value = result.to_json();
            let counters = counters_of(&value);
            let run_id = match (kind, result.run_id()) {
                (_, Some(id)) => Some(id.to_string()),
                (ToolKind::CodeModeWait, None) => arguments
                    .get("runId")
                    .or_else(|| arguments.get("run_id"))
                    .and_then(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .filter(|id| self.run_counters.contains_key(id)),
                _ => None,
            };
            match &run_id {
                Some(id) => {
                    self.run_counters.insert(id.clone(), counters);
                }
                None => self.finished_counters += counters,
            }
            return Dispatched::Framed(value);
        }
        // A direct tool: through the pipeline with its catalog id.
        // The same filter the payload was built with: a denied or control spec sharing the name
        // of an offered tool is never what a direct call runs.
        let Some(index) = self
            .prepared
            .specs
            .iter()
            .position(|s| s.name == call.name && s.allowed && s.control.is_none())
        else {
            return failed(format!("tool {:?} has no executor", call.name));
        };
        let spec = &self.prepared.specs[index];
        let tool_id = self
            .prepared
            .catalog
            .entries()
            .iter()
            .find(|e| self.prepared.catalog_specs.get(e.spec_index()) == Some(spec))
            .map(|e| e.id().to_string())
            .unwrap_or_else(|| direct_only_id(spec));
        if abort.is_aborted() {
            return failed("the tool call was aborted".to_string());
        }
        let outcome = self
            .pipeline
            .call(ToolCall {
                tool_id,
                tool_name: spec.name.clone(),
                input: arguments,
                scope: self.env.scope.clone(),
                bridge_id: String::new(),
                tool_call_id: call.id.clone(),
                parent_tool_call_id: None,
                code_mode_run_id: None,
            })
            .await;
        match outcome {
            Ok(value) => Dispatched::Direct(ToolStatus::Completed, value, None),
            Err(error) => failed(error.to_string()),
        }
    }
}
