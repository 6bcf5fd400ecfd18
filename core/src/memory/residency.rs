//! `Residency`: where every tile slot of the budget is in its life, and the one place that
//! changes it — allocation, publication, staging, second chance, eviction, retirement and
//! reclamation. The request pipeline and the blocking cache call it; nothing else touches
//! the pool, the staged tiles or the retired memory.
//!
//! ```text
//!             allocate              filled                published
//!   (pool) ───────────▶ filling ──────────▶ publishing ──────────▶ resident
//!      ▲                   │ cancel             ▲                     │ stage: bit cleared,
//!      ├───────────────────┘                    │ restore              │ stamped
//!      │                                        │ (second chance)      ▼
//!      ├─────────────── evict (no reader can see it) ──────────── staged
//!      │
//!      └── reclaim (no reader) ◀── retired ◀── retire (contents dropped: any state
//!                                                but filling)
//! ```
//!
//! - **Filling**: a fill task holds the slot's host buffer; only counted here.
//! - **Publishing**: filled (or restored), waiting for the next publication; not visible.
//! - **Resident**: visible (the residence bit is set by the publication).
//! - **Staged**: invisible since its stamp (its residence bit was cleared first), data kept;
//!   requested again, it is restored without a read. Its slot is reused only once no
//!   reader pinned at or before the stamp remains ([`Epochs`]).
//! - **Retired**: dropped with its texture's contents; never visible again, handed back
//!   once no reader can see it.
//!
//! A slot's data lives in its host [`TileBuffer`] (the CPU backend samples it in place), or
//! — once [`published`](Residency::published) with `keep_host: false` — only in the
//! backend (a GPU), the host copy freed. Either way the slot counts against the budget.
//!
//! Every change a backend must mirror — a tile staged, a slot released (evicted or
//! retired) — is recorded as a [`TileEvent`], in order; the engine forwards them
//! ([`take_events`](Residency::take_events)) before its next publication, so a backend
//! never sees a page published before the release of its previous slot.
//!
//! Slots come in the tile sizes of the pages they hold (64 KiB, or a texture's smaller file
//! tiles: `TextureLayout::tile_bytes`); one budget counts bytes, and a fill needing a size
//! no spare buffer has frees spare or evicted buffers of other sizes to make room.
//!
//! Invariants (tested below and by a property test):
//! - `allocated_bytes = bytes of (filling + tiles + retired tiles + spare buffers) + mip
//!   tails`, and taking memory never makes it exceed the budget;
//! - a staged or retired slot is reused only when no pinned reader can see it;
//! - every slot that leaves (evicted, retired) is reported released exactly once.

use super::constant_tiles::{ConstantKey, SharedTiles};
use super::epoch::Epochs;
use super::pool::{TilePool, TileSlot};
use super::raw_box::RawBox;
use super::retired::RetiredQueue;
use super::tile_buffer::TileBuffer;
use crate::ids::PageId;
#[cfg(test)]
use crate::ids::TILE_BYTES;
use crate::paging::PageTable;
use crate::textures::TextureSampler;
use std::collections::{BTreeMap, VecDeque};

#[cfg(test)]
const TILE: u64 = TILE_BYTES as u64;

/// A change a backend mirrors (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileEvent {
    /// The page's tile was made non-resident, its data kept for a second chance.
    Staged(PageId),
    /// The page's slot is gone (evicted, or its texture's contents were dropped): its data
    /// must never be shown for this page again.
    Released(PageId),
}

/// A tile being published: its host data (none if the backend holds it) and whether it
/// comes back from staging (the backend may still hold its data).
#[derive(Clone, Copy, Debug)]
pub struct Publishing<'a> {
    /// The texels, if the host keeps them.
    pub data: Option<&'a TileBuffer>,
    /// Restored from staging (a second chance) rather than filled.
    pub restored: bool,
}

