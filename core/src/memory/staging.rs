//! Staged tiles: evicted from the page table (non-resident) but with their data kept.
//! A staged page requested again is restored without a read (second chance); the oldest
//! staged tile whose epoch is quiescent is reclaimed when memory is needed.

use super::epoch::Epochs;
use super::tile_buffer::TileBuffer;
use std::collections::{HashMap, VecDeque};

struct Staged {
    buffer: TileBuffer,
    stamp: u64,
    seq: u64,
}

/// The staging area.
#[derive(Default)]
pub struct StagedTiles {
    tiles: HashMap<u32, Staged>,
    order: VecDeque<(u32, u64)>,
    next_seq: u64,
}

impl StagedTiles {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tiles staged now.
    pub fn len(&self) -> usize {
        self.tiles.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
    }

    /// Whether `page` is staged.
    pub fn contains(&self, page: u32) -> bool {
        self.tiles.contains_key(&page)
    }

    /// Stage `page`'s buffer, made invisible at epoch `stamp`.
    pub fn stage(&mut self, page: u32, buffer: TileBuffer, stamp: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.tiles.insert(page, Staged { buffer, stamp, seq });
        self.order.push_back((page, seq));
    }

    /// Take `page` back for a second chance, if it is still staged.
    pub fn restore(&mut self, page: u32) -> Option<TileBuffer> {
        self.tiles.remove(&page).map(|s| s.buffer)
    }

    /// Take every staged tile of pages `[start, end)` out of the staging area, for good
    /// (their contents are obsolete: they must never be restored). Their buffers may still
    /// be seen by launches pinned before they were staged: retire them, do not reuse them.
    pub fn remove_range(&mut self, start: u32, end: u32) -> Vec<(u32, TileBuffer)> {
        let pages: Vec<u32> = self
            .tiles
            .keys()
            .copied()
            .filter(|p| (start..end).contains(p))
            .collect();
        // Their queue entries become stale and are skipped (their seq no longer matches).
        pages
            .into_iter()
            .filter_map(|p| self.tiles.remove(&p).map(|s| (p, s.buffer)))
            .collect()
    }

    /// The stamp of the oldest staged tile, if any (what reclaiming waits for).
    pub fn oldest_stamp(&mut self) -> Option<u64> {
        while let Some(&(page, seq)) = self.order.front() {
            match self.tiles.get(&page) {
                Some(s) if s.seq == seq => return Some(s.stamp),
                _ => {
                    self.order.pop_front();
                }
            }
        }
        None
    }

    /// Reclaim the oldest staged tile that no pinned launch can see: `(page, buffer)`.
    /// Tiles are staged in epoch order, so the first non-quiescent one ends the search.
    pub fn reclaim_oldest(&mut self, epochs: &Epochs) -> Option<(u32, TileBuffer)> {
        while let Some(&(page, seq)) = self.order.front() {
            match self.tiles.get(&page) {
                Some(s) if s.seq == seq => {
                    if !epochs.is_quiescent(s.stamp) {
                        return None;
                    }
                    self.order.pop_front();
                    let s = self.tiles.remove(&page)?;
                    return Some((page, s.buffer));
                }
                // Restored (or restaged later): a stale queue entry.
                _ => {
                    self.order.pop_front();
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_chance_and_reclaim_order() {
        let epochs = Epochs::new();
        let mut s = StagedTiles::new();
        let pin = epochs.pin();
        let stamp = epochs.retire_stamp();
        s.stage(10, TileBuffer::new(), stamp);
        s.stage(11, TileBuffer::new(), stamp);
        assert!(
            s.reclaim_oldest(&epochs).is_none(),
            "a launch may still see them"
        );
        epochs.unpin(pin);
        assert!(s.restore(10).is_some());
        assert!(s.restore(10).is_none());
        let (page, _) = s.reclaim_oldest(&epochs).unwrap();
        assert_eq!(page, 11);
        assert!(s.reclaim_oldest(&epochs).is_none());
        assert!(s.is_empty());
        // Restage of a restored page: the old queue entry is skipped.
        s.stage(12, TileBuffer::new(), epochs.retire_stamp());
        let b = s.restore(12).unwrap();
        s.stage(12, b, epochs.retire_stamp());
        assert_eq!(s.reclaim_oldest(&epochs).unwrap().0, 12);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn removed_ranges_are_never_restored_or_reclaimed() {
        let epochs = Epochs::new();
        let mut s = StagedTiles::new();
        for page in 10..20 {
            s.stage(page, TileBuffer::new(), epochs.retire_stamp());
        }
        let mut gone: Vec<u32> = s.remove_range(12, 15).into_iter().map(|(p, _)| p).collect();
        gone.sort_unstable();
        assert_eq!(gone, vec![12, 13, 14]);
        assert!(s.restore(13).is_none());
        assert_eq!(s.len(), 7);
        let reclaimed: Vec<u32> = std::iter::from_fn(|| s.reclaim_oldest(&epochs))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(reclaimed, vec![10, 11, 15, 16, 17, 18, 19]);
    }
}
