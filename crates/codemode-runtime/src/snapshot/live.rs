//! The live VM a [`crate::Snapshot`] may refer to (docs/architecture.md, "Parked VMs kept
//! alive"): a key into its runtime's kept VMs, which is not part of the snapshot's value.

use std::sync::Arc;

/// The live VM a snapshot was captured from, kept by its runtime under a key so that
/// restoring the snapshot in this process continues that VM in place (docs/architecture.md,
/// "Parked VMs kept alive"). Cloned with the snapshot; when the last clone goes, the guard
/// tells the runtime to drop the VM. Never serialised, and equal snapshots may differ in it.
#[derive(Clone, Default)]
pub(crate) struct LiveVm(pub(crate) Option<Arc<LiveVmKey>>);

/// The key a kept VM is held under, and what to do when no snapshot refers to it any more.
pub(crate) struct LiveVmKey {
    pub(crate) key: u64,
    pub(crate) forget: Box<dyn Fn(u64) + Send + Sync>,
}

impl Drop for LiveVmKey {
    fn drop(&mut self) {
        (self.forget)(self.key);
    }
}

impl LiveVm {
    /// The key of the kept VM, if there is one.
    pub(crate) fn key(&self) -> Option<u64> {
        self.0.as_ref().map(|k| k.key)
    }
}

impl PartialEq for LiveVm {
    /// Always equal: which VM a snapshot came from is not part of its value.
    fn eq(&self, _other: &LiveVm) -> bool {
        true
    }
}

impl std::fmt::Debug for LiveVm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.key() {
            Some(key) => write!(f, "LiveVm({key})"),
            None => f.write_str("LiveVm(none)"),
        }
    }
}
