//! On-disk cache of the compiled guest, so tests and CLI runs compile it once per machine.
//!
//! Key: the guest's SHA-256, the wasmtime version and the engine's compatibility hash. The file is
//! written atomically (temp file + rename) in a directory only the user can write; wasmtime checks
//! the artifact's own compatibility header when loading and we recompile on any failure.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::{Engine, Module};

/// The pinned wasmtime version (workspace Cargo.toml); part of the cache key.
const WASMTIME_VERSION: &str = "48.0.8";

/// Where compiled modules live: `$CODEMODE_CACHE_DIR`, else `$XDG_CACHE_HOME/codemode`, else
/// `$HOME/.cache/codemode`, else `<tmp>/codemode-cache-<uid>`.
pub(crate) fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CODEMODE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("codemode");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return PathBuf::from(home).join(".cache").join("codemode");
    }
    std::env::temp_dir().join("codemode-cache")
}

pub(crate) fn cache_file(dir: &Path, engine: &Engine, guest_sha256: &str) -> PathBuf {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let compat = h.finish();
    dir.join(format!(
        "guest-{}-wasmtime-{}-{compat:016x}.cwasm",
        &guest_sha256[..16.min(guest_sha256.len())],
        WASMTIME_VERSION
    ))
}

/// Loads the compiled guest from `dir`, or compiles and stores it. Cache failures are logged and
/// fall back to compiling; only a compile failure is an error.
pub(crate) fn load_or_compile(
    engine: &Engine,
    wasm: &[u8],
    guest_sha256: &str,
    dir: Option<&Path>,
) -> wasmtime::Result<Module> {
    let Some(dir) = dir else {
        return Module::new(engine, wasm);
    };
    let path = cache_file(dir, engine, guest_sha256);
    if path.exists() {
        // SAFETY: the file was written by `Module::serialize` of this same engine configuration
        // into a directory owned by the current user; wasmtime validates its header and version.
        match unsafe { Module::deserialize_file(engine, &path) } {
            Ok(module) => return Ok(module),
            Err(e) => tracing::warn!(path = %path.display(), "ignoring unusable module cache: {e}"),
        }
    }
    let module = Module::new(engine, wasm)?;
    if let Err(e) = store(&path, &module) {
        tracing::warn!(path = %path.display(), "cannot write module cache: {e}");
    }
    Ok(module)
}

fn store(path: &Path, module: &Module) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let bytes = module
        .serialize()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("guest"),
        std::process::id()
    ));
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    Ok(())
}
