//! TIFF image source, for the `.tx` files OpenImageIO's `maketx` writes (tiled,
//! mip-mapped TIFF) and plain TIFF images, with random access to tiles.
//!
//! The header and the offset tables of every level are read once, at
//! [`ImageSource::open`] ([`TiffLayout`]); afterwards a read fetches the chunks (tiles, or
//! strips) its region covers with positioned reads — chunks that lie next to each other in
//! the file in one read — and decodes them, from any number of threads at once, with no
//! lock around I/O or decoding. A 64 KiB page of `maketx`'s 64×64 tiles gathers the 2–16
//! file tiles it covers and nothing else. Open files come from a bounded [`FileHandles`]
//! set, shared with the OpenEXR sources.
//!
//! Served: 8/16-bit unsigned and 16/32-bit float samples, 1/2/4-bit unsigned ones unpacked
//! to 8 bits (grey scaled `v · 255 / max`, as OpenImageIO does; palette indices as they
//! are; a chunk of FillOrder 2 has its bits reversed first), 8/16-bit signed ones as float
//! (`v / max`, as OpenImageIO converts them: `maketx --prman` writes 16-bit textures
//! signed), 1–4 channels (three widened to four with an alpha of 1; of more, the first
//! four, with a warning), interleaved or separate planes, no compression, ZIP, LZW,
//! PackBits or JPEG (8-bit grey, RGB or YCbCr, as `maketx --compression jpeg` writes),
//! with the horizontal or floating-point predictor, either byte order, classic TIFF or
//! BigTIFF. Unassociated alpha (ExtraSamples 2) is associated as OpenImageIO associates it
//! on read (`sources/associate.rs`). Palette images (1 to 8-bit indices) are served as
//! RGBA8 from their colour map, white-is-zero grey inverted, and CMYK separations as RGB,
//! as OpenImageIO reads them ([`StoredColour`]). The mip chain is read as `maketx` writes it
//! (see [`layout`]); stored levels must have demandtex's sizes (rounded down, as
//! `maketx`'s are); the levels after the last matching one — all but level 0 for a TIFF
//! without mips, or with strips — are generated in memory from it when first read, as for
//! scan-line OpenEXR files (with a warning; within [`SizeLimits::max_image_bytes`], and
//! held only while the loader fills their pages, charged to the budget:
//! [`ImageSource::whole_decode`]).
//!
//! OIIO's texture metadata ([`TxMetadata`]): `oiio:ConstantColor`, else
//! `oiio:AverageColor`, is the base colour ([`ImageSource::read_base_color`]) with no read;
//! the wrap modes are what [`AddressMode::FromFile`](crate::textures::AddressMode::FromFile)
//! samples with ([`ImageSource::address_modes`]); maketx's fingerprint (`oiio:SHA-1`) is
//! part of the source's [`ContentIdentity`](crate::sources::ContentIdentity), so that
//! files of one source share tiles ([`crate::sources::identity`]).
//!
//! Not served, with an error naming the file: 32-bit integer or 64-bit float samples,
//! sub-byte samples with a predictor, separations other than 8/16-bit CMYK, YCbCr other than in
//! JPEG chunks, other compressions, volume textures.
//! A file changed on disk after it was opened fails its reads until the texture is
//! invalidated, as for OpenEXR ([`crate::sources::exr`]).

mod decode;
mod ifd;
pub mod layout;

#[cfg(test)]
mod tests;

pub use layout::{
    SampleLayout, StoredColour, TiffCompression, TiffLayout, TiffLevel, TiffPredictor, TxMetadata,
};

use super::exr::mips::GeneratedLevels;
use super::exr::OpenFile;
use super::file_backed::{FileBacked, Parsed};
use super::region::{check_read, full_chain_info};
use super::{FileHandles, ImageInfo, ImageSource, Readiness, SizeLimits, SourceError};
use crate::textures::{mip_level_size, TileRegion};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How a [`TiffSource`] reads its file.
#[derive(Clone, Debug)]
pub struct TiffOptions {
    /// The set of open files this source draws from.
    pub handles: Arc<FileHandles>,
    /// Threads that generate missing mip levels (0 = one per core).
    pub mip_threads: usize,
    /// What the file may make the source allocate (one decoded chunk, generated levels).
    pub limits: SizeLimits,
    /// Warn, at open, when levels will be generated in memory (a TIFF without mip levels):
    /// on for textures; off for a tool that reads level 0 only (`demandtex convert`).
    pub warn_generated_levels: bool,
}

