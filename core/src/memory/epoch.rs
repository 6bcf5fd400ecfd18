//! Epochs: when may memory that samplers could see be reused?
//!
//! Every launch pins the epoch current when it was prepared. Memory made invisible (a
//! staged tile, a replaced sampler) is stamped with the epoch current at that moment, and
//! the epoch is then advanced. The memory may be reused once no pin at or before its stamp
//! remains — the CPU counterpart of OTK's "free staged tiles after the next launch's event".

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// Epoch counter and live pins.
#[derive(Debug, Default)]
pub struct Epochs {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    current: u64,
    pins: BTreeMap<u64, usize>,
}

impl Epochs {
    /// No pins, epoch 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pin the current epoch; returns it (give it back to [`unpin`](Self::unpin)).
    pub fn pin(&self) -> u64 {
        let mut s = self.state.lock();
        let e = s.current;
        *s.pins.entry(e).or_default() += 1;
        e
    }

    /// Release a pin taken by [`pin`](Self::pin).
    pub fn unpin(&self, epoch: u64) {
        let mut s = self.state.lock();
        if let Some(n) = s.pins.get_mut(&epoch) {
            *n -= 1;
            if *n == 0 {
                s.pins.remove(&epoch);
            }
        }
    }

    /// The epoch to stamp on memory made invisible now. Advances the counter, so launches
    /// pinned from here on cannot hold the stamped memory.
    pub fn retire_stamp(&self) -> u64 {
        let mut s = self.state.lock();
        let e = s.current;
        s.current += 1;
        e
    }

    /// The epoch new pins get (no advance).
    pub fn current(&self) -> u64 {
        self.state.lock().current
    }

    /// Whether memory stamped `stamp` can no longer be seen by any pinned launch.
    pub fn is_quiescent(&self, stamp: u64) -> bool {
        self.state
            .lock()
            .pins
            .keys()
            .next()
            .is_none_or(|&oldest| oldest > stamp)
    }

    /// Live pins (for tests and statistics).
    pub fn pinned(&self) -> usize {
        self.state.lock().pins.values().sum()
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
}
