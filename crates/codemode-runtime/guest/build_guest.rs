//! Where the embedded wasm guest comes from, shared by `codemode-runtime`'s `build.rs`, its test
//! `tests/integration/prebuilt_guest.rs` and `cargo xtask guest` (each includes this file with `#[path]`;
//! it uses only std and sha2, the build script's one dependency).
//!
//! Three sources, chosen by [`choose`]: the file `CODEMODE_GUEST_WASM` names; a fresh,
//! reproducible nested build ([`build_command`]) when clang-16, llvm-ar-16, wasi-libc and the
//! wasm32-wasip1 target are there; else the checked-in guest in this directory
//! (`codemode_guest.wasm` plus `manifest.txt`), checked by [`load_prebuilt`]. docs/guest-abi.md,
//! "Building", explains the choice.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The checked-in guest, relative to the repository root.
pub(crate) const PREBUILT_WASM: &str = "crates/codemode-runtime/guest/codemode_guest.wasm";
/// Its manifest (`key = "value"` lines, see [`Manifest`]), relative to the repository root.
pub(crate) const PREBUILT_MANIFEST: &str = "crates/codemode-runtime/guest/manifest.txt";

/// What the guest's bytes are built from, relative to the repository root: a file, or a
/// directory taken whole (every file under it). The bridge inherits its dependencies and lints
/// from the workspace's `Cargo.toml`; this file carries the reproducibility flags.
pub(crate) const INPUTS: [&str; 9] = [
    "crates/codemode-guest/src",
    "crates/codemode-guest/c",
    "crates/codemode-guest/Cargo.toml",
    "crates/codemode-guest/Cargo.lock",
    "crates/codemode-guest/.cargo/config.toml",
    "crates/codemode-bridge/src",
    "crates/codemode-bridge/Cargo.toml",
    "Cargo.toml",
    "crates/codemode-runtime/guest/build_guest.rs",
];

/// The command that refreshes the checked-in guest (named in every stale/mismatch message).
pub(crate) const UPDATE_COMMAND: &str = "cargo xtask guest --update";

/// Which guest `CODEMODE_GUEST` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Unset or `auto`: build when the toolchain is there, else the checked-in guest.
    Auto,
    /// `build`: always build (fails with the setup hint when the toolchain is missing).
    Build,
    /// `prebuilt`: always the checked-in guest, even where clang is installed.
    Prebuilt,
}

/// Where the embedded guest comes from (the result of [`choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The file `CODEMODE_GUEST_WASM` names.
    File(PathBuf),
    /// A fresh nested build.
    Build,
    /// The checked-in guest; `reason` says why (printed in the build's `cargo:warning`).
    Prebuilt {
        /// e.g. "CODEMODE_GUEST=prebuilt" or "clang-16 was not found".
        reason: String,
    },
}

/// Parses `CODEMODE_GUEST`. Errors: any value but `auto`, `build`, `prebuilt` (or unset/empty).
pub(crate) fn parse_mode(value: Option<&OsStr>) -> Result<Mode, String> {
    match value.map(|v| v.to_string_lossy().into_owned()).as_deref() {
        None | Some("") | Some("auto") => Ok(Mode::Auto),
        Some("build") => Ok(Mode::Build),
        Some("prebuilt") => Ok(Mode::Prebuilt),
        Some(other) => Err(format!(
            "CODEMODE_GUEST={other:?}: expected `auto` (the default: build when clang-16 and \
             wasi-libc are installed, else the checked-in guest), `build` or `prebuilt`"
        )),
    }
}

