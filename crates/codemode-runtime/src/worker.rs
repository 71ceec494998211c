//! Leg threads: guest execution off the async executor (docs/contract/guest.md#runtime), on a
//! pool of big-stack worker threads (docs/architecture.md, "Leg threads from a pool").
//!
//! A leg is one synchronous stretch of guest execution (instantiate and start, deliver, restore).
//! [`run_leg`] hands it to the process-wide [`LegPool`]: an idle worker runs it if there is one
//! (the most recently idle first, its stack and caches warm), else a new worker is started up to
//! [`LegPoolConfig::max_workers`]; beyond that the caller waits, without blocking its executor, in
//! FIFO order for a worker to free (back-pressure, never an error). Idle workers exit after
//! [`LegPoolConfig::keep_alive`]. The old path, a fresh thread per leg, stays callable as
//! [`LegThreads::Fresh`] for side-by-side benchmarks.

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::{oneshot, Semaphore};

use crate::limits::MAX_WASM_STACK;

/// Stack size of a leg thread in bytes: wasmtime runs synchronous guest code on the calling
/// thread's native stack, which must exceed `max_wasm_stack` (plus host frames). The memory is
/// reserved, not committed, until used.
pub const LEG_THREAD_STACK_BYTES: usize = MAX_WASM_STACK + 8 * 1024 * 1024;

/// Name of every leg thread (pool workers and fresh threads alike).
pub const LEG_THREAD_NAME: &str = "codemode-leg";

/// Host code running a leg panicked; the message, for an `internal_error` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("code mode host panicked: {0}")]
pub struct LegPanic(pub String);

/// Which threads [`run_leg`] runs legs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LegThreads {
    /// Workers of the process-wide [`LegPool::global`] (the default).
    #[default]
    Pool,
    /// A fresh thread with [`LEG_THREAD_STACK_BYTES`] of stack per leg: the behaviour before the
    /// pool, kept for side-by-side benchmarks (`benches/legs.rs`).
    Fresh,
}

/// Set by [`set_leg_threads`]: true while [`run_leg`] spawns a fresh thread per leg.
static FRESH_LEG_THREADS: AtomicBool = AtomicBool::new(false);

/// Chooses the threads [`run_leg`] uses from now on, process-wide. Meant for benchmarks that
/// compare [`LegThreads::Fresh`] and [`LegThreads::Pool`] in one run (the facade's
/// `exec_trivial_fresh_leg_threads`); a host has no reason to call it.
pub fn set_leg_threads(threads: LegThreads) {
    FRESH_LEG_THREADS.store(threads == LegThreads::Fresh, Ordering::SeqCst);
}

/// The threads [`run_leg`] uses (see [`set_leg_threads`]).
pub fn leg_threads() -> LegThreads {
    if FRESH_LEG_THREADS.load(Ordering::SeqCst) {
        LegThreads::Fresh
    } else {
        LegThreads::Pool
    }
}

/// Runs `work` on a leg thread ([`LEG_THREAD_STACK_BYTES`] of stack; by default a worker of
/// [`LegPool::global`], see [`set_leg_threads`]) and returns its result without blocking the async
/// executor. A panic in `work` becomes [`LegPanic`]; the thread that awaits never unwinds. When
/// every worker is busy the future waits for one (queue time counts against any deadline `work`
/// carries: a [`crate::LegBudget`]'s deadline is an instant, fixed before the call). Dropping the
/// future before a worker took the leg drops `work` unrun. Errors: [`LegPanic`] when `work`
/// panicked or no thread could be started.
///
/// On a thread started by [`with_legs_in_place`] the leg runs in place, on the calling thread,
/// inside this future's first poll: no hand-off, and that thread's executor waits for the leg.
pub async fn run_leg<R, F>(work: F) -> Result<R, LegPanic>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    if legs_in_place() {
        return run_in_place(work);
    }
    run_leg_with(leg_threads(), work).await
}

