//! The sizes of units on pages (`super::pack` places them): a page's bytes and validity
//! bitmap, the chunk a unit starts on, how a unit larger than a page is cut into tiles, and
//! where a unit's tiles lie once its first is placed.

use super::faces::Res;
use crate::ids::TILE_BYTES;

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