/// Picks the guest's source. `guest_wasm` is `CODEMODE_GUEST_WASM` (it wins over everything),
/// `mode` is `CODEMODE_GUEST`; `toolchain` reports what of the build toolchain is missing
/// ([`missing_toolchain`] in the build script). Errors: a bad `CODEMODE_GUEST`, or `build`
/// without the toolchain (the message lists what is missing).
pub(crate) fn choose(
    guest_wasm: Option<&OsStr>,
    mode: Option<&OsStr>,
    toolchain: impl FnOnce() -> Option<String>,
) -> Result<Source, String> {
    if let Some(path) = guest_wasm.filter(|p| !p.is_empty()) {
        return Ok(Source::File(PathBuf::from(path)));
    }
    match parse_mode(mode)? {
        Mode::Prebuilt => Ok(Source::Prebuilt {
            reason: "CODEMODE_GUEST=prebuilt".to_string(),
        }),
        Mode::Build => match toolchain() {
            None => Ok(Source::Build),
            Some(missing) => Err(format!("CODEMODE_GUEST=build, but {missing}")),
        },
        Mode::Auto => Ok(match toolchain() {
            None => Source::Build,
            Some(missing) => Source::Prebuilt { reason: missing },
        }),
    }
}

/// What of the guest build toolchain is missing (`None`: all there): `clang-16` and
/// `llvm-ar-16` on `PATH`, wasi-libc's headers in `/usr/include/wasm32-wasi`, and the
/// wasm32-wasip1 standard library for `rustc` (the compiler cargo uses).
pub(crate) fn missing_toolchain(rustc: &OsStr) -> Option<String> {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut missing = Vec::new();
    for program in ["clang-16", "llvm-ar-16"] {
        if !runs(program) {
            missing.push(program.to_string());
        }
    }
    if !Path::new("/usr/include/wasm32-wasi/stdlib.h").exists() {
        missing.push("wasi-libc (/usr/include/wasm32-wasi)".to_string());
    }
    let target_std = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", "wasm32-wasip1"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .and_then(|dir| fs::read_dir(dir).ok())
        .is_some_and(|mut entries| {
            entries.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
        });
    if !target_std {
        missing.push("the wasm32-wasip1 target (rustup target add wasm32-wasip1)".to_string());
    }
    if missing.is_empty() {
        None
    } else {
        Some(format!("{} not found", missing.join(", ")))
    }
}

/// SHA-256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The files of [`INPUTS`] under `root`, as sorted `/`-separated relative paths. Errors: an
/// input that does not exist or cannot be read.
pub(crate) fn input_files(root: &Path) -> Result<Vec<String>, String> {
    fn walk(root: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), String> {
        let path = root.join(rel);
        let meta = fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            let entries = fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                let name = entry.file_name();
                let name = name
                    .to_str()
                    .ok_or_else(|| format!("{}: a file name that is not UTF-8", path.display()))?;
                walk(root, &format!("{rel}/{name}"), out)?;
            }
        } else {
            out.push(rel.to_string());
        }
        Ok(())
    }
    let mut files = Vec::new();
    for rel in INPUTS {
        walk(root, rel, &mut files)?;
    }
    files.sort();
    Ok(files)
}