/// [`run_leg`] on the given threads, whatever [`set_leg_threads`] chose.
pub async fn run_leg_with<R, F>(threads: LegThreads, work: F) -> Result<R, LegPanic>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    match threads {
        LegThreads::Pool => LegPool::global().run(work).await,
        LegThreads::Fresh => run_on_fresh_thread(work).await,
    }
}

/// The path before the pool: one new thread per leg.
async fn run_on_fresh_thread<R, F>(work: F) -> Result<R, LegPanic>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(LEG_THREAD_NAME.into())
        .stack_size(LEG_THREAD_STACK_BYTES)
        .spawn(move || {
            IN_LEG.with(|f| f.set(true));
            let _ = tx.send(catch_unwind(AssertUnwindSafe(work)).map_err(panic_message));
        });
    if let Err(e) = spawned {
        return Err(LegPanic(format!("cannot start a leg thread: {e}")));
    }
    rx.await.unwrap_or_else(|_| Err(ended_without_result()))
}

/// Sizing of a [`LegPool`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegPoolConfig {
    /// Most legs running at once, and so most worker threads (at least 1). Callers beyond it wait
    /// for a worker. Default: 4 × the available parallelism, at least 16: legs are CPU-bound,
    /// so more would only time-slice, but a few programs spinning until their deadline must not
    /// hold every other run's legs back.
    pub max_workers: usize,
    /// How long an idle worker waits for a leg before it exits. Default 10 s: the gap between two
    /// model turns of one agent is seconds, and an exiting worker returns the stack pages a deep
    /// recursion committed.
    pub keep_alive: Duration,
}

impl Default for LegPoolConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        LegPoolConfig {
            max_workers: (4 * cores).max(16),
            keep_alive: Duration::from_secs(10),
        }
    }
}

/// A leg, run by a worker; returns the step that hands the result over, which the worker runs
/// once it is ready for the next leg (so a caller that immediately submits again finds it idle).
type Job = Box<dyn FnOnce() -> Handover + Send>;
type Handover = Box<dyn FnOnce() + Send>;

/// A pool of big-stack worker threads that run legs (see the module documentation). Cloning
/// shares the pool. Workers keep the pool's state alive: dropping the last handle leaves idle
/// workers to exit after their keep-alive.
#[derive(Debug, Clone)]
pub struct LegPool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    config: LegPoolConfig,
    /// One permit per leg handed to a worker and not yet handed over: at most `max_workers`.
    permits: Arc<Semaphore>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Live worker threads (running, idle, or between legs).
    workers: usize,
    /// Idle workers, most recently idle last: their id and the channel they wait on.
    idle: Vec<(u64, mpsc::Sender<Job>)>,
    /// Legs that found no idle worker and no room for a new one: the next worker to finish a leg
    /// takes them. Never longer than `max_workers` (each holds a permit).
    queue: VecDeque<Job>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("workers", &self.workers)
            .field("idle", &self.idle.len())
            .field("queue", &self.queue.len())
            .finish()
    }
}

static NEXT_WORKER_ID: AtomicU64 = AtomicU64::new(0);

