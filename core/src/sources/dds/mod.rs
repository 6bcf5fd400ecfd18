//! DDS image source: game-style textures with BC1–BC7 blocks or plain texels, as
//! DirectXTex's `texconv`, NVIDIA Texture Tools, Compressonator, Pillow, ImageMagick or
//! `demandtex convert --format dds-…` (the CLI's encoder) write them.
//!
//! The header is read once, at [`ImageSource::open`] ([`DdsLayout`]): legacy headers
//! (FourCC `DXT1`–`DXT5`, `ATI1`/`ATI2`, `BC4U`/`BC4S`/`BC5U`/`BC5S`, the float FourCC codes,
//! RGB(A) and luminance pixel masks) and DX10 headers (DXGI formats). A read fetches the
//! rows of blocks (or texels) its region covers with positioned reads, one per row of
//! blocks (or one for the whole region when its rows are adjacent in the file), and
//! decodes them on the calling thread with no lock ([`encoding`]; blocks with the
//! `bcdec_rs` crate).
//!
//! Served formats ([`DdsEncoding::served_format`]): BC1, BC2, BC3 and BC7 as 8-bit RGBA,
//! BC4 / BC5 as 8-bit R / RG (float when signed), BC6H as half RGBA, plain texels as
//! stored (three channels widened to four, BGR(A/X) reordered). A file storing blocks at
//! every level also serves them as stored ([`ImageSource::block_codec`],
//! [`ImageSource::read_blocks`]): a loader keeping blocks holds those in its pages, 4× to
//! 8× the texels of decoded 8-bit RGBA (see `docs/FORMATS.md`, "Pages that keep blocks").
//! sRGB-flagged formats are served as stored, like 8-bit PNG.
//!
//! Stored mip levels have demandtex's sizes (DDS rounds down too); levels past the last
//! stored one — all but level 0 for a DDS without mips — are generated in memory from it
//! when first read (with a warning; within [`SizeLimits::max_image_bytes`], and held only
//! while the loader fills their pages, charged to the budget:
//! [`ImageSource::whole_decode`]). Cube maps, volumes and texture arrays are refused
//! with a clear error, as are formats not listed above. A file changed on disk after it
//! was opened fails its reads until the texture is invalidated, as for OpenEXR.

pub mod encoding;
pub mod header;

#[cfg(test)]
mod block_tests;
#[cfg(test)]
mod tests;

pub use encoding::{BlockCodec, DdsEncoding, PlainTexels};
pub use header::{DdsLayout, DdsLevel, DDS_MAGIC};

use super::exr::mips::GeneratedLevels;
use super::exr::OpenFile;
use super::file_backed::{FileBacked, Parsed};
use super::region::{check_block_read, check_read, full_chain_info};
use super::{FileHandles, ImageInfo, ImageSource, Readiness, SizeLimits, SourceError};
use crate::textures::TileRegion;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How a [`DdsSource`] reads its file.
#[derive(Clone, Debug)]
pub struct DdsOptions {
    /// The set of open files this source draws from.
    pub handles: Arc<FileHandles>,
    /// Threads that generate missing mip levels (0 = one per core).
    pub mip_threads: usize,
    /// What the file may make the source allocate (level 0, generated levels).
    pub limits: SizeLimits,
}

impl Default for DdsOptions {
    fn default() -> Self {
        DdsOptions {
            handles: FileHandles::default_shared(),
            mip_threads: 0,
            limits: SizeLimits::default(),
        }
    }
}

/// Counters of one [`DdsSource`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DdsSourceStats {
    /// Blocks decoded (plain texels: 0).
    pub blocks_decoded: u64,
    /// Bytes read from the file for tiles.
    pub bytes_read: u64,
    /// Positioned reads made for them.
    pub reads: u64,
}

/// A DDS file as an [`ImageSource`]. See the [module documentation](self).
pub struct DdsSource {
    file: FileBacked<Opened>,
    options: DdsOptions,
    blocks_decoded: AtomicU64,
    bytes_read: AtomicU64,
    reads: AtomicU64,
}

