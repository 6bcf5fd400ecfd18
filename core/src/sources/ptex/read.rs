//! Reading texels: stored blocks and tiles, whole faces at any resolution (stored or
//! reduced on the fly, as the reference's `getData(face, res)`, format note §15) and single
//! texels (its `getPixel`).

use super::decode::{assemble, FaceData};
use super::error::{Fail, R};
use super::faces::Res;
use super::header::MeshType;
use super::levels::{Block, BlockSpan, Encoding, TileLayout};
use super::values::{reduce, to_f32, Reduction};
use super::{PtexError, PtexFile};
use std::sync::Arc;

/// Where a face's stored block of one level lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The stored level (0 is full resolution).
    pub level: usize,
    /// The face's resolution at that level.
    pub res: Res,
    /// The block's offset, size and encoding.
    pub span: BlockSpan,
    /// The tiles, for a tiled block.
    pub tiles: Option<Arc<TileLayout>>,
}

/// Decoded data of a face at one resolution, with whether the reference would see it as
/// uniform when reducing it (a constant, or tiles that are all the same constant).
pub(super) struct Data {
    pub(super) face: Arc<FaceData>,
    pub(super) uniform: bool,
}

/// Face data at hand elsewhere — the engine's resident units — that a reduction may start
/// from instead of making its source again from the stored level (format note §15).
pub trait DecodedUnits {
    /// Every texel of `face` at `res` (v-major, `pixel_size` bytes each), if at hand; a
    /// wrong length is ignored.
    fn unit_texels(&self, face: u32, res: Res) -> Option<Vec<u8>>;

    /// `texels`, every texel of `face` at `res`, were made on the way to another
    /// resolution: keep them if there is room for them (the engine: their unit, if its page
    /// is resident and the unit not yet filled). Does nothing by default.
    fn keep(&self, face: u32, res: Res, texels: &[u8]) {
        let _ = (face, res, texels);
    }
}

impl PtexFile {
    /// How many levels of `face` are stored: 1 (full resolution) plus its stored
    /// reductions. Constant and edited faces have 1 (an edited face's reductions are stale).
    pub fn stored_levels(&self, face: u32) -> Result<usize, PtexError> {
        self.levels_of(face).map_err(|e| e.in_file(&self.name))
    }

    /// The stored block of `face` at `level` (`0..stored_levels(face)`); a tiled block's
    /// tile headers are read at the first call and kept.
    pub fn block(&self, face: u32, level: usize) -> Result<BlockInfo, PtexError> {
        let run = || {
            let (block, res) = self.stored(face, level)?;
            let tiles = match block.span.header.encoding() {
                Encoding::Tiled if !self.faces[face as usize].is_constant() => {
                    Some(block.tiles(&self.input, res)?)
                }
                _ => None,
            };
            Ok(BlockInfo {
                level,
                res,
                span: block.span,
                tiles,
            })
        };
        run().map_err(|e: Fail| e.in_file(&self.name))
    }

    /// `face` at its stored `level`, tiles assembled; a constant face gives its constant.
    pub fn read_level(&self, face: u32, level: usize) -> Result<FaceData, PtexError> {
        self.level_data(face, level)
            .map(|d| Arc::unwrap_or_clone(d.face))
            .map_err(|e| e.in_file(&self.name))
    }

    /// Tile `tile` (in `tv * ntiles_u + tu` order) of the tiled block of `face` at `level`,
    /// at the tile resolution.
    pub fn read_tile(&self, face: u32, level: usize, tile: usize) -> Result<FaceData, PtexError> {
        let run = || {
            let (block, res) = self.stored(face, level)?;
            if self.faces[face as usize].is_constant()
                || block.span.header.encoding() != Encoding::Tiled
            {
                return Err(Fail::range(format!(
                    "face {face} is not tiled at level {level}"
                )));
            }
            let layout = block.tiles(&self.input, res)?;
            let span = *layout.tiles.get(tile).ok_or_else(|| {
                Fail::range(format!(
                    "face {face} has {} tiles at level {level}, not {}",
                    layout.tiles.len(),
                    tile + 1
                ))
            })?;
            self.texels
                .decode(&self.input, span, layout.tile_res, level)
                .map_err(|e| e.context(format!("face {face}, level {level}, tile {tile}")))
        };
        run().map_err(|e| e.in_file(&self.name))
    }