/// An input file's bytes as hashed: CRLF line ends read as LF, so a Windows checkout
/// (`core.autocrlf`) hashes like the one the manifest was written from.
fn read_input(root: &Path, rel: &str) -> Result<Vec<u8>, String> {
    let path = root.join(rel);
    let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !bytes.windows(2).any(|w| w == b"\r\n") {
        return Ok(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if !(b == b'\r' && bytes.get(i + 1) == Some(&b'\n')) {
            out.push(b);
        }
    }
    Ok(out)
}

/// SHA-256 over the guest's inputs under `root` (the repository root): for each file of
/// [`input_files`] in order, its relative path, a NUL, its length in bytes as decimal, a NUL and
/// its bytes (CRLF read as LF). Independent of the checkout's path, file times and line-end
/// conversion. Errors: as [`input_files`].
pub(crate) fn inputs_sha256(root: &Path) -> Result<String, String> {
    let mut hasher = Sha256::new();
    for rel in input_files(root)? {
        let bytes = read_input(root, &rel)?;
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update(bytes.len().to_string().as_bytes());
        hasher.update([0]);
        hasher.update(&bytes);
    }
    Ok(sha256_hex(&hasher.finalize()))
}

/// Each input file under `root` with its SHA-256: `(relative path, hex)` in [`input_files`]
/// order (so the stale message can name what changed). Errors: as [`input_files`].
pub(crate) fn input_file_hashes(root: &Path) -> Result<Vec<(String, String)>, String> {
    input_files(root)?
        .into_iter()
        .map(|rel| {
            let bytes = read_input(root, &rel)?;
            Ok((rel, sha256_hex(&bytes)))
        })
        .collect()
}

/// What differs between the recorded input files and the current ones, as `path (changed)`,
/// `path (new)` and `path (removed)` in path order.
pub(crate) fn changed_inputs(
    recorded: &[(String, String)],
    current: &[(String, String)],
) -> Vec<String> {
    let mut out: Vec<(String, &str)> = Vec::new();
    for (path, hash) in current {
        match recorded.iter().find(|(p, _)| p == path) {
            None => out.push((path.clone(), "new")),
            Some((_, h)) if h != hash => out.push((path.clone(), "changed")),
            Some(_) => {}
        }
    }
    for (path, _) in recorded {
        if !current.iter().any(|(p, _)| p == path) {
            out.push((path.clone(), "removed"));
        }
    }
    out.sort();
    out.into_iter()
        .map(|(p, what)| format!("{p} ({what})"))
        .collect()
}

/// The checked-in guest's manifest, `manifest.txt`: `key = "value"` lines (`#` comments), keys
/// `wasm_sha256`, `wasm_bytes`, `inputs_sha256`, `rustc`, `clang`, `wasi_libc`, then one
/// `file = "<sha256> <path>"` line per input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// SHA-256 of `codemode_guest.wasm` (hex).
    pub(crate) wasm_sha256: String,
    /// Its length in bytes.
    pub(crate) wasm_bytes: u64,
    /// [`inputs_sha256`] of the sources it was built from.
    pub(crate) inputs_sha256: String,
    /// `rustc -V` of the build.
    pub(crate) rustc: String,
    /// First line of `clang-16 --version`.
    pub(crate) clang: String,
    /// The wasi-libc package version (`dpkg-query`), or `unknown`.
    pub(crate) wasi_libc: String,
    /// [`input_file_hashes`] of those sources.
    pub(crate) files: Vec<(String, String)>,
}

impl Manifest {
    /// The file's text (what `cargo xtask guest --update` writes).
    pub(crate) fn render(&self) -> String {
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let files: String = self
            .files
            .iter()
            .map(|(path, hash)| format!("file = \"{hash} {}\"\n", quote(path)))
            .collect();
        format!(
            "# The checked-in wasm guest (docs/guest-abi.md, \"Building\"). Written by\n\
             # `{UPDATE_COMMAND}`; checked by codemode-runtime's build.rs and by\n\
             # `cargo xtask guest --check` (a lint gate of `cargo xtask test`).\n\
             wasm_sha256 = \"{}\"\n\
             wasm_bytes = \"{}\"\n\
             inputs_sha256 = \"{}\"\n\
             rustc = \"{}\"\n\
             clang = \"{}\"\n\
             wasi_libc = \"{}\"\n\
             {files}",
            self.wasm_sha256,
            self.wasm_bytes,
            self.inputs_sha256,
            quote(&self.rustc),
            quote(&self.clang),
            quote(&self.wasi_libc),
        )
    }

