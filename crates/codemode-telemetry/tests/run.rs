//! One agent turn's trajectory, as the facade records it: an `exec` whose program starts two
//! nested calls in parallel, parks with one still running, and a `wait` that resumes it, makes a
//! third nested call and completes; then a direct tool call. Checked event by event, as the file
//! sink's exact lines, as a transcript, and as `tracing` spans.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use codemode_telemetry::*;
use serde_json::{json, Value};

fn scope() -> RunScope {
    RunScope {
        agent_id: Some("main".into()),
        session_id: Some("s1".into()),
        session_key: Some("agent:main:s1".into()),
        run_id: Some("run-7".into()),
    }
}

/// A trajectory handle whose clock ticks 1 ms per event from 10:00:00.000Z.
fn trajectory(sink: Arc<dyn TrajectorySink>) -> Trajectory {
    let tick = AtomicU64::new(0);
    Trajectory::new(sink, scope()).with_clock(move || {
        let n = tick.fetch_add(1, Ordering::Relaxed);
        format!("2026-12-01T10:00:00.{n:03}Z")
    })
}

const CODE: &str = "const [w, r] = await Promise.all([tools.weather({city: \"Oslo\"}), \
                    tools.call(\"openclaw:core:fetch_report\", {url: \"https://r.example/q3\", auth: {token: \"sk-live-123\"}})]);\n\
                    return await tools.echo({tempC: w.tempC, size: r.details.body.length});";

/// [`CODE`] as the trajectory records it: the literal token is redacted inside the text
/// (docs/telemetry.md, "Redaction").
fn redacted_code() -> String {
    CODE.replace("sk-live-123", "[redacted]")
}

fn long_body() -> String {
    "q".repeat(10_000)
}

