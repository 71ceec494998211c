//! The compiled-module cache with the real guest, through [`Runtime::new`]: a fresh directory is
//! created private and stored into, the second runtime loads the stored guest, and a tampered
//! file is refused (one warning), the guest compiled again, the file replaced and hit next time.
//!
//! Every other refusal rule (owners, modes, links, truncation, headers, directories) is checked
//! in `src/cache/refusals.rs` on an empty wasm module through the same function: those cases
//! compiled the whole guest twice each here, 467 s of CI time, for rules that do not depend on
//! the module.

#[path = "../src/cache/capture.rs"]
mod capture;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use capture::{
    assert_stored_private_then_hit, captured, file_refusal, loaded, stored, warnings, HEADER_LEN,
};
use codemode_runtime::{Runtime, RuntimeOptions};
use tracing::Level;

/// Creates a runtime caching in `dir` and returns what the cache logged.
fn load(dir: &Path) -> Vec<(Level, String)> {
    let options = RuntimeOptions {
        cache_dir: Some(dir.to_path_buf()),
        max_live_vms: 1,
        ..RuntimeOptions::default()
    };
    captured(|| Runtime::new(options).expect("the runtime starts with or without the cache")).1
}

#[test]
fn the_real_guest_is_stored_then_hit_and_a_tampered_copy_replaced() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a").join("codemode");
    let (path, mut bytes) = assert_stored_private_then_hit(&dir, load);

    // A flipped byte in the payload: refused, compiled again, replaced, and hit next time.
    let middle = HEADER_LEN + (bytes.len() - HEADER_LEN) / 2;
    bytes[middle] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let events = load(&dir);
    assert_eq!(
        warnings(&events),
        [file_refusal(
            &path,
            "its content does not match its SHA-256"
        )]
    );
    assert_eq!(events.last(), Some(&stored(&path)));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
    assert_eq!(load(&dir), vec![loaded(&path)]);
}