/// Memory waiting until no reader can see it.
enum Retired {
    Tile(TileBuffer),
    /// A slot whose data the backend held (no host buffer): its bytes.
    Slot(u32),
    Contents {
        sampler: Option<RawBox<TextureSampler>>,
        mip_tail: Option<RawBox<[u8]>>,
        tail_bytes: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Publishing { restored: bool },
    Resident,
    Staged { stamp: u64, seq: u64 },
}

struct Tile {
    state: State,
    /// Bytes of the slot (of the shared slot, for a constant tile).
    bytes: u32,
    /// The slot's own buffer (none for a shared tile, or once the backend holds the data).
    host: Option<TileBuffer>,
    /// A constant tile served by the shared slot of this value (no slot of its own).
    shared: Option<ConstantKey>,
}

/// What [`Residency`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResidencyCounts {
    /// Tiles resident now.
    pub resident: u64,
    /// Tiles staged now.
    pub staged: u64,
    /// Slots held by fills in progress.
    pub filling: u64,
    /// Tiles filled or restored, waiting for the next publication.
    pub publishing: u64,
    /// Pages staged, since creation.
    pub pages_staged: u64,
    /// Staged tiles restored without a read, since creation.
    pub second_chance_restores: u64,
    /// Staged tiles whose slot was reused or freed, since creation.
    pub evictions: u64,
    /// Clock sweeps over the resident tiles, since creation.
    pub clock_sweeps: u64,
    /// Constant tiles given a shared slot instead of one of their own, since creation.
    pub tiles_coalesced: u64,
}

/// The tile slots of one loader (see the module docs).
pub struct Residency {
    pool: TilePool,
    tiles: BTreeMap<u32, Tile>,
    /// Staged pages, oldest first, with the `seq` they were staged with (an entry whose
    /// tile was restored or restaged since is stale and skipped).
    staged_order: VecDeque<(u32, u64)>,
    /// Bytes of the staged tiles' slots.
    staged_bytes: u64,
    next_seq: u64,
    retired: RetiredQueue<Retired>,
    /// Mip-tail bytes retired but not yet reclaimed (still in the non-evictable bytes).
    retired_tail_bytes: u64,
    /// Mip-tail bytes reserved by opens still reading (still in the non-evictable bytes):
    /// published or released when the open ends.
    reserved_tail_bytes: u64,
    /// Bytes of whole decodes charged now (in the non-evictable bytes; see `decodes.rs`).
    decode_bytes: u64,
    events: Vec<TileEvent>,
    counts: ResidencyCounts,
    /// The shared slots of constant tiles (see `residency/coalesce.rs`).
    shared: SharedTiles,
}

impl Residency {
    /// No tiles, a budget of `budget_bytes`.
    pub fn new(budget_bytes: u64) -> Self {
        Residency {
            pool: TilePool::new(budget_bytes),
            tiles: BTreeMap::new(),
            staged_order: VecDeque::new(),
            staged_bytes: 0,
            next_seq: 0,
            retired_tail_bytes: 0,
            reserved_tail_bytes: 0,
            decode_bytes: 0,
            retired: RetiredQueue::new(),
            events: Vec::new(),
            counts: ResidencyCounts::default(),
            shared: SharedTiles::default(),
        }
    }

    // ---- budget -------------------------------------------------------------------------

    /// The budget.
    pub fn budget_bytes(&self) -> u64 {
        self.pool.budget_bytes()
    }

    /// Bytes held now: slots, spare buffers, mip tails.
    pub fn allocated_bytes(&self) -> u64 {
        self.pool.allocated_bytes()
    }

    /// Most bytes ever held.
    pub fn peak_bytes(&self) -> u64 {
        self.pool.peak_bytes()
    }

    /// Bytes of host tile buffers that exist now (equal to the slots' bytes when the host
    /// keeps every tile; only fills, publications and spares when a backend holds them).
    pub fn host_bytes(&self) -> u64 {
        self.pool.host_bytes()
    }

    /// Most bytes of host tile buffers that existed at once.
    pub fn peak_host_bytes(&self) -> u64 {
        self.pool.peak_host_bytes()
    }

    /// Bytes that can never be evicted (mip tails, retired ones included until reclaimed).
    pub fn non_evictable_bytes(&self) -> u64 {
        self.pool.non_evictable_bytes()
    }

    /// Of those, retired mip tails: freed once no reader can see them.
    pub fn retired_tail_bytes(&self) -> u64 {
        self.retired_tail_bytes
    }

