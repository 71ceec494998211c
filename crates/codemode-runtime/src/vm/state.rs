//! A [`Vm`]'s state in and out of its linear memory: restoring a VM from a [`Snapshot`], taking
//! snapshots (whole, or bounded by size and time for parking) and the post-initialisation
//! [`Image`]. The byte format and the page comparison live in [`crate::snapshot`]
//! (docs/guest-abi.md, "Snapshots").

use std::collections::BTreeMap;
use std::sync::Arc;

use codemode_bridge::{BridgeMethod, BridgeRequest};

use super::{Vm, VmTemplate};
use crate::error::{ProtocolViolation, VmError, VmUnavailable};
use crate::limits::VmLimits;
use crate::snapshot::{self, Image, MemoryAtRest, Snapshot, SnapshotFormat};

/// The inputs of a snapshot capture, taken by [`Vm::capture_start`].
struct CaptureParts<'a> {
    guest_sha256: [u8; 32],
    image: Arc<Image>,
    pending: Vec<BridgeRequest>,
    counters: BTreeMap<BridgeMethod, u64>,
    memory: MemoryAtRest<'a>,
}

impl Vm {
    /// A fresh VM continuing `snapshot`. Errors: [`VmError::Unavailable`] for a snapshot of
    /// another guest or process or when no VM can be made, [`VmError::Protocol`] for a corrupt
    /// one.
    pub(crate) fn restore(
        template: &VmTemplate,
        snapshot: &Snapshot,
        limits: &VmLimits,
    ) -> Result<Vm, VmError> {
        snapshot.check_origin(&template.guest_sha256, &template.image)?;
        // The VM the run parked from, when this runtime still keeps it (vm/parked.rs).
        if let Some(vm) = template.warm.parked.take(template, snapshot, limits) {
            return Ok(vm);
        }
        // A fresh VM of the pre-initialised guest: its memory is the image (copy-on-write), so
        // a dirty-page snapshot writes only the pages the run changed (docs/guest-abi.md,
        // "Snapshots").
        let mut vm = Vm::from_preinit(template, limits)?;
        if snapshot.base != vm.base {
            return Err(VmError::Protocol(ProtocolViolation::LayoutMismatch));
        }
        let image = template.image.clone();
        vm.load_memory(snapshot.pages, snapshot.stack_pointer, |dst| {
            snapshot.restore_memory(dst, &image)
        })?;
        vm.pending = snapshot.pending.clone();
        vm.counters = snapshot.counters.clone();
        Ok(vm)
    }

    /// Grows memory to `pages` and fills `[base, end)` with `fill`; sets the stack pointer.
    /// Errors: [`VmError::Protocol`] when memory is already larger than `pages` (it cannot
    /// shrink) or smaller than the stack, [`VmError::Unavailable`] when it cannot grow.
    pub(super) fn load_memory(
        &mut self,
        pages: u64,
        stack_pointer: u32,
        fill: impl FnOnce(&mut [u8]) -> Result<(), VmError>,
    ) -> Result<(), VmError> {
        let memory = self.exports.memory;
        let current = memory.size(&*self.store);
        if pages < current {
            return Err(VmError::Protocol(ProtocolViolation::SmallerThanFresh));
        }
        if pages > current {
            memory
                .grow(&mut *self.store, pages - current)
                .map_err(|e| {
                    VmError::Unavailable(VmUnavailable::GrowMemory {
                        source: Arc::new(e),
                    })
                })?;
        }
        let base = self.base as usize;
        let data = memory.data_mut(&mut *self.store);
        let region = data
            .get_mut(base..)
            .ok_or(VmError::Protocol(ProtocolViolation::SmallerThanStack))?;
        fill(region)?;
        self.exports
            .stack_pointer
            .set(&mut *self.store, wasmtime::Val::I32(stack_pointer as i32))
            .map_err(|e| {
                VmError::Unavailable(VmUnavailable::StackPointer {
                    source: Arc::new(e),
                })
            })?;
        Ok(())
    }

