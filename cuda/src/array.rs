//! `MipmappedArray`: one CUDA mipmapped array (sparse or dense) in a texture's texel format,
//! destroyed on drop, with synchronous and asynchronous 2D copies into and out of its
//! levels. The storage under [`crate::sparse::SparseTexture`] and
//! [`crate::dense::DenseTexture`], and what a [`crate::texture_object::TextureObject`]
//! samples.

use crate::ops::{bind, drv};
use cudarc::driver::sys::{self, CUarray_format};
use cudarc::driver::{CudaContext, CudaStream};
use demandtex::error::{Error, Result};
use demandtex::textures::{BlockCodec, TexelFormat, TexelType};
use std::sync::Arc;

/// How an array stores its texels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TexelStorage {
    /// In the texel format, read as (normalised) floats.
    #[default]
    Colours,
    /// As 32-bit unsigned integers that device code reads back unchanged
    /// (`CU_TRSF_READ_AS_INTEGER`, point filtered): packed bytes
    /// (`demandtex::sources::ImageSource::texels_are_words`), which a float format would
    /// change (the texture unit flushes 32-bit float denormals to zero).
    Words,
    /// As 4×4 blocks of a BC codec (`TextureLayout::blocks`), which the texture unit
    /// decodes and filters: the array's elements are blocks, so copies move rows of
    /// blocks (OptiX Toolkit's rule), while regions and sparse tiles are in texels.
    Blocks(BlockCodec),
}

impl TexelStorage {
    /// How a texture laid out as `layout` is stored: its blocks, if its pages hold blocks;
    /// else words when `words`, else colours.
    pub fn of(layout: &demandtex::textures::TextureLayout, words: bool) -> TexelStorage {
        match layout.blocks {
            Some(codec) => TexelStorage::Blocks(codec),
            None if words => TexelStorage::Words,
            None => TexelStorage::Colours,
        }
    }
}

/// The CUDA array format and channel count of BC blocks: BC1–BC3 and BC7 4 channels,
/// BC4 1, BC5 2, BC6H 3 (the driver's rule for each format).
pub fn block_array_format(codec: BlockCodec) -> (CUarray_format, u32) {
    use CUarray_format::*;
    match codec {
        BlockCodec::Bc1 => (CU_AD_FORMAT_BC1_UNORM, 4),
        BlockCodec::Bc2 => (CU_AD_FORMAT_BC2_UNORM, 4),
        BlockCodec::Bc3 => (CU_AD_FORMAT_BC3_UNORM, 4),
        BlockCodec::Bc4 { signed: false } => (CU_AD_FORMAT_BC4_UNORM, 1),
        BlockCodec::Bc4 { signed: true } => (CU_AD_FORMAT_BC4_SNORM, 1),
        BlockCodec::Bc5 { signed: false } => (CU_AD_FORMAT_BC5_UNORM, 2),
        BlockCodec::Bc5 { signed: true } => (CU_AD_FORMAT_BC5_SNORM, 2),
        BlockCodec::Bc6h { signed: false } => (CU_AD_FORMAT_BC6H_UF16, 3),
        BlockCodec::Bc6h { signed: true } => (CU_AD_FORMAT_BC6H_SF16, 3),
        BlockCodec::Bc7 => (CU_AD_FORMAT_BC7_UNORM, 4),
    }
}

/// The elements of an array: texels, or 4×4 blocks. A texel rectangle's copy moves the
/// elements covering it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elements {
    /// log2 of the texels an element spans on each side (0 or 2).
    pub shift: u32,
    /// Bytes of one element.
    pub bytes: usize,
}

impl Elements {
    /// The elements of `format` stored as `storage`.
    pub fn of(format: TexelFormat, storage: TexelStorage) -> Elements {
        match storage {
            TexelStorage::Blocks(codec) => Elements {
                shift: 2,
                bytes: codec.block_bytes(),
            },
            _ => Elements {
                shift: 0,
                bytes: format.texel_bytes(),
            },
        }
    }

    /// Elements covering `texels` texels along one side.
    pub fn count(self, texels: u32) -> u32 {
        texels.div_ceil(1 << self.shift)
    }

    /// Bytes of the row of elements covering `width` texels.
    pub fn row_bytes(self, width: u32) -> usize {
        self.count(width) as usize * self.bytes
    }
}

