//! Eviction in [`Residency`]: second chance and the budget. Resident tiles are *staged*
//! (residence bit cleared, then stamped; data kept), restored without a read when asked
//! for again, and their slots reused once no pinned reader can see them — the oldest
//! first — to make room for fills, to sweep with the clock, or to meet a smaller budget.

use super::{withdraw, Residency, Retired, State, TileEvent};
use crate::ids::PageId;
use crate::memory::epoch::{Epochs, Quiescence};
use crate::memory::TileBuffer;
use crate::paging::{PageTable, StalePage};

impl Residency {
    /// Make resident tiles non-resident, keeping their data for a second chance: their
    /// residence bits are cleared, then the stamp is taken (readers pinned later cannot see
    /// them). Pages that are not resident are skipped. Returns how many were staged.
    pub fn stage(&mut self, pages: &PageTable, epochs: &Epochs, victims: &[PageId]) -> usize {
        let victims: Vec<u32> = victims
            .iter()
            .map(|p| p.0)
            .filter(|p| {
                self.tiles
                    .get(p)
                    .is_some_and(|t| t.state == State::Resident)
            })
            .collect();
        if victims.is_empty() {
            return 0;
        }
        let stamp = withdraw(pages, epochs, &victims);
        for &page in &victims {
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some(tile) = self.tiles.get_mut(&page) {
                tile.state = State::Staged { stamp, seq };
                self.staged_bytes += u64::from(tile.bytes);
            }
            self.staged_order.push_back((page, seq));
            self.events.push(TileEvent::Staged(PageId(page)));
        }
        let n = victims.len() as u64;
        self.counts.resident -= n;
        self.counts.staged += n;
        self.counts.pages_staged += n;
        victims.len()
    }

    /// Take a staged tile back for a second chance: it is published again at the next
    /// publication, without a read. False if `page` is not staged.
    pub fn restore(&mut self, page: PageId) -> bool {
        let Some(tile) = self.tiles.get_mut(&page.0) else {
            return false;
        };
        if !matches!(tile.state, State::Staged { .. }) {
            return false;
        }
        tile.state = State::Publishing { restored: true };
        self.staged_bytes -= u64::from(tile.bytes);
        self.counts.staged -= 1;
        self.counts.publishing += 1;
        self.counts.second_chance_restores += 1;
        true
    }

    /// The stamp of the oldest staged tile, if any (what reusing its slot waits for).
    pub fn oldest_staged_stamp(&mut self) -> Option<u64> {
        self.oldest_staged().map(|(_, stamp)| stamp)
    }

    /// The oldest staged tile (skipping stale queue entries): `(page, stamp)`.
    fn oldest_staged(&mut self) -> Option<(u32, u64)> {
        while let Some(&(page, seq)) = self.staged_order.front() {
            match self.tiles.get(&page).map(|t| t.state) {
                Some(State::Staged { stamp, seq: s }) if s == seq => return Some((page, stamp)),
                _ => {
                    self.staged_order.pop_front();
                }
            }
        }
        None
    }

    /// Evict the oldest staged tiles no reader can see until a slot is released: that
    /// slot's host buffer (if any) and bytes are handed over. A constant tile's page leaves
    /// without freeing a slot unless it was the last page of its shared slot, and even then
    /// the slot is retired instead if a reader may still see it through a page withdrawn
    /// later.
    pub(super) fn evict_oldest(
        &mut self,
        epochs: &Epochs,
    ) -> Option<(PageId, Option<TileBuffer>, u32)> {
        loop {
            let (page, stamp) = self.oldest_staged()?;
            if !epochs.is_quiescent(stamp) {
                return None;
            }
            self.staged_order.pop_front();
            let tile = self.tiles.remove(&page)?;
            self.staged_bytes -= u64::from(tile.bytes);
            self.counts.staged -= 1;
            self.counts.evictions += 1;
            self.events.push(TileEvent::Released(PageId(page)));
            let Some(key) = tile.shared else {
                return Some((PageId(page), tile.host, tile.bytes));
            };
            if let Some((buffer, newest)) = self.shared.remove_page(&key, stamp) {
                if epochs.is_quiescent(newest) {
                    return Some((PageId(page), Some(buffer), tile.bytes));
                }
                self.retired.retire(newest, Retired::Tile(buffer));
            }
        }
    }

    /// Free memory while the pool is over its budget: retired memory no reader can see,
    /// then staged tiles no reader can see (oldest first).
    pub fn free_excess(&mut self, epochs: &Epochs) {
        self.reclaim_retired(epochs);
        while self.pool.excess_bytes() > 0 && self.free_oldest_staged(epochs) {}
    }

    /// Free staged tiles no reader can see (oldest first) until `bytes` are available
    /// without evicting anything, or none is left: room for reservations (mip tails, the
    /// Ptex decode cache), which take free memory only, when multi-pass eviction has
    /// staged tiles for them.
    pub fn free_staged_for(&mut self, epochs: &Epochs, bytes: u64) {
        while self.pool.available_bytes() < bytes && self.free_oldest_staged(epochs) {}
    }

