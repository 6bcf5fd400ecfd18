//! The atomics and locks of the lock-free structures (page bits, page table, epochs,
//! tickets), in one place so the model checker can replace them: built with
//! `RUSTFLAGS="--cfg loom"`, they are [loom](https://docs.rs/loom)'s, which explores every
//! interleaving and memory-order outcome of a small model (`scripts/loom.sh`, the models
//! in `loom_models`). Otherwise they are std's atomics and parking_lot's locks.
//!
//! The loom build is for the models only: loom's types panic outside `loom::model`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(not(loom))]
pub(crate) use parking_lot::{Condvar, Mutex};

#[cfg(loom)]
pub(crate) use self::loom_locks::{Condvar, Mutex};

/// parking_lot's lock API over loom's locks (loom's follow std's: poisoning, guards by
/// value), so the code under test is the code that ships.
#[cfg(loom)]
mod loom_locks {
    use std::time::Instant;

    /// A loom mutex with parking_lot's `lock`.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Its guard; `None` only while a condition variable holds the lock.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("a model thread panicked")))
        }
    }

    impl<T> std::ops::Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard held")
        }
    }

    impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard held")
        }
    }

    /// Whether a timed wait ended by timing out (parking_lot's `WaitTimeoutResult`).
    pub(crate) struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        pub(crate) fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// A loom condition variable with parking_lot's `wait(&mut guard)`.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard held");
            guard.0 = Some(self.0.wait(inner).expect("a model thread panicked"));
        }

        /// Loom has no clock: a timed wait is a wait that may also end without a notify.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> WaitTimeoutResult {
            let inner = guard.0.take().expect("guard held");
            let (inner, result) = self
                .0
                .wait_timeout(inner, std::time::Duration::from_millis(1))
                .expect("a model thread panicked");
            guard.0 = Some(inner);
            WaitTimeoutResult(result.timed_out())
        }

        pub(crate) fn notify_all(&self) -> bool {
            self.0.notify_all();
            true
        }
    }
}
