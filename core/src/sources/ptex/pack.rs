//! How the units of a Ptex file — a face at one resolution, or one tile of a large one —
//! are packed into 64 KiB pages, the engine's unit of residency (`docs/PTEX.md`).
//!
//! Units are grouped by their reduction `(redu, redv)` from the face's full resolution
//! (a lookup at one level of detail reads the same reduction of neighbouring faces); each
//! group is a stream of its faces' units in face-id order, starting on a new page. A unit
//! of at most one page is placed at the current offset, or at the start of the next page
//! if it does not fit (units never straddle pages); a larger one is cut into tiles of at
//! most one page, one tile per page. Constant faces and 1×1 resolutions have no unit: the
//! face's constant colour stands for them and is always resident.
//!
//! A page holding several units keeps a validity bitmap in its last [`VALID_BYTES`]
//! bytes: one bit per [`CHUNK_BYTES`] of the page, the bit of the chunk a unit starts in
//! set once the unit holds its texels. Units on such a page start at multiples of
//! [`CHUNK_BYTES`] (so no two share a bit) and fill at most [`UNIT_CAPACITY`] bytes of it;
//! a unit of exactly one page has a page of its own and no bitmap. A blocking cache fills
//! such pages unit by unit as lookups need them (`docs/PTEX.md`).
//!
//! Locating a unit walks at most [`CHECKPOINT`] − 1 faces from a checkpoint kept every
//! [`CHECKPOINT`] faces of each group (every face of the full-resolution group); filling a page walks its units from the first one
//! starting on it, recorded per page.

use super::faces::{FaceInfo, Res};
use super::header::MeshType;
use crate::ids::TILE_BYTES;
use std::collections::HashMap;

/// Bytes of one page.
pub const PAGE_BYTES: usize = TILE_BYTES;

/// Bytes at the end of a page of several units that hold its validity bitmap.
pub const VALID_BYTES: usize = 512;

/// Bytes of a page of several units that units may fill (the rest is the bitmap).
pub const UNIT_CAPACITY: usize = PAGE_BYTES - VALID_BYTES;

/// Bytes of the page covered by one bit of the validity bitmap (4096 bits cover the
/// page); units on a page with a bitmap start at multiples of it.
pub const CHUNK_BYTES: usize = PAGE_BYTES / (VALID_BYTES * 8);

/// The bytes a unit (or tile) of `bytes` may use of its page: a whole page for a unit of
/// one page, else [`UNIT_CAPACITY`].
pub fn page_capacity(bytes: u32) -> u32 {
    if bytes as usize > UNIT_CAPACITY {
        PAGE_BYTES as u32
    } else {
        UNIT_CAPACITY as u32
    }
}

/// Whether a page holding a unit (or tile) of `bytes` has a validity bitmap: every page
/// but one holding a single unit of a whole page.
pub fn has_bitmap(bytes: u32) -> bool {
    bytes as usize <= UNIT_CAPACITY
}

/// The bytes from one unit (or tile) of `bytes` to the next on its page: its size, rounded
/// up to a chunk on a page with a bitmap.
pub fn unit_stride(bytes: u32) -> u32 {
    if has_bitmap(bytes) {
        bytes.max(1).next_multiple_of(CHUNK_BYTES as u32)
    } else {
        bytes.max(1)
    }
}

/// Faces between two checkpoints of a group.
pub const CHECKPOINT: usize = 8;

/// Faces between two checkpoints of the full-resolution group (0, 0): every face, so the
/// point filter's units are found without a walk (8 bytes a face).
pub const CHECKPOINT_FULL_RES: usize = 1;

/// Faces between two checkpoints of group `red`.
fn checkpoint_stride(red: (i8, i8)) -> usize {
    if red == (0, 0) {
        CHECKPOINT_FULL_RES
    } else {
        CHECKPOINT
    }
}

/// How a unit larger than a page is cut: tiles of `tile_res`, `ntiles_u` across.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitTiling {
    /// Resolution of every tile.
    pub tile_res: Res,
    /// Tiles across (u).
    pub ntiles_u: usize,
    /// Tiles in all.
    pub ntiles: usize,
}

