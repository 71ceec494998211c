//! A run's nested calls (and downstream servers' own progress for them) reported to the client
//! as `notifications/progress` while its request is open.

use std::sync::Arc;

use codemode_facade::RunEnv;
use codemode_telemetry::Trajectory;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

/// Progress messages queued per request before the excess is dropped (notifications are advisory;
/// a client that reads them slower than a run makes calls must not grow the host's memory).
const PROGRESS_QUEUE: usize = 256;

/// The message of a `notifications/progress` for a nested call: `started <tool>` /
/// `finished <tool>` (the tool's registered name).
fn progress_message(kind: &codemode_telemetry::EventKind) -> Option<String> {
    use codemode_telemetry::EventKind;
    match kind {
        EventKind::NestedToolCall(e) => Some(format!("started {}", e.tool_name)),
        EventKind::NestedToolResult(e) => Some(format!("finished {}", e.tool_name)),
        _ => None,
    }
}

/// A trajectory sink that passes every event on to the run's own trajectory and turns nested
/// calls started/finished into progress messages, in order, on a channel.
/// With a forwarder, each nested call is watched while it runs, so a downstream MCP server's
/// own progress for it comes out on the same channel (`forward.rs`).
struct ProgressSink {
    inner: Trajectory,
    messages: tokio::sync::mpsc::Sender<String>,
    forward: Option<Arc<crate::forward::Forwarder>>,
}

impl codemode_telemetry::TrajectorySink for ProgressSink {
    fn record(&self, event: &codemode_telemetry::TrajectoryEvent) {
        use codemode_telemetry::EventKind;
        if self.inner.is_enabled() {
            self.inner.record(event.kind().clone());
        }
        if let Some(message) = progress_message(event.kind()) {
            // Bounded: a run making calls faster than the client takes notifications loses
            // the excess messages, never memory.
            let _ = self.messages.try_send(message);
        }
        if let Some(forward) = &self.forward {
            match event.kind() {
                EventKind::NestedToolCall(e) => {
                    forward.watch_call(&e.tool_call_id, self.messages.clone());
                }
                EventKind::NestedToolResult(e) => forward.unwatch_call(&e.tool_call_id),
                _ => {}
            }
        }
    }
}

/// How long answering a request waits for its progress notifications still queued to go out
/// (ms scale: a few writes). Bounded, so a client that stops reading cannot hold the answer.
const PROGRESS_FLUSH: std::time::Duration = std::time::Duration::from_secs(1);

/// The notifications of one request: the channel a run's progress messages go into, and the
/// task that writes them to the client. [`ProgressStream::finish`] lets the queued ones out
/// before the request is answered; dropped without it (the request was cancelled), the queued
/// ones still go out but nothing waits for them.
pub(super) struct ProgressStream {
    messages: tokio::sync::mpsc::Sender<String>,
    answered: tokio_util::sync::DropGuard,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressStream {
    /// The channel's sender: each message sent becomes one `notifications/progress`.
    pub(super) fn messages(&self) -> &tokio::sync::mpsc::Sender<String> {
        &self.messages
    }

    /// Stops the stream after every message already queued has been written to the client
    /// (in order, as the run made them), waiting at most [`PROGRESS_FLUSH`]; then the request's
    /// answer can follow them. Messages sent after this call are not written.
    pub(super) async fn finish(self) {
        let ProgressStream {
            messages,
            answered,
            task,
        } = self;
        drop(messages);
        drop(answered);
        let _ = tokio::time::timeout(PROGRESS_FLUSH, task).await;
    }
}

/// With a `progressToken` on the request, `env` reports the run's nested calls started and
/// finished to the client as `notifications/progress` (`progress` counts them, `message` is
/// `started <tool>` / `finished <tool>`); the timeouts stay as they are. Returns the env and
/// the request's [`ProgressStream`]: notifications stop when it is finished (the request is
/// answered) or dropped, even if a parked run keeps the trajectory.
pub(super) fn with_progress(
    env: RunEnv,
    context: &RequestContext<RoleServer>,
    forward: Option<Arc<crate::forward::Forwarder>>,
) -> (RunEnv, Option<ProgressStream>) {
    let Some(stream) = progress_channel(context) else {
        return (env, None);
    };
    let scope = env.trajectory.scope().clone();
    let sink = ProgressSink {
        inner: env.trajectory.clone(),
        messages: stream.messages().clone(),
        forward,
    };
    (
        env.with_trajectory(Trajectory::new(Arc::new(sink), scope)),
        Some(stream),
    )
}

/// With a `progressToken` on the request: the request's [`ProgressStream`], whose messages go
/// to the client as `notifications/progress` for that token, in order (`progress` counts them
/// from 1, `message` is the text; at most [`PROGRESS_QUEUE`] wait, the excess is dropped).
/// `None` without a token.
pub(super) fn progress_channel(context: &RequestContext<RoleServer>) -> Option<ProgressStream> {
    let token = context.meta.get_progress_token()?;
    let (messages, mut received) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
    let peer = context.peer.clone();
    let answered = tokio_util::sync::CancellationToken::new();
    let stop = answered.clone();
    let task = tokio::spawn(async move {
        let mut progress = 0u32;
        let mut stopping = false;
        loop {
            let message = if stopping {
                // Answered: what is queued now still goes out, nothing after it.
                received.try_recv().ok()
            } else {
                tokio::select! {
                    biased;
                    message = received.recv() => message,
                    () = stop.cancelled() => {
                        stopping = true;
                        continue;
                    }
                }
            };
            let Some(message) = message else { return };
            progress += 1;
            let mut param =
                rmcp::model::ProgressNotificationParam::new(token.clone(), f64::from(progress));
            param.message = Some(message);
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    Some(ProgressStream {
        messages,
        answered: answered.drop_guard(),
        task,
    })
}