/// The CUDA array format and channel count of `format` stored as `storage`: words are
/// `UNSIGNED_INT32` channels of the same texel size (an error unless it is a multiple of
/// 4 bytes).
pub fn stored_array_format(
    format: TexelFormat,
    storage: TexelStorage,
) -> Result<(CUarray_format, u32)> {
    match storage {
        TexelStorage::Colours => Ok(array_format(format)),
        TexelStorage::Blocks(codec) => Ok(block_array_format(codec)),
        TexelStorage::Words => {
            let bytes = format.texel_bytes() as u32;
            if bytes % 4 != 0 {
                return Err(Error::InvalidArgument(format!(
                    "{format} texels ({bytes} bytes) cannot be stored as 32-bit words"
                )));
            }
            Ok((CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32, bytes / 4))
        }
    }
}

/// The CUDA array format and channel count of a texel format (`U16` is read as normalised
/// floats, like `U8`: colour texture objects never set `CU_TRSF_READ_AS_INTEGER`).
pub fn array_format(format: TexelFormat) -> (CUarray_format, u32) {
    let f = match format.texel_type {
        TexelType::U8 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
        TexelType::U16 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
        TexelType::F16 => CUarray_format::CU_AD_FORMAT_HALF,
        TexelType::F32 => CUarray_format::CU_AD_FORMAT_FLOAT,
    };
    (f, format.channels)
}

/// The `CUDA_MEMCPY2D` of a copy between host memory at `host` (rows `pitch` bytes apart)
/// and the CUDA array `array` at (`at.0` bytes, `at.1` rows), of `extent` = (bytes per row,
/// rows), host → array when `to_array`, else array → host.
///
/// Built field by field: the struct holds `CUmemorytype` enums, which have no zero value,
/// so `std::mem::zeroed` of it aborts the process (a non-unwinding panic).
fn memcpy2d_desc(
    array: sys::CUarray,
    at: (usize, usize),
    host: *mut u8,
    pitch: usize,
    extent: (usize, usize),
    to_array: bool,
) -> sys::CUDA_MEMCPY2D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_ARRAY as ARRAY, CU_MEMORYTYPE_HOST as HOST};
    let (src_at, dst_at) = if to_array { ((0, 0), at) } else { (at, (0, 0)) };
    sys::CUDA_MEMCPY2D {
        srcXInBytes: src_at.0,
        srcY: src_at.1,
        srcMemoryType: if to_array { HOST } else { ARRAY },
        srcHost: if to_array {
            host as *const _
        } else {
            std::ptr::null()
        },
        srcDevice: 0,
        srcArray: if to_array {
            std::ptr::null_mut()
        } else {
            array
        },
        srcPitch: if to_array { pitch } else { 0 },
        dstXInBytes: dst_at.0,
        dstY: dst_at.1,
        dstMemoryType: if to_array { ARRAY } else { HOST },
        dstHost: if to_array {
            std::ptr::null_mut()
        } else {
            host as *mut _
        },
        dstDevice: 0,
        dstArray: if to_array {
            array
        } else {
            std::ptr::null_mut()
        },
        dstPitch: if to_array { 0 } else { pitch },
        WidthInBytes: extent.0,
        Height: extent.1,
    }
}

/// A rectangle of texels of one level of a [`MipmappedArray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelRect {
    /// Mip level.
    pub level: u32,
    /// Left texel column.
    pub x: u32,
    /// Top texel row.
    pub y: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

/// A CUDA mipmapped array. Its level handles are owned by it (they die with it).
pub struct MipmappedArray {
    raw: sys::CUmipmappedArray,
    levels: Vec<sys::CUarray>,
    level_sizes: Vec<(u32, u32)>,
    format: TexelFormat,
    storage: TexelStorage,
    sparse: bool,
    ctx: Arc<CudaContext>,
}

// SAFETY: the handles are plain driver handles, valid in any thread once the owning
// context is bound (every method binds it); the driver serialises operations on them.
unsafe impl Send for MipmappedArray {}
// SAFETY: as above; `&self` methods only read the handles.
unsafe impl Sync for MipmappedArray {}

