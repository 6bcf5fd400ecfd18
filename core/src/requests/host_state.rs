//! The loader's host-side state, guarded by one mutex: resources, page space, pool,
//! resident, staged and retired tiles, fills in flight, deferred requests and the mappings
//! waiting for the next launch. Samplers never take this lock.

use crate::ids::TextureId;
use crate::memory::{RawBox, RetiredQueue, StagedTiles, TileBuffer, TilePool};
use crate::paging::{encode_base_color, PageLayout, PageSpace, PullResult};
use crate::resources::Resources;
use crate::stats::Stats;
use crate::textures::TextureSampler;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A mapping that becomes visible at the next `launch_prepare`.
pub enum Pending {
    /// A filled (or restored) tile.
    Tile {
        /// The page.
        page: u32,
        /// Its data.
        buffer: TileBuffer,
    },
    /// A page-table entry: sampler, base colour (never evicted).
    Entry {
        /// The page.
        page: u32,
        /// The entry.
        entry: u64,
    },
    /// A non-evictable page without an entry (a mip tail).
    Resident {
        /// The page.
        page: u32,
    },
}

/// Memory of a texture whose contents were dropped, waiting until no launch or lookup can
/// see it ([`crate::memory::RetiredQueue`]).
pub enum Retired {
    /// A tile that was resident, staged or waiting to be published.
    Tile {
        /// Its page (the tile directory forgets it if it still points at the buffer).
        page: u32,
        /// Its data; back to the pool.
        buffer: TileBuffer,
    },
    /// The published sampler record and mip tail.
    Contents {
        /// The sampler record (launches may hold its address).
        sampler: Option<RawBox<TextureSampler>>,
        /// The packed mip tail (the sampler addresses it).
        mip_tail: Option<RawBox<[u8]>>,
        /// Non-evictable bytes the tail holds in the pool.
        tail_bytes: u64,
    },
}

/// Why a request was carried to the next launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deferral {
    /// Over `max_requests_per_launch`.
    OverLimit,
    /// No tile memory could be had (nothing stale to evict, or still visible to a launch).
    NoMemory,
    /// The source answered "not yet".
    NotYet,
}

/// Everything behind the loader's lock.
pub struct HostState {
    pub space: PageSpace,
    pub resources: Resources,
    pub pool: TilePool,
    /// Visible tile pages and their data.
    pub resident: HashMap<u32, TileBuffer>,
    pub staged: StagedTiles,
    /// Memory of dropped texture contents, freed once no reader can see it.
    pub retired: RetiredQueue<Retired>,
    pub pending: Vec<Pending>,
    /// Pages being filled or waiting to be published: not requested again meanwhile.
    pub in_flight: HashSet<u32>,
    /// Requests carried to the next `process_requests` (ordered: coarse pages first).
    pub deferred: BTreeSet<u32>,
    /// Mip-tail bytes that could not be reserved; the next `process_requests` frees room.
    pub wanted_bytes: u64,
    pub launch_num: u32,
    /// Running totals; the derived fields (textures, memory, bookkeeping) are filled in
    /// by [`HostState::stats`].
    pub counters: Stats,
    /// Reused pull buffers.
    pub pull: PullResult,
}

impl HostState {
    pub fn new(space: PageSpace, budget_bytes: u64) -> Self {
        HostState {
            space,
            resources: Resources::default(),
            pool: TilePool::new(budget_bytes),
            resident: HashMap::new(),
            staged: StagedTiles::new(),
            retired: RetiredQueue::new(),
            pending: Vec::new(),
            in_flight: HashSet::new(),
            deferred: BTreeSet::new(),
            wanted_bytes: 0,
            launch_num: 0,
            counters: Stats::default(),
            pull: PullResult::default(),
        }
    }

    /// Carry a request to the next launch, counting why.
    pub fn defer(&mut self, page: u32, reason: Deferral) {
        if self.deferred.insert(page) {
            self.counters.requests_deferred += 1;
            match reason {
                Deferral::OverLimit => self.counters.deferred_over_limit += 1,
                Deferral::NoMemory => self.counters.deferred_no_memory += 1,
                Deferral::NotYet => self.counters.deferred_not_yet += 1,
            }
        }
    }

    /// Publish a null sampler and `color` as the base colour of `texture`, so every later
    /// lookup of it resolves to `color`.
    pub fn publish_fallback(&mut self, layout: &PageLayout, texture: TextureId, color: [f32; 4]) {
        let sampler = layout.sampler_page(texture).0;
        let base = layout.base_color_page(texture).0;
        self.in_flight.insert(sampler);
        self.in_flight.insert(base);
        self.pending.push(Pending::Entry {
            page: sampler,
            entry: 0,
        });
        self.pending.push(Pending::Entry {
            page: base,
            entry: encode_base_color(color),
        });
    }

    /// `texture`'s sampler and base-colour pages are no longer being filled; request the
    /// sampler again next launch.
    pub fn defer_init(&mut self, layout: &PageLayout, texture: TextureId, reason: Deferral) {
        self.in_flight.remove(&layout.sampler_page(texture).0);
        self.in_flight.remove(&layout.base_color_page(texture).0);
        self.defer(layout.sampler_page(texture).0, reason);
    }

    /// The statistics snapshot (bookkeeping bytes supplied by the caller).
    pub fn stats(&self, bookkeeping_bytes: u64) -> Stats {
        Stats {
            textures: self.resources.len() as u64,
            resident_bytes: self.pool.allocated_bytes(),
            peak_resident_bytes: self.pool.peak_bytes(),
            budget_bytes: self.pool.budget_bytes(),
            bookkeeping_bytes,
            ..self.counters.clone()
        }
    }
}