    /// Bytes over the budget (after a shrink that could not free everything yet).
    pub fn excess_bytes(&self) -> u64 {
        self.pool.excess_bytes()
    }

    /// Bytes of slots obtainable without evicting anything.
    pub fn available_bytes(&self) -> u64 {
        self.pool.available_bytes()
    }

    /// Of those, mip tails reserved by opens that have not ended: each is published
    /// ([`publish_tail`](Self::publish_tail)) or released
    /// ([`release_tail`](Self::release_tail)) when its open ends.
    pub fn reserved_tail_bytes(&self) -> u64 {
        self.reserved_tail_bytes
    }

    /// Non-evictable bytes that stay until their texture is invalidated, replaced or
    /// unloaded: the published mip tails. What a new tail must fit beside for good; the
    /// rest (retired and reserved tails, whole decodes) is a shortage that passes.
    pub fn published_tail_bytes(&self) -> u64 {
        self.non_evictable_bytes()
            - self.retired_tail_bytes
            - self.reserved_tail_bytes
            - self.decode_bytes
    }

    /// Reserve a mip tail's bytes for an open. False if the budget does not allow it now.
    pub fn reserve_tail(&mut self, bytes: u64) -> bool {
        let ok = self.pool.reserve(bytes);
        if ok {
            self.reserved_tail_bytes += bytes;
        }
        ok
    }

    /// The open that reserved `bytes` published its mip tail: they stay non-evictable.
    pub fn publish_tail(&mut self, bytes: u64) {
        self.reserved_tail_bytes -= bytes;
    }

    /// Release bytes taken by [`reserve_tail`](Self::reserve_tail) (never published).
    pub fn release_tail(&mut self, bytes: u64) {
        self.reserved_tail_bytes -= bytes;
        self.pool.release(bytes);
    }

    /// Counters and sizes.
    pub fn counts(&self) -> ResidencyCounts {
        self.counts
    }

    // ---- fills and publication ------------------------------------------------------------

    /// A slot of `bytes` (a tile size; its host buffer, or a new one for the fill to make)
    /// for a fill: free memory first, then retired memory no reader can see, then the
    /// oldest staged tiles no reader can see (evicted; a slot of another size is freed and
    /// its bytes taken). `None` if none can be had now.
    pub fn allocate(&mut self, epochs: &Epochs, bytes: usize) -> Option<TileSlot> {
        let slot = loop {
            if let Some(slot) = self.take_free(epochs, bytes) {
                break slot;
            }
            let (_, host, slot_bytes) = self.evict_oldest(epochs)?;
            match host {
                Some(buffer) if buffer.bytes() == bytes => break TileSlot::Ready(buffer),
                None if slot_bytes as usize == bytes => break self.pool.new_slot(bytes),
                Some(buffer) => self.pool.free_buffer(buffer),
                None => self.pool.free_slot(slot_bytes as usize),
            }
        };
        self.counts.filling += 1;
        Some(slot)
    }

    /// Free memory or reclaimable retired memory, without evicting.
    fn take_free(&mut self, epochs: &Epochs, bytes: usize) -> Option<TileSlot> {
        if self.pool.excess_bytes() == 0 {
            if let Some(b) = self.pool.take(bytes) {
                return Some(b);
            }
        }
        if self.retired.is_empty() {
            return None;
        }
        self.reclaim_retired(epochs);
        if self.pool.excess_bytes() == 0 {
            return self.pool.take(bytes);
        }
        None
    }

    /// A fill's slot comes back unpublished (failed, "not yet", or obsolete).
    pub fn cancel(&mut self, buffer: TileBuffer) {
        self.cancel_slot(TileSlot::Ready(buffer));
    }

    /// A fill's slot comes back before its buffer was made (the fill was dropped unread).
    pub fn cancel_slot(&mut self, slot: TileSlot) {
        self.counts.filling -= 1;
        self.pool.give_back_slot(slot);
    }

