//! Constant-tile coalescing: a filled tile whose texels all hold one value is stored once
//! per distinct value. Masks, mattes and painted-out regions of production textures are
//! full of such tiles (OTK coalesces black and white ones); every page that holds one
//! points at one shared slot, which counts against the budget once.
//!
//! This module finds constant tiles ([`constant_texel`]) and keeps the shared slots
//! ([`SharedTiles`]): one per [`ConstantKey`], with the number of pages that use it.
//! [`crate::memory::Residency`] decides when a tile is shared and when a shared slot
//! goes back to the pool (the last page using it evicted or dropped).

use super::tile_buffer::TileBuffer;
use std::collections::HashMap;

/// Bytes of the largest texel (RGBA32F).
pub const MAX_TEXEL_BYTES: usize = 16;

/// What makes two constant tiles interchangeable: the same tile shape, texel size and
/// texel bytes. The tile's whole `tile_width × tile_height` texels hold the value, so one
/// slot serves edge tiles and interior tiles alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConstantKey {
    /// Tile width in texels.
    pub tile_width: u32,
    /// Tile height in texels.
    pub tile_height: u32,
    /// Bytes per texel (at most [`MAX_TEXEL_BYTES`]).
    pub texel_bytes: u8,
    /// The texel, in its first `texel_bytes` bytes (the rest zero).
    pub value: [u8; MAX_TEXEL_BYTES],
}

/// The shape of a tile in its buffer: `width × height` texels of the image (an edge
/// tile's are fewer than the tile's), rows `row_bytes` apart, in a tile of
/// `tile_width × tile_height` texels of `texel_bytes` bytes.
#[derive(Clone, Copy, Debug)]
pub struct TileShape {
    /// Texels of the image in a row of the tile.
    pub width: usize,
    /// Rows of the image in the tile.
    pub height: usize,
    /// The tile's width in texels.
    pub tile_width: usize,
    /// The tile's height in texels.
    pub tile_height: usize,
    /// Bytes per texel.
    pub texel_bytes: usize,
}

impl TileShape {
    fn row_bytes(&self) -> usize {
        self.tile_width * self.texel_bytes
    }
}

/// If every texel of the image inside `tile` holds the same bytes, the key of that value;
/// `None` otherwise (or for a shape this cannot describe). Stops at the first texel that
/// differs, so a tile with detail costs a few comparisons; a constant one, one pass.
pub fn constant_texel(tile: &[u8], shape: TileShape) -> Option<ConstantKey> {
    let tb = shape.texel_bytes;
    let row_bytes = shape.row_bytes();
    let used = shape.width * tb;
    if tb == 0
        || tb > MAX_TEXEL_BYTES
        || shape.width == 0
        || shape.height == 0
        || shape.width > shape.tile_width
        || shape.height > shape.tile_height
        || shape.tile_height * row_bytes > tile.len()
    {
        return None;
    }
    let first_row = &tile[..used];
    let first = &first_row[..tb];
    if !first_row.chunks_exact(tb).all(|t| t == first) {
        return None;
    }
    let rows_equal =
        (1..shape.height).all(|y| &tile[y * row_bytes..y * row_bytes + used] == first_row);
    if !rows_equal {
        return None;
    }
    let mut value = [0u8; MAX_TEXEL_BYTES];
    value[..tb].copy_from_slice(first);
    Some(ConstantKey {
        tile_width: shape.tile_width as u32,
        tile_height: shape.tile_height as u32,
        texel_bytes: tb as u8,
        value,
    })
}

/// Write `key`'s value into every texel of the tile (edge tiles' texels past the image
/// included), so that the buffer can serve any page whose tile is that constant.
pub fn fill_constant(tile: &mut [u8], key: &ConstantKey) {
    let tb = key.texel_bytes as usize;
    let bytes = key.tile_width as usize * key.tile_height as usize * tb;
    if let Some(texels) = tile.get_mut(..bytes) {
        for t in texels.chunks_exact_mut(tb) {
            t.copy_from_slice(&key.value[..tb]);
        }
    }
}

/// A shared slot: its buffer, how many pages use it, and the newest stamp at which a page
/// stopped using it (readers pinned up to then may still read the buffer through it).
struct Shared {
    buffer: TileBuffer,
    pages: u32,
    withdrawn_stamp: u64,
}

/// The shared slots of one loader, one per distinct constant value in use.
#[derive(Default)]
pub struct SharedTiles {
    slots: HashMap<ConstantKey, Shared>,
    /// Pages using a shared slot, over all slots.
    pages: u64,
}

