//! Tile upload and mapping rates on one device, outside any loader, with the loader's own
//! pieces: a sparse array ([`SparseTexture`]), the tile pool ([`CudaTilePool`]), map batches
//! ([`MapBatch`], one `cuMemMapArrayAsync` per batch) and the pinned staging ring
//! ([`StagingRing`], host buffer → pinned slot → array copy), as the loader's
//! `launch_prepare` uses them. Figures only (`demandtex bench --backend cuda`).
//!
//! A device without sparse arrays gets a dense array: uploads only, no mapping figures.

use demandtex::error::{Error, Result};
use demandtex::ids::TILE_BYTES;
use demandtex::textures::{full_mip_levels, PageContent, TexelFormat, TextureLayout};
use demandtex_cuda::cudarc::driver::{CudaSlice, CudaStream};
use demandtex_cuda::dense::{upload_page, DenseTexture};
use demandtex_cuda::mapping::MapBatch;
use demandtex_cuda::safe;
use demandtex_cuda::sparse::{SparseRegion, SparseTexture};
use demandtex_cuda::staging::StagingRing;
use demandtex_cuda::tile_pool::{CudaTilePool, TileBlock, DEFAULT_ARENA_BYTES};
use demandtex_cuda::{CudaDevice, STAGING_SLOTS};
use std::sync::Arc;
use std::time::Instant;

/// Side of the benchmark texture (RGBA8: 128 × 128 level-0 tiles, 1 GiB of level 0).
const SIDE: u32 = 16384;

/// One round of [`UploadBench::run`], in seconds of wall time (each phase ends with a
/// stream synchronisation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UploadRound {
    /// Tiles mapped, uploaded and unmapped.
    pub tiles: u32,
    /// Mapping every tile in one batch (`None` for a dense array).
    pub map_seconds: Option<f64>,
    /// Unmapping every tile in one batch (`None` for a dense array).
    pub unmap_seconds: Option<f64>,
    /// Maps made one batch each (at most 1024 of the tiles), and their time.
    pub single_maps: Option<(u32, f64)>,
    /// Copying every tile from host memory through the staging ring into the array.
    pub upload_seconds: f64,
}

enum Storage {
    Sparse(SparseTexture, CudaTilePool),
    Dense(DenseTexture),
}

/// The texture, pool, staging ring and host data of the upload benchmark.
pub struct UploadBench {
    ordinal: u32,
    stream: Arc<CudaStream>,
    layout: TextureLayout,
    storage: Storage,
    staging: StagingRing,
    /// Page offsets (in the texture's range) of the tiles used, each a whole tile.
    offsets: Vec<u32>,
    data: Vec<u8>,
    /// Blocks mapped by [`submit_maps`](Self::submit_maps) / [`reset`](Self::reset), until
    /// the next reset.
    mapped: Vec<TileBlock>,
    /// Device bytes the small pageable copies write.
    scratch: Option<CudaSlice<u8>>,
}

