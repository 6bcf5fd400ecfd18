//! One opened texture as the CUDA loader holds it on the device: its array (sparse, or
//! dense when the loader runs without sparse arrays), a texture object over it, the mip
//! tail mapped and uploaded, and a `DtexTextureSampler` in device memory whose address is
//! the sampler page's device entry.
//!
//! Built when the engine publishes the texture's sampler (the fill thread opened the source
//! and read the mip tail into host memory); dropped once no launch can sample it any more
//! (the loader keeps it in a fence queue after its sampler page is withdrawn).

use crate::array::TexelStorage;
use crate::dense::{upload_page, DenseTexture};
use crate::mapping::MapBatch;
use crate::ops::safe;
use crate::sparse::{SparseRegion, SparseTexture};
use crate::staging::StagingRing;
use crate::texture_object::TextureObject;
use crate::tile_pool::{CudaTilePool, TileBlock};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};
use demandtex::error::{Error, Result};
use demandtex::ids::TILE_BYTES;
use demandtex::textures::{TextureDesc, TextureLayout, TextureSampler};
use std::sync::Arc;

/// A [`TextureSampler`] in device memory (the device headers' `DtexTextureSampler`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
struct DeviceSampler(TextureSampler);

// SAFETY: `TextureSampler` is `#[repr(C)]` plain data (u64s, u32s, f32s, an array of
// plain structs), laid out as the device headers' `DtexTextureSampler` (size asserted in
// both); the wrapper is transparent.
unsafe impl DeviceRepr for DeviceSampler {}

/// A texture object over `array` as `desc` says, and the device sampler record that names
/// it (the host sampler's fields otherwise).
fn object_and_sampler(
    stream: &Arc<CudaStream>,
    array: &Arc<crate::array::MipmappedArray>,
    layout: &TextureLayout,
    desc: &TextureDesc,
    host_sampler: &TextureSampler,
) -> Result<(TextureObject, CudaSlice<DeviceSampler>)> {
    let object = TextureObject::new(array, desc, layout.num_levels())?;
    let record = DeviceSampler(TextureSampler {
        texture_object: object.raw(),
        mip_tail_data: 0,
        ..*host_sampler
    });
    let sampler = safe("uploading a texture sampler", || {
        stream.clone_htod(std::slice::from_ref(&record))
    })?;
    Ok((object, sampler))
}

/// Where the texels live.
#[derive(Debug)]
pub enum TextureArray {
    /// A sparse array: tiles mapped onto tile-pool blocks on demand.
    Sparse(SparseTexture),
    /// A dense array (every level allocated at creation).
    Dense(DenseTexture),
    /// Another texture's array (duplicate-texture sharing: the same texels, sampled
    /// through this texture's own texture object and sampler). Holding the owner keeps
    /// its array alive.
    SharedWith(Arc<GpuTexture>),
}

impl TextureArray {
    /// The mipmapped array.
    pub fn array(&self) -> &Arc<crate::array::MipmappedArray> {
        match self {
            TextureArray::Sparse(s) => s.array(),
            TextureArray::Dense(d) => d.array(),
            TextureArray::SharedWith(owner) => owner.storage.array(),
        }
    }
}

/// A texture on the device (see the module comment).
#[derive(Debug)]
pub struct GpuTexture {
    /// The engine's layout.
    pub layout: TextureLayout,
    /// First page of the texture's tile range (its mip-tail page).
    pub start_page: u32,
    /// The array.
    pub storage: TextureArray,
    /// The texture object over it (it holds the array, which therefore outlives it).
    pub object: TextureObject,
    /// The sampler record in device memory.
    sampler: CudaSlice<DeviceSampler>,
    /// The pool block the mip tail is mapped onto (sparse arrays with a tail).
    pub tail_block: Option<TileBlock>,
    /// The host sampler entry (engine record address) this was built from.
    pub host_entry: u64,
}

