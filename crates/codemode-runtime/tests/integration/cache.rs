//! The compiled-module cache with the real guest, through [`Runtime::new`]: a fresh directory is
//! created private and stored into, the second runtime loads the stored guest, and a tampered
//! file is refused (one warning), the guest compiled again, the file replaced and hit next time.
//!
//! Every other refusal rule (owners, modes, links, truncation, headers, directories) is checked
//! in `src/cache/refusals.rs` on an empty wasm module through the same function: those cases
//! compiled the whole guest twice each here, 467 s of CI time, for rules that do not depend on
//! the module.

#[path = "../../src/cache/capture.rs"]
mod capture;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use capture::{Capture, Events};
use codemode_runtime::{Runtime, RuntimeOptions};
use sha2::{Digest, Sha256};
use tracing::Level;
use tracing_subscriber::layer::SubscriberExt;

const TRAILER_LEN: usize = 48;

/// Creates a runtime caching in `dir` and returns what the cache logged.
fn load(dir: &Path) -> Vec<(Level, String)> {
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(Capture(events.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let options = RuntimeOptions {
            cache_dir: Some(dir.to_path_buf()),
            max_live_vms: 1,
            ..RuntimeOptions::default()
        };
        Runtime::new(options).expect("the runtime starts with or without the cache");
    });
    let events = events.lock().unwrap().clone();
    events
}

fn warnings(events: &[(Level, String)]) -> Vec<String> {
    events
        .iter()
        .filter(|(level, _)| *level == Level::WARN)
        .map(|(_, m)| m.clone())
        .collect()
}

/// The single cache file in `dir`.
fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn loaded(path: &Path) -> (Level, String) {
    (
        Level::DEBUG,
        format!(
            "loaded the compiled guest from the module cache {}",
            path.display()
        ),
    )
}

fn stored(path: &Path) -> (Level, String) {
    (
        Level::DEBUG,
        format!(
            "stored the compiled guest in the module cache {}",
            path.display()
        ),
    )
}

#[test]
fn the_real_guest_is_stored_then_hit_and_a_tampered_copy_replaced() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a").join("codemode");
    let first = load(&dir);
    let path = cache_file(&dir);
    assert_eq!(first, vec![stored(&path)]);
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    // Trailer after the payload: magic, payload length, SHA-256 of the payload.
    let mut bytes = fs::read(&path).unwrap();
    let payload_len = bytes.len() - TRAILER_LEN;
    assert_eq!(&bytes[payload_len..payload_len + 8], b"CMCWASM\x02");
    let len = u64::from_le_bytes(bytes[payload_len + 8..payload_len + 16].try_into().unwrap());
    assert_eq!(len as usize, payload_len);
    assert_eq!(
        &bytes[payload_len + 16..],
        Sha256::digest(&bytes[..payload_len]).as_slice()
    );
    let inode = meta.ino();

    assert_eq!(load(&dir), vec![loaded(&path)]);
    // Not rewritten: same file, and no temp files left behind (the file and its verification
    // record).
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);

    // A flipped byte in the payload: refused, compiled again, replaced, and hit next time.
    let middle = payload_len / 2;
    bytes[middle] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let events = load(&dir);
    assert_eq!(
        warnings(&events),
        [format!(
            "refusing the module cache file {}: its content does not match its SHA-256; compiling the guest",
            path.display()
        )]
    );
    assert_eq!(events.last(), Some(&stored(&path)));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
    assert_eq!(load(&dir), vec![loaded(&path)]);
}
