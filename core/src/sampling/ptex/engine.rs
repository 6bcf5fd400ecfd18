//! [`EnginePtex`]: a Ptex texture streamed by the engine as a [`PtexFaces`] store. Its
//! units live packed in the 64 KiB tile pages of a [`PtexPages`] texture; a unit is
//! resident when its page is, and asking for a missing one records a request for its page
//! (as every sampler does: the reference bit, and the view's miss list in blocking mode).
//! The per-face constants come from the parsed file: available from the texture's open
//! (which parses it, [`EnginePtex::opened`]) on, without a page.
//!
//! A page of a lazily filled texture ([`UnitFill::Lazy`], a blocking cache's) is resident
//! before its units are decoded: a lookup that meets a unit not yet valid decodes it in
//! place ([`PtexPages::fill_in_place`]) in the calling thread. A unit that cannot be read
//! is missing (the face's constant colour, non-resident) and its error kept
//! ([`PtexPages::unit_error`]).
//!
//! [`UnitFill::Lazy`]: crate::sources::ptex::UnitFill::Lazy

use super::{PtexFaces, PtexSampled, PtexTextureInfo, Texels, Tiling};
use crate::ids::{TextureId, TILE_BYTES};
use crate::sampling::fetch::Touch;
use crate::sampling::{resolve, CpuView};
use crate::sources::ptex::pack::{has_bitmap, PlacedUnit, UnitLoc};
use crate::sources::ptex::{DecodedUnits, FaceInfo, LazyPtexPages, PtexPages, Res};
use crate::textures::TextureSampler;
use std::cell::Cell;

/// The texture description of a Ptex file.
pub(crate) fn texture_info(pages: &PtexPages) -> PtexTextureInfo {
    let file = pages.file();
    PtexTextureInfo {
        mesh_type: file.mesh_type(),
        data_type: file.data_type(),
        num_channels: file.num_channels(),
        u_border: file.u_border_mode(),
        v_border: file.v_border_mode(),
        edge_filter: file.edge_filter_mode(),
        num_faces: file.num_faces(),
    }
}

/// One lookup's view of a streamed Ptex texture (see the module documentation).
pub struct EnginePtex<'a> {
    view: CpuView<'a>,
    texture: TextureId,
    pages: &'a PtexPages,
    info: PtexTextureInfo,
    sampler: Cell<Option<&'a TextureSampler>>,
    failed: Cell<bool>,
    /// The unit located last: a filter asks for a unit's tiling, then its texels.
    last_unit: Cell<Option<(u32, Res, UnitLoc)>>,
    /// The page whose use this lookup recorded last, and its tile memory: the units a
    /// lookup reads across an edge mostly share a page.
    last_page: Cell<Option<(u32, *const u8)>>,
}

impl<'a> EnginePtex<'a> {
    /// The store of `texture`, whose source is `pages`, seen through `view`.
    pub fn new(view: CpuView<'a>, texture: TextureId, pages: &'a PtexPages) -> Self {
        EnginePtex {
            view,
            texture,
            pages,
            info: texture_info(pages),
            sampler: Cell::new(None),
            failed: Cell::new(false),
            last_unit: Cell::new(None),
            last_page: Cell::new(None),
        }
    }

    /// The store of `texture`, whose source is `source`, once its file has been parsed.
    /// Before that, its opening is requested through `view` (the pages texture's sampler
    /// page, which the engine fills by opening the source: parsing the file), and `Err`
    /// holds what the lookup reports meanwhile: no channels, non-resident; resident if the
    /// texture failed (its file could not be parsed).
    pub fn opened(
        view: CpuView<'a>,
        texture: TextureId,
        source: &'a LazyPtexPages,
    ) -> Result<Self, PtexSampled> {
        let parsed = match source.pages_if_parsed() {
            Some(pages) => Some(pages),
            // Resolved: the engine opened the source, which parsed the file first.
            None => match resolve::sampler(view, texture) {
                Ok(_) => source.pages_if_parsed(),
                Err(sample) => {
                    return Err(PtexSampled {
                        channels: 0,
                        resident: sample.resident,
                    })
                }
            },
        };
        match parsed {
            Some(pages) => Ok(EnginePtex::new(view, texture, pages)),
            None => Err(PtexSampled {
                channels: 0,
                resident: true,
            }),
        }
    }

