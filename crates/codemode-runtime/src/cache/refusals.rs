//! The cache's refusal rules on a tiny module (moved here from `tests/cache.rs`, where each case
//! compiled the whole guest twice: 467 s of CI time). [`load_or_build`] is the function
//! [`crate::Runtime::new`] calls; what it refuses and how it recovers does not depend on the
//! module it stores, so an empty wasm module (compiled in microseconds) proves the same rules.
//! `tests/cache.rs` still runs the real guest through the runtime: a miss, a hit, and a
//! tampered file refused and replaced.
//!
//! Each test points [`load_or_build`] at its own cache directory and records the cache's log
//! events. A hit is the event "loaded the compiled guest …" with no warning; a refusal is exactly
//! one warning naming the reason, then the module is compiled and (where the directory is
//! usable) stored again. Tests run as root, so "another user" is uid 65534 set with `chown`.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tracing::Level;
use wasmtime::Engine;

use super::capture::{
    assert_stored_private_then_hit, cache_file, captured, file_refusal, loaded, stored, warnings,
    HEADER_LEN,
};
use super::{load_or_build, Origin};

/// The smallest valid wasm module: magic and version.
const EMPTY_MODULE: &[u8] = b"\0asm\x01\0\0\0";

const OTHER_UID: u32 = 65534;

/// Loads (or builds and stores) the empty module through the cache in `dir` and returns what
/// the cache logged, checking that a logged hit is reported as [`Origin::Cache`].
fn load(dir: &Path) -> Vec<(Level, String)> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    let engine = ENGINE.get_or_init(Engine::default);
    let (origin, events) = captured(|| {
        load_or_build(
            engine,
            "0123456789abcdef0123456789abcdef",
            Some("refusals"),
            Some(dir),
            || Ok(EMPTY_MODULE.to_vec()),
        )
        .expect("the module is built with or without the cache")
        .1
    });
    let hit = events
        .iter()
        .any(|(_, m)| m.starts_with("loaded the compiled guest"));
    assert_eq!(origin == Origin::Cache, hit, "{events:?}");
    events
}

/// A cache populated once per test binary: its file name and bytes.
fn template() -> &'static (String, Vec<u8>) {
    static TEMPLATE: OnceLock<(String, Vec<u8>)> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let events = load(dir.path());
        assert_eq!(warnings(&events), Vec::<String>::new());
        let file = cache_file(dir.path());
        (
            file.file_name().unwrap().to_str().unwrap().to_string(),
            fs::read(&file).unwrap(),
        )
    })
}

/// A fresh private cache directory holding a valid copy of the template file (mode 0600).
fn populated() -> (tempfile::TempDir, PathBuf) {
    let (name, bytes) = template();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    (dir, path)
}

fn dir_refusal(dir: &Path, reason: &str) -> String {
    format!(
        "refusing the module cache directory {}: {reason}; compiling the guest",
        dir.display()
    )
}

/// After a refused file was replaced: a valid file of ours (0600), and the next load hits it.
fn assert_replaced_and_hit(dir: &Path, path: &Path) {
    let meta = fs::symlink_metadata(path).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.uid(), current_uid());
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!(load(dir), vec![loaded(path)]);
}

/// Plants a valid cache file, changes it with `mutate`, and checks that loading refuses it for
/// `reason` (one warning), compiles, replaces it and hits it next time.
fn assert_file_refused(mutate: impl FnOnce(&Path), reason: &str) {
    let (dir, path) = populated();
    mutate(&path);
    let events = load(dir.path());
    assert_eq!(warnings(&events), [file_refusal(&path, reason)]);
    assert_eq!(events.last(), Some(&stored(&path)));
    assert_replaced_and_hit(dir.path(), &path);
}

/// Writes `bytes` over the cache file.
fn overwrite(bytes: Vec<u8>) -> impl FnOnce(&Path) {
    move |path| fs::write(path, bytes).unwrap()
}

fn current_uid() -> u32 {
    // Tests run as root; the cache compares with the effective uid.
    fs::metadata("/proc/self").unwrap().uid()
}

#[test]
fn a_fresh_directory_is_created_private_and_the_second_load_hits() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a").join("codemode");
    assert_stored_private_then_hit(&dir, load);
}

#[test]
fn a_valid_copy_hits() {
    let (dir, path) = populated();
    assert_eq!(load(dir.path()), vec![loaded(&path)]);
}

#[test]
fn a_file_owned_by_another_user_is_refused() {
    assert_file_refused(
        |path| std::os::unix::fs::chown(path, Some(OTHER_UID), Some(OTHER_UID)).unwrap(),
        &format!(
            "it is owned by uid 65534, not by the current user (uid {})",
            current_uid()
        ),
    );
}

#[test]
fn a_group_writable_file_is_refused() {
    assert_file_refused(
        |path| fs::set_permissions(path, fs::Permissions::from_mode(0o620)).unwrap(),
        "it is writable by group or others (mode 620)",
    );
}

