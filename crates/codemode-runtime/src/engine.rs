//! The process-wide [`Runtime`]: engine, the pre-initialised guest (wizer, cached compiled),
//! its `InstancePre`, the epoch ticker and the post-initialisation image.
//!
//! Pre-initialisation (docs/guest-abi.md, "Pre-initialisation"; the choice in
//! docs/architecture.md, "The pre-initialised guest"): on a module-cache miss, [`preinitialise`]
//! instruments [`GUEST_WASM`] with `wasmtime-wizer`, runs it on this engine and linker through
//! `_initialize` and `cm_init` (exactly what [`FreshVm::Init`] does) and has wizer rewrite the
//! initialised memory and globals into a new module, which is compiled and cached. Every fresh VM
//! is then an instantiation whose memory comes copy-on-write from that module.

use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Engine, Instance, InstanceAllocationStrategy, InstancePre, Linker, Module, OptLevel,
    PoolingAllocationConfig, Store, Val,
};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

use crate::error::{RuntimeError, VmError};
use crate::imports::{self, HostState, WallClock};
use crate::limits::{VmLimits, MAX_WASM_STACK};
use crate::snapshot::{Image, Snapshot};
use crate::ticker::EpochTicker;
use crate::vm::{self, RawGuestSource, Vm, VmTemplate, WarmVms};

/// The guest module (`codemode_guest.wasm`) embedded at build time.
pub const GUEST_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/codemode_guest.wasm"));

/// Lowercase hex SHA-256 of [`GUEST_WASM`]; snapshots record it and refuse a different guest.
pub const GUEST_SHA256: &str = include_str!(concat!(env!("OUT_DIR"), "/codemode_guest.sha256"));

/// The wizer step's version, part of the pre-initialised module's cache key with the
/// wasmtime-wizer version and the `cm_init` input: bump it when [`preinitialise`] changes what
/// it runs.
const PREINIT_STEP: &str =
    "wasmtime-wizer 48.0.8, _initialize + cm_init, dead stack zeroed, step 2";

/// How a [`Runtime`] makes a fresh VM (measured in `benches/runtime.rs`, docs/benchmarks.md).
/// All three give the same guest state; snapshots and restores always use the pre-initialised
/// guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshVm {
    /// Instantiate the pre-initialised guest: its linear memory *is* the post-initialisation
    /// image, mapped copy-on-write from the compiled module; no guest code runs and nothing is
    /// copied (the default).
    PreInit,
    /// Instantiate the guest as built and copy the post-initialisation image into its linear
    /// memory (the way before pre-initialisation; the raw guest is compiled on first use).
    Image,
    /// Instantiate the guest as built and initialise QuickJS from scratch (`_initialize` +
    /// `cm_init`; the raw guest is compiled on first use).
    Init,
}

/// How [`Runtime::new`] obtained the pre-initialised guest ([`Runtime::guest_setup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestSetup {
    /// Loaded from the module cache: no wizer step, no compile and no guest code ran.
    Cached,
    /// Pre-initialised with wizer and compiled in this process (no cache directory, a cache miss
    /// or a refused cache file), then stored in the cache when its directory is usable.
    Preinitialised,
}

