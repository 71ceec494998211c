//! Files an operator names never crash or hang codemode (issue 27 items 1, 2 and 4,
//! docs/threat-model.md "Files an operator names"): a deeply nested `--config` is a usage error
//! (it used to overflow the stack, exit 134), a FIFO as `--trajectory`, `--config`, `--tools` or
//! `--mcp-config` is refused at once (a FIFO trajectory used to block startup forever), and a
//! trajectory file another user owns is refused and left as it was. Real processes, real FIFOs
//! (`mkfifo`), a real other owner (uid 65534; needs root, as CI has).

#![cfg(unix)]

use crate::common;

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{fifo, stderr_text as stderr};

/// Runs `codemode args…` with empty stdin, killed after 20 s (a hang fails the test instead of
/// stalling the suite).
fn codemode(args: &[&str]) -> Output {
    let mut child = common::spawn_with(
        common::codemode().args(args),
        Stdio::null(),
        Stdio::piped(),
        Stdio::piped(),
    );
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("codemode {args:?} hung for 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    Output {
        status: child.wait().unwrap(),
        stdout,
        stderr,
    }
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_deeply_nested_config_is_a_usage_error_for_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let deep = common::write_file(
        dir.path(),
        "deep.json5",
        &format!(
            "{{tools: {{codeMode: {}1{}}}}}",
            "{a:".repeat(20_000),
            "}".repeat(20_000)
        ),
    );
    let arrays = common::write_file(
        dir.path(),
        "arrays.json",
        &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    );
    for (file, column) in [(&deep, 395), (&arrays, 128)] {
        let want = format!(
            "codemode: config file {} is not valid JSON or JSON5: nested deeper than 127 levels at line 1 column {column}\n",
            file.display()
        );
        for args in [
            &["exec", "--config", s(file), "-e", "return 1"][..],
            &["config", "--config", s(file)][..],
            &["catalog", "--config", s(file)][..],
            &["session", "--config", s(file)][..],
        ] {
            let out = codemode(args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert_eq!(stderr(&out), want, "{args:?}");
        }
    }
}

#[test]
fn fifos_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path(), "named.pipe");
    let kind = "it is a FIFO (named pipe), not a regular file";
    let started = Instant::now();
    for (args, want) in [
        (
            vec!["session", "--trajectory", s(&fifo)],
            format!("codemode: --trajectory {}: {kind}\n", fifo.display()),
        ),
        (
            vec!["exec", "--trajectory", s(&fifo), "-e", "return 1"],
            format!("codemode: --trajectory {}: {kind}\n", fifo.display()),
        ),
        (
            vec!["exec", "--config", s(&fifo), "-e", "return 1"],
            format!(
                "codemode: cannot read config file {}: {kind}\n",
                fifo.display()
            ),
        ),
        (
            vec!["exec", "--tools", s(&fifo), "-e", "return 1"],
            format!("codemode: --tools {}: {kind}\n", fifo.display()),
        ),
        (
            vec!["exec", "--mcp-config", s(&fifo), "-e", "return 1"],
            format!("codemode: --mcp-config {}: {kind}\n", fifo.display()),
        ),
    ] {
        let out = codemode(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), want, "{args:?}");
    }
    // Nobody ever opened the other end: a blocking open would still be waiting.
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_trajectory_file_another_user_owns_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let planted = common::write_file(dir.path(), "t.jsonl", "planted\n");
    if std::fs::metadata(&planted).unwrap().uid() != 0 {
        eprintln!("skipped: chown to uid 65534 needs root");
        return;
    }
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
    for args in [
        &["exec", "--trajectory", s(&planted), "-e", "return 1"][..],
        &["session", "--trajectory", s(&planted)][..],
    ] {
        let out = codemode(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "codemode: --trajectory {}: it belongs to uid 65534, not to this user (uid 0)\n",
                planted.display()
            ),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "planted\n");

    // A config another user could have written (hooks run commands) is refused the same way.
    let config = common::write_file(dir.path(), "config.json", "{}");
    std::os::unix::fs::chown(&config, Some(65534), Some(65534)).unwrap();
    let out = codemode(&["exec", "--config", s(&config), "-e", "return 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "codemode: cannot read config file {}: it belongs to uid 65534, not to this user (uid 0)\n",
            config.display()
        )
    );
}

#[test]
fn operator_files_others_can_write_or_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tools = common::write_file(dir.path(), "tools.json", r#"[{"name": "a", "result": 1}]"#);
    std::fs::set_permissions(&tools, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = codemode(&["exec", "--tools", s(&tools), "-e", "return 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "codemode: --tools {}: its mode is 0666 and others can write it; chmod o-w it\n",
            tools.display()
        )
    );
    std::fs::set_permissions(&tools, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&tools, &link).unwrap();
    let out = codemode(&["exec", "--tools", s(&link), "-e", "return 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "codemode: --tools {}: it is a symbolic link; name the file it points to\n",
            link.display()
        )
    );
    let out = codemode(&["exec", "--tools", s(&tools), "-e", "return 1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
