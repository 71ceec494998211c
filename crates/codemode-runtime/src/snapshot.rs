//! The snapshot byte format (docs/guest-abi.md, "Snapshots").

use std::collections::BTreeMap;

use codemode_bridge::BridgeMethod;
use serde::{Deserialize, Serialize};

use crate::vm::PendingRequest;

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
    pub(crate) pending: Vec<PendingRequest>,
    pub(crate) counters: BTreeMap<BridgeMethod, u64>,
}

/// A snapshot byte string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Not a snapshot, or cut short.
    #[error("corrupt code mode snapshot: {0}")]
    Corrupt(String),
    /// Written by another format version.
    #[error("unsupported code mode snapshot format version {0}")]
    Version(u32),
    /// Written by a different guest module.
    #[error("code mode snapshot was taken with a different guest module")]
    GuestMismatch,
    /// Taken against a different post-initialisation image (another process).
    #[error("code mode snapshot was taken against a different VM image")]
    ImageMismatch,
}

#[derive(Serialize, Deserialize)]
struct HostTable {
    pending: Vec<PendingRequest>,
    counters: BTreeMap<BridgeMethod, u64>,
}

impl Snapshot {
    /// The bridge requests the suspended guest waits for, in creation order.
    pub fn pending(&self) -> &[PendingRequest] {
        &self.pending
    }

    /// Size in bytes of the stored form ([`Snapshot::to_bytes`]); what `maxSnapshotBytes`
    /// limits (behaviour.md §5.6).
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
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
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