    /// Where the unit of `face` at `res` lies ([`PackLayout::locate`], which remembers the
    /// units of reduced levels per thread).
    ///
    /// [`PackLayout::locate`]: crate::sources::ptex::pack::PackLayout::locate
    #[inline]
    fn locate(&self, face: u32, res: Res) -> Option<UnitLoc> {
        if let Some((f, r, loc)) = self.last_unit.get() {
            if (f, r) == (face, res) {
                return Some(loc);
            }
        }
        let loc = self.pages.layout().locate(face, res)?;
        self.last_unit.set(Some((face, res, loc)));
        Some(loc)
    }

    /// The pages texture this store reads.
    pub fn texture_id(&self) -> TextureId {
        self.texture
    }

    /// Whether the pages texture failed to open (its units can never be read).
    pub fn failed(&self) -> bool {
        self.failed.get()
    }

    /// The sampler of the pages texture (its page recorded as used), once resident.
    fn pages_sampler(&self) -> Option<&'a TextureSampler> {
        if let Some(s) = self.sampler.get() {
            return Some(s);
        }
        match resolve::sampler(self.view, self.texture) {
            Ok(s) => {
                self.sampler.set(Some(s));
                Some(s)
            }
            Err(sample) => {
                // Resident but no sampler: the texture failed (or is degenerate).
                self.failed.set(sample.resident);
                None
            }
        }
    }
}

