//! Guest memory at rest: the post-initialisation [`Image`] every fresh VM starts from, capturing
//! a VM's memory into a [`Snapshot`] (a delta against the image, zstd-compressed) and restoring
//! it, and the snapshot byte format (docs/guest-abi.md, "Snapshots").
//!
//! Works on plain byte slices; [`crate::Vm`] hands it the memory and applies the result.

use std::collections::BTreeMap;
use std::time::Instant;

use codemode_bridge::{BridgeMethod, BridgeRequest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{SnapshotError, VmError};

/// Version of the byte format written by [`Snapshot::to_bytes`]; bumped on any layout change.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 2;

const MAGIC: &[u8; 8] = b"CMSNAP\0\0";
/// magic, version, guest sha256, image sha256, stack pointer, base, pages, data length,
/// host-table length.
const HEADER_BYTES: usize = 8 + 4 + 32 + 32 + 4 + 4 + 8 + 8 + 4;

/// A suspended VM: linear memory from the top of the shadow stack up, stored as a delta (XOR)
/// against the runtime's post-initialisation image and compressed with zstd level 1 (trailing
/// zeros beyond the initial memory dropped), `__stack_pointer`, and the host-side table of pending
/// bridge requests and id counters. The image differs per process (QuickJS seeds itself from the
/// clock while it is made), so a snapshot is restorable in the process that took it, matching the
/// spec's in-process-only run store. Restorable any number of times with
/// [`crate::Runtime::restore`].
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub(crate) guest_sha256: [u8; 32],
    pub(crate) image_sha256: [u8; 32],
    pub(crate) stack_pointer: u32,
    pub(crate) base: u32,
    pub(crate) pages: u64,
    pub(crate) data_len: u64,
    pub(crate) compressed: Vec<u8>,
    pub(crate) pending: Vec<BridgeRequest>,
    pub(crate) counters: BTreeMap<BridgeMethod, u64>,
}

#[derive(Serialize, Deserialize)]
struct HostTable {
    pending: Vec<BridgeRequest>,
    counters: BTreeMap<BridgeMethod, u64>,
}

/// The linear memory a fresh VM starts from: bytes `[base, base + data.len())`, grown to `pages`,
/// with `__stack_pointer` at `stack_pointer`. Taken once per process right after `cm_init`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Image {
    pub(crate) stack_pointer: u32,
    pub(crate) pages: u64,
    pub(crate) data: Vec<u8>,
    /// SHA-256 of `data`: snapshots are stored as a delta against this image and record it.
    pub(crate) sha256: [u8; 32],
}

/// A VM's linear memory between calls, as [`crate::Vm`] hands it over: the page count, the
/// (empty-stack) `__stack_pointer`, the stack top `base`, and the bytes from `base` up to the
/// last one that must be kept ([`used_memory`]).
pub(crate) struct MemoryAtRest<'a> {
    pub(crate) pages: u64,
    pub(crate) stack_pointer: u32,
    pub(crate) base: u32,
    pub(crate) data: &'a [u8],
}

/// `memory[base..end]` where `end` drops trailing zero bytes beyond the module's initial memory
/// (`initial_bytes`; a fresh instance has zeros there). Empty when `base` is past the end.
pub(crate) fn used_memory(memory: &[u8], base: usize, initial_bytes: usize) -> &[u8] {
    let mut end = memory.len();
    while end > initial_bytes.max(base) && memory[end - 1] == 0 {
        end -= 1;
    }
    memory.get(base..end).unwrap_or(&[])
}

/// `data[i] ^= image[i]` over their common length: turns memory into a delta against the image
/// (mostly zeros for an idle run, which zstd stores in almost nothing) and back.
fn xor_with_image(data: &mut [u8], image: &[u8]) {
    let n = data.len().min(image.len());
    for (d, i) in data[..n].iter_mut().zip(&image[..n]) {
        *d ^= *i;
    }
}

/// Bytes of memory XORed and compressed per step of [`compress_delta`].
const CHUNK_BYTES: usize = 1024 * 1024;

