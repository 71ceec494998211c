//! Where the build script takes the guest from (`guest/build_guest.rs`, docs/guest-abi.md
//! "Building"): the choice between `CODEMODE_GUEST_WASM`, a fresh build and the checked-in
//! guest; the checks on the checked-in guest (damaged bytes, stale sources); the checked-in
//! guest itself; and the nested build's rustc wrapper, run as the shell runs it.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // the build script and `cargo xtask guest` use the rest
#[path = "../../guest/build_guest.rs"]
mod build_guest;

use build_guest::{choose, load_prebuilt, Manifest, Source};

fn os(s: &str) -> Option<&OsStr> {
    Some(OsStr::new(s))
}

#[test]
fn codemode_guest_wasm_wins_over_everything() {
    let chosen = choose(os("/x/g.wasm"), os("build"), || panic!("not probed"));
    assert_eq!(chosen, Ok(Source::File(PathBuf::from("/x/g.wasm"))));
}

#[test]
fn auto_builds_when_the_toolchain_is_there_and_takes_the_checked_in_guest_when_not() {
    assert_eq!(choose(None, None, || None), Ok(Source::Build));
    assert_eq!(choose(None, os("auto"), || None), Ok(Source::Build));
    assert_eq!(choose(os(""), os(""), || None), Ok(Source::Build));
    assert_eq!(
        choose(None, None, || Some("clang-16, llvm-ar-16 not found".into())),
        Ok(Source::Prebuilt {
            reason: "clang-16, llvm-ar-16 not found".into()
        })
    );
}

#[test]
fn prebuilt_is_forced_without_probing_and_build_fails_without_the_toolchain() {
    assert_eq!(
        choose(None, os("prebuilt"), || panic!("not probed")),
        Ok(Source::Prebuilt {
            reason: "CODEMODE_GUEST=prebuilt".into()
        })
    );
    assert_eq!(choose(None, os("build"), || None), Ok(Source::Build));
    assert_eq!(
        choose(None, os("build"), || Some("clang-16 not found".into())),
        Err("CODEMODE_GUEST=build, but clang-16 not found".into())
    );
}

#[test]
fn an_unknown_mode_is_an_error_that_lists_the_values() {
    assert_eq!(
        choose(None, os("clang"), || None),
        Err(
            "CODEMODE_GUEST=\"clang\": expected `auto` (the default: build when clang-16 and \
             wasi-libc are installed, else the checked-in guest), `build` or `prebuilt`"
                .into()
        )
    );
}

/// A repository tree with every guest input (small stand-in files) and a checked-in guest whose
/// manifest matches them.
fn fake_repo(wasm: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for rel in build_guest::INPUTS {
        let path = root.join(rel);
        let is_dir = !rel.rsplit('/').next().unwrap().contains('.');
        if is_dir {
            fs::create_dir_all(&path).unwrap();
            fs::write(path.join("lib.rs"), format!("// {rel}\n")).unwrap();
        } else {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, format!("# {rel}\n")).unwrap();
        }
    }
    write_prebuilt(root, wasm);
    dir
}

/// Writes `wasm` and a manifest of it and of the inputs now under `root`.
fn write_prebuilt(root: &Path, wasm: &[u8]) {
    let inputs = build_guest::inputs_sha256(root).unwrap();
    let manifest = Manifest {
        wasm_sha256: build_guest::sha256_hex(wasm),
        wasm_bytes: wasm.len() as u64,
        inputs_sha256: inputs.to_string(),
        rustc: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
        clang: "Debian clang version 16.0.6 (15~deb12u1)".into(),
        wasi_libc: "0.0~git20220510.9886d3d-2".into(),
        files: build_guest::input_file_hashes(root).unwrap(),
    };
    let guest = root.join("crates/codemode-runtime/guest");
    fs::create_dir_all(&guest).unwrap();
    fs::write(guest.join("codemode_guest.wasm"), wasm).unwrap();
    fs::write(guest.join("manifest.txt"), manifest.render()).unwrap();
}

const WASM: &[u8] = b"\0asm\x01\0\0\0";

#[test]
fn a_checked_in_guest_that_matches_its_sources_is_embedded() {
    let repo = fake_repo(WASM);
    let prebuilt = load_prebuilt(repo.path()).unwrap();
    assert_eq!(prebuilt.wasm, WASM);
    assert!(prebuilt.sources_checked);
    assert_eq!(prebuilt.manifest.wasm_bytes, 8);
    assert_eq!(
        prebuilt.manifest.clang,
        "Debian clang version 16.0.6 (15~deb12u1)"
    );
}

