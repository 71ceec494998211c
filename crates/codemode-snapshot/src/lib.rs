//! Parked code-mode runs: the in-process table of live runs ([`live`]) and the durable run
//! stores that let a run outlive its process ([`backend`]: `memory`, `dir:`, `redis://`, with
//! sealed records, [`seal`]).
//!
//! Modules: [`live`] ([`SnapshotStore`], below), [`scope`] (who may resume, when a run
//! expires), [`error`] (the reference texts), [`record`] (a stored run: clear header, sealed
//! body), [`backend`] (the [`RunStore`] trait, its backends and `--state URL`), [`seal`]
//! (AEAD sealing and the key ring).
//!
//! # The live table
//!
//! The in-process store of suspended ("parked") code-mode runs (docs/contract/lifecycle.md#runs; docs/contract/lifecycle.md#s5-3 "Parking and `wait`", docs/contract/lifecycle.md#s5-4 "Caps", docs/contract/lifecycle.md#s5-6, docs/contract/lifecycle.md#s5-9, docs/contract/decisions.md#d1, docs/contract/examples.md#e30 to #e32).
//!
//! A [`SnapshotStore<T>`] keeps parked runs in memory only (nothing survives a restart), keyed by
//! `runId`, each with its owner's [`RunScope`], an expiry and a payload `T`. The store is generic
//! over the payload: the facade stores its run (VM snapshot plus the in-flight tool calls), and
//! **dropping a payload is how its pending work is cancelled**. The store drops payloads on
//! expiry, [`SnapshotStore::remove`], [`SnapshotStore::clear`] and when it is itself dropped;
//! [`ResumeGuard::finish`] hands the payload back so the caller can build the final result.
//!
//! Lifecycle:
//!
//! 1. [`SnapshotStore::reserve`] takes a slot under the per-process cap ([`MAX_SUSPENDED_RUNS`]
//!    in production) before any work is dispatched (docs/contract/lifecycle.md#s5-2 settle loop), so parking
//!    can never fail the cap after side effects started. Dropping the [`Reservation`] frees it.
//! 2. [`Reservation::park`] stores the run under its `runId` with `expiresAt = now + ttl`; the
//!    reservation's slot becomes the run's slot.
//! 3. [`SnapshotStore::resume`] checks the scope (docs/contract/lifecycle.md#s5-3 `wait` step 2, in order) and
//!    hands out a [`ResumeGuard`] with exclusive access to the payload. While it lives, the run
//!    stays stored and counted, a second `resume` gets [`StoreError::AlreadyResuming`], and the
//!    run never expires. The guard ends in one of three ways:
//!    [`ResumeGuard::repark`] (parked again under the same `runId` with a new expiry),
//!    [`ResumeGuard::finish`] (terminal: removed, payload handed back), or dropping it (parked
//!    again with the expiry unchanged: `wait` returned `waiting`).
//! 4. [`SnapshotStore::purge_expired`] drops every run whose expiry has passed, except runs being
//!    resumed (every `exec`/`wait` calls it first).
//!
//! ```
//! use std::time::Duration;
//! use codemode_snapshot::{RunScope, SnapshotStore, StoreError};
//!
//! let store: SnapshotStore<Vec<u8>> = SnapshotStore::new(64);
//! let owner = RunScope { session_id: Some("s1".into()), ..RunScope::default() };
//!
//! let slot = store.reserve()?;
//! slot.park("cm_1".into(), owner.clone(), Duration::from_secs(900), vec![1, 2, 3])
//!     .map_err(StoreError::from)?;
//!
//! let stranger = RunScope { session_id: Some("s2".into()), ..RunScope::default() };
//! let refused = store.resume("cm_1", &stranger).err().unwrap();
//! assert_eq!(refused.to_string(), "code mode run belongs to a different session.");
//!
//! let mut run = store.resume("cm_1", &owner)?;
//! run.push(4);
//! run.repark(Duration::from_secs(900)).map_err(StoreError::from)?; // `waiting` again, same id
//!
//! let run = store.resume("cm_1", &owner)?;
//! assert_eq!(run.finish(), vec![1, 2, 3, 4]); // completed: removed from the store
//! assert!(store.is_empty());
//! # Ok::<(), StoreError>(())
//! ```
//!
//! Design notes are in `docs/snapshot-store.md`: the authoritative state is one mutex-guarded map
//! (so the cap, the scope checks and the resume pin are each one atomic step); a `moka` cache with
//! per-entry expiry is the TTL index that evicts idle expired runs lazily, while every access
//! still checks the expiry exactly.

#![deny(missing_docs)]

pub mod backend;
pub mod error;
pub mod live;
pub mod record;
pub mod scope;
pub mod seal;

pub use backend::{open, Claim, RunStore, StateUrl};
pub use error::{Rejected, RunStoreError, StoreError};
pub use live::{Reservation, ResumeGuard, SnapshotStore, MAX_SUSPENDED_RUNS};
pub use record::{RecordMeta, StoredRun};
pub use scope::{admits, expiry_after, expiry_ms_after, MAX_TIME_MS};
pub use seal::{Binding, KeyError, SealError, StateKeys, STATE_KEY_ENV};

/// Who a parked run belongs to, and who is asking to resume one: the bridge's run scope (agent
/// run id, session id, session key, agent id; see [`admits`] for how they are compared).
pub use codemode_bridge::RunScope;
