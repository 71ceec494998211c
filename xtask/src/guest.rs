//! `cargo xtask guest [--update | --check]`: builds the wasm guest fresh, reproducibly (the
//! nested build of `codemode-runtime`'s build.rs, `crates/codemode-runtime/guest/build_guest.rs`),
//! and compares it with the checked-in guest in `crates/codemode-runtime/guest/`:
//!
//! - no flag: print the fresh and checked-in hashes;
//! - `--update`: write the fresh `codemode_guest.wasm` and its `manifest.txt` (sha256, inputs
//!   sha256, toolchain versions);
//! - `--check`: fail when the fresh bytes, the inputs hash or the checked-in file differ from
//!   the manifest (a lint gate of `cargo xtask test`, so CI verifies the checked-in guest).

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // the build script and its test use the rest
#[path = "../../crates/codemode-runtime/guest/build_guest.rs"]
mod build_guest;

use build_guest::{Manifest, UPDATE_COMMAND};

/// What `cargo xtask guest` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Report,
    Update,
    Check,
}

/// `cargo xtask guest [--update | --check]` (see the module docs).
pub(crate) fn task(root: &Path, args: &[String]) -> Result<(), String> {
    let action = match args {
        [] => Action::Report,
        [a] if a == "--update" => Action::Update,
        [a] if a == "--check" => Action::Check,
        _ => {
            return Err(format!(
                "unexpected arguments {args:?}; usage: cargo xtask guest [--update | --check]"
            ))
        }
    };
    run(root, action)
}

/// The guest's clippy gate of `cargo xtask test` (`-D warnings`), with the build's flags and
/// target dir so it reuses the build's build-script runs (QuickJS's C compiled once).
pub(crate) fn clippy(root: &Path) -> Result<(), String> {
    let target = target_dir(root);
    std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = build_guest::build_command(
        &cargo,
        "clippy",
        root,
        &target,
        build_guest::cargo_home().as_deref(),
    )?;
    crate::cmd::run(cmd.args(["--", "-D", "warnings"]))
}

/// The `--check` lint gate of `cargo xtask test`.
pub(crate) fn check(root: &Path) -> Result<(), String> {
    run(root, Action::Check)
}

fn run(root: &Path, action: Action) -> Result<(), String> {
    let root = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let fresh = build(&root)?;
    let fresh_sha = build_guest::sha256_hex(&fresh);
    let inputs = build_guest::inputs_sha256(&root)?;
    let manifest_path = root.join(build_guest::PREBUILT_MANIFEST);
    let wasm_path = root.join(build_guest::PREBUILT_WASM);
    let recorded = std::fs::read_to_string(&manifest_path)
        .ok()
        .map(|text| Manifest::parse(&text));
    eprintln!(
        "fresh guest: {} bytes, sha256 {fresh_sha}; inputs sha256 {inputs}",
        fresh.len()
    );
    match action {
        Action::Report => {
            match &recorded {
                Some(Ok(m)) => eprintln!(
                    "checked-in guest: {} bytes, sha256 {}; inputs sha256 {} ({}, {}, wasi-libc {})",
                    m.wasm_bytes, m.wasm_sha256, m.inputs_sha256, m.rustc, m.clang, m.wasi_libc
                ),
                Some(Err(e)) => eprintln!("{}: {e}", manifest_path.display()),
                None => eprintln!("no checked-in guest ({})", manifest_path.display()),
            }
            Ok(())
        }
        Action::Update => {
            let manifest = Manifest {
                wasm_sha256: fresh_sha,
                wasm_bytes: fresh.len() as u64,
                inputs_sha256: inputs,
                rustc: first_line("rustc", &["-V"]),
                clang: first_line("clang-16", &["--version"]),
                wasi_libc: first_line("dpkg-query", &["-W", "-f=${Version}", "wasi-libc"]),
                files: build_guest::input_file_hashes(&root)?,
            };
            std::fs::write(&wasm_path, &fresh)
                .map_err(|e| format!("{}: {e}", wasm_path.display()))?;
            std::fs::write(&manifest_path, manifest.render())
                .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
            eprintln!(
                "wrote {} and {}; commit crates/codemode-runtime/guest/",
                build_guest::PREBUILT_WASM,
                build_guest::PREBUILT_MANIFEST
            );
            Ok(())
        }
        Action::Check => {
            let manifest = match recorded {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    return Err(format!(
                        "{}: {e}; run `{UPDATE_COMMAND}`",
                        manifest_path.display()
                    ))
                }
                None => {
                    return Err(format!(
                        "{} is missing; run `{UPDATE_COMMAND}` and commit crates/codemode-runtime/guest/",
                        manifest_path.display()
                    ))
                }
            };
            compare(&manifest, &fresh, &inputs, &root, &wasm_path)
        }
    }
}

