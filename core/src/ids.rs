//! Newtype ids: textures and pages are never confused with plain integers.

use serde::Serialize;

/// A texture handed out by [`crate::Engine::create_texture`]. It is also the id of the
/// texture's sampler page (see [`crate::paging::PageLayout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[repr(transparent)]
pub struct TextureId(pub u32);

/// A UDIM texture handed out by [`crate::Engine::create_udim_texture`]: the resource page
/// whose page-table entry describes the grid (see [`crate::udim`] for the entry's layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[repr(transparent)]
pub struct UdimId(pub u32);

impl UdimId {
    /// The resource page holding the grid's entry.
    #[inline]
    pub fn page(self) -> PageId {
        PageId(self.0)
    }
}

/// A page of the virtual page space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[repr(transparent)]
pub struct PageId(pub u32);

impl PageId {
    /// The page's index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Bytes of a full tile: a page of a texture laid out for any backend holds this much
/// texel data (a GPU's sparse tile). On a backend that samples host memory, a texture whose
/// file tiles are smaller gets pages of its file tiles' size
/// ([`TextureLayout::tile_bytes`](crate::textures::TextureLayout::tile_bytes)), a power of two
/// from [`MIN_TILE_BYTES`] to this.
pub const TILE_BYTES: usize = 64 * 1024;

/// Bytes of the smallest tile a texture may be given (see [`TILE_BYTES`]).
pub const MIN_TILE_BYTES: usize = 4 * 1024;

/// Whether `bytes` is a tile size: a power of two from [`MIN_TILE_BYTES`] to [`TILE_BYTES`].
pub const fn is_tile_size(bytes: usize) -> bool {
    bytes.is_power_of_two() && bytes >= MIN_TILE_BYTES && bytes <= TILE_BYTES
}
