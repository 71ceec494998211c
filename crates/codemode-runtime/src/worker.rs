//! Leg threads: guest execution off the async executor (docs/contract/guest.md#runtime).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::limits::MAX_WASM_STACK;

/// Stack size of a leg thread in bytes: wasmtime runs synchronous guest code on the calling
/// thread's native stack, which must exceed `max_wasm_stack` (plus host frames). The memory is
/// reserved, not committed, until used.
pub const LEG_THREAD_STACK_BYTES: usize = MAX_WASM_STACK + 8 * 1024 * 1024;

/// Host code running a leg panicked; the message, for an `internal_error` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("code mode host panicked: {0}")]
pub struct LegPanic(pub String);

/// Runs `work` on a fresh thread with [`LEG_THREAD_STACK_BYTES`] of stack and returns its result
/// without blocking the async executor. A panic in `work` becomes [`LegPanic`]; the thread that
/// awaits never unwinds. Spawning costs tens of microseconds, small next to a leg.
pub async fn run_leg<R, F>(work: F) -> Result<R, LegPanic>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("codemode-leg".into())
        .stack_size(LEG_THREAD_STACK_BYTES)
        .spawn(move || {
            IN_LEG.with(|f| f.set(true));
            let result = catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                LegPanic(message)
            });
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(LegPanic(format!("cannot start a leg thread: {e}")));
    }
    rx.await
        .unwrap_or_else(|_| Err(LegPanic("leg thread ended without a result".into())))
}

thread_local! {
    static IN_LEG: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` on a thread whose stack can hold `max_wasm_stack`: the current one when it is a
/// leg thread, else a scoped helper thread that is marked as one (so `Vm` calls inside `work` run
/// in place). Guest code never runs on a small stack, whoever calls the synchronous
/// [`crate::Vm`] API. Errors: [`LegPanic`] when `work` panics or no thread can be started.
pub fn on_leg_stack<R: Send>(work: impl FnOnce() -> R + Send) -> Result<R, LegPanic> {
    if IN_LEG.with(|f| f.get()) {
        return catch_unwind(AssertUnwindSafe(work))
            .map_err(|_| LegPanic("host code panicked".into()));
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("codemode-leg".into())
            .stack_size(LEG_THREAD_STACK_BYTES)
            .spawn_scoped(scope, || {
                IN_LEG.with(|f| f.set(true));
                work()
            })
            .map_err(|e| LegPanic(format!("cannot start a leg thread: {e}")))?;
        handle
            .join()
            .map_err(|_| LegPanic("host code panicked".into()))
    })
}
