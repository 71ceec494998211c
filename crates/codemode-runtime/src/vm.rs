//! One guest instance ([`Vm`]): its store, its exports and the calls
//! into the guest ABI (docs/guest-abi.md). The imports and the per-store host state live in
//! [`crate::imports`], limits in [`crate::limits`], deadlines in [`crate::budget`], the VM's
//! snapshots and restore in `vm/state.rs` over [`crate::snapshot`]'s format; the
//! [`crate::Runtime`] hands every VM the same [`VmTemplate`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

use codemode_bridge::abi::{self, InitInput, StartInput};
use codemode_bridge::{
    BridgeMethod, BridgeRequest, Delivery, GuestReport, OutputItem, ProtocolError, RunContext,
    PRELUDE,
};
use wasmtime::{
    Engine, Global, Instance, InstancePre, Memory, Store, StoreLimitsBuilder, TypedFunc,
    UpdateDeadline, Val,
};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::WasiCtxBuilder;

use crate::budget::{AbortHandle, Deadline, LegBudget};
use crate::error::{GuestTrap, Poison, ProtocolViolation, RuntimeError, VmError};
use crate::imports::{native_stack_position, Clock, HostState, WallClock};
use crate::limits::{VmLimits, JS_STACK_LIMIT_BYTES};
use crate::snapshot::Image;
use crate::ticker::EpochTicker;

mod parked;
mod state;
mod warm;

pub(crate) use warm::WarmVms;

/// Bytes of guest stdout/stderr kept for diagnostics (the guest never writes there on purpose).
const STDIO_CAPTURE_BYTES: usize = 16 * 1024;

/// What every VM of one runtime is made from: the engine, the linked guest, the guest's hash,
/// the post-initialisation image and the injectable clock and random source.
pub(crate) struct VmTemplate {
    pub(crate) engine: Engine,
    /// The guest every fresh VM, restore and snapshot starts from: the pre-initialised module
    /// (docs/guest-abi.md, "Pre-initialisation"), whose memory is the [`Image`].
    pub(crate) pre: InstancePre<HostState>,
    /// The guest as built (not pre-initialised), for [`crate::FreshVm::Init`] and
    /// [`crate::FreshVm::Image`]; linked on first use (benchmarks and tests only).
    pub(crate) raw: Box<dyn RawGuestSource>,
    pub(crate) guest_sha256: [u8; 32],
    /// Empty while the image itself is being taken.
    pub(crate) image: Arc<Image>,
    pub(crate) wall_clock: Option<WallClock>,
    pub(crate) deterministic_random: Option<Vec<u8>>,
    /// VMs of [`VmTemplate::pre`] kept between runs (docs/architecture.md, "Warm VMs").
    pub(crate) warm: Arc<WarmVms>,
    /// The runtime's epoch ticker, held by every armed guest call.
    pub(crate) ticker: Arc<EpochTicker>,
}

/// Where a [`VmTemplate`] gets the raw guest (not pre-initialised) from. The engine module
/// implements it (compiling, or loading from the module cache, and linking on first use); a
/// trait here so that this module does not import the engine that builds templates.
pub(crate) trait RawGuestSource: Send + Sync {
    /// The linked raw guest. Errors: [`RuntimeError::Setup`] when it cannot be compiled or
    /// linked.
    fn get(&self, engine: &Engine) -> Result<InstancePre<HostState>, RuntimeError>;
}

#[derive(Clone)]
struct Exports {
    instance: Instance,
    memory: Memory,
    stack_pointer: Global,
    alloc: TypedFunc<u32, u32>,
    /// `cm_init`; absent from the pre-initialised module (it already ran).
    init: Option<TypedFunc<(u32, u32), i32>>,
    start: TypedFunc<(u32, u32), i32>,
    deliver: TypedFunc<(u32, u32), i32>,
    report_ptr: TypedFunc<(), u32>,
    report_len: TypedFunc<(), u32>,
    /// `_initialize`; absent from the pre-initialised module (it already ran).
    initialize: Option<TypedFunc<(), ()>>,
    /// `cm_take_output`: the output of a call the epoch backstop trapped (docs/guest-abi.md).
    take_output: TypedFunc<(), i32>,
}

