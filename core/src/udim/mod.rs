//! UDIM textures: a grid of textures ("tiles") addressed by one coordinate space, each tile
//! spanning one unit of (s, t), with an optional whole-grid base texture for distant
//! lookups and for the parts of the plane no tile covers.
//!
//! # Creating one
//!
//! [`crate::Engine::create_udim_texture`] takes a [`UdimGrid`] of image sources (holes
//! allowed) and one [`TextureDesc`] for every tile and the base; [`tile_desc`] (clamp
//! addressing) is the sensible choice, since a tile must not wrap onto its own opposite
//! edge at a tile boundary. [`crate::Engine::create_udim_from_pattern`] expands a path
//! pattern such as `color.<UDIM>.exr` from the files present (see [`expand_pattern`];
//! [`find_tiles`] lists the same files without making a grid).
//!
//! Each tile becomes an ordinary texture with its own id; the ids of a grid are
//! consecutive, row-major: tile (col, row) is `first + row · width + col`. A hole still
//! takes an id, with a null sampler entry and the base-colour entry
//! [`HOLE_BASE_COLOR`](crate::paging::HOLE_BASE_COLOR), both resident from creation. The
//! base texture, if any, takes the id after the last tile.
//!
//! # The UDIM entry
//!
//! A [`UdimId`] is a page of the resource range whose 64-bit page-table entry describes the
//! grid. It is published at creation, resident and never evicted. Layout (bit 0 = least
//! significant; no pointers, so the CUDA device code decodes the same entry):
//!
//! ```text
//! bits  0..24  first tile's texture id
//! bits 24..48  base texture id; 0xFF_FFFF = no base texture
//! bits 48..56  grid width  (columns, 1..=255)
//! bits 56..64  grid height (rows,    1..=255)
//! ```
//!
//! A grid whose first id or base id does not fit in 24 bits (`max_textures` above 2^24) is
//! refused with [`crate::Error::InvalidArgument`].
//!
//! # Sampling
//!
//! [`tex2d_grad_udim`] (also [`crate::Launch::tex2d_grad_udim`]), as OpenImageIO: tile
//! column `floor(s)`, row `floor(t)` (UDIM number `1001 + col + 10 · row`), and the tile is
//! sampled at `(s − col, t − row)` with the same gradients. See [`sample`] for the rules
//! (distant lookups, holes, the outside of the grid, bad input).
//! [`tex2d_grad_udim_with_derivatives`] adds the derivatives of the value with respect to
//! the UDIM coordinates.

mod create;
pub mod pattern;
pub mod sample;
#[cfg(test)]
mod tests;

pub use pattern::{expand_pattern, find_tiles, UdimFiles, UdimTileFile};
pub use sample::{tex2d_grad_udim, tex2d_grad_udim_with_derivatives};

use crate::error::{Error, Result};
use crate::ids::TextureId;
use crate::sources::ImageSource;
use crate::textures::{AddressMode, TextureDesc};
use std::sync::Arc;

pub use crate::ids::UdimId;

/// The base-texture field of a UDIM entry that has no base texture.
pub const UDIM_NO_BASE: u32 = 0xFF_FFFF;

/// Largest texture id a UDIM entry can name (24 bits; [`UDIM_NO_BASE`] is reserved).
pub const UDIM_MAX_TEXTURE_ID: u32 = UDIM_NO_BASE - 1;

/// Largest grid width or height (8 bits each in the entry).
pub const UDIM_MAX_GRID_SIDE: u32 = 255;

const ID_MASK: u64 = 0xFF_FFFF;

/// A decoded UDIM entry: where the grid's textures are and how it is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdimEntry {
    /// The texture id of tile (0, 0); tile (col, row) is `first + row · width + col`.
    pub first: TextureId,
    /// The whole-grid base texture.
    pub base: Option<TextureId>,
    /// Columns (1..=255).
    pub width: u32,
    /// Rows (1..=255).
    pub height: u32,
}

impl UdimEntry {
    /// The 64-bit entry (layout in the [module documentation](self)). Errors
    /// ([`Error::InvalidArgument`]) when an id or a side does not fit its field.
    pub fn encode(&self) -> Result<u64> {
        if !(1..=UDIM_MAX_GRID_SIDE).contains(&self.width)
            || !(1..=UDIM_MAX_GRID_SIDE).contains(&self.height)
        {
            return Err(Error::InvalidArgument(format!(
                "a UDIM grid of {}×{} tiles (each side 1..={UDIM_MAX_GRID_SIDE})",
                self.width, self.height
            )));
        }
        if self.first.0 > UDIM_MAX_TEXTURE_ID
            || self.base.is_some_and(|b| b.0 > UDIM_MAX_TEXTURE_ID)
        {
            return Err(Error::InvalidArgument(format!(
                "UDIM texture ids must fit in 24 bits (first tile {}, base {:?}; at most {})",
                self.first.0, self.base, UDIM_MAX_TEXTURE_ID
            )));
        }
        let base = self.base.map_or(UDIM_NO_BASE, |b| b.0);
        Ok(self.first.0 as u64
            | (base as u64) << 24
            | (self.width as u64) << 48
            | (self.height as u64) << 56)
    }

