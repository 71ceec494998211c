//! The crate's error types. Each message lives in its variant's `Display` and nowhere else;
//! callers that need the text (the facade's results) use `to_string()`.

use std::sync::Arc;

use codemode_bridge::ProtocolError;

use crate::worker::LegPanic;

/// The runtime could not be created or a VM could not be made (`runtime_unavailable`,
/// docs/contract/decisions.md#d10).
///
/// `Display` renders the whole cause chain (`{source:#}`), because that text is what reaches the
/// model as the result's message; [`std::error::Error::source`] gives the underlying
/// [`wasmtime::Error`] (shared, so the error stays `Clone`) for callers that inspect it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    /// The engine or module could not be set up; `what` names the step that failed.
    #[error("code mode runtime is unavailable: {what}: {source:#}")]
    Setup {
        /// The failed step, e.g. `cannot compile the guest`.
        what: &'static str,
        /// What wasmtime (or the OS) reported.
        #[source]
        source: Arc<wasmtime::Error>,
    },
    /// A VM could not be instantiated or initialised; `what` names the step that failed.
    #[error("code mode runtime is unavailable: cannot create a VM: {what}: {source:#}")]
    Instantiate {
        /// The failed step, e.g. `instantiating the guest` or `cm_init`.
        what: &'static str,
        /// What wasmtime (or the guest) reported; a full instance pool reads
        /// `maximum concurrent core instance limit of N reached`.
        #[source]
        source: Arc<wasmtime::Error>,
    },
}

impl RuntimeError {
    /// A [`RuntimeError::Setup`] for the step `what`.
    pub(crate) fn setup(what: &'static str, source: impl Into<wasmtime::Error>) -> RuntimeError {
        RuntimeError::Setup {
            what,
            source: Arc::new(source.into()),
        }
    }

    /// A [`RuntimeError::Instantiate`] for the step `what`.
    pub(crate) fn instantiate(
        what: &'static str,
        source: impl Into<wasmtime::Error>,
    ) -> RuntimeError {
        RuntimeError::Instantiate {
            what,
            source: Arc::new(source.into()),
        }
    }
}

/// A guest call did not produce a report (docs/contract/decisions.md#d10 maps each to a result code). The
/// `Display` text of each variant is the result's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VmError {
    /// The soft or hard deadline passed (`timeout`).
    #[error("code mode timeout exceeded")]
    Timeout,
    /// The abort handle fired (`aborted`).
    #[error("code mode execution aborted")]
    Aborted,
    /// The instance trapped (`runtime_unavailable`); the VM is discarded.
    #[error("code mode runtime trapped: {0}")]
    Trap(#[source] GuestTrap),
    /// The guest broke the protocol or a snapshot is corrupt (`internal_error`).
    #[error("code mode guest protocol violation: {0}")]
    Protocol(#[source] ProtocolViolation),
    /// A VM could not be created or restored (`runtime_unavailable`); the cause's message is the
    /// whole text.
    #[error(transparent)]
    Unavailable(VmUnavailable),
    /// The VM already failed; it must be discarded. Carries what poisoned it (the first failure).
    #[error("code mode VM is no longer usable: {0}")]
    Poisoned(#[source] Poison),
    /// `deliver` named a request that is not pending in this VM.
    #[error("unknown or settled bridge request id: {0}")]
    UnknownRequest(String),
}

impl VmError {
    /// What a failed guest call means: [`VmError::Aborted`] when the abort handle fired,
    /// [`VmError::Timeout`] for the epoch deadline's interrupt, else [`VmError::Trap`] naming
    /// only the trap (the wasm backtrace names guest internals and can be long; a non-trap
    /// error keeps its first line, at most 200 characters).
    pub(crate) fn from_trap(e: &wasmtime::Error, aborted: bool) -> VmError {
        if aborted {
            return VmError::Aborted;
        }
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => VmError::Timeout,
            Some(wasmtime::Trap::StackOverflow) => VmError::Trap(GuestTrap::StackOverflow),
            // The guest's Rust code aborts (and so traps `unreachable`) when an allocation
            // fails: in practice the guest ran out of memory outside QuickJS's own accounting.
            Some(wasmtime::Trap::UnreachableCodeReached) => VmError::Trap(GuestTrap::Abort),
            Some(trap) => VmError::Trap(GuestTrap::Wasm(*trap)),
            None => {
                let text = e.to_string();
                VmError::Trap(GuestTrap::Host {
                    first_line: text
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(200)
                        .collect(),
                })
            }
        }
    }
}

impl From<SnapshotError> for VmError {
    /// A snapshot of another guest or process cannot be restored here (`Unavailable`); a corrupt
    /// one is a protocol violation (`Protocol`).
    fn from(e: SnapshotError) -> Self {
        match e {
            SnapshotError::GuestMismatch | SnapshotError::ImageMismatch => {
                VmError::Unavailable(VmUnavailable::Snapshot(e))
            }
            other => VmError::Protocol(ProtocolViolation::Snapshot(other)),
        }
    }
}

/// What made a VM unusable ([`VmError::Poisoned`]): the text after `code mode VM is no longer
/// usable: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Poison {
    /// A guest call failed (a trap, a timeout, an abort, a protocol violation); its message.
    #[error(transparent)]
    Failed(Box<VmError>),
    /// The guest made more bridge requests in one step than it can report, and dropped the
    /// arguments of the excess ones: the run cannot go on.
    #[error("too many bridge requests in one step")]
    RequestOverflow,
}

