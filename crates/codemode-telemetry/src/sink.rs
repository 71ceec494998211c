//! Where trajectory events go: the [`TrajectorySink`] trait, four sinks, and the [`Trajectory`]
//! handle a run records through.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::event::{now_rfc3339, EventKind, TrajectoryEvent};
use crate::transcript::Placer;
use codemode_bridge::RunScope;
use codemode_files::FileError;

/// The `tracing` target of [`TracingSink`]'s spans and events.
pub const TRACING_TARGET: &str = "codemode::trajectory";

/// Receives trajectory events, in the order a run records them.
///
/// `record` is called on the run's own threads (tokio tasks, leg threads) and must not block for
/// long or panic; a sink that fails to store an event reports it its own way and carries on.
pub trait TrajectorySink: Send + Sync {
    /// Stores or forwards one event. The event is already redacted.
    fn record(&self, event: &TrajectoryEvent);
}

impl<S: TrajectorySink + ?Sized> TrajectorySink for Arc<S> {
    fn record(&self, event: &TrajectoryEvent) {
        (**self).record(event)
    }
}

impl<S: TrajectorySink + ?Sized> TrajectorySink for Box<S> {
    fn record(&self, event: &TrajectoryEvent) {
        (**self).record(event)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a sink's state half-updated in a way that
    // matters (a Vec push, a write call), so a poisoned lock is used as it is.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes each event as one JSON line (`TrajectoryEvent::to_json_line` plus `\n`), flushed after
/// every line, so a crash loses at most the line being written.
///
/// I/O errors never panic and never reach the run: the first one is logged with
/// `tracing::warn!` (target [`TRACING_TARGET`]), later ones only counted ([`Self::errors`]), and
/// every later event is still attempted (a full disk may drain).
pub struct JsonLinesSink {
    out: Mutex<Box<dyn Write + Send>>,
    errors: AtomicU64,
    path: Option<PathBuf>,
}

impl fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesSink")
            .field("path", &self.path)
            .field("errors", &self.errors())
            .finish_non_exhaustive()
    }
}

impl JsonLinesSink {
    /// Creates (or truncates) the file at `path` through the checked path for operator files
    /// (`codemode_files::create_private`, docs/threat-model.md "Files an operator names"): the
    /// file gets mode 0600 even when it existed with another mode, and a symbolic link, a FIFO or
    /// other non-regular file, or a file another user owns (who could read every tool input and
    /// result written to it, whatever its mode) is refused at once, before anything is truncated.
    ///
    /// # Errors
    /// The [`FileError`] saying why (the message does not repeat the path), or its
    /// [`FileError::Io`] when the file cannot be created (missing directory, permissions).
    pub fn create(path: impl AsRef<Path>) -> Result<JsonLinesSink, FileError> {
        let path = path.as_ref();
        Ok(JsonLinesSink::with_path(
            codemode_files::create_private(path, false)?,
            path,
        ))
    }

    /// Opens the file at `path` for appending, creating it if needed, with the same checks and
    /// mode as [`create`](Self::create).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn append(path: impl AsRef<Path>) -> Result<JsonLinesSink, FileError> {
        let path = path.as_ref();
        Ok(JsonLinesSink::with_path(
            codemode_files::create_private(path, true)?,
            path,
        ))
    }

    fn with_path(file: File, path: &Path) -> JsonLinesSink {
        JsonLinesSink {
            out: Mutex::new(Box::new(file)),
            errors: AtomicU64::new(0),
            path: Some(path.to_path_buf()),
        }
    }

    /// Writes to any writer (stdout, a socket, a test buffer). Each line is written with one
    /// `write_all` and followed by `flush`.
    pub fn from_writer(writer: impl Write + Send + 'static) -> JsonLinesSink {
        JsonLinesSink {
            out: Mutex::new(Box::new(writer)),
            errors: AtomicU64::new(0),
            path: None,
        }
    }

    /// How many events failed to be written so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

impl TrajectorySink for JsonLinesSink {
    fn record(&self, event: &TrajectoryEvent) {
        let mut line = event.to_json_line();
        line.push('\n');
        let result = {
            let mut out = lock(&self.out);
            out.write_all(line.as_bytes()).and_then(|()| out.flush())
        };
        if let Err(e) = result {
            if self.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    target: TRACING_TARGET,
                    path = ?self.path,
                    error = %e,
                    "cannot write the trajectory; later write errors are not logged"
                );
            }
        }
    }
}