    /// Evict the oldest staged tile no reader can see and free its slot's bytes (its
    /// buffer, if any, dropped). Whether there was one.
    pub(super) fn free_oldest_staged(&mut self, epochs: &Epochs) -> bool {
        let Some((_, host, bytes)) = self.evict_oldest(epochs) else {
            return false;
        };
        match host {
            Some(b) => self.pool.free_buffer(b),
            None => self.pool.free_slot(bytes as usize),
        }
        true
    }

    /// Multi-pass eviction: when free memory cannot cover `needed` bytes of slots, stage
    /// stale tiles (oldest first, ties by page) until the staged tiles cover the shortfall
    /// plus a reserve of `staged_reserve × budget` — so that recently evicted tiles get a
    /// second chance instead of a reread.
    pub fn make_room(
        &mut self,
        pages: &PageTable,
        epochs: &Epochs,
        needed: u64,
        stale: &[StalePage],
        staged_reserve: f32,
    ) {
        let free = self.pool.available_bytes();
        if free >= needed {
            return;
        }
        let reserve = (self.pool.budget_bytes() as f64 * staged_reserve as f64) as u64;
        let want_staged = needed - free + reserve;
        if self.staged_bytes >= want_staged {
            return;
        }
        // Constant tiles are not staged: that frees nothing while other pages share the slot.
        let mut victims: Vec<StalePage> = stale
            .iter()
            .copied()
            .filter(|s| self.is_resident(s.page) && !self.is_shared(s.page))
            .collect();
        victims.sort_by(|a, b| b.age.cmp(&a.age).then(a.page.cmp(&b.page)));
        let pages_to_stage = self.covering(
            victims.iter().map(|s| s.page),
            want_staged - self.staged_bytes,
        );
        self.stage(pages, epochs, &pages_to_stage);
    }

    /// Blocking-mode eviction, one clock sweep over the resident tiles with a slot of their
    /// own (constant tiles' pages are left alone: staging one frees nothing while other
    /// pages share its slot): referenced ones are
    /// spared (bit cleared, age 0), the others age; the oldest are staged — at least
    /// `needed`, and a sixteenth of the resident set so that sweeps are rare. If every tile
    /// was referenced, a second step ages them all. Returns how many were staged.
    pub fn sweep(&mut self, pages: &PageTable, epochs: &Epochs, needed: usize) -> usize {
        let resident = self.counts.resident as usize;
        if resident == 0 {
            return 0;
        }
        let batch = needed.max(resident / 16).max(1);
        let mut candidates: Vec<(u8, PageId)> = Vec::with_capacity(resident);
        for _ in 0..2 {
            candidates.extend(self.own_slot_pages().filter_map(|page| {
                let age = pages.clock_step(page.0);
                (age > 0).then_some((age, page))
            }));
            if !candidates.is_empty() {
                break;
            }
        }
        if candidates.len() > batch {
            candidates.select_nth_unstable_by(batch - 1, |a, b| b.cmp(a));
            candidates.truncate(batch);
        }
        let victims: Vec<PageId> = candidates.iter().map(|&(_, page)| page).collect();
        self.counts.clock_sweeps += 1;
        self.stage(pages, epochs, &victims)
    }

    /// Change the budget. Memory no reader can see is freed at once — spare buffers,
    /// retired memory, staged tiles, then (staged first, oldest LRU age first) resident
    /// tiles, constant tiles' pages last; the rest as soon as the readers that can see it
    /// are gone.
    pub fn set_budget(&mut self, pages: &PageTable, epochs: &Epochs, bytes: u64) {
        self.pool.set_budget(bytes);
        self.free_excess(epochs);
        let excess = self.pool.excess_bytes();
        if excess == 0 {
            return;
        }
        let mut by_age: Vec<(u8, PageId)> = self
            .own_slot_pages()
            .map(|p| (pages.lru_age(p.0), p))
            .collect();
        by_age.sort_unstable_by(|a, b| b.cmp(a));
        let victims = self.covering(by_age.iter().map(|&(_, p)| p), excess);
        self.stage(pages, epochs, &victims);
        self.free_excess(epochs);
        if self.pool.excess_bytes() > 0 && !self.shared.is_empty() {
            let constant: Vec<PageId> = self
                .resident_pages()
                .filter(|p| self.is_shared(*p))
                .collect();
            self.stage(pages, epochs, &constant);
            self.free_excess(epochs);
        }
    }

    /// The first of `candidates` whose slots hold at least `bytes` (all of them if they
    /// hold less).
    fn covering(&self, candidates: impl Iterator<Item = PageId>, bytes: u64) -> Vec<PageId> {
        let mut covered = 0u64;
        candidates
            .take_while(|p| {
                let more = covered < bytes;
                covered += self.tiles.get(&p.0).map_or(0, |t| u64::from(t.bytes));
                more
            })
            .collect()
    }

    /// Whether a staged slot could be had by waiting: what holds the oldest staged tile
    /// (`None` if nothing is staged).
    pub fn staged_quiescence(&mut self, epochs: &Epochs) -> Option<Quiescence> {
        let stamp = self.oldest_staged_stamp()?;
        Some(epochs.quiescence(stamp))
    }
}