impl PtexFaces for EnginePtex<'_> {
    fn texture(&self) -> &PtexTextureInfo {
        &self.info
    }

    fn face_info(&self, face: u32) -> Option<&FaceInfo> {
        self.pages.file().faces().get(face as usize)
    }

    fn constant(&self, face: u32) -> Option<&[u8]> {
        self.pages.file().constant(face).ok()
    }

    fn tiling(&self, face: u32, res: Res) -> Option<Tiling> {
        let t = self.locate(face, res)?.tiling?;
        Some(Tiling {
            tile_res: t.tile_res,
            ntiles_u: t.ntiles_u,
        })
    }

    fn texels(&self, face: u32, res: Res, tile: usize, visit: &mut dyn FnMut(Texels<'_>)) -> bool {
        let Some(loc) = self.locate(face, res) else {
            return false;
        };
        self.unit_texels_at(face, res, &loc, tile, visit)
    }

    fn untiled_texels(
        &self,
        face: u32,
        res: Res,
        visit: &mut dyn FnMut(Texels<'_>),
    ) -> Option<bool> {
        let Some(loc) = self.locate(face, res) else {
            return Some(false); // no unit: not tiled either (`tiling` says `None`)
        };
        if loc.tiling.is_some() {
            return None;
        }
        Some(self.unit_texels_at(face, res, &loc, 0, visit))
    }
}

impl EnginePtex<'_> {
    /// [`PtexFaces::texels`] of tile `tile` of the unit of `face` at `res`, located at `loc`.
    fn unit_texels_at(
        &self,
        face: u32,
        res: Res,
        loc: &UnitLoc,
        tile: usize,
        visit: &mut dyn FnMut(Texels<'_>),
    ) -> bool {
        if tile >= loc.tiling.map_or(1, |t| t.ntiles) {
            return false;
        }
        let (page, offset) = loc.tile(tile);
        let (at, bytes) = (offset as usize, loc.bytes as usize);
        let Some(ptr) = self.unit_page(page, at, bytes, Touch::Record) else {
            return false;
        };
        // SAFETY: `unit_page`'s answer: TILE_BYTES of a published page of this texture,
        // alive while the view lives, with `at + bytes` inside it.
        if !unsafe { PtexPages::unit_valid(ptr, at, bytes) } {
            let unit = PlacedUnit {
                face,
                res,
                tile,
                offset: at,
                bytes,
            };
            // SAFETY: as above; `unit` is where `locate` puts this unit on `page`, and
            // tile memory is the engine's writable tile buffers, which `fill_in_place`
            // writes only where no reader reads (its contract).
            let filled = unsafe {
                self.pages
                    .fill_in_place(page, ptr as *mut u8, &unit, Some(self))
            };
            if let Err(e) = filled {
                self.pages.record_unit_error(e);
                return false;
            }
        }
        // SAFETY: as above, and `at + bytes` is within the page. Only this unit's bytes are
        // borrowed: other units of a lazily filled page may be written in place meanwhile
        // (never this one, whose bit is set), and the bitmap is accessed atomically.
        let texels = unsafe { std::slice::from_raw_parts(ptr.add(at), bytes) };
        visit(Texels::Packed(texels));
        true
    }

    /// The tile memory of `page` if it is resident (touched as `touch`: a lookup's own
    /// units record a use, a reduction's source only peeks) and holds
    /// `at..at + bytes`: by the contract of `CpuView::new`, TILE_BYTES of a page of this
    /// texture, filled by `PtexPages::fill_page` and published, alive while the view lives.
    fn unit_page(&self, page: u32, at: usize, bytes: usize, touch: Touch) -> Option<*const u8> {
        let inside = at.checked_add(bytes).is_some_and(|end| end <= TILE_BYTES);
        if let Some((p, ptr)) = self.last_page.get() {
            // Recorded (and resident) already in this lookup: the view pins its memory.
            if p == page {
                return inside.then_some(ptr);
            }
        }
        let sampler = self.pages_sampler()?;
        let (tx, ty) = PtexPages::tile_of_page(page);
        let lv = &sampler.levels[0];
        if tx >= lv.tiles_x || ty >= sampler.num_pages {
            return None;
        }
        let global = sampler.start_page + lv.offset + ty * lv.tiles_x + tx;
        if global >= sampler.start_page + sampler.num_pages {
            return None;
        }
        let resident = match touch {
            Touch::Record => self.view.request(global),
            Touch::Peek => self.view.pages().is_resident(global),
        };
        let ptr = self.view.tiles().get(global);
        if !resident || ptr.is_null() {
            return None;
        }
        if touch == Touch::Record {
            self.last_page.set(Some((page, ptr)));
        }
        inside.then_some(ptr)
    }
}

/// A lazily filled unit reduces from the texture's resident units where they hold a
/// resolution its chain passes through: the budget serves as the cache of reductions'
/// sources, beside the decode cache. Only valid units are read, and nothing is requested.
impl DecodedUnits for EnginePtex<'_> {
    fn unit_texels(&self, face: u32, res: Res) -> Option<Vec<u8>> {
        let loc = self.locate(face, res)?;
        if loc.tiling.is_some() {
            return None; // read by region, tile by tile
        }
        let (at, bytes) = (loc.offset as usize, loc.bytes as usize);
        let ptr = self.unit_page(loc.page, at, bytes, Touch::Peek)?;
        // SAFETY: `unit_page`'s answer, as in `texels`; a unit's bytes are read only once
        // its bit is set, and never written again.
        unsafe {
            PtexPages::unit_valid(ptr, at, bytes)
                .then(|| std::slice::from_raw_parts(ptr.add(at), bytes).to_vec())
        }
    }

    fn keep(&self, face: u32, res: Res, texels: &[u8]) {
        let Some(loc) = self.locate(face, res) else {
            return;
        };
        if loc.tiling.is_some() || !has_bitmap(loc.bytes) {
            return; // tiled, or a page of its own (filled whole when it is filled)
        }
        let (at, bytes) = (loc.offset as usize, loc.bytes as usize);
        let Some(ptr) = self.unit_page(loc.page, at, bytes, Touch::Peek) else {
            return;
        };
        let unit = PlacedUnit {
            face,
            res,
            tile: 0,
            offset: at,
            bytes,
        };
        // SAFETY: as in `texels`: a published page of this texture, `unit` where `locate`
        // puts it, written only while its bit is clear and under the page's lock.
        unsafe {
            self.pages
                .offer_in_place(loc.page, ptr as *mut u8, &unit, texels)
        };
    }
}
