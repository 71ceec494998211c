//! One guest instance ([`Vm`]), its limits and deadlines, and the imports the guest needs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_bridge::{
    BridgeMethod, Delivery, GuestReport, ProtocolError, PRELUDE, USER_SCRIPT_NAME,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime::{
    Caller, Global, Linker, Memory, Store, StoreLimits, StoreLimitsBuilder, Trap, TypedFunc,
    UpdateDeadline,
};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{HostWallClock, WasiCtxBuilder};

use crate::engine::{Runtime, RuntimeError};
use crate::snapshot::{Snapshot, SnapshotError};

/// Size of the guest's shadow stack in bytes (linked with `-zstack-size`, see the guest's
/// `.cargo/config.toml`). The stack sits first in linear memory, below the data segments.
pub const SHADOW_STACK_BYTES: u64 = 8 * 1024 * 1024;

/// QuickJS's stack limit (`JS_SetMaxStackSize`): the shadow stack less 1 MiB of headroom for the
/// C frames that run below the last check.
pub(crate) const JS_STACK_LIMIT_BYTES: u64 = SHADOW_STACK_BYTES - 1024 * 1024;

/// How long after the soft deadline the epoch deadline traps the guest (behaviour.md D6: ≤ 250 ms).
pub const HARD_DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// Bytes of guest stdout/stderr kept for diagnostics (the guest never writes there on purpose).
const STDIO_CAPTURE_BYTES: usize = 16 * 1024;

/// Per-VM limits (spec "Configuration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmLimits {
    /// QuickJS heap limit in bytes (`memoryLimitBytes`). Allocation past it raises a catchable
    /// guest error. The wasmtime `StoreLimits` backstop on linear memory sits above it:
    /// heap × 1.25 + shadow stack + 32 MiB, at most 4 GiB.
    pub memory_limit_bytes: u64,
    /// Output bytes one step may buffer in the guest (`maxOutputBytes`); past it the step
    /// reports [`GuestReport::output_overflow`] instead of holding the output.
    pub max_output_bytes: u64,
    /// Bridge requests one step may create (`maxPendingToolCalls`); past it the step reports
    /// [`GuestReport::request_overflow`].
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
    fn linear_memory_cap(&self) -> usize {
        let cap = self.memory_limit_bytes
            + self.memory_limit_bytes / 4
            + SHADOW_STACK_BYTES
            + 32 * 1024 * 1024;
        cap.min((1u64 << 32) - 65536) as usize
    }
}

/// Cancels running guest code and pending waits from any thread (behaviour.md §5.9). Cloning
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
}

/// A guest call did not produce a report (behaviour.md D10 maps each to a result code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VmError {
    /// The soft or hard deadline passed (`timeout`, `code mode timeout exceeded`).
    #[error("code mode timeout exceeded")]
    Timeout,
    /// The abort handle fired (`aborted`, `code mode execution aborted`).
    #[error("code mode execution aborted")]
    Aborted,
    /// The instance trapped (`runtime_unavailable`); the VM is discarded.
    #[error("code mode runtime trapped: {0}")]
    Trap(String),
    /// The guest broke the protocol or a snapshot is corrupt (`internal_error`).
    #[error("code mode guest protocol violation: {0}")]
    Protocol(String),
    /// A VM could not be created or restored (`runtime_unavailable`).
    #[error("{0}")]
    Unavailable(String),
    /// The VM already failed; it must be discarded.
    #[error("code mode VM is no longer usable: {0}")]
    Poisoned(String),
    /// `deliver` named a request that is not pending in this VM.
    #[error("unknown or settled bridge request id: {0}")]
    UnknownRequest(String),
}

impl From<SnapshotError> for VmError {
    fn from(e: SnapshotError) -> Self {
        match e {
            SnapshotError::GuestMismatch | SnapshotError::ImageMismatch => {
                VmError::Unavailable(e.to_string())
            }
            other => VmError::Protocol(other.to_string()),
        }
    }
}

/// A bridge request the guest still waits for (part of every [`Snapshot`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// `bridge:<method>:<n>`.
    pub id: String,
    /// The bridge method.
    pub method: BridgeMethod,
    /// The JSON-adapted arguments.
    pub args: serde_json::Value,
}

