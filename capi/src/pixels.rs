//! Textures from caller-owned pixels: copied into an in-memory image, or borrowed (read in
//! place, with only the coarser mip levels generated and held by the library).

use crate::boundary::{entry, optional_in, plain_in, Out};
use crate::handles::DtexLoader;
use crate::options::DtexTextureDesc;
use crate::status::{ApiError, ApiResult, DtexStatus, DTEX_STATUS_UNSUPPORTED};
use crate::textures::{check_size, register, texel_type, DtexImageInfo};
use engine::sources::box_filter::filter_row;
use engine::sources::{check_read, ImageInfo, ImageSource, InMemoryImage, Readiness, SourceError};
use engine::textures::{full_mip_levels, TexelFormat, TileRegion};
use std::ffi::c_void;
use std::sync::Arc;

/// Pixel ownership: copied before `dtex_texture_create_from_pixels` returns.
pub const DTEX_PIXELS_COPY: u32 = 0;
/// Pixel ownership: borrowed; the caller keeps them valid and unchanged until the texture
/// is unloaded or replaced, or the loader destroyed.
pub const DTEX_PIXELS_BORROW: u32 = 1;

/// Caller-owned pixels after checking: where they are and how they are laid out.
struct PixelLayout {
    width: u32,
    height: u32,
    texel_type: engine::textures::TexelType,
    channels: u32,
    /// Bytes of one packed row.
    packed_row: usize,
    /// Bytes from one row to the next.
    row_bytes: usize,
    /// Generate the full mip chain (else level 0 only).
    mips: bool,
}

impl PixelLayout {
    fn new(info: &DtexImageInfo, row_bytes: usize) -> ApiResult<PixelLayout> {
        let bad = |m: String| ApiError::invalid_argument(format!("DtexImageInfo: {m}"));
        check_size(info.width, info.height).map_err(bad)?;
        let t = texel_type(info.texel_type).map_err(bad)?;
        if !(1..=4).contains(&info.channels) {
            return Err(bad(format!(
                "channels {} (1, 2 or 4; 3 when copied)",
                info.channels
            )));
        }
        let full = full_mip_levels(info.width, info.height);
        let mips = match info.num_levels {
            0 => true,
            1 => false,
            n if n == full => true,
            n => {
                return Err(bad(format!(
                    "num_levels {n} (0 or {full}: generate the full chain; 1: level 0 only)"
                )))
            }
        };
        let packed_row = info.width as usize * info.channels as usize * t.bytes();
        let row_bytes = if row_bytes == 0 {
            packed_row
        } else {
            row_bytes
        };
        if row_bytes < packed_row {
            return Err(ApiError::invalid_argument(format!(
                "row_bytes {row_bytes} is less than a row of {} texels ({packed_row} bytes)",
                info.width
            )));
        }
        let total = (info.height as usize - 1)
            .checked_mul(row_bytes)
            .and_then(|b| b.checked_add(packed_row))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                ApiError::invalid_argument(format!("row_bytes {row_bytes} is too large"))
            })?;
        debug_assert!(total >= packed_row);
        Ok(PixelLayout {
            width: info.width,
            height: info.height,
            texel_type: t,
            channels: info.channels,
            packed_row,
            row_bytes,
            mips,
        })
    }

    /// Row `y` of the caller's pixels.
    ///
    /// # Safety
    /// `pixels` holds `height` rows `row_bytes` apart (the last `packed_row` long), readable
    /// and unchanged for `'a`; `y < height`.
    unsafe fn row<'a>(&self, pixels: *const u8, y: usize) -> &'a [u8] {
        // SAFETY: the caller's contract; `PixelLayout::new` checked that the whole extent
        // fits in isize.
        unsafe { std::slice::from_raw_parts(pixels.add(y * self.row_bytes), self.packed_row) }
    }
}

/// Level-0 pixels read in place from caller memory; coarser levels from an in-memory image
/// generated at creation with the engine's 2:1 box filter (identical, texel for texel, to
/// what [`InMemoryImage`] generates from the same pixels).
struct BorrowedImage {
    pixels: *const u8,
    layout: PixelLayout,
    format: TexelFormat,
    /// Levels 1.. (None without mips or for a 1x1 image).
    coarser: Option<InMemoryImage>,
}

