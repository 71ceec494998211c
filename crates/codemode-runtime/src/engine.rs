//! The process-wide [`Runtime`]: engine, compiled guest, `InstancePre`, epoch ticker and the
//! post-initialisation image.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, Linker, OptLevel, PoolingAllocationConfig,
};

use crate::error::{RuntimeError, VmError};
use crate::limits::{VmLimits, MAX_WASM_STACK};
use crate::snapshot::{Image, Snapshot};
use crate::vm::{self, HostState, Vm, VmTemplate, WallClock};

/// The guest module (`codemode_guest.wasm`) embedded at build time.
pub const GUEST_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/codemode_guest.wasm"));

/// Lowercase hex SHA-256 of [`GUEST_WASM`]; snapshots record it and refuse a different guest.
pub const GUEST_SHA256: &str = include_str!(concat!(env!("OUT_DIR"), "/codemode_guest.sha256"));

/// Interval of the epoch ticker; the hard deadline is detected within one tick.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// How a [`Runtime`] makes a fresh VM (measured in `benches/runtime.rs`, docs/benchmarks.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshVm {
    /// Instantiate and copy the post-initialisation image into linear memory (the default).
    Image,
    /// Instantiate and initialise QuickJS from scratch (`_initialize` + `cm_init`).
    Init,
}

/// Options for [`Runtime::new`].
#[derive(Clone)]
pub struct RuntimeOptions {
    /// Directory of the compiled-module cache; `None` compiles in memory every time.
    /// Default: `$CODEMODE_CACHE_DIR`, `$XDG_CACHE_HOME/codemode` or `~/.cache/codemode`.
    pub cache_dir: Option<PathBuf>,
    /// Pool slots: the most VMs alive at once in this process (default 128). Instantiating past
    /// it fails with [`RuntimeError::Instantiate`] (and [`VmError::Unavailable`] on restore).
    pub max_live_vms: u32,
    /// The guest's wall clock (`Date.now()`); default the system clock.
    pub wall_clock: Option<WallClock>,
    /// Bytes the guest's WASI random source cycles through; default the OS generator.
    pub deterministic_random: Option<Vec<u8>>,
    /// How fresh VMs are made.
    pub fresh_vm: FreshVm,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            cache_dir: Some(crate::cache::default_cache_dir()),
            max_live_vms: 128,
            wall_clock: None,
            deterministic_random: None,
            fresh_vm: FreshVm::Image,
        }
    }
}

/// The process-wide host of the guest. Cheap to share (`Arc`); all methods take `&self`.
pub struct Runtime {
    template: VmTemplate,
    fresh_vm: FreshVm,
    ticker_stop: Arc<AtomicBool>,
    setup_time: Duration,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("guest_sha256", &GUEST_SHA256)
            .field("setup_time", &self.setup_time)
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

    /// Creates a runtime: configures the engine, loads or compiles the guest (disk cache), starts
    /// the epoch ticker and takes the post-initialisation image. Takes ~0.5–1 s when compiling,
    /// a few ms with a warm cache.
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

        let module = crate::cache::load_or_compile(
            &engine,
            GUEST_WASM,
            GUEST_SHA256.trim(),
            options.cache_dir.as_deref(),
        )
        .map_err(|e| RuntimeError::setup("cannot compile the guest", e))?;

        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut HostState| &mut s.wasi)
            .map_err(|e| RuntimeError::setup("cannot link WASI", e))?;
        vm::add_codemode_imports(&mut linker)
            .map_err(|e| RuntimeError::setup("cannot link the codemode imports", e))?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| RuntimeError::setup("cannot link the guest", e))?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = ticker_stop.clone();
            std::thread::Builder::new()
                .name("codemode-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| RuntimeError::setup("cannot start the epoch ticker", e))?;
        }

        let mut guest_sha256 = [0u8; 32];
        let hex = GUEST_SHA256.trim();
        for (i, byte) in guest_sha256.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2).unwrap_or("00"), 16).unwrap_or(0);
        }
        let mut template = VmTemplate {
            engine,
            pre,
            guest_sha256,
            image: Arc::new(Image::default()),
            wall_clock: options.wall_clock,
            deterministic_random: options.deterministic_random,
        };
        // Stop the ticker if the image cannot be taken (the runtime is never built then).
        let image = vm::take_image(&template).inspect_err(|_| {
            ticker_stop.store(true, Ordering::Relaxed);
        })?;
        template.image = Arc::new(image);
        Ok(Arc::new(Runtime {
            template,
            fresh_vm: options.fresh_vm,
            ticker_stop,
            setup_time: started.elapsed(),
        }))
    }

    /// How long [`Runtime::new`] took (compile or cache load, plus the image).
    pub fn setup_time(&self) -> Duration {
        self.setup_time
    }

    /// Bytes of linear memory in the post-initialisation image.
    pub fn image_bytes(&self) -> usize {
        self.template.image.data.len()
    }

    /// A fresh VM, made as [`RuntimeOptions::fresh_vm`] says, ready for [`Vm::start`].
    pub fn fresh_vm(self: &Arc<Self>, limits: &VmLimits) -> Result<Vm, RuntimeError> {
        self.fresh_vm_with(limits, self.fresh_vm)
    }

    /// A fresh VM made the given way (both ways give the same guest state; for benchmarks).
    pub fn fresh_vm_with(
        self: &Arc<Self>,
        limits: &VmLimits,
        how: FreshVm,
    ) -> Result<Vm, RuntimeError> {
        match how {
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

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