    /// `face` at resolution `res` (up to its own in each direction), as the reference's
    /// `getData(face, res)`:
    /// - a constant face, or `res` 1×1 (log2 0, 0): the face's constant value;
    /// - full resolution: level 0;
    /// - an isotropic reduction the file stores (face not edited): that level;
    /// - otherwise reduced on the fly from the next larger resolution (recursively):
    ///   triangles isotropically (`reduceTri`; anisotropic resolutions are errors), quads
    ///   in u or v (isotropic: in u when `res.ulog2` is odd; else along the larger
    ///   reduction), with the reference's arithmetic.
    pub fn read_face(&self, face: u32, res: Res) -> Result<FaceData, PtexError> {
        self.read_face_from(face, res, None)
    }

    /// [`PtexFile::read_face`], reducing from `units` where they hold a resolution the
    /// chain passes through (their texels are those this reader would make).
    pub fn read_face_from(
        &self,
        face: u32,
        res: Res,
        units: Option<&dyn DecodedUnits>,
    ) -> Result<FaceData, PtexError> {
        self.data_for_caller(face, res, units)
            .map(|d| Arc::unwrap_or_clone(d.face))
            .map_err(|e| e.in_file(&self.name))
    }

    /// The raw texel (`pixel_size` bytes) at (`u`, `v`) of `face` at `res`, as
    /// `getData(face, res)->getPixel(u, v)`. Reads one tile at most where the data is
    /// stored.
    pub fn texel(&self, face: u32, res: Res, u: usize, v: usize) -> Result<Vec<u8>, PtexError> {
        self.texel_inner(face, res, u, v)
            .map_err(|e| e.in_file(&self.name))
    }

    /// The texel at (`u`, `v`) of `face` at `res` as `f32`, one value per channel, as the
    /// reference's `getPixel(face, u, v, ..., res)` ([`super::values::to_f32`]).
    pub fn pixel(&self, face: u32, res: Res, u: usize, v: usize) -> Result<Vec<f32>, PtexError> {
        let raw = self.texel(face, res, u, v)?;
        let mut out = vec![0f32; self.num_channels()];
        to_f32(self.data_type(), &raw, &mut out);
        Ok(out)
    }

    fn levels_of(&self, face: u32) -> R<usize> {
        let info = self.face(face)?;
        if info.is_constant() || info.has_edits() {
            return Ok(1);
        }
        let r = self.rfaceids[face as usize] as usize;
        Ok(1 + self.levels[1..]
            .iter()
            .take_while(|l| r < l.blocks.len())
            .count())
    }

    /// The block of `face` at stored `level` and the face's resolution there.
    fn stored(&self, face: u32, level: usize) -> R<(&Block, Res)> {
        let n = self.levels_of(face)?;
        if level >= n {
            let why = if self.faces[face as usize].has_edits() {
                " (it was edited: its stored reductions are stale)"
            } else {
                ""
            };
            return Err(Fail::range(format!(
                "face {face} has {n} stored level(s){why}, not level {level}"
            )));
        }
        self.block_at(face, level)
    }

    /// The block of `face` in `level`, which holds it (level 0: by face id; above: by
    /// rfaceid).
    pub(super) fn block_at(&self, face: u32, level: usize) -> R<(&Block, Res)> {
        let index = if level == 0 {
            face as usize
        } else {
            self.rfaceids[face as usize] as usize
        };
        let res = self.faces[face as usize].res.reduced(level.min(127) as i8);
        if !res.is_valid() {
            return Err(Fail::corrupt(format!(
                "face {face} ({}) is stored in level {level}, below one texel",
                self.faces[face as usize].res
            )));
        }
        Ok((&self.levels[level].blocks[index], res))
    }

    fn level_data(&self, face: u32, level: usize) -> R<Data> {
        self.stored(face, level)?;
        self.block_data(face, level)
    }

