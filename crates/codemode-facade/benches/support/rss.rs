//! The process's resident set, read from `/proc/self/status` (Linux; 0 elsewhere).

/// `VmRSS` in KiB.
pub(crate) fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// `VmRSS` in MiB.
#[allow(dead_code)] // each bench that includes this module uses one of the two
pub(crate) fn rss_mib() -> f64 {
    rss_kib() as f64 / 1024.0
}