/// Keeps every event in memory, for tests and for hosts that print the trajectory at the end
/// (the `agent` envelope's `trajectory`).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<TrajectoryEvent>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of the events so far, in order.
    pub fn events(&self) -> Vec<TrajectoryEvent> {
        lock(&self.events).clone()
    }

    /// The events so far as JSON lines (no trailing newlines).
    pub fn lines(&self) -> Vec<String> {
        lock(&self.events)
            .iter()
            .map(TrajectoryEvent::to_json_line)
            .collect()
    }

    /// Removes and returns the events so far.
    pub fn take(&self) -> Vec<TrajectoryEvent> {
        std::mem::take(&mut *lock(&self.events))
    }

    /// How many events are held.
    pub fn len(&self) -> usize {
        lock(&self.events).len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl TrajectorySink for MemorySink {
    fn record(&self, event: &TrajectoryEvent) {
        lock(&self.events).push(event.clone());
    }
}

/// Forwards every event to several sinks, in the order given.
#[derive(Default)]
pub struct FanOut {
    sinks: Vec<Arc<dyn TrajectorySink>>,
}

impl fmt::Debug for FanOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOut")
            .field("sinks", &self.sinks.len())
            .finish()
    }
}

impl FanOut {
    /// A fan-out over `sinks`.
    pub fn new(sinks: Vec<Arc<dyn TrajectorySink>>) -> FanOut {
        FanOut { sinks }
    }

    /// Adds a sink at the end.
    pub fn push(&mut self, sink: Arc<dyn TrajectorySink>) {
        self.sinks.push(sink);
    }

    /// How many sinks there are.
    pub fn len(&self) -> usize {
        self.sinks.len()
    }

    /// Whether there is no sink.
    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }
}

impl TrajectorySink for FanOut {
    fn record(&self, event: &TrajectoryEvent) {
        for sink in &self.sinks {
            sink.record(event);
        }
    }
}

/// Turns trajectory events into `tracing` spans and events (target [`TRACING_TARGET`], level
/// INFO), so any subscriber sees them.
///
/// - `tool_call` opens a span named `tool_call` (fields `tool_call_id`, `tool_name`,
///   `tool_kind`, and `status`, `duration_ms` recorded at the result); `tool_result` records those
///   and closes it. The span's parent is the caller's current span.
/// - `nested_tool_call` opens a span named `nested_tool_call` (`tool_call_id`,
///   `parent_tool_call_id`, `tool_id`, `tool_name`, `method`, `status`, `duration_ms`) under the
///   provider call it belongs to: the `exec`, or the `wait` that resumed the run (the same rule as
///   the transcript); `nested_tool_result` closes it.
/// - Every trajectory event, these included, is also one `tracing` event inside the matching span,
///   with message = the event's `type` and fields `event` (the type), `ts`, `agent_id`,
///   `session_id`, `session_key`, `run_id`, `code_mode_run_id`, `tool_call_id`,
///   `parent_tool_call_id`, `status`, `duration_ms` (the ones that apply) and `line` (the whole
///   JSON line).
///
/// `run_expired` and `run_aborted` close the spans of their run's unsettled nested calls. At most
/// 4096 spans are held open; past that the oldest-opened half is closed.
#[derive(Default)]
pub struct TracingSink {
    state: Mutex<TracingState>,
}

impl fmt::Debug for TracingSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("TracingSink")
            .field("open_spans", &state.spans.len())
            .finish()
    }
}

const MAX_OPEN_SPANS: usize = 4096;

#[derive(Default)]
struct TracingState {
    placer: Placer,
    /// Open spans by tool-call id, with the order they were opened in and the parent exec id.
    spans: HashMap<String, (u64, Option<String>, tracing::Span)>,
    opened: u64,
}

impl TracingState {
    fn insert(&mut self, id: String, parent: Option<String>, span: tracing::Span) {
        self.opened += 1;
        self.spans.insert(id, (self.opened, parent, span));
        if self.spans.len() > MAX_OPEN_SPANS {
            let mut order: Vec<u64> = self.spans.values().map(|(n, _, _)| *n).collect();
            order.sort_unstable();
            let cutoff = order[order.len() / 2];
            self.spans.retain(|_, (n, _, _)| *n >= cutoff);
        }
    }
}