impl Default for TiffOptions {
    fn default() -> Self {
        TiffOptions {
            handles: FileHandles::default_shared(),
            mip_threads: 0,
            limits: SizeLimits::default(),
            warn_generated_levels: true,
        }
    }
}

/// Counters of one [`TiffSource`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TiffSourceStats {
    /// Chunks (tiles or strips, one per plane) read and decoded.
    pub chunks_decoded: u64,
    /// Compressed bytes read for them.
    pub compressed_bytes_read: u64,
    /// Positioned reads made for them (adjacent chunks share one).
    pub reads: u64,
}

/// A TIFF (`.tx`) file as an [`ImageSource`]. See the [module documentation](self).
pub struct TiffSource {
    file: FileBacked<Opened>,
    options: TiffOptions,
    chunks_decoded: AtomicU64,
    compressed_bytes: AtomicU64,
    reads: AtomicU64,
}

/// What `open` learnt about the file.
struct Opened {
    layout: TiffLayout,
    info: ImageInfo,
    /// Levels `0..stored_levels` come from the file; the rest are generated.
    stored_levels: u32,
    generated: GeneratedLevels,
}

thread_local! {
    /// Each thread's buffers: compressed bytes, decoded planes.
    static SCRATCH: Cell<(Vec<u8>, Vec<Vec<u8>>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

impl std::fmt::Debug for TiffSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiffSource")
            .field("path", &self.file.path())
            .field("opened", &self.file.current().map(|o| o.value.info))
            .finish_non_exhaustive()
    }
}

impl TiffSource {
    /// A source for the TIFF file at `path` with default options. Lazy: the file is not
    /// touched until [`ImageSource::open`].
    pub fn new(path: impl Into<PathBuf>) -> TiffSource {
        TiffSource::with_options(path, TiffOptions::default())
    }