/// One guest instance. Not shared between threads at once; move it into a leg thread
/// ([`crate::run_leg`]) to run it. Dropping it frees its pool slot.
pub struct Vm {
    guest_sha256: [u8; 32],
    /// The image snapshots are a delta against (empty while the image itself is being taken).
    image: Arc<Image>,
    /// Bytes of linear memory right after instantiation (beyond them a fresh instance is zero).
    initial_bytes: usize,
    /// Taken out only by `Drop`, which hands it to [`Vm::warm`] or drops it.
    store: ManuallyDrop<Store<HostState>>,
    exports: Exports,
    /// Where this VM goes when dropped clean: `Some` for an instance of the pre-initialised
    /// guest, `None` for the raw guest's (docs/architecture.md, "Warm VMs").
    warm: Option<Arc<WarmVms>>,
    /// Initial `__stack_pointer`: the top of the shadow stack. Everything below it is dead
    /// between calls, so snapshots start here.
    base: u32,
    pending: Vec<BridgeRequest>,
    /// Highest request number seen per method (duplicate detection).
    counters: BTreeMap<BridgeMethod, u64>,
    poisoned: Option<Poison>,
    /// Output of the step a deadline or abort stopped, from the report the guest still left.
    output_at_stop: Vec<OutputItem>,
    /// Requests refused for the size of their arguments (id, message) since the last
    /// [`Vm::take_refusals`]; their arguments were never parsed.
    refusals: Vec<(String, String)>,
    /// [`VmLimits::max_delivery_bytes`] of the limits the VM was made with.
    max_delivery_bytes: u64,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm")
            .field("pending", &self.pending)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

impl Vm {
    /// A VM of the pre-initialised guest in exactly its post-initialisation state: a warm one
    /// reset (docs/architecture.md, "Warm VMs") when there is one, else a new instance.
    fn instantiate(template: &VmTemplate, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        if let Some(vm) = template.warm.take(template, limits) {
            return Ok(vm);
        }
        match Vm::instantiate_from(template, &template.pre, limits) {
            Ok(mut vm) => {
                vm.warm = Some(template.warm.clone());
                Ok(vm)
            }
            Err(e) => {
                // A VM dropped meanwhile may hold the last pool slot, warm.
                if let Some(vm) = template.warm.take(template, limits) {
                    return Ok(vm);
                }
                // Parked runs' VMs kept alive give their slots back, oldest first.
                while template.warm.parked.evict_oldest() {
                    if let Ok(mut vm) = Vm::instantiate_from(template, &template.pre, limits) {
                        vm.warm = Some(template.warm.clone());
                        return Ok(vm);
                    }
                }
                Err(e)
            }
        }
    }

    /// The per-store host state of a new run: a fresh WASI context (clock, random source,
    /// captured stdout and stderr), the memory backstop of `limits`, no deadline, no context.
    fn host_state(template: &VmTemplate, limits: &VmLimits) -> HostState {
        let stderr = MemoryOutputPipe::new(STDIO_CAPTURE_BYTES);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(MemoryOutputPipe::new(STDIO_CAPTURE_BYTES))
            .stderr(stderr.clone());
        if let Some(clock) = &template.wall_clock {
            builder.wall_clock(Clock(clock.clone()));
        }
        if let Some(bytes) = &template.deterministic_random {
            builder.secure_random(wasmtime_wasi::Deterministic::new(bytes.clone()));
            builder.insecure_random(wasmtime_wasi::Deterministic::new(bytes.clone()));
        }
        HostState {
            wasi: builder.build_p1(),
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.linear_memory_cap())
                .instances(1)
                .memories(1)
                .tables(1)
                .build(),
            deadline: Deadline::ticking(template.ticker.clone()),
            stderr,
            native_stack_entry: 0,
            context: None,
        }
    }

