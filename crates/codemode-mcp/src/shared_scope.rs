//! The scopes of stateless HTTP requests (requests without `Mcp-Session-Id`) and the
//! per-principal run cap of [`crate::CodeModeServer::serve_http`] (docs/deployment.md, "Several
//! processes" and "Bearer tokens and principals").
//!
//! - Without `--auth`, every stateless request shares one anonymous scope, `session_id =
//!   "mcp-stateless"`, `session_key = "mcp:stateless"`: the same in every process, so with a
//!   shared run store a run parked through one instance is resumed by a `wait` on any other.
//! - With `--auth`, each principal's stateless requests share that principal's scope,
//!   `session_id = "mcp-principal-<name>"`, `session_key = "mcp:principal:<name>"` (principal
//!   names never contain `:`), so principals never see each other's runs.
//!
//! These scopes outlive the process: when it stops, their runs are let go here but stay in a
//! durable store ([`codemode_facade::CodeMode::release_session`]).
//!
//! The cap: a principal may hold at most `cap` parked runs in this process, counting its shared
//! scope and the stateful MCP sessions it opened; the process-wide cap
//! ([`codemode_facade::MAX_SUSPENDED_RUNS`]) stays behind it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use codemode_bridge::RunScope;
use codemode_facade::CodeMode;

use crate::http_auth::Principal;

/// The anonymous stateless scope's `session_id`.
pub const ANONYMOUS_SESSION_ID: &str = "mcp-stateless";
/// The anonymous stateless scope's `session_key`.
pub const ANONYMOUS_SESSION_KEY: &str = "mcp:stateless";

/// The shared scope of `principal` (`None`: anonymous); see the module docs.
pub fn shared_scope(principal: Option<&Principal>) -> RunScope {
    let (id, key) = match principal {
        None => (
            ANONYMOUS_SESSION_ID.to_string(),
            ANONYMOUS_SESSION_KEY.to_string(),
        ),
        Some(p) => (
            format!("mcp-principal-{}", p.0),
            format!("mcp:principal:{}", p.0),
        ),
    };
    RunScope {
        session_id: Some(id),
        session_key: Some(key),
        ..RunScope::default()
    }
}

/// The shared sessions of one `serve_http` call, made on first use, and which stateful session
/// belongs to which principal (for the cap). `S` is the server's session type.
pub(crate) struct SharedSessions<S> {
    make: Box<dyn Fn(RunScope) -> Arc<S> + Send + Sync>,
    anonymous: Mutex<Option<Arc<S>>>,
    principals: Mutex<HashMap<String, Arc<S>>>,
    /// Stateful session key → principal, noted on the session's first authenticated request.
    owners: Arc<Mutex<HashMap<String, String>>>,
    /// At most this many parked runs per principal in this process (`None`: no cap).
    cap: Option<usize>,
}

impl<S> SharedSessions<S> {
    /// Sessions made by `make` from their scope, with `cap` runs per principal.
    pub(crate) fn new(
        make: impl Fn(RunScope) -> Arc<S> + Send + Sync + 'static,
        cap: Option<usize>,
    ) -> Self {
        SharedSessions {
            make: Box::new(make),
            anonymous: Mutex::new(None),
            principals: Mutex::new(HashMap::new()),
            owners: Arc::new(Mutex::new(HashMap::new())),
            cap,
        }
    }

    /// The shared session of `principal` (`None`: anonymous).
    pub(crate) fn session(&self, principal: Option<&Principal>) -> Arc<S> {
        match principal {
            None => self
                .anonymous
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(|| (self.make)(shared_scope(None)))
                .clone(),
            Some(p) => self
                .principals
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(p.0.clone())
                .or_insert_with(|| (self.make)(shared_scope(Some(p))))
                .clone(),
        }
    }

    /// Notes that the stateful session with `session_key` is `principal`'s; the returned guard
    /// forgets it when dropped (with the session).
    pub(crate) fn note_owner(&self, session_key: &str, principal: &Principal) -> OwnerNote {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session_key.to_string(), principal.0.clone());
        OwnerNote {
            owners: self.owners.clone(),
            session_key: session_key.to_string(),
        }
    }

    /// `true` when `principal` already holds the cap's worth of parked runs in `code_mode`.
    pub(crate) fn over_cap(&self, code_mode: &CodeMode, principal: &Principal) -> bool {
        let Some(cap) = self.cap else {
            return false;
        };
        let shared = shared_scope(Some(principal)).session_key;
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        let held = code_mode.parked_runs_where(|owner| {
            let Some(key) = owner.session_key.as_deref() else {
                return false;
            };
            Some(key) == shared.as_deref() || owners.get(key) == Some(&principal.0)
        });
        held >= cap
    }
}

/// Forgets a stateful session's principal when dropped.
pub(crate) struct OwnerNote {
    owners: Arc<Mutex<HashMap<String, String>>>,
    session_key: String,
}

impl Drop for OwnerNote {
    fn drop(&mut self) {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session_key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_the_same_in_every_process_and_differ_per_principal() {
        let anonymous = shared_scope(None);
        assert_eq!(anonymous.session_id.as_deref(), Some("mcp-stateless"));
        assert_eq!(anonymous.session_key.as_deref(), Some("mcp:stateless"));
        let alice = shared_scope(Some(&Principal("alice".into())));
        assert_eq!(alice.session_key.as_deref(), Some("mcp:principal:alice"));
        assert_eq!(alice.session_id.as_deref(), Some("mcp-principal-alice"));
        let sessions = SharedSessions::new(Arc::new, None);
        let a = Principal("a".into());
        assert!(Arc::ptr_eq(
            &sessions.session(Some(&a)),
            &sessions.session(Some(&a))
        ));
        assert!(Arc::ptr_eq(
            &sessions.session(None),
            &sessions.session(None)
        ));
        {
            let _note = sessions.note_owner("mcp:x", &a);
            assert_eq!(sessions.owners.lock().unwrap().len(), 1);
        }
        assert!(sessions.owners.lock().unwrap().is_empty());
    }
}
