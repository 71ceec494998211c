//! The cache's refusal rules on a tiny module (moved here from `tests/integration/cache.rs`, where each case
//! compiled the whole guest twice: 467 s of CI time). [`load_or_build`] is the function
//! [`crate::Runtime::new`] calls; what it refuses and how it recovers does not depend on the
//! module it stores, so an empty wasm module (compiled in microseconds) proves the same rules.
//! `tests/integration/cache.rs` still runs the real guest through the runtime: a miss, a hit, and a
//! tampered file refused and replaced.
//!
//! Each test points [`load_or_build`] at its own cache directory and records the cache's log
//! events. A hit is the event "loaded the compiled guest …" with no warning (preceded by
//! "checked the SHA-256 …" when the file's verification record did not vouch for it); a refusal
//! is exactly one warning naming the reason, then the module is compiled and (where the directory
//! is usable) stored again with its record. Tests run as root, so "another user" is uid 65534 set
//! with `chown`.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use tracing::Level;
use tracing_subscriber::layer::SubscriberExt;
use wasmtime::Engine;

use super::capture::{Capture, Events};
use super::record::Identity;
use super::{load_or_build, Origin};

/// The smallest valid wasm module: magic and version.
const EMPTY_MODULE: &[u8] = b"\0asm\x01\0\0\0";

const OTHER_UID: u32 = 65534;
const TRAILER_LEN: usize = 48;