    /// A fill finished: `page` holds the slot, waiting for the next publication.
    pub fn filled(&mut self, page: PageId, buffer: TileBuffer) {
        if self.tiles.contains_key(&page.0) {
            // Never expected: requests are de-duplicated while in flight, a staged page is
            // restored rather than read, and dropped contents leave no tile behind. Keep
            // what readers may see; the new copy was never visible.
            tracing::warn!(page = page.0, "a tile was filled twice; keeping the first");
            self.cancel(buffer);
            return;
        }
        self.counts.filling -= 1;
        let tile = Tile {
            state: State::Publishing { restored: false },
            bytes: buffer.bytes() as u32,
            host: Some(buffer),
            shared: None,
        };
        self.tiles.insert(page.0, tile);
        self.counts.publishing += 1;
    }

    /// The tile `page` waiting for publication, if it is (filled or restored since, and
    /// neither published nor withdrawn).
    pub fn publishing(&self, page: PageId) -> Option<Publishing<'_>> {
        match self.tiles.get(&page.0)? {
            Tile {
                state: State::Publishing { restored },
                host,
                shared,
                ..
            } => Some(Publishing {
                data: host
                    .as_ref()
                    .or_else(|| self.shared.buffer(shared.as_ref()?)),
                restored: *restored,
            }),
            _ => None,
        }
    }

    /// Publishing → resident: the caller makes it visible. `keep_host: false` frees the
    /// host copy (the backend holds the data). False if `page` was not publishing.
    pub fn published(&mut self, page: PageId, keep_host: bool) -> bool {
        let Some(tile) = self.tiles.get_mut(&page.0) else {
            return false;
        };
        if !matches!(tile.state, State::Publishing { .. }) {
            return false;
        }
        tile.state = State::Resident;
        if !keep_host {
            if let Some(b) = tile.host.take() {
                self.pool.drop_host_copy(b);
            }
        }
        self.counts.publishing -= 1;
        self.counts.resident += 1;
        true
    }

    // ---- queries ---------------------------------------------------------------------------

    /// Whether `page` is resident (published and not staged).
    pub fn is_resident(&self, page: PageId) -> bool {
        self.tiles
            .get(&page.0)
            .is_some_and(|t| t.state == State::Resident)
    }

    /// Whether `page` is staged.
    pub fn is_staged(&self, page: PageId) -> bool {
        self.tiles
            .get(&page.0)
            .is_some_and(|t| matches!(t.state, State::Staged { .. }))
    }

    /// The resident pages, ascending.
    pub fn resident_pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.tiles
            .iter()
            .filter(|(_, t)| t.state == State::Resident)
            .map(|(&p, _)| PageId(p))
    }

    /// The events recorded since the last call, in order (see the module docs).
    pub fn take_events(&mut self) -> Vec<TileEvent> {
        std::mem::take(&mut self.events)
    }

    /// Bytes of the slots accounted for: filling (full tiles, as the tests fill them),
    /// held by pages (a shared slot once, full tiles in the tests), retired (for tests).
    #[cfg(test)]
    fn slot_bytes(&self) -> u64 {
        let own: u64 = self
            .tiles
            .values()
            .filter(|t| t.shared.is_none())
            .map(|t| u64::from(t.bytes))
            .sum();
        let retired: u64 = self
            .retired
            .iter()
            .map(|r| match r {
                Retired::Tile(b) => b.bytes() as u64,
                Retired::Slot(bytes) => u64::from(*bytes),
                Retired::Contents { .. } => 0,
            })
            .sum();
        (self.counts.filling + self.shared.len() as u64) * TILE + own + retired
    }
}

/// Withdraw `withdrawn` from readers: clear their residence bits, then take the stamp
/// (readers pinned after it cannot see them). That order is what lets a slot stamped so be
/// reused once no reader pinned at or before the stamp remains.
fn withdraw(pages: &PageTable, epochs: &Epochs, withdrawn: &[u32]) -> u64 {
    for &page in withdrawn {
        pages.invalidate(page);
    }
    epochs.retire_stamp()
}

impl std::fmt::Debug for Residency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Residency")
            .field("counts", &self.counts)
            .field("allocated_bytes", &self.allocated_bytes())
            .field("budget_bytes", &self.budget_bytes())
            .finish_non_exhaustive()
    }
}

mod coalesce;
mod decodes;
mod evict;
mod retire;
#[cfg(test)]
mod tests;
