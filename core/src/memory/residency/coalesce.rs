//! Constant tiles in [`Residency`]: a filled tile whose texels are all one value takes the
//! shared slot of that value ([`crate::memory::constant_tiles`]) and gives its own back.
//!
//! A page served by a shared slot costs no slot of its own, so eviction leaves it alone —
//! `make_room` and the clock sweep stage only pages with a slot of their own, since
//! staging a constant tile frees nothing while other pages share it. It leaves when its
//! texture's contents are dropped, or when a budget shrink cannot be met otherwise. Two
//! limits keep that bounded: shared slots hold at most a sixteenth of the budget
//! (budgets under 16 tiles share nothing), and at most eight pages per budget slot use
//! them; past either, a constant tile keeps its own slot like any other.

use super::{Residency, State, Tile};
use crate::ids::PageId;
use crate::ids::TILE_BYTES;
use crate::memory::constant_tiles::ConstantKey;
use crate::memory::TileBuffer;

/// Shared slots may hold at most 1/`SHARED_SLOTS_DIVISOR` of the budget's slots.
const SHARED_SLOTS_DIVISOR: u64 = 16;
/// Pages served by shared slots, at most, per slot of the budget.
const SHARED_PAGES_PER_SLOT: u64 = 8;

impl Residency {
    /// A fill found its tile constant: `buffer` holds `key`'s value in every texel of the
    /// tile. `page` uses the shared slot of that value — the existing one (and `buffer`
    /// goes back to the pool), or `buffer` becomes it. Past the limits (see the module
    /// docs) the tile is kept as [`filled`](Self::filled) keeps it. Whether it was shared.
    pub fn filled_constant(&mut self, page: PageId, buffer: TileBuffer, key: ConstantKey) -> bool {
        let budget_slots = self.pool.budget_bytes() / TILE_BYTES as u64;
        let room = if self.shared.contains(&key) {
            true
        } else {
            (self.shared.len() as u64) < budget_slots / SHARED_SLOTS_DIVISOR
        };
        if !room
            || self.shared.pages() >= budget_slots * SHARED_PAGES_PER_SLOT
            || self.tiles.contains_key(&page.0)
        {
            self.filled(page, buffer);
            return false;
        }
        self.counts.filling -= 1;
        let buffer_bytes = buffer.bytes() as u32;
        if let Some(spare) = self.shared.insert(key, buffer) {
            self.pool.give_back(spare);
        }
        let tile = Tile {
            state: State::Publishing { restored: false },
            bytes: buffer_bytes,
            host: None,
            shared: Some(key),
        };
        self.tiles.insert(page.0, tile);
        self.counts.publishing += 1;
        self.counts.tiles_coalesced += 1;
        true
    }

    /// Whether `page`'s tile is served by a shared slot.
    pub fn is_shared(&self, page: PageId) -> bool {
        self.tiles.get(&page.0).is_some_and(|t| t.shared.is_some())
    }

    /// Shared slots held now: distinct constant values in use (each one slot).
    pub fn shared_tiles(&self) -> u64 {
        self.shared.len() as u64
    }

    /// Pages served by a shared slot now (resident, staged or publishing).
    pub fn coalesced_pages(&self) -> u64 {
        self.shared.pages()
    }

    /// The resident pages with a slot of their own (not a shared one), ascending: what
    /// eviction picks from.
    pub(super) fn own_slot_pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.tiles
            .iter()
            .filter(|(_, t)| t.state == State::Resident && t.shared.is_none())
            .map(|(&p, _)| PageId(p))
    }
}
