//! [`PtexPages`]: a Ptex file served to the engine as an [`ImageSource`] whose 64 KiB
//! tiles are the pages of its [`PackLayout`], so Ptex units live in the one tile budget,
//! with the engine's requests, fills, eviction, second chance and statistics.
//!
//! The image is a single level of float RGBA (64×64-texel tiles, one 64 KiB page each),
//! [`PAGES_ACROSS`] tiles across: page `p` is tile (`p % PAGES_ACROSS`, `p /
//! PAGES_ACROSS`). Its texels mean nothing as colours; the Ptex samplers read the packed
//! units through [`PackLayout::locate`].
//!
//! A page is filled whole ([`UnitFill::Eager`]: every unit decoded, for the multi-pass
//! loader and the device) or unit by unit ([`UnitFill::Lazy`]: the page fill only clears
//! its validity bitmap and lookups decode the units they meet, [`PtexPages::fill_in_place`];
//! for blocking caches, so a page of a thousand small faces costs what the lookups use).

use super::pack::{
    has_bitmap, page_capacity, unit_tiling, PackLayout, PlacedUnit, UnitTiling, CHUNK_BYTES,
    PAGE_BYTES, UNIT_CAPACITY, VALID_BYTES,
};
use super::region::Rect;
use super::{BlockInfo, DecodedUnits, PtexError, PtexErrorKind, PtexFile, Res};
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Tiles across the virtual image (its width is `64 × PAGES_ACROSS` texels).
pub const PAGES_ACROSS: u32 = 1024;

/// Side of one page's tile in texels (float RGBA).
const TILE_SIDE: u32 = 64;

/// The most pages one Ptex file's units may take: [`PAGES_ACROSS`] by as many rows as a
/// texture of the largest size holds (1024 × 1024 pages, 64 GiB of units).
/// [`PackLayout::new`] refuses more before it allocates per page.
pub const MAX_PAGES: u32 = PAGES_ACROSS * (crate::textures::MAX_TEXTURE_SIZE / TILE_SIDE);

/// Locks that serialise the in-place fills of one page (a page's lock is `page % N`).
const FILL_LOCKS: usize = 64;

/// How a page's units are decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitFill {
    /// The page fill decodes every unit on the page and sets its whole bitmap.
    #[default]
    Eager,
    /// The page fill clears the bitmap; units are decoded where lookups meet them
    /// ([`PtexPages::fill_in_place`]).
    Lazy,
}

/// What a [`PtexPages`] has decoded so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PtexReadStats {
    /// Units (or tiles of units) decoded, by page fills and in place.
    pub units_decoded: u64,
    /// Texel bytes of those units.
    pub unit_bytes_decoded: u64,
    /// Bytes read from the file (compressed blocks, headers of tiled blocks).
    pub file_bytes_read: u64,
}

/// A Ptex file as a source of packed pages.
pub struct PtexPages {
    file: Arc<PtexFile>,
    layout: PackLayout,
    fill: UnitFill,
    locks: Box<[Mutex<()>]>,
    units_decoded: AtomicU64,
    unit_bytes_decoded: AtomicU64,
    /// The first error of a unit decoded in place.
    unit_error: Mutex<Option<SourceError>>,
}

impl std::fmt::Debug for PtexPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtexPages")
            .field("file", &self.file.name())
            .field("layout", &self.layout)
            .finish()
    }
}

impl PtexPages {
    /// Pack the units of `file` (reading the tile headers of its tiled blocks); an error
    /// ([`PtexErrorKind::Unsupported`]) if they cannot be packed into the [`MAX_PAGES`] a
    /// texture can hold ([`PackLayout::new`]).
    pub fn new(file: Arc<PtexFile>) -> Result<PtexPages, PtexError> {
        let ps = file.pixel_size();
        let mut file_tiles = HashMap::new();
        for (face, info) in file.faces().iter().enumerate() {
            let face = face as u32;
            // (Texels larger than a page: `PackLayout::new` refuses them.)
            if info.is_constant() || ps > PAGE_BYTES || unit_tiling(info.res, ps).is_none() {
                continue;
            }
            for level in 0..file.stored_levels(face).unwrap_or(0) {
                let Ok(BlockInfo {
                    res,
                    tiles: Some(t),
                    ..
                }) = file.block(face, level)
                else {
                    continue;
                };
                if t.tile_res.texels() * ps <= PAGE_BYTES && t.tile_res.is_valid() {
                    let tiling = UnitTiling {
                        tile_res: t.tile_res,
                        ntiles_u: t.ntiles_u,
                        ntiles: t.ntiles_u * t.ntiles_v,
                    };
                    file_tiles.insert((face, res), tiling);
                }
            }
        }
        let layout =
            PackLayout::new(file.faces(), file.mesh_type(), ps, file_tiles).map_err(|message| {
                PtexError {
                    file: file.name().to_owned(),
                    kind: PtexErrorKind::Unsupported,
                    message,
                }
            })?;
        Ok(PtexPages {
            file,
            layout,
            fill: UnitFill::Eager,
            locks: (0..FILL_LOCKS).map(|_| Mutex::new(())).collect(),
            units_decoded: AtomicU64::new(0),
            unit_bytes_decoded: AtomicU64::new(0),
            unit_error: Mutex::new(None),
        })
    }