/// Records the run described in the file docs.
fn record_run(t: &Trajectory) {
    let nested = |seq: u64, name: &str, method, run: Option<&str>, input: Value| {
        EventKind::NestedToolCall(NestedToolCallEvent {
            tool_call_id: format!("tool_search_code:call_1:{name}:{seq}"),
            parent_tool_call_id: Some("call_1".into()),
            code_mode_run_id: run.map(str::to_string),
            tool_id: format!("openclaw:core:{name}"),
            tool_name: name.into(),
            method,
            input,
        })
    };
    let settled = |seq: u64, name: &str, method, run: Option<&str>, ms, result: Value| {
        EventKind::NestedToolResult(NestedToolResultEvent {
            tool_call_id: format!("tool_search_code:call_1:{name}:{seq}"),
            parent_tool_call_id: Some("call_1".into()),
            code_mode_run_id: run.map(str::to_string),
            tool_id: format!("openclaw:core:{name}"),
            tool_name: name.into(),
            method,
            status: NestedStatus::Ok,
            duration_ms: ms,
            result: Some(result),
            error: None,
        })
    };
    let telemetry = |calls| {
        json!({"catalogSize": 4, "sources": {"openclaw": 4, "mcp": 0, "client": 0},
               "searchCount": 0, "describeCount": 0, "callCount": calls,
               "visibleTools": ["exec", "wait"]})
    };
    t.record(EventKind::ToolCall(ToolCallEvent {
        tool_call_id: "call_1".into(),
        tool_name: "exec".into(),
        tool_kind: ToolKind::CodeModeExec,
        tool_input_kind: Some(ToolInputKind::Javascript),
        input: json!({"code": CODE}),
    }));
    t.record(nested(
        1,
        "weather",
        NestedMethod::CallValue,
        None,
        json!({"city": "Oslo"}),
    ));
    t.record(nested(
        2,
        "fetch_report",
        NestedMethod::Call,
        None,
        json!({"url": "https://r.example/q3", "auth": {"token": "sk-live-123"}}),
    ));
    t.record(settled(
        1,
        "weather",
        NestedMethod::CallValue,
        None,
        12,
        json!({"content": [], "details": {"city": "Oslo", "tempC": 4}}),
    ));
    t.record(EventKind::RunParked(RunParkedEvent {
        code_mode_run_id: "cm_1".into(),
        tool_call_id: "call_1".into(),
        parent_tool_call_id: Some("call_1".into()),
        reason: ParkReason::PendingTools,
        pending_tool_calls: 1,
        snapshot_bytes: Some(48_213),
    }));
    t.record(EventKind::ToolResult(ToolResultEvent {
        tool_call_id: "call_1".into(),
        tool_name: "exec".into(),
        tool_kind: ToolKind::CodeModeExec,
        tool_input_kind: Some(ToolInputKind::Javascript),
        status: ToolStatus::Waiting,
        code_mode_run_id: Some("cm_1".into()),
        duration_ms: 1000,
        result: Some(
            json!({"status": "waiting", "runId": "cm_1", "reason": "pending_tools",
            "pendingToolCalls": [{"id": "bridge:call:2", "method": "call"}],
            "replaySafe": false, "output": [], "telemetry": telemetry(2)}),
        ),
        error: None,
    }));
    // The slow call settles while the run is parked, before the model's `wait`.
    t.record(settled(
        2,
        "fetch_report",
        NestedMethod::Call,
        Some("cm_1"),
        1500,
        json!({"content": [], "details": {"body": long_body()}}),
    ));
    t.record(common::wait_call_2());
    t.record(EventKind::RunResumed(RunResumedEvent {
        code_mode_run_id: "cm_1".into(),
        tool_call_id: "call_2".into(),
        parent_tool_call_id: Some("call_1".into()),
        settled_tool_calls: 1,
    }));
    t.record(nested(
        3,
        "echo",
        NestedMethod::CallValue,
        Some("cm_1"),
        json!({"tempC": 4, "size": 10000}),
    ));
    t.record(settled(
        3,
        "echo",
        NestedMethod::CallValue,
        Some("cm_1"),
        1,
        json!({"content": [], "details": {"input": {"tempC": 4, "size": 10000}}}),
    ));
    t.record(EventKind::ToolResult(ToolResultEvent {
        tool_call_id: "call_2".into(),
        tool_name: "wait".into(),
        tool_kind: ToolKind::CodeModeWait,
        tool_input_kind: None,
        status: ToolStatus::Completed,
        code_mode_run_id: None,
        duration_ms: 40,
        result: Some(
            json!({"status": "completed", "value": {"input": {"tempC": 4, "size": 10000}},
            "output": [], "replaySafe": false, "telemetry": telemetry(3)}),
        ),
        error: None,
    }));
    t.record(EventKind::ToolCall(ToolCallEvent {
        tool_call_id: "call_3".into(),
        tool_name: "message".into(),
        tool_kind: ToolKind::Tool,
        tool_input_kind: None,
        input: json!({"text": "4°C in Oslo", "apiKey": "k-9"}),
    }));
    t.record(EventKind::ToolResult(ToolResultEvent {
        tool_call_id: "call_3".into(),
        tool_name: "message".into(),
        tool_kind: ToolKind::Tool,
        tool_input_kind: None,
        status: ToolStatus::Failed,
        code_mode_run_id: None,
        duration_ms: 3,
        result: None,
        error: Some("channel closed".into()),
    }));
}

const SCOPE_JSON: &str =
    r#""agentId":"main","sessionId":"s1","sessionKey":"agent:main:s1","runId":"run-7""#;