    /// Decode an entry; `None` if it cannot be one (a side of 0).
    #[inline]
    pub fn decode(entry: u64) -> Option<UdimEntry> {
        let width = (entry >> 48) as u32 & 0xFF;
        let height = (entry >> 56) as u32 & 0xFF;
        if width == 0 || height == 0 {
            return None;
        }
        let base = ((entry >> 24) & ID_MASK) as u32;
        Some(UdimEntry {
            first: TextureId((entry & ID_MASK) as u32),
            base: (base != UDIM_NO_BASE).then_some(TextureId(base)),
            width,
            height,
        })
    }

    /// Whether every id the entry names is below `max_textures`.
    #[inline]
    pub fn fits(&self, max_textures: u32) -> bool {
        let end = self.first.0 as u64 + self.num_tiles() as u64;
        end <= max_textures as u64 && self.base.is_none_or(|b| b.0 < max_textures)
    }

    /// Tiles in the grid (holes included).
    #[inline]
    pub fn num_tiles(&self) -> u32 {
        self.width * self.height
    }

    /// The texture id of tile (col, row), if inside the grid (it may be a hole).
    #[inline]
    pub fn tile(&self, col: u32, row: u32) -> Option<TextureId> {
        (col < self.width && row < self.height)
            .then(|| TextureId(self.first.0 + row * self.width + col))
    }
}

/// The sources of a UDIM texture.
#[derive(Clone)]
pub struct UdimGrid {
    /// Columns (1..=255).
    pub width: u32,
    /// Rows (1..=255).
    pub height: u32,
    /// Row-major, `width × height` entries; tile (col, row) at `row · width + col`
    /// (UDIM number `1001 + col + 10 · row`). `None` is a hole. At least one must be a
    /// source.
    pub tiles: Vec<Option<Arc<dyn ImageSource>>>,
    /// A texture of the whole grid (the grid's unit square per tile, scaled to [0, 1)²),
    /// used for distant lookups, holes and the outside of the grid.
    pub base: Option<Arc<dyn ImageSource>>,
}

impl UdimGrid {
    /// Check the shape: sides 1..=255, `tiles.len() == width × height`, at least one tile.
    pub fn validate(&self) -> Result<()> {
        if !(1..=UDIM_MAX_GRID_SIDE).contains(&self.width)
            || !(1..=UDIM_MAX_GRID_SIDE).contains(&self.height)
        {
            return Err(Error::InvalidArgument(format!(
                "a UDIM grid of {}×{} tiles (each side 1..={UDIM_MAX_GRID_SIDE})",
                self.width, self.height
            )));
        }
        let n = (self.width * self.height) as usize;
        if self.tiles.len() != n {
            return Err(Error::InvalidArgument(format!(
                "a {}×{} UDIM grid needs {n} tile entries, got {}",
                self.width,
                self.height,
                self.tiles.len()
            )));
        }
        if self.tiles.iter().all(Option::is_none) {
            return Err(Error::InvalidArgument(
                "a UDIM grid needs at least one tile (every entry is a hole)".into(),
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for UdimGrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<Option<String>> = self
            .tiles
            .iter()
            .map(|t| t.as_ref().map(|s| s.name()))
            .collect();
        f.debug_struct("UdimGrid")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("tiles", &names)
            .field("base", &self.base.as_ref().map(|s| s.name()))
            .finish()
    }
}

/// The textures of a UDIM texture, as [`crate::Engine::udim_tiles`] reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdimTiles {
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Row-major texture ids; `None` for a hole.
    pub tiles: Vec<Option<TextureId>>,
    /// The base texture.
    pub base: Option<TextureId>,
}

impl UdimTiles {
    /// The texture of tile (col, row); `None` outside the grid or for a hole.
    pub fn tile(&self, col: u32, row: u32) -> Option<TextureId> {
        if col >= self.width || row >= self.height {
            return None;
        }
        self.tiles[(row * self.width + col) as usize]
    }
}

/// The descriptor that suits UDIM tiles: clamp addressing on both axes (a lookup near a
/// tile's edge must not wrap onto its opposite edge), linear filtering, isotropic.
pub fn tile_desc() -> TextureDesc {
    TextureDesc {
        address: [AddressMode::Clamp; 2],
        ..TextureDesc::default()
    }
}

/// The UDIM number of tile (col, row): `1001 + col + 10 · row` (meaningful for col < 10).
pub fn udim_number(col: u32, row: u32) -> u32 {
    1001 + col + 10 * row
}

/// The tile (col, row) of a UDIM number in `1001..=1999`.
pub fn udim_tile(number: u32) -> Option<(u32, u32)> {
    (1001..=1999)
        .contains(&number)
        .then(|| ((number - 1001) % 10, (number - 1001) / 10))
}
