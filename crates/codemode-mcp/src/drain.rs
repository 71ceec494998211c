//! Stopping `codemode serve` without leaving calls unanswered (docs/mcp.md, "Shutdown").
//!
//! A [`Drain`] is shared by every session of one server. When the host stops it
//! ([`Drain::stop`], on SIGTERM or SIGINT), each `tools/call` still running aborts its run and
//! answers a JSON-RPC error ([`SHUTTING_DOWN`], code -32603) instead of having its connection cut:
//! a client over HTTP otherwise learns of the end only from its own timeout (a legacy client took
//! 8.1 s). [`Drain::answered`] lets the transport wait, within a bound, until those answers are
//! out before it closes connections.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The message of the JSON-RPC error (code -32603, internal error) a call gets when the server
/// stops while it runs.
pub const SHUTTING_DOWN: &str =
    "codemode serve is shutting down: this call was cancelled and its code-mode run aborted";

/// How long `serve_http` waits, once stopped, for the calls in flight to be answered and their
/// answers written, before it closes the connections anyway.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(3);

/// The calls in flight of one server and the signal that it is stopping. Cloning shares both.
#[derive(Clone, Debug)]
pub struct Drain {
    stopping: CancellationToken,
    calls: watch::Sender<usize>,
}

impl Default for Drain {
    fn default() -> Self {
        Drain::new()
    }
}

/// Counts one call in flight of a [`Drain`] until dropped.
#[derive(Debug)]
pub struct CallGuard(watch::Sender<usize>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Drain {
    /// A drain with no call in flight, not stopping.
    pub fn new() -> Self {
        Drain {
            stopping: CancellationToken::new(),
            calls: watch::channel(0).0,
        }
    }

    /// A drain that stops when `token` is cancelled (or [`Drain::stop`] is called).
    pub fn stopping_with(token: CancellationToken) -> Self {
        Drain {
            stopping: token,
            calls: watch::channel(0).0,
        }
    }

    /// Counts a call in flight until the guard is dropped (the call answered).
    pub fn enter(&self) -> CallGuard {
        self.calls.send_modify(|n| *n += 1);
        CallGuard(self.calls.clone())
    }

    /// The number of calls in flight.
    pub fn in_flight(&self) -> usize {
        *self.calls.borrow()
    }

    /// Tells every call in flight (and every later one) to abort and answer [`SHUTTING_DOWN`].
    pub fn stop(&self) {
        self.stopping.cancel();
    }

    /// True once [`Drain::stop`] was called.
    pub fn is_stopping(&self) -> bool {
        self.stopping.is_cancelled()
    }

    /// Resolves when the server is told to stop.
    pub async fn stopped(&self) {
        self.stopping.cancelled().await;
    }

    /// Waits at most `within` for the calls in flight to be answered; true when none is left.
    pub async fn answered(&self, within: Duration) -> bool {
        let mut calls = self.calls.subscribe();
        let answered = tokio::time::timeout(within, calls.wait_for(|n| *n == 0)).await;
        answered.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answered_waits_for_the_guards() {
        let drain = Drain::new();
        let guard = drain.enter();
        assert_eq!(drain.in_flight(), 1);
        assert!(!drain.answered(Duration::from_millis(20)).await);
        let waiting = tokio::spawn({
            let drain = drain.clone();
            async move { drain.answered(Duration::from_secs(5)).await }
        });
        drop(guard);
        assert!(waiting.await.unwrap());
        assert_eq!(drain.in_flight(), 0);
        assert!(!drain.is_stopping());
        drain.stop();
        assert!(drain.is_stopping());
    }
}
