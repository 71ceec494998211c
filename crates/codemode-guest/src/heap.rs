//! The QuickJS heap limit, enforced by the allocator (docs/contract/lifecycle.md#s5-7 "Memory").
//!
//! QuickJS's own limit (`JS_SetMemoryLimit`) refuses an allocation before it reaches the
//! allocator, and when the heap is full the `InternalError: out of memory` object cannot be
//! built either: QuickJS then throws `null`, so a program that fills the heap with small objects
//! ended as `Uncaught null` instead of the catchable QuickJS error the spec asks for. Here the
//! QuickJS limit stays off and [`HeapAllocator`] enforces `memoryLimitBytes` itself: the first
//! allocation over the limit fails (QuickJS raises its out-of-memory error), and until usage is
//! back under the limit further allocations may use a [`RESERVE_BYTES`] reserve, which is what
//! building that error object and its backtrace needs. Past the reserve every allocation fails.

use std::cell::Cell;

use rquickjs::allocator::{Allocator, RustAllocator};

/// Bytes past `memoryLimitBytes` the heap may use while QuickJS reports running out of memory.
/// Far below the linear-memory headroom the host grants above the heap limit (docs/contract/decisions.md#d10).
pub(crate) const RESERVE_BYTES: usize = 256 * 1024;

/// Per-allocation bookkeeping of [`RustAllocator`] (its header), counted as used.
const HEADER_BYTES: usize = 8;

thread_local! {
    /// Bytes held by QuickJS allocations (usable sizes plus headers).
    static USED: Cell<usize> = const { Cell::new(0) };
    /// `memoryLimitBytes`; 0 means no limit (only while the runtime is being created).
    static LIMIT: Cell<usize> = const { Cell::new(0) };
    /// An allocation failed over the limit and usage has not dropped back under it since.
    static OUT_OF_MEMORY: Cell<bool> = const { Cell::new(false) };
    /// Allocations refused so far (never reset): the JSON adapter compares it before and after
    /// stringifying, so an out-of-memory failure is never mistaken for an unstringifiable value.
    static REFUSED: Cell<u64> = const { Cell::new(0) };
    /// [`REFUSED`] when the current step started ([`start_step`]).
    static REFUSED_AT_STEP: Cell<u64> = const { Cell::new(0) };
}

/// Starts a step (`cm_start`, `cm_deliver`) for [`refused_this_step`].
pub(crate) fn start_step() {
    REFUSED_AT_STEP.with(|r| r.set(refused_allocations()));
}

/// Whether the limit (or linear memory) refused an allocation since the last [`start_step`].
///
/// When QuickJS cannot allocate its `InternalError: out of memory` object it throws `null`
/// instead (`JS_ThrowError2`), and the reserve does not always prevent that: `Map` and `Set`
/// swallow a failed hash-table resize (`map_hash_resize`, "no reporting of memory allocation
/// failure") and retry it on every insertion, so `while (true) m.set(i++, {i})` runs on inside
/// the reserve, and a collection during the error's construction can close the reserve under
/// it. The guest reports an uncaught `null` in a step with a refusal as that error
/// (docs/guest-abi.md, "Threat model: the guest layer").
pub(crate) fn refused_this_step() -> bool {
    refused_allocations() != REFUSED_AT_STEP.with(Cell::get)
}

/// How many allocations the limit has refused since the guest started (see [`REFUSED`]).
pub(crate) fn refused_allocations() -> u64 {
    REFUSED.with(Cell::get)
}

/// Sets the heap limit (`memoryLimitBytes`, bytes; 0 = none) for the allocations that follow.
pub(crate) fn set_limit(bytes: usize) {
    LIMIT.with(|l| l.set(bytes));
    OUT_OF_MEMORY.with(|o| o.set(false));
}

/// Whether `extra` more bytes may be allocated now (see the module docs).
fn admit(extra: usize) -> bool {
    let limit = LIMIT.with(Cell::get);
    if limit == 0 {
        return true;
    }
    let after = USED.with(Cell::get).saturating_add(extra);
    OUT_OF_MEMORY.with(|oom| {
        let admitted = if after <= limit {
            oom.set(false);
            true
        } else if oom.get() {
            after <= limit.saturating_add(RESERVE_BYTES)
        } else {
            oom.set(true);
            false
        };
        if !admitted {
            count_refusal();
        }
        admitted
    })
}

/// Counts one refused allocation (over the limit, or linear memory could not grow).
fn count_refusal() {
    REFUSED.with(|r| r.set(r.get().wrapping_add(1)));
}

fn add(bytes: usize) {
    USED.with(|u| u.set(u.get().saturating_add(bytes)));
}

fn sub(bytes: usize) {
    USED.with(|u| u.set(u.get().saturating_sub(bytes)));
}

/// The bytes an allocation of `size` requested bytes occupies (rounded to 8, plus the header).
fn footprint(size: usize) -> usize {
    size.div_ceil(8)
        .saturating_mul(8)
        .saturating_add(HEADER_BYTES)
}

/// QuickJS's allocator: Rust's global allocator ([`RustAllocator`]) under the heap limit.
pub(crate) struct HeapAllocator;

// SAFETY: every pointer comes from `RustAllocator` and goes back to it unchanged; null is
// returned only where `RustAllocator` would return null or the limit refuses the allocation.
unsafe impl Allocator for HeapAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !admit(footprint(size)) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if ptr.is_null() {
            count_refusal();
        } else {
            add(footprint(size));
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if total == 0 || !admit(footprint(total)) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if ptr.is_null() {
            count_refusal();
        } else {
            add(footprint(total));
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: QuickJS hands back a live pointer from this allocator, which got it from
        // `RustAllocator` unchanged (the trait's contract, passed through).
        sub(unsafe { RustAllocator::usable_size(ptr) }.saturating_add(HEADER_BYTES));
        // SAFETY: as above; it is freed exactly once, here.
        unsafe { RustAllocator.dealloc(ptr) };
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: `ptr` is non-null and live, from this allocator (the trait's contract).
        let old = unsafe { RustAllocator::usable_size(ptr) }.saturating_add(HEADER_BYTES);
        let new = footprint(new_size);
        if new > old && !admit(new - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; QuickJS uses only the returned pointer afterwards.
        let moved = unsafe { RustAllocator.realloc(ptr, new_size) };
        if moved.is_null() {
            count_refusal();
        } else {
            sub(old);
            add(new);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: a live pointer from this allocator, i.e. from `RustAllocator` (the contract).
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
