//! The CUDA loader's device side and how it follows the engine.
//!
//! The engine (requests, fills, eviction, second chance, budget) runs unchanged on the
//! host; its [`PageTable`](crate::paging::PageTable) stays the authority on which pages are
//! resident and what their entries are. At each `launch_prepare`, [`DeviceState::sync`]
//! brings the device up to date with it, under the engine's lock:
//!
//! - residence words that changed since the last sync give the pages that became
//!   resident (pushed with `dtex_push_mappings`) and those that stopped being resident
//!   (`dtex_invalidate_pages`); entry pages whose entry changed are pushed again;
//! - a sampler page's host entry (the engine's sampler record) becomes a [`GpuTexture`]
//!   and the device entry is that texture's device sampler; a withdrawn sampler retires
//!   its texture (kept until a fence says no launch can sample it);
//! - a tile page that became resident is mapped onto a tile-pool block and uploaded from
//!   the engine's tile buffer — unless the device still holds that page's tile for the
//!   same texture (second chance: the page was staged, then restored, with no copy);
//! - a device tile whose page is neither resident nor staged on the host any more (the
//!   engine reclaimed its buffer), or whose texture was rebuilt, is unmapped and its block
//!   freed once the fence recorded after the unmap completes.
//!
//! The host keeps a copy of every resident or staged tile (the engine's buffers, within
//! the same budget): host memory in use equals device tile memory in use.

use super::device_context::DeviceContextBuffers;
use super::gpu_texture::GpuTexture;
use super::mapping::MapBatch;
use super::module::PagingKernels;
use super::sparse::SparseRegion;
use super::staging::{FenceQueue, StagingRing};
use super::tile_pool::{CudaTilePool, TileBlock, DEFAULT_ARENA_BYTES};
use super::CudaDevice;
use crate::error::{Error, Result};
use crate::ids::{TextureId, TILE_BYTES};
use crate::paging::PageMapping;
use crate::requests::engine::Engine;
use crate::requests::host_state::HostState;
use cudarc::driver::CudaStream;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The device tile pool's cap for a texture budget of `budget_bytes`: the budget plus two
/// arenas of headroom, for mip tails rounded up to whole tiles and for blocks waiting for
/// their fence.
pub fn device_pool_bytes(budget_bytes: u64) -> u64 {
    budget_bytes.saturating_add(2 * DEFAULT_ARENA_BYTES)
}

/// What the device side did, for [`super::CudaLoader::cuda_stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CudaStats {
    /// Whether textures are sparse arrays (false: dense fallback).
    pub sparse: bool,
    /// Tiles copied to the device.
    pub tiles_uploaded: u64,
    /// Bytes copied to the device (tiles and mip tails).
    pub bytes_uploaded: u64,
    /// Tiles made resident again with no copy (their block was still mapped).
    pub device_restores: u64,
    /// Tile blocks unmapped and freed.
    pub blocks_released: u64,
    /// Textures built on the device.
    pub textures_built: u64,
    /// Textures on the device now.
    pub textures_on_device: u64,
    /// Tile-pool bytes in use (tiles and mip tails).
    pub pool_used_bytes: u64,
    /// Most tile-pool bytes in use at once.
    pub pool_peak_bytes: u64,
    /// Tile-pool bytes allocated from the driver (whole arenas).
    pub pool_capacity_bytes: u64,
    /// Pages pulled as requested, summed over launches.
    pub requests_pulled: u64,
    /// Launches whose requests overflowed the request list (the rest come next launch).
    pub request_overflows: u64,
    /// Pages whose upload failed and is retried at the next launch.
    pub upload_retries: u64,
}

/// One page's tile on the device.
struct DeviceTile {
    /// The pool block it is mapped onto (`None` in a dense array).
    block: Option<TileBlock>,
    /// The texture it belongs to (keeps its array alive while mapped).
    texture: Arc<GpuTexture>,
}

/// A tile to map and upload in this sync.
struct Upload {
    page: u32,
    texture: Arc<GpuTexture>,
    region: Option<(SparseRegion, TileBlock)>,
}

