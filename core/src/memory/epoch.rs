//! Epochs: when may memory that samplers could see be reused?
//!
//! Every reader pins the epoch current when it started. Memory made invisible (a staged
//! tile, a replaced sampler) is stamped with the epoch current at that moment, and the
//! epoch is then advanced. The memory may be reused once no pin at or before its stamp
//! remains — the CPU counterpart of OTK's "free staged tiles after the next launch's event".
//!
//! Two kinds of reader pin:
//! - **launches** (multi-pass mode): long-lived, rare; counted behind a mutex;
//! - **threads** (blocking mode): one pin per lookup, so they must be cheap: each thread
//!   has its own cache-line-sized slot ([`ThreadPin`]) that it writes without any shared
//!   lock; a reclaimer scans the slots. Protocol (classic epoch-based reclamation):
//!   the reader loads the epoch (acquire), stores it in its slot, then issues a SeqCst
//!   fence before it reads the page table; the reclaimer clears residence bits, advances
//!   the epoch (release), and issues a SeqCst fence before it scans the slots. Either the
//!   scan sees the pin, or the reader's page-table reads see the cleared bits (and never
//!   reach the memory). A thread pin never waits for anything, so a reclaimer that waits
//!   for thread pins waits at most one lookup.

use crate::sync::{fence, AtomicU64, Mutex};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// A slot value meaning "not pinned".
const IDLE: u64 = u64::MAX;

/// Epoch counter, launch pins and thread pins.
#[derive(Debug)]
pub struct Epochs {
    /// The epoch new pins get. Advanced (under `launches`) by `retire_stamp`.
    current: AtomicU64,
    launches: Mutex<BTreeMap<u64, usize>>,
    threads: Arc<ThreadSlots>,
}

/// The registry of thread slots.
#[derive(Debug, Default)]
struct ThreadSlots {
    slots: Mutex<Vec<Arc<Slot>>>,
}

/// One thread's pin: the epoch it pinned, or `IDLE`. Padded to a cache line so threads do
/// not share lines.
#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    epoch: AtomicU64,
}

/// Why memory stamped with some epoch cannot be reused yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quiescence {
    /// No reader can see it: reuse it.
    Quiescent,
    /// Only thread pins (lookups in progress, which never block) hold it: it will be free
    /// within a lookup's time.
    ThreadsPinned,
    /// A launch pinned before the stamp is alive: it stays until that launch ends.
    LaunchPinned,
}

impl Default for Epochs {
    fn default() -> Self {
        Epochs {
            current: AtomicU64::new(0),
            launches: Mutex::new(BTreeMap::new()),
            threads: Arc::new(ThreadSlots::default()),
        }
    }
}

impl Epochs {
    /// No pins, epoch 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pin the current epoch for a launch; returns it (give it back to [`unpin`](Self::unpin)).
    pub fn pin(&self) -> u64 {
        let mut launches = self.launches.lock();
        let e = self.current.load(Ordering::Acquire);
        *launches.entry(e).or_default() += 1;
        e
    }

    /// Release a launch pin taken by [`pin`](Self::pin).
    pub fn unpin(&self, epoch: u64) {
        let mut launches = self.launches.lock();
        if let Some(n) = launches.get_mut(&epoch) {
            *n -= 1;
            if *n == 0 {
                launches.remove(&epoch);
            }
        }
    }