/// Loads (or builds and stores) the empty module through the cache in `dir` and returns what
/// the cache logged, checking that a logged hit is reported as [`Origin::Cache`].
fn load(dir: &Path) -> Vec<(Level, String)> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    let engine = ENGINE.get_or_init(Engine::default);
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(Capture(events.clone()));
    let origin = tracing::subscriber::with_default(subscriber, || {
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
    let events = events.lock().unwrap().clone();
    let hit = events
        .iter()
        .any(|(_, m)| m.starts_with("loaded the compiled guest"));
    assert_eq!(origin == Origin::Cache, hit, "{events:?}");
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

/// A fresh private cache directory holding a valid copy of the template file (mode 0600) and
/// no verification record.
fn populated() -> (tempfile::TempDir, PathBuf) {
    let (name, bytes) = template();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    (dir, path)
}

fn file_refusal(path: &Path, reason: &str) -> String {
    format!(
        "refusing the module cache file {}: {reason}; compiling the guest",
        path.display()
    )
}

fn dir_refusal(dir: &Path, reason: &str) -> String {
    format!(
        "refusing the module cache directory {}: {reason}; compiling the guest",
        dir.display()
    )
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

/// The debug event of a load that hashed the file and wrote its verification record.
fn checked(path: &Path) -> (Level, String) {
    (
        Level::DEBUG,
        format!(
            "checked the SHA-256 of the module cache file {} and recorded it in {}",
            path.display(),
            record_path(path).display()
        ),
    )
}

/// The verification record beside the cache file `path`.
fn record_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

/// The record the cache writes for the file at `path` as it is now.
fn expected_record(path: &Path) -> Vec<u8> {
    let bytes = fs::read(path).unwrap();
    let sha256: [u8; 32] = bytes[bytes.len() - 32..].try_into().unwrap();
    Identity::of(&fs::metadata(path).unwrap(), &sha256)
        .bytes()
        .to_vec()
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
    let first = load(&dir);
    let path = cache_file(&dir);
    assert_eq!(first, vec![stored(&path)]);
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    // Trailer: magic, payload length, SHA-256 of the payload, after the payload (an ELF file,
    // which wasmtime maps from offset 0).
    let bytes = fs::read(&path).unwrap();
    let payload_len = bytes.len() - TRAILER_LEN;
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(&bytes[payload_len..payload_len + 8], b"CMCWASM\x02");
    let len = u64::from_le_bytes(bytes[payload_len + 8..payload_len + 16].try_into().unwrap());
    assert_eq!(len as usize, payload_len);
    assert_eq!(
        &bytes[payload_len + 16..],
        Sha256::digest(&bytes[..payload_len]).as_slice()
    );
    // Its verification record, written with it: 0600, vouching for exactly this file (magic,
    // device, inode, size, modification and status-change times, the trailer's SHA-256).
    let record = record_path(&path);
    assert_eq!(fs::metadata(&record).unwrap().mode() & 0o7777, 0o600);
    let written = fs::read(&record).unwrap();
    assert_eq!(written, expected_record(&path));
    assert_eq!(written.len(), 96);
    assert_eq!(&written[..8], b"CMCVRFY\x01");
    let field = |i: usize| u64::from_le_bytes(written[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    assert_eq!(
        [field(0), field(1), field(2), field(5), field(6)],
        [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.ctime() as u64,
            meta.ctime_nsec() as u64
        ]
    );
    assert_eq!(&written[64..], &bytes[payload_len + 16..]);
    let inode = meta.ino();

    assert_eq!(load(&dir), vec![loaded(&path)]);
    // Not rewritten: same file, and no temp files left behind.
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);
}

#[test]
fn a_valid_copy_is_hashed_once_then_hit_by_its_record() {
    let (dir, path) = populated();
    assert_eq!(load(dir.path()), vec![checked(&path), loaded(&path)]);
    assert_eq!(
        fs::read(record_path(&path)).unwrap(),
        expected_record(&path)
    );
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
    let middle = (bytes.len() - TRAILER_LEN) / 2;
    bytes[middle] ^= 0xff;
    assert_file_refused(overwrite(bytes), "its content does not match its SHA-256");
}

#[test]
fn a_tampered_trailer_hash_is_refused() {
    let mut bytes = template().1.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    assert_file_refused(overwrite(bytes), "its content does not match its SHA-256");
}

#[test]
fn a_truncated_file_is_refused() {
    // Cut at the end: the trailer is gone.
    let half = template().1.len() / 2;
    assert_file_refused(
        overwrite(template().1[..half].to_vec()),
        "it has no codemode cache trailer",
    );
}

#[test]
fn a_file_shorter_than_a_trailer_is_refused() {
    assert_file_refused(
        overwrite(template().1[..20].to_vec()),
        "it is truncated: 20 bytes, 48 expected",
    );
}

#[test]
fn payload_bytes_missing_before_an_intact_trailer_are_refused() {
    let mut bytes = template().1.clone();
    let full = bytes.len();
    bytes.drain(10..15);
    assert_file_refused(
        overwrite(bytes),
        &format!("it is truncated: {} bytes, {full} expected", full - 5),
    );
}

#[test]
fn payload_bytes_added_before_an_intact_trailer_are_refused() {
    let full = template().1.len();
    let bytes = [&template().1[..10], &b"extra"[..], &template().1[10..]].concat();
    assert_file_refused(
        overwrite(bytes),
        &format!("it has extra bytes: {} bytes, {full} expected", full + 5),
    );
}

#[test]
fn appended_bytes_are_refused() {
    let mut bytes = template().1.clone();
    bytes.extend_from_slice(b"extra");
    assert_file_refused(overwrite(bytes), "it has no codemode cache trailer");
}

#[test]
fn a_trailerless_module_is_refused() {
    // Raw `Module::serialize` output (what the first cache format stored).
    let bytes = &template().1;
    assert_file_refused(
        overwrite(bytes[..bytes.len() - TRAILER_LEN].to_vec()),
        "it has no codemode cache trailer",
    );
}

#[test]
fn a_file_changed_in_place_after_its_record_is_hashed_again_and_refused() {
    let (dir, path) = populated();
    assert_eq!(load(dir.path()), vec![checked(&path), loaded(&path)]);
    // Same inode, same size, same modification time: only the status-change time moves, and
    // the record no longer vouches for the file.
    // Past the kernel's timestamp granularity (a tick, at most 10 ms), so the write below gets
    // a later status-change time than the one recorded.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    let middle = (template().1.len() - TRAILER_LEN) as u64 / 2;
    file.seek(SeekFrom::Start(middle)).unwrap();
    file.write_all(&[template().1[middle as usize] ^ 0xff])
        .unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    let events = load(dir.path());
    assert_eq!(
        warnings(&events),
        [file_refusal(
            &path,
            "its content does not match its SHA-256"
        )]
    );
    assert_eq!(events.last(), Some(&stored(&path)));
    assert_replaced_and_hit(dir.path(), &path);
}

#[test]
fn a_stale_record_is_not_trusted_and_is_rewritten() {
    let (dir, path) = populated();
    assert_eq!(load(dir.path()), vec![checked(&path), loaded(&path)]);
    let record = record_path(&path);
    let old = fs::read(&record).unwrap();
    // The file replaced by an identical copy (a new inode): the record is for the old one.
    let copy = dir.path().join("copy");
    fs::copy(&path, &copy).unwrap();
    fs::rename(&copy, &path).unwrap();
    assert_eq!(load(dir.path()), vec![checked(&path), loaded(&path)]);
    let new = fs::read(&record).unwrap();
    assert_ne!(new, old);
    assert_eq!(new, expected_record(&path));
    assert_eq!(load(dir.path()), vec![loaded(&path)]);
    // A record for another hash, or cut short: stale as well.
    let mut other_hash = new.clone();
    other_hash[95] ^= 1;
    for stale in [
        other_hash,
        new[..50].to_vec(),
        [&new[..], &b"x"[..]].concat(),
    ] {
        fs::write(&record, &stale).unwrap();
        assert_eq!(load(dir.path()), vec![checked(&path), loaded(&path)]);
        assert_eq!(fs::read(&record).unwrap(), expected_record(&path));
    }
}

#[test]
fn a_record_another_user_could_write_is_ignored_and_cannot_vouch_for_a_changed_file() {
    // Another user's record that matches a tampered file exactly is still not trusted.
    let (dir, path) = populated();
    let mut bytes = template().1.clone();
    let middle = (bytes.len() - TRAILER_LEN) / 2;
    bytes[middle] ^= 0xff;
    let record = record_path(&path);
    for (mutate, reason) in [
        (
            Box::new(|r: &Path| {
                std::os::unix::fs::chown(r, Some(OTHER_UID), Some(OTHER_UID)).unwrap()
            }) as Box<dyn Fn(&Path)>,
            format!(
                "it is owned by uid 65534, not by the current user (uid {})",
                current_uid()
            ),
        ),
        (
            Box::new(|r: &Path| fs::set_permissions(r, fs::Permissions::from_mode(0o620)).unwrap()),
            "it is writable by group or others (mode 620)".to_string(),
        ),
    ] {
        fs::write(&path, &bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&record, expected_record(&path)).unwrap();
        fs::set_permissions(&record, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&record, Some(current_uid()), Some(current_uid())).unwrap();
        mutate(&record);
        let events = load(dir.path());
        assert_eq!(
            warnings(&events),
            [
                format!(
                    "ignoring the module cache record {}: {reason}",
                    record.display()
                ),
                file_refusal(&path, "its content does not match its SHA-256"),
            ]
        );
        assert_eq!(events.last(), Some(&stored(&path)));
        // The store replaced both with files of ours.
        assert_eq!(fs::read(&record).unwrap(), expected_record(&path));
        assert_eq!(fs::metadata(&record).unwrap().uid(), current_uid());
        assert_eq!(fs::metadata(&record).unwrap().mode() & 0o7777, 0o600);
        assert_replaced_and_hit(dir.path(), &path);
    }
}

#[test]
fn a_symlinked_record_is_ignored_and_replaced_not_followed() {
    let (dir, path) = populated();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("record");
    fs::write(&target, b"not ours to change").unwrap();
    let record = record_path(&path);
    std::os::unix::fs::symlink(&target, &record).unwrap();
    let events = load(dir.path());
    assert_eq!(
        warnings(&events),
        [format!(
            "ignoring the module cache record {}: it is a symbolic link",
            record.display()
        )]
    );
    assert_eq!(events[1..], [checked(&path), loaded(&path)]);
    assert!(fs::symlink_metadata(&record).unwrap().file_type().is_file());
    assert_eq!(fs::read(&target).unwrap(), b"not ours to change");
    assert_eq!(load(dir.path()), vec![loaded(&path)]);
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
