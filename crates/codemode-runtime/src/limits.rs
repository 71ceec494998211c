//! Sizes and per-VM limits shared by the engine, VMs and leg threads (docs/architecture.md,
//! "Limits and who enforces them"). Depends on nothing else in the crate.

/// Size of the guest's shadow stack in bytes (linked with `-zstack-size`, see the guest's
/// `.cargo/config.toml`). The stack sits first in linear memory, below the data segments.
pub const SHADOW_STACK_BYTES: u64 = 8 * 1024 * 1024;

/// QuickJS's stack limit (`JS_SetMaxStackSize`): the shadow stack less 1 MiB of headroom for the
/// C frames that run below the last check.
pub(crate) const JS_STACK_LIMIT_BYTES: u64 = SHADOW_STACK_BYTES - 1024 * 1024;

/// Native wasm stack for guest code in bytes (`Config::max_wasm_stack`). Large enough that
/// QuickJS's own stack limit (on the shadow stack) trips first, giving a catchable `RangeError`.
pub(crate) const MAX_WASM_STACK: usize = 64 * 1024 * 1024;

/// Per-VM limits (docs/contract/config.md#configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmLimits {
    /// QuickJS heap limit in bytes (`memoryLimitBytes`). Allocation past it raises a catchable
    /// guest error. The wasmtime `StoreLimits` backstop on linear memory sits above it:
    /// heap × 1.25 + shadow stack + 32 MiB, at most 4 GiB.
    pub memory_limit_bytes: u64,
    /// Output bytes one step may buffer in the guest (`maxOutputBytes`); past it the step
    /// reports [`codemode_bridge::GuestReport::output_overflow`] instead of holding the output.
    pub max_output_bytes: u64,
    /// Bridge requests one step may create (`maxPendingToolCalls`); past it the step reports
    /// [`codemode_bridge::GuestReport::request_overflow`].
    pub max_requests: u64,
}

impl Default for VmLimits {
    /// The spec's defaults: 64 MiB heap, 64 KiB output, 16 requests.
    fn default() -> Self {
        VmLimits {
            memory_limit_bytes: 64 * 1024 * 1024,
            max_output_bytes: 65_536,
            max_requests: 16,
        }
    }
}

impl VmLimits {
    /// The wasmtime backstop on linear memory in bytes: heap × 1.25 + shadow stack + 32 MiB,
    /// capped just under 4 GiB.
    pub(crate) fn linear_memory_cap(&self) -> usize {
        let cap = self
            .memory_limit_bytes
            .saturating_add(self.memory_limit_bytes / 4)
            .saturating_add(SHADOW_STACK_BYTES)
            .saturating_add(32 * 1024 * 1024);
        cap.min((1u64 << 32) - 65536) as usize
    }
}