    /// The first error met decoding a unit in place (its lookups returned the face's
    /// constant colour, non-resident); page fills report theirs through the engine.
    pub fn unit_error(&self) -> Option<SourceError> {
        self.unit_error.lock().clone()
    }

    /// Keep `e` if it is the first error of a unit decoded in place.
    pub fn record_unit_error(&self, e: SourceError) {
        let mut first = self.unit_error.lock();
        if first.is_none() {
            tracing::warn!("{}: {}", self.file.name(), e.0);
            *first = Some(e);
        }
    }

    /// Pack `file` as [`PtexPages::new`], filling pages as `fill` says.
    pub fn with_fill(file: Arc<PtexFile>, fill: UnitFill) -> Result<PtexPages, PtexError> {
        Ok(PtexPages {
            fill,
            ..PtexPages::new(file)?
        })
    }

    /// How pages are filled.
    pub fn unit_fill(&self) -> UnitFill {
        self.fill
    }

    /// What has been decoded so far.
    pub fn read_stats(&self) -> PtexReadStats {
        PtexReadStats {
            units_decoded: self.units_decoded.load(Ordering::Relaxed),
            unit_bytes_decoded: self.unit_bytes_decoded.load(Ordering::Relaxed),
            file_bytes_read: self.file.file_bytes_read(),
        }
    }

    /// The texels of tile `tile` (0 for an untiled unit) of `face` at `res`, every texel
    /// (a constant expanded), v-major: one file tile where the file stores the unit's
    /// tiles, else the tile's region ([`PtexFile::read_region`]: only the file tiles it
    /// overlaps, or the matching region of the resolution it is reduced from).
    pub fn read_unit(&self, face: u32, res: Res, tile: usize) -> Result<Vec<u8>, SourceError> {
        self.read_unit_from(face, res, tile, None)
    }

    /// [`PtexPages::read_unit`], an untiled unit reduced from `units` where they hold a
    /// resolution its chain passes through ([`PtexFile::read_face_from`]).
    pub fn read_unit_from(
        &self,
        face: u32,
        res: Res,
        tile: usize,
        units: Option<&dyn DecodedUnits>,
    ) -> Result<Vec<u8>, SourceError> {
        let err = |e: super::PtexError| SourceError(e.to_string());
        let info = self.file.face_info(face).map_err(err)?;
        let tiling = self.layout.tiling(face, res);
        if let Some(t) = tiling {
            if tile >= t.ntiles {
                return Err(SourceError(format!(
                    "face {face} at {res} has no tile {tile}"
                )));
            }
            let level = (info.res.ulog2 - res.ulog2) as usize;
            let stored = info.res.ulog2 - res.ulog2 == info.res.vlog2 - res.vlog2
                && level < self.file.stored_levels(face).map_err(err)?;
            if stored {
                if let Ok(BlockInfo {
                    tiles: Some(ft), ..
                }) = self.file.block(face, level)
                {
                    if ft.tile_res == t.tile_res && ft.ntiles_u == t.ntiles_u {
                        return Ok(self
                            .file
                            .read_tile(face, level, tile)
                            .map_err(err)?
                            .into_packed());
                    }
                }
            }
        } else if tile != 0 {
            return Err(SourceError(format!(
                "face {face} at {res} has no tile {tile}"
            )));
        }
        let Some(t) = tiling else {
            return Ok(self
                .file
                .read_face_from(face, res, units)
                .map_err(err)?
                .into_packed());
        };
        // A tile of a face (or reduction) the file does not store in these tiles: only the
        // file tiles (or the region of the level it is reduced from) that it covers.
        let (tu, tv) = (tile % t.ntiles_u, tile / t.ntiles_u);
        let (tw, th) = (t.tile_res.u(), t.tile_res.v());
        let rect = Rect {
            x: tu * tw,
            y: tv * th,
            w: tw,
            h: th,
        };
        self.file.read_region(face, res, rect).map_err(err)
    }

    /// The file.
    pub fn file(&self) -> &Arc<PtexFile> {
        &self.file
    }

    /// The packing.
    pub fn layout(&self) -> &PackLayout {
        &self.layout
    }

    /// The page of tile (`x`, `y`) of the virtual image.
    pub fn page_of_tile(x: u32, y: u32) -> u32 {
        y * PAGES_ACROSS + x
    }