/// The exact lines of [`record_run`].
fn expected_lines() -> Vec<String> {
    let cut_body = format!("{}…(5904 more)", "q".repeat(4096));
    // The literal token in the program is redacted inside the `code` text (redact.rs rule 3).
    let code = serde_json::to_string(&redacted_code()).unwrap();
    let tel = |calls: u32| {
        format!(
            r#"{{"catalogSize":4,"sources":{{"openclaw":4,"mcp":0,"client":0}},"searchCount":0,"describeCount":0,"callCount":{calls},"visibleTools":["exec","wait"]}}"#
        )
    };
    let rest = [
        format!(r#""toolCallId":"call_1","toolName":"exec","toolKind":"code_mode_exec","toolInputKind":"javascript","input":{{"code":{code}}}"#),
        r#""toolCallId":"tool_search_code:call_1:weather:1","parentToolCallId":"call_1","toolId":"openclaw:core:weather","toolName":"weather","method":"callValue","input":{"city":"Oslo"}"#.into(),
        r#""toolCallId":"tool_search_code:call_1:fetch_report:2","parentToolCallId":"call_1","toolId":"openclaw:core:fetch_report","toolName":"fetch_report","method":"call","input":{"url":"https://r.example/q3","auth":{"token":"[redacted]"}}"#.into(),
        r#""toolCallId":"tool_search_code:call_1:weather:1","parentToolCallId":"call_1","toolId":"openclaw:core:weather","toolName":"weather","method":"callValue","status":"ok","durationMs":12,"result":{"content":[],"details":{"city":"Oslo","tempC":4}}"#.into(),
        r#""codeModeRunId":"cm_1","toolCallId":"call_1","parentToolCallId":"call_1","reason":"pending_tools","pendingToolCalls":1,"snapshotBytes":48213"#.into(),
        format!(r#""toolCallId":"call_1","toolName":"exec","toolKind":"code_mode_exec","toolInputKind":"javascript","status":"waiting","codeModeRunId":"cm_1","durationMs":1000,"result":{{"status":"waiting","runId":"cm_1","reason":"pending_tools","pendingToolCalls":[{{"id":"bridge:call:2","method":"call"}}],"replaySafe":false,"output":[],"telemetry":{}}}"#, tel(2)),
        format!(r#""toolCallId":"tool_search_code:call_1:fetch_report:2","parentToolCallId":"call_1","codeModeRunId":"cm_1","toolId":"openclaw:core:fetch_report","toolName":"fetch_report","method":"call","status":"ok","durationMs":1500,"result":{{"content":[],"details":{{"body":"{cut_body}"}}}}"#),
        r#""toolCallId":"call_2","toolName":"wait","toolKind":"code_mode_wait","input":{"runId":"cm_1"}"#.into(),
        r#""codeModeRunId":"cm_1","toolCallId":"call_2","parentToolCallId":"call_1","settledToolCalls":1"#.into(),
        r#""toolCallId":"tool_search_code:call_1:echo:3","parentToolCallId":"call_1","codeModeRunId":"cm_1","toolId":"openclaw:core:echo","toolName":"echo","method":"callValue","input":{"tempC":4,"size":10000}"#.into(),
        r#""toolCallId":"tool_search_code:call_1:echo:3","parentToolCallId":"call_1","codeModeRunId":"cm_1","toolId":"openclaw:core:echo","toolName":"echo","method":"callValue","status":"ok","durationMs":1,"result":{"content":[],"details":{"input":{"tempC":4,"size":10000}}}"#.into(),
        format!(r#""toolCallId":"call_2","toolName":"wait","toolKind":"code_mode_wait","status":"completed","durationMs":40,"result":{{"status":"completed","value":{{"input":{{"tempC":4,"size":10000}}}},"output":[],"replaySafe":false,"telemetry":{}}}"#, tel(3)),
        r#""toolCallId":"call_3","toolName":"message","toolKind":"tool","input":{"text":"4°C in Oslo","apiKey":"[redacted]"}"#.into(),
        r#""toolCallId":"call_3","toolName":"message","toolKind":"tool","status":"failed","durationMs":3,"error":"channel closed""#.into(),
    ];
    let types = [
        "tool_call",
        "nested_tool_call",
        "nested_tool_call",
        "nested_tool_result",
        "run_parked",
        "tool_result",
        "nested_tool_result",
        "tool_call",
        "run_resumed",
        "nested_tool_call",
        "nested_tool_result",
        "tool_result",
        "tool_call",
        "tool_result",
    ];
    types
        .iter()
        .zip(rest)
        .enumerate()
        .map(|(i, (ty, rest))| {
            format!(r#"{{"type":"{ty}","ts":"2026-12-01T10:00:00.{i:03}Z",{SCOPE_JSON},{rest}}}"#)
        })
        .collect()
}

/// (type, toolCallId, parentToolCallId, codeModeRunId, status) of one event.
type Row<'a> = (
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<String>,
);

#[test]
fn the_run_event_by_event() {
    let sink = Arc::new(MemorySink::new());
    record_run(&trajectory(sink.clone()));
    let events = sink.events();
    let summary: Vec<Row> = events
        .iter()
        .map(|e| {
            let k = e.kind();
            let status = match k {
                EventKind::ToolResult(r) => Some(format!("{:?}", r.status)),
                EventKind::NestedToolResult(r) => Some(format!("{:?}", r.status)),
                _ => None,
            };
            (
                k.type_name(),
                k.tool_call_id(),
                k.parent_tool_call_id(),
                k.code_mode_run_id(),
                status,
            )
        })
        .collect();
    let w = "tool_search_code:call_1:weather:1";
    let f = "tool_search_code:call_1:fetch_report:2";
    let e = "tool_search_code:call_1:echo:3";
    let ok = || Some("Ok".to_string());
    assert_eq!(
        summary,
        vec![
            ("tool_call", Some("call_1"), None, None, None),
            // Two nested calls in parallel, both before either settles.
            ("nested_tool_call", Some(w), Some("call_1"), None, None),
            ("nested_tool_call", Some(f), Some("call_1"), None, None),
            ("nested_tool_result", Some(w), Some("call_1"), None, ok()),
            (
                "run_parked",
                Some("call_1"),
                Some("call_1"),
                Some("cm_1"),
                None
            ),
            (
                "tool_result",
                Some("call_1"),
                None,
                Some("cm_1"),
                Some("Waiting".into())
            ),
            (
                "nested_tool_result",
                Some(f),
                Some("call_1"),
                Some("cm_1"),
                ok()
            ),
            ("tool_call", Some("call_2"), None, None, None),
            (
                "run_resumed",
                Some("call_2"),
                Some("call_1"),
                Some("cm_1"),
                None
            ),
            // Made during the wait: its parent is still the original exec.
            (
                "nested_tool_call",
                Some(e),
                Some("call_1"),
                Some("cm_1"),
                None
            ),
            (
                "nested_tool_result",
                Some(e),
                Some("call_1"),
                Some("cm_1"),
                ok()
            ),
            (
                "tool_result",
                Some("call_2"),
                None,
                None,
                Some("Completed".into())
            ),
            ("tool_call", Some("call_3"), None, None, None),
            (
                "tool_result",
                Some("call_3"),
                None,
                None,
                Some("Failed".into())
            ),
        ]
    );
    for e in &events {
        assert_eq!(e.scope(), &scope());
    }
    assert_eq!(sink.lines(), expected_lines());
    assert_eq!(
        ToolSummary::from_events(&events),
        ToolSummary {
            calls: 3,
            by_name: [("exec", 1), ("message", 1), ("wait", 1)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    );
}

#[test]
fn file_sink_writes_the_exact_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trajectory.jsonl");
    let file = Arc::new(JsonLinesSink::create(&path).unwrap());
    let memory = Arc::new(MemorySink::new());
    record_run(&trajectory(Arc::new(FanOut::new(vec![
        file.clone(),
        memory.clone(),
    ]))));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut want = expected_lines().join("\n");
    want.push('\n');
    assert_eq!(text, want);
    assert_eq!(file.errors(), 0);
    // The secret and the long tail never reach the file, not even the literal token written in
    // the program's source text (docs/telemetry.md, "Redaction").
    assert!(!text.contains("sk-live-123"));
    assert!(!text.contains("k-9"));
    assert!(!text.contains(&"q".repeat(4097)));
    // Lines read back are the recorded events.
    assert_eq!(parse_json_lines(&text).unwrap(), memory.events());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // `append` keeps what is there; `create` truncates.
    drop(file);
    let again = JsonLinesSink::append(&path).unwrap();
    again.record(&memory.events()[0]);
    let appended = std::fs::read_to_string(&path).unwrap();
    assert_eq!(appended, format!("{want}{}\n", expected_lines()[0]));
    let fresh = JsonLinesSink::create(&path).unwrap();
    fresh.record(&memory.events()[1]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{}\n", expected_lines()[1])
    );
}

#[cfg(unix)]
#[test]
fn an_existing_world_readable_trajectory_file_becomes_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for append in [false, true] {
        let path = dir.path().join(format!("t-{append}.jsonl"));
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let sink = if append {
            JsonLinesSink::append(&path)
        } else {
            JsonLinesSink::create(&path)
        }
        .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "append: {append}");
        drop(sink);
    }
}

#[cfg(unix)]
#[test]
fn a_symlinked_trajectory_path_is_refused_and_its_target_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep me\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.path().join("t.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for append in [false, true] {
        let opened = if append {
            JsonLinesSink::append(&link)
        } else {
            JsonLinesSink::create(&link)
        };
        let Err(err) = opened else {
            panic!("a symlink is refused (append: {append})");
        };
        assert!(matches!(err, codemode_files::FileError::SymbolicLink));
        assert_eq!(
            err.to_string(),
            "it is a symbolic link; name the file it points to"
        );
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

/// Issue 27 item 1: a trajectory file planted by another user (uid 65534 here; the test needs
/// root to chown, as CI has) is refused, untouched: its owner could read every tool input and
/// result written to it, mode 0600 or not.
#[cfg(unix)]
#[test]
fn a_trajectory_file_another_user_owns_is_refused_and_untouched() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, "planted\n").unwrap();
    if std::fs::metadata(&path).unwrap().uid() != 0 {
        eprintln!("skipped: chown to uid 65534 needs root");
        return;
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    for append in [false, true] {
        let opened = if append {
            JsonLinesSink::append(&path)
        } else {
            JsonLinesSink::create(&path)
        };
        assert_eq!(
            opened.unwrap_err().to_string(),
            "it belongs to uid 65534, not to this user (uid 0)",
            "append: {append}"
        );
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "planted\n");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (65534, 0o666));
}

/// Issue 27 item 4: a FIFO as the trajectory used to block in `open(O_WRONLY)` forever (no
/// reader); now it is refused at once.
#[cfg(unix)]
#[test]
fn a_fifo_trajectory_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = codemode_test_support::files::fifo(dir.path(), "t.jsonl");
    let (tx, rx) = std::sync::mpsc::channel();
    let opening = path.clone();
    std::thread::spawn(move || {
        let _ = tx.send(
            JsonLinesSink::create(&opening)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        );
    });
    // Without the fix the open never returns; the test fails here instead of hanging.
    let answer = rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("opening a FIFO trajectory returns at once");
    assert_eq!(
        answer,
        Err("it is a FIFO (named pipe), not a regular file".to_string())
    );
}

#[test]
fn file_sink_survives_a_vanished_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert!(JsonLinesSink::create(dir.path().join("missing/t.jsonl")).is_err());
    // A writer that fails after the first line: the run goes on, the count says what was lost.
    struct FailAfterOne(Arc<Mutex<Vec<u8>>>, bool);
    impl std::io::Write for FailAfterOne {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.1 {
                return Err(std::io::Error::other("EIO"));
            }
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.1 = true;
            Ok(())
        }
    }
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(JsonLinesSink::from_writer(FailAfterOne(
        bytes.clone(),
        false,
    )));
    record_run(&trajectory(sink.clone()));
    assert_eq!(sink.errors(), 13);
    assert_eq!(
        String::from_utf8(bytes.lock().unwrap().clone()).unwrap(),
        format!("{}\n", expected_lines()[0])
    );
}

