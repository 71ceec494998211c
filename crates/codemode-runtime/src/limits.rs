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

/// Native wasm stack in bytes kept free below [`MAX_WASM_STACK`]: once a guest call has used
/// the rest, the `codemode.native_stack_low` import answers 1 and QuickJS throws its catchable
/// `RangeError` (recursion whose frames take no shadow stack, e.g. `JSON.parse` of a million
/// `[`); the headroom is for the throw, its backtrace and the unwinding (docs/guest-abi.md).
pub(crate) const NATIVE_STACK_HEADROOM: usize = 4 * 1024 * 1024;

/// Most bytes of JSON text one bridge request's arguments may carry to the host (1 MiB). The
/// host parses arguments into a value tree, which takes up to ~16× their text (a `0,` is two
/// bytes of text and a 32-byte `serde_json::Value`), so the text is checked before parsing; a
/// request over it is refused in the guest with [`argument_too_large`]'s message
/// (docs/threat-model.md).
pub const MAX_REQUEST_ARGUMENT_BYTES: usize = 1024 * 1024;

/// Most bytes of JSON argument text all requests created in one step may carry together
/// (8 MiB); requests past it are refused with [`step_arguments_too_large`]'s message.
pub const MAX_STEP_ARGUMENT_BYTES: usize = 8 * 1024 * 1024;

/// The error a request whose arguments are `bytes` long (over [`MAX_REQUEST_ARGUMENT_BYTES`])
/// rejects with.
pub fn argument_too_large(bytes: usize) -> String {
    format!(
        "code mode tool arguments are too large: {bytes} bytes (at most {MAX_REQUEST_ARGUMENT_BYTES} bytes per call)"
    )
}

/// The error a request past [`MAX_STEP_ARGUMENT_BYTES`] of its step rejects with.
pub fn step_arguments_too_large() -> String {
    format!(
        "code mode tool arguments are too large: the calls of one step carry more than {MAX_STEP_ARGUMENT_BYTES} bytes"
    )
}

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
    /// Most bytes of JSON text one delivery may put into the guest: a quarter of the heap limit
    /// (the guest holds the input buffer, the text and the value it parses from it at once, so
    /// a larger result could not be used). A larger result rejects the request with
    /// [`delivery_too_large`]'s message, checked before the host serialises it.
    pub fn max_delivery_bytes(&self) -> u64 {
        self.memory_limit_bytes / 4
    }

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

/// The error a request whose result is `bytes` of JSON text (over `limit`,
/// [`VmLimits::max_delivery_bytes`]) rejects with.
pub fn delivery_too_large(bytes: u64, limit: u64) -> String {
    format!(
        "code mode tool result is too large for the guest: {bytes} bytes (at most {limit} bytes, a quarter of memoryLimitBytes)"
    )
}
