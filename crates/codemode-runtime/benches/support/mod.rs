//! What the runtime's benchmarks share.

use criterion::Criterion;

/// `criterion_main!`, but on a thread with a leg-sized stack as the facade uses, so guest calls
/// do not hop to a helper thread and the numbers are those of real legs: runs `group` (a
/// `criterion_group!`) there, then prints the summary.
pub(crate) fn main_on_leg_stack(group: fn()) {
    codemode_runtime::on_leg_stack(|| {
        group();
        Criterion::default().configure_from_args().final_summary();
    })
    .expect("benchmarks panicked");
}

/// `criterion_group!` of `$targets` (each sampled `$samples` times over `$seconds` s) and a
/// `main` that runs it with [`main_on_leg_stack`].
macro_rules! leg_stack_benches {
    ($targets:path, $samples:expr, $seconds:expr) => {
        criterion::criterion_group! {
            name = group;
            config = criterion::Criterion::default()
                .sample_size($samples)
                .measurement_time(std::time::Duration::from_secs($seconds));
            targets = $targets
        }

        fn main() {
            support::main_on_leg_stack(group);
        }
    };
}