    /// A pin slot for the calling thread (register once per thread, then pin per lookup).
    pub fn register_thread(&self) -> ThreadPin {
        let mut slots = self.threads.slots.lock();
        // Reuse the slot of a thread that has gone (only the registry holds it).
        let slot = match slots.iter().find(|s| Arc::strong_count(s) == 1) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(Slot {
                    epoch: AtomicU64::new(IDLE),
                });
                slots.push(s.clone());
                s
            }
        };
        ThreadPin {
            slot,
            registry: Arc::downgrade(&self.threads),
        }
    }

    /// Whether `pin` was registered with this `Epochs`.
    #[inline]
    pub fn owns(&self, pin: &ThreadPin) -> bool {
        std::ptr::eq(pin.registry.as_ptr(), Arc::as_ptr(&self.threads))
    }

    /// Pin the current epoch in a thread's slot until the guard drops. Lock-free.
    #[inline]
    pub fn pin_thread<'a>(&self, pin: &'a ThreadPin) -> ThreadPinGuard<'a> {
        debug_assert_eq!(pin.slot.epoch.load(Ordering::Relaxed), IDLE, "nested pin");
        let e = self.current.load(Ordering::Acquire);
        pin.slot.epoch.store(e, Ordering::Relaxed);
        // Order the pin before every page-table read of the lookup (see the module docs).
        fence(Ordering::SeqCst);
        ThreadPinGuard { slot: &pin.slot }
    }

    /// The epoch to stamp on memory made invisible now. Advances the counter, so readers
    /// pinned from here on cannot hold the stamped memory.
    pub fn retire_stamp(&self) -> u64 {
        let _launches = self.launches.lock();
        self.current.fetch_add(1, Ordering::AcqRel)
    }

    /// The epoch new pins get (no advance).
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Acquire)
    }

    /// Whether memory stamped `stamp` can no longer be seen by any pinned reader.
    pub fn is_quiescent(&self, stamp: u64) -> bool {
        self.quiescence(stamp) == Quiescence::Quiescent
    }

    /// What, if anything, still holds memory stamped `stamp`.
    pub fn quiescence(&self, stamp: u64) -> Quiescence {
        let launch_pinned = self
            .launches
            .lock()
            .keys()
            .next()
            .is_some_and(|&oldest| oldest <= stamp);
        if launch_pinned {
            return Quiescence::LaunchPinned;
        }
        // Pairs with the fence in `pin_thread` (see the module docs).
        fence(Ordering::SeqCst);
        let slots = self.threads.slots.lock();
        if slots
            .iter()
            .any(|s| s.epoch.load(Ordering::Acquire) <= stamp)
        {
            Quiescence::ThreadsPinned
        } else {
            Quiescence::Quiescent
        }
    }

    /// Live launch pins (for tests and statistics).
    pub fn pinned(&self) -> usize {
        self.launches.lock().values().sum()
    }
}

/// A thread's registration with an [`Epochs`]: pin through [`Epochs::pin_thread`], one
/// pin at a time (pins do not nest).
#[derive(Debug)]
pub struct ThreadPin {
    slot: Arc<Slot>,
    registry: Weak<ThreadSlots>,
}

impl ThreadPin {
    /// Whether the [`Epochs`] it was registered with still exists.
    pub fn is_live(&self) -> bool {
        self.registry.strong_count() > 0
    }
}

/// A pinned thread slot; unpins on drop.
#[derive(Debug)]
pub struct ThreadPinGuard<'a> {
    slot: &'a Slot,
}

impl Drop for ThreadPinGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the reads made under the pin happen before a reclaimer that sees IDLE.
        self.slot.epoch.store(IDLE, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_reusable_once_older_pins_are_gone() {
        let e = Epochs::new();
        let a = e.pin();
        let stamp = e.retire_stamp();
        assert!(!e.is_quiescent(stamp), "launch a may still see it");
        let b = e.pin();
        assert!(b > stamp);
        e.unpin(a);
        assert!(e.is_quiescent(stamp), "b started after the stamp");
        let stamp2 = e.retire_stamp();
        assert!(!e.is_quiescent(stamp2));
        e.unpin(b);
        assert!(e.is_quiescent(stamp2));
        assert_eq!(e.pinned(), 0);
        e.unpin(12345); // unknown pins are ignored
    }

    #[test]
    fn thread_pins_hold_memory_until_released() {
        let e = Epochs::new();
        let p = e.register_thread();
        let guard = e.pin_thread(&p);
        let stamp = e.retire_stamp();
        assert_eq!(e.quiescence(stamp), Quiescence::ThreadsPinned);
        drop(guard);
        assert_eq!(e.quiescence(stamp), Quiescence::Quiescent);
        let _g = e.pin_thread(&p);
        assert!(e.is_quiescent(stamp), "pinned after the stamp");
        let launch = e.pin();
        let stamp2 = e.retire_stamp();
        assert_eq!(e.quiescence(stamp2), Quiescence::LaunchPinned);
        e.unpin(launch);
    }

    #[test]
    fn slots_of_gone_threads_are_reused() {
        let e = Epochs::new();
        for _ in 0..4 {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let p = e.register_thread();
                    drop(e.pin_thread(&p));
                });
            });
        }
        assert_eq!(e.threads.slots.lock().len(), 1);
        let p = e.register_thread();
        assert!(p.is_live());
        drop(e);
        assert!(!p.is_live());
    }
}
