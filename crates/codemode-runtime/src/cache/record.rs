//! The verification record of a module cache file: the proof, kept beside the file, that its
//! payload's SHA-256 was checked since its last change (why that is sound: the module docs of
//! `cache.rs`).
//!
//! Format (96 bytes): [`RECORD_MAGIC`], then the module file's device, inode, size, modification
//! time (seconds, nanoseconds) and status-change time (seconds, nanoseconds) as `fstat` gives
//! them, each a u64 little-endian, then the SHA-256 from the file's trailer.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;

use super::imp::{open_checked, write_atomically};
use super::Refusal;

/// First bytes of a verification record (format 1).
const RECORD_MAGIC: &[u8; 8] = b"CMCVRFY\x01";

/// Bytes of a record: the magic, seven u64 fields and a SHA-256.
const RECORD_LEN: usize = 8 + 7 * 8 + 32;

/// The record file's name for the cache file `name`.
pub(super) fn name(name: &str) -> String {
    format!("{name}.verified")
}

/// The exact bytes a record must hold to vouch for one module file as it is now.
pub(super) struct Identity([u8; RECORD_LEN]);

impl Identity {
    /// The record for the file with metadata `meta` (from `fstat` on its open descriptor) whose
    /// trailer gives `sha256`.
    pub(super) fn of(meta: &std::fs::Metadata, sha256: &[u8; 32]) -> Identity {
        let mut bytes = [0u8; RECORD_LEN];
        bytes[..8].copy_from_slice(RECORD_MAGIC);
        // Times are signed; their two's-complement bits are compared, never interpreted.
        let fields = [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
        ];
        for (i, field) in fields.iter().enumerate() {
            bytes[8 + 8 * i..16 + 8 * i].copy_from_slice(&field.to_le_bytes());
        }
        bytes[RECORD_LEN - 32..].copy_from_slice(sha256);
        Identity(bytes)
    }

    /// The record's bytes (what [`write`] stores).
    #[cfg(test)]
    pub(super) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// What the record beside a cache file says about it.
pub(super) enum RecordCheck {
    /// The record is ours and vouches for exactly this file: no need to hash it.
    Matches,
    /// No record, or one for another file or another state of this one (or not a record at
    /// all): the payload must be hashed.
    Stale,
    /// The record fails the checks of the module file itself (owner, mode, link, type): it is
    /// ignored, with a warning, and the payload hashed.
    Refused(Refusal),
}

/// Checks the record of the cache file `name` in `dir` against `identity`.
pub(super) fn check(dir: &File, name: &str, identity: &Identity) -> RecordCheck {
    let file = match open_checked(dir, &self::name(name)) {
        Ok(Some(file)) => file,
        Ok(None) => return RecordCheck::Stale,
        Err(refusal) => return RecordCheck::Refused(refusal),
    };
    // One byte more than a record: a longer file is stale, not a prefix match.
    let mut bytes = Vec::with_capacity(RECORD_LEN + 1);
    match file.take(RECORD_LEN as u64 + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes == identity.0 => RecordCheck::Matches,
        Ok(_) => RecordCheck::Stale,
        Err(e) => RecordCheck::Refused(Refusal::Io(e)),
    }
}

/// Writes `identity` as the record of the cache file `name` in `dir` (0600, a temp file renamed
/// over any previous record).
pub(super) fn write(dir: &File, name: &str, identity: &Identity) -> std::io::Result<()> {
    write_atomically(dir, &self::name(name), &[&identity.0]).map(drop)
}
