//! Test support shared by the cache's unit tests (`refusals.rs`) and `tests/cache.rs` (which
//! includes this file by path): a `tracing` layer that records what the cache logged, the
//! warnings and the two debug events (`loaded`, `stored`) the tests compare it with, the one
//! cache file a directory holds, and the first two loads into a fresh directory (stored private,
//! then hit).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// The length of a cache file's header: magic (8 bytes), payload length (8), SHA-256 (32).
pub(crate) const HEADER_LEN: usize = 48;

/// `(level, message)` of every event the cache logged.
pub(crate) type Events = Arc<Mutex<Vec<(Level, String)>>>;

/// Records each event of `codemode_runtime::cache` (its level and message) into its [`Events`].
pub(crate) struct Capture(pub(crate) Events);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if !event
            .metadata()
            .target()
            .starts_with("codemode_runtime::cache")
        {
            return;
        }
        struct Message(String);
        impl Visit for Message {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), message.0));
    }
}

/// Runs `f` with a [`Capture`] as the thread's subscriber: what `f` returned and what the cache
/// logged meanwhile, in order.
pub(crate) fn captured<R>(f: impl FnOnce() -> R) -> (R, Vec<(Level, String)>) {
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(Capture(events.clone()));
    let result = tracing::subscriber::with_default(subscriber, f);
    let events = events.lock().unwrap().clone();
    (result, events)
}

/// The messages of the `WARN` events among `events`, in order.
pub(crate) fn warnings(events: &[(Level, String)]) -> Vec<String> {
    events
        .iter()
        .filter(|(level, _)| *level == Level::WARN)
        .map(|(_, m)| m.clone())
        .collect()
}

/// The single cache file (`*.cwasm`) in `dir`; panics when there is not exactly one.
pub(crate) fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// The debug event of a hit on the cache file `path`.
pub(crate) fn loaded(path: &Path) -> (Level, String) {
    (
        Level::DEBUG,
        format!(
            "loaded the compiled guest from the module cache {}",
            path.display()
        ),
    )
}

/// The debug event of the compiled guest stored in the cache file `path`.
pub(crate) fn stored(path: &Path) -> (Level, String) {
    (
        Level::DEBUG,
        format!(
            "stored the compiled guest in the module cache {}",
            path.display()
        ),
    )
}

/// The warning of a cache file `path` refused for `reason`.
pub(crate) fn file_refusal(path: &Path, reason: &str) -> String {
    format!(
        "refusing the module cache file {}: {reason}; compiling the guest",
        path.display()
    )
}

/// Loads twice with `load` (which returns what the cache logged) into `dir`, which does not
/// exist yet: the first load creates it (mode 0700) and stores one cache file (mode 0600, a
/// valid header: magic, payload length, SHA-256 of the payload); the second hits that file
/// without rewriting it or leaving a temporary file. Returns the file's path and bytes.
pub(crate) fn assert_stored_private_then_hit(
    dir: &Path,
    load: impl Fn(&Path) -> Vec<(Level, String)>,
) -> (PathBuf, Vec<u8>) {
    let first = load(dir);
    let path = cache_file(dir);
    assert_eq!(first, vec![stored(&path)]);
    assert_eq!(fs::metadata(dir).unwrap().mode() & 0o7777, 0o700);
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    let bytes = fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"CMCWASM\x01");
    let len = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    assert_eq!(len as usize, bytes.len() - HEADER_LEN);
    assert_eq!(
        &bytes[16..HEADER_LEN],
        Sha256::digest(&bytes[HEADER_LEN..]).as_slice()
    );
    let inode = meta.ino();

    assert_eq!(load(dir), vec![loaded(&path)]);
    // Not rewritten: same file, and no temp files left behind.
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(dir).unwrap().count(), 1);
    (path, bytes)
}
