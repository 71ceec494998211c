//! `cargo xtask fuzz [--seconds N] [--release] [TARGET…]`: runs the fuzz targets for the
//! host-side parsers of untrusted bytes (docs/threat-model.md, "Fuzzing") for N seconds each
//! (default 60), one after the other. Each target is an ordinary test named `fuzz_<target>` in
//! its crate's `tests/fuzz.rs`, driven by the in-process engine `xtask/fuzz/engine.rs` through
//! `CODEMODE_FUZZ_SECONDS` (without it, `cargo test` runs each for a fixed number of inputs).
//! A finding is saved to `target/fuzz-findings/<target>-<n>.bin` and fails the run.

use crate::cmd::{cargo, run};

/// (target, crate): every fuzz target and the crate whose `tests/fuzz.rs` holds it; a target of
/// the `codemode` binary's private parsers ([`BIN_TARGETS`]) is a unit test instead.
pub(crate) const TARGETS: [(&str, &str); 10] = [
    ("guest_report", "codemode-bridge"),
    ("snapshot_bytes", "codemode-runtime"),
    ("config_text", "codemode-config"),
    ("config_file", "codemode-config"),
    ("trajectory_lines", "codemode-telemetry"),
    ("store_record", "codemode-snapshot"),
    ("dts_schema", "codemode-catalog"),
    ("mcp_namespace", "codemode-catalog"),
    ("tools_file", "codemode-catalog"),
    ("session_line", "codemode-cli"),
];

/// (target, unit test path in the `codemode` binary) for targets whose parser is private to it.
const BIN_TARGETS: [(&str, &str); 1] = [("session_line", "session::fuzz::fuzz_session_line")];

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
    for (target, _krate) in TARGETS {
        if !chosen.is_empty() && !chosen.contains(&target) {
            continue;
        }
        // `--workspace --tests`: the targets `cargo xtask test` built, with the same features, so
        // nothing is compiled again (`-p <crate>`, or `--test fuzz` alone, resolves other
        // features and rebuilds most of the graph); every test binary starts and runs only the
        // test `--exact` names.
        let mut cmd = cargo();
        cmd.args(["test", "--workspace", "--tests"]);
        let test = match BIN_TARGETS.iter().find(|(t, _)| *t == target) {
            Some((_, path)) => path.to_string(),
            None => format!("fuzz_{target}"),
        };
        if release {
            cmd.arg("--release");
        }
        cmd.args(["--", "--exact", &test, "--nocapture"])
            .env("CODEMODE_FUZZ_SECONDS", seconds.to_string());
        run(&mut cmd)?;
    }
    Ok(())
}