    /// The tile (x, y) of `page`.
    pub fn tile_of_page(page: u32) -> (u32, u32) {
        (page % PAGES_ACROSS, page / PAGES_ACROSS)
    }

    /// Fill `page` into `out` (`PAGE_BYTES` bytes) as [`PtexPages::unit_fill`] says: every
    /// unit decoded and the bitmap all set (eager), or only the bitmap cleared (lazy; a
    /// page holding one unit of a whole page is always decoded).
    pub fn fill_page(&self, page: u32, out: &mut [u8]) -> Result<(), SourceError> {
        let bitmap = self.layout.page_has_bitmap(page);
        if out.len() < PAGE_BYTES {
            return Err(SourceError(format!(
                "page {page}: a buffer of {} bytes, not {PAGE_BYTES}",
                out.len()
            )));
        }
        if bitmap && self.fill == UnitFill::Lazy {
            out[UNIT_CAPACITY..PAGE_BYTES].fill(0);
            return Ok(());
        }
        for unit in &self.layout.units_on_page(page) {
            let data = self.decode_unit(page, unit, None)?;
            out[unit.offset..unit.offset + unit.bytes].copy_from_slice(&data);
        }
        if bitmap {
            out[UNIT_CAPACITY..PAGE_BYTES].fill(0xff);
        }
        Ok(())
    }

    /// The texels of `unit` of `page`, checked against its place (counted as decoded).
    fn decode_unit(
        &self,
        page: u32,
        unit: &PlacedUnit,
        units: Option<&dyn DecodedUnits>,
    ) -> Result<Vec<u8>, SourceError> {
        let PlacedUnit {
            face,
            res,
            tile,
            offset,
            bytes,
        } = *unit;
        if offset + bytes > page_capacity(bytes as u32) as usize {
            return Err(SourceError(format!(
                "page {page}: unit of face {face} overruns the page"
            )));
        }
        let data = self.read_unit_from(face, res, tile, units)?;
        if data.len() != bytes {
            return Err(SourceError(format!(
                "page {page}: face {face} at {res}, tile {tile} is {} bytes, not {bytes}",
                data.len()
            )));
        }
        self.units_decoded.fetch_add(1, Ordering::Relaxed);
        self.unit_bytes_decoded
            .fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(data)
    }

    /// Whether the bytes `offset..offset + bytes` of the resident page at `base` hold
    /// their unit's texels (always for a page without a bitmap).
    ///
    /// # Safety
    /// `base` addresses the `PAGE_BYTES` of a page of this texture filled by
    /// [`PtexPages::fill_page`] and published, alive while this runs.
    pub unsafe fn unit_valid(base: *const u8, offset: usize, bytes: usize) -> bool {
        if !has_bitmap(bytes as u32) {
            return true;
        }
        let chunk = offset / CHUNK_BYTES;
        // SAFETY: the caller's contract; the bitmap words are 8-byte aligned (tile memory
        // is 16-byte aligned and UNIT_CAPACITY is a multiple of 8) and only accessed
        // atomically once the page is published.
        let word = unsafe { bitmap_word(base, chunk / 64) };
        word.load(Ordering::Acquire) & (1 << (chunk % 64)) != 0
    }

    /// Decode `unit` of the resident `page` at `base` in place and mark it valid (a lazy
    /// texture's lookups call this when [`PtexPages::unit_valid`] is false), reducing from
    /// `units` (the engine's other resident units) where they hold a source.
    ///
    /// # Safety
    /// As [`PtexPages::unit_valid`], `unit` is a unit of `page` (as
    /// [`PackLayout::locate`] places it), and `base` is writable tile memory (the
    /// engine's tile buffers are): readers read a unit's bytes only after seeing its bit
    /// set (Acquire); this writes a unit only while its bit is clear and sets the bit
    /// after writing (Release), under the page's lock. Units start on chunks of their own,
    /// so no two share a bit.
    pub unsafe fn fill_in_place(
        &self,
        page: u32,
        base: *mut u8,
        unit: &PlacedUnit,
        units: Option<&dyn DecodedUnits>,
    ) -> Result<(), SourceError> {
        let _guard = self.locks[page as usize % FILL_LOCKS].lock();
        // SAFETY: the caller's contract.
        if unsafe { Self::unit_valid(base, unit.offset, unit.bytes) } {
            return Ok(());
        }
        let data = self.decode_unit(page, unit, units)?;
        // SAFETY: the unit lies inside UNIT_CAPACITY (checked by decode_unit) of the page
        // at `base`; no reader reads it while its bit is clear, and the page's lock keeps
        // other fillers out.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), base.add(unit.offset), data.len()) };
        let chunk = unit.offset / CHUNK_BYTES;
        // SAFETY: as in `unit_valid`.
        let word = unsafe { bitmap_word(base, chunk / 64) };
        word.fetch_or(1 << (chunk % 64), Ordering::Release);
        Ok(())
    }
}

