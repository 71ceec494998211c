//! Why a store refused an operation: [`StoreError`] (the reference texts of
//! docs/contract/lifecycle.md#s5-3 and #s5-4) and [`Rejected`], a refusal that hands back what it
//! was given.

use std::fmt;

/// Why the store refused an operation. `Display` is the exact reference message of
/// docs/contract/lifecycle.md#s5-3/docs/contract/lifecycle.md#s5-4 (e.g. `code mode run is unavailable or expired.`); it is the only copy
/// of these texts.
///
/// All variants except [`StoreError::ExpiryUnavailable`] are reported as `failed` results with
/// `code: "invalid_input"` (docs/contract/decisions.md#d1); `ExpiryUnavailable` is `internal_error`
/// (docs/contract/lifecycle.md#s5-3-parking "Parking"). None of them changes a stored run, except that `resume` removes
/// a run it finds expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum StoreError {
    /// The cap of suspended runs (parked plus reserved) is reached (docs/contract/lifecycle.md#s5-4).
    #[error("too many suspended code mode runs.")]
    TooManySuspended,
    /// `now + ttl` is not a representable time (docs/contract/lifecycle.md#s5-3-parking "Parking").
    #[error("code mode run expiry is unavailable.")]
    ExpiryUnavailable,
    /// The `runId` is unknown, expired, or was removed while being resumed (docs/contract/lifecycle.md#s5-3 `wait` 2.1).
    #[error("code mode run is unavailable or expired.")]
    Unavailable,
    /// The run's owner has an agent run id and the caller's differs or is missing (docs/contract/lifecycle.md#s5-3 `wait` 2.2).
    #[error("code mode run belongs to a different agent run.")]
    OtherAgentRun,
    /// The run's owner has a session id, session key or agent id and the caller's differs or is
    /// missing (docs/contract/lifecycle.md#s5-3 `wait` 2.3).
    #[error("code mode run belongs to a different session.")]
    OtherSession,
    /// Another `resume` holds the run's [`ResumeGuard`](crate::live::ResumeGuard) (docs/contract/lifecycle.md#s5-3 `wait` 2.4); the first proceeds.
    #[error("code mode run is already being resumed.")]
    AlreadyResuming,
}

/// A refused operation that hands back what it was given, so the caller can still build its
/// result (for example the output of a run whose expiry is unavailable) before dropping it.
///
/// Returned by [`Reservation::park`](crate::live::Reservation::park) (`value` is the payload) and [`ResumeGuard::repark`](crate::live::ResumeGuard::repark)
/// (`value` is the guard, still holding the run).
pub struct Rejected<V> {
    /// Why the operation was refused.
    pub error: StoreError,
    /// The payload or guard the operation consumed, unchanged.
    pub value: V,
}

impl<V> fmt::Debug for Rejected<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<V> fmt::Display for Rejected<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<V> std::error::Error for Rejected<V> {}

impl<V> From<Rejected<V>> for StoreError {
    fn from(rejected: Rejected<V>) -> Self {
        rejected.error
    }
}

/// Why a durable run store ([`crate::backend::RunStore`]) refused or failed an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunStoreError {
    /// A refusal with the in-process store's exact text (unknown or expired run, another scope,
    /// already being resumed, the cap): reported like the in-process store's.
    #[error(transparent)]
    Refused(#[from] StoreError),
    /// The backend failed (I/O, Redis); `backend` names it as the `--state` URL did.
    #[error("code mode run store {backend} failed: {message}")]
    Backend {
        /// The backend (`dir:/var/lib/codemode`, `redis://127.0.0.1:6379/0`).
        backend: String,
        /// What failed.
        message: String,
    },
    /// The run is parked with tool calls in flight in another process, which holds its owner
    /// lease ([`crate::backend::RunStore::take_owner_lease`]): it is not restored here; the
    /// record (scope already checked) lets the caller answer `waiting`.
    #[error("code mode run {} has tool calls in flight in another codemode process", .0.meta.run_id)]
    OwnedElsewhere(Box<crate::record::StoredRun>),
    /// A stored record is malformed or not a file this store may read; it is never restored.
    #[error("stored code mode run {run_id} is unreadable: {reason}")]
    Corrupt {
        /// The run's id.
        run_id: String,
        /// What is wrong with it.
        reason: String,
    },
}
