//! The host side of the guest's imports (docs/guest-abi.md): the per-store [`HostState`] every
//! import sees, the `codemode` import module (`interrupt`, `native_stack_low` and the run-context
//! imports) and the injectable WASI wall clock. The engine links these imports once; each
//! [`Vm`] builds its own [`HostState`].
//!
//! [`Vm`]: crate::vm::Vm
//! [`Vm::start`]: crate::vm::Vm::start
//! [`Vm::set_context`]: crate::vm::Vm::set_context

use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::{ContextSection, RunContext};
use wasmtime::{Caller, Linker, Memory, StoreLimits};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::HostWallClock;

use crate::budget::Deadline;
use crate::limits::{MAX_WASM_STACK, NATIVE_STACK_HEADROOM};

/// A wall clock: time since the Unix epoch. Injectable for deterministic tests.
pub type WallClock = Arc<dyn Fn() -> Duration + Send + Sync>;

/// The per-store host state: WASI, the memory backstop, the armed deadline and captured stderr.
pub(crate) struct HostState {
    pub(crate) wasi: WasiP1Ctx,
    /// The memory backstop (wasmtime `StoreLimits`).
    pub(crate) limits: StoreLimits,
    /// The armed deadline the `interrupt` import polls.
    pub(crate) deadline: Deadline,
    /// Captured guest stderr (diagnostics only).
    pub(crate) stderr: MemoryOutputPipe,
    /// [`native_stack_position`] when the current guest call was entered (0: not measured).
    pub(crate) native_stack_entry: usize,
    /// The run's catalog context the `codemode.context_*` imports copy from ([`Vm::start`],
    /// [`Vm::set_context`]); `None` until set, when the imports answer -1.
    pub(crate) context: Option<RunContext>,
}

/// An address in the current frame of the native stack. Guest code runs synchronously on the
/// calling thread's stack, which grows down on every target wasmtime compiles for here.
#[inline(never)]
pub(crate) fn native_stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The injectable [`WallClock`] as WASI's wall clock.
pub(crate) struct Clock(pub(crate) WallClock);

impl HostWallClock for Clock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        (self.0)()
    }
}

/// Registers the `codemode` import module: `interrupt() -> i32` (docs/guest-abi.md).
pub(crate) fn add_codemode_imports(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "codemode",
        "interrupt",
        |mut caller: Caller<'_, HostState>| -> i32 {
            i32::from(caller.data_mut().deadline.poll_interrupt())
        },
    )?;
    // docs/guest-abi.md "Deep recursion": 1 once the guest call has used all of the native wasm
    // stack but NATIVE_STACK_HEADROOM, so QuickJS throws its catchable RangeError before
    // wasmtime would trap.
    linker.func_wrap(
        "codemode",
        "native_stack_low",
        |caller: Caller<'_, HostState>| -> i32 {
            let entry = caller.data().native_stack_entry;
            let used = entry.saturating_sub(native_stack_position());
            i32::from(entry != 0 && used > MAX_WASM_STACK - NATIVE_STACK_HEADROOM)
        },
    )?;
    add_context_imports(linker)
}

/// The guest's linear memory, from inside an import.
fn guest_memory(caller: &mut Caller<'_, HostState>) -> Option<Memory> {
    caller.get_export("memory")?.into_memory()
}

/// `[ptr, ptr + len)` as a range of a memory of `size` bytes, `None` when it does not fit.
fn guest_range(ptr: i32, len: i32, size: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(u32::try_from(ptr).ok()?).ok()?;
    let len = usize::try_from(u32::try_from(len).ok()?).ok()?;
    let end = start.checked_add(len)?;
    (end <= size).then_some(start..end)
}

/// The run-context imports (docs/guest-abi.md, "Run context"). Each one copies only the host's
/// own context bytes into guest memory, at a range checked against the memory's size; any bad
/// argument (unknown section, a range outside memory, a length that is not the section's, a
/// name that is not UTF-8, no context set) answers -1 and changes nothing.
fn add_context_imports(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    // `context_len(section) -> i32`: the section's length in bytes.
    linker.func_wrap(
        "codemode",
        "context_len",
        |caller: Caller<'_, HostState>, section: i32| -> i32 {
            let Some(context) = &caller.data().context else {
                return -1;
            };
            u32::try_from(section)
                .ok()
                .and_then(ContextSection::from_index)
                .and_then(|s| i32::try_from(context.section(s).len()).ok())
                .unwrap_or(-1)
        },
    )?;
    // `context_read(section, ptr, len) -> i32`: copies the whole section (`len` must be its
    // length) to `ptr`; 0 when done.
    linker.func_wrap(
        "codemode",
        "context_read",
        |mut caller: Caller<'_, HostState>, section: i32, ptr: i32, len: i32| -> i32 {
            let Some(context) = caller.data().context.clone() else {
                return -1;
            };
            let Some(section) = u32::try_from(section)
                .ok()
                .and_then(ContextSection::from_index)
            else {
                return -1;
            };
            let bytes = context.section(section).as_bytes();
            if usize::try_from(len).ok() != Some(bytes.len()) {
                return -1;
            }
            let Some(memory) = guest_memory(&mut caller) else {
                return -1;
            };
            let data = memory.data_mut(&mut caller);
            match guest_range(ptr, len, data.len()) {
                Some(range) => {
                    data[range].copy_from_slice(bytes);
                    0
                }
                None => -1,
            }
        },
    )?;
    // `context_convenience(name_ptr, name_len, out_ptr, out_cap) -> i32`: the byte length of
    // the id of the convenience `tools.<name>` (-1: none), copied to `out_ptr` when it fits in
    // `out_cap` bytes (else the guest asks again with a bigger buffer).
    linker.func_wrap(
        "codemode",
        "context_convenience",
        |mut caller: Caller<'_, HostState>,
         name_ptr: i32,
         name_len: i32,
         out_ptr: i32,
         out_cap: i32|
         -> i32 {
            let Some(context) = caller.data().context.clone() else {
                return -1;
            };
            let Some(memory) = guest_memory(&mut caller) else {
                return -1;
            };
            let data = memory.data_mut(&mut caller);
            let Some(name) = guest_range(name_ptr, name_len, data.len())
                .and_then(|range| std::str::from_utf8(&data[range]).ok())
            else {
                return -1;
            };
            let Some(id) = context.convenience(name) else {
                return -1;
            };
            let Ok(id_len) = i32::try_from(id.len()) else {
                return -1;
            };
            if id_len <= out_cap {
                match guest_range(out_ptr, id_len, data.len()) {
                    Some(range) => data[range].copy_from_slice(id.as_bytes()),
                    None => return -1,
                }
            }
            id_len
        },
    )?;
    Ok(())
}