/// What `open` learnt about the file.
struct Opened {
    layout: DdsLayout,
    info: ImageInfo,
    /// Levels `0..stored_levels` come from the file; the rest are generated.
    stored_levels: u32,
    generated: GeneratedLevels,
}

/// The stored rows a region covers, as [`DdsSource::read_rows`] read them: units (blocks
/// or texels) `c0..=c1` of rows `r0..`, `span` bytes a row.
struct StoredRows {
    c0: u32,
    c1: u32,
    r0: u32,
    span: usize,
    unit_bytes: usize,
}

impl Opened {
    /// The codec, when the file stores blocks at every level.
    fn block_codec(&self) -> Option<BlockCodec> {
        match self.layout.encoding {
            DdsEncoding::Blocks(codec) if self.stored_levels == self.info.num_levels => Some(codec),
            _ => None,
        }
    }
}

thread_local! {
    /// Each thread's buffer of stored bytes.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

impl std::fmt::Debug for DdsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DdsSource")
            .field("path", &self.file.path())
            .field("opened", &self.file.current().map(|o| o.value.info))
            .finish_non_exhaustive()
    }
}

impl DdsSource {
    /// A source for the DDS file at `path` with default options. Lazy: the file is not
    /// touched until [`ImageSource::open`].
    pub fn new(path: impl Into<PathBuf>) -> DdsSource {
        DdsSource::with_options(path, DdsOptions::default())
    }

