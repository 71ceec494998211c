//! Downstream log messages and resource updates passed on to the clients of `codemode serve`
//! with code mode off, where serve is a plain aggregating MCP server (docs/mcp.md, "Logging and
//! resource subscriptions").
//!
//! - **Log messages.** A client that sent `logging/setLevel` gets the `notifications/message` a
//!   downstream server sends while that client's session has a request to it in flight (the
//!   same rule as elicitation: with requests of two sessions in flight nobody gets it, since a
//!   message does not say which request it is about; a message handled up to 200 ms after the
//!   request ended still counts, since rmcp handles each notification on a task of its own), at
//!   that client's level or above, with
//!   `logger` naming the server (`<server>` or `<server>/<logger>`). Each downstream server is
//!   set to the most verbose level any live session asked for; serve filters per session.
//!   Clients that never set a level get no log messages (the revision lets a server choose); the
//!   operator's log keeps every message, redacted (`forward.rs`).
//! - **Resource subscriptions.** `resources/subscribe` of a URI subscribes at the server that
//!   owns it (as `resources/read` is routed) once, for every session that asks;
//!   `notifications/resources/updated` for it goes to each subscribed client until it
//!   unsubscribes or its transport closes; the last `resources/unsubscribe` unsubscribes
//!   downstream.

// Logging is deprecated by SEP-2577 for 2026-07-28, but it is part of the 2025-11-25 revision
// whose clients use it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::RoleServer;

use super::Forwarder;

/// How long after a session's last request to a server ends a log message of that server is
/// still that session's: rmcp hands each notification to its own task, so a message the server
/// sent just before its answer can be handled just after the request ended.
const LOG_GRACE: Duration = Duration::from_millis(200);

/// The log levels and resource subscriptions of the clients of one `serve` process.
#[derive(Default)]
pub(super) struct Notices {
    /// Downstream server → the sessions whose last request to it ended, and when (pruned to
    /// [`LOG_GRACE`]).
    ended: Mutex<HashMap<String, Vec<(String, Instant)>>>,
    /// MCP session id → the level its client set with `logging/setLevel`.
    levels: Mutex<HashMap<String, LoggingLevel>>,
    /// (downstream server, URI) → the subscribed clients.
    subscribers: Mutex<HashMap<(String, String), Subscribers>>,
}