/// Options for [`Runtime::new`].
#[derive(Clone)]
pub struct RuntimeOptions {
    /// Directory of the compiled-module cache; `None` compiles in memory every time.
    /// Default: `$CODEMODE_CACHE_DIR`, `$XDG_CACHE_HOME/codemode` or `~/.cache/codemode`.
    pub cache_dir: Option<PathBuf>,
    /// Pool slots: the most VMs alive at once in this process (default 128), idle warm VMs
    /// included ([`RuntimeOptions::warm_vms`]; a full pool hands out a warm one instead).
    /// Instantiating past it fails with [`RuntimeError::Instantiate`] (and
    /// [`VmError::Unavailable`] on restore).
    pub max_live_vms: u32,
    /// The guest's wall clock (`Date.now()`); default the system clock.
    pub wall_clock: Option<WallClock>,
    /// Bytes the guest's WASI random source cycles through; default the OS generator.
    pub deterministic_random: Option<Vec<u8>>,
    /// How fresh VMs are made (default [`FreshVm::PreInit`]).
    pub fresh_vm: FreshVm,
    /// Idle VMs kept between runs and reset in place instead of instantiated again (default
    /// 16; 0 turns reuse off). Each holds a pool slot (counted in [`RuntimeOptions::max_live_vms`])
    /// and the pages its runs wrote, about 0.3 MiB (docs/architecture.md, "Warm VMs").
    pub warm_vms: u32,
    /// VMs of parked runs kept alive after their snapshot, so that a `wait` in this process
    /// continues the VM instead of restoring the snapshot (default 8; 0 turns it off; the
    /// oldest go first, and a full pool drops them before refusing a VM). Each holds a pool
    /// slot and the pages its run wrote, at most the image's 576 KiB: only VMs whose memory has
    /// not grown are kept (docs/architecture.md, "Parked VMs kept alive").
    pub parked_vms: u32,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            cache_dir: Some(crate::cache::default_cache_dir()),
            max_live_vms: 128,
            wall_clock: None,
            deterministic_random: None,
            fresh_vm: FreshVm::PreInit,
            warm_vms: 16,
            parked_vms: 8,
        }
    }
}

/// The process-wide host of the guest. Cheap to share (`Arc`); all methods take `&self`.
pub struct Runtime {
    template: VmTemplate,
    fresh_vm: FreshVm,
    ticker: Arc<EpochTicker>,
    setup_time: Duration,
    guest_setup: GuestSetup,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("guest_sha256", &GUEST_SHA256)
            .field("setup_time", &self.setup_time)
            .field("guest_setup", &self.guest_setup)
            .finish()
    }
}

static GLOBAL: OnceLock<Result<Arc<Runtime>, RuntimeError>> = OnceLock::new();

impl Runtime {
    /// The shared runtime of this process, created on first use with default options.
    pub fn global() -> Result<Arc<Runtime>, RuntimeError> {
        GLOBAL
            .get_or_init(|| Runtime::new(RuntimeOptions::default()))
            .clone()
    }

    /// Creates a runtime: configures the engine, starts the epoch ticker, loads the
    /// pre-initialised guest from the disk cache or makes it (`preinitialise`: compile the
    /// instrumented guest, initialise it, rewrite and compile the result, then store it), and
    /// takes the post-initialisation image from a fresh instance. Takes ~1–2 s on a cache miss,
    /// a few ms with a warm cache (docs/benchmarks.md). Errors: [`RuntimeError::Setup`] when
    /// the engine, the guest or its pre-initialisation fails.
    pub fn new(options: RuntimeOptions) -> Result<Arc<Runtime>, RuntimeError> {
        let started = Instant::now();
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.max_wasm_stack(MAX_WASM_STACK);
        // wasmtime-wasi turns on wasmtime's `async` feature, which requires the (unused) async
        // fiber stack to exceed max_wasm_stack; guest calls here are synchronous on leg threads.
        config.async_stack_size(MAX_WASM_STACK + 1024 * 1024);
        config.cranelift_opt_level(OptLevel::Speed);
        config.memory_init_cow(true);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_core_instances(options.max_live_vms)
            .total_memories(options.max_live_vms)
            .total_tables(options.max_live_vms)
            .total_stacks(1)
            .max_memory_size(1 << 32);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(|e| RuntimeError::setup("cannot configure the engine", e))?;

        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut HostState| &mut s.wasi)
            .map_err(|e| RuntimeError::setup("cannot link WASI", e))?;
        imports::add_codemode_imports(&mut linker)
            .map_err(|e| RuntimeError::setup("cannot link the codemode imports", e))?;

        let ticker = EpochTicker::start(engine.clone())
            .map_err(|e| RuntimeError::setup("cannot start the epoch ticker", e))?;

