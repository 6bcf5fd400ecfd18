//! The loader's host-side state, guarded by one mutex: resources, page space, pool,
//! resident and staged tiles, fills in flight, deferred requests and the mappings waiting
//! for the next launch. Samplers never take this lock.

use crate::memory::{StagedTiles, TileBuffer, TilePool};
use crate::paging::{PageSpace, PullResult};
use crate::resources::Resources;
use crate::stats::Stats;
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

/// Counters kept under the lock (the rest of [`Stats`] is derived on demand).
#[derive(Default)]
pub struct Counters {
    pub requests: u64,
    pub requests_deferred: u64,
    pub deferred_over_limit: u64,
    pub deferred_no_memory: u64,
    pub deferred_not_yet: u64,
    pub tiles_filled: u64,
    pub mip_tails_filled: u64,
    pub bytes_read: u64,
    pub read_errors: u64,
    pub second_chance_restores: u64,
    pub pages_staged: u64,
    pub evictions: u64,
    pub fill_seconds: f64,
    pub launches: u64,
    pub virtual_bytes: u64,
    pub failed_textures: u64,
    pub unowned_requests: u64,
}

/// Everything behind the loader's lock.
pub struct HostState {
    pub space: PageSpace,
    pub resources: Resources,
    pub pool: TilePool,
    /// Visible tile pages and their data.
    pub resident: HashMap<u32, TileBuffer>,
    pub staged: StagedTiles,
    pub pending: Vec<Pending>,
    /// Pages being filled or waiting to be published: not requested again meanwhile.
    pub in_flight: HashSet<u32>,
    /// Requests carried to the next `process_requests` (ordered: coarse pages first).
    pub deferred: BTreeSet<u32>,
    /// Mip-tail bytes that could not be reserved; the next `process_requests` frees room.
    pub wanted_bytes: u64,
    pub launch_num: u32,
    pub counters: Counters,
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
            pending: Vec::new(),
            in_flight: HashSet::new(),
            deferred: BTreeSet::new(),
            wanted_bytes: 0,
            launch_num: 0,
            counters: Counters::default(),
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

    /// The statistics snapshot (bookkeeping bytes supplied by the caller).
    pub fn stats(&self, bookkeeping_bytes: u64) -> Stats {
        let c = &self.counters;
        Stats {
            virtual_bytes: c.virtual_bytes,
            textures: self.resources.len() as u64,
            failed_textures: c.failed_textures,
            requests: c.requests,
            requests_deferred: c.requests_deferred,
            deferred_over_limit: c.deferred_over_limit,
            deferred_no_memory: c.deferred_no_memory,
            deferred_not_yet: c.deferred_not_yet,
            tiles_filled: c.tiles_filled,
            mip_tails_filled: c.mip_tails_filled,
            bytes_read: c.bytes_read,
            read_errors: c.read_errors,
            second_chance_restores: c.second_chance_restores,
            pages_staged: c.pages_staged,
            evictions: c.evictions,
            resident_bytes: self.pool.allocated_bytes(),
            peak_resident_bytes: self.pool.peak_bytes(),
            budget_bytes: self.pool.budget_bytes(),
            bookkeeping_bytes,
            fill_seconds: c.fill_seconds,
            launches: c.launches,
        }
    }
}