/// MCP session id → the client subscribed in that session.
type Subscribers = HashMap<String, Peer<RoleServer>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The severity rank of `level` (`debug` 0 … `emergency` 7).
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Forwarder {
    /// Notes `level` as the log level of MCP session `session` (its `logging/setLevel`); the
    /// level to set at the downstream servers: the most verbose any session asked for (the
    /// levels of sessions whose client is gone are dropped with it, [`Forwarder::set_upstream`]).
    pub fn set_log_level(&self, session: &str, level: LoggingLevel) -> LoggingLevel {
        let mut levels = lock(&self.notices.levels);
        levels.insert(session.to_string(), level);
        levels
            .values()
            .copied()
            .min_by_key(|level| severity(*level))
            .unwrap_or(level)
    }

    /// Forgets the log levels of the sessions `live` does not keep.
    pub(super) fn keep_log_levels(&self, live: impl Fn(&str) -> bool) {
        lock(&self.notices.levels).retain(|id, _| live(id));
    }

    /// Notes that MCP session `session`'s last request to `server` in flight ended.
    pub(super) fn ended(&self, server: &str, session: &str) {
        let now = Instant::now();
        let mut ended = lock(&self.notices.ended);
        ended.retain(|_, sessions| {
            sessions.retain(|(_, at)| now.duration_since(*at) < LOG_GRACE);
            !sessions.is_empty()
        });
        let sessions = ended.entry(server.to_string()).or_default();
        sessions.retain(|(id, _)| id != session);
        sessions.push((session.to_string(), now));
    }

    /// The session a log message of `server` is for: the one with a request to it in flight,
    /// else the one whose request ended within [`LOG_GRACE`] (none when two did: ambiguous).
    fn log_session(&self, server: &str) -> Option<String> {
        if let Ok(session) = self.caller_session(server) {
            return Some(session);
        }
        if self.has_calls(server) {
            return None; // ambiguous
        }
        let now = Instant::now();
        let ended = lock(&self.notices.ended);
        let recent: Vec<&String> = ended
            .get(server)?
            .iter()
            .filter(|(_, at)| now.duration_since(*at) < LOG_GRACE)
            .map(|(id, _)| id)
            .collect();
        match recent.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        }
    }

    /// Passes `params`, a log message of `server`, to the client of the one session with a
    /// request to `server` in flight (or just ended), when that client set a level the message
    /// meets (see the module docs); `false` when it went to nobody.
    pub(crate) async fn route_log(
        &self,
        server: &str,
        mut params: LoggingMessageNotificationParam,
    ) -> bool {
        let Some(session) = self.log_session(server) else {
            return false;
        };
        let Some(level) = lock(&self.notices.levels).get(&session).copied() else {
            return false;
        };
        if severity(params.level) < severity(level) {
            return false;
        }
        let Some(peer) = self.upstream_of(&session) else {
            return false;
        };
        params.logger = Some(match params.logger.take() {
            Some(logger) => format!("{server}/{logger}"),
            None => server.to_string(),
        });
        peer.notify_logging_message(params).await.is_ok()
    }

    /// Notes `peer` (of MCP session `session`) as subscribed to `uri` of `server`; `true` when
    /// it is the first subscriber, so the caller subscribes at the server.
    pub fn subscribe(
        &self,
        server: &str,
        uri: &str,
        session: &str,
        peer: Peer<RoleServer>,
    ) -> bool {
        let mut subscribers = lock(&self.notices.subscribers);
        let clients = subscribers
            .entry((server.to_string(), uri.to_string()))
            .or_default();
        clients.retain(|_, p| !p.is_transport_closed());
        let first = clients.is_empty();
        clients.insert(session.to_string(), peer);
        first
    }

    /// Ends MCP session `session`'s subscription to `uri` of `server`; `true` when no client
    /// is subscribed any more, so the caller unsubscribes at the server.
    pub fn unsubscribe(&self, server: &str, uri: &str, session: &str) -> bool {
        let mut subscribers = lock(&self.notices.subscribers);
        let key = (server.to_string(), uri.to_string());
        let Some(clients) = subscribers.get_mut(&key) else {
            return false;
        };
        clients.remove(session);
        clients.retain(|_, p| !p.is_transport_closed());
        if clients.is_empty() {
            subscribers.remove(&key);
            return true;
        }
        false
    }

    /// Passes `params`, an update of a resource of `server`, to every client subscribed to it;
    /// how many got it.
    pub(crate) async fn route_resource_updated(
        &self,
        server: &str,
        params: ResourceUpdatedNotificationParam,
    ) -> usize {
        let peers: Vec<Peer<RoleServer>> = {
            let mut subscribers = lock(&self.notices.subscribers);
            let key = (server.to_string(), params.uri.clone());
            let Some(clients) = subscribers.get_mut(&key) else {
                return 0;
            };
            clients.retain(|_, p| !p.is_transport_closed());
            clients.values().cloned().collect()
        };
        let mut sent = 0;
        for peer in peers {
            if peer.notify_resource_updated(params.clone()).await.is_ok() {
                sent += 1;
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_follow_the_spec_order() {
        let order = [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ];
        for (rank, name) in order.iter().enumerate() {
            let level: LoggingLevel = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(usize::from(severity(level)), rank, "{name}");
        }
    }

    #[test]
    fn the_downstream_level_is_the_most_verbose_any_session_asked_for() {
        let forward = Forwarder::default();
        let level = |session, level| forward.set_log_level(session, level);
        assert_eq!(level("mcp-a", LoggingLevel::Warning), LoggingLevel::Warning);
        assert_eq!(level("mcp-b", LoggingLevel::Debug), LoggingLevel::Debug);
        assert_eq!(level("mcp-b", LoggingLevel::Error), LoggingLevel::Warning);
        // A session whose client is gone no longer counts.
        forward.keep_log_levels(|id| id == "mcp-b");
        assert_eq!(level("mcp-b", LoggingLevel::Error), LoggingLevel::Error);
    }

    #[test]
    fn the_last_unsubscribe_ends_the_downstream_subscription() {
        let forward = Forwarder::default();
        // Unknown: nothing to end.
        assert!(!forward.unsubscribe("docs", "file:///a", "mcp-a"));
    }
}