/// The tiling of a face at `res` with texels of `pixel_size` bytes: `None` if it fits one
/// page; else near-square tiles of at most one page.
pub fn unit_tiling(res: Res, pixel_size: usize) -> Option<UnitTiling> {
    if res.texels() * pixel_size <= PAGE_BYTES {
        return None;
    }
    // The most texels a tile may hold, as a power of two.
    let max_log2 = (PAGE_BYTES / pixel_size.max(1)).ilog2() as i8;
    let tv = (max_log2 / 2).min(res.vlog2);
    let tu = (max_log2 - tv).min(res.ulog2);
    let tile_res = Res::new(tu, tv);
    let ntiles_u = 1usize << (res.ulog2 - tu);
    let ntiles_v = 1usize << (res.vlog2 - tv);
    Some(UnitTiling {
        tile_res,
        ntiles_u,
        ntiles: ntiles_u * ntiles_v,
    })
}

/// Where a unit lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitLoc {
    /// The page (within the texture's pages) of the unit, or of its first tile.
    pub page: u32,
    /// Byte offset of the unit (or its first tile) in the page.
    pub offset: u32,
    /// The unit's resolution.
    pub res: Res,
    /// Its tiles, if larger than a page ([`UnitLoc::tile`] places them).
    pub tiling: Option<UnitTiling>,
    /// Bytes of the unit, or of one of its tiles.
    pub bytes: u32,
}

impl UnitLoc {
    /// The page and offset of tile `t` (0 for an untiled unit): tiles follow each other
    /// as units do, never straddling a page.
    pub fn tile(&self, t: usize) -> (u32, u32) {
        if t == 0 {
            return (self.page, self.offset);
        }
        let (capacity, stride) = (page_capacity(self.bytes), unit_stride(self.bytes));
        // Tiles that fit after the first (their last one needs `bytes`, not a stride).
        let fit = |from: u32| (capacity - from - self.bytes) / stride + 1;
        let first = fit(self.offset) as usize;
        if t < first {
            return (self.page, self.offset + t as u32 * stride);
        }
        let per = fit(0) as usize;
        let rest = t - first;
        (
            self.page + 1 + (rest / per) as u32,
            (rest % per) as u32 * stride,
        )
    }
}

/// One unit on a page, for filling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlacedUnit {
    /// The face.
    pub face: u32,
    /// Its resolution.
    pub res: Res,
    /// The tile (0 for an untiled unit).
    pub tile: usize,
    /// Byte offset in the page.
    pub offset: usize,
    /// Bytes (the tile's for a tiled unit).
    pub bytes: usize,
}

/// A position in a group's stream.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    page: u32,
    offset: u32,
}

struct Group {
    red: (i8, i8),
    /// The cursor before face `stride * i` (`checkpoint_stride`).
    checkpoints: Vec<Cursor>,
}

/// The packing of one file's units into pages (module documentation).
pub struct PackLayout {
    faces: Vec<FaceInfo>,
    mesh: MeshType,
    pixel_size: usize,
    max_red: usize,
    /// Group index per `(redu, redv)` at `redu * (max_red + 1) + redv`.
    group_of: Vec<Option<u32>>,
    groups: Vec<Group>,
    /// Per page: group, face and tile of the first unit starting on it.
    page_first: Vec<(u32, u32, u32)>,
    /// Per page: bytes of unit data on it.
    useful: Vec<u32>,
    /// Where the next unit goes.
    cursor: Cursor,
    /// The file's own tiling of stored tiled levels (tiles of at most a page).
    file_tiles: HashMap<(u32, Res), UnitTiling>,
    /// One bit per face: whether `file_tiles` has an entry for it (most faces have none,
    /// and `locate` asks for the tiling of every face it walks past).
    has_file_tiles: Vec<u64>,
    /// This layout's key in the per-thread memo of unit locations (`locate_cache`).
    id: u64,
}

impl std::fmt::Debug for PackLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackLayout")
            .field("pages", &self.page_first.len())
            .field("groups", &self.groups.len())
            .field("unit_bytes", &self.unit_bytes())
            .finish_non_exhaustive()
    }
}

