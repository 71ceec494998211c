//! Guest memory at rest: the post-initialisation [`Image`] every fresh VM starts from, capturing
//! a VM's memory into a [`Snapshot`] (the pages that differ from the image, zstd-compressed) and
//! restoring it, and the snapshot byte format (docs/guest-abi.md, "Snapshots").
//!
//! Works on plain byte slices; [`crate::Vm`] hands it the memory and applies the result.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Instant;

use codemode_bridge::{BridgeMethod, BridgeRequest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{ProtocolViolation, SnapshotError, VmError};

pub(crate) use live::{LiveVm, LiveVmKey};

/// Version of the byte format written by [`Snapshot::to_bytes`] for a default
/// ([`SnapshotFormat::DirtyPages`]) snapshot; bumped on any layout change. 3: dirty pages.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 3;

/// The format before dirty pages (the whole region from the stack top, XORed against the image),
/// still written for [`SnapshotFormat::WholeDelta`] and read back, for the benchmarks' side-by-side
/// comparison (docs/benchmarks.md).
const WHOLE_DELTA_VERSION: u32 = 2;

/// Bytes per page of a default snapshot: the 4 KiB OS page, the unit of copy-on-write, so a
/// restore into a copy-on-write image touches only the pages the run changed (docs/benchmarks.md,
/// "Snapshots": 4 KiB against 64 KiB wasm pages).
pub const SNAPSHOT_PAGE_BYTES: u32 = 4096;

/// Smallest and largest page size a snapshot may use (bytes).
const MIN_PAGE_BYTES: u32 = 4096;
const MAX_PAGE_BYTES: u32 = 65536;

/// Bytes of one wasm page.
const WASM_PAGE_BYTES: u64 = 65536;

const MAGIC: &[u8; 8] = b"CMSNAP\0\0";
/// Version 3: magic, version, guest sha256, image sha256, stack pointer, base, pages, page size,
/// run count, memory length, host-table length.
const HEADER_BYTES: usize = 8 + 4 + 32 + 32 + 4 + 4 + 8 + 4 + 4 + 8 + 4;
/// Version 2: magic, version, guest sha256, image sha256, stack pointer, base, pages, data length,
/// host-table length.
const WHOLE_HEADER_BYTES: usize = 8 + 4 + 32 + 32 + 4 + 4 + 8 + 8 + 4;
/// Bytes of one stored [`PageRun`] (first page, page count; u32 each).
const RUN_BYTES: usize = 8;

/// How [`crate::Vm::snapshot_with`] stores linear memory. Parking uses the default,
/// [`SnapshotFormat::DirtyPages`] with [`SNAPSHOT_PAGE_BYTES`]; the others exist so benchmarks
/// can compare them in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotFormat {
    /// Format 3: only the pages of `page_bytes` (a power of two from 4096 to 65536) that differ
    /// from the image (pages beyond the image are compared against zeros), each XORed against
    /// the image, zstd level 1. Restore writes only those pages into a VM holding the image.
    DirtyPages {
        /// Page size in bytes.
        page_bytes: u32,
    },
    /// Format 2: the whole region from the stack top to the last non-zero byte, XORed against the
    /// image, zstd level 1; restore writes all of it. Kept for benchmarks.
    WholeDelta,
}

impl Default for SnapshotFormat {
    fn default() -> Self {
        SnapshotFormat::DirtyPages {
            page_bytes: SNAPSHOT_PAGE_BYTES,
        }
    }
}