/// Compresses `data` XOR `image` (zstd level 1, content checksum and size) one
/// [`CHUNK_BYTES`] chunk at a time. `Ok(None)` once the output passes `max_compressed`;
/// [`VmError::Timeout`] once `until` passes; [`VmError::Protocol`] when zstd fails.
fn compress_delta(
    data: &[u8],
    image: &[u8],
    max_compressed: usize,
    until: Option<Instant>,
) -> Result<Option<Vec<u8>>, VmError> {
    use std::io::Write;
    let fail = |e: std::io::Error| VmError::Protocol(format!("cannot compress snapshot: {e}"));
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).map_err(fail)?;
    encoder.include_checksum(true).map_err(fail)?;
    encoder
        .set_pledged_src_size(Some(data.len() as u64))
        .map_err(fail)?;
    let mut chunk = vec![0u8; CHUNK_BYTES.min(data.len())];
    for (i, part) in data.chunks(CHUNK_BYTES).enumerate() {
        let buf = &mut chunk[..part.len()];
        buf.copy_from_slice(part);
        let start = i * CHUNK_BYTES;
        if start < image.len() {
            let end = (start + part.len()).min(image.len());
            xor_with_image(buf, &image[start..end]);
        }
        encoder.write_all(buf).map_err(fail)?;
        if encoder.get_ref().len() > max_compressed {
            return Ok(None);
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            return Err(VmError::Timeout);
        }
    }
    let out = encoder.finish().map_err(fail)?;
    Ok((out.len() <= max_compressed).then_some(out))
}

impl Image {
    /// The image of memory at rest, padded with zeros to the whole region a restore overwrites
    /// (`pages` × 64 KiB less `base`).
    pub(crate) fn capture(memory: MemoryAtRest<'_>) -> Image {
        let mut data = memory.data.to_vec();
        let full = (memory.pages as usize * 65536).saturating_sub(memory.base as usize);
        data.resize(full, 0);
        let sha256 = Sha256::digest(&data).into();
        Image {
            stack_pointer: memory.stack_pointer,
            pages: memory.pages,
            data,
            sha256,
        }
    }
}

impl Snapshot {
    /// Captures memory at rest as a delta against `image`, compressed with zstd level 1 and its
    /// content checksum (so a corrupted snapshot fails to restore), plus the host's table.
    /// Errors: [`VmError::Protocol`] when compression fails.
    pub(crate) fn capture(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
    ) -> Result<Snapshot, VmError> {
        let Some(compressed) = compress_delta(memory.data, &image.data, usize::MAX, None)? else {
            return Err(VmError::Protocol("cannot compress snapshot".into()));
        };
        Ok(Snapshot::assemble(
            guest_sha256,
            image,
            memory,
            compressed,
            pending,
            counters,
        ))
    }

    /// [`Snapshot::capture`] within bounds: `Ok(None)` as soon as the compressed memory passes
    /// `max_compressed` bytes (the rest is not compressed), [`VmError::Timeout`] once `until`
    /// passes. Memory is XORed and compressed 1 MiB at a time, so the host holds no second copy
    /// of it and a 900 MB heap costs at most one chunk past either bound
    /// (docs/threat-model.md, "Deadlines").
    pub(crate) fn capture_bounded(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
        max_compressed: usize,
        until: Instant,
    ) -> Result<Option<Snapshot>, VmError> {
        let compressed = compress_delta(memory.data, &image.data, max_compressed, Some(until))?;
        Ok(compressed
            .map(|c| Snapshot::assemble(guest_sha256, image, memory, c, pending, counters)))
    }

    fn assemble(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        compressed: Vec<u8>,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
    ) -> Snapshot {
        let delta_len = memory.data.len();
        Snapshot {
            guest_sha256,
            image_sha256: image.sha256,
            stack_pointer: memory.stack_pointer,
            base: memory.base,
            pages: memory.pages,
            data_len: delta_len as u64,
            compressed,
            pending,
            counters,
        }
    }

    /// Checks that this process can restore the snapshot: the same guest module
    /// ([`SnapshotError::GuestMismatch`]) and the same image ([`SnapshotError::ImageMismatch`]).
    pub(crate) fn check_origin(
        &self,
        guest_sha256: &[u8; 32],
        image: &Image,
    ) -> Result<(), VmError> {
        if self.guest_sha256 != *guest_sha256 {
            return Err(SnapshotError::GuestMismatch.into());
        }
        if self.image_sha256 != image.sha256 {
            return Err(SnapshotError::ImageMismatch.into());
        }
        Ok(())
    }

