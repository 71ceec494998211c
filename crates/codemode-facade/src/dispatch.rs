//! Host side of bridge requests: `search`, `describe`, `call`, `callValue` against the run's
//! catalog and the host's [`ToolExecutor`](codemode_bridge::ToolExecutor) (docs/contract/catalog.md#s3-3 to #s3-5).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use codemode_bridge::{BridgeMethod, BridgeRequest, Delivery, RunScope, ToolCall};
use codemode_catalog::{Catalog, LookupOp, McpNamespace, NamespaceAction};
use codemode_telemetry::{
    AtomicBridgeCounters, CounterKind, EventKind, NestedMethod, NestedStatus, NestedToolCallEvent,
    NestedToolResultEvent, Trajectory,
};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::pipeline::ledger::{CallLedger, LedgerCall};
use crate::pipeline::ToolPipeline;

/// Cumulative counters of one run, across its `exec` and `wait`s.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// The bridge counts of telemetry (docs/contract/telemetry.md#s9).
    pub(crate) bridge: AtomicBridgeCounters,
    /// Nested tool calls started, for `tool_search_code:<parent>:<name>:<seq>` ids.
    pub(crate) nested: AtomicU64,
}

/// What [`Dispatcher::dispatch`] did with a request.
pub(crate) enum Dispatched {
    /// It settled during the dispatch, without waiting for anything.
    Settled(Delivery),
    /// It waits for something (I/O, a timer, an approval): a task on the async runtime sends
    /// its settlement to the run's channel.
    Running(JoinHandle<()>),
}

/// What a dispatched request needs from its run.
#[derive(Clone)]
pub(crate) struct Dispatcher {
    pub(crate) catalog: Arc<Catalog>,
    /// The host's executor behind policy, hooks and approval (docs/contract/host.md#h2).
    pub(crate) pipeline: ToolPipeline,
    /// Where `nested_tool_call` / `nested_tool_result` go.
    pub(crate) trajectory: Trajectory,
    pub(crate) scope: RunScope,
    pub(crate) parent_tool_call_id: Option<String>,
    /// The run's `MCP` namespace (docs/contract/mcp.md#s7), built from the catalog once per run.
    pub(crate) namespace: Arc<McpNamespace>,
    pub(crate) counters: Arc<Counters>,
    /// Upper bound on one tool call: a run cannot be resumed after its snapshot TTL anyway.
    pub(crate) tool_timeout: Duration,
    /// Poked after every settlement is sent: the owner task of a parked run waits on it to
    /// write settled results to a durable store (docs/snapshot-store.md, "Owner leases and
    /// changes").
    pub(crate) settled: Arc<tokio::sync::Notify>,
    /// The run's calls in flight (shared with `pipeline`), written in its portable record.
    pub(crate) ledger: Arc<CallLedger>,
}

impl Dispatcher {
    /// Starts `request`. Work that settles without waiting (a search, a describe, a tool whose
    /// executor answers at once) settles here, on the caller's thread (the run's task, or the
    /// leg thread that goes on with the run, `run/inline.rs`): [`Dispatched::Settled`]
    /// (not when the pipeline may ask a person, [`ToolPipeline::may_ask`]).
    /// Anything else becomes a task on the async runtime that sends its settlement to `tx` as a
    /// [`Delivery`] when it completes: [`Dispatched::Running`] (docs/architecture.md, "Calls
    /// that settle at once").
    /// Counters move at dispatch time, so they are exact even for calls still running.
    pub(crate) fn dispatch(
        &self,
        request: &BridgeRequest,
        run_id: Option<String>,
        tx: UnboundedSender<Delivery>,
    ) -> Dispatched {
        let this = self.clone();
        let request = request.clone();
        match request.method {
            BridgeMethod::Search => {
                this.counters.bridge.bump(CounterKind::Search);
            }
            BridgeMethod::Describe => {
                this.counters.bridge.bump(CounterKind::Describe);
            }
            _ => {}
        }
        let settled = this.settled.clone();
        let mut work = Box::pin(async move {
            let id = request.id.clone();
            let outcome = this.run(request, run_id).await;
            Delivery { id, outcome }
        });
        // One poll first, unless the call may ask a person (`ToolPipeline::may_ask`): a future
        // that registered a waker and returned `Pending` is polled again by its task below,
        // which registers the task's own waker in its place.
        if !self.pipeline.may_ask() {
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(delivery) = work.as_mut().poll(&mut cx) {
                settled.notify_one();
                return Dispatched::Settled(delivery);
            }
        }
        Dispatched::Running(tokio::spawn(async move {
            let delivery = work.await;
            let _ = tx.send(delivery);
            settled.notify_one();
        }))
    }