/// A suspended VM: the pages of linear memory (from the top of the shadow stack up) that differ
/// from the runtime's post-initialisation image, each XORed against it and compressed with zstd
/// level 1, `__stack_pointer`, the memory size, and the host-side table of pending bridge
/// requests and id counters. The image differs per process (QuickJS seeds itself from the clock
/// while it is made), so a snapshot is restorable in the process that took it, matching the
/// spec's in-process-only run store. Restorable any number of times with
/// [`crate::Runtime::restore`].
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub(crate) guest_sha256: [u8; 32],
    pub(crate) image_sha256: [u8; 32],
    pub(crate) stack_pointer: u32,
    pub(crate) base: u32,
    pub(crate) pages: u64,
    pub(crate) memory: StoredMemory,
    pub(crate) pending: Vec<BridgeRequest>,
    pub(crate) counters: BTreeMap<BridgeMethod, u64>,
    /// The VM this snapshot was captured from, when the runtime keeps it alive for a quick
    /// resume ([`crate::Vm::keep_parked`]); not part of the snapshot's value.
    pub(crate) live: LiveVm,
}

/// The memory part of a [`Snapshot`], by format.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StoredMemory {
    /// Format 3: `runs` of dirty pages (page `i` is bytes `[base + i·page_bytes, …)`, the last
    /// one cut at the end of memory); `data_len` bytes of them, XORed against the image, in one
    /// zstd frame.
    Pages {
        page_bytes: u32,
        runs: Vec<PageRun>,
        data_len: u64,
        compressed: Vec<u8>,
    },
    /// Format 2: `data_len` bytes from the stack top, XORed against the image, in one zstd frame.
    Whole { data_len: u64, compressed: Vec<u8> },
}

/// Consecutive dirty pages `first .. first + count` (page indices from the stack top).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRun {
    pub(crate) first: u32,
    pub(crate) count: u32,
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
/// (empty-stack) `__stack_pointer`, the stack top `base`, the bytes from `base` to the end of
/// memory, and the module's initial memory size in bytes (a fresh instance has zeros beyond it).
pub(crate) struct MemoryAtRest<'a> {
    pub(crate) pages: u64,
    pub(crate) stack_pointer: u32,
    pub(crate) base: u32,
    pub(crate) data: &'a [u8],
    pub(crate) initial_bytes: usize,
}

impl MemoryAtRest<'_> {
    /// The region without trailing zero bytes beyond the module's initial memory (what the
    /// whole-delta format stores).
    fn trimmed(&self) -> &[u8] {
        let floor = self.initial_bytes.saturating_sub(self.base as usize);
        let mut end = self.data.len();
        while end > floor && self.data[end - 1] == 0 {
            end -= 1;
        }
        &self.data[..end]
    }
}

/// `data[i] ^= image[i]` over their common length: turns memory into a delta against the image
/// (mostly zeros for a page the run barely touched, which zstd stores in almost nothing) and
/// back.
fn xor_with_image(data: &mut [u8], image: &[u8]) {
    let n = data.len().min(image.len());
    for (d, i) in data[..n].iter_mut().zip(&image[..n]) {
        *d ^= *i;
    }
}

/// Bytes of memory scanned (and at most buffered) per step of a capture; the size limit and the
/// deadline are checked after each.
const CHUNK_BYTES: usize = 1024 * 1024;

fn compress_error(e: std::io::Error) -> VmError {
    VmError::Protocol(ProtocolViolation::Compress {
        reason: e.to_string(),
    })
}

fn new_encoder() -> Result<zstd::stream::Encoder<'static, Vec<u8>>, VmError> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).map_err(compress_error)?;
    encoder.include_checksum(true).map_err(compress_error)?;
    Ok(encoder)
}

/// Compresses `data` XOR `image` (zstd level 1, content checksum and size) one
/// [`CHUNK_BYTES`] chunk at a time (format 2). `Ok(None)` once the output passes
/// `max_compressed`; [`VmError::Timeout`] once `until` passes; [`VmError::Protocol`] when zstd
/// fails.
fn compress_delta(
    data: &[u8],
    image: &[u8],
    max_compressed: usize,
    until: Option<Instant>,
) -> Result<Option<Vec<u8>>, VmError> {
    let mut encoder = new_encoder()?;
    encoder
        .set_pledged_src_size(Some(data.len() as u64))
        .map_err(compress_error)?;
    let mut chunk = vec![0u8; CHUNK_BYTES.min(data.len())];
    for (i, part) in data.chunks(CHUNK_BYTES).enumerate() {
        let buf = &mut chunk[..part.len()];
        buf.copy_from_slice(part);
        let start = i * CHUNK_BYTES;
        if start < image.len() {
            let end = (start + part.len()).min(image.len());
            xor_with_image(buf, &image[start..end]);
        }
        encoder.write_all(buf).map_err(compress_error)?;
        if encoder.get_ref().len() > max_compressed {
            return Ok(None);
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            return Err(VmError::Timeout);
        }
    }
    let out = encoder.finish().map_err(compress_error)?;
    Ok((out.len() <= max_compressed).then_some(out))
}