#[test]
fn a_changed_source_makes_the_checked_in_guest_stale_and_the_message_says_how_to_refresh() {
    let repo = fake_repo(WASM);
    let before = build_guest::inputs_sha256(repo.path()).unwrap();
    let root = repo.path();
    fs::write(
        root.join("crates/codemode-bridge/src/prelude.js"),
        "// new\n",
    )
    .unwrap();
    fs::write(root.join("crates/codemode-guest/c/lib.rs"), "// edited\n").unwrap();
    fs::remove_file(root.join("crates/codemode-guest/src/lib.rs")).unwrap();
    let after = build_guest::inputs_sha256(repo.path()).unwrap();
    assert_ne!(before, after);
    let err = load_prebuilt(repo.path()).unwrap_err();
    assert_eq!(
        err,
        format!(
            "the checked-in guest (crates/codemode-runtime/guest/codemode_guest.wasm) is stale: it \
             was built from guest sources with inputs sha256 {before}, but the sources now hash to \
             {after} (crates/codemode-bridge/src/prelude.js (new), crates/codemode-guest/c/lib.rs \
             (changed), crates/codemode-guest/src/lib.rs (removed)). On a machine with clang-16 and wasi-libc (`cargo xtask setup`), run `cargo \
             xtask guest --update` and commit crates/codemode-runtime/guest/; or set \
             CODEMODE_GUEST_WASM to a guest built from these sources."
        )
    );
}

#[test]
fn the_inputs_hash_sees_a_renamed_file_and_ignores_the_checkout_path() {
    let a = fake_repo(WASM);
    let b = fake_repo(WASM);
    let hash = build_guest::inputs_sha256(a.path()).unwrap();
    assert_eq!(hash, build_guest::inputs_sha256(b.path()).unwrap());
    let src = b.path().join("crates/codemode-guest/src");
    fs::rename(src.join("lib.rs"), src.join("main.rs")).unwrap();
    assert_ne!(hash, build_guest::inputs_sha256(b.path()).unwrap());
}

#[test]
fn crlf_line_ends_hash_like_lf_so_a_windows_checkout_is_not_stale() {
    let repo = fake_repo(WASM);
    let lib = repo.path().join("crates/codemode-guest/src/lib.rs");
    fs::write(&lib, "// a\n// b\n").unwrap();
    let lf = build_guest::inputs_sha256(repo.path()).unwrap();
    fs::write(&lib, "// a\r\n// b\r\n").unwrap();
    assert_eq!(build_guest::inputs_sha256(repo.path()).unwrap(), lf);
    fs::write(&lib, "// a\r// b\n").unwrap();
    assert_ne!(build_guest::inputs_sha256(repo.path()).unwrap(), lf);
}

#[test]
fn damaged_bytes_are_refused() {
    let repo = fake_repo(WASM);
    let wasm = repo
        .path()
        .join("crates/codemode-runtime/guest/codemode_guest.wasm");
    fs::write(&wasm, b"\0asm\x01\0\0\x01").unwrap();
    let err = load_prebuilt(repo.path()).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{} is damaged: 8 bytes with sha256 {}, but {} says 8 bytes with sha256 {}. Restore \
             it from git, or rebuild it with `cargo xtask guest --update` (needs clang-16 and \
             wasi-libc).",
            wasm.display(),
            build_guest::sha256_hex(b"\0asm\x01\0\0\x01"),
            repo.path()
                .join("crates/codemode-runtime/guest/manifest.txt")
                .display(),
            build_guest::sha256_hex(WASM),
        )
    );
}

#[test]
fn without_the_guest_sources_only_the_bytes_are_checked() {
    let repo = fake_repo(WASM);
    fs::remove_dir_all(repo.path().join("crates/codemode-guest")).unwrap();
    let prebuilt = load_prebuilt(repo.path()).unwrap();
    assert!(!prebuilt.sources_checked);
    assert_eq!(prebuilt.wasm, WASM);
}

#[test]
fn a_malformed_manifest_names_the_line() {
    let repo = fake_repo(WASM);
    let manifest = repo
        .path()
        .join("crates/codemode-runtime/guest/manifest.txt");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, text.replace("clang = ", "clang: ")).unwrap();
    let err = load_prebuilt(repo.path()).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{}: line 8: expected `key = \"value\"`, found \"clang: \\\"Debian clang version \
             16.0.6 (15~deb12u1)\\\"\"; run `cargo xtask guest --update`",
            manifest.display()
        )
    );
}

#[test]
fn the_manifest_round_trips() {
    let m = Manifest {
        wasm_sha256: "ab".into(),
        wasm_bytes: 12,
        inputs_sha256: "cd".into(),
        rustc: "rustc \"quoted\" \\ x".into(),
        clang: "clang".into(),
        wasi_libc: "unknown".into(),
        files: vec![
            ("Cargo.toml".into(), "a".repeat(64)),
            ("crates/x y/src/lib.rs".into(), "b".repeat(64)),
        ],
    };
    assert_eq!(Manifest::parse(&m.render()), Ok(m));
    assert_eq!(
        Manifest::parse("file = \"abc Cargo.toml\""),
        Err("line 1: expected `file = \"<sha256> <path>\"`".into())
    );
}

