//! Warm VMs: instances of the pre-initialised guest kept between runs and reset in place to the
//! post-initialisation state, instead of returning their pool slot and instantiating again
//! (docs/architecture.md, "Warm VMs"; measured in docs/benchmarks.md).
//!
//! A new instance gets its linear memory copy-on-write from the module, so every page a run
//! writes costs a page fault, and returning the slot costs an `madvise` of everything touched.
//! A warm VM keeps its pages: the next run's reset reads `/proc/self/pagemap` for the image
//! region, compares the pages the kernel holds as private copies (written at some time) with the
//! image and copies back only the ones that differ, zeroes the top of the shadow stack and releases the
//! rest of the stack with `madvise(MADV_DONTNEED)` (which reads back as zeros: the
//! pre-initialised module has no data below the stack top, crate::engine). The host state (WASI
//! context and its random source, clock, captured stdio, memory backstop, deadline, run
//! context) is made new, as for a new instance. After the reset the VM is byte for byte what a
//! new instance is, from address 0 to the end of memory, with `__stack_pointer` at the stack
//! top.
//!
//! Only a VM that ended clean is kept: not poisoned (a trap, a deadline, an abort, a protocol
//! violation or an overflow discard it), its memory not grown past the image (linear memory
//! cannot shrink) and its shadow stack empty.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::Store;

use super::parked::ParkedVms;
use super::{Exports, Vm, VmTemplate};
use crate::imports::HostState;
use crate::limits::VmLimits;
use crate::snapshot::Image;

/// Bytes under the stack top that a reset zeroes in place: the frames every run uses, kept
/// resident so the next run takes no page faults there. The stack below them is released with
/// `madvise` (a run that recursed deep pays its faults again next time, not a larger memset).
/// QuickJS keeps most frames on wasm's own stack: a trivial run, a tool call and a
/// `JSON.stringify` each wrote 1–2 pages of the shadow stack here.
const HOT_STACK_BYTES: usize = 16 * 1024;

/// The comparison unit of the image region's reset: the host page size on every target here.
const RESET_PAGE_BYTES: usize = 4096;

/// Idle warm VMs of one runtime, most recently used last (so reuse takes the VM whose pages are
/// most likely still in cache), at most `max_idle` of them.
pub(crate) struct WarmVms {
    idle: Mutex<Vec<Idle>>,
    max_idle: usize,
    reused: AtomicU64,
    /// Parked runs' VMs kept alive (`vm/parked.rs`).
    pub(crate) parked: Arc<ParkedVms>,
}

/// A warm VM between runs: what outlives a [`Vm`].
struct Idle {
    store: Store<HostState>,
    exports: Exports,
    base: u32,
    initial_bytes: usize,
    image: Arc<Image>,
}

impl WarmVms {
    /// An empty set keeping at most `max_idle` idle VMs (0: none; every VM is dropped) and at
    /// most `max_parked` parked runs' VMs.
    pub(crate) fn new(max_idle: usize, max_parked: usize) -> WarmVms {
        WarmVms {
            idle: Mutex::new(Vec::new()),
            max_idle,
            reused: AtomicU64::new(0),
            parked: Arc::new(ParkedVms::new(max_parked)),
        }
    }

    /// How many VMs [`WarmVms::take`] has handed out again since the runtime started.
    pub(crate) fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// Idle VMs held now.
    pub(crate) fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently kept idle VM, reset to the post-initialisation state for a run under
    /// `limits`; `None` when none is idle. A VM whose reset fails is dropped and the next one
    /// tried.
    pub(crate) fn take(&self, template: &VmTemplate, limits: &VmLimits) -> Option<Vm> {
        loop {
            let idle = self.lock().pop()?;
            if let Some(vm) = idle.reset(template, limits) {
                self.reused.fetch_add(1, Ordering::Relaxed);
                return Some(vm);
            }
        }
    }

    /// Keeps `idle` when it can be reset and there is room; drops it otherwise (outside the
    /// lock: dropping a store returns its pool slot, which `madvise`s its memory).
    fn keep(&self, mut idle: Idle) {
        if !idle.at_rest() {
            return;
        }
        let mut slots = self.lock();
        if slots.len() < self.max_idle {
            slots.push(idle);
        }
    }
}