// SAFETY: the pixels are only read, and the caller promised (DTEX_PIXELS_BORROW's contract)
// that they stay valid and unchanged for the texture's life, so reads from any number of
// threads at once are sound. Everything else in the struct is Send + Sync.
unsafe impl Send for BorrowedImage {}
// SAFETY: as for Send.
unsafe impl Sync for BorrowedImage {}

impl BorrowedImage {
    fn info(&self) -> ImageInfo {
        let num_levels = 1 + self.coarser.as_ref().map_or(0, |c| c.num_levels());
        ImageInfo {
            width: self.layout.width,
            height: self.layout.height,
            format: self.format,
            num_levels,
        }
    }
}

impl ImageSource for BorrowedImage {
    fn name(&self) -> String {
        format!(
            "borrowed pixels {}x{} {}",
            self.layout.width, self.layout.height, self.format
        )
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        Ok(self.info())
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        if region.level > 0 {
            let coarser = self.coarser.as_ref().ok_or_else(|| {
                SourceError(format!("level {} of a texture without mips", region.level))
            })?;
            let r = TileRegion {
                level: region.level - 1,
                ..region
            };
            return coarser.read_region(r, dest, row_bytes);
        }
        let level0 = ImageInfo {
            num_levels: 1,
            ..self.info()
        };
        check_read(&level0, region, dest.len(), row_bytes)?;
        if region.width == 0 || region.height == 0 {
            return Ok(Readiness::Ready);
        }
        let tb = self.format.texel_bytes();
        let n = region.width as usize * tb;
        for j in 0..region.height as usize {
            // SAFETY: DTEX_PIXELS_BORROW's contract; the row index is inside the image.
            let row = unsafe { self.layout.row(self.pixels, region.y as usize + j) };
            let src = &row[region.x as usize * tb..][..n];
            dest[j * row_bytes..][..n].copy_from_slice(src);
        }
        Ok(Readiness::Ready)
    }
}

/// The 2:1 box-filtered level 1 of the caller's level 0, packed — the engine's own filter
/// ([`filter_row`]), so that borrowed and copied pixels give identical mips.
///
/// # Safety
/// As [`PixelLayout::row`] for every row.
unsafe fn level1(layout: &PixelLayout, format: TexelFormat, pixels: *const u8) -> Vec<u8> {
    let (sw, sh) = (layout.width as usize, layout.height as usize);
    let (dw, dh) = ((sw / 2).max(1), (sh / 2).max(1));
    let tb = format.texel_bytes();
    let mut out = vec![0u8; dw * dh * tb];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows_per_task = dh.div_ceil(threads).max(1);
    let pixels = SendPtr(pixels);
    std::thread::scope(|scope| {
        for (chunk_index, chunk) in out.chunks_mut(rows_per_task * dw * tb).enumerate() {
            let pixels = &pixels;
            scope.spawn(move || {
                let mut sums = Vec::with_capacity(dw);
                // SAFETY: the function's contract; the filter asks only for rows y < height.
                let src_row = |y: usize| unsafe { layout.row(pixels.0, y) };
                for (k, out_row) in chunk.chunks_mut(dw * tb).enumerate() {
                    let j = chunk_index * rows_per_task + k;
                    filter_row(format, (sw, sh), (dw, dh), j, src_row, &mut sums, out_row);
                }
            });
        }
    });
    out
}

/// A pointer shared with the scoped threads of [`level1`] (read only).
struct SendPtr(*const u8);
// SAFETY: only used for reads of memory the caller keeps valid and unchanged.
unsafe impl Sync for SendPtr {}

