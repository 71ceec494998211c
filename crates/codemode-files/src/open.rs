//! The checked open of a file an operator names (docs/threat-model.md, "Files an operator
//! names"): no symbolic link as the last component, nothing but a regular file (or a directory
//! for [`check_dir`]), the owner and the mode checked on the open descriptor, and nothing that
//! can block: FIFOs are opened non-blocking, so a FIFO with no peer is refused at once instead of
//! hanging in `open`.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// The largest file [`read_to_string`] reads unless told otherwise: 64 MiB (a 10,000-tool
/// `--tools` file with schemas is a few MiB; a config is a few KiB).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a file an operator named was refused or could not be read. The messages say what is
/// wrong with the file, not which file: callers prefix the path and the option that named it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The last path component is a symbolic link (refused, never followed).
    #[error("it is a symbolic link; name the file it points to")]
    SymbolicLink,
    /// The path names something other than what was expected: a FIFO, socket, device, or a
    /// directory where a file was expected (or a file where a directory was).
    #[error("it is {found}, not {expected}")]
    WrongType {
        /// What the path is: `a FIFO (named pipe)`, `a socket`, `a character device`,
        /// `a block device`, `a directory`, `a regular file`.
        found: &'static str,
        /// `a regular file` or `a directory`.
        expected: &'static str,
    },
    /// The file belongs to another user (who can read and rewrite it whatever its mode).
    #[error("it belongs to uid {owner}, not to this user (uid {user})")]
    Owner {
        /// The file's owner.
        owner: u32,
        /// This process's effective uid.
        user: u32,
    },
    /// The mode lets other users do what [`Rules::forbidden_mode`] refuses.
    #[error("its mode is {mode:04o} and others can {access} it; chmod {fix} it")]
    Mode {
        /// The permission bits (`mode & 0o777`).
        mode: u32,
        /// `write` or `read or write`.
        access: &'static str,
        /// The `chmod` argument that fixes it: `o-w`, `600` or `700`.
        fix: &'static str,
    },
    /// The file is larger than the caller's limit.
    #[error("it is {size} bytes, more than the {max}-byte limit")]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// Opening, reading or writing failed (missing file, permissions, not UTF-8, …).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What a path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

impl Expect {
    fn name(self) -> &'static str {
        match self {
            Expect::File => "a regular file",
            Expect::Directory => "a directory",
        }
    }
}

/// Who may own a file and which mode bits refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Permission bits that refuse the file when any is set (`0o002`: others can write it;
    /// `0o077`: group or others can do anything with it).
    pub forbidden_mode: u32,
    /// Whether root (uid 0) may own the file besides this user: files codemode only reads may be
    /// installed system-wide; files it writes or that hold secrets must be this user's.
    pub root_may_own: bool,
}

impl Rules {
    /// Files codemode reads (configs, tool files, scripts): owned by this user or root, not
    /// writable by others. Group write is accepted: with per-user groups (umask 002) it is the
    /// common default.
    pub const READ: Rules = Rules {
        forbidden_mode: 0o002,
        root_may_own: true,
    };
    /// Secrets (token files, key files) and files codemode writes: owned by this user, no access
    /// for group or others (`chmod 600`, directories `700`).
    pub const PRIVATE: Rules = Rules {
        forbidden_mode: 0o077,
        root_may_own: false,
    };
    /// Files codemode writes and then makes private itself (a trajectory is set to 0600 once
    /// open): owned by this user, any mode.
    pub const OWNED: Rules = Rules {
        forbidden_mode: 0,
        root_may_own: false,
    };
}

fn type_name(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return "a symbolic link";
    }
    if kind.is_dir() {
        return "a directory";
    }
    if kind.is_file() {
        return "a regular file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    "not a regular file"
}

/// Checks metadata a caller already has (from `symlink_metadata`, or `File::metadata` on an open
/// descriptor) against `expect` and `rules`: a symbolic link, the wrong type, another owner (root
/// too unless [`Rules::root_may_own`]) or a forbidden mode bit is an error, in that order.
///
/// # Errors
/// [`FileError::SymbolicLink`], [`FileError::WrongType`], [`FileError::Owner`] or
/// [`FileError::Mode`].
pub fn check(meta: &Metadata, expect: Expect, rules: &Rules) -> Result<(), FileError> {
    if meta.file_type().is_symlink() {
        return Err(FileError::SymbolicLink);
    }
    let right_type = match expect {
        Expect::File => meta.is_file(),
        Expect::Directory => meta.is_dir(),
    };
    if !right_type {
        return Err(FileError::WrongType {
            found: type_name(meta),
            expected: expect.name(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let user = rustix::process::geteuid().as_raw();
        let owner = meta.uid();
        if owner != user && !(rules.root_may_own && owner == 0) {
            return Err(FileError::Owner { owner, user });
        }
        let mode = meta.mode() & 0o777;
        if mode & rules.forbidden_mode != 0 {
            let write_only = rules.forbidden_mode & !0o222 == 0;
            return Err(FileError::Mode {
                mode,
                access: if write_only { "write" } else { "read or write" },
                fix: match (rules.forbidden_mode == 0o002, expect) {
                    (true, _) => "o-w",
                    (false, Expect::File) => "600",
                    (false, Expect::Directory) => "700",
                },
            });
        }
    }
    #[cfg(not(unix))]
    let _ = rules;
    Ok(())
}

/// `symlink_metadata(path)`, checked: `Ok(None)` when nothing is there.
fn look(path: &Path, expect: Expect, rules: &Rules) -> Result<Option<Metadata>, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            check(&meta, expect, rules)?;
            Ok(Some(meta))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::Io(e)),
    }
}