    /// Decompresses the memory into `dst` (linear memory from the stack top, already grown to
    /// the snapshot's page count) and XORs the image back in. Errors: [`VmError::Protocol`] when the
    /// data is corrupt or shorter than recorded.
    pub(crate) fn restore_memory(&self, dst: &mut [u8], image: &Image) -> Result<(), VmError> {
        let written = zstd::bulk::decompress_to_buffer(&self.compressed, dst)
            .map_err(|e| VmError::Protocol(format!("corrupt snapshot: {e}")))?;
        if written as u64 != self.data_len {
            return Err(VmError::Protocol("corrupt snapshot: short memory".into()));
        }
        xor_with_image(&mut dst[..written], &image.data);
        Ok(())
    }

    /// The bridge requests the suspended guest waits for, in creation order.
    pub fn pending(&self) -> &[BridgeRequest] {
        &self.pending
    }

    /// Size in bytes of the stored form ([`Snapshot::to_bytes`]); what `maxSnapshotBytes`
    /// limits (docs/contract/lifecycle.md#s5-6).
    pub fn stored_bytes(&self) -> usize {
        HEADER_BYTES + self.host_table().len() + self.compressed.len()
    }

    /// Bytes of linear memory the snapshot holds, uncompressed.
    pub fn memory_bytes(&self) -> u64 {
        self.data_len
    }

    fn host_table(&self) -> Vec<u8> {
        serde_json::to_vec(&HostTable {
            pending: self.pending.clone(),
            counters: self.counters.clone(),
        })
        .unwrap_or_default()
    }

    /// Serialises to the versioned format: a fixed little-endian header (magic `CMSNAP\0\0`,
    /// version, guest SHA-256, image SHA-256, stack pointer, base, pages, memory length, host-table length), the
    /// host table as JSON, then the zstd-compressed memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        let table = self.host_table();
        let mut out = Vec::with_capacity(HEADER_BYTES + table.len() + self.compressed.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.guest_sha256);
        out.extend_from_slice(&self.image_sha256);
        out.extend_from_slice(&self.stack_pointer.to_le_bytes());
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.pages.to_le_bytes());
        out.extend_from_slice(&self.data_len.to_le_bytes());
        out.extend_from_slice(&(table.len() as u32).to_le_bytes());
        out.extend_from_slice(&table);
        out.extend_from_slice(&self.compressed);
        out
    }

    /// Parses [`Snapshot::to_bytes`] output. Errors: [`SnapshotError::Corrupt`] for anything
    /// malformed, [`SnapshotError::Version`] for another format version. A different guest is
    /// detected at restore ([`SnapshotError::GuestMismatch`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let corrupt = |what: &str| SnapshotError::Corrupt(what.to_string());
        if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
            return Err(corrupt("bad header"));
        }
        // In bounds: `bytes` holds at least HEADER_BYTES, past every offset read below.
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[at..at + 4]);
            u32::from_le_bytes(b)
        };
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let version = u32_at(8);
        if version != SNAPSHOT_FORMAT_VERSION {
            return Err(SnapshotError::Version(version));
        }
        let mut guest_sha256 = [0u8; 32];
        guest_sha256.copy_from_slice(&bytes[12..44]);
        let mut image_sha256 = [0u8; 32];
        image_sha256.copy_from_slice(&bytes[44..76]);
        let stack_pointer = u32_at(76);
        let base = u32_at(80);
        let pages = u64_at(84);
        let data_len = u64_at(92);
        let table_len = u32_at(100) as usize;
        if pages > 65536 || data_len > pages * 65536 {
            return Err(corrupt("memory size out of range"));
        }
        let table_end = HEADER_BYTES
            .checked_add(table_len)
            .filter(|end| *end <= bytes.len())
            .ok_or_else(|| corrupt("truncated host table"))?;
        let table: HostTable = serde_json::from_slice(&bytes[HEADER_BYTES..table_end])
            .map_err(|e| SnapshotError::Corrupt(format!("host table: {e}")))?;
        Ok(Snapshot {
            guest_sha256,
            image_sha256,
            stack_pointer,
            base,
            pages,
            data_len,
            compressed: bytes[table_end..].to_vec(),
            pending: table.pending,
            counters: table.counters,
        })
    }
}