/// Everything the CUDA loader holds on its device.
pub(crate) struct DeviceState {
    /// The device (its primary context).
    pub device: CudaDevice,
    /// The loader's stream: every copy, map and kernel of the loader runs on it.
    pub stream: Arc<CudaStream>,
    /// The paging kernels.
    pub kernels: PagingKernels,
    /// The page-layer buffers.
    pub buffers: DeviceContextBuffers,
    /// Tile memory (sparse mode only).
    pub pool: Option<CudaTilePool>,
    /// Pinned staging for uploads.
    pub staging: StagingRing,
    textures: HashMap<u32, Arc<GpuTexture>>,
    ranges: BTreeMap<u32, u32>,
    tiles: HashMap<u32, DeviceTile>,
    retiring: Vec<Arc<GpuTexture>>,
    released_blocks: FenceQueue<TileBlock>,
    retired_textures: FenceQueue<Arc<GpuTexture>>,
    mirror_residence: Vec<u32>,
    mirror_entries: Vec<u64>,
    /// Counters.
    pub stats: CudaStats,
}

impl DeviceState {
    /// Assemble the state (see [`super::loader::CudaLoader::new`]).
    pub(crate) fn new(
        device: CudaDevice,
        stream: Arc<CudaStream>,
        kernels: PagingKernels,
        buffers: DeviceContextBuffers,
        pool: Option<CudaTilePool>,
        staging: StagingRing,
    ) -> DeviceState {
        let entries = buffers.layout().page_table_entries as usize;
        DeviceState {
            stats: CudaStats {
                sparse: pool.is_some(),
                ..CudaStats::default()
            },
            device,
            stream,
            kernels,
            buffers,
            pool,
            staging,
            textures: HashMap::new(),
            ranges: BTreeMap::new(),
            tiles: HashMap::new(),
            retiring: Vec::new(),
            released_blocks: FenceQueue::new(),
            retired_textures: FenceQueue::new(),
            mirror_residence: Vec::new(),
            mirror_entries: vec![0; entries],
        }
    }

    /// The device texture whose range holds `page`.
    fn texture_of(&self, page: u32) -> Option<&Arc<GpuTexture>> {
        let (_, id) = self.ranges.range(..=page).next_back()?;
        let t = self.textures.get(id)?;
        (page - t.start_page < t.num_pages()).then_some(t)
    }

    /// The device texture of texture `id`, if it is on the device now.
    pub(crate) fn device_texture(&self, id: u32) -> Option<Arc<GpuTexture>> {
        self.textures.get(&id).cloned()
    }

    /// Withdraw texture `id` from the device (unmapped and dropped after a fence).
    fn retire_texture(&mut self, id: u32) {
        if let Some(t) = self.textures.remove(&id) {
            if self.ranges.get(&t.start_page) == Some(&id) {
                self.ranges.remove(&t.start_page);
            }
            self.retiring.push(t);
        }
    }

    /// Build texture `id` from its engine record; returns its device entry.
    fn build_texture(&mut self, host: &HostState, id: u32, host_entry: u64) -> Result<u64> {
        let record = host
            .resources
            .get(TextureId(id))
            .ok_or(Error::UnknownTexture(TextureId(id)))?;
        let (Some(layout), Some(sampler)) = (&record.layout, &record.sampler) else {
            return Err(Error::Internal(format!(
                "texture {id}: a sampler entry without an opened record"
            )));
        };
        if sampler.as_ptr() as u64 != host_entry {
            return Err(Error::Internal(format!(
                "texture {id}: the sampler entry is not the record's sampler"
            )));
        }
        // SAFETY: the record's sampler and tail are live engine allocations (the engine's
        // lock is held by the caller), never written while published.
        let host_sampler = unsafe { &*sampler.as_ptr() };
        // SAFETY: as above.
        let tail: &[u8] = record
            .mip_tail
            .as_ref()
            .map_or(&[], |t| unsafe { &*t.as_ptr() });
        let sparse = self.pool.is_some();
        let ordinal = self.device.info().ordinal;
        let texture = GpuTexture::build(
            &self.stream,
            sparse,
            self.pool.as_mut(),
            &mut self.staging,
            ordinal,
            layout,
            &record.desc,
            host_sampler,
            host_entry,
            tail,
        )?;
        self.stats.textures_built += 1;
        self.stats.bytes_uploaded += layout.mip_tail_bytes;
        let entry = texture.device_entry();
        self.ranges.insert(texture.start_page, id);
        self.textures.insert(id, Arc::new(texture));
        Ok(entry)
    }