/// Why no VM could be made or restored ([`VmError::Unavailable`]); `Display` is the whole message.
///
/// Equality compares the messages ([`RuntimeError`] holds a `wasmtime::Error`, which has no
/// equality of its own).
#[derive(Debug, Clone, thiserror::Error)]
pub enum VmUnavailable {
    /// The runtime could not make a VM (a full instance pool, a failed instantiation).
    #[error(transparent)]
    Runtime(RuntimeError),
    /// The snapshot was taken with another guest or against another image.
    #[error(transparent)]
    Snapshot(SnapshotError),
    /// A restored VM's memory could not grow to the snapshot's size.
    #[error("cannot grow guest memory: {source:#}")]
    GrowMemory {
        /// What wasmtime reported.
        #[source]
        source: Arc<wasmtime::Error>,
    },
    /// A restored VM's stack pointer could not be set.
    #[error("{source:#}")]
    StackPointer {
        /// What wasmtime reported.
        #[source]
        source: Arc<wasmtime::Error>,
    },
}

impl PartialEq for VmUnavailable {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for VmUnavailable {}

/// Why a guest call trapped: the text after `code mode runtime trapped: ` ([`VmError::Trap`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuestTrap {
    /// The native stack ran out (wasmtime's stack-overflow trap).
    #[error("RangeError: Maximum call stack size exceeded (native stack exhausted)")]
    StackOverflow,
    /// The guest executed `unreachable`: its Rust code aborts that way when an allocation fails.
    #[error("the guest aborted (wasm `unreachable`), most likely out of memory")]
    Abort,
    /// Any other wasm trap.
    #[error(transparent)]
    Wasm(wasmtime::Trap),
    /// A failure that is not a trap (an error raised by a host import): its first line, at most
    /// 200 characters (the wasm backtrace names guest internals and can be long).
    #[error("{first_line}")]
    Host {
        /// The first line of the error's text.
        first_line: String,
    },
    /// Host code panicked while running the guest on a leg thread.
    #[error(transparent)]
    Panic(#[from] LegPanic),
}

/// How the guest broke the protocol, or why a snapshot cannot be restored as stored: the text
/// after `code mode guest protocol violation: ` ([`VmError::Protocol`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolViolation {
    /// The guest's report did not parse or broke the bridge's rules.
    #[error(transparent)]
    Report(ProtocolError),
    /// The guest reported a protocol error of its own (`{"status":"protocol_error"}`); its text.
    #[error("{message}")]
    Rejected {
        /// The guest's message.
        message: String,
    },
    /// Two requests of one step share a bridge id, or an id repeats an earlier one.
    #[error("duplicate code mode bridge id")]
    DuplicateId,
    /// The guest's count of outstanding requests is not the host's.
    #[error("guest reports {reported} outstanding requests, host tracks {tracked}")]
    OutstandingMismatch {
        /// The guest's count.
        reported: u32,
        /// The host's.
        tracked: usize,
    },
    /// The `cm_start` input could not be serialised.
    #[error("cannot serialise the start input: {reason}")]
    StartInput {
        /// What serde_json reported.
        reason: String,
    },
    /// An input of 4 GiB or more.
    #[error("input larger than 4 GiB")]
    InputTooLarge,
    /// The guest's allocator returned 0 for an input buffer.
    #[error("guest could not allocate the input buffer")]
    InputAllocation,
    /// The buffer the guest allocated is not inside its memory.
    #[error("guest returned a bad buffer: {reason}")]
    BadBuffer {
        /// What wasmtime reported.
        reason: String,
    },
    /// The report's pointer and length are not inside guest memory.
    #[error("guest report is out of bounds")]
    ReportOutOfBounds,
    /// `__stack_pointer` is not an `i32` global.
    #[error("__stack_pointer is not i32")]
    StackPointerType,
    /// The shadow stack is not empty between calls.
    #[error("guest stack is not empty")]
    StackNotEmpty,
    /// The snapshot's memory layout is not this VM's.
    #[error("snapshot memory layout mismatch")]
    LayoutMismatch,
    /// The snapshot's memory is smaller than a fresh VM's (memory cannot shrink).
    #[error("snapshot memory is smaller than a fresh VM's")]
    SmallerThanFresh,
    /// Guest memory ends before its stack does.
    #[error("guest memory is smaller than its stack")]
    SmallerThanStack,
    /// zstd failed while compressing a snapshot.
    #[error("cannot compress snapshot: {reason}")]
    Compress {
        /// What zstd reported.
        reason: String,
    },
    /// An unbounded capture produced nothing (it cannot pass a bound).
    #[error("cannot compress snapshot")]
    CompressUnbounded,
    /// A page size that is not a power of two in the supported range.
    #[error(
        "unsupported snapshot page size {page_bytes} (a power of two from {min} to {max} bytes)"
    )]
    PageSize {
        /// The size asked for.
        page_bytes: u32,
        /// The smallest supported.
        min: u32,
        /// The largest supported.
        max: u32,
    },
    /// The snapshot's memory does not decompress to what its header records.
    #[error("corrupt snapshot: {what}")]
    CorruptMemory {
        /// What is wrong (a zstd error, `short memory`, `page index out of range`, …).
        what: String,
    },
    /// The snapshot itself is corrupt or of another format version.
    #[error(transparent)]
    Snapshot(SnapshotError),
}

