//! A parked run as a durable backend stores it ([`StoredRun`]): a clear header
//! ([`RecordMeta`]: run id, owner scope, expiry) and a sealed body (docs/snapshot-store.md,
//! "Backends"). The header is what a backend needs for scope checks, expiry, caps and listing; the
//! sealing binds it, so a changed header makes the body impossible to open
//! ([`crate::seal::Binding`]).

use std::time::{SystemTime, UNIX_EPOCH};

use codemode_bridge::RunScope;
use serde::{Deserialize, Serialize};

/// The clear header of a stored run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordMeta {
    /// The run's `runId` (`cm_<uuid>`).
    pub run_id: String,
    /// The scope that parked the run; `wait` is checked against it with [`crate::admits`].
    pub owner: RunScope,
    /// When the run expires, in milliseconds since the Unix epoch (`expires_at_ms <= now` is
    /// expired, as in the in-process store).
    pub expires_at_ms: u64,
}

impl RecordMeta {
    /// `true` when the run's expiry has passed at `now_ms` (milliseconds since the Unix epoch).
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// One stored run: its header and its sealed body (opaque to the backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// The clear header.
    pub meta: RecordMeta,
    /// The sealed body ([`crate::seal::StateKeys::seal`]); backends store it unchanged.
    pub body: Vec<u8>,
}

/// The wall clock in milliseconds since the Unix epoch (0 before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `true` when `run_id` can name a stored run: 1 to 128 ASCII letters, digits, `_` or `-` (the
/// `cm_<uuid>` ids the facade makes). Backends treat any other id as unknown (it could
/// otherwise name a path or a foreign key).
pub fn valid_run_id(run_id: &str) -> bool {
    (1..=128).contains(&run_id.len())
        && run_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