impl Idle {
    /// Whether the VM is as a reset needs it: memory the size of the image (it never shrinks)
    /// and the shadow stack empty.
    fn at_rest(&mut self) -> bool {
        let memory = self.exports.memory;
        let bytes = memory.data_size(&self.store);
        !self.image.data.is_empty()
            && memory.size(&self.store) == self.image.pages
            && bytes == self.initial_bytes
            && bytes.checked_sub(self.base as usize) == Some(self.image.data.len())
            && self.exports.stack_pointer.get(&mut self.store).i32() == Some(self.base as i32)
    }

    /// This VM in the post-initialisation state with new host state for `limits`; `None` when
    /// its memory cannot be reset (it is then dropped).
    fn reset(mut self, template: &VmTemplate, limits: &VmLimits) -> Option<Vm> {
        if !self.at_rest() || !Arc::ptr_eq(&self.image, &template.image) {
            return None;
        }
        let base = self.base as usize;
        let memory = self.exports.memory;
        let data = memory.data_mut(&mut self.store);
        let (stack, region) = data.split_at_mut(base);
        if !release_stack(stack) {
            return None;
        }
        // Pages the kernel still maps as they were instantiated cannot differ; without the page
        // map every page is compared.
        let written = written_pages(region);
        for (i, (page, original)) in region
            .chunks_mut(RESET_PAGE_BYTES)
            .zip(self.image.data.chunks(RESET_PAGE_BYTES))
            .enumerate()
        {
            let maybe = written.as_ref().is_none_or(|w| w.get(i).is_none_or(|&e| e));
            if maybe && page != original {
                page.copy_from_slice(original);
            }
        }
        *self.store.data_mut() = Vm::host_state(template, limits);
        Some(Vm {
            guest_sha256: template.guest_sha256,
            image: self.image,
            initial_bytes: self.initial_bytes,
            store: ManuallyDrop::new(self.store),
            exports: self.exports,
            warm: Some(template.warm.clone()),
            base: self.base,
            pending: Vec::new(),
            counters: Default::default(),
            poisoned: None,
            output_at_stop: Vec::new(),
            refusals: Vec::new(),
            max_delivery_bytes: limits.max_delivery_bytes(),
        })
    }
}

/// Page-map entry bits (Linux, Documentation/admin-guide/mm/pagemap.rst): the page is present,
/// swapped out, or a file page (page cache or shared memory, so not a private copy).
#[cfg(target_os = "linux")]
const PM_PRESENT: u64 = 1 << 63;
#[cfg(target_os = "linux")]
const PM_SWAP: u64 = 1 << 62;
#[cfg(target_os = "linux")]
const PM_FILE: u64 = 1 << 61;

/// For each [`RESET_PAGE_BYTES`] page of `region`, whether it may have been written since it was
/// mapped: a private (anonymous) page in memory or a swapped-out one. A page that is not in
/// memory reads as what it was mapped with (the module's data, copy-on-write, or zeros), and a
/// present file page is the module's own, unwritten: a write to a private mapping always makes
/// an anonymous copy. A page the kernel maps to the shared zero page counts as written (it is
/// compared, never skipped wrongly).
///
/// The page just below `region` must have been written by the caller (the hot stack, zeroed by
/// [`release_stack`]): its entry is read with the region's and must show a private copy, so a
/// page map that answers but does not tell the truth (an emulated `/proc`) turns the check off
/// instead of skipping pages. `None` (compare every page) then, and when the page map cannot be
/// read, the host page size is not [`RESET_PAGE_BYTES`], or the host is not Linux.
#[cfg(target_os = "linux")]
fn written_pages(region: &[u8]) -> Option<Vec<bool>> {
    use std::fs::File;
    use std::os::unix::fs::FileExt;
    use std::sync::OnceLock;

    /// `/proc/self/pagemap`, opened on first use; `None` where it cannot be opened.
    static PAGEMAP: OnceLock<Option<File>> = OnceLock::new();

    let start = region.as_ptr() as usize;
    if !start.is_multiple_of(RESET_PAGE_BYTES)
        || start < RESET_PAGE_BYTES
        || rustix::param::page_size() != RESET_PAGE_BYTES
    {
        return None;
    }
    let file = PAGEMAP
        .get_or_init(|| File::open("/proc/self/pagemap").ok())
        .as_ref()?;
    // The written page below the region, then the region's pages.
    let pages = 1 + region.len().div_ceil(RESET_PAGE_BYTES);
    let mut entries = vec![0u8; pages * 8];
    let first = (start / RESET_PAGE_BYTES - 1) * 8;
    file.read_exact_at(&mut entries, first as u64).ok()?;
    // Entries are in the host's byte order.
    let mut written = entries.chunks_exact(8).map(|e| {
        let e = u64::from_ne_bytes(e.try_into().unwrap_or([0; 8]));
        (e & PM_PRESENT != 0 && e & PM_FILE == 0) || e & PM_SWAP != 0
    });
    if written.next() != Some(true) {
        return None;
    }
    Some(written.collect())
}

