//! `CudaBackend`: the [`Backend`] that mirrors what the engine publishes onto one CUDA
//! device. The engine (requests, fills, eviction, second chance, budget) runs unchanged on
//! the host and tells this backend what changed; nothing is diffed, so the host cost of a
//! launch is the number of changes.
//!
//! - A published tile is mapped onto a tile-pool block (sparse arrays) and its texels are
//!   copied into a pinned staging slot at once — the engine then frees its host copy
//!   ([`HostCopy::Release`]): host memory holds only tiles being filled or waiting for
//!   publication, whatever the device budget. The async copy to the array follows the map
//!   in stream order at the next flush.
//! - A tile whose texels all hold one value is mapped onto the one block of that value
//!   (`shared_blocks`), uploaded once; the block is freed with the last page using it.
//! - A staged tile keeps its block: its residence bit is cleared on the device, and a
//!   restore (second chance) sets it again with no copy.
//! - A released tile (evicted, or dropped with its texture) is unmapped; its block goes back
//!   to the pool once a fence recorded after the unmap completes.
//! - A published texture becomes a [`GpuTexture`] (array, texture object, mip tail mapped
//!   and uploaded, device sampler); a withdrawn one is kept until a fence says no launch can
//!   sample it.
//! - Residence changes and entries are queued per page and applied at the flush
//!   ([`Backend::end_publication`]) by the push and invalidate kernels, the last change of a
//!   page winning.
//!
//! Flush order on the loader's stream: unmaps, maps, uploads, invalidations, pushes — so a
//! page released and filled again in one publication is unmapped before it is mapped anew.

use crate::array::TexelStorage;
use crate::dense::page_copies;
use crate::device_context::DeviceContextBuffers;
use crate::gpu_texture::GpuTexture;
use crate::kernels::PagingKernels;
use crate::mapping::MapBatch;
use crate::shared_blocks::{constant_tile_key, SharedBlocks};
use crate::sparse::SparseRegion;
use crate::staging::FenceQueue;
use crate::staging::StagingRing;
use crate::streams::StreamOrder;
use crate::tile_pool::{CudaTilePool, TileBlock, DEFAULT_ARENA_BYTES};
use crate::{CudaDevice, STAGING_SLOTS};
use cudarc::driver::CudaStream;
use demandtex::backend::{Backend, HostCopy, PublishError, TextureContents, Withdrawal};
use demandtex::error::{Error, Result};
use demandtex::ids::{PageId, TILE_BYTES};
use demandtex::memory::{ConstantKey, TileBuffer};
use demandtex::paging::{PageLayout, PageMapping, NON_EVICTABLE};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The device tile pool's cap for a texture budget of `budget_bytes`: the budget plus two
/// arenas of headroom, for mip tails rounded up to whole tiles and for blocks waiting for
/// their fence.
pub fn device_pool_bytes(budget_bytes: u64) -> u64 {
    budget_bytes.saturating_add(2 * DEFAULT_ARENA_BYTES)
}

/// What the device side did, for [`crate::CudaLoader::cuda_stats`].
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
    /// Tiles of one value mapped onto the block already holding that value, with no copy
    /// (constant tiles: masks' black and white).
    pub tiles_shared: u64,
    /// Blocks holding a constant tile's value for every page of that value, now.
    pub shared_blocks: u64,
    /// Textures built on the device.
    pub textures_built: u64,
    /// Of those, textures built over another's array (duplicate textures sharing tiles:
    /// a texture object and sampler, no array, map or upload).
    pub textures_sharing_arrays: u64,
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
    /// Residence changes (pushes and invalidations) applied on the device.
    pub residence_changes: u64,
    /// Flushes (publications that reached the device).
    pub flushes: u64,
    /// Publications made (textures, entries and tiles), at `launch_prepare` and at
    /// `process_requests`.
    pub publications: u64,
    /// Of those, made at `process_requests` (while the launch's kernel may run).
    pub publications_during_launch: u64,
}

/// One page's tile on the device.
struct DeviceTile {
    /// The pool block it is mapped onto (`None` in a dense array).
    block: Option<TileBlock>,
    /// The value whose shared block it is mapped onto (constant tiles).
    shared: Option<ConstantKey>,
    /// The texture it belongs to (keeps its array alive while mapped).
    texture: Arc<GpuTexture>,
}