impl LegPool {
    /// A pool with no workers yet; they start on demand. `max_workers` 0 is taken as 1.
    pub fn new(mut config: LegPoolConfig) -> Self {
        config.max_workers = config.max_workers.clamp(1, Semaphore::MAX_PERMITS);
        LegPool {
            shared: Arc::new(Shared {
                permits: Arc::new(Semaphore::new(config.max_workers)),
                config,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The process-wide pool [`run_leg`] uses, with [`LegPoolConfig::default`].
    pub fn global() -> &'static LegPool {
        static GLOBAL: OnceLock<LegPool> = OnceLock::new();
        GLOBAL.get_or_init(|| LegPool::new(LegPoolConfig::default()))
    }

    /// The pool's sizing.
    pub fn config(&self) -> &LegPoolConfig {
        &self.shared.config
    }

    /// Live worker threads, at most [`LegPoolConfig::max_workers`].
    pub fn workers(&self) -> usize {
        self.shared.lock().workers
    }

    /// Workers waiting for a leg.
    pub fn idle_workers(&self) -> usize {
        self.shared.lock().idle.len()
    }

    /// Runs `work` on a worker of this pool: [`run_leg`]'s contract, with this pool's sizing.
    pub async fn run<R, F>(&self, work: F) -> Result<R, LegPanic>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        // Tokio's semaphore is fair: waiting callers get workers in the order they asked.
        let permit = self
            .shared
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| LegPanic("the leg pool is closed".into()))?;
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(work)).map_err(panic_message);
            Box::new(move || {
                drop(permit);
                // The caller may have given up; `result` is then dropped here, on the worker.
                let _ = tx.send(result);
            })
        });
        self.shared.submit(job)?;
        rx.await.unwrap_or_else(|_| Err(ended_without_result()))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives `job` to an idle worker, a new worker, or the queue (in that order of preference).
    fn submit(self: &Arc<Self>, mut job: Job) -> Result<(), LegPanic> {
        let mut state = self.lock();
        while let Some((_, worker)) = state.idle.pop() {
            // A worker leaves `idle` before it exits, so the send fails only if it died.
            match worker.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(back)) => job = back,
            }
        }
        if state.workers >= self.config.max_workers {
            // Every worker is running a leg or about to look at the queue.
            state.queue.push_back(job);
            return Ok(());
        }
        state.workers += 1;
        drop(state);
        let id = NEXT_WORKER_ID.fetch_add(1, Ordering::Relaxed);
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name(LEG_THREAD_NAME.into())
            .stack_size(LEG_THREAD_STACK_BYTES)
            .spawn(move || worker(shared, id, job));
        if let Err(e) = spawned {
            self.lock().workers -= 1;
            return Err(LegPanic(format!("cannot start a leg thread: {e}")));
        }
        Ok(())
    }
}

/// Counts a worker out if its thread unwinds (no code path should; the count stays right anyway).
struct WorkerExit<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for WorkerExit<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.shared.lock();
            state.idle.retain(|(id, _)| *id != self.id);
            state.workers -= 1;
        }
    }
}

/// Stack a worker keeps resident between legs, in bytes below the worker loop's frame: 4 MiB,
/// more than an ordinary leg uses. After each leg the pages deeper than this that a deep
/// recursion committed are returned to the system (`madvise(MADV_DONTNEED)`), so a reused
/// worker does not hold up to 64 MiB of stack until its keep-alive ends (issue 27 item 9,
/// docs/architecture.md "Leg threads from a pool").
pub const LEG_STACK_KEEP_BYTES: usize = 4 * 1024 * 1024;

/// The current thread's stack, for returning the pages of a deep recursion after a leg.
#[derive(Debug, Clone, Copy)]
struct ThreadStack {
    /// Lowest usable address (above the guard page).
    low: usize,
    /// The page size.
    page: usize,
}

impl ThreadStack {
    /// The calling thread's stack, or `None` where it cannot be known (non-Linux, or
    /// `pthread_getattr_np` failed): nothing is released then.
    #[cfg(target_os = "linux")]
    fn current() -> Option<ThreadStack> {
        // SAFETY: `attr` is initialised by pthread_getattr_np before it is read, destroyed once,
        // and the out-pointers are valid locals.
        unsafe {
            let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
            if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
                return None;
            }
            let mut addr: *mut libc::c_void = std::ptr::null_mut();
            let mut size: libc::size_t = 0;
            let got = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).ok()?;
            (got == 0 && page.is_power_of_two()).then_some(ThreadStack {
                low: addr as usize,
                page,
            })
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn current() -> Option<ThreadStack> {
        None
    }

    /// The page-aligned range `[low, end)` deeper than [`LEG_STACK_KEEP_BYTES`] below the
    /// caller's frame; empty when the stack is not that deep.
    #[inline(never)]
    fn deep_range(&self) -> (usize, usize) {
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as usize;
        let end = here.saturating_sub(LEG_STACK_KEEP_BYTES) & !(self.page - 1);
        (self.low, end.max(self.low))
    }

