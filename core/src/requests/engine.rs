//! `Engine`: the state one loader shares between its API, its launches and its fill
//! workers — the page table and tile directory that samplers read without locks, the epoch
//! tracker, the host state behind one mutex, and the fill thread pool.

use super::host_state::{HostState, Pending, Retired};
use super::workers::FillPool;
use crate::backend::cpu::TileDirectory;
use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};
use crate::memory::Epochs;
use crate::options::LoaderOptions;
use crate::paging::bits;
use crate::paging::{PageKind, PageLayout, PageMapping, PageSpace, PageTable, NON_EVICTABLE};
use crate::sources::ImageSource;
use crate::stats::Stats;
use crate::textures::TextureDesc;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// Shared loader internals.
pub(crate) struct Engine {
    pub options: LoaderOptions,
    pub layout: PageLayout,
    pub pages: PageTable,
    pub tiles: TileDirectory,
    pub epochs: Epochs,
    pub host: Mutex<HostState>,
    /// Signalled (with `host`) when a blocking fill finishes, for the lookups waiting on it.
    pub fill_done: Condvar,
    /// Joined when the engine drops (unless it drops on one of them).
    pub workers: FillPool,
    /// One bit per entry page: a resource page whose callback failed (never asked again).
    resource_failed: Box<[AtomicU32]>,
}

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
    pub fn new(options: LoaderOptions) -> Result<Arc<Engine>> {
        options.validate()?;
        let layout = PageLayout::new(
            options.max_textures,
            options.page_table_entries,
            options.num_pages,
        )?;
        let threads = match options.fill_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let workers = FillPool::new(threads)?;
        let budget = options.max_texture_memory;
        Ok(Arc::new(Engine {
            layout,
            pages: PageTable::new(layout),
            tiles: TileDirectory::new(layout.num_pages),
            epochs: Epochs::new(),
            host: Mutex::new(HostState::new(PageSpace::new(layout), budget)),
            fill_done: Condvar::new(),
            workers,
            resource_failed: bits::zeroed_words(bits::words_for_bits(
                layout.page_table_entries as u64,
            )),
            options,
        }))
    }

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
        Ok(id)
    }

    /// Textures `[first, first + count)` are being created. A lookup of one of those ids
    /// before it existed published (or queued) the unknown-texture fallback for its
    /// sampler and base-colour pages: drop the queued mappings and make the pages
    /// non-resident, so the new texture is opened when next sampled.
    pub fn forget_stale_mappings(&self, host: &mut HostState, first: TextureId, count: u32) {
        let layout = &self.layout;
        let ours = |page: u32| match layout.kind(PageId(page)) {
            PageKind::Sampler(t) | PageKind::BaseColor(t) => {
                t.0 >= first.0 && t.0 - first.0 < count
            }
            _ => false,
        };
        host.pending
            .retain(|p| !matches!(p, Pending::Entry { page, .. } if ours(*page)));
        for i in 0..count {
            let t = TextureId(first.0 + i);
            for page in [layout.sampler_page(t), layout.base_color_page(t)] {
                host.in_flight.remove(&page.0);
                self.pages.invalidate(page.0);
            }
        }
    }

    /// Publish pending mappings, clear reference bits, advance the launch counter and pin
    /// the epoch. Returns `(launch_num, epoch)`.
    pub fn launch_prepare(&self) -> (u32, u64) {
        let mut host = self.host.lock();
        self.publish_pending(&mut host);
        super::lifecycle::reclaim_retired(self, &mut host);
        self.pages.clear_references(host.space.end_page());
        host.launch_num = host.launch_num.wrapping_add(1);
        host.counters.launches += 1;
        let launch_num = host.launch_num;
        let epoch = self.epochs.pin();
        (launch_num, epoch)
    }

    /// Make the finished fills visible: tile pointers and entries first, residence bits
    /// last (release), so a sampler that sees a bit sees the data. Returns how many
    /// mappings were published. (Launches publish at `launch_prepare`; the blocking cache
    /// publishes as soon as its fill is done.)
    pub fn publish_pending(&self, host: &mut HostState) -> usize {
        let pending = std::mem::take(&mut host.pending);
        let count = pending.len();
        for p in pending {
            match p {
                Pending::Tile { page, buffer } => {
                    self.tiles.set(page, buffer.as_ptr());
                    self.pages.push_mapping(PageMapping {
                        page,
                        lru: 0,
                        entry: 0,
                    });
                    if let Some(old) = host.resident.insert(page, buffer) {
                        // Two fills of one page: never expected (in-flight markers prevent
                        // it), but launches may be reading the first buffer: retire it.
                        tracing::warn!(page, "a tile was published twice");
                        let stamp = self.epochs.retire_stamp();
                        host.retired
                            .retire(stamp, Retired::Tile { page, buffer: old });
                    }
                    host.in_flight.remove(&page);
                }
                Pending::Entry { page, entry } => {
                    self.pages.push_mapping(PageMapping {
                        page,
                        lru: NON_EVICTABLE as u32,
                        entry,
                    });
                    host.in_flight.remove(&page);
                }
                Pending::Resident { page } => {
                    self.pages.push_mapping(PageMapping {
                        page,
                        lru: NON_EVICTABLE as u32,
                        entry: 0,
                    });
                }
            }
        }
        count
    }

    /// Mark a resource page failed: its requests are ignored from now on.
    pub fn mark_resource_failed(&self, page: u32) {
        if page < self.layout.page_table_entries {
            bits::set_bit_if_clear(&self.resource_failed, page);
        }
    }

    /// Whether a resource page's callback failed (lock-free).
    #[inline]
    pub fn is_resource_failed(&self, page: u32) -> bool {
        page < self.layout.page_table_entries && bits::test_bit(&self.resource_failed, page)
    }

    pub fn stats(&self) -> Stats {
        let host = self.host.lock();
        host.stats(
            self.pages.bookkeeping_bytes()
                + self.tiles.bookkeeping_bytes()
                + self.resource_failed.len() as u64 * 4,
        )
    }

    /// Change the budget. Memory no launch or fill is using is freed at once (staging the
    /// oldest resident tiles if needed); the rest as soon as those launches end.
    pub fn set_max_texture_memory(&self, bytes: u64) -> Result<()> {
        let mut host = self.host.lock();
        let needed = host.pool.non_evictable_bytes();
        if bytes < needed {
            return Err(Error::BudgetTooSmall {
                budget_bytes: bytes,
                needed_bytes: needed,
            });
        }
        host.pool.set_budget(bytes);
        // Staged tiles go first; resident ones are staged (oldest first) only if that is
        // not enough.
        super::process::free_reclaimable(self, &mut host);
        let excess_tiles = host.pool.excess_bytes().div_ceil(crate::TILE_BYTES as u64) as usize;
        if excess_tiles > 0 {
            let mut by_age: Vec<(u8, u32)> = host
                .resident
                .keys()
                .map(|&p| (self.pages.lru_age(p), p))
                .collect();
            by_age.sort_unstable_by(|a, b| b.cmp(a));
            let victims: Vec<u32> = by_age.iter().take(excess_tiles).map(|&(_, p)| p).collect();
            super::process::stage_pages(self, &mut host, &victims);
            super::process::free_reclaimable(self, &mut host);
        }
        Ok(())
    }
}