/// A tile copy waiting in a staging slot for its map to be submitted.
struct QueuedUpload {
    texture: Arc<GpuTexture>,
    slot: usize,
    rect: crate::array::LevelRect,
    pitch: usize,
}

/// A residence change of one page, applied at the flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResidenceChange {
    Push(PageMapping),
    Invalidate(u32),
}

/// The last change of each page, split into the invalidations and pushes the kernels
/// apply (each page in at most one of them), in page order.
pub(crate) fn coalesce(changes: &[ResidenceChange]) -> (Vec<u32>, Vec<PageMapping>) {
    let mut last: BTreeMap<u32, ResidenceChange> = BTreeMap::new();
    for &c in changes {
        let page = match c {
            ResidenceChange::Push(m) => m.page,
            ResidenceChange::Invalidate(p) => p,
        };
        last.insert(page, c);
    }
    let mut invalidate = Vec::new();
    let mut push = Vec::new();
    for c in last.into_values() {
        match c {
            ResidenceChange::Push(m) => push.push(m),
            ResidenceChange::Invalidate(p) => invalidate.push(p),
        }
    }
    (invalidate, push)
}

/// Everything the backend holds on its device (behind the backend's lock).
pub(crate) struct DeviceState {
    pub device: CudaDevice,
    pub stream: Arc<CudaStream>,
    pub kernels: PagingKernels,
    pub buffers: DeviceContextBuffers,
    /// Tile memory (sparse mode only).
    pub pool: Option<CudaTilePool>,
    staging: StagingRing,
    /// Orders callers' streams with the loader's.
    pub order: StreamOrder,
    /// The stream new tiles are mapped on (see [`DeviceState::submit_tiles`]).
    map_stream: Arc<CudaStream>,
    /// Recorded on the loader's stream after each unmap batch; the map stream waits for it.
    unmapped: StreamOrder,
    /// Whether `unmapped` was ever recorded.
    unmaps_recorded: bool,
    /// Orders the map stream's maps before the loader stream's uploads.
    mapped: StreamOrder,
    layout: PageLayout,
    textures: HashMap<u32, Arc<GpuTexture>>,
    ranges: BTreeMap<u32, u32>,
    tiles: HashMap<u32, DeviceTile>,
    /// The blocks of constant tiles.
    shared: SharedBlocks,
    /// Whether constant tiles share blocks (`LoaderOptions::coalesce_constant_tiles`).
    share_constant_tiles: bool,
    // Queued for the next flush.
    residence: Vec<ResidenceChange>,
    maps: Vec<(Arc<GpuTexture>, SparseRegion, TileBlock)>,
    uploads: Vec<QueuedUpload>,
    /// Tiles to unmap, and the block each one frees (`None`: a shared block other pages
    /// still use, or no block).
    releases: Vec<(u32, DeviceTile, Option<TileBlock>)>,
    retiring: Vec<Arc<GpuTexture>>,
    // Waiting for fences.
    released_blocks: FenceQueue<TileBlock>,
    retired_textures: FenceQueue<Arc<GpuTexture>>,
    pub stats: CudaStats,
}

/// A loader's streams and the events that order them.
pub(crate) struct LoaderStreams {
    /// The loader's stream: copies, unmaps, paging kernels, the user's launches.
    pub stream: Arc<CudaStream>,
    /// Orders callers' streams with the loader's.
    pub order: StreamOrder,
    /// The stream new tiles are mapped on, beside a kernel on the loader's stream (see
    /// [`DeviceState::submit_tiles`]).
    pub map_stream: Arc<CudaStream>,
    /// Recorded after each unmap batch on the loader's stream.
    pub unmapped: StreamOrder,
    /// Orders the maps before the loader stream's uploads.
    pub mapped: StreamOrder,
}

/// The CUDA [`Backend`] (see the module docs).
pub(crate) struct CudaBackend {
    pub state: Mutex<DeviceState>,
}