    /// Decode the whole block of `face` in `level` (which holds it).
    fn block_data(&self, face: u32, level: usize) -> R<Data> {
        let info = &self.faces[face as usize];
        if info.is_constant() {
            let texel = self.const_data(face);
            return Ok(Data {
                face: Arc::new(FaceData::constant(info.res, texel)),
                uniform: true,
            });
        }
        let (block, res) = self.block_at(face, level)?;
        let context = |e: Fail| e.context(format!("face {face}, level {level}"));
        if block.span.header.encoding() != Encoding::Tiled {
            let face = self
                .texels
                .decode(&self.input, block.span, res, level)
                .map_err(context)?;
            let uniform = face.is_constant();
            return Ok(Data {
                face: Arc::new(face),
                uniform,
            });
        }
        let layout = block.tiles(&self.input, res).map_err(context)?;
        self.check_face_bytes(face, res)?;
        let mut tiles = Vec::with_capacity(layout.tiles.len());
        for (k, &span) in layout.tiles.iter().enumerate() {
            let tile = self
                .texels
                .decode(&self.input, span, layout.tile_res, level);
            tiles.push(tile.map_err(|e| context(e.context(format!("tile {k}"))))?);
        }
        let uniform = tiles
            .iter()
            .all(|t| t.is_constant() && t.bytes() == tiles[0].bytes());
        let ps = self.texels.pixel_size;
        Ok(Data {
            face: Arc::new(assemble(res, layout.tile_res, layout.ntiles_u, &tiles, ps)),
            uniform,
        })
    }

    fn check_face_bytes(&self, face: u32, res: Res) -> R<()> {
        // Whole-face reads ([`PtexFile::read_level`], [`PtexFile::read_face`]) assemble
        // the face in memory: an image, within `max_image_bytes` (larger faces are read by
        // tiles, [`PtexFile::read_tile`]).
        let bytes = res.texels() as u64 * self.texels.pixel_size as u64;
        self.texels
            .limits
            .check_image(format_args!("face {face} read whole at {res}"), bytes)
            .map_err(|e| Fail::range(format!("{e}; read it by tiles")))
    }

    pub(super) fn const_data(&self, face: u32) -> Vec<u8> {
        let ps = self.texels.pixel_size;
        self.const_data[face as usize * ps..(face as usize + 1) * ps].to_vec()
    }

    /// Where `face` at `res` comes from: `Ok(Some(level))` for a stored level, `Ok(None)`
    /// for its constant, `Err` with the reduction to make on the fly.
    pub(super) fn source(&self, face: u32, res: Res) -> R<Result<Option<usize>, (Reduction, Res)>> {
        let info = self.face(face)?;
        if info.is_constant() || res == Res::new(0, 0) {
            if res.ulog2 > info.res.ulog2 || res.vlog2 > info.res.vlog2 || !res.is_valid() {
                return Err(Fail::range(format!(
                    "face {face} ({}) has no resolution {res}",
                    info.res
                )));
            }
            return Ok(Ok(None));
        }
        let (redu, redv) = (info.res.ulog2 - res.ulog2, info.res.vlog2 - res.vlog2);
        if !res.is_valid() || redu < 0 || redv < 0 {
            return Err(Fail::range(format!(
                "face {face} ({}) has no resolution {res}",
                info.res
            )));
        }
        if redu == 0 && redv == 0 {
            return Ok(Ok(Some(0)));
        }
        let level = redu as usize;
        if redu == redv
            && !info.has_edits()
            && level < self.levels.len()
            && (self.rfaceids[face as usize] as usize) < self.levels[level].blocks.len()
        {
            return Ok(Ok(Some(level)));
        }
        Ok(Err(match self.kinds.mesh {
            MeshType::Triangle if redu != redv => {
                return Err(Fail::range(format!(
                    "face {face} is a triangle: it has no anisotropic resolution {res}"
                )))
            }
            MeshType::Triangle => (Reduction::Triangle, Res::new(res.ulog2 + 1, res.vlog2 + 1)),
            MeshType::Quad => {
                let in_u = if redu == redv {
                    res.ulog2 & 1 != 0
                } else {
                    redu > redv
                };
                if in_u {
                    (Reduction::U, Res::new(res.ulog2 + 1, res.vlog2))
                } else {
                    (Reduction::V, Res::new(res.ulog2, res.vlog2 + 1))
                }
            }
        }))
    }

    /// `face` at `res` for a caller that keeps it (a page's unit, a resident face): from
    /// the decode cache, or made (its sources kept there, as [`PtexFile::data`] keeps
    /// them) but not kept itself: the cache holds what reductions are made from, not a
    /// second copy of what the caller holds.
    fn data_for_caller(&self, face: u32, res: Res, units: Option<&dyn DecodedUnits>) -> R<Data> {
        match self.decode_cache.get(self.cache_id, face, res) {
            Some((face, uniform)) => Ok(Data { face, uniform }),
            None => self.compute_data(face, res, units),
        }
    }

