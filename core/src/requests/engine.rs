//! `Engine`: the backend-independent loader — textures, UDIM grids, user resources, their
//! lifecycle, the budget, statistics, and the multi-pass cycle's two halves (publish and
//! begin a launch; process its requests). A backend builds its loader on one
//! ([`crate::Loader`] for the CPU; `demandtex_cuda::CudaLoader` for a GPU) and learns what
//! changed through the [`Backend`] trait it hands to [`Engine::new`].
//!
//! The engine's state: the host page table (the authority on what is resident), the epoch
//! tracker, the host state behind one mutex (resources, page space, tile slots, pending
//! publications), and the fill thread pool. The methods are spread over the modules that
//! implement them: `publish` (launch start), `process` (requests), `lifecycle`
//! (invalidate, replace, unload), `resource` (user resources), [`crate::udim`].

use super::host_state::HostState;
use super::workers::FillPool;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};
use crate::memory::Epochs;
use crate::options::LoaderOptions;
use crate::paging::bits;
use crate::paging::{PageKind, PageLayout, PageSpace, PageTable, RequestGate};
use crate::resources::TextureState;
use crate::sources::ptex::{decode_cache_bytes, DecodeCache};
use crate::sources::ImageSource;
use crate::stats::Stats;
use crate::sync::AtomicU32;
use crate::textures::{TextureDesc, TextureLayout};
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// The backend-independent part of a loader (see the module docs). `Send + Sync`; shared
/// as `Arc<Engine>` by its loader, launches and fill threads.
pub struct Engine {
    pub(crate) options: LoaderOptions,
    pub(crate) layout: PageLayout,
    pub(crate) pages: PageTable,
    pub(crate) epochs: Epochs,
    pub(crate) host: Mutex<HostState>,
    /// Signalled (with `host`) when a blocking fill finishes, for the lookups waiting on it.
    pub(crate) fill_done: Condvar,
    /// Blocking lookups fill their misses under a shared hold; one that keeps losing its
    /// pages to other lookups' evictions takes it alone for its last rounds (`cache::lookup`).
    pub(crate) blocking_turns: RwLock<()>,
    /// Joined when the engine drops (unless it drops on one of them).
    pub(crate) workers: FillPool,
    pub(crate) backend: Arc<dyn Backend>,
    /// One bit per entry page: a resource page whose callback failed (never asked again).
    resource_failed: Box<[AtomicU32]>,
    /// Request rejection's counters and next threshold (see [`crate::paging::rejection`]).
    pub(crate) gate: RequestGate,
    /// Serialises the in-place reads of one file tile (see `file_tiles`).
    pub(crate) file_tile_locks: super::file_tiles::FileTileLocks,
    /// File hashes of duplicate-texture sharing (see `duplicates`).
    pub(crate) digests: crate::sources::identity::DigestCache,
    /// The engine itself, for work it starts on its own (interactive mode opens textures
    /// at creation).
    pub(crate) me: Weak<Engine>,
    /// The decode cache of its Ptex textures, made (and its bytes taken from the budget)
    /// with the first ([`Engine::ptex_decode_cache`]).
    ptex_decode_cache: OnceLock<Arc<DecodeCache>>,
    /// Bytes of whole decodes released since the last [`settle_decodes`](Self::settle_decodes).
    pub(crate) decode_bytes_released: Arc<AtomicU64>,
    /// Whole decodes spilled to files (see `spills`).
    pub(crate) spills: Arc<super::spills::Spills>,
}

/// An engine's Ptex decode cache takes at most this share of its budget (1 / N).
pub(crate) const PTEX_DECODE_CACHE_BUDGET_SHARE: u64 = 8;

/// Check a texture description for values the samplers cannot honour.
pub(crate) fn check_desc(desc: &TextureDesc) -> Result<()> {
    if !(1..=crate::textures::MAX_ANISOTROPY).contains(&desc.max_anisotropy) {
        return Err(Error::InvalidArgument(format!(
            "max_anisotropy {} (1..={})",
            desc.max_anisotropy,
            crate::textures::MAX_ANISOTROPY
        )));
    }
    Ok(())
}

