//! On-disk cache of the compiled guest, so tests and CLI runs compile it once per machine.
//!
//! Loading machine code from disk is only sound if nobody else could have written it, so the cache
//! trusts nothing it has not checked on an open file descriptor:
//!
//! - **The directory** is opened (following a symbolic link, like any path) and `fstat`ed: it must
//!   be a directory owned by the effective user and not writable by group or others. Every later
//!   access goes through that descriptor (`openat`, `renameat`), so a path swapped after the check
//!   changes nothing. A directory that fails the check is neither read nor written.
//! - **The file** is opened with `O_NOFOLLOW` relative to the directory descriptor and `fstat`ed:
//!   it must be a regular file owned by the effective user and not writable by group or others.
//! - **The content** carries a trailer written by [`store`]: a magic, the payload's length and the
//!   SHA-256 of the payload, after the payload (wasmtime maps the file itself, so its artifact
//!   must start at offset 0). The file's length must match the trailer, and the payload its
//!   SHA-256, before that same open descriptor is handed to wasmtime, which maps it
//!   (`Module::deserialize_open_file`) instead of the 4.5 MB being read and copied; the path is
//!   never opened again.
//! - **The verification record** (`<file>.verified`, beside it) says that the SHA-256 was already
//!   checked: it holds the file's identity as `fstat` gave it (device, inode, size, modification
//!   and status-change times) and the SHA-256 from the trailer. It is opened and checked like the
//!   file (`O_NOFOLLOW`, a regular file owned by the effective user, not writable by group or
//!   others, exactly its size) and trusted only when every byte equals what the module file's
//!   `fstat` and trailer give now; then the payload is not hashed again. Otherwise (missing,
//!   stale, or refused with a warning) the payload is hashed and, if it matches, a new record is
//!   written (0600, a temp file renamed over it, relative to the directory descriptor); [`store`]
//!   writes one for the file it stores.
//!
//! Why the record keeps the check sound: the threat is a file that another user could write,
//! and the record is held to the same rule as the module file (same checked directory, same
//! owner and mode checks on its open descriptor), so only this user (or root) can have written
//! either; that was already the trust boundary (the SHA-256 is an integrity check, not a MAC).
//! What the hash guards against is a torn, corrupted or replaced file, and each of those changes
//! what the record compares: a replaced file has another inode (or times), and any write to a
//! file sets its status-change time to the current time, which no unprivileged call can set
//! back. A record left from an earlier file therefore does not match the current one, so every
//! file is hashed before its first use. Two cases are no longer caught: a write in place within
//! the same timestamp tick (a few milliseconds) as the recorded state, which only this user can
//! make and this module never makes, and a change below the file system (media corruption after
//! the first check), as for the user's own binaries.
//!
//! The mapped file must not be written in place while a process uses it (truncating it would
//! fault that process); [`store`] never does (temp file and rename), and a rename or deletion
//! leaves existing mappings on the old inode.
//!
//! Any refusal is logged (`tracing` warning) and the guest is compiled instead. Key: the guest's
//! SHA-256, the wasmtime version and the engine's compatibility hash, and for the pre-initialised
//! guest (docs/guest-abi.md, "Pre-initialisation") a variant naming the wizer step and the hash
//! of its `cm_init` input; wasmtime also checks the artifact's own compatibility header when
//! loading.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::{Engine, Module};

/// The pinned wasmtime version (workspace Cargo.toml); part of the cache key.
const WASMTIME_VERSION: &str = "48.0.8";

/// First bytes of the trailer of a cache file written by this module (format 2; format 1 put
/// the same fields in a header, which kept wasmtime from mapping the file).
#[cfg_attr(not(unix), allow(dead_code))]
const MAGIC: &[u8; 8] = b"CMCWASM\x02";

/// Bytes after the payload: [`MAGIC`], the payload length (u64 little-endian), the payload's
/// SHA-256.
#[cfg_attr(not(unix), allow(dead_code))]
const TRAILER_LEN: usize = 8 + 8 + 32;