    /// Linear memory at rest: checks the shadow stack is empty and hands over memory from the
    /// stack top to its end.
    fn at_rest(&mut self) -> Result<MemoryAtRest<'_>, VmError> {
        let sp = self
            .exports
            .stack_pointer
            .get(&mut *self.store)
            .i32()
            .ok_or(VmError::Protocol(ProtocolViolation::StackPointerType))? as u32;
        if sp != self.base {
            return Err(VmError::Protocol(ProtocolViolation::StackNotEmpty));
        }
        let memory = self.exports.memory;
        let pages = memory.size(&*self.store);
        let data = memory.data(&*self.store);
        Ok(MemoryAtRest {
            pages,
            stack_pointer: sp,
            base: self.base,
            data: data.get(self.base as usize..).unwrap_or(&[]),
            initial_bytes: self.initial_bytes,
        })
    }

    /// What every snapshot starts from: checks the VM is usable, then takes the guest's hash,
    /// the image it is a delta against, the pending table and its memory at rest. Errors: as [`Vm::snapshot`].
    fn capture_start(&mut self) -> Result<CaptureParts<'_>, VmError> {
        self.check_usable()?;
        let guest_sha256 = self.guest_sha256;
        let image = self.image.clone();
        let pending = self.pending.clone();
        let counters = self.counters.clone();
        Ok(CaptureParts {
            guest_sha256,
            image,
            pending,
            counters,
            memory: self.at_rest()?,
        })
    }

    /// The post-initialisation image of this (freshly initialised) VM.
    pub(crate) fn image(&mut self) -> Result<Image, VmError> {
        Ok(Image::capture(self.at_rest()?))
    }

    /// Serialises the whole VM state: the pages of linear memory that differ from the image
    /// (zstd), `__stack_pointer`, the pending requests and id counters. Only valid between calls,
    /// which is the only time the host holds the VM. The VM stays usable. Errors:
    /// [`VmError::Poisoned`], [`VmError::Protocol`] when the guest stack is not empty.
    pub fn snapshot(&mut self) -> Result<Snapshot, VmError> {
        self.snapshot_with(SnapshotFormat::default())
    }

    /// [`Vm::snapshot`] in the given format (benchmarks compare them; everything else uses the
    /// default). Errors: as [`Vm::snapshot`], and [`VmError::Protocol`] for an unsupported page
    /// size.
    pub fn snapshot_with(&mut self, format: SnapshotFormat) -> Result<Snapshot, VmError> {
        let parts = self.capture_start()?;
        Snapshot::capture(
            parts.guest_sha256,
            &parts.image,
            parts.memory,
            parts.pending,
            parts.counters,
            format,
        )
    }

    /// [`Vm::snapshot`] within bounds: `Ok(None)` once the stored size would pass
    /// `max_stored_bytes` (compression stops there), [`VmError::Timeout`] once `until` passes
    /// (checked after every 1 MiB of memory compared, and at the end). Parking uses it so a huge
    /// heap at the deadline can neither hold the answer past `until` nor make the host compress
    /// it all only to refuse it (docs/contract/lifecycle.md#s5-6, docs/threat-model.md
    /// "Deadlines").
    pub fn snapshot_bounded(
        &mut self,
        max_stored_bytes: u64,
        until: std::time::Instant,
    ) -> Result<Option<Snapshot>, VmError> {
        let max = usize::try_from(max_stored_bytes).unwrap_or(usize::MAX);
        let parts = self.capture_start()?;
        let snapshot = Snapshot::capture_bounded(
            parts.guest_sha256,
            &parts.image,
            parts.memory,
            parts.pending,
            parts.counters,
            max,
            until,
        )?;
        Ok(snapshot.filter(|s| s.stored_bytes() as u64 <= max_stored_bytes))
    }

    /// An upper bound in bytes on [`Snapshot::stored_bytes`] were a snapshot taken now: memory
    /// from the stack top at zstd's worst-case expansion, the longest page list, the header and
    /// the pending table. Lets callers skip compressing when the bound is already under a limit.
    pub fn snapshot_bound(&self) -> u64 {
        let memory = self.exports.memory.data_size(&*self.store);
        let raw = memory.saturating_sub(self.base as usize);
        let table: usize = self
            .pending
            .iter()
            .map(|p| p.id.len() + p.args.to_string().len() + 64)
            .sum();
        snapshot::stored_bound(raw, table)
    }
}
