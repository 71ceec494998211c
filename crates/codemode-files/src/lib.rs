//! Files an operator names: `--config`, `--tools`, `--mcp-config`, `--provider-catalog`,
//! `--trajectory`, agent scripts, program files, key files and a state directory's files. They
//! all go through one checked path (docs/threat-model.md, "Files an operator names"):
//!
//! - [`read_to_string`] / [`open_read`] open a file to read it: the last path component must not
//!   be a symbolic link, the file must be a regular file (a FIFO, socket, device or directory is
//!   refused at once, without blocking), owned by this user (or root, for [`Rules::READ`]) and
//!   not writable by others; [`read_to_string`] also caps the size.
//! - [`create_private`] opens a file codemode writes (a trajectory): the same refusals, checked
//!   before anything is truncated, the owner must be this user, and the file ends up mode 0600.
//! - [`check_dir`] checks a directory the same way; [`check`] is the rule itself, on metadata a
//!   caller already has (the OAuth token store uses it).
//! - [`LimitedValue`] parses JSON text (with any serde deserializer, e.g. JSON5) into a
//!   `serde_json::Value` at most [`MAX_DEPTH`] levels deep, with an error instead of a stack
//!   overflow.
//!
//! Errors never repeat the path: callers prefix it (`--trajectory <path>: it is a FIFO (named
//! pipe), not a regular file`), as `std::io::Error` messages do.

#![warn(missing_docs)]

mod depth;
mod open;

pub use depth::{LimitedValue, MAX_DEPTH};
pub use open::{
    check, check_dir, create_private, open_read, read_to_string, Expect, FileError, Rules,
    MAX_FILE_BYTES,
};