/// Where compiled modules live: `$CODEMODE_CACHE_DIR`, else `$XDG_CACHE_HOME/codemode`, else
/// `$HOME/.cache/codemode`, else `<tmp>/codemode-cache-<uid>` (per user: a shared name in a
/// world-writable directory could be created by another user first).
pub(crate) fn default_cache_dir() -> PathBuf {
    cache_dir_from(
        |name| std::env::var_os(name),
        std::env::temp_dir(),
        current_uid(),
    )
}

/// [`default_cache_dir`] with its inputs given: an environment lookup, the temp directory and the
/// effective uid.
fn cache_dir_from(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    temp_dir: PathBuf,
    uid: u32,
) -> PathBuf {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("CODEMODE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = set("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("codemode");
    }
    if let Some(home) = set("HOME") {
        return PathBuf::from(home).join(".cache").join("codemode");
    }
    temp_dir.join(format!("codemode-cache-{uid}"))
}

/// The effective user id (0 where there are no uids).
fn current_uid() -> u32 {
    #[cfg(unix)]
    {
        rustix::process::geteuid().as_raw()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// The cache file's name for this engine and guest; `variant` (e.g. `preinit-<hash>`) names a
/// module derived from the guest.
fn cache_file_name(engine: &Engine, guest_sha256: &str, variant: Option<&str>) -> String {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let compat = h.finish();
    let variant = variant.map(|v| format!("-{v}")).unwrap_or_default();
    format!(
        "guest-{}{variant}-wasmtime-{}-{compat:016x}.cm2.cwasm",
        &guest_sha256[..16.min(guest_sha256.len())],
        WASMTIME_VERSION
    )
}

/// Where [`load_or_build`]'s module came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Deserialised from a verified cache file.
    Cache,
    /// Built and compiled in this process (no cache, a miss or a refusal).
    Built,
}

/// Why a cache directory or file was not used. Shown in the warning that precedes compiling.
#[derive(Debug, thiserror::Error)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) enum Refusal {
    /// The directory or file belongs to another user.
    #[error("it is owned by uid {owner}, not by the current user (uid {current})")]
    NotOwned {
        /// Owner of the directory or file.
        owner: u32,
        /// The effective uid.
        current: u32,
    },
    /// Group or others may write the directory or file.
    #[error("it is writable by group or others (mode {mode:o})")]
    Writable {
        /// Permission bits (`st_mode & 0o7777`).
        mode: u32,
    },
    /// The cache directory or file is a symbolic link (`O_NOFOLLOW` refused it).
    #[error("it is a symbolic link")]
    Symlink,
    /// The path is not a directory (for the directory) or not a regular file (for the file).
    #[error("it is not a {expected}")]
    WrongType {
        /// `"directory"` or `"regular file"`.
        expected: &'static str,
    },
    /// The file does not end with this module's trailer.
    #[error("it has no codemode cache trailer")]
    BadMagic,
    /// The file is shorter than its trailer says.
    #[error("it is truncated: {found} bytes, {expected} expected")]
    Truncated {
        /// Trailer plus the payload length from the trailer (or just the trailer length).
        expected: u64,
        /// The file's length.
        found: u64,
    },
    /// The file is longer than its trailer says.
    #[error("it has extra bytes: {found} bytes, {expected} expected")]
    TrailingBytes {
        /// Trailer plus the payload length from the trailer.
        expected: u64,
        /// The file's length.
        found: u64,
    },
    /// The payload's SHA-256 differs from the one in the trailer.
    #[error("its content does not match its SHA-256")]
    HashMismatch,
    /// An I/O error while opening, checking or reading.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Loads the compiled guest from `dir`, or compiles and stores it. Cache failures (including every
/// [`Refusal`]) are logged and fall back to compiling; only a compile failure is an error.
pub(crate) fn load_or_compile(
    engine: &Engine,
    wasm: &[u8],
    guest_sha256: &str,
    dir: Option<&Path>,
) -> wasmtime::Result<Module> {
    load_or_build(engine, guest_sha256, None, dir, || Ok(wasm.to_vec())).map(|(m, _)| m)
}

/// [`load_or_compile`] for a module derived from the guest: the cache file is named by
/// `guest_sha256` and `variant`, and only on a miss (or a refusal, or without `dir`) does
/// `build` run to produce the wasm that is then compiled and stored. An error of `build` or of
/// the compile is returned; cache failures fall back to building, as in [`load_or_compile`].
pub(crate) fn load_or_build(
    engine: &Engine,
    guest_sha256: &str,
    variant: Option<&str>,
    dir: Option<&Path>,
    build: impl FnOnce() -> wasmtime::Result<Vec<u8>>,
) -> wasmtime::Result<(Module, Origin)> {
    let Some(dir) = dir else {
        return Ok((Module::new(engine, build()?)?, Origin::Built));
    };
    let name = cache_file_name(engine, guest_sha256, variant);
    imp::load_or_build(engine, build, dir, &name)
}

#[cfg(unix)]
mod record;

#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt};
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    use sha2::{Digest, Sha256};
    use wasmtime::{Engine, Module};

    use super::record::{self, Identity, RecordCheck};
    use super::{Origin, Refusal, MAGIC, TRAILER_LEN};

    pub(super) fn load_or_build(
        engine: &Engine,
        build: impl FnOnce() -> wasmtime::Result<Vec<u8>>,
        dir: &Path,
        name: &str,
    ) -> wasmtime::Result<(Module, Origin)> {
        let path = dir.join(name);
        let dir_fd = match open_private_dir(dir) {
            Ok(fd) => fd,
            Err(refusal) => {
                tracing::warn!(
                    "refusing the module cache directory {}: {refusal}; compiling the guest",
                    dir.display()
                );
                return Ok((Module::new(engine, build()?)?, Origin::Built));
            }
        };
        match open_verified(&dir_fd, dir, name) {
            Ok(Some(file)) => {
                // SAFETY: `Module::deserialize_open_file` runs the file's bytes as machine code,
                // so they must be the output of `Module::serialize`, not bytes someone else
                // chose, and must not change while the module lives. The file was opened without
                // following links in a directory that, checked on its open descriptor, is owned
                // by the current user and not writable by group or others, and the file itself,
                // checked on this same open descriptor, is a regular file with the same owner and
                // restrictions. So only a process running as this user (or root) can have written
                // it or can write it now: that is the trust boundary, the same as for the user's
                // own binaries, and this module's writers never write a stored file in place
                // (temp file, then rename). The SHA-256 in its trailer is an integrity check, not
                // a MAC: checked on this file's bytes, now or (per its verification record) since
                // its last change, it rules out a torn or corrupted write; wasmtime then checks
                // its own header (version and engine compatibility).
                match unsafe { Module::deserialize_open_file(engine, file) } {
                    Ok(module) => {
                        tracing::debug!(
                            "loaded the compiled guest from the module cache {}",
                            path.display()
                        );
                        return Ok((module, Origin::Cache));
                    }
                    Err(e) => tracing::warn!(
                        "ignoring the unusable module cache file {}: {e}; compiling the guest",
                        path.display()
                    ),
                }
            }
            Ok(None) => {}
            Err(refusal) => tracing::warn!(
                "refusing the module cache file {}: {refusal}; compiling the guest",
                path.display()
            ),
        }
        let module = Module::new(engine, build()?)?;
        match store(&dir_fd, dir, name, &module) {
            Ok(()) => tracing::debug!(
                "stored the compiled guest in the module cache {}",
                path.display()
            ),
            Err(e) => tracing::warn!("cannot write the module cache {}: {e}", path.display()),
        }
        Ok((module, Origin::Built))
    }

    /// Creates `dir` (and missing parents) with mode 0700, opens it and checks the open
    /// descriptor: a directory, owned by the effective user, not writable by group or others.
    fn open_private_dir(dir: &Path) -> Result<File, Refusal> {
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Refusal::Io(e)),
        }
        // `NOFOLLOW`: the last component must be the directory itself, not a link, so another
        // user cannot point a pre-created `<tmp>/codemode-cache-<uid>` link at a directory of
        // ours (say `~/.ssh`) and have the cache write there. (`O_NOFOLLOW` with
        // `O_DIRECTORY` fails with `ENOTDIR` or `ELOOP` on a link.)
        let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP => Refusal::Symlink,
            Errno::NOTDIR if is_link => Refusal::Symlink,
            Errno::NOTDIR => Refusal::WrongType {
                expected: "directory",
            },
            e => Refusal::Io(e.into()),
        })?;
        let dir = File::from(fd);
        let meta = dir.metadata()?;
        if !meta.is_dir() {
            return Err(Refusal::WrongType {
                expected: "directory",
            });
        }
        check_owner_and_mode(&meta)?;
        Ok(dir)
    }

    /// Owned by the effective user and not writable by group or others.
    pub(super) fn check_owner_and_mode(meta: &std::fs::Metadata) -> Result<(), Refusal> {
        let current = rustix::process::geteuid().as_raw();
        if meta.uid() != current {
            return Err(Refusal::NotOwned {
                owner: meta.uid(),
                current,
            });
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(Refusal::Writable { mode });
        }
        Ok(())
    }

    /// Opens `name` in `dir` without following links, as a regular file that passes
    /// [`check_owner_and_mode`] on its open descriptor (`None`: there is no such file).
    pub(super) fn open_checked(dir: &File, name: &str) -> Result<Option<File>, Refusal> {
        let fd = match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(Refusal::Symlink),
            Err(e) => return Err(Refusal::Io(e.into())),
        };
        let file = File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(Refusal::WrongType {
                expected: "regular file",
            });
        }
        check_owner_and_mode(&meta)?;
        Ok(Some(file))
    }

    /// The cache file `name` in `dir` (the path `dir_path` for log lines), open and verified:
    /// checked by [`open_checked`], its length by its trailer, and its payload by the trailer's
    /// SHA-256, unless its verification record (module docs) says that was done for exactly this
    /// file. `None` when there is no file.
    fn open_verified(dir: &File, dir_path: &Path, name: &str) -> Result<Option<File>, Refusal> {
        let Some(file) = open_checked(dir, name)? else {
            return Ok(None);
        };
        let meta = file.metadata()?;
        let (payload_len, sha256) = read_trailer(&file, meta.len())?;
        let identity = Identity::of(&meta, &sha256);
        let record_path = dir_path.join(record::name(name));
        match record::check(dir, name, &identity) {
            RecordCheck::Matches => return Ok(Some(file)),
            RecordCheck::Stale => {}
            RecordCheck::Refused(refusal) => tracing::warn!(
                "ignoring the module cache record {}: {refusal}",
                record_path.display()
            ),
        }
        let mut hasher = Sha256::new();
        let hashed = std::io::copy(&mut std::io::Read::take(&file, payload_len), &mut hasher)?;
        if hashed != payload_len || hasher.finalize().as_slice() != sha256.as_slice() {
            return Err(Refusal::HashMismatch);
        }
        match record::write(dir, name, &identity) {
            Ok(()) => tracing::debug!(
                "checked the SHA-256 of the module cache file {} and recorded it in {}",
                dir_path.join(name).display(),
                record_path.display()
            ),
            Err(e) => tracing::warn!(
                "cannot write the module cache record {}: {e}",
                record_path.display()
            ),
        }
        Ok(Some(file))
    }

    /// Reads and checks the trailer of `file` (`len` bytes): the payload length and SHA-256 it
    /// gives.
    fn read_trailer(file: &File, len: u64) -> Result<(u64, [u8; 32]), Refusal> {
        let trailer_len = TRAILER_LEN as u64;
        if len < trailer_len {
            return Err(Refusal::Truncated {
                expected: trailer_len,
                found: len,
            });
        }
        let mut trailer = [0u8; TRAILER_LEN];
        file.read_exact_at(&mut trailer, len - trailer_len)?;
        if trailer[..8] != MAGIC[..] {
            return Err(Refusal::BadMagic);
        }
        let mut payload_len = [0u8; 8];
        payload_len.copy_from_slice(&trailer[8..16]);
        let payload_len = u64::from_le_bytes(payload_len);
        let expected = trailer_len.saturating_add(payload_len);
        if len < expected {
            return Err(Refusal::Truncated {
                expected,
                found: len,
            });
        }
        if len > expected {
            return Err(Refusal::TrailingBytes {
                expected,
                found: len,
            });
        }
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&trailer[16..]);
        Ok((payload_len, sha256))
    }

    /// Distinguishes temp files of concurrent stores within one process.
    static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

    /// Writes `parts` to a fresh 0600 temp file in `dir`, syncs it and renames it over `name`,
    /// all relative to the checked directory descriptor; the temp file is removed on failure.
    /// Returns the written file, still open (its `fstat` after the rename is the stored file's).
    pub(super) fn write_atomically(
        dir: &File,
        name: &str,
        parts: &[&[u8]],
    ) -> std::io::Result<File> {
        let tmp = format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let result = write_then_rename(dir, &tmp, name, parts);
        if result.is_err() {
            let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
        }
        result
    }

    fn write_then_rename(
        dir: &File,
        tmp: &str,
        name: &str,
        parts: &[&[u8]],
    ) -> std::io::Result<File> {
        let fd = rustix::fs::openat(
            dir,
            tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut file = File::from(fd);
        for part in parts {
            file.write_all(part)?;
        }
        file.sync_all()?;
        rustix::fs::renameat(dir.as_fd(), tmp, dir.as_fd(), name)?;
        Ok(file)
    }

    /// Stores `module`'s serialisation followed by the trailer as `name` in `dir` (the path
    /// `dir_path` for log lines), then its verification record.
    fn store(dir: &File, dir_path: &Path, name: &str, module: &Module) -> std::io::Result<()> {
        let payload = module
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let sha256: [u8; 32] = Sha256::digest(&payload).into();
        let len = (payload.len() as u64).to_le_bytes();
        let file = write_atomically(
            dir,
            name,
            &[&payload[..], &MAGIC[..], &len[..], &sha256[..]],
        )?;
        // After the rename, which sets the status-change time the record compares.
        let meta = file.metadata()?;
        if let Err(e) = record::write(dir, name, &Identity::of(&meta, &sha256)) {
            tracing::warn!(
                "cannot write the module cache record {}: {e}",
                dir_path.join(record::name(name)).display()
            );
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    use std::path::Path;

    use wasmtime::{Engine, Module};

    use super::Origin;

    /// Without uids and `O_NOFOLLOW` the cache cannot check who wrote a file, so it is not used.
    pub(super) fn load_or_build(
        engine: &Engine,
        build: impl FnOnce() -> wasmtime::Result<Vec<u8>>,
        _dir: &Path,
        _name: &str,
    ) -> wasmtime::Result<(Module, Origin)> {
        Ok((Module::new(engine, build()?)?, Origin::Built))
    }
}

#[cfg(all(test, unix))]
mod capture;

#[cfg(all(test, unix))]
mod refusals;

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::PathBuf;

    use super::cache_dir_from;

    fn dir(vars: &[(&str, &str)]) -> PathBuf {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        cache_dir_from(
            |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            PathBuf::from("/tmp"),
            1234,
        )
    }

    #[test]
    fn the_cache_directory_follows_the_environment_then_a_per_user_fallback() {
        let all = [
            ("CODEMODE_CACHE_DIR", "/c"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(dir(&all), PathBuf::from("/c"));
        assert_eq!(dir(&all[1..]), PathBuf::from("/x/codemode"));
        assert_eq!(dir(&all[2..]), PathBuf::from("/h/.cache/codemode"));
        assert_eq!(dir(&[]), PathBuf::from("/tmp/codemode-cache-1234"));
        // Empty values count as unset.
        assert_eq!(
            dir(&[("CODEMODE_CACHE_DIR", ""), ("HOME", "")]),
            PathBuf::from("/tmp/codemode-cache-1234")
        );
    }
}
