//! The `tracing` sink: provider calls and nested calls become spans (nested under the `exec` or
//! the `wait` they happened in), and every trajectory event is one `tracing` event.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use codemode_telemetry::*;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

#[derive(Default)]
struct Seen {
    /// (span name, its tool_call_id, the parent span's tool_call_id), in creation order.
    spans: Vec<(String, String, Option<String>)>,
    /// Fields recorded on spans after creation, by tool_call_id.
    recorded: BTreeMap<String, BTreeMap<String, String>>,
    /// (event fields, the enclosing span's tool_call_id).
    events: Vec<(BTreeMap<String, String>, Option<String>)>,
}

struct Capture(Arc<Mutex<Seen>>);

struct SpanId(String);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let span = ctx.span(id).unwrap();
        let own = f.0.get("tool_call_id").cloned().unwrap_or_default();
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<SpanId>().map(|s| s.0.clone()));
        span.extensions_mut().insert(SpanId(own.clone()));
        self.0
            .lock()
            .unwrap()
            .spans
            .push((attrs.metadata().name().to_string(), own, parent));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        values.record(&mut f);
        let own = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<SpanId>().map(|s| s.0.clone()))
            .unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .recorded
            .entry(own)
            .or_default()
            .extend(f.0);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        assert_eq!(event.metadata().target(), TRACING_TARGET);
        let span = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<SpanId>().map(|s| s.0.clone()));
        self.0.lock().unwrap().events.push((f.0, span));
    }
}

fn nested(id: &str, run: Option<&str>) -> EventKind {
    EventKind::NestedToolCall(NestedToolCallEvent {
        tool_call_id: id.into(),
        parent_tool_call_id: Some("call_1".into()),
        code_mode_run_id: run.map(str::to_string),
        tool_id: "openclaw:core:t".into(),
        tool_name: "t".into(),
        method: NestedMethod::CallValue,
        input: json!({"password": "hunter2"}),
    })
}

fn settled(id: &str) -> EventKind {
    EventKind::NestedToolResult(NestedToolResultEvent {
        tool_call_id: id.into(),
        parent_tool_call_id: Some("call_1".into()),
        code_mode_run_id: None,
        tool_id: "openclaw:core:t".into(),
        tool_name: "t".into(),
        method: NestedMethod::CallValue,
        status: NestedStatus::Denied,
        duration_ms: 7,
        result: None,
        error: Some("Tool \"openclaw:core:t\" was not approved: denied".into()),
    })
}

fn result(
    id: &str,
    name: &str,
    kind: ToolKind,
    status: ToolStatus,
    run: Option<&str>,
) -> EventKind {
    EventKind::ToolResult(ToolResultEvent {
        tool_call_id: id.into(),
        tool_name: name.into(),
        tool_kind: kind,
        tool_input_kind: None,
        status,
        code_mode_run_id: run.map(str::to_string),
        duration_ms: 5,
        result: None,
        error: None,
    })
}

