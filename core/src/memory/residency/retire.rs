//! Retirement in [`Residency`]: a texture's contents dropped (invalidated, replaced,
//! unloaded). Its tiles are withdrawn — residence bits cleared, then stamped — and their
//! memory, and the contents' mip tail and sampler, handed back once no reader can see them.

use super::{withdraw, Residency, Retired, State, TileEvent};
use crate::ids::PageId;
use crate::memory::epoch::Epochs;
use crate::memory::raw_box::RawBox;
use crate::paging::PageTable;
use crate::textures::TextureSampler;
use std::ops::Range;

impl Residency {
    /// The contents of a texture were dropped: every tile of pages `range` (publishing,
    /// resident or staged) is withdrawn — residence bits cleared, then stamped — and
    /// retired until no reader can see it. Returns how many were withdrawn.
    pub fn retire_range(&mut self, pages: &PageTable, epochs: &Epochs, range: Range<u32>) -> usize {
        let withdrawn: Vec<u32> = self.tiles.range(range).map(|(&p, _)| p).collect();
        if withdrawn.is_empty() {
            return 0;
        }
        let stamp = withdraw(pages, epochs, &withdrawn);
        for &page in &withdrawn {
            let Some(tile) = self.tiles.remove(&page) else {
                continue;
            };
            match tile.state {
                State::Publishing { .. } => self.counts.publishing -= 1,
                State::Resident => self.counts.resident -= 1,
                State::Staged { .. } => {
                    self.counts.staged -= 1;
                    self.staged_bytes -= u64::from(tile.bytes);
                }
            }
            match (tile.shared, tile.host) {
                (None, Some(buffer)) => self.retired.retire(stamp, Retired::Tile(buffer)),
                (None, None) => self.retired.retire(stamp, Retired::Slot(tile.bytes)),
                // A constant tile's shared slot is retired with its last page.
                (Some(key), _) => {
                    if let Some((buffer, newest)) = self.shared.remove_page(&key, stamp) {
                        self.retired.retire(newest, Retired::Tile(buffer));
                    }
                }
            }
            self.events.push(TileEvent::Released(PageId(page)));
        }
        withdrawn.len()
    }

    /// A texture's published sampler record and mip tail (`tail_bytes` of the budget) are
    /// withdrawn; their pages were made non-resident before `stamp` was taken. Freed once
    /// no reader can see them.
    pub fn retire_contents(
        &mut self,
        stamp: u64,
        sampler: Option<RawBox<TextureSampler>>,
        mip_tail: Option<RawBox<[u8]>>,
        tail_bytes: u64,
    ) {
        self.retired_tail_bytes += tail_bytes;
        self.retired.retire(
            stamp,
            Retired::Contents {
                sampler,
                mip_tail,
                tail_bytes,
            },
        );
    }

    /// Hand back the retired memory no reader can see any more: tile slots to the pool,
    /// sampler records and mip tails freed (their bytes leave the budget).
    pub fn reclaim_retired(&mut self, epochs: &Epochs) {
        while let Some(item) = self.retired.reclaim_one(epochs) {
            match item {
                Retired::Tile(buffer) => self.pool.give_back(buffer),
                Retired::Slot(bytes) => self.pool.free_slot(bytes as usize),
                Retired::Contents {
                    sampler,
                    mip_tail,
                    tail_bytes,
                } => {
                    drop((sampler, mip_tail));
                    self.retired_tail_bytes -= tail_bytes;
                    self.pool.release(tail_bytes);
                }
            }
        }
    }
}