impl Engine {
    /// An engine with `options` that publishes through `backend`.
    ///
    /// Errors: invalid options ([`LoaderOptions::validate`]), or fill threads that cannot
    /// be started.
    pub fn new(options: LoaderOptions, backend: Arc<dyn Backend>) -> Result<Arc<Engine>> {
        options.validate()?;
        let layout = PageLayout::new(
            options.max_textures,
            options.page_table_entries,
            options.num_pages,
        )?;
        let workers = FillPool::new(
            options.fill_thread_count(),
            options.fills_in_background(),
            options.fill_cpu_cores,
        )?;
        let budget = options.max_texture_memory;
        Ok(Arc::new_cyclic(|me| Engine {
            me: me.clone(),
            layout,
            pages: PageTable::new(layout),
            epochs: Epochs::new(),
            host: Mutex::new(HostState::new(PageSpace::new(layout), budget)),
            fill_done: Condvar::new(),
            blocking_turns: RwLock::new(()),
            workers,
            backend,
            resource_failed: bits::zeroed_words(bits::words_for_bits(
                layout.page_table_entries as u64,
            )),
            gate: RequestGate::new(),
            file_tile_locks: super::file_tiles::FileTileLocks::new(),
            digests: Default::default(),
            ptex_decode_cache: OnceLock::new(),
            decode_bytes_released: Arc::default(),
            spills: Arc::new(super::spills::Spills::new(&options)),
            options,
        }))
    }

    /// The cache of decoded Ptex face data (the sources of reductions) this engine's Ptex
    /// textures share. The first call makes it, of the process-wide setting
    /// ([`decode_cache_bytes`], 64 MiB by default) but at most an eighth of the budget
    /// (`PTEX_DECODE_CACHE_BUDGET_SHARE`), and takes its bytes from the budget for the
    /// engine's life, non-evictable like a mip tail, so that Ptex lookups use no memory
    /// beyond it. It starts with what the budget has free then; the rest is taken as room
    /// is made: a multi-pass engine evicts stale tiles for it as for a mip tail at its
    /// next `process_requests`, a blocking one evicts the least recently used tiles at its
    /// next fill (`Engine::grow_ptex_decode_cache`). Until then
    /// reductions read their sources again.
    pub fn ptex_decode_cache(&self) -> Arc<DecodeCache> {
        self.ptex_decode_cache
            .get_or_init(|| {
                let mut host = self.host.lock();
                let share = host.residency.budget_bytes() / PTEX_DECODE_CACHE_BUDGET_SHARE;
                let want = (decode_cache_bytes() as u64).min(share);
                host.ptex_decode_short = want;
                let cache = DecodeCache::with_capacity(0);
                Self::take_ptex_decode_room(&mut host, &cache);
                Arc::new(cache)
            })
            .clone()
    }

    /// Give the Ptex decode cache what it still wants of the budget ([`ptex_decode_cache`](
    /// Self::ptex_decode_cache)), as far as the budget has room now. Called with the host
    /// lock after room was made.
    pub(crate) fn grow_ptex_decode_cache(&self, host: &mut HostState) {
        if host.ptex_decode_short == 0 {
            return;
        }
        if let Some(cache) = self.ptex_decode_cache.get() {
            Self::take_ptex_decode_room(host, cache);
        }
    }

    fn take_ptex_decode_room(host: &mut HostState, cache: &DecodeCache) {
        let take = host.ptex_decode_short.min(host.residency.available_bytes());
        if take > 0 && host.residency.reserve_tail(take) {
            // Published at once: held for good, as a published mip tail.
            host.residency.publish_tail(take);
            host.ptex_decode_short -= take;
            cache.grow(take as usize);
        }
    }

    /// The options the engine was created with (the budget may have changed since; see
    /// [`Stats::budget_bytes`]).
    pub fn options(&self) -> &LoaderOptions {
        &self.options
    }

    /// How the page space is divided (samplers, base colours, entries, tiles).
    pub fn page_layout(&self) -> PageLayout {
        self.layout
    }

