//! The crate's error types. Each message lives in its variant's `Display` and nowhere else;
//! callers that need the text (the facade's results) use `to_string()`.

use std::sync::Arc;

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
    Trap(String),
    /// The guest broke the protocol or a snapshot is corrupt (`internal_error`).
    #[error("code mode guest protocol violation: {0}")]
    Protocol(String),
    /// A VM could not be created or restored (`runtime_unavailable`); the text is complete
    /// (a [`RuntimeError`]'s or [`SnapshotError`]'s message).
    #[error("{0}")]
    Unavailable(String),
    /// The VM already failed; it must be discarded. Carries the first failure's message.
    #[error("code mode VM is no longer usable: {0}")]
    Poisoned(String),
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
            Some(wasmtime::Trap::StackOverflow) => VmError::Trap(
                "RangeError: Maximum call stack size exceeded (native stack exhausted)".into(),
            ),
            // The guest's Rust code aborts (and so traps `unreachable`) when an allocation
            // fails: in practice the guest ran out of memory outside QuickJS's own accounting.
            Some(wasmtime::Trap::UnreachableCodeReached) => VmError::Trap(
                "the guest aborted (wasm `unreachable`), most likely out of memory".into(),
            ),
            Some(trap) => VmError::Trap(trap.to_string()),
            None => {
                let text = e.to_string();
                VmError::Trap(
                    text.lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(200)
                        .collect(),
                )
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
                VmError::Unavailable(e.to_string())
            }
            other => VmError::Protocol(other.to_string()),
        }
    }
}

impl From<RuntimeError> for VmError {
    /// A VM that cannot be made is [`VmError::Unavailable`] with the runtime error's message.
    fn from(e: RuntimeError) -> Self {
        VmError::Unavailable(e.to_string())
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
        assert!(matches!(
            VmError::from_trap(&trap(wasmtime::Trap::StackOverflow), false),
            VmError::Trap(m) if m.starts_with("RangeError: Maximum call stack size exceeded")
        ));
        let long = wasmtime::format_err!("{}\nsecond line", "x".repeat(300));
        assert_eq!(
            VmError::from_trap(&long, false),
            VmError::Trap("x".repeat(200))
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