impl GpuTexture {
    /// Build the device side of a texture whose host sampler is `host_sampler`: create the
    /// array (`sparse` or dense, its texels stored as `storage`), map (sparse) and upload the packed mip tail `tail`, create
    /// the texture object and write the device sampler. Work is enqueued on `stream`.
    ///
    /// Errors: the driver's, [`Error::Unsupported`] when the device's sparse layout of
    /// this texture differs from the engine's, or [`Error::BudgetTooSmall`] from the pool.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        stream: &Arc<CudaStream>,
        sparse: bool,
        pool: Option<&mut CudaTilePool>,
        staging: &mut StagingRing,
        ordinal: u32,
        layout: &TextureLayout,
        desc: &TextureDesc,
        host_sampler: &TextureSampler,
        host_entry: u64,
        tail: &[u8],
        storage: TexelStorage,
    ) -> Result<GpuTexture> {
        let ctx = stream.context();
        let mut tail_block = None;
        let mut pool_after_map = None;
        let storage = if sparse {
            let tex = SparseTexture::new_stored(ctx, layout, storage)?;
            let pool =
                pool.ok_or_else(|| Error::Internal("sparse texture without a pool".into()))?;
            if let Some(region @ SparseRegion::MipTail { bytes }) = tex.page_region(0) {
                let tiles = u32::try_from(bytes / TILE_BYTES as u64)
                    .map_err(|_| Error::Unsupported(format!("a mip tail of {bytes} bytes")))?;
                let block = pool.allocate(tiles)?;
                let mut batch = MapBatch::new(ordinal)?;
                let mapped = pool
                    .memory(&block)
                    .and_then(|m| batch.map(&tex, region, m))
                    .and_then(|_| batch.submit(stream));
                if let Err(e) = mapped {
                    let _ = pool.free(block);
                    return Err(e);
                }
                tail_block = Some(block);
            }
            pool_after_map = Some(pool);
            TextureArray::Sparse(tex)
        } else {
            TextureArray::Dense(DenseTexture::new_stored(ctx, layout, storage)?)
        };
        let finished = (|| {
            if layout.mip_tail_bytes > 0 {
                if (tail.len() as u64) < layout.mip_tail_bytes {
                    return Err(Error::Internal(format!(
                        "a mip tail of {} bytes for a layout of {}",
                        tail.len(),
                        layout.mip_tail_bytes
                    )));
                }
                upload_page(staging, stream, storage.array(), layout, 0, tail)?;
            }
            object_and_sampler(stream, storage.array(), layout, desc, host_sampler)
        })();
        let (object, sampler) = match finished {
            Ok(v) => v,
            Err(e) => {
                // The tail is mapped (or its map enqueued): unmap it and wait, so that
                // its block can go back to the pool before the array is destroyed.
                if let (Some(block), TextureArray::Sparse(tex), Some(pool)) =
                    (tail_block, &storage, pool_after_map)
                {
                    let unmapped = MapBatch::new(ordinal).and_then(|mut batch| {
                        if let Some(region) = tex.page_region(0) {
                            batch.unmap(tex, region)?;
                        }
                        batch.submit(stream)?;
                        safe("cuStreamSynchronize", || stream.synchronize())
                    });
                    match unmapped {
                        Ok(()) => {
                            let _ = pool.free(block);
                        }
                        Err(u) => tracing::warn!("unmapping a failed texture's tail: {u}"),
                    }
                }
                return Err(e);
            }
        };
        Ok(GpuTexture {
            layout: layout.clone(),
            start_page: host_sampler.start_page,
            storage,
            object,
            sampler,
            tail_block,
            host_entry,
        })
    }

    /// The device side of a texture that shares `owner`'s tiles (duplicate-texture
    /// sharing: the same layout and texels, the same tile range): a texture object over
    /// the owner's array with this texture's description, and its own sampler record.
    /// Nothing is mapped or uploaded; the owner's tiles are this texture's.
    ///
    /// Errors: the driver's, or [`Error::Internal`] when the layouts differ.
    pub fn sharing(
        stream: &Arc<CudaStream>,
        owner: &Arc<GpuTexture>,
        layout: &TextureLayout,
        desc: &TextureDesc,
        host_sampler: &TextureSampler,
        host_entry: u64,
    ) -> Result<GpuTexture> {
        if owner.layout != *layout || owner.start_page != host_sampler.start_page {
            return Err(Error::Internal(format!(
                "a texture sharing the tiles of one with another layout or range \
                 (pages from {} against {})",
                host_sampler.start_page, owner.start_page
            )));
        }
        let (object, sampler) =
            object_and_sampler(stream, owner.storage.array(), layout, desc, host_sampler)?;
        Ok(GpuTexture {
            layout: layout.clone(),
            start_page: host_sampler.start_page,
            storage: TextureArray::SharedWith(owner.clone()),
            object,
            sampler,
            tail_block: None,
            host_entry,
        })
    }

    /// The device address of the sampler record: the sampler page's device entry.
    pub fn device_entry(&self) -> u64 {
        self.sampler.device_ptr(self.sampler.stream()).0
    }

    /// Pages in the texture's range.
    pub fn num_pages(&self) -> u32 {
        self.layout.num_pages
    }

    /// The sparse texture, if the array is sparse and this texture's own.
    pub fn sparse(&self) -> Option<&SparseTexture> {
        match &self.storage {
            TextureArray::Sparse(s) => Some(s),
            TextureArray::Dense(_) | TextureArray::SharedWith(_) => None,
        }
    }

    /// Bytes of device memory outside the tile pool (a dense array of its own, the
    /// sampler).
    pub fn dense_bytes(&self) -> u64 {
        let sampler = std::mem::size_of::<TextureSampler>() as u64;
        match &self.storage {
            TextureArray::Sparse(_) | TextureArray::SharedWith(_) => sampler,
            TextureArray::Dense(d) => d.bytes() + sampler,
        }
    }
}
