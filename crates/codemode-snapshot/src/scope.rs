//! Who owns a parked run and who may resume it ([`admits`]), and when a run expires
//! ([`expiry_after`]): the rules every backend applies in the same words (docs/snapshot-store.md).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use codemode_bridge::RunScope;

use crate::error::StoreError;

/// The largest valid time, in milliseconds either side of the Unix epoch (the ECMAScript `Date`
/// range, ±8.64 × 10¹⁵ ms). An expiry beyond it "cannot be represented" (docs/contract/lifecycle.md#s5-3, docs/contract/examples.md#e30:
/// `8640000000000001` is not a valid time).
pub const MAX_TIME_MS: u128 = 8_640_000_000_000_000;
/// The scope checks of docs/contract/lifecycle.md#s5-3 `wait` 2.2 and 2.3, in order, for `caller` resuming a
/// run owned by `owner`. A field of `owner` that is `None` is not checked; a field of `caller`
/// that is `None` never matches a set field of `owner`; strings are compared exactly.
///
/// # Errors
/// [`StoreError::OtherAgentRun`] when `owner.run_id` is set and the caller's differs or is
/// missing; then [`StoreError::OtherSession`] when any of `session_id`, `session_key`,
/// `agent_id` is set and the caller's differs or is missing.
pub fn admits(owner: &RunScope, caller: &RunScope) -> Result<(), StoreError> {
    let matches = |owned: &Option<String>, asked: &Option<String>| {
        owned.is_none() || owned.as_deref() == asked.as_deref()
    };
    if !matches(&owner.run_id, &caller.run_id) {
        return Err(StoreError::OtherAgentRun);
    }
    if !(matches(&owner.session_id, &caller.session_id)
        && matches(&owner.session_key, &caller.session_key)
        && matches(&owner.agent_id, &caller.agent_id))
    {
        return Err(StoreError::OtherSession);
    }
    Ok(())
}

/// `now + ttl` as an [`Instant`], if it is representable both as a monotonic instant and as a
/// valid wall-clock time within [`MAX_TIME_MS`] of the Unix epoch (docs/contract/lifecycle.md#s5-3: "if that
/// cannot be represented: `code mode run expiry is unavailable.`").
///
/// # Errors
/// [`StoreError::ExpiryUnavailable`] otherwise, e.g. for `Duration::MAX`.
pub fn expiry_after(now: Instant, ttl: Duration) -> Result<Instant, StoreError> {
    let at = now.checked_add(ttl).ok_or(StoreError::ExpiryUnavailable)?;
    let wall = SystemTime::now()
        .checked_add(ttl)
        .ok_or(StoreError::ExpiryUnavailable)?;
    let from_epoch_ms = match wall.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_millis(),
        Err(before) => before.duration().as_millis(),
    };
    if from_epoch_ms > MAX_TIME_MS {
        return Err(StoreError::ExpiryUnavailable);
    }
    Ok(at)
}

/// `now_ms + ttl_ms` as a stored expiry, if it is a valid time (docs/contract/lifecycle.md#s5-3,
/// the same rule as [`expiry_after`]).
///
/// # Errors
/// [`StoreError::ExpiryUnavailable`] when the sum overflows or passes [`MAX_TIME_MS`].
pub fn expiry_ms_after(now_ms: u64, ttl_ms: u64) -> Result<u64, StoreError> {
    now_ms
        .checked_add(ttl_ms)
        .filter(|at| u128::from(*at) <= MAX_TIME_MS)
        .ok_or(StoreError::ExpiryUnavailable)
}