impl CudaBackend {
    /// A backend over `device` for an engine with page layout `layout`; constant tiles
    /// share one block per value if `share_constant_tiles`.
    pub fn new(
        device: CudaDevice,
        streams: LoaderStreams,
        kernels: PagingKernels,
        buffers: DeviceContextBuffers,
        pool: Option<CudaTilePool>,
        staging: StagingRing,
        share_constant_tiles: bool,
    ) -> CudaBackend {
        let layout = *buffers.layout();
        CudaBackend {
            state: Mutex::new(DeviceState {
                stats: CudaStats {
                    sparse: pool.is_some(),
                    ..CudaStats::default()
                },
                device,
                stream: streams.stream,
                kernels,
                buffers,
                pool,
                staging,
                order: streams.order,
                map_stream: streams.map_stream,
                unmapped: streams.unmapped,
                unmaps_recorded: false,
                mapped: streams.mapped,
                layout,
                textures: HashMap::new(),
                ranges: BTreeMap::new(),
                tiles: HashMap::new(),
                shared: SharedBlocks::default(),
                share_constant_tiles,
                residence: Vec::new(),
                maps: Vec::new(),
                uploads: Vec::new(),
                releases: Vec::new(),
                retiring: Vec::new(),
                released_blocks: FenceQueue::new(),
                retired_textures: FenceQueue::new(),
            }),
        }
    }
}

impl DeviceState {
    /// The device texture whose range holds `page`.
    fn texture_of(&self, page: u32) -> Option<&Arc<GpuTexture>> {
        let (_, id) = self.ranges.range(..=page).next_back()?;
        let t = self.textures.get(id)?;
        (page - t.start_page < t.num_pages()).then_some(t)
    }

    /// The device texture of texture `id`, if it is on the device now.
    pub fn device_texture(&self, id: u32) -> Option<Arc<GpuTexture>> {
        self.textures.get(&id).cloned()
    }

    /// Withdraw texture `id` from the device (its tail unmapped and the texture dropped
    /// after a fence).
    fn retire_texture(&mut self, id: u32) {
        if let Some(t) = self.textures.remove(&id) {
            if self.ranges.get(&t.start_page) == Some(&id) {
                self.ranges.remove(&t.start_page);
            }
            self.retiring.push(t);
        }
    }

    /// Queue `tile` (page `page`'s) for its unmap; its block is freed after it unless it is
    /// a shared block other pages still use.
    fn release_tile(&mut self, page: u32, tile: DeviceTile) {
        let frees = match &tile.shared {
            Some(key) => self.shared.release(key),
            None => tile.block,
        };
        self.releases.push((page, tile, frees));
    }

    fn publish_tile(&mut self, page: u32, data: &TileBuffer) -> Result<HostCopy, PublishError> {
        let Some(texture) = self.texture_of(page).cloned() else {
            return Err(PublishError::Rejected(format!(
                "tile page {page} has no texture on the CUDA device"
            )));
        };
        let offset = page - texture.start_page;
        if offset == 0 {
            return Err(PublishError::Rejected(format!(
                "page {page} is a mip tail, not a tile"
            )));
        }
        if let Some(old) = self.tiles.remove(&page) {
            tracing::warn!(page, "a tile published over one the device holds");
            self.release_tile(page, old);
        }
        let region = texture.sparse().and_then(|s| s.page_region(offset));
        // Constant tiles share a block per value (sparse arrays only: a dense array holds
        // every tile anyway).
        let shared = region
            .filter(|_| self.share_constant_tiles)
            .and_then(|_| constant_tile_key(&texture.layout, data.as_slice()));
        if let (Some(region), Some(key)) = (region, shared.as_ref()) {
            if let Some(block) = self.shared.acquire(key) {
                // Its value is on the device already: map, no copy.
                self.maps.push((texture.clone(), region, block));
                self.publish_resident(page, texture, Some(block), shared);
                self.stats.tiles_shared += 1;
                return Ok(HostCopy::Release);
            }
        }
        let block = match region {
            Some(region) => match self.allocate(1) {
                Ok(block) => {
                    self.maps.push((texture.clone(), region, block));
                    Some(block)
                }
                Err(Error::BudgetTooSmall { .. }) => {
                    return Err(PublishError::NotNow("the device tile pool is full".into()))
                }
                Err(e) => return Err(e.into()),
            },
            None => None,
        };
        self.stage_tile(&texture, offset, data.as_slice())?;
        if let (Some(block), Some(key)) = (block, shared) {
            self.shared.insert(key, block);
        }
        self.publish_resident(page, texture, block, shared);
        self.stats.tiles_uploaded += 1;
        self.stats.bytes_uploaded += TILE_BYTES as u64;
        Ok(HostCopy::Release)
    }