/// Without Linux's page map every page is compared.
#[cfg(not(target_os = "linux"))]
fn written_pages(_region: &[u8]) -> Option<Vec<bool>> {
    None
}

/// Sets the shadow stack (linear memory below the stack top) to zeros, its content in a new
/// instance: the top [`HOT_STACK_BYTES`] by writing, the rest by [`release_cold_stack`]. `false`
/// when that fails (the VM is then not reused).
fn release_stack(stack: &mut [u8]) -> bool {
    let hot_from = stack.len().saturating_sub(HOT_STACK_BYTES);
    let (cold, hot) = stack.split_at_mut(hot_from);
    hot.fill(0);
    release_cold_stack(cold)
}

/// Zeroes `cold`: `madvise(MADV_DONTNEED)` over its whole host pages, which on Linux drops them so
/// they read back as zeros (the stack lies in the anonymous part of the pool slot; the
/// pre-initialised module has no data there), and writes the rest. `false` when the kernel
/// refuses.
#[cfg(target_os = "linux")]
fn release_cold_stack(cold: &mut [u8]) -> bool {
    let start = cold.as_mut_ptr();
    if !(start as usize).is_multiple_of(RESET_PAGE_BYTES) {
        cold.fill(0);
        return true;
    }
    let whole = cold.len() / RESET_PAGE_BYTES * RESET_PAGE_BYTES;
    cold[whole..].fill(0);
    if whole == 0 {
        return true;
    }
    // SAFETY: `start .. start + whole` lies inside `cold`, memory this function borrows
    // exclusively; MADV_DONTNEED on a private mapping only replaces its contents with zeros (or
    // the mapped file's, which the pre-initialised module does not have below the stack top),
    // which is what the borrow is for.
    let rc = unsafe { libc::madvise(start.cast(), whole, libc::MADV_DONTNEED) };
    rc == 0
}

/// Elsewhere `MADV_DONTNEED` is only advice that may keep the contents: the stack is written.
#[cfg(not(target_os = "linux"))]
fn release_cold_stack(cold: &mut [u8]) -> bool {
    cold.fill(0);
    true
}

