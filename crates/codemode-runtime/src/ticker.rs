//! The epoch ticker: the clock of the hard deadline (docs/contract/decisions.md#d6). One thread
//! per [`crate::Runtime`] advances the engine's epoch every [`EPOCH_TICK`] while any guest call
//! has an armed deadline, and sleeps (parks) once none has had one for [`IDLE_TICKS`] ticks, so
//! an idle process costs no wake-ups (docs/architecture.md, "An epoch ticker that sleeps").
//!
//! Arming a deadline ([`EpochTicker::hold`]) wakes a sleeping ticker before the guest runs. The
//! two sides never miss each other: the ticker marks itself sleeping and then looks at the count
//! of armed calls; `hold` counts its call and then looks at the mark (both sequentially
//! consistent), so either the ticker sees the call and stays awake, or `hold` sees the mark and
//! unparks it (an unpark before the park makes the park return at once).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::Thread;
use std::time::Duration;

use wasmtime::Engine;

/// Interval of the epoch ticker; the hard deadline is detected within one tick.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Ticks with no armed call after which the ticker sleeps: 200 ms, so back-to-back runs never
/// wait for it and an idle process stops ticking soon.
pub(crate) const IDLE_TICKS: u32 = 40;

/// Handle to a runtime's ticker thread, shared by the runtime and every store's deadline; the
/// thread stops when [`EpochTicker::stop`] is called (a runtime that failed to build) or when
/// the last handle goes, so a VM that outlives its `Runtime` (a parked run an embedder still
/// holds) keeps its hard deadline.
#[derive(Debug)]
pub(crate) struct EpochTicker {
    shared: Arc<Shared>,
    thread: Thread,
}

#[derive(Debug)]
struct Shared {
    /// Guest calls with an armed deadline now.
    armed: AtomicUsize,
    /// Set by the ticker just before it parks, cleared when it wakes.
    sleeping: AtomicBool,
    stop: AtomicBool,
}

impl EpochTicker {
    /// Starts the ticker thread (`codemode-epoch`) for `engine`. Errors: the thread could not be
    /// started.
    pub(crate) fn start(engine: Engine) -> std::io::Result<Arc<EpochTicker>> {
        let shared = Arc::new(Shared {
            armed: AtomicUsize::new(0),
            sleeping: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let ticking = shared.clone();
        let handle = std::thread::Builder::new()
            .name("codemode-epoch".into())
            .spawn(move || tick(&ticking, &engine))?;
        Ok(Arc::new(EpochTicker {
            shared,
            thread: handle.thread().clone(),
        }))
    }

    /// A guest call armed its deadline: the ticker ticks until the matching
    /// [`EpochTicker::release`] (and [`IDLE_TICKS`] after the last one).
    pub(crate) fn hold(&self) {
        self.shared.armed.fetch_add(1, SeqCst);
        if self.shared.sleeping.load(SeqCst) {
            self.thread.unpark();
        }
    }

    /// The call of an earlier [`EpochTicker::hold`] disarmed.
    pub(crate) fn release(&self) {
        self.shared.armed.fetch_sub(1, SeqCst);
    }

    /// Whether the ticker thread is parked (no call armed for [`IDLE_TICKS`] ticks).
    pub(crate) fn sleeping(&self) -> bool {
        self.shared.sleeping.load(SeqCst)
    }

    /// Ends the ticker thread (within one tick, at once if it sleeps).
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, SeqCst);
        self.thread.unpark();
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop();
    }
}

fn tick(shared: &Shared, engine: &Engine) {
    let mut idle = 0u32;
    while !shared.stop.load(SeqCst) {
        if shared.armed.load(SeqCst) > 0 {
            idle = 0;
        } else if idle >= IDLE_TICKS {
            shared.sleeping.store(true, SeqCst);
            if shared.armed.load(SeqCst) == 0 && !shared.stop.load(SeqCst) {
                std::thread::park();
            }
            shared.sleeping.store(false, SeqCst);
            idle = 0;
            continue;
        } else {
            idle += 1;
        }
        std::thread::sleep(EPOCH_TICK);
        engine.increment_epoch();
    }
}