    /// A fresh instance of `pre` (the template's pre-initialised guest, or the raw one).
    fn instantiate_from(
        template: &VmTemplate,
        pre: &InstancePre<HostState>,
        limits: &VmLimits,
    ) -> Result<Vm, RuntimeError> {
        let mut store = Store::new(&template.engine, Vm::host_state(template, limits));
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_callback(|ctx| {
            if ctx.data().deadline.hard_expired() {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        store.set_epoch_deadline(1);
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| RuntimeError::instantiate("instantiating the guest", e))?;
        let exports = (|| -> wasmtime::Result<Exports> {
            Ok(Exports {
                instance,
                memory: instance
                    .get_memory(&mut store, "memory")
                    .ok_or_else(|| wasmtime::format_err!("no memory export"))?,
                stack_pointer: instance
                    .get_global(&mut store, "__stack_pointer")
                    .ok_or_else(|| wasmtime::format_err!("no __stack_pointer export"))?,
                alloc: instance.get_typed_func(&mut store, "cm_alloc")?,
                init: optional_func(&instance, &mut store, "cm_init")?,
                start: instance.get_typed_func(&mut store, "cm_start")?,
                deliver: instance.get_typed_func(&mut store, "cm_deliver")?,
                report_ptr: instance.get_typed_func(&mut store, "cm_report_ptr")?,
                report_len: instance.get_typed_func(&mut store, "cm_report_len")?,
                initialize: optional_func(&instance, &mut store, "_initialize")?,
                take_output: instance.get_typed_func(&mut store, "cm_take_output")?,
            })
        })()
        .map_err(|e| RuntimeError::instantiate("looking up the guest's exports", e))?;
        let base = exports.stack_pointer.get(&mut store).i32().ok_or_else(|| {
            RuntimeError::instantiate(
                "reading __stack_pointer",
                wasmtime::format_err!("__stack_pointer is not i32"),
            )
        })? as u32;
        let initial_bytes = exports.memory.data_size(&store);
        Ok(Vm {
            guest_sha256: template.guest_sha256,
            image: template.image.clone(),
            initial_bytes,
            store: ManuallyDrop::new(store),
            exports,
            warm: None,
            base,
            pending: Vec::new(),
            counters: BTreeMap::new(),
            poisoned: None,
            output_at_stop: Vec::new(),
            refusals: Vec::new(),
            max_delivery_bytes: limits.max_delivery_bytes(),
        })
    }

    /// A fresh VM initialised from scratch: the raw guest, `_initialize`, then `cm_init` with
    /// the prelude ([`init_input`]).
    pub(crate) fn from_init(template: &VmTemplate, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        let raw = template.raw.get(&template.engine)?;
        let mut vm = Vm::instantiate_from(template, &raw, limits)?;
        vm.initialise(limits)?;
        Ok(vm)
    }

    /// Runs `_initialize` and `cm_init` ([`init_input`] for `limits`) in this raw instance: what
    /// [`Vm::from_init`] does, and what the pre-initialisation captures
    /// (crate::engine, docs/guest-abi.md "Pre-initialisation").
    pub(crate) fn initialise(&mut self, limits: &VmLimits) -> Result<(), RuntimeError> {
        let vm = self;
        let missing = |name: &str| {
            RuntimeError::instantiate(
                "looking up the guest's exports",
                wasmtime::format_err!("no {name} export (the guest is pre-initialised)"),
            )
        };
        let initialize = vm
            .exports
            .initialize
            .clone()
            .ok_or_else(|| missing("_initialize"))?;
        let init = vm.exports.init.clone().ok_or_else(|| missing("cm_init"))?;
        let budget = LegBudget::new(Duration::from_secs(10), AbortHandle::new());
        vm.arm(&budget);
        initialize
            .call(&mut *vm.store, ())
            .map_err(|e| RuntimeError::instantiate("_initialize", e))?;
        let input = init_input(limits)
            .map_err(|e| RuntimeError::instantiate("encoding the cm_init input", e))?;
        let (status, report) = vm
            .call_raw(init, &input)
            .map_err(|e| RuntimeError::instantiate("cm_init", e))?;
        if status != codemode_bridge::abi::ReportStatus::Ready.code() {
            return Err(RuntimeError::instantiate(
                "cm_init",
                wasmtime::format_err!("failed: {}", String::from_utf8_lossy(&report)),
            ));
        }
        vm.disarm();
        Ok(())
    }

    /// Zeroes linear memory below the stack top (the shadow stack, dead between calls), before
    /// the pre-initialisation snapshot.
    pub(crate) fn clear_dead_stack(&mut self) {
        let base = self.base as usize;
        if let Some(stack) = self
            .exports
            .memory
            .data_mut(&mut *self.store)
            .get_mut(..base)
        {
            stack.fill(0);
        }
    }

    /// The store and instance, for reading globals and memory by export name (the wizer
    /// snapshot of a pre-initialisation).
    pub(crate) fn store_and_instance(&mut self) -> (&mut Store<HostState>, Instance) {
        (&mut *self.store, self.exports.instance)
    }

    /// A fresh VM of the pre-initialised guest: an instantiation, whose linear memory is the
    /// post-initialisation image mapped copy-on-write from the module; no guest code runs.
    pub(crate) fn from_preinit(
        template: &VmTemplate,
        limits: &VmLimits,
    ) -> Result<Vm, RuntimeError> {
        Vm::instantiate(template, limits)
    }

    /// A fresh VM of the raw guest with the template's post-initialisation image copied into
    /// its memory (the way before pre-initialisation; kept for benchmarks). The first call
    /// compiles the raw guest. A restore does not need it: [`Vm::from_preinit`]'s instance
    /// already holds exactly the image.
    pub(crate) fn from_image(template: &VmTemplate, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        let raw = template.raw.get(&template.engine)?;
        let mut vm = Vm::instantiate_from(template, &raw, limits)?;
        let image = &template.image;
        vm.load_memory(image.pages, image.stack_pointer, |dst| {
            dst.copy_from_slice(&image.data);
            Ok(())
        })
        .map_err(|e| RuntimeError::instantiate("loading the image", e))?;
        Ok(vm)
    }

    /// Bridge requests the guest still waits for, in creation order.
    pub fn pending(&self) -> &[BridgeRequest] {
        &self.pending
    }

    /// Whether the VM failed and must be discarded.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// `Err(`[`VmError::Poisoned`]`)` once an earlier failure made the VM unusable.
    fn check_usable(&self) -> Result<(), VmError> {
        match &self.poisoned {
            Some(p) => Err(VmError::Poisoned(p.clone())),
            None => Ok(()),
        }
    }

    /// The output items (`text`, `json`, `console`) of the step that a deadline or the abort
    /// handle stopped, produced before the stop; empty otherwise, and after the first call.
    /// docs/contract/lifecycle.md#s5-3 keeps output produced before a failure. (The interrupt
    /// ends the guest's call with a report that carries it; after a stop by the epoch backstop
    /// the host asks the guest for it with `cm_take_output`.)
    pub fn take_output_at_stop(&mut self) -> Vec<OutputItem> {
        std::mem::take(&mut self.output_at_stop)
    }

    /// Up to 16 KiB of what the guest wrote to stderr (diagnostics only).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.store.data().stderr.contents()).into_owned()
    }

    /// Evaluates `code` as the body of an async function (docs/contract/guest.md#s4-1, wrapped by the guest
    /// with [`codemode_bridge::wrap_user_code`]) after installing the run's globals from
    /// `context`, then drains jobs. A [`RunContext`] is installed lazily: the VM keeps it and
    /// the guest reads a section through the `codemode.context_*` imports when the program
    /// first touches the global that needs it (docs/guest-abi.md, "Run context"); a JSON string
    /// (`{tools, apiFiles, mcp}`) is an eager one ([`RunContext::eager`]), handed whole to
    /// `setup` as [`StartInput::context`].
    pub fn start(
        &mut self,
        code: &str,
        context: impl Into<RunContext>,
        limits: &VmLimits,
        budget: &LegBudget,
    ) -> Result<GuestReport, VmError> {
        let context = context.into();
        let start_json = context.start_json();
        self.set_context(context);
        let input = serde_json::to_vec(&StartInput {
            code: Cow::Borrowed(code),
            context: Cow::Owned(start_json),
            memory_limit_bytes: limits.memory_limit_bytes,
            max_output_bytes: limits.max_output_bytes,
            max_requests: limits.max_requests,
        })
        .map_err(|e| {
            VmError::Protocol(ProtocolViolation::StartInput {
                reason: e.to_string(),
            })
        })?;
        let start = self.exports.start.clone();
        self.step(start, &input, budget, None)
    }

    /// Sets the run context the `codemode.context_*` imports answer from. [`Vm::start`] sets it;
    /// a VM restored from a snapshot needs it again before its first step, since a program may
    /// first touch `tools` or `ALL_TOOLS` after a `wait`.
    pub fn set_context(&mut self, context: RunContext) {
        self.store.data_mut().context = Some(context);
    }

    /// Settles one pending bridge request and drains jobs (docs/contract/guest.md#s4-3, "Settlement").
    pub fn deliver(
        &mut self,
        delivery: &Delivery,
        budget: &LegBudget,
    ) -> Result<GuestReport, VmError> {
        let Some(index) = self.pending.iter().position(|p| p.id == delivery.id) else {
            return Err(VmError::UnknownRequest(delivery.id.clone()));
        };
        let deliver = self.exports.deliver.clone();
        let input = match &delivery.outcome {
            Ok(value) => {
                // Measured without building the text: a result the guest could not hold is
                // refused before the host makes copies of it (docs/threat-model.md).
                let bytes = json_len(value);
                if bytes > self.max_delivery_bytes {
                    Delivery {
                        id: delivery.id.clone(),
                        outcome: Err(crate::limits::delivery_too_large(
                            bytes,
                            self.max_delivery_bytes,
                        )),
                    }
                    .to_guest_input()
                } else {
                    delivery.to_guest_input()
                }
            }
            Err(_) => delivery.to_guest_input(),
        };
        self.step(deliver, &input, budget, Some(index))
    }

    /// Requests of the last [`Vm::start`] / [`Vm::deliver`] whose arguments were over
    /// [`crate::MAX_REQUEST_ARGUMENT_BYTES`] (or past [`crate::MAX_STEP_ARGUMENT_BYTES`] of their
    /// step), as `(bridge id, message)`. They are in [`Vm::pending`] with `null` arguments; the
    /// host must settle each with `Err(message)` instead of running it. Taking them empties the
    /// list.
    pub fn take_refusals(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.refusals)
    }

