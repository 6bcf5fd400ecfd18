//! The scheduling priority of the calling thread: background fill threads raise their own
//! niceness ([`crate::LoaderOptions::background_fills`]). Linux only; elsewhere a no-op.

/// Raise the calling thread's niceness by `by` (capped at 19, the lowest priority). Returns
/// the niceness now in effect, or `None` where this is not supported or the system refused
/// (the thread then keeps its priority: nothing depends on it but how cycles are shared).
pub(crate) fn lower_current_thread(by: i32) -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let tid = linux::current_tid();
        let now = linux::niceness(tid)?;
        let target = now.saturating_add(by).min(19);
        // SAFETY: setpriority reads its three integer arguments only; `tid` is the calling
        // thread's id (on Linux, PRIO_PROCESS with a thread id sets that thread's niceness).
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, target) };
        (rc == 0).then_some(target)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = by;
        None
    }
}

/// The calling thread's niceness, where known.
#[cfg(test)]
pub(crate) fn current_niceness() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        linux::niceness(linux::current_tid())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    /// The calling thread's kernel id.
    pub(super) fn current_tid() -> libc::id_t {
        // SAFETY: gettid takes no arguments, cannot fail and only returns the caller's id.
        unsafe { libc::syscall(libc::SYS_gettid) as libc::id_t }
    }

    /// The niceness of thread `tid`.
    pub(super) fn niceness(tid: libc::id_t) -> Option<i32> {
        // getpriority returns -1 both as a niceness and on error: errno tells them apart,
        // so clear it first.
        // SAFETY: `__errno_location` returns the calling thread's errno, valid for writes
        // for the thread's life; getpriority reads its two integer arguments only.
        let now = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        };
        if now == -1 && std::io::Error::last_os_error().raw_os_error() != Some(0) {
            return None;
        }
        Some(now)
    }
}
