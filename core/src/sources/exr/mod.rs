//! OpenEXR image source (pure Rust, the `exr` crate), with random access to tiles.
//!
//! The header and offset tables are parsed once, at [`ImageSource::open`]; afterwards each
//! file block (tile or scan-line block) is one positioned read and one decompression, from
//! any number of threads at once, with no lock around I/O or decoding. Open files are
//! shared through a bounded [`FileHandles`] set (least recently used closed first).
//!
//! What is served:
//! - **Tiled, mip-mapped, levels rounded down** (what `demandtex convert`, `maketx` and
//!   `exrmaketiled` write): every level straight from the file. This is the fast path.
//! - **Mips rounded up**: the levels whose sizes equal ours (all of them for
//!   power-of-two sides) come from the file, the rest are generated from the last of them.
//! - **Tiled without mips, and scan-line files**: level 0 from the file (scan-line blocks
//!   are read by random access too), the other levels generated in memory by the box
//!   filter of [`crate::sources::InMemoryImage`] when a coarser level is first read (at the
//!   latest when the loader reads the mip tail). A warning is logged once per source: this
//!   is slow. The generated levels (a third of level 0's size) are held only while the
//!   loader fills their pages, charged to the texture budget, and dropped after
//!   ([`ImageSource::whole_decode`]). Convert such files to tiled, mip-mapped EXRs.
//!
//! Cache tiles (64 KiB, e.g. 128×64 texels of RGBA half) need not line up with file tiles:
//! a read assembles its region from every block it touches. Where file blocks do not
//! divide our tiles (larger tiles, odd sizes, scan lines), a small per-source cache of
//! recently decoded blocks (bounded in bytes, [`ExrOptions::decoded_block_cache_bytes`])
//! lets neighbouring cache tiles share one decode.
//!
//! Texel format: half channels give [`TexelType::F16`](crate::textures::TexelType::F16);
//! float, uint (`u32`, converted with `as f32`: exact up to 2^24) or a mix of types give
//! `F32`. One or two selected channels give one or two components; three (RGB) are widened
//! to four with an alpha of 1; four give four. See [`ChannelSelection`].
//!
//! maketx's attributes: `wrapmodes` ([`ImageSource::address_modes`]), `oiio:SHA-1` (the
//! [`ContentIdentity`](crate::sources::ContentIdentity) fingerprint), and
//! `oiio:ConstantColor` / `oiio:AverageColor` as the base colour when every channel is
//! served in OpenImageIO's order ([`ImageSource::read_base_color`]).
//!
//! Rip-mapped files serve their diagonal levels (`(l, l)`, then `(l, last)` past the
//! shorter side's last level: the mip chain, rounded as the file rounds it); the other
//! rip levels are never read.
//!
//! Not served, with an error naming the file and the reason: deep data, HTJ2K compression
//! (the crate cannot decode it), subsampled channels, sides over 65536, selections naming
//! missing channels. Multi-part files: part [`ExrOptions::part`] (0 by
//! default) is served; the data window is the image (the display window is ignored).
//!
//! # Files that change on disk
//! Every [`open`](ImageSource::open) after the first (the loader's reopen after
//! [`Engine::invalidate_texture`](crate::Engine::invalidate_texture)) parses the file anew,
//! from the file now at the path (a file replaced by a rename is opened again), so an
//! invalidation serves the new contents — size, format and all — and drops the decoded
//! blocks and generated levels of the old ones.
//!
//! Without an invalidation the source keeps serving the file it parsed, and never serves a
//! tile that mixes two versions of it: each read checks, after its blocks are read, that
//! the file is still the one parsed — same inode, length and modification time — and
//! fails otherwise ("changed on disk since it was opened"), so the texture shows its
//! fallback colour until it is invalidated. Tiles read before the change stay as they
//! were. A file replaced by a rename while the source holds it open is still the file
//! parsed (the old inode): it is served whole until the handle is closed and reopened,
//! which fails the same check. The limit is what the file system reports: a rewrite in
//! place that keeps the length and lands within the file system's timestamp granularity
//! of the previous write is not detected. Replace texture files by rename (as
//! [`write_mip_exr`] does) to be safe.
//!
//! [`describe`] reports what a file holds and how it is served (or why it is not), through
//! the same parse as [`ExrSource`]; [`write_mip_exr`] writes files of the fast path.

mod block_cache;
mod channels;
mod describe;
mod file;
pub(crate) mod handles;
pub(crate) mod mips;
mod options;
mod serve;
pub mod writer;
mod zip;