impl UploadBench {
    /// Set up `tiles` tiles (1..=16384) of a 16384² RGBA8 texture on device `ordinal`:
    /// sparse when the device supports sparse arrays and virtual memory management, with
    /// a pool of exactly enough arenas; `tiles` × 64 KiB of host data.
    ///
    /// Errors: [`Error::NoCudaDriver`] / [`Error::NoCudaDevice`]; the driver's.
    pub fn new(ordinal: u32, tiles: u32) -> Result<UploadBench> {
        let device = CudaDevice::open(ordinal)?;
        let layout =
            TextureLayout::new(SIDE, SIDE, full_mip_levels(SIDE, SIDE), TexelFormat::RGBA8)?;
        let offsets: Vec<u32> = (1..layout.num_pages)
            .filter(|&o| {
                matches!(layout.page_content(o), Some(PageContent::Tile { level, tile_x, tile_y })
                if {
                    let r = layout.tile_region(level, tile_x, tile_y);
                    r.width == layout.tile_width && r.height == layout.tile_height
                })
            })
            .take(tiles as usize)
            .collect();
        if tiles == 0 || offsets.len() < tiles as usize {
            return Err(Error::InvalidArgument(format!(
                "{tiles} benchmark tiles (1..={})",
                offsets.len()
            )));
        }
        let ctx = device.context().clone();
        let stream = safe("cuStreamCreate", || ctx.new_stream())?;
        let info = device.info();
        let storage = if info.sparse_supported && info.vmm_supported {
            let texture = SparseTexture::new(&ctx, &layout)?;
            let max = tiles as u64 * TILE_BYTES as u64 + 2 * DEFAULT_ARENA_BYTES;
            Storage::Sparse(texture, CudaTilePool::new(&ctx, DEFAULT_ARENA_BYTES, max)?)
        } else {
            Storage::Dense(DenseTexture::new(&ctx, &layout)?)
        };
        let staging = StagingRing::new(&ctx, STAGING_SLOTS, TILE_BYTES)?;
        let mut data = vec![0u8; tiles as usize * TILE_BYTES];
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
        }
        Ok(UploadBench {
            ordinal,
            stream,
            layout,
            storage,
            staging,
            offsets,
            data,
            mapped: Vec::new(),
            scratch: None,
        })
    }

    /// The bench's stream.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Wait for the stream, then unmap what [`submit_maps`](Self::submit_maps) mapped and
    /// free its blocks; with `map`, map every tile again (one batch), so that uploads have
    /// memory to land in.
    pub fn reset(&mut self, map: bool) -> Result<()> {
        self.sync()?;
        let Storage::Sparse(texture, pool) = &mut self.storage else {
            return Ok(());
        };
        let regions = tile_regions(texture, &self.offsets)?;
        if !self.mapped.is_empty() {
            let mut batch = MapBatch::new(self.ordinal)?;
            for region in regions.iter().take(self.mapped.len()) {
                batch.unmap(texture, *region)?;
            }
            batch.submit(&self.stream)?;
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
            for b in self.mapped.drain(..) {
                pool.free(b)?;
            }
        }
        if map {
            for _ in &regions {
                self.mapped.push(pool.allocate(1)?);
            }
            let mut batch = MapBatch::new(self.ordinal)?;
            for (region, block) in regions.iter().zip(&self.mapped) {
                batch.map(texture, *region, pool.memory(block)?)?;
            }
            batch.submit(&self.stream)?;
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
        }
        Ok(())
    }

    /// Map every tile, one `cuMemMapArrayAsync` each, on `stream` (after a
    /// [`reset`](Self::reset) without mapping).
    pub fn submit_maps(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        let Storage::Sparse(texture, pool) = &mut self.storage else {
            return Ok(());
        };
        let regions = tile_regions(texture, &self.offsets)?;
        for region in regions {
            let block = pool.allocate(1)?;
            let mut batch = MapBatch::new(self.ordinal)?;
            batch.map(texture, region, pool.memory(&block)?)?;
            batch.submit(stream)?;
            self.mapped.push(block);
        }
        Ok(())
    }

    /// Copy every tile through the staging ring into the array, on `stream` (after a
    /// [`reset`](Self::reset) that mapped them).
    pub fn submit_uploads(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        let array = match &self.storage {
            Storage::Sparse(t, _) => t.array().clone(),
            Storage::Dense(d) => d.array().clone(),
        };
        for (i, &offset) in self.offsets.iter().enumerate() {
            let data = &self.data[i * TILE_BYTES..(i + 1) * TILE_BYTES];
            upload_page(
                &mut self.staging,
                stream,
                &array,
                &self.layout,
                offset,
                data,
            )?;
        }
        Ok(())
    }

    /// One 4 KiB copy from pageable host memory to the device per tile, on `stream` (as the
    /// residence pushes copy their lists).
    pub fn submit_small_copies(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        const BYTES: usize = 4096;
        if self.scratch.is_none() {
            let n = self.offsets.len() * BYTES;
            self.scratch = Some(safe("allocating scratch", || {
                self.stream.alloc_zeros::<u8>(n)
            })?);
        }
        let Some(scratch) = self.scratch.as_mut() else {
            return Ok(());
        };
        for i in 0..self.offsets.len() {
            let src = &self.data[i * BYTES..(i + 1) * BYTES];
            let mut view = scratch.slice_mut(i * BYTES..(i + 1) * BYTES);
            safe("cuMemcpyHtoDAsync", || stream.memcpy_htod(src, &mut view))?;
        }
        Ok(())
    }

    /// Whether the texture is a sparse array (mapping figures are measured).
    pub fn is_sparse(&self) -> bool {
        matches!(self.storage, Storage::Sparse(..))
    }

    fn sync(&self) -> Result<()> {
        safe("cuStreamSynchronize", || self.stream.synchronize())
    }

    /// Map (sparse), upload and unmap (sparse) every tile once; the pool blocks are
    /// allocated before and freed after the timed phases.
    pub fn run(&mut self) -> Result<UploadRound> {
        let tiles = self.offsets.len() as u32;
        let mut round = UploadRound {
            tiles,
            map_seconds: None,
            unmap_seconds: None,
            single_maps: None,
            upload_seconds: 0.0,
        };
        let mut blocks: Vec<TileBlock> = Vec::with_capacity(tiles as usize);
        if let Storage::Sparse(texture, pool) = &mut self.storage {
            for _ in 0..tiles {
                blocks.push(pool.allocate(1)?);
            }
            let regions = tile_regions(texture, &self.offsets)?;
            // Single maps: one batch (one driver call) each, then unmapped untimed.
            let singles = tiles.min(1024) as usize;
            let start = Instant::now();
            for (region, block) in regions.iter().zip(&blocks).take(singles) {
                let mut batch = MapBatch::new(self.ordinal)?;
                batch.map(texture, *region, pool.memory(block)?)?;
                batch.submit(&self.stream)?;
            }
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
            round.single_maps = Some((singles as u32, start.elapsed().as_secs_f64()));
            let mut batch = MapBatch::new(self.ordinal)?;
            for region in regions.iter().take(singles) {
                batch.unmap(texture, *region)?;
            }
            batch.submit(&self.stream)?;
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
            // Every tile in one batch.
            let start = Instant::now();
            let mut batch = MapBatch::new(self.ordinal)?;
            for (region, block) in regions.iter().zip(&blocks) {
                batch.map(texture, *region, pool.memory(block)?)?;
            }
            batch.submit(&self.stream)?;
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
            round.map_seconds = Some(start.elapsed().as_secs_f64());
        }
        let array = match &self.storage {
            Storage::Sparse(t, _) => t.array().clone(),
            Storage::Dense(d) => d.array().clone(),
        };
        let start = Instant::now();
        for (i, &offset) in self.offsets.iter().enumerate() {
            let data = &self.data[i * TILE_BYTES..(i + 1) * TILE_BYTES];
            upload_page(
                &mut self.staging,
                &self.stream,
                &array,
                &self.layout,
                offset,
                data,
            )?;
        }
        self.sync()?;
        round.upload_seconds = start.elapsed().as_secs_f64();
        if let Storage::Sparse(texture, pool) = &mut self.storage {
            let regions = tile_regions(texture, &self.offsets)?;
            let start = Instant::now();
            let mut batch = MapBatch::new(self.ordinal)?;
            for region in &regions {
                batch.unmap(texture, *region)?;
            }
            batch.submit(&self.stream)?;
            safe("cuStreamSynchronize", || self.stream.synchronize())?;
            round.unmap_seconds = Some(start.elapsed().as_secs_f64());
            for b in blocks {
                pool.free(b)?;
            }
        }
        Ok(round)
    }
}

/// The sparse regions of the tile pages at `offsets`.
fn tile_regions(texture: &SparseTexture, offsets: &[u32]) -> Result<Vec<SparseRegion>> {
    offsets
        .iter()
        .map(|&o| {
            texture
                .page_region(o)
                .ok_or_else(|| Error::Internal(format!("page {o}: no sparse region")))
        })
        .collect()
}

impl Drop for UploadBench {
    fn drop(&mut self) {
        // Nothing may be freed while the stream still uses it.
        if let Err(e) = self.reset(false) {
            tracing::warn!("synchronizing the upload benchmark's stream: {e}");
        }
    }
}

impl std::fmt::Debug for UploadBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadBench")
            .field("tiles", &self.offsets.len())
            .field("sparse", &self.is_sparse())
            .finish_non_exhaustive()
    }
}