pub(crate) struct HostState {
    pub(crate) wasi: WasiP1Ctx,
    limits: StoreLimits,
    soft_deadline: Option<Instant>,
    hard_deadline: Option<Instant>,
    abort: Option<AbortHandle>,
    interrupted: bool,
    stderr: MemoryOutputPipe,
}

struct Clock(crate::engine::WallClock);

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
            let state = caller.data_mut();
            let aborted = state.abort.as_ref().is_some_and(|a| a.is_aborted());
            let late = state.soft_deadline.is_some_and(|d| Instant::now() >= d);
            if aborted || late {
                state.interrupted = true;
                1
            } else {
                0
            }
        },
    )?;
    Ok(())
}

/// The linear memory a fresh VM starts from: bytes `[base, base + data.len())`, grown to `pages`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Image {
    pub(crate) stack_pointer: u32,
    pub(crate) pages: u64,
    pub(crate) data: Vec<u8>,
    /// SHA-256 of `data`: snapshots are stored as a delta against this image and record it.
    pub(crate) sha256: [u8; 32],
}

/// `data[i] ^= image[i]` over their common length: turns memory into a delta against the image
/// (mostly zeros for an idle run, which zstd stores in almost nothing) and back.
fn xor_with_image(data: &mut [u8], image: &[u8]) {
    let n = data.len().min(image.len());
    for (d, i) in data[..n].iter_mut().zip(&image[..n]) {
        *d ^= *i;
    }
}

struct Exports {
    memory: Memory,
    stack_pointer: Global,
    alloc: TypedFunc<u32, u32>,
    init: TypedFunc<(u32, u32), i32>,
    start: TypedFunc<(u32, u32), i32>,
    deliver: TypedFunc<(u32, u32), i32>,
    report_ptr: TypedFunc<(), u32>,
    report_len: TypedFunc<(), u32>,
    initialize: TypedFunc<(), ()>,
}

/// One guest instance. Not shared between threads at once; move it into a leg thread
/// ([`crate::run_leg`]) to run it. Dropping it frees its pool slot.
pub struct Vm {
    guest_sha256: [u8; 32],
    /// The image snapshots are a delta against (empty while the image itself is being taken).
    image: Arc<Image>,
    /// Bytes of linear memory right after instantiation (beyond them a fresh instance is zero).
    initial_bytes: usize,
    store: Store<HostState>,
    exports: Exports,
    /// Initial `__stack_pointer`: the top of the shadow stack. Everything below it is dead
    /// between calls, so snapshots start here.
    base: u32,
    pending: Vec<PendingRequest>,
    /// Highest request number seen per method (duplicate detection).
    counters: BTreeMap<BridgeMethod, u64>,
    poisoned: Option<String>,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm")
            .field("pending", &self.pending)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitInput<'a> {
    prelude: &'a str,
    methods: Vec<&'static str>,
    memory_limit_bytes: u64,
    max_stack_bytes: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartInput<'a> {
    code: &'a str,
    filename: &'a str,
    context: &'a str,
    memory_limit_bytes: u64,
    max_output_bytes: u64,
    max_requests: u64,
}