impl PackLayout {
    /// Pack the units of `faces` (texels of `pixel_size` bytes on a `mesh`); `file_tiles`
    /// gives the tiling of the units the file stores tiled (with tiles of at most a page),
    /// which then are its tiles; other units larger than a page are cut by [`unit_tiling`].
    pub fn new(
        faces: &[FaceInfo],
        mesh: MeshType,
        pixel_size: usize,
        file_tiles: HashMap<(u32, Res), UnitTiling>,
    ) -> PackLayout {
        let max_red = faces
            .iter()
            .map(|f| f.res.ulog2.max(f.res.vlog2).max(0) as usize)
            .max()
            .unwrap_or(0);
        let mut has_file_tiles = vec![0u64; faces.len().div_ceil(64)];
        for &(face, _) in file_tiles.keys() {
            if let Some(word) = has_file_tiles.get_mut(face as usize / 64) {
                *word |= 1 << (face % 64);
            }
        }
        let mut layout = PackLayout {
            faces: faces.to_vec(),
            mesh,
            pixel_size,
            max_red,
            group_of: vec![None; (max_red + 1) * (max_red + 1)],
            groups: Vec::new(),
            page_first: Vec::new(),
            useful: Vec::new(),
            cursor: Cursor::default(),
            file_tiles,
            has_file_tiles,
            id: super::decode_cache::unique_id(),
        };
        for redu in 0..=max_red as i8 {
            for redv in 0..=max_red as i8 {
                layout.add_group((redu, redv));
            }
        }
        layout
    }

    fn add_group(&mut self, red: (i8, i8)) {
        let stride = checkpoint_stride(red);
        let mut checkpoints = Vec::with_capacity(self.faces.len() / stride + 1);
        let group = self.groups.len() as u32;
        let mut any = false;
        for face in 0..self.faces.len() {
            if face % stride == 0 {
                checkpoints.push(self.cursor);
            }
            let Some(res) = self.unit_res(face as u32, red) else {
                continue;
            };
            any = true;
            let mut cur = self.cursor;
            let loc = self.place(&mut cur, face as u32, res);
            self.cursor = cur;
            let ntiles = loc.tiling.map_or(1, |t| t.ntiles);
            for tile in 0..ntiles {
                let (page, offset) = loc.tile(tile);
                if offset == 0 {
                    debug_assert_eq!(page as usize, self.page_first.len());
                    self.page_first.push((group, face as u32, tile as u32));
                    self.useful.push(0);
                }
                if let Some(u) = self.useful.last_mut() {
                    *u += loc.bytes;
                }
            }
        }
        if any {
            self.group_of[red.0 as usize * (self.max_red + 1) + red.1 as usize] = Some(group);
            self.groups.push(Group { red, checkpoints });
        }
    }

    /// The resolution of `face`'s unit in reduction group `red`, if it has one.
    fn unit_res(&self, face: u32, red: (i8, i8)) -> Option<Res> {
        let f = self.faces.get(face as usize)?;
        if f.is_constant() || (self.mesh == MeshType::Triangle && red.0 != red.1) {
            return None;
        }
        let res = Res::new(f.res.ulog2 - red.0, f.res.vlog2 - red.1);
        (res.ulog2 >= 0 && res.vlog2 >= 0 && res != Res::new(0, 0)).then_some(res)
    }

    /// Place a unit of `res` (or its tiles, one after the other) at `cur`, advancing it;
    /// where it went.
    fn place(&self, cur: &mut Cursor, face: u32, res: Res) -> UnitLoc {
        let (tiling, bytes) = self.unit_bytes_of(face, res);
        let capacity = page_capacity(bytes);
        cur.offset = cur.offset.next_multiple_of(CHUNK_BYTES as u32);
        if cur.offset + bytes > capacity {
            cur.page += 1;
            cur.offset = 0;
        }
        let loc = UnitLoc {
            page: cur.page,
            offset: cur.offset,
            res,
            tiling,
            bytes,
        };
        let (page, offset) = loc.tile(tiling.map_or(0, |t| t.ntiles - 1));
        cur.page = page;
        cur.offset = offset + bytes;
        if cur.offset + bytes.min(1) > capacity {
            cur.page += 1;
            cur.offset = 0;
        }
        loc
    }

    /// How the unit of `face` at `res` is tiled, and the bytes of the unit (or of one tile).
    fn unit_bytes_of(&self, face: u32, res: Res) -> (Option<UnitTiling>, u32) {
        let tiling = self.tiling(face, res);
        let texels = tiling.map_or(res.texels(), |t| t.tile_res.texels());
        (tiling, (texels * self.pixel_size) as u32)
    }