        let mut guest_sha256 = [0u8; 32];
        let hex = GUEST_SHA256.trim();
        for (i, byte) in guest_sha256.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2).unwrap_or("00"), 16).unwrap_or(0);
        }
        // Stop the ticker if the guest or its image cannot be had (the runtime is never built
        // then).
        let stop_ticker = |e: RuntimeError| {
            ticker.stop();
            e
        };
        let init_input = vm::init_input(&VmLimits::default())
            .map_err(|e| stop_ticker(RuntimeError::setup("cannot encode the cm_init input", e)))?;
        let variant = preinit_variant(&init_input);
        let (module, origin) = crate::cache::load_or_build(
            &engine,
            GUEST_SHA256.trim(),
            Some(&variant),
            options.cache_dir.as_deref(),
            || {
                // A first run in a new project is otherwise silent for as long as this takes
                // (README, "Embedding in Rust": the first-run time and the profile lines).
                tracing::info!("{FIRST_COMPILE_NOTICE}");
                preinitialise(&engine, &linker, guest_sha256, &ticker)
            },
        )
        .map_err(|e| stop_ticker(RuntimeError::setup("cannot pre-initialise the guest", e)))?;
        let guest_setup = match origin {
            crate::cache::Origin::Cache => GuestSetup::Cached,
            crate::cache::Origin::Built => {
                tracing::info!(
                    "compiled the guest module in {:.1} s{}",
                    started.elapsed().as_secs_f64(),
                    match &options.cache_dir {
                        Some(dir) => format!(
                            "; later runs load it from the module cache {}",
                            dir.display()
                        ),
                        None => String::new(),
                    }
                );
                GuestSetup::Preinitialised
            }
        };
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| stop_ticker(RuntimeError::setup("cannot link the guest", e)))?;
        let mut template = VmTemplate {
            engine,
            pre,
            raw: Box::new(RawGuest::new(linker, options.cache_dir)),
            guest_sha256,
            image: Arc::new(Image::default()),
            wall_clock: options.wall_clock,
            deterministic_random: options.deterministic_random,
            ticker: ticker.clone(),
            warm: Arc::new(WarmVms::new(
                options.warm_vms as usize,
                options.parked_vms as usize,
            )),
        };
        let image = vm::take_image(&template).map_err(stop_ticker)?;
        template.image = Arc::new(image);
        Ok(Arc::new(Runtime {
            template,
            fresh_vm: options.fresh_vm,
            ticker,
            setup_time: started.elapsed(),
            guest_setup,
        }))
    }

    /// Whether the epoch ticker thread sleeps: no guest call has had an armed deadline for 200 ms
    /// (docs/architecture.md, "An epoch ticker that sleeps"). The next armed call wakes it before
    /// the guest runs.
    pub fn epoch_ticker_sleeping(&self) -> bool {
        self.ticker.sleeping()
    }

    /// Whether [`Runtime::new`] loaded the pre-initialised guest from the module cache or made
    /// it (ran wizer) in this process.
    pub fn guest_setup(&self) -> GuestSetup {
        self.guest_setup
    }

    /// How long [`Runtime::new`] took (pre-initialisation and compile, or the cache load, plus
    /// the image).
    pub fn setup_time(&self) -> Duration {
        self.setup_time
    }

    /// SHA-256 of the post-initialisation image every snapshot is a delta against: two
    /// processes can restore each other's snapshots exactly when this is equal (the same guest
    /// and the same pre-initialised module, e.g. from a shared module cache). A stored run is
    /// sealed to it (docs/snapshot-store.md, "Sealing").
    pub fn image_sha256(&self) -> [u8; 32] {
        self.template.image.sha256
    }

    /// How many times a VM was reused warm (reset in place) instead of instantiated since this
    /// runtime was made ([`RuntimeOptions::warm_vms`]).
    pub fn warm_reuses(&self) -> u64 {
        self.template.warm.reused()
    }

    /// Idle warm VMs held now (at most [`RuntimeOptions::warm_vms`]).
    pub fn warm_idle(&self) -> usize {
        self.template.warm.idle()
    }

    /// How many restores continued a parked run's VM kept alive instead of restoring its
    /// snapshot since this runtime was made ([`RuntimeOptions::parked_vms`]).
    pub fn parked_resumes(&self) -> u64 {
        self.template.warm.parked.resumed()
    }

    /// Parked runs' VMs kept alive now (at most [`RuntimeOptions::parked_vms`]).
    pub fn parked_kept(&self) -> usize {
        self.template.warm.parked.kept()
    }

    /// What this runtime makes VMs from (unit tests of the VM module).
    #[cfg(test)]
    pub(crate) fn template(&self) -> &VmTemplate {
        &self.template
    }

    /// Bytes of linear memory in the post-initialisation image.
    pub fn image_bytes(&self) -> usize {
        self.template.image.data.len()
    }

    /// A fresh VM, made as [`RuntimeOptions::fresh_vm`] says, ready for [`Vm::start`]. With
    /// [`FreshVm::PreInit`] it is an idle warm VM reset to the post-initialisation state when
    /// there is one (docs/architecture.md, "Warm VMs"), else a new instance.
    pub fn fresh_vm(self: &Arc<Self>, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        self.fresh_vm_with(limits, self.fresh_vm)
    }

    /// A fresh VM made the given way (all ways give the same guest state; for benchmarks).
    /// [`FreshVm::Image`] and [`FreshVm::Init`] compile the raw guest on first use (or load it
    /// from the module cache). Errors: [`RuntimeError::Instantiate`] when the pool is full or
    /// initialisation fails, [`RuntimeError::Setup`] when the raw guest cannot be compiled.
    pub fn fresh_vm_with(
        self: &Arc<Self>,
        limits: &VmLimits,
        how: FreshVm,
    ) -> Result<Vm, RuntimeError> {
        match how {
            FreshVm::PreInit => Vm::from_preinit(&self.template, limits),
            FreshVm::Image => Vm::from_image(&self.template, limits),
            FreshVm::Init => Vm::from_init(&self.template, limits),
        }
    }

    /// Continues a [`Snapshot`] in a fresh VM. The snapshot is not consumed: the same one can be
    /// restored again, with different deliveries. Errors: [`VmError::Unavailable`] for a snapshot
    /// of another guest or process, or when no VM can be made; [`VmError::Protocol`] for a
    /// corrupt one.
    pub fn restore(
        self: &Arc<Self>,
        snapshot: &Snapshot,
        limits: &VmLimits,
    ) -> Result<Vm, VmError> {
        Vm::restore(&self.template, snapshot, limits)
    }
}