#[test]
fn a_world_writable_file_is_refused() {
    assert_file_refused(
        |path| fs::set_permissions(path, fs::Permissions::from_mode(0o606)).unwrap(),
        "it is writable by group or others (mode 606)",
    );
}

#[test]
fn a_symlinked_file_is_refused_even_to_a_valid_file() {
    let (dir, path) = populated();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("valid.cwasm");
    fs::rename(&path, &target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert_eq!(
        warnings(&load(dir.path())),
        [file_refusal(&path, "it is a symbolic link")]
    );
    // The link was replaced by a file; its target is untouched.
    assert_eq!(fs::read(&target).unwrap(), template().1);
    assert_replaced_and_hit(dir.path(), &path);
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let (dir, path) = populated();
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    assert_eq!(
        warnings(&load(dir.path())),
        [
            file_refusal(&path, "it is not a regular file"),
            // Storing cannot rename over the directory either.
            format!(
                "cannot write the module cache {}: Is a directory (os error 21)",
                path.display()
            )
        ]
    );
    assert!(fs::metadata(&path).unwrap().is_dir());
    // The failed store removed its temp file.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn tampered_bytes_are_refused() {
    let mut bytes = template().1.clone();
    let middle = HEADER_LEN + (bytes.len() - HEADER_LEN) / 2;
    bytes[middle] ^= 0xff;
    assert_file_refused(overwrite(bytes), "its content does not match its SHA-256");
}

#[test]
fn a_tampered_header_hash_is_refused() {
    let mut bytes = template().1.clone();
    bytes[16] ^= 0x01;
    assert_file_refused(overwrite(bytes), "its content does not match its SHA-256");
}

#[test]
fn a_truncated_file_is_refused() {
    let full = template().1.len();
    let half = full / 2;
    assert_file_refused(
        overwrite(template().1[..half].to_vec()),
        &format!("it is truncated: {half} bytes, the header says {full}"),
    );
}

#[test]
fn a_file_cut_inside_its_header_is_refused() {
    assert_file_refused(
        overwrite(template().1[..20].to_vec()),
        "it is truncated: 20 bytes, the header says 48",
    );
}

#[test]
fn appended_bytes_are_refused() {
    let mut bytes = template().1.clone();
    let full = bytes.len();
    bytes.extend_from_slice(b"extra");
    assert_file_refused(
        overwrite(bytes),
        &format!(
            "it has trailing bytes: {} bytes, the header says {full}",
            full + 5
        ),
    );
}

#[test]
fn a_headerless_module_is_refused() {
    // What the previous cache format wrote: raw `Module::serialize` output.
    assert_file_refused(
        overwrite(template().1[HEADER_LEN..].to_vec()),
        "it has no codemode cache header",
    );
}

#[test]
fn a_world_writable_directory_is_refused_and_left_alone() {
    let (dir, path) = populated();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let inode = fs::metadata(&path).unwrap().ino();
    assert_eq!(
        load(dir.path()),
        vec![(
            Level::WARN,
            dir_refusal(dir.path(), "it is writable by group or others (mode 777)")
        )]
    );
    // Neither read nor written.
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_group_writable_sticky_directory_is_refused() {
    let (dir, _) = populated();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1770)).unwrap();
    assert_eq!(
        warnings(&load(dir.path())),
        [dir_refusal(
            dir.path(),
            "it is writable by group or others (mode 1770)"
        )]
    );
}

#[test]
fn a_directory_owned_by_another_user_is_refused_and_left_alone() {
    let (dir, path) = populated();
    std::os::unix::fs::chown(dir.path(), Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let inode = fs::metadata(&path).unwrap().ino();
    assert_eq!(
        load(dir.path()),
        vec![(
            Level::WARN,
            dir_refusal(
                dir.path(),
                &format!(
                    "it is owned by uid 65534, not by the current user (uid {})",
                    current_uid()
                )
            )
        )]
    );
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_symlinked_directory_is_refused_and_its_target_left_alone() {
    // Another user pre-creates the per-user fallback as a link to one of our directories (say
    // `~/.ssh`): the cache must neither read nor write through it.
    let ours = tempfile::tempdir().unwrap();
    fs::set_permissions(ours.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let link = parent.path().join("codemode-cache-link");
    std::os::unix::fs::symlink(ours.path(), &link).unwrap();
    assert_eq!(
        load(&link),
        vec![(Level::WARN, dir_refusal(&link, "it is a symbolic link"))]
    );
    assert_eq!(fs::read_dir(ours.path()).unwrap().count(), 0);
}

#[test]
fn a_file_in_place_of_the_directory_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let not_a_dir = root.path().join("cache");
    fs::write(&not_a_dir, b"x").unwrap();
    assert_eq!(
        load(&not_a_dir),
        vec![(
            Level::WARN,
            dir_refusal(&not_a_dir, "it is not a directory")
        )]
    );
    assert_eq!(fs::read(&not_a_dir).unwrap(), b"x");
}
