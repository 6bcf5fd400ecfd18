//! [`Remade`]: what a source makes at its first use and drops when the loader asks
//! ([`ImageSource::release_decoded`](crate::sources::ImageSource::release_decoded)), to
//! make again at the next use: the whole decode of a PNG or JPEG, mip levels generated in
//! memory. Readers keep what they got (an `Arc`) until they are done with it; a release
//! only stops later readers from seeing it, so it never frees memory under a read.

use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

/// A value made on first use, dropped on request. One maker at a time: threads asking
/// while it is being made wait for it (`OnceLock`).
pub(crate) struct Remade<T> {
    cell: Mutex<Arc<OnceLock<Arc<T>>>>,
}

impl<T> Remade<T> {
    /// Nothing made yet.
    pub fn new() -> Remade<T> {
        Remade {
            cell: Mutex::new(Arc::new(OnceLock::new())),
        }
    }

    /// The value, made by `make` now if there is none. The lock is held only to take the
    /// current cell, never while making.
    pub fn get_or_make(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let cell = self.cell.lock().clone();
        cell.get_or_init(|| Arc::new(make())).clone()
    }

    /// Drop the value (readers holding it keep theirs); the next use makes it again.
    /// Whether there was one. The value is freed outside the lock.
    pub fn release(&self) -> bool {
        let old = std::mem::replace(&mut *self.cell.lock(), Arc::new(OnceLock::new()));
        old.get().is_some()
    }

    /// The value held now, if any (nothing is made).
    pub fn held(&self) -> Option<Arc<T>> {
        self.cell.lock().get().cloned()
    }

    /// Whether a value is held now.
    pub fn is_made(&self) -> bool {
        self.cell.lock().get().is_some()
    }
}

impl<T> Default for Remade<T> {
    fn default() -> Self {
        Remade::new()
    }
}

impl<T> std::fmt::Debug for Remade<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remade")
            .field("made", &self.is_made())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn made_once_until_released_then_made_again_and_readers_keep_theirs() {
        let made = AtomicUsize::new(0);
        let r = Remade::new();
        let make = || made.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(!r.is_made());
        let first = r.get_or_make(make);
        assert_eq!((*first, *r.get_or_make(make)), (1, 1));
        assert!(r.is_made() && r.release());
        assert!(!r.is_made() && !r.release());
        // The reader's value outlives the release; the next use makes a new one.
        assert_eq!((*first, *r.get_or_make(make)), (1, 2));
        assert_eq!(made.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn threads_asking_at_once_share_one_making() {
        let made = AtomicUsize::new(0);
        let r = Remade::new();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    r.get_or_make(|| {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        made.fetch_add(1, Ordering::SeqCst)
                    })
                });
            }
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }
}