    /// `page`'s tile is on the device (mapped onto `block`, or in a dense array): its
    /// residence bit is pushed at the flush.
    fn publish_resident(
        &mut self,
        page: u32,
        texture: Arc<GpuTexture>,
        block: Option<TileBlock>,
        shared: Option<ConstantKey>,
    ) {
        self.tiles.insert(
            page,
            DeviceTile {
                block,
                shared,
                texture,
            },
        );
        self.residence.push(ResidenceChange::Push(PageMapping {
            page,
            lru: 0,
            entry: 0,
        }));
    }

    fn restore_tile(&mut self, page: u32) -> Result<(), PublishError> {
        let held = self.tiles.get(&page).is_some_and(|t| {
            self.texture_of(page)
                .is_some_and(|current| Arc::ptr_eq(current, &t.texture))
        });
        if !held {
            return Err(PublishError::Rejected(format!(
                "the CUDA device no longer holds staged tile page {page}"
            )));
        }
        self.residence.push(ResidenceChange::Push(PageMapping {
            page,
            lru: 0,
            entry: 0,
        }));
        self.stats.device_restores += 1;
        Ok(())
    }

    fn publish_texture(&mut self, c: &TextureContents<'_>) -> Result<(), PublishError> {
        if let Some(owner) = c.tiles_of {
            return self.publish_sharer(c, owner.0);
        }
        // The tail's map and upload go through the staging ring: no slot may wait.
        self.submit_tiles()?;
        self.retire_texture(c.texture.0);
        let mut built = self.build(c);
        if matches!(built, Err(Error::BudgetTooSmall { .. })) && self.wait_for_released_blocks()? {
            built = self.build(c);
        }
        let texture = match built {
            Ok(t) => t,
            Err(e @ Error::BudgetTooSmall { .. }) => {
                return Err(PublishError::NotNow(format!(
                    "no device memory for the mip tail yet: {e}"
                )))
            }
            Err(e @ (Error::NoCudaDevice(_) | Error::NoCudaDriver(_))) => return Err(e.into()),
            Err(e) => {
                return Err(PublishError::Rejected(format!(
                    "creating the texture on the CUDA device: {e}"
                )))
            }
        };
        self.stats.textures_built += 1;
        self.stats.bytes_uploaded += c.layout.mip_tail_bytes;
        let entry = texture.device_entry();
        let start = texture.start_page;
        self.ranges.insert(start, c.texture.0);
        self.textures.insert(c.texture.0, Arc::new(texture));
        let fixed = |page: u32, entry: u64| {
            ResidenceChange::Push(PageMapping {
                page,
                lru: NON_EVICTABLE as u32,
                entry,
            })
        };
        self.residence.extend([
            fixed(self.layout.sampler_page(c.texture).0, entry),
            fixed(self.layout.base_color_page(c.texture).0, c.base_color),
            fixed(start, 0),
        ]);
        Ok(())
    }

    /// A texture sharing texture `owner`'s tiles (duplicate textures): a texture object
    /// over the owner's array and a sampler of its own; no range, map or upload (its tiles
    /// are published for the owner's pages).
    fn publish_sharer(&mut self, c: &TextureContents<'_>, owner: u32) -> Result<(), PublishError> {
        self.retire_texture(c.texture.0);
        let Some(owner_texture) = self.textures.get(&owner).cloned() else {
            return Err(PublishError::Rejected(format!(
                "it shares the tiles of texture {owner}, which is not on the CUDA device"
            )));
        };
        let texture = GpuTexture::sharing(
            &self.stream,
            &owner_texture,
            c.layout,
            c.desc,
            c.sampler,
            c.sampler as *const _ as u64,
        )
        .map_err(|e| match e {
            e @ (Error::NoCudaDevice(_) | Error::NoCudaDriver(_)) => PublishError::from(e),
            e => PublishError::Rejected(format!("creating the texture on the CUDA device: {e}")),
        })?;
        self.stats.textures_built += 1;
        self.stats.textures_sharing_arrays += 1;
        let entry = texture.device_entry();
        self.textures.insert(c.texture.0, Arc::new(texture));
        for (page, entry) in [
            (self.layout.sampler_page(c.texture).0, entry),
            (self.layout.base_color_page(c.texture).0, c.base_color),
        ] {
            self.residence.push(ResidenceChange::Push(PageMapping {
                page,
                lru: NON_EVICTABLE as u32,
                entry,
            }));
        }
        Ok(())
    }

