//! Guest limits bound host memory (issue 15, item 1; docs/threat-model.md): every case runs in a
//! child process (this test binary again, one case, `CODEMODE_HOST_BOUNDS_CASE` set), which
//! warms up, resets its peak RSS (`/proc/self/clear_refs` ← `5`), runs the case and prints how
//! far its peak (`VmHWM`) rose above the RSS at the reset. The parent asserts the case's exact
//! result and that growth stays under the stated bound.

use std::process::Command;
use std::sync::Arc;

use codemode_bridge::{RunScope, ToolCall, ToolExecutor, ToolFuture};
use codemode_catalog::{Catalog, SearchLimits, ToolSpec};
use codemode_facade::{CodeMode, CodeModeResult, RunEnv};
use codemode_runtime::{AbortHandle, Runtime};
use serde_json::{json, Value};

const CASE_ENV: &str = "CODEMODE_HOST_BOUNDS_CASE";
const MIB: u64 = 1024 * 1024;

/// `fast` answers `{ok: true}`; `echo` returns its input as details; `big` returns a string of
/// `input.bytes` bytes.
struct Tools;

impl ToolExecutor for Tools {
    fn execute(&self, call: ToolCall) -> ToolFuture {
        Box::pin(async move {
            let details = match call.tool_name.as_str() {
                "echo" => call.input,
                "big" => {
                    let n = call.input["bytes"].as_u64().unwrap_or(0) as usize;
                    json!("x".repeat(n))
                }
                _ => json!({"ok": true}),
            };
            Ok(json!({"content": [], "details": details}))
        })
    }
}

fn harness() -> (CodeMode, RunEnv) {
    let config = codemode_config::resolve(
        &json!({"enabled": true, "timeoutMs": 30000, "maxSnapshotBytes": 268435456}),
    )
    .config;
    let specs: Vec<ToolSpec> = ["fast", "echo", "big"]
        .iter()
        .map(|n| ToolSpec::core(*n, "A tool."))
        .collect();
    let limits = SearchLimits {
        max_search_limit: 50,
        search_default_limit: 8,
    };
    let catalog = Arc::new(Catalog::build(specs, &limits).unwrap());
    let env = RunEnv::new(config, catalog, Arc::new(Tools), RunScope::default())
        .with_tool_call_id("call_1");
    (CodeMode::new(Runtime::global().unwrap()), env)
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// In the child: warm up, reset the peak, run `code`, print the result and the growth.
fn child(code: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cm, env) = harness();
    rt.block_on(async {
        let warm = cm
            .exec(&env, &json!({"code": "return 1"}), &AbortHandle::new())
            .await;
        assert!(matches!(warm, CodeModeResult::Completed { .. }), "{warm:?}");
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let base = status_kib("VmRSS:");
        let result = cm
            .exec(&env, &json!({ "code": code }), &AbortHandle::new())
            .await;
        let peak = status_kib("VmHWM:");
        let mut shown = result.to_json();
        if let Some(t) = shown.get_mut("telemetry") {
            *t = Value::Null;
        }
        println!("RESULT {shown}");
        println!("GROWTH_KIB {}", peak.saturating_sub(base));
    });
}

