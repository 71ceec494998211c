//! `--state dir:PATH`: one file per parked run in a directory only this user can write, so one
//! process survives its own restart (docs/snapshot-store.md, "Backends").
//!
//! The directory is created with mode 0700 when missing; an existing one must be a real
//! directory (not a symlink) owned by the effective user and writable by no one else. Each run is
//! `PATH/<runId>.cmrun`, written to a temporary file created 0600 with `O_EXCL | O_NOFOLLOW` and
//! renamed over the old one (a reader sees the old or the new record, never half of one). Files
//! are opened with `O_NOFOLLOW | O_NONBLOCK` and must be regular files owned by this user with no
//! group or other permissions: a symlink, FIFO, device or foreign file is refused, never read.
//! Records are not `fsync`ed: they survive the process (a crash, `SIGKILL`), not a power loss.
//!
//! A finished run's result ([`RunStore::put_finished`]) is the same file with another first
//! line (`CMEND1`). Leases, owner leases and change notifications live in this process: one
//! process per directory (a second one would not see the first's claims).

use std::collections::HashMap;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codemode_bridge::RunScope;
use codemode_files::{FileError, Rules};
use rustix::fs::OFlags;

use super::changes::{in_process_ownership, InProcess};
use super::{admit, lease_token, owner_key, Claim, RunStore, StoreFuture};
use crate::error::{RunStoreError, StoreError};
use crate::record::{now_ms, valid_run_id, RecordMeta, StoredRun};

/// The first bytes of every record file of a parked run (format version 1).
const MAGIC: &[u8] = b"CMRUN1\n";
/// The first bytes of a finished run's record file (as long as [`MAGIC`]).
const FINISHED_MAGIC: &[u8] = b"CMEND1\n";
/// Record files end with this.
const SUFFIX: &str = ".cmrun";

/// The state directory: this user's, writable by nobody else (read access for others is the
/// operator's choice; every record in it is 0600).
const DIRECTORY_RULES: Rules = Rules {
    forbidden_mode: 0o022,
    root_may_own: false,
};

/// Records in files under one directory (see the module docs).
#[derive(Debug)]
pub struct DirRunStore {
    dir: PathBuf,
    /// Lease token and end (ms since the epoch) by run id; the lock also serialises claims.
    leases: Mutex<HashMap<String, (String, u64)>>,
    local: InProcess,
}