    /// Returns the pages of the deep range to the system if the deepest kept page's neighbour
    /// is resident (a recursion went past the threshold since the last release; stack pages are
    /// touched in order, stack probes included). One `mincore` per leg otherwise.
    #[cfg(target_os = "linux")]
    fn release_deep_pages(&self) {
        let (low, end) = self.deep_range();
        if end <= low {
            return;
        }
        let probe = end - self.page;
        let mut resident = 0u8;
        // SAFETY: `probe` is page-aligned inside this thread's stack mapping and `resident` has
        // room for the one page asked about.
        let looked = unsafe { libc::mincore(probe as *mut libc::c_void, self.page, &mut resident) };
        if looked != 0 || resident & 1 == 0 {
            return;
        }
        // SAFETY: `[low, end)` lies in this thread's own stack, at least LEG_STACK_KEEP_BYTES
        // below the current frame: no live frame uses it, so dropping its pages (they read back
        // as zeros if ever touched again) cannot change any value in use.
        unsafe {
            libc::madvise(low as *mut libc::c_void, end - low, libc::MADV_DONTNEED);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn release_deep_pages(&self) {}

    /// Bytes of the deep range that are resident now (`mincore`); for the tests.
    #[cfg(all(test, target_os = "linux"))]
    fn resident_deep_bytes(&self) -> usize {
        let (low, end) = self.deep_range();
        if end <= low {
            return 0;
        }
        let mut pages = vec![0u8; (end - low) / self.page];
        // SAFETY: the range is page-aligned inside this thread's stack mapping and `pages` has
        // one byte per page of it.
        let looked =
            unsafe { libc::mincore(low as *mut libc::c_void, end - low, pages.as_mut_ptr()) };
        assert_eq!(looked, 0, "mincore failed");
        pages.iter().filter(|p| **p & 1 == 1).count() * self.page
    }
}

/// A worker thread: runs `first`, then legs from the queue or its channel, until it has been idle
/// for the keep-alive.
fn worker(shared: Arc<Shared>, id: u64, first: Job) {
    IN_LEG.with(|f| f.set(true));
    let stack = ThreadStack::current();
    let _exit = WorkerExit {
        shared: &shared,
        id,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    let mut next = Some(first);
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => match rx.recv_timeout(shared.config.keep_alive) {
                Ok(job) => job,
                Err(_) => {
                    let mut state = shared.lock();
                    if let Some(at) = state.idle.iter().position(|(i, _)| *i == id) {
                        state.idle.remove(at);
                        state.workers -= 1;
                        return;
                    }
                    drop(state);
                    // A caller took this worker from `idle` and sent (under the lock) its leg.
                    match rx.try_recv() {
                        Ok(job) => job,
                        Err(_) => {
                            // Cannot happen (the send precedes our lock); stay reachable anyway.
                            shared.lock().idle.push((id, tx.clone()));
                            continue;
                        }
                    }
                }
            },
        };
        // `work` runs inside its own catch_unwind; this one contains a panicking drop of the
        // result or of the panic payload, so the worker (and its IN_LEG flag) survives.
        let handover = catch_unwind(AssertUnwindSafe(job)).map_err(std::mem::forget);
        if let Some(stack) = &stack {
            stack.release_deep_pages();
        }
        {
            let mut state = shared.lock();
            match state.queue.pop_front() {
                Some(queued) => next = Some(queued),
                None => state.idle.push((id, tx.clone())),
            }
        }
        if let Ok(handover) = handover {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(handover)) {
                std::mem::forget(payload);
            }
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> LegPanic {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    LegPanic(message)
}

fn ended_without_result() -> LegPanic {
    LegPanic("leg thread ended without a result".into())
}

thread_local! {
    static IN_LEG: Cell<bool> = const { Cell::new(false) };
    /// Set on a thread of [`with_legs_in_place`]: [`run_leg`] runs its legs in place there. The
    /// thread's stack, for returning a deep recursion's pages after each leg.
    static LEGS_IN_PLACE: Cell<Option<Option<ThreadStack>>> = const { Cell::new(None) };
}

/// Whether [`run_leg`] runs its legs on the current thread (a [`with_legs_in_place`] thread).
pub fn legs_in_place() -> bool {
    LEGS_IN_PLACE.with(|f| f.get().is_some())
}

/// A leg on the current thread, a [`with_legs_in_place`] one: caught like a worker's leg, and
/// the stack pages a deep recursion committed are returned after it as a worker returns them.
fn run_in_place<R>(work: impl FnOnce() -> R) -> Result<R, LegPanic> {
    let result = catch_unwind(AssertUnwindSafe(work)).map_err(panic_message);
    if let Some(Some(stack)) = LEGS_IN_PLACE.with(|f| f.get()) {
        stack.release_deep_pages();
    }
    result
}

/// Runs `work` on a new thread named `name` with a leg thread's stack
/// ([`LEG_THREAD_STACK_BYTES`]), on which [`run_leg`] runs every leg in place instead of handing
/// it to the [`LegPool`], and waits for it. For a host that drives one run at a time from one
/// executor thread (`codemode session`, one-shot `codemode exec`): each leg then costs no thread
/// hand-off (two wake-ups and two context switches per leg on the pool,
/// docs/architecture.md "Legs in place"), and the executor thread waits while the leg runs —
/// bounded by the leg's deadline (the epoch deadline, which needs no executor) — while other
/// tasks go on on the runtime's worker threads. Use it with tokio's multi-thread runtime: on a
/// current-thread runtime the `block_on` thread is the only one, and spawned tasks (tool calls,
/// MCP I/O, timers) would stall for the length of each leg (nothing deadlocks: a leg never waits
/// on a task). Futures polled elsewhere (spawned tasks on
/// worker threads) still use the pool. The thread is also a leg thread for [`on_leg_stack`].
/// Errors: [`LegPanic`] when `work` panics or the thread cannot be started.
pub fn with_legs_in_place<R: Send>(
    name: &str,
    work: impl FnOnce() -> R + Send,
) -> Result<R, LegPanic> {
    on_scoped_leg_thread(name, || {
        LEGS_IN_PLACE.with(|f| f.set(Some(ThreadStack::current())));
        work()
    })
}

/// Runs `work` on a new scoped thread named `name` with a leg thread's stack, marked as a leg
/// thread, and waits for it. Errors: [`LegPanic`] when `work` panics or the thread cannot be
/// started.
fn on_scoped_leg_thread<R: Send>(
    name: &str,
    work: impl FnOnce() -> R + Send,
) -> Result<R, LegPanic> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name(name.into())
            .stack_size(LEG_THREAD_STACK_BYTES)
            .spawn_scoped(scope, || {
                IN_LEG.with(|f| f.set(true));
                work()
            })
            .map_err(|e| LegPanic(format!("cannot start a leg thread: {e}")))?;
        handle.join().map_err(panic_message)
    })
}