    fn step(
        &mut self,
        func: TypedFunc<(u32, u32), i32>,
        input: &[u8],
        budget: &LegBudget,
        delivered: Option<usize>,
    ) -> Result<GuestReport, VmError> {
        self.check_usable()?;
        self.arm(budget);
        let result = crate::worker::on_leg_stack(|| {
            let result = self.call_raw(func, input);
            if matches!(result, Err(VmError::Timeout | VmError::Aborted)) {
                self.salvage_output();
            }
            result
        })
        .unwrap_or_else(|p| Err(VmError::Trap(GuestTrap::Panic(p))));
        let interrupted = self.store.data().deadline.interrupted();
        self.disarm();
        let outcome = match result {
            Err(e) => Err(e),
            Ok((_, bytes)) => {
                if interrupted {
                    // The interrupt ended the call, and the guest still reported: keep what it
                    // wrote before the stop (its own cap on output held).
                    if let Ok(report) = GuestReport::parse(&bytes) {
                        if !report.output_overflow {
                            self.output_at_stop = report.output;
                        }
                    }
                    Err(budget.stop_error())
                } else {
                    self.parse_report(&bytes).map_err(|e| match e {
                        ProtocolError::Rejected(message) => {
                            VmError::Protocol(ProtocolViolation::Rejected { message })
                        }
                        other => VmError::Protocol(ProtocolViolation::Report(other)),
                    })
                }
            }
        };
        let report = match outcome {
            Ok(r) => r,
            Err(e) => {
                self.poisoned = Some(Poison::Failed(Box::new(e.clone())));
                return Err(e);
            }
        };
        if let Some(index) = delivered {
            self.pending.remove(index);
        }
        if report.request_overflow {
            // The guest dropped the arguments of the excess requests: the run cannot go on.
            self.poisoned = Some(Poison::RequestOverflow);
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
                let e = VmError::Protocol(ProtocolViolation::DuplicateId);
                self.poisoned = Some(Poison::Failed(Box::new(e.clone())));
                return Err(e);
            }
            *last = n;
            self.pending.push(request.clone());
        }
        if report.outstanding as usize != self.pending.len() {
            let e = VmError::Protocol(ProtocolViolation::OutstandingMismatch {
                reported: report.outstanding,
                tracked: self.pending.len(),
            });
            self.poisoned = Some(Poison::Failed(Box::new(e.clone())));
            return Err(e);
        }
        Ok(report)
    }

    /// Parses a report, refusing requests whose argument text is over the per-request or
    /// per-step cap before their arguments become a value tree (their text is replaced by
    /// `null` and they are recorded for [`Vm::take_refusals`]).
    fn parse_report(&mut self, bytes: &[u8]) -> Result<GuestReport, ProtocolError> {
        let mut raw: abi::Report =
            serde_json::from_slice(bytes).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
        let mut step_bytes = 0usize;
        for request in &mut raw.requests {
            let bytes = request.args.len();
            let refusal = if bytes > crate::limits::MAX_REQUEST_ARGUMENT_BYTES {
                Some(crate::limits::argument_too_large(bytes))
            } else if step_bytes + bytes > crate::limits::MAX_STEP_ARGUMENT_BYTES {
                Some(crate::limits::step_arguments_too_large())
            } else {
                step_bytes += bytes;
                None
            };
            if let Some(message) = refusal {
                request.args = "null".to_string();
                self.refusals.push((request.id.clone(), message));
            }
        }
        GuestReport::from_wire(raw)
    }

    /// After the epoch backstop trapped a call (deadline or abort), asks the guest for the output
    /// that call had buffered (`cm_take_output`, which touches only the guest's outbox) and keeps
    /// it for [`Vm::take_output_at_stop`]. The shadow stack pointer is reset first: the trap left
    /// it inside the abandoned frames, and the deadline is disarmed (it would trap this call
    /// too). The VM is poisoned by the caller either way; any failure here just leaves the
    /// output empty.
    fn salvage_output(&mut self) {
        // The deadline that trapped the call would trap this one too.
        self.disarm();
        if self
            .exports
            .stack_pointer
            .set(&mut *self.store, Val::I32(self.base as i32))
            .is_err()
        {
            return;
        }
        let take = self.exports.take_output.clone();
        match take.call(&mut *self.store, ()) {
            Ok(status) if status >= 0 => {}
            _ => return,
        }
        let (Ok(ptr), Ok(len)) = (
            self.exports.report_ptr.call(&mut *self.store, ()),
            self.exports.report_len.call(&mut *self.store, ()),
        ) else {
            return;
        };
        let data = self.exports.memory.data(&*self.store);
        let Some(bytes) = (ptr as usize)
            .checked_add(len as usize)
            .and_then(|end| data.get(ptr as usize..end))
        else {
            return;
        };
        if let Ok(report) = GuestReport::parse(bytes) {
            if !report.output_overflow {
                self.output_at_stop = report.output;
            }
        }
    }

    fn arm(&mut self, budget: &LegBudget) {
        self.store.data_mut().deadline.arm(budget);
        self.store.set_epoch_deadline(1);
    }

    fn disarm(&mut self) {
        self.store.data_mut().deadline.disarm();
    }

    /// Copies `input` into a guest buffer, calls `func(ptr, len)` and copies the report out.
    fn call_raw(
        &mut self,
        func: TypedFunc<(u32, u32), i32>,
        input: &[u8],
    ) -> Result<(i32, Vec<u8>), VmError> {
        let len = u32::try_from(input.len())
            .map_err(|_| VmError::Protocol(ProtocolViolation::InputTooLarge))?;
        let ptr = if len == 0 {
            0
        } else {
            let ptr = self
                .exports
                .alloc
                .call(&mut *self.store, len)
                .map_err(|e| self.trap_error(e))?;
            if ptr == 0 {
                return Err(VmError::Protocol(ProtocolViolation::InputAllocation));
            }
            self.exports
                .memory
                .write(&mut *self.store, ptr as usize, input)
                .map_err(|e| {
                    VmError::Protocol(ProtocolViolation::BadBuffer {
                        reason: e.to_string(),
                    })
                })?;
            ptr
        };
        self.store.data_mut().native_stack_entry = native_stack_position();
        let status = func.call(&mut *self.store, (ptr, len));
        self.store.data_mut().native_stack_entry = 0;
        let status = status.map_err(|e| self.trap_error(e))?;
        let rptr = self
            .exports
            .report_ptr
            .call(&mut *self.store, ())
            .map_err(|e| self.trap_error(e))? as usize;
        let rlen = self
            .exports
            .report_len
            .call(&mut *self.store, ())
            .map_err(|e| self.trap_error(e))? as usize;
        let data = self.exports.memory.data(&*self.store);
        let report = rptr
            .checked_add(rlen)
            .and_then(|end| data.get(rptr..end))
            .ok_or(VmError::Protocol(ProtocolViolation::ReportOutOfBounds))?
            .to_vec();
        Ok((status, report))
    }

    fn trap_error(&self, e: wasmtime::Error) -> VmError {
        VmError::from_trap(&e, self.store.data().deadline.aborted())
    }
}