/// The dirty pages of a capture (format 3): their runs, their length and the compressed bytes.
struct DirtyPages {
    runs: Vec<PageRun>,
    data_len: u64,
    compressed: Vec<u8>,
}

/// Finds the pages of `region` (memory from the stack top) that differ from `image` (zeros
/// beyond it) and compresses them, XORed against the image, into one zstd frame. Memory is
/// compared page by page and the dirty pages go to zstd in batches of at most [`CHUNK_BYTES`],
/// so the host holds no second copy of it. After every [`CHUNK_BYTES`] of memory scanned, and at
/// the end: `Ok(None)` once the compressed bytes plus the run list pass `max_bytes`,
/// [`VmError::Timeout`] once `until` has passed. [`VmError::Protocol`] when zstd fails.
fn compress_dirty_pages(
    region: &[u8],
    image: &[u8],
    page_bytes: usize,
    max_bytes: usize,
    until: Option<Instant>,
) -> Result<Option<DirtyPages>, VmError> {
    let mut encoder = new_encoder()?;
    let zeros = vec![0u8; page_bytes];
    let mut runs: Vec<PageRun> = Vec::new();
    let mut batch: Vec<u8> = Vec::new();
    let mut data_len = 0u64;
    let mut scanned = 0usize;
    let over = |encoder: &zstd::stream::Encoder<'_, Vec<u8>>, runs: &[PageRun]| {
        encoder
            .get_ref()
            .len()
            .saturating_add(runs.len() * RUN_BYTES)
            > max_bytes
    };
    for (index, page) in region.chunks(page_bytes).enumerate() {
        let start = index * page_bytes;
        let against = image.get(start..).unwrap_or(&[]);
        let against = &against[..against.len().min(page.len())];
        let (inside, beyond) = page.split_at(against.len());
        if inside != against || beyond != &zeros[..beyond.len()] {
            // In range: region ≤ 4 GiB and page_bytes ≥ 4096.
            let index = index as u32;
            match runs.last_mut() {
                Some(run) if run.first + run.count == index => run.count += 1,
                _ => runs.push(PageRun {
                    first: index,
                    count: 1,
                }),
            }
            let at = batch.len();
            batch.extend_from_slice(page);
            xor_with_image(&mut batch[at..], against);
            data_len += page.len() as u64;
            if batch.len() >= CHUNK_BYTES {
                encoder.write_all(&batch).map_err(compress_error)?;
                batch.clear();
            }
        }
        scanned += page.len();
        if scanned >= CHUNK_BYTES {
            scanned = 0;
            if over(&encoder, &runs) {
                return Ok(None);
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return Err(VmError::Timeout);
            }
        }
    }
    encoder.write_all(&batch).map_err(compress_error)?;
    if until.is_some_and(|u| Instant::now() >= u) {
        return Err(VmError::Timeout);
    }
    let compressed = encoder.finish().map_err(compress_error)?;
    if compressed.len().saturating_add(runs.len() * RUN_BYTES) > max_bytes {
        return Ok(None);
    }
    Ok(Some(DirtyPages {
        runs,
        data_len,
        compressed,
    }))
}