    /// Answers one request. Takes the request by value so a call's `input` moves into the
    /// [`ToolCall`] and a `callValue`'s `details` out of the result without copies
    /// (docs/threat-model.md, "Host memory").
    async fn run(
        &self,
        mut request: BridgeRequest,
        run_id: Option<String>,
    ) -> Result<Value, String> {
        let input = match request.method {
            BridgeMethod::Call | BridgeMethod::CallValue => request
                .args
                .as_object_mut()
                .and_then(|args| args.remove("input")),
            _ => None,
        };
        let request = &request;
        let args = &request.args;
        match request.method {
            BridgeMethod::Search => {
                let query = args.get("query").unwrap_or(&Value::Null);
                let hits = self.catalog.search(query, args.get("limit"))?;
                serde_json::to_value(hits).map_err(|e| e.to_string())
            }
            BridgeMethod::Describe => {
                let id = args.get("id").unwrap_or(&Value::Null);
                let entry = self.catalog.lookup_value(id, LookupOp::Describe)?;
                serde_json::to_value(entry.described()).map_err(|e| e.to_string())
            }
            BridgeMethod::Call | BridgeMethod::CallValue => {
                let op = if request.method == BridgeMethod::Call {
                    LookupOp::Call
                } else {
                    LookupOp::CallValue
                };
                let entry = self
                    .catalog
                    .lookup_value(args.get("id").unwrap_or(&Value::Null), op)?;
                entry.check_callable()?;
                let input = match input {
                    Some(Value::Null) | None => json!({}),
                    Some(v) => v,
                };
                let result = self.execute(entry, input, request, run_id).await?;
                if request.method == BridgeMethod::CallValue {
                    Ok(match result {
                        Value::Object(mut fields) if fields.contains_key("details") => {
                            fields.remove("details").unwrap_or(Value::Null)
                        }
                        other => other,
                    })
                } else {
                    Ok(json!({"tool": entry.compact(), "result": result}))
                }
            }
            BridgeMethod::Namespace => {
                let namespace = args.get("namespace").and_then(Value::as_str).unwrap_or("");
                let path: Vec<String> = match args.get("path").and_then(Value::as_array) {
                    Some(p) => p
                        .iter()
                        .map(|s| s.as_str().unwrap_or("").to_string())
                        .collect(),
                    None => Vec::new(),
                };
                // The prelude always sends an array; anything else is one (non-object) argument,
                // so the one-object check rejects it rather than calling with `{}`.
                let call_args: Vec<Value> = match args.get("args") {
                    Some(Value::Array(a)) => a.clone(),
                    Some(other) => vec![other.clone()],
                    None => Vec::new(),
                };
                match self.namespace.request(namespace, &path, &call_args)? {
                    NamespaceAction::Api(answer) => Ok(answer),
                    NamespaceAction::Call { id, input } => {
                        let Some(entry) = self.catalog.entry(&id) else {
                            return Err(self.catalog.unknown_tool(&id).into());
                        };
                        // The raw MCP result, not unwrapped (docs/contract/mcp.md#s7-2-dispatch "Dispatch").
                        self.execute(entry, input, request, run_id).await
                    }
                }
            }
            BridgeMethod::Yield => Ok(json!({
                "status": "yielded",
                "reason": args.get("reason").cloned().unwrap_or(Value::Null),
            })),
            BridgeMethod::Nodes => self.nodes(request, run_id).await,
        }
    }

    /// A `nodes` request (docs/contract/nodes.md#s8): checked and answered by
    /// [`crate::nodes`], with the core `nodes` tool called through [`Dispatcher::execute`], so
    /// it counts in `callCount` and takes the executor's policy, hooks and approvals. Without
    /// `openclaw:core:nodes` in the catalog: the unknown-tool error.
    async fn nodes(
        &self,
        request: &BridgeRequest,
        run_id: Option<String>,
    ) -> Result<Value, String> {
        use crate::nodes::{self as n, NodesRequest};
        let parsed = NodesRequest::parse(&request.args).map_err(str::to_string)?;
        let Some(entry) = self.catalog.entry(n::NODES_TOOL_ID) else {
            return Err(self.catalog.unknown_tool(n::NODES_TOOL_ID).to_string());
        };
        entry.check_callable()?;
        let input = match &parsed {
            NodesRequest::List | NodesRequest::Get(_) => n::status_input(),
            NodesRequest::Invoke(input) => input.clone(),
        };
        let result = self.execute(entry, input, request, run_id).await?;
        let details = result.get("details").cloned().unwrap_or(result);
        match parsed {
            NodesRequest::List => Ok(n::list_value(&details)),
            NodesRequest::Get(query) => Ok(n::select(&details, &query)?.handle_value()),
            NodesRequest::Invoke(_) => Ok(details),
        }
    }