impl From<RuntimeError> for VmError {
    /// A VM that cannot be made is [`VmError::Unavailable`] with the runtime error's message.
    fn from(e: RuntimeError) -> Self {
        VmError::Unavailable(VmUnavailable::Runtime(e))
    }
}

/// A snapshot byte string could not be read or restored here.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traps_become_vm_errors() {
        let trap = |t: wasmtime::Trap| wasmtime::Error::new(t);
        assert_eq!(
            VmError::from_trap(&trap(wasmtime::Trap::Interrupt), false),
            VmError::Timeout
        );
        assert_eq!(
            VmError::from_trap(&trap(wasmtime::Trap::Interrupt), true),
            VmError::Aborted
        );
        assert_eq!(
            VmError::from_trap(&trap(wasmtime::Trap::StackOverflow), false).to_string(),
            "code mode runtime trapped: RangeError: Maximum call stack size exceeded (native \
             stack exhausted)"
        );
        assert_eq!(
            VmError::from_trap(&trap(wasmtime::Trap::UnreachableCodeReached), false).to_string(),
            "code mode runtime trapped: the guest aborted (wasm `unreachable`), most likely out \
             of memory"
        );
        assert_eq!(
            VmError::from_trap(&trap(wasmtime::Trap::MemoryOutOfBounds), false),
            VmError::Trap(GuestTrap::Wasm(wasmtime::Trap::MemoryOutOfBounds))
        );
        let long = wasmtime::format_err!("{}\nsecond line", "x".repeat(300));
        assert_eq!(
            VmError::from_trap(&long, false).to_string(),
            format!("code mode runtime trapped: {}", "x".repeat(200))
        );
    }

    #[test]
    fn poison_keeps_its_cause_and_text() {
        use std::error::Error as _;
        let cause = VmError::Protocol(ProtocolViolation::DuplicateId);
        let e = VmError::Poisoned(Poison::Failed(Box::new(cause.clone())));
        assert_eq!(
            e.to_string(),
            "code mode VM is no longer usable: code mode guest protocol violation: duplicate code \
             mode bridge id"
        );
        assert_eq!(e.source().map(|s| s.to_string()), Some(cause.to_string()));
        assert_eq!(
            VmError::Poisoned(Poison::RequestOverflow).to_string(),
            "code mode VM is no longer usable: too many bridge requests in one step"
        );
    }

    #[test]
    fn runtime_errors_keep_their_source() {
        use std::error::Error as _;
        let e = RuntimeError::instantiate("cm_init", wasmtime::format_err!("boom"));
        assert_eq!(
            e.to_string(),
            "code mode runtime is unavailable: cannot create a VM: cm_init: boom"
        );
        assert_eq!(e.source().map(|s| s.to_string()).as_deref(), Some("boom"));
        assert_eq!(
            VmError::from(e).to_string(),
            "code mode runtime is unavailable: cannot create a VM: cm_init: boom"
        );
    }
}