    /// A pool block of `tiles` tiles, waiting for released blocks if the pool is full.
    fn allocate(&mut self, tiles: u32) -> Result<TileBlock> {
        let Some(pool) = self.pool.as_mut() else {
            return Err(Error::Internal("no tile pool (dense mode)".into()));
        };
        match pool.allocate(tiles) {
            Ok(b) => Ok(b),
            Err(first) => {
                if !self.wait_for_released_blocks()? {
                    return Err(first);
                }
                match self.pool.as_mut() {
                    Some(pool) => pool.allocate(tiles),
                    None => Err(first),
                }
            }
        }
    }

    /// If blocks wait for their fences, wait for the last fence and give them back to the
    /// pool; returns whether there were any (false: waiting would free nothing).
    fn wait_for_released_blocks(&mut self) -> Result<bool> {
        if self.released_blocks.is_empty() {
            return Ok(false);
        }
        let last = self.staging.timeline().last();
        self.staging.timeline().wait(last)?;
        self.reclaim()?;
        Ok(true)
    }

    /// Free what completed fences release: blocks to the pool, retired textures dropped.
    pub(crate) fn reclaim(&mut self) -> Result<()> {
        let done = self.staging.timeline().poll()?;
        for block in self.released_blocks.release(done) {
            if let Some(pool) = self.pool.as_mut() {
                pool.free(block)?;
            }
        }
        drop(self.retired_textures.release(done));
        if let Some(pool) = self.pool.as_mut() {
            if pool.accounting().capacity_bytes() > pool.max_bytes() {
                pool.shrink()?;
            }
        }
        Ok(())
    }