    /// Parses [`Manifest::render`]'s format. Errors: a line that is not `key = "value"`, an
    /// unknown or repeated key (but `file`), a missing key, a `wasm_bytes` that is not a number, a
    /// `file` that is not `<sha256> <path>`.
    pub(crate) fn parse(text: &str) -> Result<Manifest, String> {
        let mut values: Vec<(String, String)> = Vec::new();
        let mut files = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || format!("line {}: expected `key = \"value\"`, found {line:?}", n + 1);
            let (key, value) = line.split_once('=').ok_or_else(bad)?;
            let (key, value) = (key.trim(), value.trim());
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .ok_or_else(bad)?;
            let value = value.replace("\\\"", "\"").replace("\\\\", "\\");
            if key == "file" {
                let (hash, path) = value
                    .split_once(' ')
                    .filter(|(h, p)| h.len() == 64 && !p.is_empty())
                    .ok_or_else(|| {
                        format!("line {}: expected `file = \"<sha256> <path>\"`", n + 1)
                    })?;
                files.push((path.to_string(), hash.to_string()));
                continue;
            }
            const KEYS: [&str; 6] = [
                "wasm_sha256",
                "wasm_bytes",
                "inputs_sha256",
                "rustc",
                "clang",
                "wasi_libc",
            ];
            if !KEYS.contains(&key) {
                return Err(format!("line {}: unknown key {key:?}", n + 1));
            }
            if values.iter().any(|(k, _)| k == key) {
                return Err(format!("line {}: {key} given twice", n + 1));
            }
            values.push((key.to_string(), value));
        }
        let get = |key: &str| {
            values
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("missing key {key}"))
        };
        let wasm_bytes = get("wasm_bytes")?;
        Ok(Manifest {
            wasm_sha256: get("wasm_sha256")?,
            wasm_bytes: wasm_bytes
                .parse()
                .map_err(|_| format!("wasm_bytes {wasm_bytes:?} is not a number"))?,
            inputs_sha256: get("inputs_sha256")?,
            rustc: get("rustc")?,
            clang: get("clang")?,
            wasi_libc: get("wasi_libc")?,
            files,
        })
    }
}

/// The checked-in guest after [`load_prebuilt`]'s checks.
#[derive(Debug)]
pub(crate) struct Prebuilt {
    /// The module's bytes.
    pub(crate) wasm: Vec<u8>,
    /// Its manifest.
    pub(crate) manifest: Manifest,
    /// Whether the guest's sources were there to compare with `inputs_sha256` (they are not in
    /// a packaged crate; then the bytes are only checked against the manifest).
    pub(crate) sources_checked: bool,
}

/// Reads the checked-in guest under `root` (the repository root) and checks it: its bytes must
/// hash to the manifest's `wasm_sha256` (and length), and when the guest's sources are present,
/// they must hash to its `inputs_sha256`. Errors (each names the fix): an unreadable or
/// malformed manifest, damaged bytes, or stale sources ("the checked-in guest is stale").
pub(crate) fn load_prebuilt(root: &Path) -> Result<Prebuilt, String> {
    let manifest_path = root.join(PREBUILT_MANIFEST);
    let wasm_path = root.join(PREBUILT_WASM);
    let text = fs::read_to_string(&manifest_path)
        .map_err(|e| format!("{}: cannot read: {e}", manifest_path.display()))?;
    let manifest = Manifest::parse(&text)
        .map_err(|e| format!("{}: {e}; run `{UPDATE_COMMAND}`", manifest_path.display()))?;
    let wasm =
        fs::read(&wasm_path).map_err(|e| format!("{}: cannot read: {e}", wasm_path.display()))?;
    let actual = sha256_hex(&wasm);
    if actual != manifest.wasm_sha256 || wasm.len() as u64 != manifest.wasm_bytes {
        return Err(format!(
            "{} is damaged: {} bytes with sha256 {actual}, but {} says {} bytes with sha256 {}. \
             Restore it from git, or rebuild it with `{UPDATE_COMMAND}` (needs clang-16 and \
             wasi-libc).",
            wasm_path.display(),
            wasm.len(),
            manifest_path.display(),
            manifest.wasm_bytes,
            manifest.wasm_sha256,
        ));
    }
    let sources_present = root.join("crates/codemode-guest/Cargo.toml").exists();
    if sources_present {
        let inputs = inputs_sha256(root)?;
        if inputs != manifest.inputs_sha256 {
            let changed = changed_inputs(&manifest.files, &input_file_hashes(root)?);
            return Err(stale_message(&manifest.inputs_sha256, &inputs, &changed));
        }
    }
    Ok(Prebuilt {
        wasm,
        manifest,
        sources_checked: sources_present,
    })
}