impl MipmappedArray {
    /// A `width × height` array of `levels` mip levels in `format`, stored as `storage`;
    /// `sparse` creates it with `CUDA_ARRAY3D_SPARSE` (no memory until tiles are mapped),
    /// otherwise all its memory is allocated now.
    pub fn new(
        ctx: &Arc<CudaContext>,
        width: u32,
        height: u32,
        levels: u32,
        format: TexelFormat,
        storage: TexelStorage,
        sparse: bool,
    ) -> Result<Arc<MipmappedArray>> {
        if width == 0 || height == 0 || levels == 0 {
            return Err(Error::InvalidArgument(format!(
                "a {width}×{height} array of {levels} levels"
            )));
        }
        let (array_format, channels) = stored_array_format(format, storage)?;
        let desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: width as usize,
            Height: height as usize,
            Depth: 0,
            Format: array_format,
            NumChannels: channels,
            Flags: if sparse { sys::CUDA_ARRAY3D_SPARSE } else { 0 },
        };
        bind(ctx)?;
        let mut raw: sys::CUmipmappedArray = std::ptr::null_mut();
        // SAFETY: `desc` is a valid 2D descriptor (Depth 0); the driver writes one handle.
        drv("cuMipmappedArrayCreate", || unsafe {
            sys::cuMipmappedArrayCreate(&mut raw, &desc, levels)
        })?;
        let mut array = MipmappedArray {
            raw,
            levels: Vec::with_capacity(levels as usize),
            level_sizes: Vec::with_capacity(levels as usize),
            format,
            storage,
            sparse,
            ctx: ctx.clone(),
        };
        for level in 0..levels {
            let mut handle: sys::CUarray = std::ptr::null_mut();
            // SAFETY: `raw` is the live array created above and `level < levels`.
            drv("cuMipmappedArrayGetLevel", || unsafe {
                sys::cuMipmappedArrayGetLevel(&mut handle, raw, level)
            })?;
            array.levels.push(handle);
            array
                .level_sizes
                .push(((width >> level).max(1), (height >> level).max(1)));
        }
        Ok(Arc::new(array))
    }

    /// The raw handle (valid while `self` lives).
    pub fn raw(&self) -> sys::CUmipmappedArray {
        self.raw
    }

    /// The context the array lives in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The texel format.
    pub fn format(&self) -> TexelFormat {
        self.format
    }

    /// How the texels are stored.
    pub fn storage(&self) -> TexelStorage {
        self.storage
    }

    /// The array's elements (texels or blocks): what a copy's rows are made of.
    pub fn elements(&self) -> Elements {
        Elements::of(self.format, self.storage)
    }

    /// Whether the array was created sparse.
    pub fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// Number of mip levels.
    pub fn num_levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Width and height of `level` (the usual `max(1, size >> level)`).
    pub fn level_size(&self, level: u32) -> Option<(u32, u32)> {
        self.level_sizes.get(level as usize).copied()
    }

    /// Check that `rect` lies inside its level; returns the level's array handle.
    fn level_for(&self, rect: &LevelRect) -> Result<sys::CUarray> {
        let (w, h) = self.level_size(rect.level).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "level {} of an array of {} levels",
                rect.level,
                self.levels.len()
            ))
        })?;
        let inside = rect.width > 0
            && rect.height > 0
            && rect.x as u64 + rect.width as u64 <= w as u64
            && rect.y as u64 + rect.height as u64 <= h as u64;
        if !inside {
            return Err(Error::InvalidArgument(format!(
                "{rect:?} is not inside level {} ({w}×{h})",
                rect.level
            )));
        }
        Ok(self.levels[rect.level as usize])
    }

    /// The copy descriptor between host memory at `host` (rows `pitch` bytes apart) and
    /// `rect` of the array, in the direction `to_array`.
    fn copy_desc(
        &self,
        rect: &LevelRect,
        host: *mut u8,
        pitch: usize,
        to_array: bool,
    ) -> Result<sys::CUDA_MEMCPY2D> {
        let array = self.level_for(rect)?;
        let e = self.elements();
        if (rect.x | rect.y) & ((1 << e.shift) - 1) != 0 {
            return Err(Error::InvalidArgument(format!(
                "{rect:?} does not start on a 4×4 block"
            )));
        }
        let row_bytes = e.row_bytes(rect.width);
        if pitch < row_bytes {
            return Err(Error::InvalidArgument(format!(
                "a pitch of {pitch} bytes for rows of {row_bytes}"
            )));
        }
        let at = (
            (rect.x >> e.shift) as usize * e.bytes,
            (rect.y >> e.shift) as usize,
        );
        Ok(memcpy2d_desc(
            array,
            at,
            host,
            pitch,
            (row_bytes, e.count(rect.height) as usize),
            to_array,
        ))
    }

    /// Bytes a host buffer of `rect` with rows (of texels, or of blocks) `pitch` apart must
    /// have.
    pub fn host_bytes(&self, rect: &LevelRect, pitch: usize) -> usize {
        let e = self.elements();
        pitch * (e.count(rect.height) as usize).saturating_sub(1) + e.row_bytes(rect.width)
    }

    /// Copy `src` (rows `pitch` bytes apart) into `rect`, synchronously. In a sparse array
    /// the tiles under `rect` must be mapped.
    pub fn write(&self, rect: &LevelRect, src: &[u8], pitch: usize) -> Result<()> {
        let d = self.copy_desc(rect, src.as_ptr() as *mut u8, pitch, true)?;
        if src.len() < self.host_bytes(rect, pitch) {
            return Err(Error::InvalidArgument(format!(
                "{} bytes for {rect:?} with a pitch of {pitch}",
                src.len()
            )));
        }
        bind(&self.ctx)?;
        // SAFETY: the descriptor reads `host_bytes` ≤ `src.len()` bytes of `src`, which
        // outlives this synchronous copy, and writes inside the level (checked above).
        drv("cuMemcpy2D_v2", || unsafe { sys::cuMemcpy2D_v2(&d) })
    }

    /// Copy `rect` into `dst` (rows `pitch` bytes apart), synchronously. Unmapped parts of
    /// a sparse array read as zeros.
    pub fn read(&self, rect: &LevelRect, dst: &mut [u8], pitch: usize) -> Result<()> {
        let d = self.copy_desc(rect, dst.as_mut_ptr(), pitch, false)?;
        if dst.len() < self.host_bytes(rect, pitch) {
            return Err(Error::InvalidArgument(format!(
                "{} bytes for {rect:?} with a pitch of {pitch}",
                dst.len()
            )));
        }
        bind(&self.ctx)?;
        // SAFETY: the descriptor writes `host_bytes` ≤ `dst.len()` bytes of `dst`, which
        // outlives this synchronous copy, and reads inside the level (checked above).
        drv("cuMemcpy2D_v2", || unsafe { sys::cuMemcpy2D_v2(&d) })
    }

    /// Enqueue a copy of host memory at `src` (rows `pitch` bytes apart) into `rect` on
    /// `stream`.
    ///
    /// # Safety
    /// `src` must point to at least [`host_bytes`](Self::host_bytes)`(rect, pitch)`
    /// readable bytes of page-locked host memory that stay valid and unchanged until the
    /// copy completes on `stream` (e.g. a [`crate::staging::StagingRing`] slot, kept until
    /// its fence completes). In a sparse array the tiles under `rect` must be mapped before
    /// the copy runs (a map enqueued earlier on the same stream is).
    pub unsafe fn write_async(
        &self,
        stream: &CudaStream,
        rect: &LevelRect,
        src: *const u8,
        pitch: usize,
    ) -> Result<()> {
        let d = self.copy_desc(rect, src as *mut u8, pitch, true)?;
        bind(&self.ctx)?;
        // SAFETY: the caller keeps `src` valid until the copy completes; the destination
        // lies inside the level (checked by `copy_desc`).
        drv("cuMemcpy2DAsync_v2", || unsafe {
            sys::cuMemcpy2DAsync_v2(&d, stream.cu_stream())
        })
    }
}