    fn build(&mut self, c: &TextureContents<'_>) -> Result<GpuTexture> {
        let sparse = self.pool.is_some();
        let info = self.device.info();
        crate::limits::check_texture_fits(info, c.layout.width, c.layout.height, c.layout.format)?;
        let ordinal = info.ordinal;
        GpuTexture::build(
            &self.stream,
            sparse,
            self.pool.as_mut(),
            &mut self.staging,
            ordinal,
            c.layout,
            c.desc,
            c.sampler,
            c.sampler as *const _ as u64,
            c.mip_tail,
            TexelStorage::of(c.layout, c.texels_are_words),
        )
    }
}

impl Backend for CudaBackend {
    /// Yes: a texture whose pages keep BC blocks gets a BC array, whose blocks the
    /// texture unit decodes and filters (`TexelStorage::Blocks`).
    fn samples_blocks(&self) -> bool {
        true
    }

    /// Yes: a constant tile's one buffer may be published for many pages; each page is
    /// mapped onto the one block of its value (see `shared_blocks`), or copied into a
    /// dense array.
    fn shares_tiles(&self) -> bool {
        true
    }

    /// Yes: a texture sharing another's tiles gets a texture object over the owner's
    /// array (see `publish_sharer`).
    fn shares_texture_tiles(&self) -> bool {
        true
    }

    fn withdraw(&self, withdrawal: Withdrawal) -> Result<()> {
        let mut st = self.state.lock();
        match withdrawal {
            Withdrawal::TileStaged(page) | Withdrawal::Page(page) => {
                st.residence.push(ResidenceChange::Invalidate(page.0));
            }
            Withdrawal::TileReleased(page) => {
                st.residence.push(ResidenceChange::Invalidate(page.0));
                if let Some(tile) = st.tiles.remove(&page.0) {
                    st.release_tile(page.0, tile);
                }
            }
            Withdrawal::Texture(texture) => st.retire_texture(texture.0),
        }
        Ok(())
    }

    fn publish_tile(&self, page: PageId, data: &TileBuffer) -> Result<HostCopy, PublishError> {
        self.state.lock().publish_tile(page.0, data)
    }

    fn restore_tile(&self, page: PageId) -> Result<(), PublishError> {
        self.state.lock().restore_tile(page.0)
    }

    fn publish_texture(&self, contents: &TextureContents<'_>) -> Result<(), PublishError> {
        self.state.lock().publish_texture(contents)
    }

    fn publish_entry(&self, page: PageId, entry: u64) -> Result<()> {
        self.state
            .lock()
            .residence
            .push(ResidenceChange::Push(PageMapping {
                page: page.0,
                lru: NON_EVICTABLE as u32,
                entry,
            }));
        Ok(())
    }

    fn end_publication(&self) -> Result<()> {
        self.state.lock().flush()
    }
}

impl Drop for DeviceState {
    fn drop(&mut self) {
        // Nothing may be freed while a stream still uses it.
        for stream in [&self.map_stream, &self.stream] {
            if let Err(e) = crate::ops::safe("cuStreamSynchronize", || stream.synchronize()) {
                tracing::warn!("synchronizing a CUDA loader stream: {e}");
            }
        }
    }
}

mod flush;

#[cfg(test)]
mod tests {
    use super::*;

    fn push(page: u32) -> ResidenceChange {
        ResidenceChange::Push(PageMapping {
            page,
            lru: 0,
            entry: page as u64,
        })
    }

    #[test]
    fn the_last_change_of_a_page_wins() {
        use ResidenceChange::Invalidate;
        let changes = [
            push(9),
            Invalidate(5),
            push(5), // staged, then restored: resident
            push(7),
            Invalidate(7), // published, then withdrawn: not resident
            Invalidate(3),
        ];
        let (invalidate, pushed) = coalesce(&changes);
        assert_eq!(invalidate, vec![3, 7]);
        assert_eq!(
            pushed.iter().map(|m| m.page).collect::<Vec<_>>(),
            vec![5, 9]
        );
        assert_eq!(coalesce(&[]), (vec![], vec![]));
    }

    #[test]
    fn the_device_pool_has_headroom_over_the_budget() {
        assert_eq!(device_pool_bytes(1 << 30), (1 << 30) + (64 << 20));
        assert_eq!(device_pool_bytes(u64::MAX), u64::MAX);
    }
}