    /// A source for the TIFF file at `path` with `options`. Lazy, as [`TiffSource::new`].
    pub fn with_options(path: impl Into<PathBuf>, options: TiffOptions) -> TiffSource {
        TiffSource {
            file: FileBacked::new(path.into(), options.handles.clone()),
            options,
            chunks_decoded: AtomicU64::new(0),
            compressed_bytes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file's structure (opens the file if it was not yet).
    pub fn layout(&self) -> Result<TiffLayout, SourceError> {
        Ok(self.opened()?.value.layout.clone())
    }

    /// OIIO's texture metadata (opens the file if it was not yet).
    pub fn metadata(&self) -> Result<TxMetadata, SourceError> {
        Ok(self.opened()?.value.layout.metadata.clone())
    }

    /// How many levels, from the finest, come from the file (the rest are generated).
    pub fn stored_levels(&self) -> Result<u32, SourceError> {
        Ok(self.opened()?.value.stored_levels)
    }

    /// Chunks decoded, bytes and reads so far.
    pub fn stats(&self) -> TiffSourceStats {
        TiffSourceStats {
            chunks_decoded: self.chunks_decoded.load(Ordering::Relaxed),
            compressed_bytes_read: self.compressed_bytes.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
        }
    }

    fn opened(&self) -> Result<Arc<Parsed<Opened>>, SourceError> {
        self.file
            .parsed(&|f, len| self.parse(f, len), &|o| self.warn_if_slow(o))
    }

    fn parse(&self, file: &OpenFile, len: u64) -> Result<Opened, String> {
        let reader = ifd::Reader::new(file, len)?;
        let layout = TiffLayout::parse(&reader, &self.options.limits)?;
        let l0 = &layout.levels[0];
        let info =
            full_chain_info(l0.width, l0.height, layout.samples.format()).map_err(|e| e.0)?;
        let stored_levels = layout
            .levels
            .iter()
            .take(info.num_levels as usize)
            .enumerate()
            .take_while(|&(l, lv)| {
                lv.tiled
                    && mip_level_size(info.width, info.height, l as u32) == (lv.width, lv.height)
            })
            .count()
            .max(1) as u32;
        let generated: u64 = (stored_levels..info.num_levels)
            .map(|l| {
                let (w, h) = mip_level_size(info.width, info.height, l);
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
        let s = &o.layout.samples;
        if s.samples > s.read_samples() {
            tracing::warn!(
                "{}: {} samples per pixel: the first {} are served",
                self.path().display(),
                s.samples,
                s.read_samples()
            );
        }
        if o.stored_levels >= o.info.num_levels || !self.options.warn_generated_levels {
            return;
        }
        let why = if !o.layout.levels[0].tiled {
            "a TIFF of strips (no tiles, no mip levels)"
        } else if o.layout.levels.len() == 1 {
            "a tiled TIFF without mip levels"
        } else {
            "a TIFF whose mip levels do not have demandtex's sizes (rounded down)"
        };
        tracing::warn!(
            "{}: {why}: levels {}..{} are generated in memory from level {} when first read \
             (slow). Make a texture of it with \
             `maketx` or `demandtex convert`.",
            self.path().display(),
            o.stored_levels,
            o.info.num_levels,
            o.stored_levels - 1
        );
    }

    /// Copy `region` of stored level `region.level` from every chunk it covers.
    fn read_stored(
        &self,
        o: &Parsed<Opened>,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<(), SourceError> {
        let file = self.file.file()?;
        let (mut raw, mut planes) = SCRATCH.take();
        let result = self.copy_chunks(
            &o.value,
            &file,
            region,
            dest,
            row_bytes,
            &mut raw,
            &mut planes,
        );
        SCRATCH.set((raw, planes));
        let unchanged = self.file.check_unchanged(o, &file);
        unchanged.and(result)
    }

    #[allow(clippy::too_many_arguments)]
    fn copy_chunks(
        &self,
        o: &Opened,
        file: &OpenFile,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        raw: &mut Vec<u8>,
        planes: &mut Vec<Vec<u8>>,
    ) -> Result<(), SourceError> {
        let s = &o.layout.samples;
        let level = &o.layout.levels[region.level as usize];
        let (across, down) = level.chunks();
        let (cw, ch) = (level.chunk_w as usize, level.chunk_h as usize);
        let per_plane = (across * down) as usize;
        // Separate planes: only the ones served from are read.
        let n_planes = if s.separate {
            s.read_samples() as usize
        } else {
            1
        };
        let per_pixel = if s.separate { 1 } else { s.samples as usize };
        let tb = o.info.format.texel_bytes();
        let (x0, y0) = (region.x as usize, region.y as usize);
        let (x1, y1) = (x0 + region.width as usize, y0 + region.height as usize);
        let (cx0, cx1) = (x0 / cw, (x1 - 1) / cw);
        planes.resize_with(n_planes, Vec::new);
        for cy in y0 / ch..=(y1 - 1) / ch {
            let rows = level.chunk_rows(cy as u32) as usize;
            // Every chunk of this row of chunks, every plane: read runs of adjacent chunks
            // at once.
            let ids: Vec<usize> = (0..n_planes)
                .flat_map(|p| (cx0..=cx1).map(move |cx| p * per_plane + cy * across as usize + cx))
                .collect();
            let mut starts = Vec::with_capacity(ids.len());
            // `raw[..used]` holds this row's chunks; the buffer only grows (its bytes are
            // overwritten by each read, never zeroed again).
            let mut used = 0;
            let mut k = 0;
            while k < ids.len() {
                let first = ids[k];
                let mut end = level.offsets[first] + level.byte_counts[first];
                let mut last = k;
                while last + 1 < ids.len() && level.offsets[ids[last + 1]] == end {
                    last += 1;
                    end += level.byte_counts[ids[last]];
                }
                let at = used;
                let len = (end - level.offsets[first]) as usize;
                used += len;
                if raw.len() < used {
                    raw.resize(used, 0);
                }
                file.read_exact_at(&mut raw[at..used], level.offsets[first])
                    .map_err(|e| {
                        self.file.error(format_args!(
                            "cannot read level {} chunks: {e}",
                            region.level
                        ))
                    })?;
                self.reads.fetch_add(1, Ordering::Relaxed);
                self.compressed_bytes
                    .fetch_add(len as u64, Ordering::Relaxed);
                let mut pos = at;
                for &id in &ids[k..=last] {
                    starts.push(pos);
                    pos += level.byte_counts[id] as usize;
                }
                k = last + 1;
            }
            let chunk_bytes = cw * rows * per_pixel * s.sample_bytes();
            // Samples of fewer than 8 bits: decompressed here, then unpacked into `buf`.
            let mut packed = Vec::new();
            for (i, cx) in (cx0..=cx1).enumerate() {
                for (p, buf) in planes.iter_mut().enumerate() {
                    let slot = p * (cx1 - cx0 + 1) + i;
                    let id = ids[slot];
                    let mut input =
                        &raw[starts[slot]..starts[slot] + level.byte_counts[id] as usize];
                    let reversed: Vec<u8>;
                    if s.lsb_first {
                        reversed = input.iter().map(|b| b.reverse_bits()).collect();
                        input = &reversed;
                    }
                    buf.resize(chunk_bytes, 0);
                    let shape = decode::ChunkShape {
                        width: cw,
                        height: rows,
                        samples: per_pixel,
                        jpeg_tables: &level.jpeg_tables,
                    };
                    let out = if s.bits < 8 {
                        packed.resize(rows * s.stored_row_bytes(cw, per_pixel), 0);
                        &mut packed[..]
                    } else {
                        &mut buf[..]
                    };
                    decode::decompress(s.compression, input, shape, out).map_err(|e| {
                        self.file.error(format_args!(
                            "level {} chunk ({cx}, {cy}) plane {p}: {e}",
                            region.level
                        ))
                    })?;
                    if s.bits < 8 {
                        decode::unpack(s, &packed, cw * per_pixel, buf);
                    }
                    decode::unpredict(s, buf, cw, per_pixel);
                    self.chunks_decoded.fetch_add(1, Ordering::Relaxed);
                }
                let (bx0, by0) = (cx * cw, cy * ch);
                let (ix0, iy0) = (x0.max(bx0), y0.max(by0));
                let (ix1, iy1) = (x1.min(bx0 + cw), y1.min(by0 + rows));
                let rect = decode::Rect {
                    chunk_w: cw,
                    sx: ix0 - bx0,
                    sy: iy0 - by0,
                    w: ix1 - ix0,
                    h: iy1 - iy0,
                    dest_at: (iy0 - y0) * row_bytes + (ix0 - x0) * tb,
                    row_bytes,
                };
                let views: Vec<&[u8]> = planes.iter().map(Vec::as_slice).collect();
                decode::copy(s, &o.layout.palette, &views, rect, dest);
            }
        }
        Ok(())
    }
}

impl ImageSource for TiffSource {
    fn name(&self) -> String {
        self.path().display().to_string()
    }

    fn content_identity(&self) -> Option<crate::sources::ContentIdentity> {
        Some(crate::sources::ContentIdentity {
            file: self.path().to_path_buf(),
            reading: "TIFF".into(),
            fingerprint: self
                .opened()
                .ok()
                .and_then(|o| o.value.layout.metadata.fingerprint.clone()),
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
                base_level.chunk_h as usize,
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

    /// The tile size of a tiled stored level (a read decodes only the tiles it covers);
    /// `None` for strips and generated levels.
    fn file_tile(&self, level: u32) -> Option<(u32, u32)> {
        let o = self.opened().ok()?;
        if level >= o.value.stored_levels {
            return None;
        }
        let l = o.value.layout.levels.get(level as usize)?;
        l.tiled.then_some((l.chunk_w, l.chunk_h))
    }

    /// `oiio:ConstantColor`, else `oiio:AverageColor`, when the file has them.
    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        let o = self.opened()?;
        let layout = &o.value.layout;
        Ok(layout.metadata.base_color(layout.samples.samples))
    }

    /// maketx's `wrapmodes` ([`TxMetadata::wrap`]).
    fn address_modes(&self) -> Option<[crate::textures::AddressMode; 2]> {
        self.opened().ok()?.value.layout.metadata.wrap
    }
}