/// Whether the current thread is a leg thread (a pool worker, a fresh leg thread, or the helper
/// of [`on_leg_stack`]): guest code may run on it in place.
pub fn in_leg() -> bool {
    IN_LEG.with(|f| f.get())
}

/// Runs `work` on a thread whose stack can hold `max_wasm_stack`: the current one when it is a
/// leg thread, else a scoped helper thread that is marked as one (so `Vm` calls inside `work` run
/// in place). Guest code never runs on a small stack, whoever calls the synchronous
/// [`crate::Vm`] API. Errors: [`LegPanic`] when `work` panics or no thread can be started.
///
/// The helper is a fresh scoped thread, not a pool worker: `work` may borrow from the caller's
/// stack, and handing a borrowing closure to a long-lived thread needs an unsafe lifetime
/// erasure. The hosts' legs come through [`run_leg`]; this path serves the synchronous API
/// (tests, benchmarks, embedders calling [`crate::Vm`] directly).
pub fn on_leg_stack<R: Send>(work: impl FnOnce() -> R + Send) -> Result<R, LegPanic> {
    if in_leg() {
        return catch_unwind(AssertUnwindSafe(work)).map_err(panic_message);
    }
    on_scoped_leg_thread(LEG_THREAD_NAME, work)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Recurses in 8 KiB frames until the stack reaches `bottom` (an address), touching every
    /// page on the way (stack probes), whatever the frame size of the build.
    #[inline(never)]
    fn recurse_until(bottom: usize) -> u8 {
        let mut frame = [0u8; 8 * 1024];
        frame[0] = 1;
        let here = std::hint::black_box(&mut frame) as *mut u8 as usize;
        if here <= bottom {
            return frame[0];
        }
        recurse_until(bottom).wrapping_add(std::hint::black_box(&frame)[1])
    }

    /// Recurses 40 MiB below the caller.
    fn recurse_40_mib() {
        let marker = 0u8;
        let top = std::hint::black_box(&marker) as *const u8 as usize;
        recurse_until(top - (40 << 20));
    }

    /// Issue 27 item 9: a leg that recursed 40 MiB deep used to leave those stack pages resident
    /// on its worker until the keep-alive ended; the next leg on the same worker now finds at
    /// most the threshold's neighbourhood resident.
    #[test]
    fn a_deep_recursion_leaves_no_deep_stack_pages_on_the_worker() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let pool = LegPool::new(LegPoolConfig {
            max_workers: 1,
            keep_alive: Duration::from_secs(60),
        });
        rt.block_on(async {
            let deep_before = pool
                .run(|| {
                    recurse_40_mib();
                    ThreadStack::current().unwrap().resident_deep_bytes()
                })
                .await
                .unwrap();
            assert!(
                deep_before > 30 << 20,
                "the recursion committed {deep_before} bytes"
            );
            let (thread, deep_after) = pool
                .run(|| {
                    (
                        std::thread::current().id(),
                        ThreadStack::current().unwrap().resident_deep_bytes(),
                    )
                })
                .await
                .unwrap();
            assert_eq!(
                pool.workers(),
                1,
                "{thread:?}: the same worker ran both legs"
            );
            assert!(
                deep_after <= 64 * 1024,
                "{deep_after} bytes of deep stack still resident"
            );
        });
    }

    /// `with_legs_in_place`: `run_leg` polled on that thread runs the leg there (a panic caught,
    /// the thread going on, a deep recursion's pages returned after the leg as a worker returns
    /// them); a future polled on a runtime worker still hands its leg to the pool.
    #[test]
    fn legs_run_in_place_on_their_host_thread_and_only_there() {
        assert!(!legs_in_place());
        let names = with_legs_in_place("legs-in-place-test", || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .unwrap();
            rt.block_on(async {
                assert!(legs_in_place() && in_leg());
                let name = || std::thread::current().name().map(str::to_string);
                let here = run_leg(name).await.unwrap();
                let panicked = run_leg(|| -> u8 { panic!("leg bug") }).await;
                let deep = run_leg(|| {
                    recurse_40_mib();
                    ThreadStack::current().unwrap().resident_deep_bytes()
                })
                .await
                .unwrap();
                let after = run_leg(|| ThreadStack::current().unwrap().resident_deep_bytes())
                    .await
                    .unwrap();
                let spawned = tokio::spawn(async move { run_leg(name).await.unwrap() })
                    .await
                    .unwrap();
                (here, panicked, deep, after, spawned)
            })
        })
        .unwrap();
        let (here, panicked, deep, after, spawned) = names;
        assert_eq!(here.as_deref(), Some("legs-in-place-test"));
        assert_eq!(panicked, Err(LegPanic("leg bug".into())));
        assert!(deep > 30 << 20, "the recursion committed {deep} bytes");
        assert!(
            after <= 64 * 1024,
            "{after} bytes of deep stack still resident"
        );
        assert_eq!(spawned.as_deref(), Some(LEG_THREAD_NAME));
    }
}