/// Bytes of page slot `index` in a region of `region_len` bytes: `page_bytes`, less for the
/// last one when the region is not a whole number of pages.
fn slot_bytes(index: u64, page_bytes: u64, region_len: u64) -> u64 {
    region_len
        .saturating_sub(index * page_bytes)
        .min(page_bytes)
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
    /// Captures memory at rest in `format` against `image`, compressed with zstd level 1 and its
    /// content checksum (so a corrupted snapshot fails to restore), plus the host's table.
    /// Errors: [`VmError::Protocol`] when compression fails or the page size is not a power of
    /// two from 4096 to 65536.
    pub(crate) fn capture(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
        format: SnapshotFormat,
    ) -> Result<Snapshot, VmError> {
        let captured = Snapshot::capture_memory(image, &memory, format, usize::MAX, None)?
            .ok_or(VmError::Protocol(ProtocolViolation::CompressUnbounded))?;
        Ok(Snapshot::assemble(
            guest_sha256,
            image,
            memory,
            captured,
            pending,
            counters,
        ))
    }

    /// [`Snapshot::capture`] (default format) within bounds: `Ok(None)` as soon as the
    /// compressed memory and its page list pass `max_bytes` (the rest is not compressed),
    /// [`VmError::Timeout`] once `until` passes. Memory is compared and compressed 1 MiB at a
    /// time, so the host holds no second copy of it and a 900 MB heap costs at most one chunk
    /// past either bound (docs/threat-model.md, "Deadlines").
    pub(crate) fn capture_bounded(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
        max_bytes: usize,
        until: Instant,
    ) -> Result<Option<Snapshot>, VmError> {
        let captured = Snapshot::capture_memory(
            image,
            &memory,
            SnapshotFormat::default(),
            max_bytes,
            Some(until),
        )?;
        Ok(captured.map(|c| Snapshot::assemble(guest_sha256, image, memory, c, pending, counters)))
    }

    fn capture_memory(
        image: &Image,
        memory: &MemoryAtRest<'_>,
        format: SnapshotFormat,
        max_bytes: usize,
        until: Option<Instant>,
    ) -> Result<Option<StoredMemory>, VmError> {
        match format {
            SnapshotFormat::WholeDelta => {
                let data = memory.trimmed();
                let compressed = compress_delta(data, &image.data, max_bytes, until)?;
                Ok(compressed.map(|compressed| StoredMemory::Whole {
                    data_len: data.len() as u64,
                    compressed,
                }))
            }
            SnapshotFormat::DirtyPages { page_bytes } => {
                if !page_bytes.is_power_of_two()
                    || !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&page_bytes)
                {
                    return Err(VmError::Protocol(ProtocolViolation::PageSize {
                        page_bytes,
                        min: MIN_PAGE_BYTES,
                        max: MAX_PAGE_BYTES,
                    }));
                }
                let dirty = compress_dirty_pages(
                    memory.data,
                    &image.data,
                    page_bytes as usize,
                    max_bytes,
                    until,
                )?;
                Ok(dirty.map(|d| StoredMemory::Pages {
                    page_bytes,
                    runs: d.runs,
                    data_len: d.data_len,
                    compressed: d.compressed,
                }))
            }
        }
    }

    fn assemble(
        guest_sha256: [u8; 32],
        image: &Image,
        memory: MemoryAtRest<'_>,
        stored: StoredMemory,
        pending: Vec<BridgeRequest>,
        counters: BTreeMap<BridgeMethod, u64>,
    ) -> Snapshot {
        Snapshot {
            guest_sha256,
            image_sha256: image.sha256,
            stack_pointer: memory.stack_pointer,
            base: memory.base,
            pages: memory.pages,
            memory: stored,
            pending,
            counters,
            live: LiveVm::default(),
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

    /// Writes the stored memory into `dst` (linear memory from the stack top, already grown to
    /// the snapshot's page count): format 3 decompresses each run of dirty pages into its place
    /// and XORs the image back in (`dst` must already hold the image, zeros beyond it); format 2
    /// decompresses the whole region (`dst` must hold zeros past it). Errors: [`VmError::Protocol`] when the data is corrupt
    /// (checksum, a page outside `dst`), shorter or longer than recorded.
    pub(crate) fn restore_memory(&self, dst: &mut [u8], image: &Image) -> Result<(), VmError> {
        let corrupt = |what: String| VmError::Protocol(ProtocolViolation::CorruptMemory { what });
        match &self.memory {
            StoredMemory::Whole {
                data_len,
                compressed,
            } => {
                // Exactly `data_len` bytes of room: zstd keeps literals in the unused tail of its
                // output buffer while it works, which would leave garbage in memory past the
                // stored region (where a fresh instance, and the guest's allocator, expect
                // zeros).
                let room = usize::try_from(*data_len)
                    .ok()
                    .and_then(|n| dst.get_mut(..n))
                    .ok_or_else(|| corrupt("memory longer than the VM's".into()))?;
                let written = zstd::bulk::decompress_to_buffer(compressed, room)
                    .map_err(|e| corrupt(e.to_string()))?;
                if written as u64 != *data_len {
                    return Err(corrupt("short memory".into()));
                }
                xor_with_image(&mut dst[..written], &image.data);
                Ok(())
            }
            StoredMemory::Pages {
                page_bytes,
                runs,
                compressed,
                ..
            } => {
                let page_bytes = *page_bytes as usize;
                let mut decoder = zstd::stream::read::Decoder::with_buffer(&compressed[..])
                    .map_err(|e| corrupt(e.to_string()))?
                    .single_frame();
                for run in runs {
                    let start = run.first as usize * page_bytes;
                    let end =
                        ((run.first as usize + run.count as usize) * page_bytes).min(dst.len());
                    let pages = dst
                        .get_mut(start..end)
                        .filter(|p| !p.is_empty())
                        .ok_or_else(|| corrupt("page index out of range".into()))?;
                    decoder
                        .read_exact(pages)
                        .map_err(|e| corrupt(format!("short memory ({e})")))?;
                    if let Some(against) = image.data.get(start..) {
                        xor_with_image(pages, against);
                    }
                }
                // Reading past the last page reaches the end of the frame, which checks its
                // content checksum.
                let mut probe = [0u8; 1];
                match decoder.read(&mut probe) {
                    Ok(0) => {}
                    Ok(_) => return Err(corrupt("memory longer than its pages".into())),
                    Err(e) => return Err(corrupt(e.to_string())),
                }
                if !decoder.finish().is_empty() {
                    return Err(corrupt("bytes after the memory".into()));
                }
                Ok(())
            }
        }
    }

    /// The bridge requests the suspended guest waits for, in creation order.
    pub fn pending(&self) -> &[BridgeRequest] {
        &self.pending
    }

    /// Size in bytes of the stored form ([`Snapshot::to_bytes`]); what `maxSnapshotBytes`
    /// limits (docs/contract/lifecycle.md#s5-6).
    pub fn stored_bytes(&self) -> usize {
        let table = self.host_table().len();
        match &self.memory {
            StoredMemory::Pages {
                runs, compressed, ..
            } => HEADER_BYTES + table + runs.len() * RUN_BYTES + compressed.len(),
            StoredMemory::Whole { compressed, .. } => WHOLE_HEADER_BYTES + table + compressed.len(),
        }
    }

    /// Bytes of linear memory the snapshot holds, uncompressed: its dirty pages (format 3) or
    /// the region from the stack top (format 2).
    pub fn memory_bytes(&self) -> u64 {
        match &self.memory {
            StoredMemory::Pages { data_len, .. } | StoredMemory::Whole { data_len, .. } => {
                *data_len
            }
        }
    }

    /// Pages of linear memory the snapshot stores (format 3; 0 for format 2).
    pub fn dirty_pages(&self) -> u64 {
        match &self.memory {
            StoredMemory::Pages { runs, .. } => runs.iter().map(|r| u64::from(r.count)).sum(),
            StoredMemory::Whole { .. } => 0,
        }
    }

    fn host_table(&self) -> Vec<u8> {
        serde_json::to_vec(&HostTable {
            pending: self.pending.clone(),
            counters: self.counters.clone(),
        })
        .unwrap_or_default()
    }

    /// Serialises to the versioned format (docs/guest-abi.md, "Snapshots"), little endian.
    /// Version 3: a fixed header (magic `CMSNAP\0\0`, version, guest SHA-256, image SHA-256,
    /// stack pointer u32, base u32, memory pages u64, page size u32, run count u32, stored memory
    /// bytes u64, host-table length u32), the host table as JSON, the runs of dirty pages (first
    /// page u32, page count u32 each), then the zstd frame of the pages. A
    /// [`SnapshotFormat::WholeDelta`] snapshot writes version 2 (no page size, run count or runs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let table = self.host_table();
        let mut out = Vec::with_capacity(self.stored_bytes());
        out.extend_from_slice(MAGIC);
        let version = match self.memory {
            StoredMemory::Pages { .. } => SNAPSHOT_FORMAT_VERSION,
            StoredMemory::Whole { .. } => WHOLE_DELTA_VERSION,
        };
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&self.guest_sha256);
        out.extend_from_slice(&self.image_sha256);
        out.extend_from_slice(&self.stack_pointer.to_le_bytes());
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.pages.to_le_bytes());
        match &self.memory {
            StoredMemory::Pages {
                page_bytes,
                runs,
                data_len,
                compressed,
            } => {
                out.extend_from_slice(&page_bytes.to_le_bytes());
                out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
                out.extend_from_slice(&data_len.to_le_bytes());
                out.extend_from_slice(&(table.len() as u32).to_le_bytes());
                out.extend_from_slice(&table);
                for run in runs {
                    out.extend_from_slice(&run.first.to_le_bytes());
                    out.extend_from_slice(&run.count.to_le_bytes());
                }
                out.extend_from_slice(compressed);
            }
            StoredMemory::Whole {
                data_len,
                compressed,
            } => {
                out.extend_from_slice(&data_len.to_le_bytes());
                out.extend_from_slice(&(table.len() as u32).to_le_bytes());
                out.extend_from_slice(&table);
                out.extend_from_slice(compressed);
            }
        }
        out
    }

    /// Parses [`Snapshot::to_bytes`] output (versions 3 and 2). Errors:
    /// [`SnapshotError::Version`] for another format version; [`SnapshotError::Corrupt`] for
    /// anything malformed: a short or foreign header (`bad header`), a memory size over 4 GiB or
    /// a stack top beyond it (`memory size out of range`), a page size that is not a power of
    /// two from 4096 to 65536 (`unsupported page size <n>`), a cut-short host table or page list,
    /// a run of no pages (`empty page run`), runs out of order or overlapping (`page runs out of
    /// order or overlapping`), a page past the end of memory (`page index out of range`), a
    /// stored length that is not the pages' (`memory length does not match its pages`). A
    /// different guest is detected at restore ([`SnapshotError::GuestMismatch`]), corrupt
    /// compressed data at restore too (its checksum).
    pub fn from_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let corrupt = |what: &str| SnapshotError::Corrupt(what.to_string());
        if bytes.len() < WHOLE_HEADER_BYTES.min(HEADER_BYTES) || &bytes[..8] != MAGIC {
            return Err(corrupt("bad header"));
        }
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
        let header_bytes = match version {
            SNAPSHOT_FORMAT_VERSION => HEADER_BYTES,
            WHOLE_DELTA_VERSION => WHOLE_HEADER_BYTES,
            other => return Err(SnapshotError::Version(other)),
        };
        if bytes.len() < header_bytes {
            return Err(corrupt("bad header"));
        }
        // In bounds from here: `bytes` holds at least `header_bytes`, past every offset read.
        let mut guest_sha256 = [0u8; 32];
        guest_sha256.copy_from_slice(&bytes[12..44]);
        let mut image_sha256 = [0u8; 32];
        image_sha256.copy_from_slice(&bytes[44..76]);
        let stack_pointer = u32_at(76);
        let base = u32_at(80);
        let pages = u64_at(84);
        if pages > 65536 || u64::from(base) > pages * WASM_PAGE_BYTES {
            return Err(corrupt("memory size out of range"));
        }
        let region_len = pages * WASM_PAGE_BYTES - u64::from(base);
        let table_len_at = header_bytes - 4;
        let table_len = u32_at(table_len_at) as usize;
        let table_end = header_bytes
            .checked_add(table_len)
            .filter(|end| *end <= bytes.len())
            .ok_or_else(|| corrupt("truncated host table"))?;
        let table: HostTable = serde_json::from_slice(&bytes[header_bytes..table_end])
            .map_err(|e| SnapshotError::Corrupt(format!("host table: {e}")))?;
        let memory = if version == WHOLE_DELTA_VERSION {
            let data_len = u64_at(92);
            if data_len > region_len {
                return Err(corrupt("memory size out of range"));
            }
            StoredMemory::Whole {
                data_len,
                compressed: bytes[table_end..].to_vec(),
            }
        } else {
            let page_bytes = u32_at(92);
            let run_count = u32_at(96) as usize;
            let data_len = u64_at(100);
            if !page_bytes.is_power_of_two()
                || !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&page_bytes)
            {
                return Err(SnapshotError::Corrupt(format!(
                    "unsupported page size {page_bytes}"
                )));
            }
            let runs_end = run_count
                .checked_mul(RUN_BYTES)
                .and_then(|n| n.checked_add(table_end))
                .filter(|end| *end <= bytes.len())
                .ok_or_else(|| corrupt("truncated page list"))?;
            let page_bytes64 = u64::from(page_bytes);
            let slots = region_len.div_ceil(page_bytes64);
            let mut runs = Vec::with_capacity(run_count);
            let mut next_free = 0u64;
            let mut stored = 0u64;
            for at in (table_end..runs_end).step_by(RUN_BYTES) {
                let run = PageRun {
                    first: u32_at(at),
                    count: u32_at(at + 4),
                };
                let (first, end) = (
                    u64::from(run.first),
                    u64::from(run.first) + u64::from(run.count),
                );
                if run.count == 0 {
                    return Err(corrupt("empty page run"));
                }
                if first < next_free {
                    return Err(corrupt("page runs out of order or overlapping"));
                }
                if end > slots {
                    return Err(corrupt("page index out of range"));
                }
                // Every slot but the last is whole.
                stored += (end - first - 1) * page_bytes64
                    + slot_bytes(end - 1, page_bytes64, region_len);
                next_free = end;
                runs.push(run);
            }
            if stored != data_len {
                return Err(corrupt("memory length does not match its pages"));
            }
            StoredMemory::Pages {
                page_bytes,
                runs,
                data_len,
                compressed: bytes[runs_end..].to_vec(),
            }
        };
        Ok(Snapshot {
            guest_sha256,
            image_sha256,
            stack_pointer,
            base,
            pages,
            memory,
            pending: table.pending,
            counters: table.counters,
            live: LiveVm::default(),
        })
    }
}

/// An upper bound in bytes on the stored size of a default snapshot of `region_bytes` of memory
/// from the stack top with `table_bytes` of host table: zstd's worst case for all of it, the
/// longest run list (every other page dirty) and the header.
pub(crate) fn stored_bound(region_bytes: usize, table_bytes: usize) -> u64 {
    let slots = region_bytes.div_ceil(SNAPSHOT_PAGE_BYTES as usize);
    let runs = slots.div_ceil(2) * RUN_BYTES;
    (zstd::zstd_safe::compress_bound(region_bytes) + runs + table_bytes + HEADER_BYTES + 256) as u64
}

mod live;

#[cfg(test)]
mod tests;
