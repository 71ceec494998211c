//! The checked path for files an operator names, on real files: FIFOs made with `mkfifo`, files
//! chowned to uid 65534 (the tests run as root in CI; as another user they skip that part),
//! symbolic links, devices and directories (docs/threat-model.md, "Files an operator names").

#![cfg(unix)]

use codemode_files::{
    check_dir, create_private, open_read, read_to_string, FileError, Rules, MAX_FILE_BYTES,
};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// This process's effective uid: the owner of a file it just created.
fn euid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    tempfile::tempfile().unwrap().metadata().unwrap().uid()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn read_err(path: &Path, rules: &Rules) -> String {
    read_to_string(path, rules, MAX_FILE_BYTES)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_fifo_is_refused_at_once_for_reading_and_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("t.jsonl");
    mkfifo(&fifo);
    let started = Instant::now();
    assert_eq!(
        read_err(&fifo, &Rules::READ),
        "it is a FIFO (named pipe), not a regular file"
    );
    assert_eq!(
        create_private(&fifo, false).unwrap_err().to_string(),
        "it is a FIFO (named pipe), not a regular file"
    );
    assert_eq!(
        create_private(&fifo, true).unwrap_err().to_string(),
        "it is a FIFO (named pipe), not a regular file"
    );
    // No reader and no writer ever came: a blocking open would still be waiting.
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn devices_directories_and_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        read_err(Path::new("/dev/null"), &Rules::READ),
        "it is a character device, not a regular file"
    );
    assert_eq!(
        create_private(Path::new("/dev/null"), false)
            .unwrap_err()
            .to_string(),
        "it is a character device, not a regular file"
    );
    assert_eq!(
        read_err(dir.path(), &Rules::READ),
        "it is a directory, not a regular file"
    );
    let target = dir.path().join("target.json");
    std::fs::write(&target, "{}").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(
        read_err(&link, &Rules::READ),
        "it is a symbolic link; name the file it points to"
    );
    assert_eq!(
        create_private(&link, false).unwrap_err().to_string(),
        "it is a symbolic link; name the file it points to"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
    assert_eq!(
        check_dir(&target, &Rules::PRIVATE).unwrap_err().to_string(),
        "it is a regular file, not a directory"
    );
    assert!(!check_dir(&dir.path().join("absent"), &Rules::PRIVATE).unwrap());
    assert!(matches!(
        read_to_string(&dir.path().join("absent"), &Rules::READ, 10),
        Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
    ));
}

#[test]
fn a_file_another_user_owns_is_refused_and_left_untouched() {
    if euid() != 0 {
        eprintln!("skipped: chown to uid 65534 needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let planted = dir.path().join("t.jsonl");
    std::fs::write(&planted, "planted\n").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
    assert_eq!(
        create_private(&planted, false).unwrap_err().to_string(),
        "it belongs to uid 65534, not to this user (uid 0)"
    );
    assert_eq!(
        create_private(&planted, true).unwrap_err().to_string(),
        "it belongs to uid 65534, not to this user (uid 0)"
    );
    assert_eq!(
        read_err(&planted, &Rules::READ),
        "it belongs to uid 65534, not to this user (uid 0)"
    );
    // Not truncated, not chmodded.
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "planted\n");
    assert_eq!(mode(&planted), 0o666);

    let sub = dir.path().join("store");
    std::fs::create_dir(&sub).unwrap();
    std::os::unix::fs::chown(&sub, Some(65534), None).unwrap();
    assert_eq!(
        check_dir(&sub, &Rules::PRIVATE).unwrap_err().to_string(),
        "it belongs to uid 65534, not to this user (uid 0)"
    );
}

#[test]
fn modes_are_checked_per_rules() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.json");
    std::fs::write(&file, "{\"a\": 1}").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    assert_eq!(
        read_to_string(&file, &Rules::READ, MAX_FILE_BYTES).unwrap(),
        "{\"a\": 1}"
    );
    assert_eq!(
        read_err(&file, &Rules::PRIVATE),
        "its mode is 0664 and others can read or write it; chmod 600 it"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(
        read_err(&file, &Rules::READ),
        "its mode is 0666 and others can write it; chmod o-w it"
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        check_dir(dir.path(), &Rules::PRIVATE)
            .unwrap_err()
            .to_string(),
        "its mode is 0755 and others can read or write it; chmod 700 it"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(open_read(&file, &Rules::PRIVATE).is_ok());
}

#[test]
fn sizes_are_capped_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.json");
    std::fs::write(&file, "0123456789").unwrap();
    assert_eq!(
        read_to_string(&file, &Rules::READ, 9)
            .unwrap_err()
            .to_string(),
        "it is 10 bytes, more than the 9-byte limit"
    );
    assert_eq!(
        read_to_string(&file, &Rules::READ, 10).unwrap(),
        "0123456789"
    );
    std::fs::write(&file, [0xff, 0xfe]).unwrap();
    assert_eq!(
        read_err(&file, &Rules::READ),
        "stream did not contain valid UTF-8"
    );
}

#[test]
fn private_files_are_created_0600_truncated_or_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    create_private(&path, false)
        .unwrap()
        .write_all(b"one\n")
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    create_private(&path, true)
        .unwrap()
        .write_all(b"two\n")
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    create_private(&path, false)
        .unwrap()
        .write_all(b"three\n")
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
    assert_eq!(mode(&path), 0o600);
}