    /// The host page table: residence, reference and LRU bits and entries, as the engine
    /// publishes them (what CPU samplers read).
    pub fn page_table(&self) -> &PageTable {
        &self.pages
    }

    /// The end of the page space handed out so far: pulls and reference clears need only
    /// scan `[0, page_end)`.
    pub fn page_end(&self) -> u32 {
        self.host.lock().space.end_page()
    }

    /// Register a texture. In final mode nothing is opened or read until a launch samples
    /// it; in interactive mode a fill thread opens it at once (mip tail and base colour),
    /// so it has something to show from the first frame that follows.
    ///
    /// Errors: an invalid `desc`, or `max_textures` textures exist already.
    pub fn create_texture(
        &self,
        source: Arc<dyn ImageSource>,
        desc: TextureDesc,
    ) -> Result<TextureId> {
        check_desc(&desc)?;
        let mut host = self.host.lock();
        if host.resources.len() >= self.layout.max_textures as usize {
            return Err(Error::InvalidArgument(format!(
                "too many textures (max_textures = {})",
                self.layout.max_textures
            )));
        }
        let id = host.resources.add_texture(source, desc);
        self.forget_stale_mappings(&mut host, id, 1);
        if self.options.mode == crate::options::StreamingMode::Interactive {
            // Always something to show: the base colour and mip tail are read now, not
            // when the texture is first sampled.
            self.open_soon(&mut host, id);
        }
        Ok(id)
    }

    /// Textures `[first, first + count)` are being created. A lookup of one of those ids
    /// before it existed published (or queued) the unknown-texture fallback for its
    /// sampler and base-colour pages: drop the queued mappings and make the pages
    /// non-resident, so the new texture is opened when next sampled.
    pub(crate) fn forget_stale_mappings(&self, host: &mut HostState, first: TextureId, count: u32) {
        let layout = &self.layout;
        let ours = |page: PageId| match layout.kind(page) {
            PageKind::Sampler(t) | PageKind::BaseColor(t) => {
                t.0 >= first.0 && t.0 - first.0 < count
            }
            _ => false,
        };
        host.pending.retain(
            |p| !matches!(p, super::host_state::Pending::Entry { page, .. } if ours(*page)),
        );
        for i in 0..count {
            let t = TextureId(first.0 + i);
            let entry_pages = [layout.sampler_page(t), layout.base_color_page(t)];
            for page in entry_pages {
                host.in_flight.remove(&page);
            }
            self.withdraw_entries(host, &entry_pages);
        }
    }

    /// Mark a resource page failed: its requests are ignored from now on.
    pub(crate) fn mark_resource_failed(&self, page: PageId) {
        if page.0 < self.layout.page_table_entries {
            bits::set_bit_if_clear(&self.resource_failed, page.0);
        }
    }

    /// Whether a user resource page's callback failed (lock-free): such a page is never
    /// requested again.
    #[inline]
    pub fn is_resource_failed(&self, page: PageId) -> bool {
        page.0 < self.layout.page_table_entries && bits::test_bit(&self.resource_failed, page.0)
    }

    /// Whether constant tiles share one slot per value (the option is on and the backend
    /// can publish one tile for many pages).
    pub(crate) fn coalesces_constant_tiles(&self) -> bool {
        self.options.coalesce_constant_tiles && self.backend.shares_tiles()
    }

    /// Take the bytes of whole decodes released since the last call off the budget, and
    /// note the decodes spilled since: their textures' pages are read as tiles from then
    /// on (no decode to charge).
    pub(crate) fn settle_decodes(&self, host: &mut HostState) {
        let bytes = self.decode_bytes_released.swap(0, Ordering::Relaxed);
        if bytes > 0 {
            host.residency.release_decode(bytes);
        }
        for s in self.spills.take_done() {
            host.counters.decodes_spilled += 1;
            if !host.is_current(s.texture, s.generation) {
                continue;
            }
            if let Some(layout) = host
                .resources
                .get_mut(s.texture)
                .and_then(|r| r.layout.as_mut())
            {
                layout.whole_decode = None;
            }
        }
    }