/// The cache variant naming the pre-initialised module: the wizer step and the SHA-256 of the
/// `cm_init` input (the prelude is the host's, not part of [`GUEST_WASM`]), 16 hex digits.
fn preinit_variant(init_input: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(PREINIT_STEP.as_bytes());
    h.update([0]);
    h.update(init_input);
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("preinit-{hex}")
}

/// The line logged (tracing `info`) before the guest is compiled on a module-cache miss: what is
/// happening and how long it takes, measured on a 2-core machine (README, "Embedding in Rust").
/// The time depends on how wasmtime's cranelift was compiled, which this crate cannot see: an
/// embedding project's `dev` profile builds it unoptimised unless the project sets `opt-level = 2`
/// for `cranelift-codegen` and `regalloc2`.
pub(crate) const FIRST_COMPILE_NOTICE: &str = "compiling the guest module (first run, ~20 s; ~80 s when cranelift is built unoptimised: set opt-level = 2 for [profile.dev.package.cranelift-codegen] and [profile.dev.package.regalloc2]; later runs load it from the module cache)…";

/// The pre-initialised guest: [`GUEST_WASM`] instrumented by wizer (every mutable global and the
/// memory exported), compiled and instantiated with `linker` (WASI and the codemode imports,
/// default clock and random source), initialised by `_initialize` and `cm_init` with
/// [`vm::init_input`] of [`VmLimits::default`] ([`Vm::initialise`]), then rewritten by wizer: the
/// initialised memory becomes data segments and the globals their values; `_initialize` and
/// `cm_init` are no longer exported. Per-run state is still set by `cm_start` (the
/// `Math.random` seed, the run context, the heap limit). Errors: what wizer, the compile or the
/// initialisation reported.
fn preinitialise(
    engine: &Engine,
    linker: &Linker<HostState>,
    guest_sha256: [u8; 32],
    ticker: &Arc<EpochTicker>,
) -> wasmtime::Result<Vec<u8>> {
    let started = Instant::now();
    let mut wizer = Wizer::new();
    wizer.init_func("cm_init");
    let (cx, instrumented) = wizer.instrument(GUEST_WASM)?;
    let module = Module::new(engine, &instrumented)?;
    let pre = linker.instantiate_pre(&module)?;
    let template = VmTemplate {
        engine: engine.clone(),
        pre: pre.clone(),
        raw: Box::new(RawGuest::ready(pre)),
        guest_sha256,
        image: Arc::new(Image::default()),
        wall_clock: None,
        deterministic_random: None,
        warm: Arc::new(WarmVms::new(0, 0)),
        ticker: ticker.clone(),
    };
    let mut vm = Vm::from_init(&template, &VmLimits::default()).map_err(wasmtime::Error::new)?;
    // The shadow stack is dead between calls; zeroed, it adds no data below the stack top, so
    // a warm VM's stack resets to zeros (docs/architecture.md, "Warm VMs").
    vm.clear_dead_stack();
    let (store, instance) = vm.store_and_instance();
    let wasm = ready(wizer.snapshot(&cx, &mut InitialisedGuest { store, instance }))??;
    tracing::debug!(
        "pre-initialised the guest with wizer in {:?} ({} bytes of wasm)",
        started.elapsed(),
        wasm.len()
    );
    Ok(wasm)
}

