//! Constant tiles on the device: every page whose tile holds one value in all its texels
//! is mapped onto one tile-pool block per value, as OptiX Toolkit maps its white and black
//! tiles, so a mask full of black and white tiles costs two blocks of device memory.
//!
//! The key is the tile's contents ([`ConstantKey`]: tile shape, texel size and value),
//! found by [`constant_tile_key`] when the tile is published — whether or not the engine
//! shared the tile's host slot (`memory::constant_tiles`): a block is shared only by
//! pages whose bytes are equal, so which texture or format they belong to does not
//! matter (a sparse tile of equal texels is the same bytes whatever its swizzle). The
//! device therefore never holds more blocks than the engine's budget counts slots.
//!
//! [`SharedBlocks`] counts the pages mapped onto each block; the block goes back to the
//! pool (after its last page's unmap and fence) when the last of them is released.

use crate::tile_pool::TileBlock;
use demandtex::memory::constant_tiles::constant_texel;
use demandtex::memory::{ConstantKey, TileShape};
use demandtex::textures::TextureLayout;
use std::collections::HashMap;

/// If every texel of a whole tile of `layout` in `data` (rows of `tile_width` texels, as
/// `Backend::publish_tile` gets them) holds the same bytes, their key.
pub(crate) fn constant_tile_key(layout: &TextureLayout, data: &[u8]) -> Option<ConstantKey> {
    let (w, h) = (layout.tile_width as usize, layout.tile_height as usize);
    constant_texel(
        data,
        TileShape {
            width: w,
            height: h,
            tile_width: w,
            tile_height: h,
            texel_bytes: layout.format.texel_bytes(),
        },
    )
}

/// One shared block and the pages mapped onto it.
#[derive(Clone, Copy, Debug)]
struct SharedBlock {
    block: TileBlock,
    pages: u32,
}

/// The blocks of constant tiles (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct SharedBlocks {
    by_key: HashMap<ConstantKey, SharedBlock>,
}

impl SharedBlocks {
    /// The block holding `key`'s value, if one is mapped: one more page uses it.
    pub fn acquire(&mut self, key: &ConstantKey) -> Option<TileBlock> {
        let shared = self.by_key.get_mut(key)?;
        shared.pages += 1;
        Some(shared.block)
    }

    /// `block` now holds `key`'s value (its tile is uploaded through the page just mapped
    /// onto it), for that one page. A key already present keeps its block: the caller
    /// [`acquire`](Self::acquire)s first.
    pub fn insert(&mut self, key: ConstantKey, block: TileBlock) {
        self.by_key
            .entry(key)
            .or_insert(SharedBlock { block, pages: 0 })
            .pages += 1;
    }

    /// A page mapped onto `key`'s block is released: the block, to be freed after the
    /// page's unmap, if it was the last page using it.
    pub fn release(&mut self, key: &ConstantKey) -> Option<TileBlock> {
        let shared = self.by_key.get_mut(key)?;
        shared.pages = shared.pages.saturating_sub(1);
        if shared.pages > 0 {
            return None;
        }
        self.by_key.remove(key).map(|s| s.block)
    }

    /// Blocks held now (distinct constant values on the device).
    pub fn blocks(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::memory::constant_tiles::MAX_TEXEL_BYTES;
    use demandtex::textures::{full_mip_levels, TexelFormat};

    fn key(v: u8) -> ConstantKey {
        let mut value = [0u8; MAX_TEXEL_BYTES];
        value[..4].fill(v);
        ConstantKey {
            tile_width: 128,
            tile_height: 128,
            texel_bytes: 4,
            value,
        }
    }

    fn block(first_tile: u32) -> TileBlock {
        TileBlock {
            arena: 0,
            first_tile,
            tiles: 1,
        }
    }

    #[test]
    fn a_block_is_freed_with_the_last_page_using_it() {
        let mut s = SharedBlocks::default();
        assert_eq!(s.acquire(&key(0)), None);
        s.insert(key(0), block(3));
        assert_eq!(s.acquire(&key(0)), Some(block(3)));
        assert_eq!(s.acquire(&key(0)), Some(block(3)));
        assert_eq!(s.acquire(&key(255)), None);
        s.insert(key(255), block(4));
        assert_eq!(s.blocks(), 2);
        // Three pages on black, one on white.
        assert_eq!(s.release(&key(0)), None);
        assert_eq!(s.release(&key(0)), None);
        assert_eq!(s.release(&key(255)), Some(block(4)));
        assert_eq!(s.release(&key(0)), Some(block(3)));
        assert_eq!(s.blocks(), 0);
        // Released again (a bookkeeping error elsewhere): nothing to free twice.
        assert_eq!(s.release(&key(0)), None);
        // A value mapped again after its block went gets a new one.
        assert_eq!(s.acquire(&key(0)), None);
        s.insert(key(0), block(9));
        assert_eq!(s.acquire(&key(0)), Some(block(9)));
    }

    #[test]
    fn only_whole_tiles_of_one_value_have_a_key() {
        let layout =
            TextureLayout::new(1024, 1024, full_mip_levels(1024, 1024), TexelFormat::RGBA8)
                .unwrap();
        let bytes = layout.tile_width as usize * layout.tile_height as usize * 4;
        let mut data = vec![0u8; bytes];
        for t in data.chunks_exact_mut(4) {
            t.copy_from_slice(&[10, 20, 30, 255]);
        }
        let k = constant_tile_key(&layout, &data).expect("a constant tile");
        assert_eq!(k.texel_bytes, 4);
        assert_eq!(&k.value[..4], &[10, 20, 30, 255]);
        assert_eq!(
            (k.tile_width, k.tile_height),
            (layout.tile_width, layout.tile_height)
        );
        // One texel off, anywhere (here the last): no key.
        let n = data.len();
        data[n - 1] = 254;
        assert_eq!(constant_tile_key(&layout, &data), None);
        // Too few bytes for the tile: no key.
        assert_eq!(constant_tile_key(&layout, &data[..n / 2]), None);
    }
}
