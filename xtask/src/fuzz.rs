//! `cargo xtask fuzz [--seconds N] [--release] [TARGET…]`: runs the fuzz targets for the
//! host-side parsers of untrusted bytes (docs/threat-model.md, "Fuzzing") for N seconds each
//! (default 60), one after the other. Each target is an ordinary test named `fuzz_<target>` in
//! its crate's `tests/fuzz.rs`, driven by the in-process engine `xtask/fuzz/engine.rs` through
//! `CODEMODE_FUZZ_SECONDS` (without it, `cargo test` runs each for a fixed number of inputs).
//! A finding is saved to `target/fuzz-findings/<target>-<n>.bin` and fails the run.

use crate::{cargo, run};

/// (target, crate): every fuzz target and the crate whose `tests/fuzz.rs` holds it.
pub(crate) const TARGETS: [(&str, &str); 6] = [
    ("guest_report", "codemode-bridge"),
    ("snapshot_bytes", "codemode-runtime"),
    ("config_text", "codemode-config"),
    ("dts_schema", "codemode-catalog"),
    ("mcp_namespace", "codemode-catalog"),
    ("tools_file", "codemode-catalog"),
];

/// Parses the arguments and runs the chosen targets (all by default).
pub(crate) fn task(args: &[String]) -> Result<(), String> {
    let mut seconds: u64 = 60;
    let mut release = false;
    let mut chosen: Vec<&str> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|s| *s > 0)
                    .ok_or("--seconds needs a positive whole number of seconds")?;
            }
            "--release" => release = true,
            name => {
                if !TARGETS.iter().any(|(t, _)| *t == name) {
                    let names: Vec<&str> = TARGETS.iter().map(|(t, _)| *t).collect();
                    return Err(format!(
                        "unknown fuzz target {name:?}; the targets are {}",
                        names.join(", ")
                    ));
                }
                chosen.push(name);
            }
        }
    }
    for (target, krate) in TARGETS {
        if !chosen.is_empty() && !chosen.contains(&target) {
            continue;
        }
        let mut cmd = cargo();
        cmd.args(["test", "-p", krate, "--test", "fuzz"]);
        if release {
            cmd.arg("--release");
        }
        cmd.args(["--", "--exact", &format!("fuzz_{target}"), "--nocapture"])
            .env("CODEMODE_FUZZ_SECONDS", seconds.to_string());
        run(&mut cmd)?;
    }
    Ok(())
}
