//! The loader's host-side state, guarded by one mutex: resources, page space, the tile
//! slots ([`Residency`]), the publications waiting for the next launch, in-flight markers
//! and deferred requests. Samplers never take this lock.

use crate::backend::Withdrawal;
use crate::error::Error;
use crate::ids::{PageId, TextureId};
use crate::memory::Residency;
use crate::paging::{encode_base_color, PageLayout, PageSpace, PullResult};
use crate::resources::{Resources, TextureState};
use crate::stats::Stats;
use crate::textures::DEFAULT_FALLBACK_COLOR;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Something that becomes visible at the next publication (a `launch_prepare`, or at once
/// for a blocking fill).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    /// A filled or restored tile (its slot, and data, are in [`Residency`]).
    Tile(PageId),
    /// An opened texture: its sampler record and mip tail (in its record) and base colour.
    Texture {
        /// The texture.
        texture: TextureId,
        /// The generation the record was opened at (withdrawn since: nothing to publish).
        generation: u32,
        /// The base-colour entry.
        base_color: u64,
    },
    /// A page-table entry (never evicted): a resource page, a failed or unknown texture's
    /// null sampler and fallback colour.
    Entry {
        /// The page.
        page: PageId,
        /// The entry.
        entry: u64,
    },
}

/// Why a request was carried to the next launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deferral {
    /// Over `max_requests_per_launch`.
    OverLimit,
    /// No tile memory could be had (nothing stale to evict, or still visible to a launch).
    NoMemory,
    /// The source answered "not yet".
    NotYet,
}

/// Everything behind the loader's lock.
pub(crate) struct HostState {
    pub space: PageSpace,
    pub resources: Resources,
    /// Every tile slot: filling, publishing, resident, staged, retired.
    pub residency: Residency,
    /// What the next publication makes visible.
    pub pending: Vec<Pending>,
    /// Entry pages and textures withdrawn since the last publication (tile withdrawals
    /// come from [`Residency::take_events`]).
    pub withdrawn: Vec<Withdrawal>,
    /// Pages being filled or waiting to be published: not requested again meanwhile.
    pub in_flight: HashSet<PageId>,
    /// Requests carried to the next `process_requests` (ordered: coarse pages first).
    pub deferred: BTreeSet<PageId>,
    /// Mip-tail bytes that could not be reserved; the next `process_requests` frees room.
    pub wanted_bytes: u64,
    /// Bytes the Ptex decode cache still wants from the budget (it was made when the
    /// budget had less room): taken as room is made (`Engine::grow_ptex_decode_cache`).
    pub ptex_decode_short: u64,
    pub launch_num: u32,
    /// Tile fills handed to the fill threads and not yet taken up or ended.
    pub queued_fills: usize,
    /// Interactive mode: the last launch that asked for each page whose tile fill is queued
    /// and not yet taken up (empty in final mode). A queued fill is dropped only when no
    /// launch of the last `max_fill_age` asked for its page (the view moved on), never one
    /// a frame still wants, however long the queue takes.
    pub queued_wanted: HashMap<PageId, u32>,
    /// Queued fills of launches up to this one are dropped when taken up
    /// (`Engine::cancel_queued_fills`); 0: none.
    pub cancel_through: u32,
    /// Running totals kept by the pipeline; [`HostState::stats`] adds the rest.
    pub counters: Stats,
    /// Reused pull buffers.
    pub pull: PullResult,
    /// Open textures holding their own tiles, by content key (duplicate sharing).
    pub duplicates: super::duplicates::DuplicateIndex,
}

impl HostState {
    pub fn new(space: PageSpace, budget_bytes: u64) -> Self {
        HostState {
            space,
            resources: Resources::default(),
            residency: Residency::new(budget_bytes),
            pending: Vec::new(),
            withdrawn: Vec::new(),
            in_flight: HashSet::new(),
            deferred: BTreeSet::new(),
            wanted_bytes: 0,
            ptex_decode_short: 0,
            launch_num: 0,
            queued_fills: 0,
            queued_wanted: HashMap::new(),
            cancel_through: 0,
            counters: Stats::default(),
            pull: PullResult::default(),
            duplicates: Default::default(),
        }
    }