#[test]
fn transcript_of_the_run() {
    let sink = Arc::new(MemorySink::new());
    record_run(&trajectory(sink.clone()));
    let transcript = Transcript::from_events(&sink.events());
    let cut_body = format!("{}…(5904 more)", "q".repeat(4096));
    let tel = |calls| {
        json!({"catalogSize": 4, "sources": {"openclaw": 4, "mcp": 0, "client": 0},
               "searchCount": 0, "describeCount": 0, "callCount": calls,
               "visibleTools": ["exec", "wait"]})
    };
    let want = json!({"toolCalls": [
        {"toolCallId": "call_1", "name": "exec", "toolKind": "code_mode_exec",
         "arguments": {"code": redacted_code()}, "status": "waiting",
         "result": {"status": "waiting", "runId": "cm_1", "reason": "pending_tools",
                    "pendingToolCalls": [{"id": "bridge:call:2", "method": "call"}],
                    "replaySafe": false, "output": [], "telemetry": tel(2)},
         "nestedCalls": [
            {"toolCallId": "tool_search_code:call_1:weather:1", "name": "weather",
             "toolId": "openclaw:core:weather", "input": {"city": "Oslo"},
             "result": {"content": [], "details": {"city": "Oslo", "tempC": 4}},
             "parentToolCallId": "call_1", "status": "ok"},
            // Started during the exec, settled while parked: stays under the exec.
            {"toolCallId": "tool_search_code:call_1:fetch_report:2", "name": "fetch_report",
             "toolId": "openclaw:core:fetch_report",
             "input": {"url": "https://r.example/q3", "auth": {"token": "[redacted]"}},
             "result": {"content": [], "details": {"body": cut_body}},
             "parentToolCallId": "call_1", "status": "ok"}
         ]},
        {"toolCallId": "call_2", "name": "wait", "toolKind": "code_mode_wait",
         "arguments": {"runId": "cm_1"}, "status": "completed",
         "result": {"status": "completed", "value": {"input": {"tempC": 4, "size": 10000}},
                    "output": [], "replaySafe": false, "telemetry": tel(3)},
         "nestedCalls": [
            // Made during the wait: under the wait, parent id the original exec's.
            {"toolCallId": "tool_search_code:call_1:echo:3", "name": "echo",
             "toolId": "openclaw:core:echo", "input": {"tempC": 4, "size": 10000},
             "result": {"content": [], "details": {"input": {"tempC": 4, "size": 10000}}},
             "parentToolCallId": "call_1", "status": "ok"}
         ]},
        {"toolCallId": "call_3", "name": "message", "toolKind": "tool",
         "arguments": {"text": "4°C in Oslo", "apiKey": "[redacted]"}, "status": "failed",
         "result": null, "error": "channel closed", "nestedCalls": []}
    ]});
    assert_eq!(serde_json::to_value(&transcript).unwrap(), want);
    // Replay sends the same control calls with the same arguments.
    assert_eq!(
        transcript.control_calls(),
        vec![
            ("exec", &json!({"code": redacted_code()})),
            ("wait", &json!({"runId": "cm_1"}))
        ]
    );
    // Built incrementally, the same.
    let mut b = TranscriptBuilder::new();
    for e in sink.events() {
        b.push(&e);
    }
    assert_eq!(b.finish(), transcript);
}