    /// Bring the device up to date with the engine (see the module comment). The caller
    /// holds the engine's lock (`host`) for the whole call.
    pub(crate) fn sync(&mut self, engine: &Engine, host: &mut HostState) -> Result<()> {
        let layout = engine.layout;
        let end = host.space.end_page();
        let words = (end as usize).div_ceil(32);
        if self.mirror_residence.len() < words {
            self.mirror_residence.resize(words, 0);
        }
        // 1. What changed.
        let (mut invalid, mut newly) = (Vec::new(), Vec::new());
        for w in 0..words {
            let (h, m) = (engine.pages.residence_word(w), self.mirror_residence[w]);
            if h != m {
                bit_pages(m & !h, w, &mut invalid);
                bit_pages(h & !m, w, &mut newly);
            }
        }
        let entry_end = layout.page_table_entries.min(end);
        let mut entry_pushes: Vec<u32> = newly
            .iter()
            .copied()
            .take_while(|&p| p < entry_end)
            .collect();
        for p in 0..entry_end {
            let resident_before = self.mirror_residence[p as usize / 32] >> (p % 32) & 1 == 1;
            if resident_before
                && engine.pages.is_resident(p)
                && engine.pages.entry(p) != self.mirror_entries[p as usize]
            {
                entry_pushes.push(p);
            }
        }
        // 2. Samplers withdrawn or (re)published: the old textures are retired first.
        for &p in invalid.iter().chain(&entry_pushes) {
            if p < layout.max_textures {
                self.retire_texture(p);
            }
        }
        // 3. Release device tiles the engine let go of, and retired textures' tails (before
        //    the builds below, so that their blocks can serve the new textures' tails).
        self.release_tiles(host)?;
        // 4. Entries of every entry page pushed, textures built for published samplers.
        let mut retry = Vec::new();
        let mut mappings = Vec::with_capacity(newly.len() + entry_pushes.len());
        for &p in &entry_pushes {
            let host_entry = engine.pages.entry(p);
            let mut entry = host_entry;
            if p < layout.max_textures && host_entry != 0 {
                let mut built = self.build_texture(host, p, host_entry);
                if matches!(built, Err(Error::BudgetTooSmall { .. }))
                    && self.wait_for_released_blocks()?
                {
                    built = self.build_texture(host, p, host_entry);
                }
                entry = match built {
                    Ok(e) => e,
                    // The pool is full for now (not the texture's fault): the sampler page
                    // stays non-resident on the device and the build is retried next sync.
                    Err(e @ Error::BudgetTooSmall { .. }) => {
                        tracing::warn!(texture = p, "no device memory for a mip tail yet: {e}");
                        invalid.push(p);
                        retry.push(p);
                        continue;
                    }
                    Err(e) => {
                        let msg = format!("creating the texture on the CUDA device: {e}");
                        crate::requests::fill::fail_texture(engine, host, TextureId(p), msg);
                        0
                    }
                };
            }
            self.mirror_entries[p as usize] = host_entry;
            mappings.push(PageMapping {
                page: p,
                lru: engine.pages.lru_age(p) as u32,
                entry,
            });
        }
        // 5. Map and upload the tiles that became resident.
        let mut uploads = Vec::new();
        for &p in newly.iter().filter(|&&p| p >= layout.page_table_entries) {
            let Some(texture) = self.texture_of(p).cloned() else {
                retry.push(p);
                continue;
            };
            let offset = p - texture.start_page;
            let on_device = self
                .tiles
                .get(&p)
                .is_some_and(|t| Arc::ptr_eq(&t.texture, &texture));
            if offset == 0 || on_device {
                self.stats.device_restores += u64::from(on_device);
                mappings.push(tile_mapping(engine, p));
                continue;
            }
            if !host.resident.contains_key(&p) {
                retry.push(p);
                continue;
            }
            let region = match texture.sparse().and_then(|s| s.page_region(offset)) {
                Some(region) => match self.allocate(1) {
                    Ok(block) => Some((region, block)),
                    Err(e) => {
                        tracing::warn!(page = p, "no device tile memory: {e}");
                        retry.push(p);
                        continue;
                    }
                },
                None => None,
            };
            uploads.push(Upload {
                page: p,
                texture,
                region,
            });
        }
        self.upload(host, &uploads)?;
        for u in uploads {
            mappings.push(tile_mapping(engine, u.page));
            let block = u.region.map(|(_, b)| b);
            self.tiles.insert(
                u.page,
                DeviceTile {
                    block,
                    texture: u.texture,
                },
            );
        }
        // 6. The page arrays, then the mirror.
        self.buffers.invalidate(&self.kernels, &invalid)?;
        self.buffers.push_mappings(&self.kernels, &mappings)?;
        for w in 0..words {
            self.mirror_residence[w] = engine.pages.residence_word(w);
        }
        for &p in &retry {
            self.mirror_residence[p as usize / 32] &= !(1 << (p % 32));
        }
        self.stats.upload_retries += retry.len() as u64;
        self.stats.textures_on_device = self.textures.len() as u64;
        if let Some(pool) = &self.pool {
            let used = pool.accounting().used_tiles() * TILE_BYTES as u64;
            self.stats.pool_used_bytes = used;
            self.stats.pool_peak_bytes = self.stats.pool_peak_bytes.max(used);
            self.stats.pool_capacity_bytes = pool.accounting().capacity_bytes();
        }
        self.reclaim()
    }