#[test]
fn spans_nest_under_their_exec_and_wait() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let t = Trajectory::new(
            Arc::new(TracingSink::new()),
            RunScope {
                session_id: Some("s1".into()),
                ..RunScope::default()
            },
        )
        .with_clock(|| "T".into());
        t.record(EventKind::ToolCall(ToolCallEvent {
            tool_call_id: "call_1".into(),
            tool_name: "exec".into(),
            tool_kind: ToolKind::CodeModeExec,
            tool_input_kind: Some(ToolInputKind::Javascript),
            input: json!({"code": "..."}),
        }));
        t.record(nested("n1", None));
        t.record(settled("n1"));
        t.record(result(
            "call_1",
            "exec",
            ToolKind::CodeModeExec,
            ToolStatus::Waiting,
            Some("cm_1"),
        ));
        t.record(common::wait_call_2());
        t.record(nested("n2", Some("cm_1")));
        t.record(EventKind::RunExpired(RunEndedEvent {
            code_mode_run_id: Some("cm_1".into()),
            parent_tool_call_id: Some("call_1".into()),
            reason: Some("snapshot TTL".into()),
        }));
        t.record(result(
            "call_2",
            "wait",
            ToolKind::CodeModeWait,
            ToolStatus::Failed,
            None,
        ));
    });
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.spans,
        vec![
            ("tool_call".to_string(), "call_1".to_string(), None),
            (
                "nested_tool_call".into(),
                "n1".into(),
                Some("call_1".into())
            ),
            ("tool_call".into(), "call_2".into(), None),
            (
                "nested_tool_call".into(),
                "n2".into(),
                Some("call_2".into())
            ),
        ]
    );
    let rec = |id: &str| seen.recorded.get(id).cloned().unwrap_or_default();
    assert_eq!(
        rec("call_1"),
        BTreeMap::from([
            ("duration_ms".to_string(), "5".to_string()),
            ("status".into(), "waiting".into())
        ])
    );
    assert_eq!(rec("n1")["status"], "denied");
    assert_eq!(rec("call_2")["status"], "failed");
    // n2 never settled: its span was closed by run_expired without a status.
    assert!(!rec("n2").contains_key("status"));

    let events: Vec<(String, Option<String>)> = seen
        .events
        .iter()
        .map(|(f, span)| (f["event"].clone(), span.clone()))
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        events,
        vec![
            ("tool_call".to_string(), some("call_1")),
            ("nested_tool_call".into(), some("n1")),
            ("nested_tool_result".into(), some("n1")),
            ("tool_result".into(), some("call_1")),
            ("tool_call".into(), some("call_2")),
            ("nested_tool_call".into(), some("n2")),
            ("run_expired".into(), None),
            ("tool_result".into(), some("call_2")),
        ]
    );
    let (first, _) = &seen.events[2];
    assert_eq!(first["message"], "nested_tool_result");
    assert_eq!(first["ts"], "T");
    assert_eq!(first["session_id"], "s1");
    assert_eq!(first["tool_call_id"], "n1");
    assert_eq!(first["parent_tool_call_id"], "call_1");
    assert_eq!(first["status"], "denied");
    assert_eq!(first["duration_ms"], "7");
    assert!(!first.contains_key("agent_id"));
    assert_eq!(
        first["line"],
        r#"{"type":"nested_tool_result","ts":"T","sessionId":"s1","toolCallId":"n1","parentToolCallId":"call_1","toolId":"openclaw:core:t","toolName":"t","method":"callValue","status":"denied","durationMs":7,"error":"Tool \"openclaw:core:t\" was not approved: denied"}"#
    );
    // The redacted input is what tracing sees.
    let (call, _) = &seen.events[1];
    assert!(call["line"].contains(r#""input":{"password":"[redacted]"}"#));
    assert!(seen
        .events
        .iter()
        .all(|(f, _)| !f["line"].contains("hunter2")));
}

/// Issue 25: the logs carry no secret repeated as text (a result's content text, a tool's error
/// text, an abort reason), any more than the trajectory does.
#[test]
fn logs_carry_no_secret_inside_text() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(seen.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let t = Trajectory::new(Arc::new(TracingSink::new()), RunScope::default())
            .with_clock(|| "T".into());
        t.record(nested("n1", None));
        t.record(EventKind::NestedToolResult(NestedToolResultEvent {
            tool_call_id: "n1".into(),
            parent_tool_call_id: Some("call_1".into()),
            code_mode_run_id: None,
            tool_id: "openclaw:core:t".into(),
            tool_name: "t".into(),
            method: NestedMethod::Call,
            status: NestedStatus::Ok,
            duration_ms: 1,
            result: Some(
                json!({"content": [{"type": "text", "text": "{\"password\":\"hunter2\"}"}]}),
            ),
            error: None,
        }));
        t.record(EventKind::NestedToolResult(NestedToolResultEvent {
            tool_call_id: "n2".into(),
            parent_tool_call_id: Some("call_1".into()),
            code_mode_run_id: None,
            tool_id: "openclaw:core:t".into(),
            tool_name: "t".into(),
            method: NestedMethod::Call,
            status: NestedStatus::Error,
            duration_ms: 1,
            result: None,
            error: Some("bad login {\"user\": \"ann\", \"password\": \"hunter2\"}".into()),
        }));
        t.record(EventKind::RunAborted(RunEndedEvent {
            code_mode_run_id: Some("cm_1".into()),
            parent_tool_call_id: Some("call_1".into()),
            reason: Some("operator: password=hunter2".into()),
        }));
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.events.len(), 4);
    let logged: Vec<&String> = seen
        .events
        .iter()
        .flat_map(|(fields, _)| fields.values())
        .chain(seen.recorded.values().flat_map(|f| f.values()))
        .collect();
    assert!(
        logged.iter().any(|v| v.contains("[redacted]")),
        "{logged:?}"
    );
    assert!(!logged.iter().any(|v| v.contains("hunter2")), "{logged:?}");
}
