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
//! - **The content** carries a header written by [`store`]: a magic, the payload's length and the
//!   SHA-256 of the payload. The bytes read from the already-open file must match both before
//!   they are deserialised; the path is never opened again.
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

/// First bytes of a cache file written by this module (format 1).
#[cfg_attr(not(unix), allow(dead_code))]
const MAGIC: &[u8; 8] = b"CMCWASM\x01";

/// Bytes before the payload: [`MAGIC`], the payload length (u64 little-endian), the payload's
/// SHA-256.
#[cfg_attr(not(unix), allow(dead_code))]
const HEADER_LEN: usize = 8 + 8 + 32;

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
        "guest-{}{variant}-wasmtime-{}-{compat:016x}.cm1.cwasm",
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
    /// The file does not start with this module's header.
    #[error("it has no codemode cache header")]
    BadMagic,
    /// The file is shorter than its header says.
    #[error("it is truncated: {found} bytes, the header says {expected}")]
    Truncated {
        /// Header plus the payload length from the header (or just the header length).
        expected: u64,
        /// Bytes read.
        found: u64,
    },
    /// The file is longer than its header says.
    #[error("it has trailing bytes: {found} bytes, the header says {expected}")]
    TrailingBytes {
        /// Header plus the payload length from the header.
        expected: u64,
        /// Bytes read.
        found: u64,
    },
    /// The payload's SHA-256 differs from the one in the header.
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
mod imp {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    use sha2::{Digest, Sha256};
    use wasmtime::{Engine, Module};

    use super::{Origin, Refusal, HEADER_LEN, MAGIC};

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
        match read_verified(&dir_fd, name) {
            Ok(Some(payload)) => {
                // SAFETY: `Module::deserialize` runs the bytes as machine code, so they must be
                // the output of `Module::serialize`, not bytes someone else chose. They were read
                // from a file opened without following links in a directory that, checked on its
                // open descriptor, is owned by the current user and not writable by group or
                // others, and the file itself, checked on its open descriptor, is a regular file
                // with the same owner and restrictions. So only a process running as this user
                // (or root) can have written it: that is the trust boundary, the same as for the
                // user's own binaries. The SHA-256 in its header is an integrity check, not a MAC:
                // checked on exactly these bytes, it rules out a torn or corrupted write; wasmtime
                // then checks its own header (version and engine compatibility).
                match unsafe { Module::deserialize(engine, &payload) } {
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
        match store(&dir_fd, name, &module) {
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
    fn check_owner_and_mode(meta: &std::fs::Metadata) -> Result<(), Refusal> {
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

    /// The verified payload of the cache file `name` in `dir`, `None` when there is none.
    fn read_verified(dir: &File, name: &str) -> Result<Option<Vec<u8>>, Refusal> {
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
        let mut file = File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(Refusal::WrongType {
                expected: "regular file",
            });
        }
        check_owner_and_mode(&meta)?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)?;
        verify(bytes).map(Some)
    }

    /// Checks the header of `bytes` and returns the payload.
    fn verify(mut bytes: Vec<u8>) -> Result<Vec<u8>, Refusal> {
        let found = bytes.len() as u64;
        let magic_len = MAGIC.len().min(bytes.len());
        if bytes[..magic_len] != MAGIC[..magic_len] {
            return Err(Refusal::BadMagic);
        }
        if bytes.len() < HEADER_LEN {
            return Err(Refusal::Truncated {
                expected: HEADER_LEN as u64,
                found,
            });
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[8..16]);
        let expected = (HEADER_LEN as u64).saturating_add(u64::from_le_bytes(len));
        if found < expected {
            return Err(Refusal::Truncated { expected, found });
        }
        if found > expected {
            return Err(Refusal::TrailingBytes { expected, found });
        }
        let digest = Sha256::digest(&bytes[HEADER_LEN..]);
        if digest.as_slice() != &bytes[16..HEADER_LEN] {
            return Err(Refusal::HashMismatch);
        }
        bytes.drain(..HEADER_LEN);
        Ok(bytes)
    }

    /// Distinguishes temp files of concurrent stores within one process.
    static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

    /// Writes the header and `module`'s serialisation to a fresh 0600 temp file in `dir` and
    /// renames it over `name`, all relative to the checked directory descriptor.
    fn store(dir: &File, name: &str, module: &Module) -> std::io::Result<()> {
        let payload = module
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let tmp = format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let result = write_then_rename(dir, &tmp, name, &payload);
        if result.is_err() {
            let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
        }
        result
    }

    fn write_then_rename(dir: &File, tmp: &str, name: &str, payload: &[u8]) -> std::io::Result<()> {
        let fd = rustix::fs::openat(
            dir,
            tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut file = File::from(fd);
        file.write_all(MAGIC)?;
        file.write_all(&(payload.len() as u64).to_le_bytes())?;
        file.write_all(&Sha256::digest(payload))?;
        file.write_all(payload)?;
        file.sync_all()?;
        drop(file);
        rustix::fs::renameat(dir.as_fd(), tmp, dir.as_fd(), name)?;
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