impl TracingSink {
    /// A sink with no open spans.
    pub fn new() -> TracingSink {
        TracingSink::default()
    }
}

impl TrajectorySink for TracingSink {
    fn record(&self, event: &TrajectoryEvent) {
        let kind = event.kind();
        let mut state = lock(&self.state);
        state.placer.observe(kind);
        let mut status: Option<&'static str> = None;
        let mut duration_ms: Option<u64> = None;
        // The span the event goes in, and whether the event closes it.
        let mut span: Option<tracing::Span> = None;
        match kind {
            EventKind::ToolCall(e) => {
                let s = tracing::info_span!(
                    target: TRACING_TARGET,
                    "tool_call",
                    tool_call_id = %e.tool_call_id,
                    tool_name = %e.tool_name,
                    tool_kind = e.tool_kind.as_str(),
                    status = tracing::field::Empty,
                    duration_ms = tracing::field::Empty,
                );
                state.insert(e.tool_call_id.clone(), None, s.clone());
                span = Some(s);
            }
            EventKind::ToolResult(e) => {
                status = Some(e.status.as_str());
                duration_ms = Some(e.duration_ms);
                if let Some((_, _, s)) = state.spans.remove(&e.tool_call_id) {
                    s.record("status", e.status.as_str());
                    s.record("duration_ms", e.duration_ms);
                    span = Some(s);
                }
            }
            EventKind::NestedToolCall(e) => {
                let parent = state
                    .placer
                    .owner(
                        e.parent_tool_call_id.as_deref(),
                        e.code_mode_run_id.as_deref(),
                    )
                    .and_then(|owner| state.spans.get(&owner).map(|(_, _, s)| s.clone()));
                macro_rules! nested_span {
                    ($($parent:tt)*) => {
                        tracing::info_span!(
                            target: TRACING_TARGET,
                            $($parent)*
                            "nested_tool_call",
                            tool_call_id = %e.tool_call_id,
                            parent_tool_call_id = e.parent_tool_call_id.as_deref(),
                            tool_id = %e.tool_id,
                            tool_name = %e.tool_name,
                            method = e.method.as_str(),
                            status = tracing::field::Empty,
                            duration_ms = tracing::field::Empty,
                        )
                    };
                }
                // Under the owning provider call's span; else the caller's current span.
                let s = match parent.as_ref().and_then(|p| p.id()) {
                    Some(id) => nested_span!(parent: id,),
                    None => nested_span!(),
                };
                state.insert(
                    e.tool_call_id.clone(),
                    e.parent_tool_call_id.clone(),
                    s.clone(),
                );
                span = Some(s);
            }
            EventKind::NestedToolResult(e) => {
                let st = e.status.as_str();
                duration_ms = Some(e.duration_ms);
                if let Some((_, _, s)) = state.spans.remove(&e.tool_call_id) {
                    s.record("status", st);
                    s.record("duration_ms", e.duration_ms);
                    span = Some(s);
                }
                status = Some(st);
            }
            EventKind::ApprovalRequested(_) | EventKind::ApprovalResolved(_) => {
                span = kind
                    .tool_call_id()
                    .and_then(|id| state.spans.get(id).map(|(_, _, s)| s.clone()));
            }
            EventKind::RunParked(_) | EventKind::RunResumed(_) => {
                span = kind
                    .tool_call_id()
                    .and_then(|id| state.spans.get(id).map(|(_, _, s)| s.clone()));
            }
            EventKind::RunExpired(e) | EventKind::RunAborted(e) => {
                if let Some(parent) = &e.parent_tool_call_id {
                    state
                        .spans
                        .retain(|_, (_, p, _)| p.as_deref() != Some(parent.as_str()));
                }
            }
        }
        drop(state);
        let scope = event.scope();
        let line = event.to_json_line();
        let ty = kind.type_name();
        macro_rules! emit {
            ($($parent:tt)*) => {
                tracing::info!(
                    target: TRACING_TARGET,
                    $($parent)*
                    event = ty,
                    ts = event.ts(),
                    agent_id = scope.agent_id.as_deref(),
                    session_id = scope.session_id.as_deref(),
                    session_key = scope.session_key.as_deref(),
                    run_id = scope.run_id.as_deref(),
                    code_mode_run_id = kind.code_mode_run_id(),
                    tool_call_id = kind.tool_call_id(),
                    parent_tool_call_id = kind.parent_tool_call_id(),
                    status = status,
                    duration_ms = duration_ms,
                    line = line.as_str(),
                    "{ty}"
                )
            };
        }
        match span.as_ref().and_then(|s| s.id()) {
            Some(id) => emit!(parent: id,),
            None => emit!(),
        }
    }
}