    /// Where to spill decodes, if spilling is on.
    pub(crate) fn spills_enabled(&self) -> Option<Arc<super::spills::Spills>> {
        self.spills.enabled().then(|| self.spills.clone())
    }

    /// Count a whole decode of `texture`'s source (`Stats::whole_decodes`): where to spill
    /// it when released, if it is the texture's second or later (see `spills`).
    pub(crate) fn count_decode(
        &self,
        host: &mut HostState,
        texture: TextureId,
    ) -> Option<Arc<super::spills::Spills>> {
        host.counters.whole_decodes += 1;
        let record = host.resources.get_mut(texture)?;
        record.whole_decodes = record.whole_decodes.saturating_add(1);
        if record.whole_decodes >= 2 {
            self.spills_enabled()
        } else {
            None
        }
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> Stats {
        let mut host = self.host.lock();
        self.settle_decodes(&mut host);
        Stats {
            requests_rejected: self.gate.rejected(),
            duplicate_bytes_hashed: self.digests.bytes_hashed(),
            spilled_bytes: self.spills.held_bytes(),
            ..host.stats(self.pages.bookkeeping_bytes() + self.resource_failed.len() as u64 * 4)
        }
    }

    /// Request rejection's state: its counters and the threshold the next launch uses.
    pub fn request_gate(&self) -> &RequestGate {
        &self.gate
    }

    /// Textures created (`Stats::textures`, without a statistics snapshot): ids are handed
    /// out in order from 0, so an id below it names a texture.
    pub fn texture_count(&self) -> u64 {
        self.host.lock().resources.len() as u64
    }

    /// Why a texture failed, if it did; [`Error::Unloaded`] once it was unloaded.
    pub fn texture_error(&self, texture: TextureId) -> Option<Error> {
        let host = self.host.lock();
        match &host.resources.get(texture)?.state {
            TextureState::Failed(e) => Some(e.clone()),
            TextureState::Unloaded => Some(Error::Unloaded(texture)),
            _ => None,
        }
    }

    /// The pages of an opened texture's tile range: its first page (the mip-tail page; the
    /// level-`l` tile `(x, y)` is page `first + layout.tile_page_offset(l, x, y)`) and how many
    /// the range has. `None` before the texture was opened. A texture sharing another's
    /// tiles (`LoaderOptions::share_duplicate_textures`) gives that texture's range.
    pub fn texture_pages(&self, texture: TextureId) -> Option<(PageId, u32)> {
        let host = self.host.lock();
        let record = host.resources.get(texture)?;
        record.layout.as_ref()?;
        let owner = match record.tiles_of {
            Some(owner) => host.resources.get(owner)?,
            None => record,
        };
        Some((PageId(owner.start_page?), owner.range_pages))
    }

    /// The texture whose tiles `texture` samples because their files hold the same texels
    /// (`LoaderOptions::share_duplicate_textures`), while both are open.
    pub fn shares_tiles_of(&self, texture: TextureId) -> Option<TextureId> {
        self.host.lock().resources.get(texture)?.tiles_of
    }

    /// A texture's tile layout, once it has been opened.
    pub fn texture_layout(&self, texture: TextureId) -> Option<TextureLayout> {
        let host = self.host.lock();
        host.resources.get(texture)?.layout.clone()
    }

    /// Change the texture memory budget. Shrinking evicts the oldest tiles; memory that a
    /// live launch or a lookup in progress may still use is freed when they finish.
    ///
    /// Errors: [`Error::BudgetTooSmall`] if the budget cannot hold the non-evictable mip
    /// tails.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        let mut host = self.host.lock();
        // Whole decodes charged now are released when their fills end.
        let needed = host.residency.non_evictable_bytes() - host.residency.decode_bytes();
        if bytes < needed {
            return Err(Error::BudgetTooSmall {
                budget_bytes: bytes,
                needed_bytes: needed,
            });
        }
        host.residency.set_budget(&self.pages, &self.epochs, bytes);
        Ok(())
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}