/// In the parent: runs `case` in a child; returns its result JSON and peak growth in bytes.
fn measure(case: &str) -> (Value, u64) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([case, "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE_ENV, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{case}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("{case}: no result in {stdout}"));
    let growth: u64 = stdout
        .lines()
        .find_map(|l| l.split_once("GROWTH_KIB ").map(|(_, r)| r))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{case}: no growth in {stdout}"));
    eprintln!("{case}: host peak grew {} MiB", growth / 1024);
    (serde_json::from_str(result).unwrap(), growth * 1024)
}

/// Runs the case in a child (parent side) or the case itself (child side).
fn case(name: &str, code: &str) -> Option<(Value, u64)> {
    if std::env::var(CASE_ENV).as_deref() == Ok(name) {
        child(code);
        None
    } else {
        Some(measure(name))
    }
}

/// What a 64 MiB guest alone may add to the host: its linear memory (heap limit × 1.25 + 8 MiB
/// shadow stack + 32 MiB, `VmLimits::linear_memory_cap`) is host memory too.
const GUEST_LINEAR_MEMORY: u64 = 64 * MIB + 16 * MIB + 8 * MIB + 32 * MIB;

/// The issue's case: 3e6 zeros (6 MB of JSON text) as one call's arguments grew the host by
/// ~1.1 GiB. The arguments are over the per-request cap, so the call is refused in the guest
/// (catchable) and the host never builds their value tree.
#[test]
fn huge_arguments_are_refused_without_growing_the_host() {
    let Some((result, growth)) = case(
        "huge_arguments_are_refused_without_growing_the_host",
        r#"try { await tools.callValue("fast", {a: new Array(3e6).fill(0)}); return "called" }
           catch (e) { return String(e) }"#,
    ) else {
        return;
    };
    assert_eq!(
        result["value"],
        json!("Error: code mode tool arguments are too large: 6000029 bytes (at most 1048576 bytes per call)")
    );
    assert!(
        growth < GUEST_LINEAR_MEMORY + 64 * MIB,
        "host grew {} MiB",
        growth / MIB
    );
}

/// Just under the per-request cap: 5e5 zeros (1 MB of JSON) echoed back run, and the host
/// stays within the stated bound.
#[test]
fn arguments_under_the_cap_are_echoed_within_the_bound() {
    let Some((result, growth)) = case(
        "arguments_under_the_cap_are_echoed_within_the_bound",
        r#"const r = await tools.callValue("echo", {a: new Array(5e5).fill(0)}); return r.a.length"#,
    ) else {
        return;
    };
    assert_eq!(result["status"], json!("completed"), "{result}");
    assert_eq!(result["value"], json!(500_000));
    assert!(
        growth < GUEST_LINEAR_MEMORY + 96 * MIB,
        "host grew {} MiB",
        growth / MIB
    );
}

/// Many requests in one step, each under the per-request cap, together over the per-leg cap:
/// the ones past the leg's budget are refused, the others run.
#[test]
fn arguments_per_leg_are_bounded() {
    let Some((result, growth)) = case(
        "arguments_per_leg_are_bounded",
        r#"const big = "x".repeat(1000000);
           const rs = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7, 8, 9].map(i => tools.callValue("fast", {i, big})));
           return rs.map(r => r.status === "fulfilled" ? "ok" : String(r.reason))"#,
    ) else {
        return;
    };
    let refused = json!("Error: code mode tool arguments are too large: the calls of one step carry more than 8388608 bytes");
    assert_eq!(
        result["value"],
        json!(["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", refused]),
        "{result}"
    );
    assert!(
        growth < GUEST_LINEAR_MEMORY + 64 * MIB,
        "host grew {} MiB",
        growth / MIB
    );
}

/// A tool result larger than the guest could hold is refused before it is serialised for the
/// guest: the call rejects, catchably.
#[test]
fn oversized_deliveries_are_refused() {
    let Some((result, growth)) = case(
        "oversized_deliveries_are_refused",
        r#"try { await tools.callValue("big", {bytes: 40 * 1024 * 1024}); return "delivered" }
           catch (e) { return String(e) }"#,
    ) else {
        return;
    };
    assert_eq!(
        result["value"],
        json!("Error: code mode tool result is too large for the guest: 41943042 bytes (at most 16777216 bytes, a quarter of memoryLimitBytes)")
    );
    // The tool's own 40 MiB string is host memory the tool made; nothing is serialised.
    assert!(
        growth < GUEST_LINEAR_MEMORY + 64 * MIB,
        "host grew {} MiB",
        growth / MIB
    );
}