/// The handle a run records its trajectory through: a sink (or none), the run's [`RunScope`], and a
/// clock. Cheap to clone; [`Trajectory::disabled`] (also `Default`) records nothing, so a host can
/// always hold one.
#[derive(Clone)]
pub struct Trajectory {
    sink: Option<Arc<dyn TrajectorySink>>,
    scope: RunScope,
    clock: Arc<dyn Fn() -> String + Send + Sync>,
}

impl fmt::Debug for Trajectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trajectory")
            .field("enabled", &self.is_enabled())
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Default for Trajectory {
    fn default() -> Trajectory {
        Trajectory::disabled()
    }
}

impl Trajectory {
    /// Records into `sink`, stamping events with the UTC clock ([`now_rfc3339`]).
    pub fn new(sink: Arc<dyn TrajectorySink>, scope: RunScope) -> Trajectory {
        Trajectory {
            sink: Some(sink),
            scope,
            clock: Arc::new(now_rfc3339),
        }
    }

    /// Records nothing.
    pub fn disabled() -> Trajectory {
        Trajectory {
            sink: None,
            scope: RunScope::default(),
            clock: Arc::new(now_rfc3339),
        }
    }

    /// The same sink and clock with another scope (e.g. a session's scope).
    pub fn with_scope(&self, scope: RunScope) -> Trajectory {
        Trajectory {
            scope,
            ..self.clone()
        }
    }

    /// The same sink and scope with another clock, which returns RFC 3339 timestamps
    /// (deterministic tests, replays).
    pub fn with_clock(self, clock: impl Fn() -> String + Send + Sync + 'static) -> Trajectory {
        Trajectory {
            clock: Arc::new(clock),
            ..self
        }
    }

    /// Whether events go anywhere; callers may skip building costly events when not.
    pub fn is_enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// The scope stamped on every event.
    pub fn scope(&self) -> &RunScope {
        &self.scope
    }

    /// Redacts `kind`, stamps it with the clock and the scope, and hands it to the sink.
    pub fn record(&self, kind: EventKind) {
        if let Some(sink) = &self.sink {
            sink.record(&TrajectoryEvent::at(
                (self.clock)(),
                self.scope.clone(),
                kind,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::RunEndedEvent;
    use std::io;

    struct FailingWriter;
    impl Write for FailingWriter {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn aborted() -> EventKind {
        EventKind::RunAborted(RunEndedEvent {
            code_mode_run_id: Some("cm_1".into()),
            parent_tool_call_id: None,
            reason: Some("abort signal".into()),
        })
    }

    #[test]
    fn failing_writer_counts_and_never_panics() {
        let sink = JsonLinesSink::from_writer(FailingWriter);
        let t = Trajectory::new(Arc::new(sink), RunScope::default());
        t.record(aborted());
        t.record(aborted());
        // The sink moved into the Trajectory; check the count through a shared handle.
        let sink = Arc::new(JsonLinesSink::from_writer(FailingWriter));
        let t = Trajectory::new(sink.clone(), RunScope::default());
        for _ in 0..3 {
            t.record(aborted());
        }
        assert_eq!(sink.errors(), 3);
    }

    #[test]
    fn fan_out_and_disabled() {
        let a = Arc::new(MemorySink::new());
        let b = Arc::new(MemorySink::new());
        let mut fan = FanOut::new(vec![a.clone()]);
        fan.push(b.clone());
        assert_eq!(fan.len(), 2);
        let t = Trajectory::new(Arc::new(fan), RunScope::default()).with_clock(|| "T".into());
        t.record(aborted());
        let want =
            r#"{"type":"run_aborted","ts":"T","codeModeRunId":"cm_1","reason":"abort signal"}"#;
        assert_eq!(a.lines(), vec![want]);
        assert_eq!(b.lines(), vec![want]);
        assert_eq!(b.take().len(), 1);
        assert!(b.is_empty());
        let off = Trajectory::disabled();
        assert!(!off.is_enabled());
        off.record(aborted());
    }
}
