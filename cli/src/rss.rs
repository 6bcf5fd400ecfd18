//! The process's resident memory, for the figures of soak runs and benchmarks.

use crate::error::CliError;

/// The process's resident set size in bytes (Linux: `/proc/self/status`).
pub fn process_rss_bytes() -> Result<u64, CliError> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| {
        CliError::Io(format!(
            "resident memory is read from /proc/self/status (Linux only): {e}"
        ))
    })?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| CliError::Io("/proc/self/status has no VmRSS line".into()))
}