fn nested_event(id: &str, parent: Option<&str>, run: Option<&str>) -> EventKind {
    EventKind::NestedToolCall(NestedToolCallEvent {
        tool_call_id: id.into(),
        parent_tool_call_id: parent.map(str::to_string),
        code_mode_run_id: run.map(str::to_string),
        tool_id: "openclaw:core:t".into(),
        tool_name: "t".into(),
        method: NestedMethod::CallValue,
        input: json!({}),
    })
}

fn call_event(id: &str, kind: ToolKind, input: Value) -> EventKind {
    EventKind::ToolCall(ToolCallEvent {
        tool_call_id: id.into(),
        tool_name: match kind {
            ToolKind::CodeModeExec => "exec",
            ToolKind::CodeModeWait => "wait",
            ToolKind::Tool => "read",
        }
        .into(),
        tool_kind: kind,
        tool_input_kind: None,
        input,
    })
}

fn nested_ids(t: &Transcript) -> Vec<(String, Vec<String>)> {
    t.tool_calls
        .iter()
        .map(|c| {
            (
                c.tool_call_id.clone(),
                c.nested_calls
                    .iter()
                    .map(|n| n.tool_call_id.clone())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn placement_with_two_runs_waited_in_parallel() {
    // Two execs park (A as cm_a, B as cm_b); the model then waits on both in one turn. Nested
    // calls during the waits go under the wait of their own run, found by parent or by run id.
    let events: Vec<TrajectoryEvent> = [
        call_event("A", ToolKind::CodeModeExec, json!({"code": "a"})),
        call_event("B", ToolKind::CodeModeExec, json!({"code": "b"})),
        EventKind::ToolResult(ToolResultEvent {
            tool_call_id: "A".into(),
            tool_name: "exec".into(),
            tool_kind: ToolKind::CodeModeExec,
            tool_input_kind: None,
            status: ToolStatus::Waiting,
            code_mode_run_id: Some("cm_a".into()),
            duration_ms: 1,
            result: None,
            error: None,
        }),
        EventKind::RunParked(RunParkedEvent {
            code_mode_run_id: "cm_b".into(),
            tool_call_id: "B".into(),
            parent_tool_call_id: None,
            reason: ParkReason::Yield,
            pending_tool_calls: 0,
            snapshot_bytes: None,
        }),
        call_event("WB", ToolKind::CodeModeWait, json!({"runId": "cm_b"})),
        call_event("WA", ToolKind::CodeModeWait, json!({"runId": "cm_a"})),
        // By parent only (learned from A's waiting result).
        nested_event("n_a", Some("A"), None),
        // By run id only (no parent id given by the host).
        nested_event("n_b", None, Some("cm_b")),
        // A direct tool is open too; nothing nests under it.
        call_event("R", ToolKind::Tool, json!({})),
        // Unknown parent and run, two code-mode calls open: unplaced.
        nested_event("n_x", Some("ghost"), None),
    ]
    .into_iter()
    .map(|k| TrajectoryEvent::at("T", RunScope::default(), k))
    .collect();
    let t = Transcript::from_events(&events);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        nested_ids(&t),
        vec![
            ("A".into(), vec![]),
            ("B".into(), vec![]),
            ("WB".into(), s(&["n_b"])),
            ("WA".into(), s(&["n_a"])),
            ("R".into(), vec![]),
        ]
    );
    assert_eq!(t.unplaced_nested_calls.len(), 1);
    assert_eq!(t.unplaced_nested_calls[0].tool_call_id, "n_x");
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["unplacedNestedCalls"][0]["parentToolCallId"], "ghost");
    assert_eq!(json["unplacedNestedCalls"][0]["result"], Value::Null);
}

#[test]
fn a_result_without_its_call_is_still_shown() {
    let events = [
        call_event("A", ToolKind::CodeModeExec, json!({"code": "a"})),
        EventKind::NestedToolResult(NestedToolResultEvent {
            tool_call_id: "n1".into(),
            parent_tool_call_id: Some("A".into()),
            code_mode_run_id: None,
            tool_id: "openclaw:core:t".into(),
            tool_name: "t".into(),
            method: NestedMethod::Call,
            status: NestedStatus::Blocked,
            duration_ms: 0,
            result: None,
            error: Some("Tool \"openclaw:core:t\" was blocked before execution: no".into()),
        }),
    ]
    .map(|k| TrajectoryEvent::at("T", RunScope::default(), k));
    let t = Transcript::from_events(&events);
    assert_eq!(
        serde_json::to_value(&t.tool_calls[0].nested_calls).unwrap(),
        json!([{"toolCallId": "n1", "name": "t", "toolId": "openclaw:core:t", "input": null,
                "result": null, "parentToolCallId": "A", "status": "blocked",
                "error": "Tool \"openclaw:core:t\" was blocked before execution: no"}])
    );
}