/// The error for a checked-in guest built from other sources than the checkout's; `changed` is
/// [`changed_inputs`] (empty: the manifest lists no files).
pub(crate) fn stale_message(recorded: &str, current: &str, changed: &[String]) -> String {
    let what = if changed.is_empty() {
        "a file of crates/codemode-guest, crates/codemode-bridge or Cargo.toml changed".to_string()
    } else {
        changed.join(", ")
    };
    format!(
        "the checked-in guest ({PREBUILT_WASM}) is stale: it was built from guest sources with \
         inputs sha256 {recorded}, but the sources now hash to {current} ({what}). On a machine \
         with clang-16 and wasi-libc (`cargo xtask setup`), run `{UPDATE_COMMAND}` and commit \
         crates/codemode-runtime/guest/; or set CODEMODE_GUEST_WASM to a guest built from these \
         sources."
    )
}

/// Prefix maps that make the guest's bytes independent of where things are: the repository
/// root becomes `/codemode`, the guest's target dir `/codemode-guest-target`, the cargo home
/// (registry sources) `/cargo`. Each path appears as given and canonicalized (when they
/// differ); sorted by length, shortest first, because rustc (and clang 17+) apply the last
/// matching map and clang 16 the longest.
pub(crate) fn prefix_maps(
    repo_root: &Path,
    target_dir: &Path,
    cargo_home: Option<&Path>,
) -> Vec<(PathBuf, &'static str)> {
    let mut maps: Vec<(PathBuf, &'static str)> = Vec::new();
    let mut add = |path: &Path, to: &'static str| {
        for p in [Some(path.to_path_buf()), fs::canonicalize(path).ok()]
            .into_iter()
            .flatten()
        {
            if !maps.iter().any(|(q, _)| *q == p) {
                maps.push((p, to));
            }
        }
    };
    add(repo_root, "/codemode");
    if let Some(home) = cargo_home {
        add(home, "/cargo");
    }
    add(target_dir, "/codemode-guest-target");
    maps.sort_by_key(|(p, _)| p.as_os_str().len());
    maps
}

/// The cargo home the nested build reads registry sources from: `CARGO_HOME`, else
/// `$HOME/.cargo`.
pub(crate) fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// The `RUSTC_WRAPPER` of the nested build (POSIX sh). Cargo's `-C metadata` for a path
/// dependency outside the building workspace (the guest's `codemode-bridge`, at
/// `../codemode-bridge`) hashes its absolute path, and that hash is in every symbol name and
/// decides the order of functions in the module, so without this the bytes would depend on the
/// checkout path; the guest's own metadata hashes its dependencies' metadata, so it inherits the
/// difference. The wrapper gives those two crates a metadata of their name and version instead
/// (each is the only crate of its name in the guest build; the metadata only disambiguates
/// crates of one name) and runs everything else unchanged, through
/// the caller's own `RUSTC_WRAPPER` (kept in `CODEMODE_INNER_RUSTC_WRAPPER`) when there was one.
pub(crate) const RUSTC_WRAPPER: &str = r#"#!/bin/sh
# Written by codemode-runtime's guest build (crates/codemode-runtime/guest/build_guest.rs):
# a -C metadata for codemode-bridge and codemode-guest that does not depend on the checkout path.
rustc="$1"
shift
if [ "$CARGO_PKG_NAME" = codemode-bridge ] || [ "$CARGO_PKG_NAME" = codemode-guest ]; then
  n=$#
  while [ "$n" -gt 0 ]; do
    a="$1"
    shift
    n=$((n - 1))
    case "$a" in
      metadata=*) a="metadata=$CARGO_PKG_NAME-$CARGO_PKG_VERSION" ;;
      -Cmetadata=*) a="-Cmetadata=$CARGO_PKG_NAME-$CARGO_PKG_VERSION" ;;
    esac
    set -- "$@" "$a"
  done
fi
exec ${CODEMODE_INNER_RUSTC_WRAPPER:+"$CODEMODE_INNER_RUSTC_WRAPPER"} "$rustc" "$@"
"#;