#[cfg(test)]
mod tests;

pub use describe::{
    describe, ChannelDescription, ExrDescription, ExrLevelMode, ExrLineOrder, ExrRounding,
    ExrSampleType, ExrStorage, LevelDescription, PartDescription, ServedAs,
};
pub use handles::{FileHandleStats, FileHandles, DEFAULT_MAX_OPEN_FILES};
pub use options::{
    ChannelSelection, ExrOptions, ExrSourceStats, DEFAULT_DECODED_BLOCK_CACHE_BYTES,
};
pub use writer::{write_mip_exr, Compression, SampleType, WriteOptions, WrittenFile};

use super::region::check_read;
use super::{ImageInfo, ImageSource, Readiness, SourceError, WholeDecode};
use crate::textures::{TexelFormat, TileRegion};
use block_cache::BlockCache;
use channels::{CopyRect, Plan};
use file::{DecodedBlock, ExrFile, RawFile};
use handles::INVALIDATE_ADVICE;
pub(crate) use handles::{FileIdentity, OpenFile};
use mips::GenLevel;
use parking_lot::RwLock;
use serve::Served;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// An OpenEXR file as an [`ImageSource`]. See the [module documentation](self).
pub struct ExrSource {
    path: PathBuf,
    options: ExrOptions,
    /// The current parse (replaced by every `open` after the first).
    opened: RwLock<Option<Arc<Opened>>>,
    /// The file last obtained from `options.handles` (not kept open by this).
    handle: RwLock<Weak<OpenFile>>,
    blocks_decoded: AtomicU64,
    compressed_bytes: AtomicU64,
}

/// What `open` learnt about the file.
#[derive(Debug)]
struct Opened {
    /// The file parsed, as it was before the parse: reads fail once it differs.
    identity: FileIdentity,
    /// Whether an `open` has returned this parse (the next `open` parses anew).
    claimed: AtomicBool,
    file: ExrFile,
    plan: Plan,
    info: ImageInfo,
    /// Levels `0..stored_levels` come from the file; the rest are generated.
    stored_levels: u32,
    /// Why levels are generated (`None` when the file stores them all).
    generated_because: Option<&'static str>,
    /// Present where file blocks do not line up with cache tiles.
    cache: Option<BlockCache>,
    /// Levels `stored_levels..`, generated on first use (or why they could not be).
    generated: mips::GeneratedLevels,
}

/// A decoded block, this read's own or shared with the block cache.
enum Block {
    Owned(DecodedBlock),
    Shared(Arc<DecodedBlock>),
}

impl std::ops::Deref for Block {
    type Target = DecodedBlock;

    fn deref(&self) -> &DecodedBlock {
        match self {
            Block::Owned(b) => b,
            Block::Shared(b) => b,
        }
    }
}

thread_local! {
    /// Each thread's buffer for compressed chunks.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

impl std::fmt::Debug for ExrSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExrSource")
            .field("path", &self.path)
            .field("channels", &self.options.channels)
            .field("part", &self.options.part)
            .field("opened", &self.opened.read().as_ref().map(|o| o.info))
            .finish_non_exhaustive()
    }
}

impl ExrSource {
    /// A source for the EXR file at `path` with default options. Lazy: the file is not
    /// touched until [`ImageSource::open`] (called by the loader at first use).
    pub fn new(path: impl Into<PathBuf>) -> ExrSource {
        ExrSource::with_options(path, ExrOptions::default())
    }

