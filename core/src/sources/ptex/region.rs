//! Reading a rectangle of a face at one resolution without decoding the whole face: the
//! file tiles that overlap it at a stored level, and, for a reduction made on the fly, the
//! matching (twice as long) rectangle of the resolution it is reduced from. Quad reductions
//! are local (each reduced texel averages two neighbours), so a rectangle reduced alone
//! equals the same rectangle of the whole face reduced; triangle reductions mirror across
//! the diagonal and are read whole.
//!
//! This is what the engine's units need: a tile of a large face (or of a large reduction
//! of one) decodes only the part of the file it covers.

use super::decode::FaceData;
use super::error::{Fail, R};
use super::faces::Res;
use super::header::MeshType;
use super::levels::Encoding;
use super::read::Data;
use super::values::{reduce, Reduction};
use super::{PtexError, PtexFile};
use std::sync::Arc;

/// A rectangle of texels: origin and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// First column.
    pub x: usize,
    /// First row.
    pub y: usize,
    /// Columns.
    pub w: usize,
    /// Rows.
    pub h: usize,
}

impl PtexFile {
    /// The texels of `rect` of `face` at `res` (v-major, `rect.w × rect.h`, a constant
    /// expanded), equal to the same rectangle of [`PtexFile::read_face`]`(face, res)`,
    /// decoding only the file tiles it needs.
    pub fn read_region(&self, face: u32, res: Res, rect: Rect) -> Result<Vec<u8>, PtexError> {
        self.region(face, res, rect)
            .map_err(|e| e.in_file(&self.name))
    }

    fn region(&self, face: u32, res: Res, rect: Rect) -> R<Vec<u8>> {
        if rect.w == 0
            || rect.h == 0
            || rect.x.checked_add(rect.w).is_none_or(|e| e > res.u())
            || rect.y.checked_add(rect.h).is_none_or(|e| e > res.v())
        {
            return Err(Fail::range(format!(
                "face {face}: region {}×{} at ({}, {}) is outside {res}",
                rect.w, rect.h, rect.x, rect.y
            )));
        }
        let ps = self.texels.pixel_size;
        self.texels
            .limits
            .check_image(
                format_args!("face {face}: a region of {}×{} texels", rect.w, rect.h),
                rect.w as u64 * rect.h as u64 * ps as u64,
            )
            .map_err(Fail::range)?;
        if rect
            == (Rect {
                x: 0,
                y: 0,
                w: res.u(),
                h: res.v(),
            })
        {
            // The whole face: through the decode cache, as reductions' sources are.
            return Ok(Arc::unwrap_or_clone(self.data(face, res)?.face).into_packed());
        }
        match self.source(face, res)? {
            Ok(None) => Ok(self.const_data(face).repeat(rect.w * rect.h)),
            Ok(Some(level)) => self.stored_region(face, level, res, rect),
            Err(_) if self.kinds.mesh == MeshType::Triangle => {
                // Triangle reductions mirror across the diagonal: read the face whole.
                let data = self.data(face, res)?;
                Ok(cut(&data.face, rect, ps))
            }
            Err((how, from)) => {
                let src_rect = match how {
                    Reduction::U => Rect {
                        x: 2 * rect.x,
                        w: 2 * rect.w,
                        ..rect
                    },
                    _ => Rect {
                        y: 2 * rect.y,
                        h: 2 * rect.h,
                        ..rect
                    },
                };
                let src = self.region(face, from, src_rect)?;
                let t = &self.texels;
                Ok(reduce(
                    t.data_type,
                    how,
                    &src,
                    src_rect.w,
                    src_rect.h,
                    t.nchannels,
                ))
            }
        }
    }