    /// Runs one catalog tool through the pipeline (policy, hooks, approval, the host's
    /// executor; all inside the tool timeout) and checks a declared output contract. Counts in
    /// `callCount` (once: not again for a call restored and dispatched again, see
    /// `pipeline/ledger.rs`), keeps the call in the run's ledger while it runs, and records `nested_tool_call` / `nested_tool_result` (docs/telemetry.md).
    async fn execute(
        &self,
        entry: &codemode_catalog::Entry,
        input: Value,
        request: &BridgeRequest,
        run_id: Option<String>,
    ) -> Result<Value, String> {
        let started = Instant::now();
        // A call restored from a record and dispatched again (its approval was pending in a
        // process that stopped) keeps its id and was counted when it first started.
        let ledger = self.ledger.begin(&request.id, || {
            self.counters.bridge.bump(CounterKind::Call);
            let seq = self.counters.nested.fetch_add(1, Ordering::Relaxed) + 1;
            let parent = self.parent_tool_call_id.as_deref().unwrap_or("exec");
            LedgerCall {
                tool_call_id: codemode_bridge::nested_tool_call_id(parent, entry.name(), seq),
                tool_id: entry.id().to_string(),
                tool_name: entry.name().to_string(),
                method: nested_method(request.method),
                started_at_ms: codemode_snapshot::record::now_ms(),
                awaiting_approval: None,
            }
        });
        let call = ToolCall {
            tool_call_id: ledger.tool_call_id,
            parent_tool_call_id: self.parent_tool_call_id.clone(),
            tool_id: entry.id().to_string(),
            tool_name: entry.name().to_string(),
            input,
            scope: self.scope.clone(),
            bridge_id: request.id.clone(),
            code_mode_run_id: run_id,
        };
        let recorded = self
            .trajectory
            .is_enabled()
            .then(|| self.record_call(&call, nested_method(request.method)));
        let outcome = self.settle(entry, call).await;
        self.ledger.end(&request.id);
        if let Some((call, method)) = recorded {
            self.record_result(call, method, &outcome, started.elapsed());
        }
        outcome.map_err(|(_, message)| message)
    }

    /// The pipeline's outcome under the timeout, then the output contract; a failure carries its
    /// trajectory status.
    async fn settle(
        &self,
        entry: &codemode_catalog::Entry,
        call: ToolCall,
    ) -> Result<Value, (NestedStatus, String)> {
        let result = match tokio::time::timeout(self.tool_timeout, self.pipeline.call(call)).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => return Err((e.status(), e.to_string())),
            Err(_) => {
                return Err((
                    NestedStatus::Timeout,
                    format!(
                        "Tool \"{}\" did not finish within {} ms.",
                        entry.id(),
                        self.tool_timeout.as_millis()
                    ),
                ))
            }
        };
        if entry.output_schema().is_some() {
            entry
                .validate_output(result.get("details").unwrap_or(&Value::Null))
                .map_err(|e| (NestedStatus::Error, e.to_string()))?;
        }
        Ok(result)
    }

    /// Records `nested_tool_call`; returns what the result event repeats.
    fn record_call(
        &self,
        call: &ToolCall,
        method: NestedMethod,
    ) -> (NestedToolCallEvent, NestedMethod) {
        let event = NestedToolCallEvent {
            tool_call_id: call.tool_call_id.clone(),
            parent_tool_call_id: call.parent_tool_call_id.clone(),
            code_mode_run_id: call.code_mode_run_id.clone(),
            tool_id: call.tool_id.clone(),
            tool_name: call.tool_name.clone(),
            method,
            input: call.input.clone(),
        };
        self.trajectory
            .record(EventKind::NestedToolCall(event.clone()));
        (event, method)
    }

    fn record_result(
        &self,
        call: NestedToolCallEvent,
        method: NestedMethod,
        outcome: &Result<Value, (NestedStatus, String)>,
        elapsed: Duration,
    ) {
        let (status, result, error) = match outcome {
            Ok(value) => (NestedStatus::Ok, Some(value.clone()), None),
            Err((status, message)) => (*status, None, Some(message.clone())),
        };
        self.trajectory
            .record(EventKind::NestedToolResult(NestedToolResultEvent {
                tool_call_id: call.tool_call_id,
                parent_tool_call_id: call.parent_tool_call_id,
                code_mode_run_id: call.code_mode_run_id,
                tool_id: call.tool_id,
                tool_name: call.tool_name,
                method,
                status,
                duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                result,
                error,
            }));
    }
}

/// The trajectory method of a nested call made for a request of bridge method `method`
/// (`tools.call` and anything else that reaches a tool count as `call`).
pub(crate) fn nested_method(method: BridgeMethod) -> NestedMethod {
    match method {
        BridgeMethod::CallValue => NestedMethod::CallValue,
        BridgeMethod::Namespace => NestedMethod::Namespace,
        BridgeMethod::Nodes => NestedMethod::Nodes,
        BridgeMethod::Search
        | BridgeMethod::Describe
        | BridgeMethod::Call
        | BridgeMethod::Yield => NestedMethod::Call,
    }
}
