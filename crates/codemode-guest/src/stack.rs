//! The native-stack half of QuickJS's stack check (docs/guest-abi.md, "Deep recursion").
//!
//! QuickJS checks its stack against the shadow stack pointer. Some recursion (JSON.parse of a
//! million `[`, the parser on 30,000 `(`) keeps its frames on wasmtime's native stack only and
//! takes no shadow stack, so that check never tripped and the instance trapped when the native
//! stack ran out (`runtime_unavailable`). `c/codemode_stack_check.h` routes QuickJS's one stack
//! pointer read through [`codemode_stack_guard`]: every [`SAMPLE_EVERY`]-th check (and every
//! check while the answer is "low") asks the host, through the `codemode.native_stack_low`
//! import, whether the native stack is nearly used up; while it is, QuickJS sees a stack
//! pointer below its limit and throws its catchable `RangeError: Maximum call stack size exceeded`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[link(wasm_import_module = "codemode")]
extern "C" {
    /// Non-zero when the native wasm stack of the current guest call has less headroom left
    /// than the host keeps for unwinding (docs/guest-abi.md, "Imports").
    fn native_stack_low() -> i32;
}

/// Stack checks between two questions to the host while the stack is not low. Between two
/// samples QuickJS runs at most this many checks' worth of frames, far less than the host's
/// headroom.
const SAMPLE_EVERY: u32 = 16;

/// Checks since the last question to the host (wasm32 has one thread: plain loads and stores).
static TICKS: AtomicU32 = AtomicU32::new(0);
/// The host's last answer.
static LOW: AtomicBool = AtomicBool::new(false);

/// Called by QuickJS's stack check (through `codemode_frame_address` in
/// `c/codemode_stack_check.h`): 1 while the native stack is nearly exhausted, else 0.
#[no_mangle]
pub(crate) extern "C" fn codemode_stack_guard() -> i32 {
    let ticks = TICKS.load(Ordering::Relaxed).wrapping_add(1);
    TICKS.store(ticks, Ordering::Relaxed);
    if LOW.load(Ordering::Relaxed) || ticks.is_multiple_of(SAMPLE_EVERY) {
        // SAFETY: a host import without arguments that touches no guest memory.
        let low = unsafe { native_stack_low() } != 0;
        LOW.store(low, Ordering::Relaxed);
    }
    i32::from(LOW.load(Ordering::Relaxed))
}