/// The initialised instance wizer reads globals and memory from (by their instrumented export
/// names, `__wizer_global_<n>` and `__wizer_memory_<n>`).
struct InitialisedGuest<'a> {
    store: &'a mut Store<HostState>,
    instance: Instance,
}

impl InstanceState for InitialisedGuest<'_> {
    /// Panics (as the trait documents) when `name` is not an exported global of a numeric type:
    /// wizer asks only for the globals its own instrumentation exported.
    async fn global_get(&mut self, name: &str, _: ValType) -> SnapshotVal {
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .unwrap_or_else(|| panic!("wizer asked for {name}, which is not an exported global"));
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            _ => panic!("wizer asked for {name}, a reference-typed global"),
        }
    }

    /// Panics (as the trait documents) when `name` is not an exported memory.
    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .unwrap_or_else(|| panic!("wizer asked for {name}, which is not an exported memory"));
        contents(memory.data(&*self.store))
    }
}

/// The output of a future that is ready when first polled (wizer's snapshot over
/// [`InitialisedGuest`], whose reads never wait); an error if it is not.
fn ready<F: Future>(future: F) -> wasmtime::Result<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(wasmtime::format_err!(
            "the wizer snapshot did not complete synchronously"
        )),
    }
}

/// The guest as built (not pre-initialised), linked on first use: [`FreshVm::Init`] and
/// [`FreshVm::Image`] need it, the default path never does.
struct RawGuest {
    linker: Option<Linker<HostState>>,
    cache_dir: Option<PathBuf>,
    pre: Mutex<Option<InstancePre<HostState>>>,
}

impl RawGuest {
    fn new(linker: Linker<HostState>, cache_dir: Option<PathBuf>) -> RawGuest {
        RawGuest {
            linker: Some(linker),
            cache_dir,
            pre: Mutex::new(None),
        }
    }

    /// Already linked (the instrumented guest during [`preinitialise`]).
    fn ready(pre: InstancePre<HostState>) -> RawGuest {
        RawGuest {
            linker: None,
            cache_dir: None,
            pre: Mutex::new(Some(pre)),
        }
    }
}

impl RawGuestSource for RawGuest {
    /// The linked raw guest, compiled (or loaded from the module cache) on the first call.
    /// Errors: [`RuntimeError::Setup`] when it cannot be compiled or linked.
    fn get(&self, engine: &Engine) -> Result<InstancePre<HostState>, RuntimeError> {
        let mut slot = self.pre.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pre) = &*slot {
            return Ok(pre.clone());
        }
        let Some(linker) = &self.linker else {
            return Err(RuntimeError::setup(
                "cannot link the guest",
                wasmtime::format_err!("no linker for the raw guest"),
            ));
        };
        let module = crate::cache::load_or_compile(
            engine,
            GUEST_WASM,
            GUEST_SHA256.trim(),
            self.cache_dir.as_deref(),
        )
        .map_err(|e| RuntimeError::setup("cannot compile the guest", e))?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| RuntimeError::setup("cannot link the guest", e))?;
        *slot = Some(pre.clone());
        Ok(pre)
    }
}