impl Drop for Vm {
    /// Hands a clean VM of the pre-initialised guest to its runtime's warm set; drops the rest.
    fn drop(&mut self) {
        // SAFETY: `store` is not touched again: this is the VM's last use.
        let store = unsafe { ManuallyDrop::take(&mut self.store) };
        let Some(warm) = self.warm.take() else {
            return;
        };
        if self.poisoned.is_some() {
            return;
        }
        warm.keep(Idle {
            store,
            exports: self.exports.clone(),
            base: self.base,
            initial_bytes: self.initial_bytes,
            image: self.image.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{AbortHandle, LegBudget};
    use crate::engine::{Runtime, RuntimeOptions};

    /// Linear memory of `vm` from address 0 and its `__stack_pointer`.
    fn whole_memory(vm: &mut Vm) -> (Vec<u8>, i32) {
        let memory = vm.exports.memory.data(&*vm.store).to_vec();
        let sp = vm.exports.stack_pointer.get(&mut *vm.store).i32().unwrap();
        (memory, sp)
    }

    /// The isolation a reset promises, at the byte level: after a run that wrote the heap, the
    /// prototypes, the globals and the shadow stack well below its hot top (deep recursion),
    /// the reused VM's whole linear memory equals a new instance's.
    #[test]
    fn a_reset_vm_is_byte_for_byte_a_new_instance() {
        let rt = Runtime::new(RuntimeOptions {
            max_live_vms: 4,
            ..RuntimeOptions::default()
        })
        .unwrap();
        let template = rt.template();
        let limits = VmLimits::default();
        let mut new = Vm::instantiate(template, &limits).unwrap();
        let (expected, expected_sp) = whole_memory(&mut new);
        assert_eq!(expected_sp as u32, new.base);
        assert!(
            expected[..new.base as usize].iter().all(|&b| b == 0),
            "the pre-initialised module has no data below the stack top"
        );
        let budget = LegBudget::new(std::time::Duration::from_secs(10), AbortHandle::new());
        let mut used = Vm::instantiate(template, &limits).unwrap();
        let report = used
            .start(
                "globalThis.kept = 'x'.repeat(5000); Array.prototype.evil = 1; \
                 const deep = (n) => n === 0 ? 0 : 1 + deep(n - 1); \
                 return [deep(3000), [1, 2].map((x) => x * 2)]",
                r#"{"tools":[]}"#,
                &limits,
                &budget,
            )
            .unwrap();
        assert_eq!(
            report.state,
            codemode_bridge::GuestState::Completed {
                value: serde_json::json!([3000, [2, 4]])
            }
        );
        let (dirty, _) = whole_memory(&mut used);
        let stack_pages_written = dirty[..used.base as usize]
            .chunks(RESET_PAGE_BYTES)
            .filter(|page| page.iter().any(|&b| b != 0))
            .count();
        assert!(
            stack_pages_written * RESET_PAGE_BYTES > HOT_STACK_BYTES,
            "the run reaches below the hot stack ({stack_pages_written} pages)"
        );
        assert_ne!(dirty, expected);
        drop(used);
        assert_eq!(template.warm.idle(), 1);
        let mut reused = Vm::instantiate(template, &limits).unwrap();
        assert_eq!((template.warm.reused(), template.warm.idle()), (1, 0));
        #[cfg(target_os = "linux")]
        {
            // The reset above went by the page map (the path this test is for).
            let data = reused.exports.memory.data(&*reused.store);
            assert!(written_pages(&data[reused.base as usize..]).is_some());
        }
        let (memory, sp) = whole_memory(&mut reused);
        assert_eq!(sp, expected_sp);
        assert_eq!(memory.len(), expected.len());
        let differing = memory
            .chunks(RESET_PAGE_BYTES)
            .zip(expected.chunks(RESET_PAGE_BYTES))
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0);
    }

    /// The page map tells a written page from an untouched one: of four fresh anonymous pages
    /// (after a written one standing for the hot stack), the written one is flagged, the
    /// never-touched ones are not, and one only read (the shared zero page) is flagged too, so
    /// it is compared rather than skipped. Without the written page below, the map is not
    /// trusted.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_page_map_flags_written_pages_only() {
        let len = 5 * RESET_PAGE_BYTES;
        // SAFETY: a new private anonymous mapping, unmapped below; nothing else refers to it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        // SAFETY: the mapping is `len` bytes, readable and writable, and only used here.
        let mapping = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) };
        let (below, region) = mapping.split_at_mut(RESET_PAGE_BYTES);
        assert_eq!(
            written_pages(region),
            None,
            "the page below is not written yet"
        );
        below.fill(0);
        region[RESET_PAGE_BYTES + 7] = 1;
        let read = std::hint::black_box(region[3 * RESET_PAGE_BYTES]);
        assert_eq!(read, 0);
        let written = written_pages(region).expect("the page map is readable here");
        assert_eq!(written, [false, true, false, true]);
        // SAFETY: unmaps the mapping made above, no longer borrowed.
        assert_eq!(unsafe { libc::munmap(ptr, len) }, 0);
    }

    #[test]
    fn a_released_stack_reads_zero_and_keeps_its_length() {
        // A page-aligned buffer standing in for linear memory below the stack top.
        let layout = std::alloc::Layout::from_size_align(5 * 65536, 65536).unwrap();
        // SAFETY: the layout has a non-zero size; the buffer is freed below with it.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        // SAFETY: `ptr` is a live allocation of `layout.size()` bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(ptr, layout.size()) };
        buf.fill(0xa5);
        assert!(release_stack(&mut buf[..3 * 65536 + 100]));
        assert!(buf[..3 * 65536 + 100].iter().all(|&b| b == 0));
        assert!(buf[3 * 65536 + 100..].iter().all(|&b| b == 0xa5));
        // SAFETY: allocated above with the same layout.
        unsafe { std::alloc::dealloc(ptr, layout) };
    }
}
