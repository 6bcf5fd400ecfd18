//! `Ticket`: tracks one batch of fills. Every task ends in a result, so every ticket
//! completes — a failed or panicking read still counts its task done.

use crate::sync::{AtomicUsize, Condvar, Mutex};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

struct Inner {
    total: usize,
    remaining: AtomicUsize,
    lock: Mutex<()>,
    done: Condvar,
}

/// A batch of fills started by [`crate::Loader::process_requests`]. Cloning shares it.
#[derive(Clone)]
pub struct Ticket {
    inner: Arc<Inner>,
}

impl Ticket {
    pub(crate) fn new(total: usize) -> Ticket {
        Ticket {
            inner: Arc::new(Inner {
                total,
                remaining: AtomicUsize::new(total),
                lock: Mutex::new(()),
                done: Condvar::new(),
            }),
        }
    }

    /// A ticket with nothing to do.
    pub fn done() -> Ticket {
        Ticket::new(0)
    }

    /// Tasks in the batch.
    pub fn tasks_total(&self) -> usize {
        self.inner.total
    }

    /// Tasks not finished yet.
    pub fn tasks_remaining(&self) -> usize {
        self.inner.remaining.load(Ordering::Acquire)
    }

    /// Whether every task has finished.
    pub fn is_done(&self) -> bool {
        self.tasks_remaining() == 0
    }

    /// Block until every task has finished.
    pub fn wait(&self) {
        let mut guard = self.inner.lock.lock();
        while !self.is_done() {
            self.inner.done.wait(&mut guard);
        }
    }

    /// Block at most `timeout`; true if every task finished.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut guard = self.inner.lock.lock();
        while !self.is_done() {
            if self.inner.done.wait_until(&mut guard, deadline).timed_out() {
                return self.is_done();
            }
        }
        true
    }

    /// A guard that marks one task finished when dropped (also on unwinding).
    pub(crate) fn task(&self) -> TaskGuard {
        TaskGuard {
            ticket: self.clone(),
        }
    }

    fn finish_one(&self) {
        if self.inner.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _g = self.inner.lock.lock();
            self.inner.done.notify_all();
        }
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Ticket({}/{} remaining)",
            self.tasks_remaining(),
            self.tasks_total()
        )
    }
}

/// Marks one task of a ticket finished on drop.
pub(crate) struct TaskGuard {
    ticket: Ticket,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.ticket.finish_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_when_every_task_guard_drops_even_on_panic() {
        let t = Ticket::new(3);
        let guards: Vec<_> = (0..3).map(|_| t.task()).collect();
        assert_eq!(t.tasks_remaining(), 3);
        let mut it = guards.into_iter();
        let g = it.next().unwrap();
        let r = std::thread::spawn(move || {
            let _g = g;
            panic!("a worker panics");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(t.tasks_remaining(), 2);
        assert!(!t.wait_timeout(Duration::from_millis(10)));
        let rest: Vec<_> = it.collect();
        let waiter = {
            let t = t.clone();
            std::thread::spawn(move || t.wait())
        };
        drop(rest);
        waiter.join().unwrap();
        assert!(t.is_done());
        assert_eq!(t.tasks_total(), 3);
        Ticket::done().wait();
    }
}