impl Vm {
    fn instantiate(runtime: &Runtime, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        let stderr = MemoryOutputPipe::new(STDIO_CAPTURE_BYTES);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(MemoryOutputPipe::new(STDIO_CAPTURE_BYTES))
            .stderr(stderr.clone());
        if let Some(clock) = &runtime.options.wall_clock {
            builder.wall_clock(Clock(clock.clone()));
        }
        if let Some(bytes) = &runtime.options.deterministic_random {
            builder.secure_random(wasmtime_wasi::Deterministic::new(bytes.clone()));
            builder.insecure_random(wasmtime_wasi::Deterministic::new(bytes.clone()));
        }
        let state = HostState {
            wasi: builder.build_p1(),
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.linear_memory_cap())
                .instances(1)
                .memories(1)
                .tables(1)
                .build(),
            soft_deadline: None,
            hard_deadline: None,
            abort: None,
            interrupted: false,
            stderr,
        };
        let mut store = Store::new(&runtime.engine, state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_callback(|ctx| {
            let state = ctx.data();
            let aborted = state.abort.as_ref().is_some_and(|a| a.is_aborted());
            let late = state.hard_deadline.is_some_and(|d| Instant::now() >= d);
            if aborted || late {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        store.set_epoch_deadline(1);
        let instance = runtime
            .pre
            .instantiate(&mut store)
            .map_err(|e| RuntimeError::Instantiate(format!("{e:#}")))?;
        let exports = (|| -> wasmtime::Result<Exports> {
            Ok(Exports {
                memory: instance
                    .get_memory(&mut store, "memory")
                    .ok_or_else(|| wasmtime::format_err!("no memory export"))?,
                stack_pointer: instance
                    .get_global(&mut store, "__stack_pointer")
                    .ok_or_else(|| wasmtime::format_err!("no __stack_pointer export"))?,
                alloc: instance.get_typed_func(&mut store, "cm_alloc")?,
                init: instance.get_typed_func(&mut store, "cm_init")?,
                start: instance.get_typed_func(&mut store, "cm_start")?,
                deliver: instance.get_typed_func(&mut store, "cm_deliver")?,
                report_ptr: instance.get_typed_func(&mut store, "cm_report_ptr")?,
                report_len: instance.get_typed_func(&mut store, "cm_report_len")?,
                initialize: instance.get_typed_func(&mut store, "_initialize")?,
            })
        })()
        .map_err(|e| RuntimeError::Instantiate(format!("{e:#}")))?;
        let base = exports
            .stack_pointer
            .get(&mut store)
            .i32()
            .ok_or_else(|| RuntimeError::Instantiate("__stack_pointer is not i32".into()))?
            as u32;
        let initial_bytes = exports.memory.data_size(&store);
        Ok(Vm {
            guest_sha256: runtime.guest_sha256,
            image: runtime.image.clone(),
            initial_bytes,
            store,
            exports,
            base,
            pending: Vec::new(),
            counters: BTreeMap::new(),
            poisoned: None,
        })
    }

    /// A fresh VM initialised from scratch: `_initialize`, then `cm_init` with the prelude.
    pub(crate) fn from_init(runtime: &Runtime, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        let mut vm = Vm::instantiate(runtime, limits)?;
        let budget = LegBudget::new(Duration::from_secs(10), AbortHandle::new());
        vm.arm(&budget);
        let initialize = vm.exports.initialize.clone();
        initialize
            .call(&mut vm.store, ())
            .map_err(|e| RuntimeError::Instantiate(format!("_initialize: {e:#}")))?;
        let input = serde_json::to_vec(&InitInput {
            prelude: PRELUDE,
            methods: BridgeMethod::ALL.iter().map(|m| m.as_str()).collect(),
            memory_limit_bytes: limits.memory_limit_bytes,
            max_stack_bytes: JS_STACK_LIMIT_BYTES,
        })
        .map_err(|e| RuntimeError::Instantiate(e.to_string()))?;
        let init = vm.exports.init.clone();
        let (status, report) = vm
            .call_raw(init, &input)
            .map_err(|e| RuntimeError::Instantiate(format!("cm_init: {e}")))?;
        if status != 0 {
            return Err(RuntimeError::Instantiate(format!(
                "cm_init failed: {}",
                String::from_utf8_lossy(&report)
            )));
        }
        vm.disarm();
        Ok(vm)
    }

    /// A fresh VM from the runtime's post-initialisation image.
    pub(crate) fn from_image(runtime: &Runtime, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        let mut vm = Vm::instantiate(runtime, limits)?;
        let image = &runtime.image;
        vm.load_memory(image.pages, image.stack_pointer, |dst| {
            dst.copy_from_slice(&image.data);
            Ok(())
        })
        .map_err(|e| RuntimeError::Instantiate(e.to_string()))?;
        Ok(vm)
    }

    pub(crate) fn restore(
        runtime: &Runtime,
        snapshot: &Snapshot,
        limits: &VmLimits,
    ) -> Result<Vm, VmError> {
        if snapshot.guest_sha256 != runtime.guest_sha256 {
            return Err(SnapshotError::GuestMismatch.into());
        }
        if snapshot.image_sha256 != runtime.image.sha256 {
            return Err(SnapshotError::ImageMismatch.into());
        }
        let mut vm =
            Vm::instantiate(runtime, limits).map_err(|e| VmError::Unavailable(e.to_string()))?;
        if snapshot.base != vm.base {
            return Err(VmError::Protocol("snapshot memory layout mismatch".into()));
        }
        let data_len = snapshot.data_len;
        let image = runtime.image.clone();
        vm.load_memory(snapshot.pages, snapshot.stack_pointer, |dst| {
            let written = zstd::bulk::decompress_to_buffer(&snapshot.compressed, dst)
                .map_err(|e| VmError::Protocol(format!("corrupt snapshot: {e}")))?;
            if written as u64 != data_len {
                return Err(VmError::Protocol("corrupt snapshot: short memory".into()));
            }
            xor_with_image(&mut dst[..written], &image.data);
            Ok(())
        })?;
        vm.pending = snapshot.pending.clone();
        vm.counters = snapshot.counters.clone();
        Ok(vm)
    }

    /// Grows memory to `pages` and fills `[base, base + len)` with `fill`; sets the stack pointer.
    fn load_memory(
        &mut self,
        pages: u64,
        stack_pointer: u32,
        fill: impl FnOnce(&mut [u8]) -> Result<(), VmError>,
    ) -> Result<(), VmError> {
        let memory = self.exports.memory;
        let current = memory.size(&self.store);
        if pages > current {
            memory
                .grow(&mut self.store, pages - current)
                .map_err(|e| VmError::Unavailable(format!("cannot grow guest memory: {e:#}")))?;
        }
        let base = self.base as usize;
        let data = memory.data_mut(&mut self.store);
        let end = data.len();
        fill(&mut data[base..end])?;
        self.exports
            .stack_pointer
            .set(&mut self.store, wasmtime::Val::I32(stack_pointer as i32))
            .map_err(|e| VmError::Unavailable(format!("{e:#}")))?;
        Ok(())
    }

    /// Captures linear memory from the stack top to the end, without trailing zero bytes beyond
    /// the module's initial memory (a fresh instance has zeros there).
    fn capture(&mut self) -> Result<(u64, u32, &[u8]), VmError> {
        let sp = self
            .exports
            .stack_pointer
            .get(&mut self.store)
            .i32()
            .ok_or_else(|| VmError::Protocol("__stack_pointer is not i32".into()))?
            as u32;
        if sp != self.base {
            return Err(VmError::Protocol("guest stack is not empty".into()));
        }
        let memory = self.exports.memory;
        let pages = memory.size(&self.store);
        let initial_bytes = self.initial_bytes;
        let data = memory.data(&self.store);
        let mut end = data.len();
        while end > initial_bytes.max(self.base as usize) && data[end - 1] == 0 {
            end -= 1;
        }
        Ok((pages, sp, &data[self.base as usize..end]))
    }

    pub(crate) fn image(&mut self) -> Result<Image, VmError> {
        let (pages, stack_pointer, data) = self.capture()?;
        // The image must cover the whole region a restore overwrites.
        let mut data = data.to_vec();
        let full = (pages as usize * 65536).saturating_sub(self.base as usize);
        data.resize(full, 0);
        let sha256 = Sha256::digest(&data).into();
        Ok(Image {
            stack_pointer,
            pages,
            data,
            sha256,
        })
    }

    /// Serialises the whole VM state: linear memory in use (zstd), `__stack_pointer`, the pending
    /// requests and id counters. Only valid between calls, which is the only time the host holds
    /// the VM. The VM stays usable.
    pub fn snapshot(&mut self) -> Result<Snapshot, VmError> {
        if let Some(p) = &self.poisoned {
            return Err(VmError::Poisoned(p.clone()));
        }
        let guest_sha256 = self.guest_sha256;
        let image = self.image.clone();
        let base = self.base;
        let pending = self.pending.clone();
        let counters = self.counters.clone();
        let (pages, stack_pointer, data) = self.capture()?;
        let mut delta = data.to_vec();
        xor_with_image(&mut delta, &image.data);
        // Level 1 with zstd's content checksum, so a corrupted snapshot fails to restore.
        let compressed = zstd::bulk::Compressor::new(1)
            .and_then(|mut c| {
                c.include_checksum(true)?;
                c.compress(&delta)
            })
            .map_err(|e| VmError::Protocol(format!("cannot compress snapshot: {e}")))?;
        Ok(Snapshot {
            guest_sha256,
            image_sha256: image.sha256,
            stack_pointer,
            base,
            pages,
            data_len: delta.len() as u64,
            compressed,
            pending,
            counters,
        })
    }

    /// An upper bound in bytes on [`Snapshot::stored_bytes`] were a snapshot taken now: memory in
    /// use at zstd's worst-case expansion plus the header and pending table. Lets callers skip
    /// compressing when the bound is already under a limit.
    pub fn snapshot_bound(&self) -> u64 {
        let memory = self.exports.memory.data_size(&self.store);
        let raw = memory.saturating_sub(self.base as usize);
        let table: usize = self
            .pending
            .iter()
            .map(|p| p.id.len() + p.args.to_string().len() + 64)
            .sum();
        (zstd::zstd_safe::compress_bound(raw) + table + 256) as u64
    }

    /// Bridge requests the guest still waits for, in creation order.
    pub fn pending(&self) -> &[PendingRequest] {
        &self.pending
    }

    /// Whether the VM failed and must be discarded.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// Up to 16 KiB of what the guest wrote to stderr (diagnostics only).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.store.data().stderr.contents()).into_owned()
    }

    /// Evaluates `code` as the body of an async function (behaviour.md §4.1) after installing the
    /// run's globals from `context_json` (`{tools: [compact entries]}`), then drains jobs.
    pub fn start(
        &mut self,
        code: &str,
        context_json: &str,
        limits: &VmLimits,
        budget: &LegBudget,
    ) -> Result<GuestReport, VmError> {
        let input = serde_json::to_vec(&StartInput {
            code,
            filename: USER_SCRIPT_NAME,
            context: context_json,
            memory_limit_bytes: limits.memory_limit_bytes,
            max_output_bytes: limits.max_output_bytes,
            max_requests: limits.max_requests,
        })
        .map_err(|e| VmError::Protocol(e.to_string()))?;
        let start = self.exports.start.clone();
        self.step(start, &input, budget, None)
    }

    /// Settles one pending bridge request and drains jobs (behaviour.md §4.3, "Settlement").
    pub fn deliver(
        &mut self,
        delivery: &Delivery,
        budget: &LegBudget,
    ) -> Result<GuestReport, VmError> {
        let Some(index) = self.pending.iter().position(|p| p.id == delivery.id) else {
            return Err(VmError::UnknownRequest(delivery.id.clone()));
        };
        let deliver = self.exports.deliver.clone();
        self.step(deliver, &delivery.to_guest_input(), budget, Some(index))
    }

    fn step(
        &mut self,
        func: TypedFunc<(u32, u32), i32>,
        input: &[u8],
        budget: &LegBudget,
        delivered: Option<usize>,
    ) -> Result<GuestReport, VmError> {
        if let Some(p) = &self.poisoned {
            return Err(VmError::Poisoned(p.clone()));
        }
        self.arm(budget);
        let result = crate::on_leg_stack(|| self.call_raw(func, input))
            .unwrap_or_else(|p| Err(VmError::Trap(p.to_string())));
        let interrupted = self.store.data().interrupted;
        self.disarm();
        let outcome = match result {
            Err(e) => Err(e),
            Ok((_, bytes)) => {
                if interrupted {
                    Err(self.deadline_error(budget))
                } else {
                    GuestReport::parse(&bytes).map_err(|e| match e {
                        ProtocolError::Rejected(m) => VmError::Protocol(m),
                        other => VmError::Protocol(other.to_string()),
                    })
                }
            }
        };
        let report = match outcome {
            Ok(r) => r,
            Err(e) => {
                self.poisoned = Some(e.to_string());
                return Err(e);
            }
        };
        if let Some(index) = delivered {
            self.pending.remove(index);
        }
        if report.request_overflow {
            // The guest dropped the arguments of the excess requests: the run cannot go on.
            self.poisoned = Some("too many bridge requests in one step".into());
            return Ok(report);
        }
        for request in &report.requests {
            let n: u64 = request
                .id
                .rsplit(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let last = self.counters.entry(request.method).or_insert(0);
            if n <= *last {
                let e = VmError::Protocol("duplicate code mode bridge id".into());
                self.poisoned = Some(e.to_string());
                return Err(e);
            }
            *last = n;
            self.pending.push(PendingRequest {
                id: request.id.clone(),
                method: request.method,
                args: request.args.clone(),
            });
        }
        if report.outstanding as usize != self.pending.len() {
            let e = VmError::Protocol(format!(
                "guest reports {} outstanding requests, host tracks {}",
                report.outstanding,
                self.pending.len()
            ));
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        Ok(report)
    }

    fn deadline_error(&self, budget: &LegBudget) -> VmError {
        if budget.abort.is_aborted() {
            VmError::Aborted
        } else {
            VmError::Timeout
        }
    }

    fn arm(&mut self, budget: &LegBudget) {
        let state = self.store.data_mut();
        state.soft_deadline = Some(budget.soft_deadline);
        state.hard_deadline = Some(budget.soft_deadline + HARD_DEADLINE_GRACE);
        state.abort = Some(budget.abort.clone());
        state.interrupted = false;
        self.store.set_epoch_deadline(1);
    }

    fn disarm(&mut self) {
        let state = self.store.data_mut();
        state.soft_deadline = None;
        state.hard_deadline = None;
        state.abort = None;
    }

    /// Copies `input` into a guest buffer, calls `func(ptr, len)` and copies the report out.
    fn call_raw(
        &mut self,
        func: TypedFunc<(u32, u32), i32>,
        input: &[u8],
    ) -> Result<(i32, Vec<u8>), VmError> {
        let len = u32::try_from(input.len())
            .map_err(|_| VmError::Protocol("input larger than 4 GiB".into()))?;
        let ptr = if len == 0 {
            0
        } else {
            let ptr = self
                .exports
                .alloc
                .call(&mut self.store, len)
                .map_err(|e| self.trap_error(e))?;
            if ptr == 0 {
                return Err(VmError::Protocol(
                    "guest could not allocate the input buffer".into(),
                ));
            }
            self.exports
                .memory
                .write(&mut self.store, ptr as usize, input)
                .map_err(|e| VmError::Protocol(format!("guest returned a bad buffer: {e}")))?;
            ptr
        };
        let status = func
            .call(&mut self.store, (ptr, len))
            .map_err(|e| self.trap_error(e))?;
        let rptr = self
            .exports
            .report_ptr
            .call(&mut self.store, ())
            .map_err(|e| self.trap_error(e))? as usize;
        let rlen = self
            .exports
            .report_len
            .call(&mut self.store, ())
            .map_err(|e| self.trap_error(e))? as usize;
        let data = self.exports.memory.data(&self.store);
        let report = rptr
            .checked_add(rlen)
            .and_then(|end| data.get(rptr..end))
            .ok_or_else(|| VmError::Protocol("guest report is out of bounds".into()))?
            .to_vec();
        Ok((status, report))
    }

    fn trap_error(&self, e: wasmtime::Error) -> VmError {
        let state = self.store.data();
        if state.abort.as_ref().is_some_and(|a| a.is_aborted()) {
            return VmError::Aborted;
        }
        // Only the trap itself: the wasm backtrace names guest internals and can be long.
        match e.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => VmError::Timeout,
            Some(Trap::StackOverflow) => VmError::Trap(
                "RangeError: Maximum call stack size exceeded (native stack exhausted)".into(),
            ),
            // The guest's Rust code aborts (and so traps `unreachable`) when an allocation
            // fails: in practice the guest ran out of memory outside QuickJS's own accounting.
            Some(Trap::UnreachableCodeReached) => VmError::Trap(
                "the guest aborted (wasm `unreachable`), most likely out of memory".into(),
            ),
            Some(trap) => VmError::Trap(trap.to_string()),
            None => {
                let text = e.to_string();
                let first = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect();
                VmError::Trap(first)
            }
        }
    }
}

/// Takes the post-initialisation image: a VM initialised from scratch, captured once.
pub(crate) fn take_image(runtime: &Runtime) -> Result<Image, RuntimeError> {
    let mut vm = Vm::from_init(runtime, &VmLimits::default())?;
    vm.image()
        .map_err(|e| RuntimeError::Setup(format!("cannot take the VM image: {e}")))
}