    /// Whether `page` keeps a validity bitmap (it holds units of less than a page).
    pub fn page_has_bitmap(&self, page: u32) -> bool {
        let Some(&(group, face, _)) = self.page_first.get(page as usize) else {
            return false;
        };
        let red = self.groups[group as usize].red;
        self.unit_res(face, red)
            .is_some_and(|res| has_bitmap(self.unit_bytes_of(face, res).1))
    }

    /// Pages in all.
    pub fn num_pages(&self) -> u32 {
        self.page_first.len() as u32
    }

    /// Bytes of unit data in all pages.
    pub fn unit_bytes(&self) -> u64 {
        self.useful.iter().map(|&u| u64::from(u)).sum()
    }

    /// Bytes of unit data on `page`.
    pub fn page_useful_bytes(&self, page: u32) -> u32 {
        self.useful.get(page as usize).copied().unwrap_or(0)
    }

    /// Where the unit of `face` at `res` lies (`None` if it has none: a constant face, 1×1,
    /// or a resolution the face does not have).
    pub fn locate(&self, face: u32, res: Res) -> Option<UnitLoc> {
        let f = self.faces.get(face as usize)?;
        let red = (f.res.ulog2 - res.ulog2, f.res.vlog2 - res.vlog2);
        if red.0 < 0 || red.1 < 0 {
            return None;
        }
        self.unit_res(face, red)?;
        let n = self.max_red + 1;
        let g = self.group_of[red.0 as usize * n + red.1 as usize]?;
        let group = &self.groups[g as usize];
        let stride = checkpoint_stride(red);
        let first = face as usize / stride * stride;
        let mut cur = group.checkpoints[face as usize / stride];
        if first == face as usize {
            return Some(self.place(&mut cur, face, res));
        }
        super::locate_cache::located(self.id, face, res, || {
            for prior in first as u32..face {
                if let Some(r) = self.unit_res(prior, red) {
                    self.place(&mut cur, prior, r);
                }
            }
            Some(self.place(&mut cur, face, res))
        })
    }

    /// How the unit of `face` at `res` is cut into tiles (`None`: one piece).
    pub fn tiling(&self, face: u32, res: Res) -> Option<UnitTiling> {
        let word = self.has_file_tiles.get(face as usize / 64).copied();
        if word.unwrap_or(0) & (1 << (face % 64)) == 0 {
            return unit_tiling(res, self.pixel_size);
        }
        match self.file_tiles.get(&(face, res)) {
            Some(t) => Some(*t),
            None => unit_tiling(res, self.pixel_size),
        }
    }

    /// Every unit (or tile) on `page`, in order.
    pub fn units_on_page(&self, page: u32) -> Vec<PlacedUnit> {
        let Some(&(g0, face0, tile0)) = self.page_first.get(page as usize) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut cur = None;
        for g in g0 as usize..self.groups.len() {
            let red = self.groups[g].red;
            let from = if g == g0 as usize { face0 } else { 0 };
            for face in from..self.faces.len() as u32 {
                let Some(res) = self.unit_res(face, red) else {
                    continue;
                };
                let loc = match cur.as_mut() {
                    None => {
                        // The first unit: placed again from its own place, the walk
                        // continues after it.
                        let Some(loc) = self.locate(face, res) else {
                            return out;
                        };
                        let mut next = Cursor {
                            page: loc.page,
                            offset: loc.offset,
                        };
                        let again = self.place(&mut next, face, res);
                        cur = Some(next);
                        again
                    }
                    Some(c) => self.place(c, face, res),
                };
                let ntiles = loc.tiling.map_or(1, |t| t.ntiles);
                let first_tile = if out.is_empty() && g == g0 as usize && face == face0 {
                    tile0 as usize
                } else {
                    0
                };
                for tile in first_tile..ntiles {
                    let (p, offset) = loc.tile(tile);
                    if p > page {
                        return out;
                    }
                    if p == page {
                        out.push(PlacedUnit {
                            face,
                            res,
                            tile,
                            offset: offset as usize,
                            bytes: loc.bytes as usize,
                        });
                    }
                }
            }
        }
        out
    }
}
