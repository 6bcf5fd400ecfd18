//! [`PtexPages`]: a Ptex file served to the engine as an [`ImageSource`] whose 64 KiB
//! tiles are the pages of its [`PackLayout`], so Ptex units live in the one tile budget,
//! with the engine's requests, fills, eviction, second chance and statistics.
//!
//! The image is a single level of float RGBA (64×64-texel tiles, one 64 KiB page each),
//! [`PAGES_ACROSS`] tiles across: page `p` is tile (`p % PAGES_ACROSS`, `p /
//! PAGES_ACROSS`). Its texels mean nothing as colours; the Ptex samplers read the packed
//! units through [`PackLayout::locate`].

use super::pack::{unit_tiling, PackLayout, PlacedUnit, UnitTiling, PAGE_BYTES};
use super::region::Rect;
use super::{BlockInfo, PtexFile, Res};
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TexelFormat, TileRegion};
use std::collections::HashMap;
use std::sync::Arc;

/// Tiles across the virtual image (its width is `64 × PAGES_ACROSS` texels).
pub const PAGES_ACROSS: u32 = 1024;

/// Side of one page's tile in texels (float RGBA).
const TILE_SIDE: u32 = 64;

/// A Ptex file as a source of packed pages.
pub struct PtexPages {
    file: Arc<PtexFile>,
    layout: PackLayout,
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
    /// Pack the units of `file` (reading the tile headers of its tiled blocks).
    pub fn new(file: Arc<PtexFile>) -> PtexPages {
        let ps = file.pixel_size();
        let mut file_tiles = HashMap::new();
        for (face, info) in file.faces().iter().enumerate() {
            let face = face as u32;
            if info.is_constant() || unit_tiling(info.res, ps).is_none() {
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
        let layout = PackLayout::new(file.faces(), file.mesh_type(), ps, file_tiles);
        PtexPages { file, layout }
    }

    /// The texels of tile `tile` (0 for an untiled unit) of `face` at `res`, every texel
    /// (a constant expanded), v-major: one file tile where the file stores the unit's
    /// tiles, else the tile's region ([`PtexFile::read_region`]: only the file tiles it
    /// overlaps, or the matching region of the resolution it is reduced from).
    pub fn read_unit(&self, face: u32, res: Res, tile: usize) -> Result<Vec<u8>, SourceError> {
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
            return Ok(self.file.read_face(face, res).map_err(err)?.into_packed());
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

    /// Decode the units of `page` into `out` (`PAGE_BYTES` bytes).
    pub fn fill_page(&self, page: u32, out: &mut [u8]) -> Result<(), SourceError> {
        for PlacedUnit {
            face,
            res,
            tile,
            offset,
            bytes,
        } in self.layout.units_on_page(page)
        {
            let data = self.read_unit(face, res, tile)?;
            let dest = out.get_mut(offset..offset + bytes).ok_or_else(|| {
                SourceError(format!(
                    "page {page}: unit of face {face} overruns the page"
                ))
            })?;
            if data.len() != bytes {
                return Err(SourceError(format!(
                    "page {page}: face {face} at {res}, tile {tile} is {} bytes, not {bytes}",
                    data.len()
                )));
            }
            dest.copy_from_slice(&data);
        }
        Ok(())
    }
}

impl ImageSource for PtexPages {
    fn name(&self) -> String {
        format!("{} (Ptex pages)", self.file.name())
    }

    fn open(&self) -> Result<ImageInfo, SourceError> {
        let pages = self.layout.num_pages().max(1);
        let rows = pages.div_ceil(PAGES_ACROSS);
        let across = pages.min(PAGES_ACROSS);
        if rows * TILE_SIDE > crate::textures::MAX_TEXTURE_SIZE {
            return Err(SourceError(format!(
                "{}: {pages} pages of Ptex units exceed the {} a texture can hold",
                self.file.name(),
                PAGES_ACROSS * crate::textures::MAX_TEXTURE_SIZE / TILE_SIDE
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
        let mut packed = vec![0u8; PAGE_BYTES];
        self.fill_page(page, &mut packed)?;
        let row = TILE_SIDE as usize * 16;
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
}
