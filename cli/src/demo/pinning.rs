//! Pinning the demo's shading threads to CPUs, as renderers pin theirs.
//!
//! Unpinned, the Linux scheduler was seen (2-vCPU VM, 2026-11-29, `perf record -a`) to
//! leave both shading threads on one CPU for a whole frame while the other CPU idled or
//! ran a fill thread: the frame took twice its time though nothing in it had changed.
//! Shading thread `i` pinned to the `i`-th CPU the process may use keeps each on its own
//! CPU; fill threads then share those CPUs at their lower priority and within
//! `--fill-cpu-cores`. Linux only; elsewhere nothing is pinned.

/// Whether `threads` shading threads can each have a CPU of their own.
pub(super) fn can_pin(threads: usize) -> bool {
    threads >= 1 && allowed_cpus().is_some_and(|cpus| threads <= cpus.len())
}

/// Pin the calling thread to the `index`-th CPU the process may use (modulo their
/// number). Failure leaves it unpinned: nothing but timing depends on it.
pub(super) fn pin_current_thread(index: usize) {
    #[cfg(target_os = "linux")]
    if let Some(cpus) = allowed_cpus() {
        if !cpus.is_empty() {
            linux::pin(cpus[index % cpus.len()]);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = index;
}

/// The CPUs the calling thread may run on, in order; `None` where not known.
fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        linux::allowed()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    /// The calling thread's affinity mask as CPU numbers.
    pub(super) fn allowed() -> Option<Vec<usize>> {
        // SAFETY: cpu_set_t is plain bits, valid when zeroed; sched_getaffinity writes at
        // most `size_of::<cpu_set_t>()` bytes into `set`, and CPU_ISSET reads `set` for
        // CPU numbers below CPU_SETSIZE only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return None;
            }
            Some(
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &set))
                    .collect(),
            )
        }
    }

    /// Pin the calling thread to `cpu` (below CPU_SETSIZE: it came from `allowed`).
    pub(super) fn pin(cpu: usize) {
        // SAFETY: as above; CPU_SET writes the bit of `cpu` < CPU_SETSIZE in `set`;
        // sched_setaffinity reads `size_of::<cpu_set_t>()` bytes of it.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            tracing::debug!(cpu, "shading thread left unpinned");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_its_cpu_only() {
        let Some(cpus) = allowed_cpus() else {
            return; // not Linux: nothing is pinned
        };
        assert!(can_pin(cpus.len()));
        assert!(!can_pin(cpus.len() + 1));
        let last = cpus.len() - 1;
        let seen = std::thread::spawn(move || {
            pin_current_thread(last);
            allowed_cpus()
        })
        .join()
        .unwrap();
        assert_eq!(seen, Some(vec![cpus[last]]));
    }
}