/// The `--check` verdict: the checked-in file matches its manifest, the sources hash to the
/// manifest's inputs hash, and the fresh build's bytes are the manifest's.
fn compare(
    manifest: &Manifest,
    fresh: &[u8],
    inputs: &str,
    root: &Path,
    wasm_path: &Path,
) -> Result<(), String> {
    let checked_in =
        std::fs::read(wasm_path).map_err(|e| format!("{}: {e}", wasm_path.display()))?;
    let fix = format!("run `{UPDATE_COMMAND}` and commit crates/codemode-runtime/guest/");
    if build_guest::sha256_hex(&checked_in) != manifest.wasm_sha256 {
        return Err(format!(
            "{} does not match its manifest (sha256 {}, manifest {}); {fix}",
            wasm_path.display(),
            build_guest::sha256_hex(&checked_in),
            manifest.wasm_sha256
        ));
    }
    if inputs != manifest.inputs_sha256 {
        let changed =
            build_guest::changed_inputs(&manifest.files, &build_guest::input_file_hashes(root)?);
        return Err(build_guest::stale_message(
            &manifest.inputs_sha256,
            inputs,
            &changed,
        ));
    }
    let fresh_sha = build_guest::sha256_hex(fresh);
    if fresh_sha != manifest.wasm_sha256 {
        let toolchain = [
            ("rustc", first_line("rustc", &["-V"]), &manifest.rustc),
            (
                "clang",
                first_line("clang-16", &["--version"]),
                &manifest.clang,
            ),
            (
                "wasi-libc",
                first_line("dpkg-query", &["-W", "-f=${Version}", "wasi-libc"]),
                &manifest.wasi_libc,
            ),
        ];
        let differs: Vec<String> = toolchain
            .iter()
            .filter(|(_, now, then)| now != *then)
            .map(|(name, now, then)| format!("{name} is {now:?} here, {then:?} in the manifest"))
            .collect();
        let why = if differs.is_empty() {
            "the same sources and toolchain gave other bytes: the build is not reproducible \
             (docs/guest-abi.md, \"Building\")"
                .to_string()
        } else {
            format!("the toolchain differs: {}", differs.join("; "))
        };
        return Err(format!(
            "a fresh build of the guest ({} bytes, sha256 {fresh_sha}) differs from the checked-in \
             one ({} bytes, sha256 {}) built from the same sources; {why}. If the fresh build is \
             right, {fix}",
            fresh.len(),
            manifest.wasm_bytes,
            manifest.wasm_sha256
        ));
    }
    eprintln!("the checked-in guest matches a fresh build and its sources");
    Ok(())
}

/// The guest target dir the build script uses in this repository (`.cargo/config.toml` sets
/// `CODEMODE_GUEST_TARGET_DIR`; `cargo run` passes it on), so `--check` after a build reuses it.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CODEMODE_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .map(|d| if d.is_absolute() { d } else { root.join(d) })
        .unwrap_or_else(|| root.join("target").join("codemode-guest"))
}

/// Builds the guest as the build script does and returns its bytes.
fn build(root: &Path) -> Result<Vec<u8>, String> {
    let target = target_dir(root);
    std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = build_guest::build_command(
        &cargo,
        "build",
        root,
        &target,
        build_guest::cargo_home().as_deref(),
    )?;
    crate::cmd::run(&mut cmd)?;
    let wasm = build_guest::built_wasm(&target);
    let bytes = std::fs::read(&wasm).map_err(|e| format!("{}: {e}", wasm.display()))?;
    if !build_guest::is_wasm(&bytes) {
        return Err(format!("{} is not a WebAssembly module", wasm.display()));
    }
    Ok(bytes)
}

/// The first line of `program args…`'s output, or `unknown`.
fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}
