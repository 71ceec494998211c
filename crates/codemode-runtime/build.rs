//! Embeds the wasm32-wasip1 guest (`crates/codemode-guest`). Where it comes from
//! (`guest/build_guest.rs`, docs/guest-abi.md "Building"):
//!
//! 1. `CODEMODE_GUEST_WASM=/path/to/codemode_guest.wasm`: that file.
//! 2. Else, with `CODEMODE_GUEST` unset or `auto`: a fresh nested
//!    `cargo build --release --target wasm32-wasip1` (reproducible: the same bytes from any
//!    checkout path) when clang-16, llvm-ar-16, wasi-libc and the wasm32-wasip1 target are
//!    installed; without them the checked-in `guest/codemode_guest.wasm`, after checking it
//!    against `guest/manifest.txt` (its sha256, and the sha256 of the sources it was built from),
//!    with a `cargo:warning` saying so. A stale checked-in guest is an error naming the fix.
//! 3. `CODEMODE_GUEST=build` always builds; `CODEMODE_GUEST=prebuilt` always embeds the
//!    checked-in guest (to try the no-clang path where clang is installed).
//!
//! Everything this script writes goes under `OUT_DIR` (the guest's own target dir is
//! `$OUT_DIR/codemode-guest-target`), so a project that depends on this crate never finds files
//! written into the dependency's checkout. `CODEMODE_GUEST_TARGET_DIR` moves the guest's target
//! dir elsewhere; this repository's `.cargo/config.toml` sets it to `target/codemode-guest`, so
//! debug, release and CI builds share one guest build (and CI's build cache keeps it).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

#[allow(dead_code)] // `cargo xtask guest` and tests/integration/prebuilt_guest.rs use the rest
#[path = "guest/build_guest.rs"]
mod build_guest;

use build_guest::Source;

const SETUP_HINT: &str = "\
codemode: building the wasm guest needs the wasm32-wasip1 target, clang-16 and wasi-libc.
Set them up with `cargo xtask setup`, or by hand:
    rustup target add wasm32-wasip1
    apt-get install -y clang-16 llvm-16 wasi-libc      (Debian; as root)
or unset CODEMODE_GUEST to embed the checked-in guest (crates/codemode-runtime/guest/),
or point CODEMODE_GUEST_WASM at a prebuilt codemode_guest.wasm.";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    // Canonical, so the nested build's prefix maps match the paths rustc and clang see.
    let repo_root = manifest_dir.join("../..");
    let repo_root = fs::canonicalize(&repo_root).unwrap_or(repo_root);
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    for var in [
        "CODEMODE_GUEST_WASM",
        "CODEMODE_GUEST",
        "CODEMODE_GUEST_TARGET_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // The stale check and a fresh build both read the guest's inputs.
    for rel in build_guest::INPUTS
        .iter()
        .chain([&build_guest::PREBUILT_WASM, &build_guest::PREBUILT_MANIFEST])
    {
        println!("cargo:rerun-if-changed={}", repo_root.join(rel).display());
    }

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let source = build_guest::choose(
        env::var_os("CODEMODE_GUEST_WASM").as_deref(),
        env::var_os("CODEMODE_GUEST").as_deref(),
        || build_guest::missing_toolchain(&rustc),
    )
    .unwrap_or_else(|e| panic!("codemode: {e}\n{SETUP_HINT}"));

    let wasm = match source {
        Source::File(path) => {
            println!("cargo:rerun-if-changed={}", path.display());
            fs::read(&path).unwrap_or_else(|e| {
                panic!("CODEMODE_GUEST_WASM={}: cannot read: {e}", path.display())
            })
        }
        Source::Build => build(&repo_root, &out_dir),
        Source::Prebuilt { reason } => {
            let prebuilt = build_guest::load_prebuilt(&repo_root).unwrap_or_else(|e| {
                panic!("codemode: {reason}, so the checked-in guest would be embedded, but {e}")
            });
            let m = &prebuilt.manifest;
            // Asked for by name (`cargo xtask demo` does): nothing is missing, so no hint to
            // install a toolchain that may well be there.
            let hint = if reason.starts_with("CODEMODE_GUEST=") {
                ""
            } else {
                " Install clang-16 and wasi-libc (`cargo xtask setup`) to build it from source."
            };
            println!(
                "cargo:warning=codemode: {reason}; embedding the checked-in guest {} \
                 (sha256 {}, built with {}, {}, wasi-libc {}{}).{hint}",
                build_guest::PREBUILT_WASM,
                m.wasm_sha256,
                m.rustc,
                m.clang,
                m.wasi_libc,
                if prebuilt.sources_checked {
                    "; it matches the guest's sources"
                } else {
                    "; the guest's sources are not here to compare"
                },
            );
            prebuilt.wasm
        }
    };
    if !build_guest::is_wasm(&wasm) {
        panic!("the codemode guest is not a WebAssembly module");
    }
    fs::write(out_dir.join("codemode_guest.wasm"), &wasm).unwrap();
    fs::write(
        out_dir.join("codemode_guest.sha256"),
        build_guest::sha256_hex(&wasm),
    )
    .unwrap();
}

/// The nested reproducible build (`build_guest::build_command`); panics with the setup hint
/// when it fails.
fn build(repo_root: &Path, out_dir: &Path) -> Vec<u8> {
    let target_dir = env::var_os("CODEMODE_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| out_dir.join("codemode-guest-target"));
    fs::create_dir_all(&target_dir).unwrap_or_else(|e| panic!("{}: {e}", target_dir.display()));
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = build_guest::build_command(
        &cargo,
        "build",
        repo_root,
        &target_dir,
        build_guest::cargo_home().as_deref(),
    )
    .unwrap_or_else(|e| panic!("codemode: {e}"));
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo: {e}\n{SETUP_HINT}"));
    if !status.success() {
        panic!("building the codemode guest failed (see the output above).\n{SETUP_HINT}");
    }
    let wasm = build_guest::built_wasm(&target_dir);
    fs::read(&wasm).unwrap_or_else(|e| panic!("{}: {e}\n{SETUP_HINT}", wasm.display()))
}