/// Bytes of `value`'s compact JSON text, counted without building it.
fn json_len(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The `cm_init` input every VM is initialised with: the built-in prelude, every bridge method,
/// `limits.memory_limit_bytes` (re-applied per run by `cm_start`) and [`JS_STACK_LIMIT_BYTES`].
/// Its bytes are part of the pre-initialised module's cache key.
pub(crate) fn init_input(limits: &VmLimits) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&InitInput {
        prelude: Cow::Borrowed(PRELUDE),
        methods: BridgeMethod::ALL.to_vec(),
        memory_limit_bytes: limits.memory_limit_bytes,
        max_stack_bytes: JS_STACK_LIMIT_BYTES,
    })
}

/// An export that a pre-initialised module no longer has: `None` when absent, an error when
/// present with another type.
fn optional_func<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
    instance: &Instance,
    store: &mut Store<HostState>,
    name: &str,
) -> wasmtime::Result<Option<TypedFunc<P, R>>> {
    match instance.get_func(&mut *store, name) {
        Some(f) => Ok(Some(f.typed(&*store)?)),
        None => Ok(None),
    }
}

/// Takes the post-initialisation image: memory of a fresh instance of the pre-initialised guest
/// (a read; no guest code runs).
pub(crate) fn take_image(template: &VmTemplate) -> Result<Image, RuntimeError> {
    let mut vm = Vm::instantiate(template, &VmLimits::default())?;
    vm.image()
        .map_err(|e| RuntimeError::setup("cannot take the VM image", e))
}