/// Writes [`RUSTC_WRAPPER`] to `<target_dir>/codemode-rustc-wrapper.sh` (only when its text
/// differs, so the file's time stays put) and makes it executable. Errors: the write fails.
#[cfg(unix)]
fn write_rustc_wrapper(target_dir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = target_dir.join("codemode-rustc-wrapper.sh");
    if fs::read_to_string(&path).ok().as_deref() != Some(RUSTC_WRAPPER) {
        fs::write(&path, RUSTC_WRAPPER).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Quotes `s` for a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Quotes `s` for a POSIX shell word (the cc crate parses `TARGET_CFLAGS` so with
/// `CC_SHELL_ESCAPED_FLAGS=1`).
fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The nested, reproducible guest build: `cargo <subcommand> --release --locked --target
/// wasm32-wasip1 --target-dir <target_dir>` in `<repo_root>/crates/codemode-guest`
/// (`subcommand` is `build`, or `clippy` for the lint gate, which then shares the build's
/// build-script runs and so compiles QuickJS's C once), with
/// [`prefix_maps`] given to rustc (`--remap-path-prefix`, appended to the guest's
/// `.cargo/config.toml` rustflags through `--config`) and to clang (`-ffile-prefix-map` in
/// `TARGET_CFLAGS`, which the cc crate adds to the config's `CFLAGS_wasm32_wasip1`), and with
/// the outer build's settings removed from the environment; on Unix through [`RUSTC_WRAPPER`]
/// (written into `target_dir`, which must exist). The module lands in
/// `<target_dir>/wasm32-wasip1/release/codemode_guest.wasm`. Errors: paths that are not UTF-8,
/// the wrapper cannot be written.
pub(crate) fn build_command(
    cargo: &OsStr,
    subcommand: &str,
    repo_root: &Path,
    target_dir: &Path,
    cargo_home: Option<&Path>,
) -> Result<Command, String> {
    let maps = prefix_maps(repo_root, target_dir, cargo_home);
    // A no-op map naming this recipe's version: cargo does not fingerprint RUSTC_WRAPPER, so
    // bump it when the wrapper or the flags change and every crate is rebuilt with them.
    let mut rustflags = vec![toml_string(
        "--remap-path-prefix=/codemode-guest-recipe-1=/codemode-guest-recipe-1",
    )];
    let mut cflags = Vec::new();
    for (from, to) in &maps {
        let from = from
            .to_str()
            .ok_or_else(|| format!("{}: the guest build needs UTF-8 paths", from.display()))?;
        rustflags.push(toml_string(&format!("--remap-path-prefix={from}={to}")));
        cflags.push(shell_word(&format!("-ffile-prefix-map={from}={to}")));
    }
    let mut cmd = Command::new(cargo);
    cmd.current_dir(repo_root.join("crates/codemode-guest"))
        .args([
            subcommand,
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip1",
        ])
        .arg("--config")
        .arg(format!(
            "target.wasm32-wasip1.rustflags=[{}]",
            rustflags.join(", ")
        ))
        .arg("--target-dir")
        .arg(target_dir);
    // The outer build's settings must not leak into the guest build (nor a user's C flags into
    // its bytes).
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
        "CFLAGS",
        "CFLAGS_wasm32-wasip1",
        "TARGET_CFLAGS",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("TARGET_CFLAGS", cflags.join(" "))
        .env("CC_SHELL_ESCAPED_FLAGS", "1");
    #[cfg(unix)]
    {
        let wrapper = write_rustc_wrapper(target_dir)?;
        match std::env::var_os("RUSTC_WRAPPER").filter(|w| !w.is_empty()) {
            Some(inner) if inner != wrapper.as_os_str() => {
                cmd.env("CODEMODE_INNER_RUSTC_WRAPPER", inner);
            }
            _ => {
                cmd.env_remove("CODEMODE_INNER_RUSTC_WRAPPER");
            }
        }
        cmd.env("RUSTC_WRAPPER", wrapper);
    }
    Ok(cmd)
}

/// Where [`build_command`] puts the module.
pub(crate) fn built_wasm(target_dir: &Path) -> PathBuf {
    target_dir.join("wasm32-wasip1/release/codemode_guest.wasm")
}

/// Whether `bytes` start like a WebAssembly module (`\0asm`, at least 8 bytes).
pub(crate) fn is_wasm(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm"
}
