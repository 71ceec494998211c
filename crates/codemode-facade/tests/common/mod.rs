//! The harness the facade's integration tests share: a tool executor that records every call
//! and answers from a function, and the exact-comparison views of a `CodeModeResult`.

// Each test binary includes this module and uses part of it.
#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_bridge::{RunScope, ToolCall, ToolError, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_config::{resolve_policy, ToolPolicy};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::{json, Value};

/// The calls a [`Recording`] executor saw, as `(tool name, input)`, in order.
pub(crate) type Calls = Arc<Mutex<Vec<(String, Value)>>>;

type Answer = Box<dyn Fn(&ToolCall) -> Result<Value, ToolError> + Send + Sync>;

/// A tool executor that records every call in [`Recording::calls`], waits the tool's delay (if
/// it has one) and answers with `answer(&call)` (a whole tool result; see [`tool_result`]).
pub(crate) struct Recording {
    /// What it was called with.
    pub(crate) calls: Calls,
    delays: HashMap<String, Duration>,
    answer: Arc<Answer>,
}

impl Recording {
    /// An executor answering each call with `answer(&call)`, and its call record.
    pub(crate) fn new(answer: impl Fn(&ToolCall) -> Value + Send + Sync + 'static) -> Self {
        Recording::fallible(move |call| Ok(answer(call)))
    }

    /// An executor answering each call with `answer(&call)`, which may fail the call.
    pub(crate) fn fallible(
        answer: impl Fn(&ToolCall) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Recording {
            calls: Arc::new(Mutex::new(Vec::new())),
            delays: HashMap::new(),
            answer: Arc::new(Box::new(answer)),
        }
    }

    /// The same executor, with the tool `name` answering after `delay`.
    pub(crate) fn with_delay(mut self, name: &str, delay: Duration) -> Self {
        self.delays.insert(name.to_string(), delay);
        self
    }
}

impl ToolExecutor for Recording {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        self.calls
            .lock()
            .unwrap()
            .push((call.tool_name.clone(), call.input.clone()));
        let delay = self.delays.get(&call.tool_name).copied();
        let answer = self.answer.clone();
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            answer(&call)
        })
    }
}

/// The scope every run of the host tests has: run `run-1`, session `session-1`, session key
/// `agent:ops:main`, agent `ops`.
pub(crate) fn ops_scope() -> RunScope {
    RunScope {
        run_id: Some("run-1".into()),
        session_id: Some("session-1".into()),
        session_key: Some("agent:ops:main".into()),
        agent_id: Some("ops".into()),
    }
}

/// The tool policy of the config `{"tools": <tools>}`, which must resolve without warnings.
pub(crate) fn policy(tools: Value) -> ToolPolicy {
    let resolved = resolve_policy(&json!({ "tools": tools }), None);
    assert!(resolved.warnings.is_empty());
    resolved.policy
}

/// The tool-result shape: one text content item `text` and `details`.
pub(crate) fn tool_result(text: &str, details: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "details": details})
}

/// `{status, value | error + code, output}` of a result, for exact comparison (the telemetry
/// and `replaySafe` removed).
pub(crate) fn summary(r: &CodeModeResult) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    let map = v.as_object_mut().unwrap();
    map.remove("telemetry");
    map.remove("replaySafe");
    v
}

/// The value of a completed result; panics with the summary of any other.
pub(crate) fn value(r: &CodeModeResult) -> Value {
    match r {
        CodeModeResult::Completed { value, .. } => value.clone(),
        other => panic!("expected completed, got {}", summary(other)),
    }
}

/// The error message of a failed result; panics with the summary of any other.
pub(crate) fn error(r: &CodeModeResult) -> String {
    match r {
        CodeModeResult::Failed { error, .. } => error.clone(),
        other => panic!("expected failed, got {}", summary(other)),
    }
}

/// A runtime and one run environment over a catalog of `specs`, whose tools a [`Recording`]
/// runs, with the default scope.
pub(crate) struct Harness {
    /// The code-mode runner (the process-wide runtime).
    pub(crate) cm: CodeMode,
    /// The run environment.
    pub(crate) env: RunEnv,
    /// What the tools were called with.
    pub(crate) calls: Calls,
}

impl Harness {
    /// The harness over `specs` under the code-mode config `config` (resolved), run by `exec`.
    pub(crate) fn new(config: &Value, specs: Vec<ToolSpec>, exec: Recording) -> Harness {
        let catalog = Arc::new(Catalog::build(specs, &SearchLimits::default()).unwrap());
        let calls = exec.calls.clone();
        let env = RunEnv::new(
            codemode_config::resolve(config).config,
            catalog,
            Arc::new(exec),
            RunScope::default(),
        );
        Harness {
            cm: CodeMode::new(Runtime::global().unwrap()),
            env,
            calls,
        }
    }

    /// `exec` of `code`.
    pub(crate) async fn exec(&self, code: &str) -> CodeModeResult {
        self.cm
            .exec(&self.env, &json!({ "code": code }), &AbortHandle::new())
            .await
    }

    /// The calls so far.
    pub(crate) fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

pub(crate) use codemode_test_support::files::core_telemetry;