impl SharedTiles {
    /// Distinct values held (each one slot of the budget).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Pages using a shared slot.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Whether a slot holds `key`.
    pub fn contains(&self, key: &ConstantKey) -> bool {
        self.slots.contains_key(key)
    }

    /// One more page uses `key`'s slot. False if there is none.
    pub fn add_page(&mut self, key: &ConstantKey) -> bool {
        let Some(s) = self.slots.get_mut(key) else {
            return false;
        };
        s.pages += 1;
        self.pages += 1;
        true
    }

    /// `buffer` (holding `key`'s value in every texel) becomes `key`'s slot, used by one
    /// page. A key already held keeps its slot and `buffer` is handed back.
    pub fn insert(&mut self, key: ConstantKey, buffer: TileBuffer) -> Option<TileBuffer> {
        if self.add_page(&key) {
            return Some(buffer);
        }
        self.slots.insert(
            key,
            Shared {
                buffer,
                pages: 1,
                withdrawn_stamp: 0,
            },
        );
        self.pages += 1;
        None
    }

    /// The buffer of `key`'s slot.
    pub fn buffer(&self, key: &ConstantKey) -> Option<&TileBuffer> {
        self.slots.get(key).map(|s| &s.buffer)
    }

    /// A page stopped using `key`'s slot, invisible to readers pinned after `stamp`. If
    /// that was the last page, the slot's buffer and the newest such stamp of all its pages:
    /// the caller frees it only once no reader pinned at or before that stamp remains (a
    /// page withdrawn later than the last one may still be read through).
    pub fn remove_page(&mut self, key: &ConstantKey, stamp: u64) -> Option<(TileBuffer, u64)> {
        let s = self.slots.get_mut(key)?;
        s.pages -= 1;
        s.withdrawn_stamp = s.withdrawn_stamp.max(stamp);
        self.pages -= 1;
        if s.pages > 0 {
            return None;
        }
        self.slots
            .remove(key)
            .map(|s| (s.buffer, s.withdrawn_stamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(width: usize, height: usize) -> TileShape {
        TileShape {
            width,
            height,
            tile_width: 4,
            tile_height: 3,
            texel_bytes: 2,
        }
    }

    #[test]
    fn constant_tiles_are_found_and_any_differing_texel_breaks_them() {
        let mut tile = [7u8, 9].repeat(12);
        let key = constant_texel(&tile, shape(4, 3)).expect("constant");
        assert_eq!((key.texel_bytes, &key.value[..3]), (2, &[7, 9, 0][..]));
        for i in 0..tile.len() {
            let mut t = tile.clone();
            t[i] ^= 1;
            assert_eq!(constant_texel(&t, shape(4, 3)), None, "byte {i}");
        }
        // Texels past an edge tile's image are not looked at.
        tile[6] = 0; // row 0, texel 3
        tile[22] = 0; // row 2, texel 3
        assert_eq!(constant_texel(&tile, shape(3, 3)), Some(key));
        assert_eq!(constant_texel(&tile, shape(4, 3)), None);
        // Shapes this cannot describe.
        assert_eq!(constant_texel(&tile, shape(0, 3)), None);
        assert_eq!(constant_texel(&tile, shape(5, 3)), None);
        assert_eq!(constant_texel(&tile[..20], shape(4, 3)), None);
    }

    #[test]
    fn a_filled_constant_tile_is_constant_everywhere() {
        let mut tile = vec![0u8; 4 * 3 * 2 + 8];
        tile[0..2].copy_from_slice(&[7, 9]);
        let key = constant_texel(&tile, shape(1, 1)).unwrap();
        fill_constant(&mut tile, &key);
        assert_eq!(constant_texel(&tile, shape(4, 3)), Some(key));
        assert_eq!(&tile[24..], &[0u8; 8], "nothing past the tile is written");
    }

    #[test]
    fn a_slot_lives_while_pages_use_it() {
        let mut shared = SharedTiles::default();
        let key = constant_texel(&[1, 2].repeat(12), shape(2, 1)).unwrap();
        assert!(!shared.add_page(&key));
        assert!(shared.insert(key, TileBuffer::new()).is_none());
        assert!(
            shared.insert(key, TileBuffer::new()).is_some(),
            "held already"
        );
        assert_eq!((shared.len(), shared.pages()), (1, 2));
        assert!(shared.remove_page(&key, 9).is_none());
        let (_, stamp) = shared.remove_page(&key, 4).expect("the last page frees it");
        assert_eq!(stamp, 9, "the newest withdrawal, not the last one's");
        assert!(shared.is_empty() && shared.pages() == 0);
        assert!(shared.remove_page(&key, 1).is_none());
    }
}
