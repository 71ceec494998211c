//! Parked VMs kept alive: the VM a run parked from, held by its runtime after the snapshot was
//! taken, so that the `wait` that resumes the run in this process continues that VM instead of
//! restoring the snapshot into another one (docs/architecture.md, "Parked VMs kept alive").
//!
//! The snapshot is still taken and kept exactly as before (its limits are checked, a durable
//! store gets it, and a restore anywhere else uses it); the live VM is only a faster way to the
//! same state. It is keyed by the snapshot it was captured from ([`LiveVm`], cloned with the
//! snapshot): restoring that snapshot takes the VM (once; a second restore of the same snapshot
//! restores from its bytes), and when the last clone of the snapshot is dropped (the run ended,
//! expired or was dropped) the VM is dropped too. At most `max` are kept, the oldest dropped
//! first, and a full pool drops them before it refuses a new VM. Only a VM whose memory has not
//! grown past the image is kept, so each holds at most the image's pages.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::{Vm, VmTemplate};
use crate::limits::VmLimits;
use crate::snapshot::{LiveVm, LiveVmKey, Snapshot};

/// The parked VMs of one runtime, oldest first.
pub(crate) struct ParkedVms {
    kept: Mutex<VecDeque<Kept>>,
    max: usize,
    next_key: AtomicU64,
    resumed: AtomicU64,
}

/// One kept VM: the key of its snapshot, the VM (without its way back to the warm set, which
/// would make a reference cycle through the runtime), and the limits it was made with.
struct Kept {
    key: u64,
    vm: Vm,
    limits: VmLimits,
}

impl ParkedVms {
    /// An empty set keeping at most `max` VMs (0: none).
    pub(crate) fn new(max: usize) -> ParkedVms {
        ParkedVms {
            kept: Mutex::new(VecDeque::new()),
            max,
            next_key: AtomicU64::new(1),
            resumed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// VMs kept now.
    pub(crate) fn kept(&self) -> usize {
        self.lock().len()
    }

    /// How many restores continued a kept VM since the runtime started.
    pub(crate) fn resumed(&self) -> u64 {
        self.resumed.load(Ordering::Relaxed)
    }

    /// Keeps `vm`, captured as `snapshot` under `limits`, and marks the snapshot with its key.
    /// Drops the oldest kept VM past `max` (outside the lock: dropping a store returns its pool
    /// slot).
    pub(super) fn keep(self: &Arc<Self>, mut vm: Vm, snapshot: &mut Snapshot, limits: &VmLimits) {
        if self.max == 0 {
            return;
        }
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        vm.warm = None;
        let set: Weak<ParkedVms> = Arc::downgrade(self);
        snapshot.live = LiveVm(Some(Arc::new(LiveVmKey {
            key,
            forget: Box::new(move |key| {
                if let Some(set) = set.upgrade() {
                    set.forget(key);
                }
            }),
        })));
        let evicted = {
            let mut kept = self.lock();
            kept.push_back(Kept {
                key,
                vm,
                limits: *limits,
            });
            (kept.len() > self.max).then(|| kept.pop_front())
        };
        drop(evicted);
    }

    /// The VM kept for `snapshot`, ready to continue under `limits`: new host state, the
    /// snapshot's pending requests and counters, and its way back to the warm set. `None` when
    /// none is kept for it, or it was made with other limits (then it is dropped).
    pub(super) fn take(
        &self,
        template: &VmTemplate,
        snapshot: &Snapshot,
        limits: &VmLimits,
    ) -> Option<Vm> {
        let key = snapshot.live.key()?;
        let kept = {
            let mut kept = self.lock();
            let at = kept.iter().position(|k| k.key == key)?;
            kept.remove(at)?
        };
        if kept.limits != *limits || !Arc::ptr_eq(&kept.vm.image, &template.image) {
            return None;
        }
        let mut vm = kept.vm;
        *vm.store.data_mut() = Vm::host_state(template, limits);
        vm.pending = snapshot.pending.clone();
        vm.counters = snapshot.counters.clone();
        vm.output_at_stop.clear();
        vm.refusals.clear();
        vm.warm = Some(template.warm.clone());
        self.resumed.fetch_add(1, Ordering::Relaxed);
        Some(vm)
    }

    /// Drops the oldest kept VM, freeing its pool slot; `false` when none is kept.
    pub(super) fn evict_oldest(&self) -> bool {
        let oldest = self.lock().pop_front();
        oldest.is_some()
    }

    fn forget(&self, key: u64) {
        let gone = {
            let mut kept = self.lock();
            kept.iter()
                .position(|k| k.key == key)
                .and_then(|at| kept.remove(at))
        };
        drop(gone);
    }
}

impl Vm {
    /// Hands this VM to its runtime to keep alive after a run parked: `snapshot` must be the
    /// snapshot just taken of it, with nothing run since, and `limits` the limits it was made
    /// with. A later [`crate::Runtime::restore`] of `snapshot` (or a clone) in this process then
    /// continues this VM in place, once, instead of restoring into another VM; the snapshot
    /// itself is unchanged and restores as before anywhere else (docs/architecture.md, "Parked
    /// VMs kept alive"). The VM is dropped instead when it cannot be kept: the runtime keeps
    /// none ([`crate::RuntimeOptions::parked_vms`] 0), the VM is poisoned or not of the
    /// pre-initialised guest, its memory grew past the image, or `snapshot` visibly does not
    /// describe it (other guest, memory size, stack pointer or pending requests).
    pub fn keep_parked(mut self, snapshot: &mut Snapshot, limits: &VmLimits) {
        let Some(warm) = self.warm.clone() else {
            return;
        };
        if !self.can_keep_parked(snapshot) {
            return;
        }
        warm.parked.keep(self, snapshot, limits);
    }

    fn can_keep_parked(&mut self, snapshot: &Snapshot) -> bool {
        let memory = self.exports.memory;
        let pages = memory.size(&*self.store);
        let stack_pointer = self.exports.stack_pointer.get(&mut *self.store).i32();
        self.poisoned.is_none()
            && stack_pointer == Some(snapshot.stack_pointer as i32)
            && !self.image.data.is_empty()
            && pages == self.image.pages
            && snapshot.pages == pages
            && snapshot.guest_sha256 == self.guest_sha256
            && snapshot.image_sha256 == self.image.sha256
            && snapshot.base == self.base
            && snapshot.pending == self.pending
            && snapshot.counters == self.counters
            && snapshot.live.key().is_none()
    }
}