    /// A source for the DDS file at `path` with `options`. Lazy, as [`DdsSource::new`].
    pub fn with_options(path: impl Into<PathBuf>, options: DdsOptions) -> DdsSource {
        DdsSource {
            file: FileBacked::new(path.into(), options.handles.clone()),
            options,
            blocks_decoded: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file's header (opens the file if it was not yet).
    pub fn layout(&self) -> Result<DdsLayout, SourceError> {
        Ok(self.opened()?.value.layout.clone())
    }

    /// Blocks decoded, bytes and reads so far.
    pub fn stats(&self) -> DdsSourceStats {
        DdsSourceStats {
            blocks_decoded: self.blocks_decoded.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
        }
    }

    fn opened(&self) -> Result<Arc<Parsed<Opened>>, SourceError> {
        self.file
            .parsed(&|f, len| self.parse(f, len), &|o| self.warn_if_slow(o))
    }

    fn parse(&self, file: &OpenFile, len: u64) -> Result<Opened, String> {
        let mut head = vec![0u8; header::MAX_HEADER_BYTES.min(len as usize)];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| format!("cannot read the header: {e}"))?;
        let layout = DdsLayout::parse(&head, len, &self.options.limits)?;
        let info = full_chain_info(
            layout.width(),
            layout.height(),
            layout.encoding.served_format(),
        )
        .map_err(|e| e.0)?;
        let stored_levels = layout.levels.len() as u32;
        let generated: u64 = (stored_levels..info.num_levels)
            .map(|l| {
                let (w, h) = crate::textures::mip_level_size(info.width, info.height, l);
                u64::from(w) * u64::from(h) * info.format.texel_bytes() as u64
            })
            .sum();
        self.options
            .limits
            .check_image("the mip levels generated in memory", generated)?;
        Ok(Opened {
            layout,
            info,
            stored_levels,
            generated: GeneratedLevels::new(stored_levels),
        })
    }

    fn warn_if_slow(&self, o: &Opened) {
        if o.stored_levels >= o.info.num_levels {
            return;
        }
        tracing::warn!(
            "{}: a DDS with {} of {} mip levels: levels {}..{} are generated in memory from \
             level {} when first read (slow)",
            self.path().display(),
            o.stored_levels,
            o.info.num_levels,
            o.stored_levels,
            o.info.num_levels,
            o.stored_levels - 1
        );
    }

    /// Decode `region` of stored level `region.level` into `dest`.
    fn read_stored(
        &self,
        o: &Parsed<Opened>,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<(), SourceError> {
        let file = self.file.file()?;
        let mut raw = SCRATCH.take();
        let result = self.decode_region(&o.value, &file, region, dest, row_bytes, &mut raw);
        SCRATCH.set(raw);
        let unchanged = self.file.check_unchanged(o, &file);
        unchanged.and(result)
    }

    /// Read the stored rows (of blocks or texels) that `region` covers into `raw`, each
    /// cut to the span of units the region needs.
    fn read_rows(
        &self,
        o: &Opened,
        file: &OpenFile,
        region: TileRegion,
        raw: &mut Vec<u8>,
    ) -> Result<StoredRows, SourceError> {
        let level = &o.layout.levels[region.level as usize];
        let enc = o.layout.encoding;
        let unit = enc.row_unit() as u32;
        // Stored rows (of blocks or texels) and the span of each the region needs.
        let (r0, r1) = (region.y / unit, (region.y + region.height - 1) / unit);
        let (c0, c1) = (region.x / unit, (region.x + region.width - 1) / unit);
        let stored_row = enc.row_bytes(level.width) as usize;
        let unit_bytes = stored_row / level.width.div_ceil(unit) as usize;
        let span = (c1 - c0 + 1) as usize * unit_bytes;
        let rows = (r1 - r0 + 1) as usize;
        // One read when the rows are adjacent in the file (the region spans the level's
        // width), else one per row.
        let whole_rows = span == stored_row;
        raw.resize(rows * span, 0);
        let at = |r: u32| {
            level.offset + u64::from(r) * stored_row as u64 + (c0 as usize * unit_bytes) as u64
        };
        let read_error = |e: std::io::Error| {
            self.file
                .error(format_args!("cannot read level {}: {e}", region.level))
        };
        if whole_rows {
            file.read_exact_at(raw, at(r0)).map_err(read_error)?;
            self.reads.fetch_add(1, Ordering::Relaxed);
        } else {
            for (i, chunk) in raw.chunks_exact_mut(span).enumerate() {
                file.read_exact_at(chunk, at(r0 + i as u32))
                    .map_err(read_error)?;
            }
            self.reads.fetch_add(rows as u64, Ordering::Relaxed);
        }
        self.bytes_read
            .fetch_add(raw.len() as u64, Ordering::Relaxed);
        Ok(StoredRows {
            c0,
            c1,
            r0,
            span,
            unit_bytes,
        })
    }

    fn decode_region(
        &self,
        o: &Opened,
        file: &OpenFile,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        raw: &mut Vec<u8>,
    ) -> Result<(), SourceError> {
        let StoredRows {
            c0,
            c1,
            r0,
            span,
            unit_bytes,
        } = self.read_rows(o, file, region, raw)?;
        let enc = o.layout.encoding;
        let tb = o.info.format.texel_bytes();
        match enc {
            DdsEncoding::Plain(p) => {
                for (i, src) in raw.chunks_exact(span).enumerate() {
                    let d = i * row_bytes;
                    let n = region.width as usize;
                    p.convert_row(
                        &src[(region.x - c0) as usize * unit_bytes..],
                        &mut dest[d..d + n * tb],
                        n,
                    );
                }
            }
            DdsEncoding::Blocks(codec) => {
                let mut texels = [0u8; 16 * 16];
                let block_texels = &mut texels[..16 * tb];
                for (i, blocks) in raw.chunks_exact(span).enumerate() {
                    let by = (r0 + i as u32) * 4;
                    for (j, block) in blocks.chunks_exact(unit_bytes).enumerate() {
                        let bx = (c0 + j as u32) * 4;
                        codec.decode_block(block, block_texels);
                        // The block's texels inside the region.
                        let (x0, x1) = (bx.max(region.x), (bx + 4).min(region.x + region.width));
                        let (y0, y1) = (by.max(region.y), (by + 4).min(region.y + region.height));
                        let n = (x1 - x0) as usize * tb;
                        for y in y0..y1 {
                            let s = ((y - by) * 4 + (x0 - bx)) as usize * tb;
                            let d =
                                (y - region.y) as usize * row_bytes + (x0 - region.x) as usize * tb;
                            dest[d..d + n].copy_from_slice(&block_texels[s..s + n]);
                        }
                    }
                    self.blocks_decoded
                        .fetch_add((c1 - c0 + 1) as u64, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}

impl ImageSource for DdsSource {
    fn name(&self) -> String {
        self.path().display().to_string()
    }

    fn content_identity(&self) -> Option<crate::sources::ContentIdentity> {
        Some(crate::sources::ContentIdentity {
            file: self.path().to_path_buf(),
            reading: "DDS".into(),
            fingerprint: None,
        })
    }

    /// The first call describes the file parsed so far (or parses it); every later call
    /// parses the file now at the path anew.
    fn open(&self) -> Result<ImageInfo, SourceError> {
        let o = self
            .file
            .reopened(&|f, len| self.parse(f, len), &|o| self.warn_if_slow(o))?;
        Ok(o.value.info)
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let o = self.opened()?;
        let v = &o.value;
        check_read(&v.info, region, dest.len(), row_bytes).map_err(|e| self.file.error(e))?;
        if region.width == 0 || region.height == 0 {
            return Ok(Readiness::Ready);
        }
        let base_level = &v.layout.levels[v.stored_levels as usize - 1];
        let read_stored = |r: TileRegion, d: &mut [u8], rb: usize| self.read_stored(&o, r, d, rb);
        v.generated
            .read(
                &v.info,
                (base_level.width, base_level.height),
                64,
                self.options.mip_threads,
                region,
                dest,
                row_bytes,
                &read_stored,
            )
            .map_err(|e| self.file.named(e))?;
        if region.level >= v.stored_levels {
            // Generated from the file parsed: served only while it is unchanged.
            self.file.check_unchanged(&o, &*self.file.file()?)?;
        }
        Ok(Readiness::Ready)
    }

    /// The file's codec when it stores blocks for every level (a DDS lacking levels is
    /// served as texels: its generated levels are decoded texels).
    fn block_codec(&self) -> Option<BlockCodec> {
        self.opened().ok()?.value.block_codec()
    }

    fn read_blocks(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let o = self.opened()?;
        let v = &o.value;
        let Some(codec) = v.block_codec() else {
            return Err(self
                .file
                .error("blocks asked of a file not stored in blocks at every level"));
        };
        check_block_read(&v.info, codec, region, dest.len(), row_bytes)
            .map_err(|e| self.file.error(e))?;
        if region.width == 0 || region.height == 0 {
            return Ok(Readiness::Ready);
        }
        let file = self.file.file()?;
        let mut raw = SCRATCH.take();
        let result = self.read_rows(v, &file, region, &mut raw).map(|rows| {
            let n = codec.row_bytes(region.width);
            debug_assert_eq!(rows.span, n);
            for (i, src) in raw.chunks_exact(rows.span).enumerate() {
                dest[i * row_bytes..i * row_bytes + n].copy_from_slice(src);
            }
        });
        SCRATCH.set(raw);
        let unchanged = self.file.check_unchanged(&o, &file);
        unchanged.and(result)?;
        Ok(Readiness::Ready)
    }

    /// The levels the file lacks, generated in memory from its last one.
    fn whole_decode(&self) -> Option<crate::sources::WholeDecode> {
        let o = self.opened().ok()?;
        o.value.generated.whole_decode(&o.value.info)
    }

    fn release_decoded(&self) {
        if let Ok(o) = self.opened() {
            o.value.generated.release();
        }
    }

    fn spill_decoded(
        &self,
        dir: &std::path::Path,
        ledger: &crate::sources::SpillLedger,
    ) -> Result<u64, SourceError> {
        match self.opened() {
            Ok(o) => o
                .value
                .generated
                .spill(dir, ledger, &o.value.info, &self.name()),
            Err(_) => Ok(0),
        }
    }
}