/// The repository's own checked-in guest: its manifest parses, the bytes are the ones it names
/// and they are a valid module for the host's engine. (Whether it is stale against the sources
/// is `cargo xtask guest --check`'s job: the lint gate rebuilds and compares.)
#[test]
fn the_checked_in_guest_matches_its_manifest_and_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = fs::read_to_string(root.join(build_guest::PREBUILT_MANIFEST)).unwrap();
    let manifest = Manifest::parse(&text).unwrap();
    let wasm = fs::read(root.join(build_guest::PREBUILT_WASM)).unwrap();
    assert_eq!(build_guest::sha256_hex(&wasm), manifest.wasm_sha256);
    assert_eq!(wasm.len() as u64, manifest.wasm_bytes);
    assert!(build_guest::is_wasm(&wasm));
    wasmtime::Module::validate(&wasmtime::Engine::default(), &wasm).unwrap();
}

/// The rustc wrapper, run by `sh` as cargo runs it (`echo` standing in for rustc): the bridge's
/// and the guest's `-C metadata` become their name and version; any other crate's arguments
/// pass unchanged, in order.
#[cfg(unix)]
#[test]
fn the_rustc_wrapper_rewrites_only_the_path_crates_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("w.sh");
    fs::write(&script, build_guest::RUSTC_WRAPPER).unwrap();
    let run = |crate_name: &str| {
        let out = Command::new("sh")
            .arg(&script)
            .args([
                "echo",
                "--crate-name",
                "x",
                "-C",
                "metadata=7c76987f907ee3b5",
                "a b",
                "-Cmetadata=1",
            ])
            .env("CARGO_PKG_NAME", crate_name)
            .env("CARGO_PKG_VERSION", "0.1.0")
            .env_remove("CODEMODE_INNER_RUSTC_WRAPPER")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        run("codemode-bridge"),
        "--crate-name x -C metadata=codemode-bridge-0.1.0 a b -Cmetadata=codemode-bridge-0.1.0\n"
    );
    assert_eq!(
        run("codemode-guest"),
        "--crate-name x -C metadata=codemode-guest-0.1.0 a b -Cmetadata=codemode-guest-0.1.0\n"
    );
    assert_eq!(
        run("serde"),
        "--crate-name x -C metadata=7c76987f907ee3b5 a b -Cmetadata=1\n"
    );
}

/// The nested build's command: the recipe stamp and the prefix maps (shortest first, so the
/// target dir inside the checkout wins) for rustc through `--config`, the same maps for clang in
/// `TARGET_CFLAGS` (shell-quoted, a path with a space stays one flag), the wrapper, and the
/// caller's C flags removed.
#[cfg(unix)]
#[test]
fn the_build_command_maps_every_path_for_rustc_and_clang() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("my checkout");
    let target = root.join("target/codemode-guest");
    let home = dir.path().join("cargo-home");
    fs::create_dir_all(&target).unwrap();
    fs::create_dir_all(&home).unwrap();
    let root = fs::canonicalize(&root).unwrap();
    let target = fs::canonicalize(&target).unwrap();
    let home = fs::canonicalize(&home).unwrap();
    let cmd = build_guest::build_command(OsStr::new("cargo"), "build", &root, &target, Some(&home))
        .unwrap();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (r, t, h) = (root.display(), target.display(), home.display());
    let mut maps = [
        (format!("{r}"), "/codemode"),
        (format!("{h}"), "/cargo"),
        (format!("{t}"), "/codemode-guest-target"),
    ];
    maps.sort_by_key(|(p, _)| p.len());
    let rustflags: Vec<String> = maps
        .iter()
        .map(|(p, to)| format!("\"--remap-path-prefix={p}={to}\""))
        .collect();
    assert_eq!(
        args,
        [
            "build".to_string(),
            "--release".into(),
            "--locked".into(),
            "--target".into(),
            "wasm32-wasip1".into(),
            "--config".into(),
            format!(
                "target.wasm32-wasip1.rustflags=[\"--remap-path-prefix=/codemode-guest-recipe-1=\
                 /codemode-guest-recipe-1\", {}]",
                rustflags.join(", ")
            ),
            "--target-dir".into(),
            format!("{t}"),
        ]
    );
    assert_eq!(
        cmd.get_current_dir(),
        Some(root.join("crates/codemode-guest").as_path())
    );
    let env = |key: &str| {
        cmd.get_envs()
            .find(|(k, _)| *k == OsStr::new(key))
            .map(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
    };
    let cflags: Vec<String> = maps
        .iter()
        .map(|(p, to)| format!("'-ffile-prefix-map={p}={to}'"))
        .collect();
    assert_eq!(env("TARGET_CFLAGS"), Some(Some(cflags.join(" "))));
    assert_eq!(env("CC_SHELL_ESCAPED_FLAGS"), Some(Some("1".into())));
    assert_eq!(
        env("RUSTC_WRAPPER"),
        Some(Some(format!("{t}/codemode-rustc-wrapper.sh")))
    );
    assert_eq!(
        fs::read_to_string(target.join("codemode-rustc-wrapper.sh")).unwrap(),
        build_guest::RUSTC_WRAPPER
    );
    for removed in [
        "CFLAGS",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
    ] {
        assert_eq!(env(removed), Some(None), "{removed}");
    }
}
