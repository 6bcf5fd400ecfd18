//! Retired memory: things samplers may still be reading but that will never be visible
//! again (the tiles, mip tail and sampler record of a texture whose contents were dropped).
//! Unlike staged tiles they can never be restored; each waits, stamped with the epoch at
//! which it became invisible, until no pinned reader can see it, and is then handed back.

use super::epoch::Epochs;
use std::collections::VecDeque;

/// A queue of retired items in stamp order.
#[derive(Debug)]
pub struct RetiredQueue<T> {
    items: VecDeque<(u64, T)>,
}

impl<T> Default for RetiredQueue<T> {
    fn default() -> Self {
        RetiredQueue {
            items: VecDeque::new(),
        }
    }
}

impl<T> RetiredQueue<T> {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Retire `item`, made invisible before `stamp` was taken
    /// ([`Epochs::retire_stamp`]). An item older than the newest one waiting (a shared
    /// constant slot, retired with its pages' newest stamp) waits for that one too: the
    /// queue stays in stamp order, and waiting longer is always safe.
    pub fn retire(&mut self, stamp: u64, item: T) {
        let stamp = self.items.back().map_or(stamp, |&(s, _)| s.max(stamp));
        self.items.push_back((stamp, item));
    }

    /// The items waiting, oldest first (for tests).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(_, item)| item)
    }

    /// The oldest item no pinned reader can see any more, if any.
    pub fn reclaim_one(&mut self, epochs: &Epochs) -> Option<T> {
        let &(stamp, _) = self.items.front()?;
        if !epochs.is_quiescent(stamp) {
            return None;
        }
        self.items.pop_front().map(|(_, item)| item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_once_older_readers_are_gone() {
        let epochs = Epochs::new();
        let mut q = RetiredQueue::new();
        let launch = epochs.pin();
        q.retire(epochs.retire_stamp(), "a");
        let later = epochs.pin();
        q.retire(epochs.retire_stamp(), "b");
        assert_eq!(
            q.reclaim_one(&epochs),
            None,
            "the first launch may see both"
        );
        epochs.unpin(launch);
        assert_eq!(q.reclaim_one(&epochs), Some("a"));
        assert_eq!(q.reclaim_one(&epochs), None, "the later launch may see b");
        epochs.unpin(later);
        assert_eq!(q.reclaim_one(&epochs), Some("b"));
        assert!(q.is_empty());
        assert_eq!(q.reclaim_one(&epochs), None);
    }
}
