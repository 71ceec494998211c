//! Time and cancellation of guest calls (docs/contract/decisions.md#d6, docs/contract/lifecycle.md#s5-9): the [`AbortHandle`], the
//! [`LegBudget`] a call runs under, and the [`Deadline`] a store polls from the guest's
//! `codemode.interrupt` import (soft) and from wasmtime's epoch callback (hard).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::VmError;
use crate::ticker::EpochTicker;

/// How long after the soft deadline the epoch deadline traps the guest (docs/contract/decisions.md#d6: ≤ 250 ms).
/// 20 ms: a native operation that never polls the interrupt handler (a BigInt power, a huge
/// string search) answers within ~25 ms of the soft deadline (grace + one 5 ms epoch tick;
/// measured in `benches/overshoot.rs`, docs/benchmarks.md "Deadline overshoot"), while code the
/// interrupt handler stops still has the grace to unwind and leave its report. The grace costs
/// nothing on the fast path: the epoch check in compiled guest code and the ticker are the same
/// for any grace.
pub const HARD_DEADLINE_GRACE: Duration = Duration::from_millis(20);

/// Cancels running guest code and pending waits from any thread (docs/contract/lifecycle.md#s5-9). Cloning
/// shares the signal.
#[derive(Debug, Clone, Default)]
pub struct AbortHandle(Arc<AbortInner>);

#[derive(Debug, Default)]
struct AbortInner {
    fired: AtomicBool,
    notify: tokio::sync::Notify,
}

impl AbortHandle {
    /// A handle that has not fired.
    pub fn new() -> Self {
        Self::default()
    }
    /// Fires: the interrupt handler stops the guest at its next poll, the epoch callback traps
    /// it within one epoch tick (5 ms) if it does not poll, and [`AbortHandle::fired`] wakes.
    pub fn abort(&self) {
        self.0.fired.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }
    /// Whether [`AbortHandle::abort`] was called.
    pub fn is_aborted(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }
    /// Resolves once the handle has fired (at once if it already has).
    pub async fn fired(&self) {
        let mut notified = std::pin::pin!(self.0.notify.notified());
        notified.as_mut().enable();
        if self.is_aborted() {
            return;
        }
        notified.await;
    }
}

/// The time a guest call may take: the soft deadline (QuickJS interrupt) and, derived from it,
/// the hard deadline ([`HARD_DEADLINE_GRACE`] later, wasmtime epoch).
#[derive(Debug, Clone)]
pub struct LegBudget {
    /// When the interrupt handler stops the guest.
    pub soft_deadline: Instant,
    /// Aborts the call early.
    pub abort: AbortHandle,
}

impl LegBudget {
    /// A budget of `budget` from now.
    pub fn new(budget: Duration, abort: AbortHandle) -> Self {
        LegBudget {
            soft_deadline: Instant::now() + budget,
            abort,
        }
    }

    /// Why a call under this budget was stopped: [`VmError::Aborted`] when the handle fired,
    /// else [`VmError::Timeout`].
    pub(crate) fn stop_error(&self) -> VmError {
        if self.abort.is_aborted() {
            VmError::Aborted
        } else {
            VmError::Timeout
        }
    }
}

/// The budget armed on one store while a guest call runs; empty between calls. No `Default`:
/// every store's deadline is made by [`Deadline::ticking`], so arming always wakes the ticker.
#[derive(Debug)]
pub(crate) struct Deadline {
    soft: Option<Instant>,
    hard: Option<Instant>,
    abort: Option<AbortHandle>,
    /// The interrupt import answered "stop" during the current call.
    interrupted: bool,
    /// The epoch ticker that enforces the hard deadline, held while armed.
    ticker: Arc<EpochTicker>,
    holding: bool,
}

/// A store dropped while a call was armed (a trap unwinding past `disarm`) lets the ticker go.
impl Drop for Deadline {
    fn drop(&mut self) {
        self.release_ticker();
    }
}

impl Deadline {
    /// A disarmed deadline whose arming keeps `ticker` ticking.
    pub(crate) fn ticking(ticker: Arc<EpochTicker>) -> Self {
        Deadline {
            soft: None,
            hard: None,
            abort: None,
            interrupted: false,
            ticker,
            holding: false,
        }
    }

    /// Arms `budget` for the next call: soft deadline, hard deadline
    /// ([`HARD_DEADLINE_GRACE`] later) and abort handle; clears the interrupt record; wakes the
    /// epoch ticker if it sleeps (crate::ticker).
    pub(crate) fn arm(&mut self, budget: &LegBudget) {
        self.soft = Some(budget.soft_deadline);
        self.hard = Some(budget.soft_deadline + HARD_DEADLINE_GRACE);
        self.abort = Some(budget.abort.clone());
        self.interrupted = false;
        if !self.holding {
            self.ticker.hold();
            self.holding = true;
        }
    }

    /// Disarms after a call. The interrupt record stays readable until the next [`Deadline::arm`].
    pub(crate) fn disarm(&mut self) {
        self.soft = None;
        self.hard = None;
        self.abort = None;
        self.release_ticker();
    }

    fn release_ticker(&mut self) {
        if self.holding {
            self.ticker.release();
            self.holding = false;
        }
    }

    /// Whether the armed abort handle fired.
    pub(crate) fn aborted(&self) -> bool {
        self.abort.as_ref().is_some_and(AbortHandle::is_aborted)
    }

    /// The `codemode.interrupt` import: true once the soft deadline passed or the abort handle
    /// fired, and records that it said so (a guest's own `throw new Error("interrupted")` is
    /// then told apart from ours).
    pub(crate) fn poll_interrupt(&mut self) -> bool {
        let stop = self.aborted() || self.soft.is_some_and(|d| Instant::now() >= d);
        if stop {
            self.interrupted = true;
        }
        stop
    }

    /// The epoch callback: true once the hard deadline passed or the abort handle fired, and the
    /// guest must trap now.
    pub(crate) fn hard_expired(&self) -> bool {
        self.aborted() || self.hard.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether [`Deadline::poll_interrupt`] stopped the current (or last) call.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted
    }
}