impl DirRunStore {
    /// Opens (creating it with mode 0700 if missing, not its parents) the directory `dir`.
    ///
    /// # Errors
    /// [`RunStoreError::Backend`] when it cannot be created, is a symlink or not a directory, is
    /// owned by another user, or is writable by group or others.
    pub fn open(dir: &Path) -> Result<Self, RunStoreError> {
        let name = format!("dir:{}", dir.display());
        let fail = |message: String| RunStoreError::Backend {
            backend: name.clone(),
            message,
        };
        match DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail(format!("cannot create the directory: {e}"))),
        }
        // The one checked path for files an operator names (docs/threat-model.md, "Files an
        // operator names"): a real directory of this user that nobody else can write.
        match codemode_files::check_dir(dir, &DIRECTORY_RULES) {
            Ok(true) => {}
            Ok(false) => return Err(fail("cannot inspect the directory: it is gone".into())),
            Err(FileError::SymbolicLink) => {
                return Err(fail("is a symlink; give the real directory".into()))
            }
            Err(FileError::WrongType { .. }) => return Err(fail("is not a directory".into())),
            Err(FileError::Owner { owner, user }) => {
                return Err(fail(format!(
                    "is owned by uid {owner}, not this user (uid {user}); it must be a directory only this user can write"
                )))
            }
            Err(FileError::Mode { mode, .. }) => {
                return Err(fail(format!(
                    "has mode {mode:o}: group or others can write it; it must be a directory only this user can write (chmod 700)"
                )))
            }
            Err(e) => return Err(fail(format!("cannot inspect the directory: {e}"))),
        }
        Ok(DirRunStore {
            dir: dir.to_path_buf(),
            leases: Mutex::new(HashMap::new()),
            local: InProcess::default(),
        })
    }

    fn name(&self) -> String {
        format!("dir:{}", self.dir.display())
    }

    fn io_error(&self, what: &str, e: &std::io::Error) -> RunStoreError {
        RunStoreError::Backend {
            backend: self.name(),
            message: format!("{what}: {e}"),
        }
    }

    fn leases(&self) -> MutexGuard<'_, HashMap<String, (String, u64)>> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn path(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("{run_id}{SUFFIX}"))
    }

    /// Reads `run_id`'s record (only its header, with an empty body, when `header_only`) and
    /// whether it is a finished run's; `None` when there is none (or the id cannot name one).
    fn read(
        &self,
        run_id: &str,
        header_only: bool,
    ) -> Result<Option<(StoredRun, bool)>, RunStoreError> {
        if !valid_run_id(run_id) {
            return Ok(None);
        }
        let corrupt = |reason: &str| RunStoreError::Corrupt {
            run_id: run_id.to_string(),
            reason: reason.to_string(),
        };
        // The shared checked open (codemode-files): the path is examined before anything is
        // opened, then opened `O_NOFOLLOW | O_NONBLOCK` and checked again on the descriptor.
        let mut file = match codemode_files::open_read(&self.path(run_id), &Rules::PRIVATE) {
            Ok(file) => file,
            Err(FileError::Io(e)) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(FileError::SymbolicLink) => {
                return Err(corrupt("the record is a symlink; refused"))
            }
            Err(FileError::WrongType { .. }) => {
                return Err(corrupt("the record is not a regular file; refused"))
            }
            Err(FileError::Owner { .. } | FileError::Mode { .. }) => {
                return Err(corrupt(
                    "the record is not a file of this user with mode 0600; refused",
                ))
            }
            Err(FileError::Io(e)) => return Err(self.io_error("cannot open a record", &e)),
            Err(e) => return Err(self.io_error("cannot open a record", &std::io::Error::other(e))),
        };
        let meta = file
            .metadata()
            .map_err(|e| self.io_error("cannot inspect a record", &e))?;
        let mut bytes = Vec::new();
        let read = if header_only {
            let mut head = [0u8; MAGIC.len() + 4];
            file.read_exact(&mut head).and_then(|()| {
                let len = u32::from_le_bytes([head[7], head[8], head[9], head[10]]);
                bytes.extend_from_slice(&head);
                (&mut file).take(u64::from(len)).read_to_end(&mut bytes)
            })
        } else {
            bytes.reserve(usize::try_from(meta.len()).unwrap_or(0));
            file.read_to_end(&mut bytes)
        };
        match read {
            Ok(_) => decode(run_id, &bytes).map(Some),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Err(corrupt("bad header")),
            Err(e) => Err(self.io_error("cannot read a record", &e)),
        }
    }

    fn write(&self, run: &StoredRun, finished: bool) -> Result<(), RunStoreError> {
        let id = &run.meta.run_id;
        let token = lease_token(&self.name())?;
        let temp = self.dir.join(format!(".{id}.{token}.tmp"));
        let bytes = encode(run, finished);
        let written = (|| -> std::io::Result<()> {
            let mut file: File = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(OFlags::NOFOLLOW.bits() as i32)
                .open(&temp)?;
            file.write_all(&bytes)?;
            fs::rename(&temp, self.path(id))
        })();
        written.map_err(|e| {
            let _ = fs::remove_file(&temp);
            self.io_error("cannot write a record", &e)
        })
    }

    /// Every record's header (expired or not) and whether it is a finished run's, by reading
    /// the directory; unreadable entries are skipped.
    fn all(&self) -> Result<Vec<(RecordMeta, bool)>, RunStoreError> {
        let entries =
            fs::read_dir(&self.dir).map_err(|e| self.io_error("cannot list the directory", &e))?;
        let mut metas = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(SUFFIX)) else {
                continue;
            };
            if let Ok(Some((run, finished))) = self.read(id, true) {
                metas.push((run.meta, finished));
            }
        }
        metas.sort_by(|a, b| a.0.run_id.cmp(&b.0.run_id));
        Ok(metas)
    }

    fn delete(&self, run_id: &str) -> Result<bool, RunStoreError> {
        self.leases().remove(run_id);
        if !valid_run_id(run_id) {
            return Ok(false);
        }
        self.local.removed(run_id);
        match fs::remove_file(self.path(run_id)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io_error("cannot remove a record", &e)),
        }
    }

    /// Stores `run` (a finished result when `finished`, never counted against `cap`).
    fn put_now(&self, run: &StoredRun, cap: usize, finished: bool) -> Result<(), RunStoreError> {
        if !valid_run_id(&run.meta.run_id) {
            return Err(StoreError::Unavailable.into());
        }
        if !finished && !self.path(&run.meta.run_id).exists() {
            self.purge_expired_now()?;
            let key = owner_key(&run.meta.owner);
            let owned = self
                .all()?
                .iter()
                .filter(|(m, done)| !done && owner_key(&m.owner) == key)
                .count();
            if owned >= cap {
                return Err(StoreError::TooManySuspended.into());
            }
        }
        self.write(run, finished)?;
        self.leases().remove(&run.meta.run_id);
        self.local.changed(&run.meta.run_id);
        Ok(())
    }

    fn claim_now(
        &self,
        run_id: &str,
        caller: &RunScope,
        lease: Duration,
    ) -> Result<Claim, RunStoreError> {
        let token = lease_token(&self.name())?;
        let Some((run, finished)) = self.read(run_id, false)? else {
            return Err(StoreError::Unavailable.into());
        };
        let now = now_ms();
        if let Err(refused) = admit(&run.meta, caller, now) {
            if refused == StoreError::Unavailable {
                self.delete(run_id)?;
            }
            return Err(refused.into());
        }
        if finished {
            return Ok(Claim { run, lease: None });
        }
        let mut leases = self.leases();
        if leases.get(run_id).is_some_and(|(_, until)| *until > now) {
            return Err(StoreError::AlreadyResuming.into());
        }
        let until = now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        leases.insert(run_id.to_string(), (token.clone(), until));
        Ok(Claim {
            run,
            lease: Some(token),
        })
    }

    /// Removes the records `gone` selects; returns how many of them were parked runs.
    fn purge_where(&self, gone: impl Fn(&RecordMeta) -> bool) -> Result<usize, RunStoreError> {
        let mut purged = 0;
        for (meta, finished) in self.all()? {
            if gone(&meta) && self.delete(&meta.run_id)? && !finished {
                purged += 1;
            }
        }
        Ok(purged)
    }

    fn purge_expired_now(&self) -> Result<usize, RunStoreError> {
        let now = now_ms();
        self.purge_where(|meta| meta.expired(now))
    }
}