    /// Unmap the tiles whose page is neither resident nor staged on the host any more, or
    /// whose texture was rebuilt, and the tails of retired textures; their blocks and
    /// textures are freed after the fence recorded here.
    fn release_tiles(&mut self, host: &HostState) -> Result<()> {
        let gone: Vec<u32> = self
            .tiles
            .iter()
            .filter(|(&page, tile)| {
                let kept = host.resident.contains_key(&page) || host.staged.contains(page);
                let current = self
                    .texture_of(page)
                    .is_some_and(|t| Arc::ptr_eq(t, &tile.texture));
                !(kept && current)
            })
            .map(|(&page, _)| page)
            .collect();
        let released: Vec<(u32, DeviceTile)> = gone
            .into_iter()
            .filter_map(|p| self.tiles.remove(&p).map(|t| (p, t)))
            .collect();
        let retiring = std::mem::take(&mut self.retiring);
        if released.is_empty() && retiring.is_empty() {
            return Ok(());
        }
        let mut blocks = Vec::new();
        {
            let mut batch = MapBatch::new(self.device.info().ordinal)?;
            for (page, tile) in &released {
                let (Some(block), Some(sparse)) = (tile.block, tile.texture.sparse()) else {
                    continue;
                };
                if let Some(region) = sparse.page_region(page - tile.texture.start_page) {
                    batch.unmap(sparse, region)?;
                }
                blocks.push(block);
            }
            for t in &retiring {
                if let (Some(block), Some(sparse)) = (t.tail_block, t.sparse()) {
                    if let Some(region) = sparse.page_region(0) {
                        batch.unmap(sparse, region)?;
                    }
                    blocks.push(block);
                }
            }
            batch.submit(&self.stream)?;
        }
        let fence = self.staging.timeline().record(&self.stream)?;
        self.stats.blocks_released += blocks.len() as u64;
        for b in blocks {
            self.released_blocks.push(fence, b)?;
        }
        // The tiles' texture references go with them now; the textures (arrays, objects,
        // samplers) wait for the fence.
        drop(released);
        for t in retiring {
            self.retired_textures.push(fence, t)?;
        }
        Ok(())
    }

    /// Map the sparse tiles of `uploads` (one batch), then copy each tile from the
    /// engine's buffer.
    fn upload(&mut self, host: &HostState, uploads: &[Upload]) -> Result<()> {
        if uploads.is_empty() {
            return Ok(());
        }
        {
            let pool = self.pool.as_ref();
            let mut batch = MapBatch::new(self.device.info().ordinal)?;
            for u in uploads {
                if let (Some((region, block)), Some(sparse), Some(pool)) =
                    (&u.region, u.texture.sparse(), pool)
                {
                    batch.map(sparse, *region, pool.memory(block)?)?;
                }
            }
            batch.submit(&self.stream)?;
        }
        for u in uploads {
            let buffer = host.resident.get(&u.page).ok_or_else(|| {
                Error::Internal(format!("page {}: no tile buffer to upload", u.page))
            })?;
            super::dense::upload_page(
                &mut self.staging,
                &self.stream,
                u.texture.storage.array(),
                &u.texture.layout,
                u.page - u.texture.start_page,
                buffer.as_slice(),
            )?;
            self.stats.tiles_uploaded += 1;
            self.stats.bytes_uploaded += TILE_BYTES as u64;
        }
        Ok(())
    }
}

impl Drop for DeviceState {
    fn drop(&mut self) {
        // Nothing may be freed while the stream still uses it.
        if let Err(e) = super::ops::safe("cuStreamSynchronize", || self.stream.synchronize()) {
            tracing::warn!("synchronizing the CUDA loader's stream: {e}");
        }
    }
}

/// The mapping of a tile page as the engine published it (its LRU age).
fn tile_mapping(engine: &Engine, page: u32) -> PageMapping {
    PageMapping {
        page,
        lru: engine.pages.lru_age(page) as u32,
        entry: 0,
    }
}

/// The pages of the set bits of residence word `word`.
fn bit_pages(mut bits: u32, word: usize, out: &mut Vec<u32>) {
    while bits != 0 {
        let b = bits.trailing_zeros();
        bits &= bits - 1;
        out.push(word as u32 * 32 + b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_bits_become_pages_in_order() {
        let mut v = Vec::new();
        bit_pages(0b1001_0001, 2, &mut v);
        assert_eq!(v, vec![64, 68, 71]);
        bit_pages(1 << 31, 0, &mut v);
        assert_eq!(v.last(), Some(&31));
    }

    #[test]
    fn the_device_pool_has_headroom_over_the_budget() {
        assert_eq!(device_pool_bytes(1 << 30), (1 << 30) + (64 << 20));
        assert_eq!(device_pool_bytes(u64::MAX), u64::MAX);
    }
}
