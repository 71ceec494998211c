//! Deadline overshoot (issue 15 item 4, docs/benchmarks.md "Deadline overshoot"): how long after
//! the soft deadline a guest call returns, for code the QuickJS interrupt handler stops (a
//! busy loop) and for native operations that never poll it (a BigInt power with a
//! multi-megabit result runs for a second or more inside one opcode),
//! which only the epoch backstop ([`HARD_DEADLINE_GRACE`] after the soft deadline) stops.
//! Prints p50 / p99 / max over `CODEMODE_OVERSHOOT_ITERATIONS` runs (default 100) per case.
//! Not criterion: the number that matters is the tail, which criterion does not report.
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use codemode_runtime::{
    run_leg, AbortHandle, LegBudget, Runtime, VmError, VmLimits, HARD_DEADLINE_GRACE,
};

const BUDGET: Duration = Duration::from_millis(50);

fn case(rt: &std::sync::Arc<Runtime>, code: &'static str, iterations: usize) -> Vec<Duration> {
    let limits = VmLimits::default();
    let mut overshoots = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let rt = rt.clone();
        let (overshoot, outcome) = futures_lite_block_on(run_leg(move || {
            let mut vm = rt.fresh_vm(&limits).expect("vm");
            let budget = LegBudget::new(BUDGET, AbortHandle::new());
            let deadline = budget.soft_deadline;
            let outcome = vm.start(code, r#"{"tools":[]}"#, &limits, &budget);
            (Instant::now().saturating_duration_since(deadline), outcome)
        }))
        .expect("leg");
        assert_eq!(outcome.unwrap_err(), VmError::Timeout, "{code}");
        overshoots.push(overshoot);
    }
    overshoots.sort();
    overshoots
}

/// `run_leg` is async; a current-thread tokio runtime drives it.
fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio")
        .block_on(f)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let iterations: usize = std::env::var("CODEMODE_OVERSHOOT_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let rt = Runtime::global().expect("runtime");
    println!(
        "deadline overshoot past a {} ms soft deadline, HARD_DEADLINE_GRACE = {} ms, {iterations} runs each",
        BUDGET.as_millis(),
        HARD_DEADLINE_GRACE.as_millis()
    );
    println!("| case | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|");
    for (name, code) in [
        ("busy loop (interrupt handler)", "while (true) {}"),
        (
            "native BigInt power (epoch backstop)",
            "while (true) { 7n ** 5000000n }",
        ),
    ] {
        let o = case(&rt, code, iterations);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} |",
            pct(&o, 0.5),
            pct(&o, 0.99),
            pct(&o, 1.0)
        );
    }
}