impl PtexPages {
    /// Write `texels`, made elsewhere, into `unit` of the resident `page` at `base` and
    /// mark it valid, unless the unit is valid already, `texels` is not its size, or the
    /// page's lock is held (by the fill that made them, or another: then nothing is
    /// written, and never a wait, so a fill may offer the sources it made while holding a
    /// lock of its own). Counted as a unit decoded.
    ///
    /// # Safety
    /// As [`PtexPages::fill_in_place`].
    pub unsafe fn offer_in_place(
        &self,
        page: u32,
        base: *mut u8,
        unit: &PlacedUnit,
        texels: &[u8],
    ) {
        if texels.len() != unit.bytes || unit.offset + unit.bytes > UNIT_CAPACITY {
            return;
        }
        let Some(_guard) = self.locks[page as usize % FILL_LOCKS].try_lock() else {
            return;
        };
        // SAFETY: the caller's contract.
        if unsafe { Self::unit_valid(base, unit.offset, unit.bytes) } {
            return;
        }
        // SAFETY: as in `fill_in_place`: inside UNIT_CAPACITY (checked above), no reader
        // reads the unit while its bit is clear, and the page's lock is held.
        unsafe {
            std::ptr::copy_nonoverlapping(texels.as_ptr(), base.add(unit.offset), unit.bytes)
        };
        let chunk = unit.offset / CHUNK_BYTES;
        // SAFETY: as in `unit_valid`.
        let word = unsafe { bitmap_word(base, chunk / 64) };
        word.fetch_or(1 << (chunk % 64), Ordering::Release);
        self.units_decoded.fetch_add(1, Ordering::Relaxed);
        self.unit_bytes_decoded
            .fetch_add(unit.bytes as u64, Ordering::Relaxed);
    }
}

/// Word `i` of the validity bitmap of the page at `base`.
///
/// # Safety
/// `base` addresses a live, 8-byte aligned page of `PAGE_BYTES` bytes whose bitmap is
/// only accessed atomically while this reference lives.
unsafe fn bitmap_word<'a>(base: *const u8, i: usize) -> &'a AtomicU64 {
    debug_assert!(i < VALID_BYTES / 8);
    // SAFETY: the caller's contract: in bounds, aligned, accessed atomically.
    unsafe { &*(base.add(UNIT_CAPACITY + 8 * i) as *const AtomicU64) }
}

impl ImageSource for PtexPages {
    fn name(&self) -> String {
        format!("{} (Ptex pages)", self.file.name())
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        let pages = self.layout.num_pages().max(1);
        let rows = pages.div_ceil(PAGES_ACROSS);
        let across = pages.min(PAGES_ACROSS);
        // `PackLayout::new` refuses more; kept as the image's own invariant.
        if pages > MAX_PAGES {
            return Err(SourceError(format!(
                "{}: {pages} pages of Ptex units exceed the {MAX_PAGES} a texture can hold",
                self.file.name(),
            )));
        }
        Ok(ImageInfo {
            width: across * TILE_SIDE,
            height: rows * TILE_SIDE,
            format: TexelFormat::RGBA32F,
            num_levels: 1,
        })
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        if region.level != 0 || region.x % TILE_SIDE != 0 || region.y % TILE_SIDE != 0 {
            return Err(SourceError(format!(
                "{}: Ptex pages are read one whole tile at a time, not {region:?}",
                self.file.name()
            )));
        }
        let page = Self::page_of_tile(region.x / TILE_SIDE, region.y / TILE_SIDE);
        let row = TILE_SIDE as usize * 16;
        if row_bytes == row && region.width == TILE_SIDE && region.height == TILE_SIDE {
            if let Some(out) = dest.get_mut(..PAGE_BYTES) {
                self.fill_page(page, out)?;
                return Ok(Readiness::Ready);
            }
        }
        let mut packed = vec![0u8; PAGE_BYTES];
        self.fill_page(page, &mut packed)?;
        for (y, src) in packed
            .chunks_exact(row)
            .enumerate()
            .take(region.height as usize)
        {
            let w = (region.width as usize * 16).min(row);
            if let Some(d) = dest.get_mut(y * row_bytes..y * row_bytes + w) {
                d.copy_from_slice(&src[..w]);
            }
        }
        Ok(Readiness::Ready)
    }

    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        Ok(Some([0.0; 4]))
    }

    /// The per-face constant colours: every lookup's fallback, held with the open file.
    fn held_bytes(&self) -> u64 {
        self.file.constant_bytes()
    }

    /// A page of units may be decoded into unit by unit after publication.
    fn tiles_coalescable(&self) -> bool {
        false
    }

    /// A page packs units of any data type: its "texels" are bytes, not colours.
    fn texels_are_words(&self) -> bool {
        true
    }
}