impl Drop for MipmappedArray {
    fn drop(&mut self) {
        // Mapped tiles need not be unmapped first: destroying the array drops its mappings
        // (the tile memory itself belongs to the pool).
        let raw = self.raw;
        let result = bind(&self.ctx).and_then(|_| {
            // SAFETY: `raw` is the live handle created in `new`, destroyed only here.
            drv("cuMipmappedArrayDestroy", || unsafe {
                sys::cuMipmappedArrayDestroy(raw)
            })
        });
        if let Err(e) = result {
            tracing::warn!("destroying a CUDA mipmapped array: {e}");
        }
    }
}

impl std::fmt::Debug for MipmappedArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("levels", &self.level_sizes)
            .field("format", &self.format)
            .field("sparse", &self.sparse)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_descriptors_name_the_array_side_and_the_host_side() {
        use sys::CUmemorytype::{CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_HOST};
        // A fake, never dereferenced handle and host address.
        let array = 0x1000 as sys::CUarray;
        let host = 0x2000 as *mut u8;
        let up = memcpy2d_desc(array, (512, 7), host, 640, (416, 44), true);
        assert_eq!(up.srcMemoryType, CU_MEMORYTYPE_HOST);
        assert_eq!((up.srcHost as usize, up.srcPitch), (0x2000, 640));
        assert_eq!((up.srcXInBytes, up.srcY), (0, 0));
        assert_eq!(up.dstMemoryType, CU_MEMORYTYPE_ARRAY);
        assert_eq!(up.dstArray, array);
        assert_eq!((up.dstXInBytes, up.dstY), (512, 7));
        assert_eq!((up.WidthInBytes, up.Height), (416, 44));
        let down = memcpy2d_desc(array, (512, 7), host, 640, (416, 44), false);
        assert_eq!(down.srcMemoryType, CU_MEMORYTYPE_ARRAY);
        assert_eq!(down.srcArray, array);
        assert_eq!((down.srcXInBytes, down.srcY), (512, 7));
        assert_eq!(down.dstMemoryType, CU_MEMORYTYPE_HOST);
        assert_eq!((down.dstHost as usize, down.dstPitch), (0x2000, 640));
        assert_eq!((down.dstXInBytes, down.dstY), (0, 0));
        assert_eq!((down.WidthInBytes, down.Height), (416, 44));
    }

    #[test]
    fn formats_map_to_cuda_array_formats() {
        let f = |t, c| array_format(TexelFormat::new(t, c).unwrap());
        assert_eq!(
            f(TexelType::U8, 4),
            (CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8, 4)
        );
        assert_eq!(
            f(TexelType::U16, 1),
            (CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16, 1)
        );
        assert_eq!(f(TexelType::F16, 2), (CUarray_format::CU_AD_FORMAT_HALF, 2));
        assert_eq!(
            f(TexelType::F32, 4),
            (CUarray_format::CU_AD_FORMAT_FLOAT, 4)
        );
    }

    #[test]
    fn words_keep_the_texel_size_in_32_bit_integers() {
        let words =
            |t, c| stored_array_format(TexelFormat::new(t, c).unwrap(), TexelStorage::Words);
        assert_eq!(
            words(TexelType::F32, 4).unwrap(),
            (CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32, 4)
        );
        assert_eq!(
            words(TexelType::U8, 4).unwrap(),
            (CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32, 1)
        );
        assert!(
            words(TexelType::U16, 1).is_err(),
            "2-byte texels are no word"
        );
        assert_eq!(
            stored_array_format(TexelFormat::RGBA16F, TexelStorage::Colours).unwrap(),
            array_format(TexelFormat::RGBA16F)
        );
    }

    #[test]
    fn blocks_are_bc_arrays_whose_elements_are_blocks() {
        use demandtex::textures::{BlockCodec, BLOCK_CODECS};
        let (f, c) = block_array_format(BlockCodec::Bc1);
        assert_eq!((f, c), (CUarray_format::CU_AD_FORMAT_BC1_UNORM, 4));
        assert_eq!(
            block_array_format(BlockCodec::Bc4 { signed: true }),
            (CUarray_format::CU_AD_FORMAT_BC4_SNORM, 1)
        );
        assert_eq!(
            block_array_format(BlockCodec::Bc5 { signed: false }),
            (CUarray_format::CU_AD_FORMAT_BC5_UNORM, 2)
        );
        assert_eq!(
            block_array_format(BlockCodec::Bc6h { signed: false }),
            (CUarray_format::CU_AD_FORMAT_BC6H_UF16, 3)
        );
        for codec in BLOCK_CODECS {
            let storage = TexelStorage::Blocks(codec);
            assert_eq!(
                stored_array_format(codec.served_format(), storage).unwrap(),
                block_array_format(codec)
            );
            let e = Elements::of(codec.served_format(), storage);
            assert_eq!((e.shift, e.bytes), (2, codec.block_bytes()));
            assert_eq!(e.count(5), 2);
            assert_eq!(e.row_bytes(1), codec.block_bytes());
        }
        let t = Elements::of(TexelFormat::RGBA16F, TexelStorage::Colours);
        assert_eq!(
            (t.shift, t.bytes, t.count(5), t.row_bytes(5)),
            (0, 8, 5, 40)
        );
        let layout =
            demandtex::textures::TextureLayout::with_blocks(64, 64, 7, BlockCodec::Bc7).unwrap();
        assert_eq!(
            TexelStorage::of(&layout, false),
            TexelStorage::Blocks(BlockCodec::Bc7)
        );
        let texels =
            demandtex::textures::TextureLayout::new(64, 64, 7, TexelFormat::RGBA8).unwrap();
        assert_eq!(TexelStorage::of(&texels, true), TexelStorage::Words);
        assert_eq!(TexelStorage::of(&texels, false), TexelStorage::Colours);
    }
}
