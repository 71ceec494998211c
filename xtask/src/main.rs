//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `setup`: install what building the wasm guest needs (the wasm32-wasip1 target; on Debian as
//!   root, `clang-16`, `llvm-16` and `wasi-libc` through apt), or print the commands to run.
//! - `demo`: setup, build the `codemode` binary, and run it on every program in `examples/`.
//! - `test`: setup, then `cargo test --workspace` (what CI runs, `.ci/run`).
//! - `bench`: setup, then the criterion benchmarks of the runtime and facade.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let rest: Vec<String> = std::env::args().skip(2).collect();
    let result = match task.as_str() {
        "setup" => setup(),
        "demo" => setup().and_then(|()| demo()),
        "test" => setup().and_then(|()| test(&rest)),
        "bench" => setup().and_then(|()| bench(&rest)),
        _ => {
            eprintln!("usage: cargo xtask <setup | demo | test | bench>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn have(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// Makes sure the guest can be built: wasm32-wasip1, clang-16, llvm-ar-16, wasi-libc headers.
fn setup() -> Result<(), String> {
    if std::env::var_os("CODEMODE_GUEST_WASM").is_some() {
        return Ok(()); // a prebuilt guest is used; no toolchain needed
    }
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip1")
        })
        .unwrap_or(false);
    if !installed {
        run(Command::new("rustup").args(["target", "add", "wasm32-wasip1"])).map_err(|e| {
            format!("{e}\nInstall the target with: rustup target add wasm32-wasip1")
        })?;
    }
    let missing_c = !have("clang-16", "--version")
        || !have("llvm-ar-16", "--version")
        || !Path::new("/usr/include/wasm32-wasi/stdlib.h").exists();
    if missing_c {
        let packages = ["clang-16", "llvm-16", "wasi-libc"];
        let is_root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        if is_root && Path::new("/etc/debian_version").exists() {
            run(Command::new("apt-get").args(["update", "-qq"]))?;
            run(Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(packages)
                .env("DEBIAN_FRONTEND", "noninteractive"))?;
        } else {
            return Err(format!(
                "the wasm guest needs clang-16, llvm-ar-16 and wasi-libc. On Debian run:\n    sudo apt-get install -y {}\nthen run this command again (or set CODEMODE_GUEST_WASM to a prebuilt guest).",
                packages.join(" ")
            ));
        }
    }
    Ok(())
}

fn demo() -> Result<(), String> {
    run(cargo().args(["build", "-p", "codemode-cli"]))?;
    let bin = root().join("target/debug/codemode");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .map_err(|e| format!("examples/: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "js" || x == "ts"))
        .collect();
    examples.sort();
    let mut failed = 0;
    for example in &examples {
        let rel = example.strip_prefix(root()).unwrap_or(example);
        println!("\n=== codemode exec --pretty {}", rel.display());
        let status = Command::new(&bin)
            .current_dir(root())
            .args(["exec", "--pretty"])
            .arg(rel)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !status.success() {
            failed += 1;
        }
    }
    println!("\n=== codemode exec -e 'return 1+2'");
    run(Command::new(&bin)
        .current_dir(root())
        .args(["exec", "-e", "return 1+2"]))?;
    if failed > 0 {
        return Err(format!("{failed} example(s) did not complete"));
    }
    Ok(())
}

fn test(extra: &[String]) -> Result<(), String> {
    run(cargo().args(["test", "--workspace"]).args(extra))
}

fn bench(extra: &[String]) -> Result<(), String> {
    run(cargo()
        .args(["bench", "-p", "codemode-runtime", "-p", "codemode-facade"])
        .args(extra))
}
