//! The wasmtime host of the codemode guest (QuickJS compiled to wasm32-wasip1).
//!
//! - [`Runtime`]: one per process ([`Runtime::global`]). It owns the wasmtime [`wasmtime::Engine`]
//!   (epoch interruption, pooling allocator with copy-on-write memory init, raised
//!   `max_wasm_stack`), the compiled guest (cached on disk, keyed by the guest's SHA-256 and the
//!   wasmtime version), an `InstancePre`, the epoch ticker, and the post-initialisation image every
//!   fresh VM starts from. A VM dropped clean goes back to the runtime's warm set and is reset in
//!   place for the next run instead of instantiated again (docs/architecture.md, "Warm VMs";
//!   [`RuntimeOptions::warm_vms`], [`Runtime::warm_reuses`]).
//! - [`Vm`]: one guest instance. [`Vm::start`] evaluates a cell, [`Vm::deliver`] settles one
//!   bridge request; both return a [`codemode_bridge::GuestReport`]. Each call runs under a
//!   [`LegBudget`]: QuickJS's interrupt handler stops the guest at the soft deadline and a wasmtime
//!   epoch deadline at most [`HARD_DEADLINE_GRACE`] later traps it (docs/contract/decisions.md#d6).
//! - [`Snapshot`]: the whole VM state (the pages of linear memory that differ from the image,
//!   `__stack_pointer`, the pending-request table) in a versioned, zstd-compressed byte format
//!   that records the guest's hash.
//!   [`Runtime::restore`] continues it in a fresh instance, as often as needed.
//! - [`run_leg`]: runs guest work on a worker of the [`LegPool`] (threads with a stack large
//!   enough for `max_wasm_stack`, reused across legs), so guest execution never blocks the async
//!   runtime's workers; on a thread of [`with_legs_in_place`] (a host driving one run at a time
//!   from that thread) it runs the leg in place instead.
//! - [`ProcessGroup`]: kills a child process's group (command hooks, stdio MCP servers) without
//!   ever signalling a group that is no longer the child's.
//!
//! Errors never panic the host: traps, protocol violations and panics in host code become
//! [`VmError`] values that the facade maps to `failed` results (docs/contract/decisions.md#d10).
//!
//! Modules depend in one direction: `engine` → `vm` → `imports` (the guest's imports and the
//! per-store host state), `snapshot`, `budget`, `worker` → `limits`, `error` (and `cache`, used
//! by `engine` only); `budget` → `ticker` (the epoch ticker, which `engine` starts);
//! `process_group` stands alone.

mod budget;
mod cache;
mod engine;
mod error;
mod imports;
mod limits;
mod process_group;
mod snapshot;
mod ticker;
mod vm;
mod worker;

pub use budget::{AbortHandle, LegBudget, HARD_DEADLINE_GRACE};
pub use engine::{FreshVm, GuestSetup, Runtime, RuntimeOptions, GUEST_SHA256, GUEST_WASM};
pub use error::{
    GuestTrap, Poison, ProtocolViolation, RuntimeError, SnapshotError, VmError, VmUnavailable,
};
pub use imports::WallClock;
pub use limits::{
    argument_too_large, delivery_too_large, step_arguments_too_large, VmLimits,
    MAX_REQUEST_ARGUMENT_BYTES, MAX_STEP_ARGUMENT_BYTES, SHADOW_STACK_BYTES,
};
pub use process_group::ProcessGroup;
pub use snapshot::{Snapshot, SnapshotFormat, SNAPSHOT_FORMAT_VERSION, SNAPSHOT_PAGE_BYTES};
pub use vm::Vm;
pub use worker::{
    in_leg, leg_threads, legs_in_place, on_leg_stack, run_leg, run_leg_with, set_leg_threads,
    with_legs_in_place, LegPanic, LegPool, LegPoolConfig, LegThreads, LEG_STACK_KEEP_BYTES,
    LEG_THREAD_NAME, LEG_THREAD_STACK_BYTES,
};