/// `MAGIC` (`FINISHED_MAGIC` for a finished run), the header's JSON length (u32 little
/// endian), the header, the body.
fn encode(run: &StoredRun, finished: bool) -> Vec<u8> {
    let meta = serde_json::to_vec(&run.meta).unwrap_or_default();
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + meta.len() + run.body.len());
    out.extend_from_slice(if finished { FINISHED_MAGIC } else { MAGIC });
    out.extend_from_slice(&u32::try_from(meta.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&meta);
    out.extend_from_slice(&run.body);
    out
}

fn decode(run_id: &str, bytes: &[u8]) -> Result<(StoredRun, bool), RunStoreError> {
    let corrupt = |reason: String| RunStoreError::Corrupt {
        run_id: run_id.to_string(),
        reason,
    };
    let finished = bytes.starts_with(FINISHED_MAGIC);
    let rest = bytes
        .strip_prefix(MAGIC)
        .or_else(|| bytes.strip_prefix(FINISHED_MAGIC))
        .ok_or_else(|| corrupt("bad header".into()))?;
    let (len, rest) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| corrupt("bad header".into()))?;
    let len = u32::from_le_bytes(*len) as usize;
    if rest.len() < len {
        return Err(corrupt("truncated header".into()));
    }
    let (meta, body) = rest.split_at(len);
    let meta: RecordMeta =
        serde_json::from_slice(meta).map_err(|e| corrupt(format!("header: {e}")))?;
    if meta.run_id != run_id {
        return Err(corrupt(format!(
            "the file holds run {:?}; refused",
            meta.run_id
        )));
    }
    let run = StoredRun {
        meta,
        body: body.to_vec(),
    };
    Ok((run, finished))
}

impl RunStore for DirRunStore {
    fn describe(&self) -> String {
        self.name()
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn put(&self, run: StoredRun, cap: usize) -> StoreFuture<'_, ()> {
        let result = self.put_now(&run, cap, false);
        Box::pin(async move { result })
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        caller: &'a RunScope,
        lease: Duration,
    ) -> StoreFuture<'a, Claim> {
        let result = self.claim_now(run_id, caller, lease);
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, ()> {
        let id = &claim.run.meta.run_id;
        let mut leases = self.leases();
        if claim.lease.is_some() && leases.get(id).map(|(token, _)| token) == claim.lease.as_ref() {
            leases.remove(id);
            self.local.changed(id);
        }
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, bool> {
        let result = self.delete(run_id);
        Box::pin(async move { result })
    }

    fn list(&self) -> StoreFuture<'_, Vec<RecordMeta>> {
        let now = now_ms();
        let result = self.all().map(|metas| {
            metas
                .into_iter()
                .filter(|(m, finished)| !finished && !m.expired(now))
                .map(|(m, _)| m)
                .collect()
        });
        Box::pin(async move { result })
    }

    fn purge_expired(&self) -> StoreFuture<'_, usize> {
        let result = self.purge_expired_now();
        Box::pin(async move { result })
    }

    fn purge_all(&self) -> StoreFuture<'_, usize> {
        let result = self.purge_where(|_| true);
        Box::pin(async move { result })
    }

    fn put_finished(&self, run: StoredRun) -> StoreFuture<'_, ()> {
        let result = self.put_now(&run, usize::MAX, true);
        Box::pin(async move { result })
    }

    in_process_ownership!(local);
}