    /// `rect` of the stored block of `face` at `level` (resolution `res`): an untiled block
    /// decoded and cut, or the tiles of a tiled one that overlap `rect`.
    fn stored_region(&self, face: u32, level: usize, res: Res, rect: Rect) -> R<Vec<u8>> {
        let ps = self.texels.pixel_size;
        let (block, _) = self.block_at(face, level)?;
        if block.span.header.encoding() != Encoding::Tiled {
            let Data { face: data, .. } = self.data(face, res)?;
            return Ok(cut(&data, rect, ps));
        }
        let context = |e: Fail| e.context(format!("face {face}, level {level}"));
        let layout = block.tiles(&self.input, res).map_err(context)?;
        let (tw, th) = (layout.tile_res.u(), layout.tile_res.v());
        let mut out = vec![0u8; rect.w * rect.h * ps];
        for tv in rect.y / th..(rect.y + rect.h).div_ceil(th) {
            for tu in rect.x / tw..(rect.x + rect.w).div_ceil(tw) {
                let k = tv * layout.ntiles_u + tu;
                let span = *layout.tiles.get(k).ok_or_else(|| {
                    Fail::corrupt(format!("face {face}, level {level}: no tile {k}"))
                })?;
                let key = (self.cache_id, face, level, k);
                let tile = match last_tile(key) {
                    Some(tile) => tile,
                    None => {
                        let tile = self
                            .texels
                            .decode(&self.input, span, layout.tile_res, level)
                            .map_err(|e| context(e.context(format!("tile {k}"))))?;
                        remember_tile(key, tile)
                    }
                };
                copy_overlap(&tile, (tu * tw, tv * th), rect, &mut out, ps);
            }
        }
        Ok(out)
    }
}

/// A stored tile: the file's id in the decode cache, the face, the level, the tile.
type TileKey = (u64, u32, usize, usize);

thread_local! {
    /// The stored tile this thread decoded last. The writer's tiles are larger than the
    /// engine's units of a tiled face (a 96 KiB tile of 3-byte texels holds two 48 KiB
    /// units), so the units of one tile are read one after the other and would decode it
    /// once each. One tile per thread, dropped when the next is decoded.
    static LAST_TILE: std::cell::RefCell<Option<(TileKey, Arc<FaceData>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The stored tile `key` if this thread decoded it last.
fn last_tile(key: TileKey) -> Option<Arc<FaceData>> {
    LAST_TILE
        .try_with(|t| match &*t.borrow() {
            Some((k, tile)) if *k == key => Some(tile.clone()),
            _ => None,
        })
        .ok()
        .flatten()
}

/// Remember `tile` as this thread's last decoded stored tile `key`.
fn remember_tile(key: TileKey, tile: FaceData) -> Arc<FaceData> {
    let tile = Arc::new(tile);
    let _ = LAST_TILE.try_with(|t| *t.borrow_mut() = Some((key, tile.clone())));
    tile
}

/// `rect` of `data` (which holds it), packed.
fn cut(data: &FaceData, rect: Rect, ps: usize) -> Vec<u8> {
    let mut out = vec![0u8; rect.w * rect.h * ps];
    copy_overlap(data, (0, 0), rect, &mut out, ps);
    out
}

/// Copy the texels of `src`, whose first texel is at `origin` in face texels, that lie in
/// `rect` into `out` (`rect`'s texels, packed): a row at a time (a constant texel by
/// texel).
fn copy_overlap(src: &FaceData, origin: (usize, usize), rect: Rect, out: &mut [u8], ps: usize) {
    let (sw, sh) = (src.res().u(), src.res().v());
    let (x0, x1) = (rect.x.max(origin.0), (rect.x + rect.w).min(origin.0 + sw));
    let (y0, y1) = (rect.y.max(origin.1), (rect.y + rect.h).min(origin.1 + sh));
    if x0 >= x1 || src.pixel_size() != ps {
        return;
    }
    let row = (x1 - x0) * ps;
    for y in y0..y1 {
        let at = ((y - rect.y) * rect.w + (x0 - rect.x)) * ps;
        let dst = &mut out[at..at + row];
        if src.is_constant() {
            for texel in dst.chunks_exact_mut(ps) {
                texel.copy_from_slice(src.bytes());
            }
        } else {
            let from = ((y - origin.1) * sw + (x0 - origin.0)) * ps;
            dst.copy_from_slice(&src.bytes()[from..from + row]);
        }
    }
}