/// Checks the directory at `path` ([`check`] on its `symlink_metadata`); `Ok(false)` when
/// nothing is there, so a caller can create it.
///
/// # Errors
/// As [`check`], or [`FileError::Io`] when it cannot be examined.
pub fn check_dir(path: &Path, rules: &Rules) -> Result<bool, FileError> {
    Ok(look(path, Expect::Directory, rules)?.is_some())
}

/// Adds `O_NOFOLLOW`, `O_NONBLOCK` and `O_CLOEXEC`: a link is refused by the kernel, and a FIFO
/// never blocks the open (reading: it opens at once; writing with no reader: `ENXIO`).
fn guarded(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        options.custom_flags(flags.bits() as i32);
    }
    options
}

/// Maps the errors of a guarded open: `ELOOP` is the link `O_NOFOLLOW` refused, `ENXIO` a FIFO
/// without a reader.
fn open_error(e: io::Error) -> FileError {
    #[cfg(unix)]
    {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return FileError::SymbolicLink;
        }
        if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) {
            return FileError::WrongType {
                found: "a FIFO (named pipe)",
                expected: Expect::File.name(),
            };
        }
    }
    FileError::Io(e)
}

/// Checks the open descriptor and clears `O_NONBLOCK` (a no-op for regular files, cleared so the
/// descriptor behaves as an ordinary one).
fn checked(file: File, rules: &Rules) -> Result<File, FileError> {
    check(&file.metadata()?, Expect::File, rules)?;
    #[cfg(unix)]
    {
        let flags = rustix::fs::fcntl_getfl(&file).map_err(io::Error::from)?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
            .map_err(io::Error::from)?;
    }
    Ok(file)
}

/// Opens `path` to read it, under `rules` ([`Rules::READ`] for configs and tool files,
/// [`Rules::PRIVATE`] for secrets). The path is examined first (nothing that is not a regular
/// file is opened at all), then opened with `O_NOFOLLOW | O_NONBLOCK` and checked again on the
/// descriptor, so a file swapped in between is refused too.
///
/// # Errors
/// As [`check`]; [`FileError::Io`] when the file is missing or unreadable.
pub fn open_read(path: &Path, rules: &Rules) -> Result<File, FileError> {
    check(&std::fs::symlink_metadata(path)?, Expect::File, rules)?;
    let file = guarded(OpenOptions::new().read(true))
        .open(path)
        .map_err(open_error)?;
    checked(file, rules)
}

/// Reads the UTF-8 file at `path` ([`open_read`] with `rules`), refusing one larger than
/// `max_bytes` ([`MAX_FILE_BYTES`] is the usual cap) before reading it.
///
/// # Errors
/// As [`open_read`]; [`FileError::TooLarge`]; [`FileError::Io`] when reading fails or the text
/// is not UTF-8.
pub fn read_to_string(path: &Path, rules: &Rules, max_bytes: u64) -> Result<String, FileError> {
    let file = open_read(path, rules)?;
    let size = file.metadata()?.len();
    if size > max_bytes {
        return Err(FileError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    let mut text = String::with_capacity(usize::try_from(size).unwrap_or(0));
    // `take`: a file that grows after the size check still stops one byte past the limit.
    let read = file.take(max_bytes + 1).read_to_string(&mut text)?;
    if read as u64 > max_bytes {
        return Err(FileError::TooLarge {
            size: read as u64,
            max: max_bytes,
        });
    }
    Ok(text)
}

/// Opens `path` for writing a private file (a trajectory): created with mode 0600 if absent, or
/// an existing regular file of this user's, truncated (or appended to with `append`) and set to
/// mode 0600 (`fchmod`). A symbolic link, a non-regular file (a FIFO is refused at once, never
/// waited on) or a file another user owns (who could read what is written, whatever its mode) is
/// refused before anything is truncated.
///
/// # Errors
/// As [`check`] (with [`Rules::OWNED`]); [`FileError::Io`] when the file cannot be created or
/// opened (missing directory, permissions).
pub fn create_private(path: &Path, append: bool) -> Result<File, FileError> {
    let rules = Rules::OWNED;
    look(path, Expect::File, &rules)?;
    let mut options = OpenOptions::new();
    options.write(true).create(true).append(append);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    // No O_TRUNC: the descriptor is checked before the file is truncated.
    let file = guarded(&mut options).open(path).map_err(open_error)?;
    let file = checked(file, &rules)?;
    if !append {
        file.set_len(0)?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}