    /// A source for the EXR file at `path` with `options`. Lazy, as [`ExrSource::new`].
    pub fn with_options(path: impl Into<PathBuf>, options: ExrOptions) -> ExrSource {
        ExrSource {
            path: path.into(),
            options,
            opened: RwLock::new(None),
            handle: RwLock::new(Weak::new()),
            blocks_decoded: AtomicU64::new(0),
            compressed_bytes: AtomicU64::new(0),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options the source reads with.
    pub fn options(&self) -> &ExrOptions {
        &self.options
    }

    /// The texel format served (opens the file if it was not yet).
    pub fn format(&self) -> Result<TexelFormat, SourceError> {
        Ok(self.opened()?.info.format)
    }

    /// Blocks decoded, bytes read and cache hits so far.
    pub fn stats(&self) -> ExrSourceStats {
        ExrSourceStats {
            blocks_decoded: self.blocks_decoded.load(Ordering::Relaxed),
            compressed_bytes_read: self.compressed_bytes.load(Ordering::Relaxed),
            block_cache_hits: self
                .opened
                .read()
                .as_ref()
                .and_then(|o| o.cache.as_ref())
                .map_or(0, |c| c.hits_and_misses().0),
        }
    }

    fn error(&self, reason: impl std::fmt::Display) -> SourceError {
        SourceError(format!("{}: {reason}", self.path.display()))
    }

    /// The open file, from this source's last handle if the set still holds it.
    fn file(&self) -> Result<Arc<OpenFile>, SourceError> {
        if let Some(f) = self.handle.read().upgrade() {
            if !f.is_closed() {
                self.options.handles.touch(&f);
                return Ok(f);
            }
        }
        let f = self
            .options
            .handles
            .get(&self.path)
            .map_err(|e| self.error(format_args!("cannot open: {e}")))?;
        *self.handle.write() = Arc::downgrade(&f);
        Ok(f)
    }

    /// The current parse, parsing the file if it was not yet (the first caller's parse
    /// is kept).
    fn opened(&self) -> Result<Arc<Opened>, SourceError> {
        if let Some(o) = self.opened.read().as_ref() {
            return Ok(o.clone());
        }
        let parsed = Arc::new(self.parse()?);
        let mut current = self.opened.write();
        if let Some(o) = current.as_ref() {
            return Ok(o.clone());
        }
        self.warn_on_open(&parsed);
        *current = Some(parsed.clone());
        Ok(parsed)
    }

    /// The parse an [`ImageSource::open`] returns: the current one if no `open` has
    /// returned it yet, else a new parse of the file now at the path, which replaces it.
    fn reopened(&self) -> Result<Arc<Opened>, SourceError> {
        let o = self.opened()?;
        if !o.claimed.swap(true, Ordering::AcqRel) {
            return Ok(o);
        }
        let parsed = Arc::new(self.parse()?);
        parsed.claimed.store(true, Ordering::Release);
        self.warn_on_open(&parsed);
        *self.opened.write() = Some(parsed.clone());
        Ok(parsed)
    }

    /// The shared parse ([`RawFile::read`], [`Served::new`]: what [`describe`] reports),
    /// then this source's cache of decoded blocks. The file parsed is the one now at the
    /// path (a handle to a file replaced since is closed and the path opened anew).
    fn parse(&self) -> Result<Opened, SourceError> {
        let file = self
            .options
            .handles
            .get_current(&self.path)
            .map_err(|e| self.error(format_args!("cannot open: {e}")))?;
        *self.handle.write() = Arc::downgrade(&file);
        let identity = file
            .identity()
            .map_err(|e| self.error(format_args!("cannot read the file's status: {e}")))?;
        let raw = RawFile::read(&self.path, &file)?;
        let served = Served::new(
            &self.path,
            raw,
            self.options.part,
            &self.options.channels,
            &self.options.limits,
        )?;
        let generated_because = served.generated_because();
        let budget = self.options.decoded_block_cache_bytes;
        let cache =
            (served.blocks_per_page().is_none() && budget > 0).then(|| BlockCache::new(budget));
        let Served {
            file,
            plan,
            info,
            stored_levels,
        } = served;
        Ok(Opened {
            identity,
            claimed: AtomicBool::new(false),
            file,
            plan,
            info,
            stored_levels,
            generated_because,
            cache,
            generated: mips::GeneratedLevels::new(stored_levels),
        })
    }

    /// Describe the file as [`describe`] does, with this source's part and channels, from
    /// the file this source reads (through its [`FileHandles`]).
    pub fn describe(&self) -> Result<ExrDescription, SourceError> {
        let file = self.file()?;
        describe::describe_open(
            &self.path,
            &file,
            self.options.part,
            &self.options.channels,
            &self.options.limits,
        )
    }

    /// With [`ChannelSelection::Auto`], say which of the file's channels are not served
    /// (an explicit selection chose them).
    fn warn_if_channels_left_out(&self, o: &Opened) {
        if self.options.channels != ChannelSelection::Auto || o.plan.unserved.is_empty() {
            return;
        }
        tracing::warn!(
            "{}: serving channels {} of the file; {} not served (choose others with a \
             channel selection)",
            self.path.display(),
            o.plan.names.join(", "),
            o.plan.unserved.join(", ")
        );
    }

    /// The warnings of a new parse: channels left out, levels generated in memory.
    fn warn_on_open(&self, o: &Opened) {
        self.warn_if_channels_left_out(o);
        self.warn_if_slow(o);
    }

    fn warn_if_slow(&self, o: &Opened) {
        let Some(why) = o.generated_because else {
            return;
        };
        tracing::warn!(
            "{}: {why}: levels {}..{} are generated in memory from level {} when first read \
             (slow: the whole of that level is read for them). Convert it to a tiled, \
             mip-mapped EXR (levels rounded down), e.g. with `demandtex convert`.",
            self.path.display(),
            o.stored_levels,
            o.info.num_levels,
            o.stored_levels - 1
        );
    }

    /// Copy `region` of stored level `region.level` from every file block it touches.
    fn read_stored(
        &self,
        o: &Opened,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
        use_cache: bool,
    ) -> Result<(), SourceError> {
        let file = self.file()?;
        let level = region.level as usize;
        let g = o.file.grids[level];
        let tb = o.plan.format.texel_bytes();
        let (x0, y0) = (region.x as usize, region.y as usize);
        let (x1, y1) = (x0 + region.width as usize, y0 + region.height as usize);
        let cache = o.cache.as_ref().filter(|_| use_cache);
        let mut scratch = SCRATCH.take();
        let mut run = || -> Result<(), SourceError> {
            for by in y0 / g.block_h..=(y1 - 1) / g.block_h {
                for bx in x0 / g.block_w..=(x1 - 1) / g.block_w {
                    let block = match cache {
                        Some(c) => match c.get((level, bx, by)) {
                            Some(b) => Block::Shared(b),
                            None => {
                                let b = Arc::new(self.decode(
                                    o,
                                    &file,
                                    (level, bx, by),
                                    &mut scratch,
                                )?);
                                c.insert((level, bx, by), b.clone());
                                Block::Shared(b)
                            }
                        },
                        None => {
                            Block::Owned(self.decode(o, &file, (level, bx, by), &mut scratch)?)
                        }
                    };
                    let block: &DecodedBlock = &block;
                    let (bx0, by0) = (bx * g.block_w, by * g.block_h);
                    let (ix0, iy0) = (x0.max(bx0), y0.max(by0));
                    let (ix1, iy1) = (x1.min(bx0 + block.width), y1.min(by0 + block.height));
                    let rect = CopyRect {
                        block_w: block.width,
                        sx: ix0 - bx0,
                        sy: iy0 - by0,
                        w: ix1 - ix0,
                        h: iy1 - iy0,
                        dest_at: (iy0 - y0) * row_bytes + (ix0 - x0) * tb,
                        row_bytes,
                    };
                    o.plan.copy(&block.data, rect, dest);
                }
            }
            Ok(())
        };
        let result = run();
        SCRATCH.set(scratch);
        // Every block was read before this: if the file is still the one parsed, they all
        // come from that version of it. A read that failed because the file changed says
        // so rather than what the change broke.
        let unchanged = self.check_unchanged(o, &file);
        unchanged.and(result)
    }

    /// Fail if `file` is no longer the file `o` parsed (see the module docs).
    fn check_unchanged(&self, o: &Opened, file: &OpenFile) -> Result<(), SourceError> {
        o.identity
            .check_file(file, INVALIDATE_ADVICE)
            .map_err(|e| self.error(e))
    }

    /// Read and decode one block, counting it.
    fn decode(
        &self,
        o: &Opened,
        file: &OpenFile,
        (level, bx, by): (usize, usize, usize),
        scratch: &mut Vec<u8>,
    ) -> Result<DecodedBlock, SourceError> {
        let block = o.file.read_block(file, level, bx, by, scratch)?;
        self.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        self.compressed_bytes
            .fetch_add(scratch.len() as u64, Ordering::Relaxed);
        Ok(block)
    }

    /// Copy `region` of a generated level, generating the levels on first use.
    fn read_generated(
        &self,
        o: &Opened,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<(), SourceError> {
        let tb = o.plan.format.texel_bytes();
        o.generated
            .read_with(region, dest, row_bytes, tb, || self.generate(o))
    }

    /// Generate the levels after the last stored one, from it.
    fn generate(&self, o: &Opened) -> Result<Vec<GenLevel>, SourceError> {
        let base = o.stored_levels - 1;
        let g = o.file.grids[base as usize];
        let format = o.plan.format;
        let row_bytes = g.width * format.texel_bytes();
        let read_base = |y: usize, rows: usize, dest: &mut [u8]| {
            let region = TileRegion {
                level: base,
                x: 0,
                y: y as u32,
                width: g.width as u32,
                height: rows as u32,
            };
            self.read_stored(o, region, dest, row_bytes, false)
        };
        let threads = mips::threads(self.options.mip_threads);
        let levels = (o.info.num_levels - base) as usize;
        let started = std::time::Instant::now();
        let generated = mips::generate(
            format,
            (g.width, g.height),
            levels,
            g.block_h,
            threads,
            &read_base,
        );
        tracing::debug!(
            path = %self.path.display(),
            ms = started.elapsed().as_millis() as u64,
            ok = generated.is_ok(),
            "generated mip levels"
        );
        generated
    }
}

impl ImageSource for ExrSource {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file, its part and the channels served, and maketx's fingerprint (`oiio:SHA-1`).
    fn content_identity(&self) -> Option<crate::sources::ContentIdentity> {
        Some(crate::sources::ContentIdentity {
            file: self.path.clone(),
            reading: format!(
                "OpenEXR part {} channels {:?}",
                self.options.part, self.options.channels
            ),
            // maketx's fingerprint is of the source pixels: a lossy compression (B44,
            // DWA, PXR24 of floats) changes texels and keeps it, so only losslessly
            // compressed files go by it.
            fingerprint: self.opened().ok().and_then(|o| {
                if o.file.header().compression.may_loose_data() {
                    return None;
                }
                let value = o.file.string_attribute("oiio:SHA-1")?;
                crate::sources::identity::maketx_fingerprint(&value)
            }),
        })
    }

    /// The tile size of a tiled file's stored levels (a read decodes only the tiles it
    /// covers); `None` for scan-line files and generated levels.
    fn file_tile(&self, level: u32) -> Option<(u32, u32)> {
        let o = self.opened().ok()?;
        serve::file_tile(&o.file, o.stored_levels, level)
    }

    /// maketx's `oiio:ConstantColor`, else `oiio:AverageColor` (`sources/oiio_hints.rs`),
    /// when the source serves every channel of the file in OpenImageIO's order (R, G, B and
    /// A, R, G and B, or Y alone), which is the order of the hint's values.
    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        let o = self.opened()?;
        let file_channels = o.file.header().channels.list.len();
        let served: Vec<&str> = o.plan.names.iter().map(String::as_str).collect();
        let in_oiio_order = matches!(
            served.as_slice(),
            ["R", "G", "B", "A"] | ["R", "G", "B"] | ["Y"]
        );
        if !in_oiio_order || served.len() != file_channels {
            return Ok(None);
        }
        let hint = |name: &str| {
            o.file
                .string_attribute(name)
                .and_then(|t| crate::sources::oiio_hints::parse_color(&t))
        };
        Ok(crate::sources::oiio_hints::base_color(
            hint("oiio:ConstantColor").as_deref(),
            hint("oiio:AverageColor").as_deref(),
            served.len(),
        ))
    }

    /// The standard `wrapmodes` attribute (OpenImageIO's names, as maketx writes them).
    fn address_modes(&self) -> Option<[crate::textures::AddressMode; 2]> {
        let o = self.opened().ok()?;
        let text = o.file.header().own_attributes.wrap_mode_name.as_ref()?;
        crate::textures::AddressMode::parse_oiio_wrapmodes(&text.to_string())
    }

    /// The first call describes the file parsed so far (or parses it); every later call
    /// parses the file now at the path anew (see the module docs).
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Ok(self.reopened()?.info)
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let o = self.opened()?;
        check_read(&o.info, region, dest.len(), row_bytes).map_err(|e| self.error(e))?;
        if region.width == 0 || region.height == 0 {
            return Ok(Readiness::Ready);
        }
        if region.level < o.stored_levels {
            self.read_stored(&o, region, dest, row_bytes, true)?;
        } else {
            self.read_generated(&o, region, dest, row_bytes)?;
            // The levels were generated from the file parsed; served only while it is
            // unchanged, as stored levels are.
            self.check_unchanged(&o, &*self.file()?)?;
        }
        Ok(Readiness::Ready)
    }

    /// The levels the file lacks (scan-line files, tiled files without mips), generated
    /// in memory from the last level it stores.
    fn whole_decode(&self) -> Option<WholeDecode> {
        let o = self.opened().ok()?;
        o.generated.whole_decode(&o.info)
    }

    fn release_decoded(&self) {
        if let Ok(o) = self.opened() {
            o.generated.release();
        }
    }

    fn spill_decoded(
        &self,
        dir: &std::path::Path,
        ledger: &crate::sources::SpillLedger,
    ) -> Result<u64, SourceError> {
        match self.opened() {
            Ok(o) => o.generated.spill(dir, ledger, &o.info, &self.name()),
            Err(_) => Ok(0),
        }
    }
}