/// Create a texture from caller-owned level-0 pixels: `info->width x info->height` texels
/// of `info->channels` components of `info->texel_type`, little-endian, row-major, rows
/// `row_bytes` apart (0 = packed). `info->num_levels`: 0 (or the full count) generates the
/// full mip chain with a 2:1 box filter; 1 keeps level 0 only.
///
/// `ownership`: `DTEX_PIXELS_COPY` copies the pixels before returning (3 channels are
/// accepted and widened to RGBA); `DTEX_PIXELS_BORROW` reads level 0 in place (1, 2 or 4
/// channels) and keeps only the generated coarser levels (a third of level 0): the caller
/// keeps `pixels` valid and unchanged until the texture is unloaded or replaced, or the
/// loader destroyed (after `dtex_loader_destroy` returns they may be freed). Mips are
/// generated now, in both modes. `desc` NULL means `dtex_texture_desc_default`.
///
/// Errors: INVALID_HANDLE; INVALID_ARGUMENT (NULL pointer, bad info, `row_bytes` shorter
/// than a row, bad `ownership` or `desc`); UNSUPPORTED (3 channels borrowed);
/// OUT_OF_PAGES. Ownership: as `ownership` says; `info` and `desc` are not kept.
/// Thread-safety: any thread.
///
/// # Safety
/// `info` is NULL or points to a `DtexImageInfo`; `pixels` is NULL or points to `height`
/// rows `row_bytes` apart as described; `desc` is NULL or points to a `DtexTextureDesc`;
/// `out_texture` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_create_from_pixels(
    loader: DtexLoader,
    info: *const DtexImageInfo,
    pixels: *const c_void,
    row_bytes: usize,
    ownership: u32,
    desc: *const DtexTextureDesc,
    out_texture: *mut u32,
) -> DtexStatus {
    entry(|| {
        // SAFETY: the caller's contract (pointers other than `pixels`).
        let (out, info, desc) = unsafe {
            (
                Out::new(out_texture, "out_texture")?,
                plain_in(info, "info")?,
                optional_in(desc)?,
            )
        };
        if pixels.is_null() {
            return Err(crate::boundary::null_argument("pixels"));
        }
        let pixels = pixels as *const u8;
        crate::loader::get(loader)?;
        // Check the description before the (possibly long) copy or mip generation.
        DtexTextureDesc::resolve(desc, Default::default())?;
        let layout = PixelLayout::new(info, row_bytes)?;
        let source: Arc<dyn ImageSource> = match ownership {
            DTEX_PIXELS_COPY => {
                let mut data = Vec::with_capacity(layout.packed_row * layout.height as usize);
                for y in 0..layout.height as usize {
                    // SAFETY: the caller's contract for `pixels`, checked extent.
                    data.extend_from_slice(unsafe { layout.row(pixels, y) });
                }
                Arc::new(InMemoryImage::new(
                    layout.width,
                    layout.height,
                    layout.texel_type,
                    layout.channels,
                    data,
                    layout.mips,
                )?)
            }
            DTEX_PIXELS_BORROW => {
                let format =
                    TexelFormat::new(layout.texel_type, layout.channels).map_err(|_| {
                        ApiError::new(
                            DTEX_STATUS_UNSUPPORTED,
                            format!(
                                "{} channels cannot be borrowed (1, 2 or 4; copy 3-channel pixels)",
                                layout.channels
                            ),
                        )
                    })?;
                let coarser = if layout.mips && (layout.width > 1 || layout.height > 1) {
                    // SAFETY: the caller's contract for `pixels`, checked extent.
                    let data = unsafe { level1(&layout, format, pixels) };
                    let (w1, h1) = ((layout.width / 2).max(1), (layout.height / 2).max(1));
                    Some(InMemoryImage::new(
                        w1,
                        h1,
                        format.texel_type,
                        format.channels,
                        data,
                        true,
                    )?)
                } else {
                    None
                };
                Arc::new(BorrowedImage {
                    pixels,
                    layout,
                    format,
                    coarser,
                })
            }
            o => {
                return Err(ApiError::invalid_argument(format!(
                    "ownership {o} (DTEX_PIXELS_COPY 0 or DTEX_PIXELS_BORROW 1)"
                )))
            }
        };
        out.write(register(loader, source, desc)?);
        Ok(())
    })
}