    /// `face` at `res`, from the decode cache or decoded (and then kept there, except a
    /// constant, which costs nothing to make).
    pub(super) fn data(&self, face: u32, res: Res) -> R<Data> {
        self.source_data(face, res, None)
    }

    /// [`PtexFile::data`], or `units`' copy (not kept: its owner holds it) when the cache
    /// has none.
    fn source_data(&self, face: u32, res: Res, units: Option<&dyn DecodedUnits>) -> R<Data> {
        let cache = &self.decode_cache;
        if let Some((face, uniform)) = cache.get(self.cache_id, face, res) {
            return Ok(Data { face, uniform });
        }
        let ps = self.texels.pixel_size;
        if let Some(texels) = units.and_then(|u| u.unit_texels(face, res)) {
            // Texels that are not all one value cannot be uniform data, so they reduce as
            // the file's would. All one value may have come from uniform data, which the
            // chain turns into a constant rather than reducing (the two differ where a sum
            // overflows, or in a NaN's payload): that source is made from the file.
            let sized = texels.len() == res.texels() * ps;
            if sized && texels.chunks_exact(ps).any(|t| t != &texels[..ps]) {
                return Ok(Data {
                    face: Arc::new(FaceData::packed(res, ps, texels)),
                    uniform: false,
                });
            }
        }
        let data = self.compute_data(face, res, units)?;
        if !data.face.is_constant() {
            cache.insert(self.cache_id, face, res, &data.face, data.uniform);
            if let Some(units) = units {
                units.keep(face, res, data.face.bytes());
            }
        }
        Ok(data)
    }

    fn compute_data(&self, face: u32, res: Res, units: Option<&dyn DecodedUnits>) -> R<Data> {
        match self.source(face, res)? {
            Ok(None) => Ok(Data {
                face: Arc::new(FaceData::constant(res, self.const_data(face))),
                uniform: true,
            }),
            Ok(Some(level)) => self.block_data(face, level),
            Err((how, from)) => {
                self.check_face_bytes(face, from)?;
                let src = self.source_data(face, from, units)?;
                if src.uniform {
                    let texel = src.face.bytes()[..self.texels.pixel_size].to_vec();
                    return Ok(Data {
                        face: Arc::new(FaceData::constant(res, texel)),
                        uniform: true,
                    });
                }
                // The source's texels, borrowed (from the decode cache, often).
                let expanded;
                let packed: &[u8] = if src.face.is_constant() {
                    expanded = FaceData::clone(&src.face).into_packed();
                    &expanded
                } else {
                    src.face.bytes()
                };
                let t = &self.texels;
                let reduced = reduce(t.data_type, how, packed, from.u(), from.v(), t.nchannels);
                Ok(Data {
                    face: Arc::new(FaceData::packed(res, t.pixel_size, reduced)),
                    uniform: false,
                })
            }
        }
    }

    fn texel_inner(&self, face: u32, res: Res, u: usize, v: usize) -> R<Vec<u8>> {
        if u >= res.u() || v >= res.v() || !res.is_valid() {
            return Err(Fail::range(format!("texel ({u}, {v}) is outside {res}")));
        }
        let level = match self.source(face, res)? {
            Ok(None) => return Ok(self.const_data(face)),
            Ok(Some(level)) => level,
            Err(_) => {
                let d = self.data(face, res)?;
                return Ok(d.face.texel(u, v).unwrap_or_default().to_vec());
            }
        };
        let (block, res) = self.block_at(face, level)?;
        let context = |e: Fail| e.context(format!("face {face}, level {level}"));
        let (span, tile_res, tu, tv) = if block.span.header.encoding() == Encoding::Tiled {
            let layout = block.tiles(&self.input, res).map_err(context)?;
            let (tu, tv) = (u >> layout.tile_res.ulog2, v >> layout.tile_res.vlog2);
            (
                layout.tiles[tv * layout.ntiles_u + tu],
                layout.tile_res,
                tu,
                tv,
            )
        } else {
            (block.span, res, 0, 0)
        };
        let data = self
            .texels
            .decode(&self.input, span, tile_res, level)
            .map_err(context)?;
        let t = data.texel(u - (tu << tile_res.ulog2), v - (tv << tile_res.vlog2));
        Ok(t.unwrap_or_default().to_vec())
    }
}