    /// Carry a request to the next launch, counting why.
    pub fn defer(&mut self, page: PageId, reason: Deferral) {
        if self.deferred.insert(page) {
            self.counters.requests_deferred += 1;
            match reason {
                Deferral::OverLimit => self.counters.deferred_over_limit += 1,
                Deferral::NoMemory => self.counters.deferred_no_memory += 1,
                Deferral::NotYet => self.counters.deferred_not_yet += 1,
            }
        }
    }

    /// Queue a null sampler and `color` as the base colour of `texture`, so every later
    /// lookup of it resolves to `color`.
    pub fn publish_fallback(&mut self, layout: &PageLayout, texture: TextureId, color: [f32; 4]) {
        let sampler = layout.sampler_page(texture);
        let base = layout.base_color_page(texture);
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

    /// A sampler lookup of an id no texture has: queue the default fallback colour so the
    /// lookup resolves (and stop it from being requested every launch).
    pub fn publish_unknown_texture(&mut self, layout: &PageLayout, texture: TextureId) {
        tracing::warn!(
            texture = texture.0,
            "lookup of an unknown texture id: returning the fallback colour"
        );
        self.publish_fallback(layout, texture, DEFAULT_FALLBACK_COLOR);
    }

    /// `texture`'s sampler and base-colour pages are no longer being filled; request the
    /// sampler again next launch.
    pub fn defer_init(&mut self, layout: &PageLayout, texture: TextureId, reason: Deferral) {
        self.in_flight.remove(&layout.sampler_page(texture));
        self.in_flight.remove(&layout.base_color_page(texture));
        self.defer(layout.sampler_page(texture), reason);
    }

    /// Whether `texture` is still at `generation` (its contents were not dropped since).
    pub fn is_current(&self, texture: TextureId, generation: u32) -> bool {
        self.resources
            .get(texture)
            .is_some_and(|r| r.generation == generation)
    }

    /// Whether `texture` is waiting to be opened (not open, failed, a hole or unloaded).
    pub fn is_unopened(&self, texture: TextureId) -> bool {
        self.resources
            .get(texture)
            .is_some_and(|r| matches!(r.state, TextureState::Unopened))
    }

    /// Mark a texture failed: log why, and queue a null sampler and its fallback colour so
    /// every later lookup resolves to it. A texture that failed already stays as it was.
    pub fn fail_texture(&mut self, layout: &PageLayout, texture: TextureId, message: String) {
        let Some(record) = self.resources.get_mut(texture) else {
            return;
        };
        if matches!(record.state, TextureState::Failed(_)) {
            return;
        }
        let error = Error::Source {
            texture,
            source_name: record.source.name(),
            message,
        };
        tracing::error!(texture = texture.0, "{error}");
        let fallback = record.desc.fallback_color;
        record.state = TextureState::Failed(error);
        // No longer a texture others may share tiles with (`duplicates`).
        if let Some(key) = record.duplicate_key.take() {
            self.duplicates.remove(&key, texture);
        }
        if record.tiles_of.take().is_some() {
            self.counters.textures_sharing_tiles -= 1;
        }
        self.counters.failed_textures += 1;
        self.publish_fallback(layout, texture, fallback);
    }

    /// The statistics snapshot (bookkeeping bytes supplied by the caller).
    pub fn stats(&self, bookkeeping_bytes: u64) -> Stats {
        let r = &self.residency;
        let counts = r.counts();
        Stats {
            textures: self.resources.len() as u64,
            resident_bytes: r.allocated_bytes(),
            peak_resident_bytes: r.peak_bytes(),
            budget_bytes: r.budget_bytes(),
            host_tile_bytes: r.host_bytes(),
            peak_host_tile_bytes: r.peak_host_bytes(),
            bookkeeping_bytes,
            second_chance_restores: counts.second_chance_restores,
            pages_staged: counts.pages_staged,
            evictions: counts.evictions,
            clock_sweeps: counts.clock_sweeps,
            tiles_coalesced: counts.tiles_coalesced,
            coalesced_pages: r.coalesced_pages(),
            shared_constant_tiles: r.shared_tiles(),
            whole_decode_bytes: r.decode_bytes(),
            ..self.counters.clone()
        }
    }
}
