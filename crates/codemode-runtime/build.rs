//! Builds the wasm32-wasip1 guest (`crates/codemode-guest`) with a nested
//! `cargo build --release --target wasm32-wasip1` into its own target dir, and embeds it.
//!
//! `CODEMODE_GUEST_WASM=/path/to/codemode_guest.wasm` skips the nested build and embeds a
//! prebuilt guest instead. See docs/guest-abi.md, "Building".
//!
//! Everything this script writes goes under `OUT_DIR` (the guest's own target dir is
//! `$OUT_DIR/codemode-guest-target`), so a project that depends on this crate never finds files
//! written into the dependency's checkout. `CODEMODE_GUEST_TARGET_DIR` moves the guest's target
//! dir elsewhere; this repository's `.cargo/config.toml` sets it to `target/codemode-guest`, so
//! debug, release and CI builds share one guest build (and CI's build cache keeps it).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const SETUP_HINT: &str = "\
codemode: building the wasm guest needs the wasm32-wasip1 target, clang-16 and wasi-libc.
Set them up with `cargo xtask setup`, or by hand:
    rustup target add wasm32-wasip1
    apt-get install -y clang-16 llvm-16 wasi-libc      (Debian; as root)
or point CODEMODE_GUEST_WASM at a prebuilt codemode_guest.wasm.";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let guest_dir = manifest_dir.join("../codemode-guest");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=CODEMODE_GUEST_WASM");

    let wasm = match env::var_os("CODEMODE_GUEST_WASM") {
        Some(path) => {
            let path = PathBuf::from(path);
            println!("cargo:rerun-if-changed={}", path.display());
            fs::read(&path).unwrap_or_else(|e| {
                panic!("CODEMODE_GUEST_WASM={}: cannot read: {e}", path.display())
            })
        }
        None => build_guest(&guest_dir, &out_dir),
    };
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        panic!("the codemode guest is not a WebAssembly module");
    }
    let hash = Sha256::digest(&wasm);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    fs::write(out_dir.join("codemode_guest.wasm"), &wasm).unwrap();
    fs::write(out_dir.join("codemode_guest.sha256"), &hex).unwrap();
}

fn build_guest(guest_dir: &Path, out_dir: &Path) -> Vec<u8> {
    for rel in ["src", "c", "Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", guest_dir.join(rel).display());
    }
    // The guest depends on codemode-bridge (the wire format), whose manifest inherits from the
    // workspace's.
    for rel in [
        "../codemode-bridge/src",
        "../codemode-bridge/Cargo.toml",
        "../../Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", guest_dir.join(rel).display());
    }
    let target_dir = env::var_os("CODEMODE_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| out_dir.join("codemode-guest-target"));
    println!("cargo:rerun-if-env-changed=CODEMODE_GUEST_TARGET_DIR");

    if Command::new("clang-16").arg("--version").output().is_err() {
        panic!("clang-16 was not found.\n{SETUP_HINT}");
    }
    if !Path::new("/usr/include/wasm32-wasi/stdlib.h").exists() {
        panic!("wasi-libc headers (/usr/include/wasm32-wasi) were not found.\n{SETUP_HINT}");
    }

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(guest_dir)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip1",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's settings must not leak into the guest build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_PKG_NAME",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "PROFILE",
        "OPT_LEVEL",
        "DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo: {e}\n{SETUP_HINT}"));
    if !status.success() {
        panic!("building the codemode guest failed (see the output above).\n{SETUP_HINT}");
    }
    let wasm = target_dir.join("wasm32-wasip1/release/codemode_guest.wasm");
    fs::read(&wasm).unwrap_or_else(|e| panic!("{}: {e}\n{SETUP_HINT}", wasm.display()))
}
