//! Tile indexing: how a texture's mip levels are cut into 64 KiB tiles and where each tile
//! sits in the texture's page range.
//!
//! Page offsets within a texture's range: offset 0 is the mip tail (every level smaller than
//! one tile in either dimension, packed), then the tiled levels from the coarsest to the
//! finest, each row-major. Coarse levels therefore have the lowest page ids, which makes a
//! page-ordered request list load coarse data first.

use super::blocks::BlockCodec;
use super::format::TexelFormat;
use crate::error::{Error, Result};

/// Largest texture side supported (CUDA's limit for 2D mipmapped arrays of small texels).
pub const MAX_TEXTURE_SIZE: u32 = 65536;
/// Most mip levels a texture can have (65536 → 1 is 17 levels).
pub const MAX_LEVELS: usize = 17;

/// A rectangle of texels within one mip level: what [`crate::sources::ImageSource::read_tile`]
/// is asked to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileRegion {
    /// Mip level (0 = finest).
    pub level: u32,
    /// Left texel column.
    pub x: u32,
    /// Top texel row.
    pub y: u32,
    /// Columns: the tile width, less at the level's right edge.
    pub width: u32,
    /// Rows: the tile height, less at the level's bottom edge.
    pub height: u32,
}

impl TileRegion {
    /// Level `level` of a `width × height` (level-0) texture, whole.
    pub fn whole_level(width: u32, height: u32, level: u32) -> TileRegion {
        let (width, height) = mip_level_size(width, height, level);
        TileRegion {
            level,
            x: 0,
            y: 0,
            width,
            height,
        }
    }
}

/// What one page of a texture's range holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageContent {
    /// The packed mip tail.
    MipTail,
    /// One tile of a tiled level.
    Tile {
        /// Mip level.
        level: u32,
        /// Tile column.
        tile_x: u32,
        /// Tile row.
        tile_y: u32,
    },
}

/// One mip level of a [`TextureLayout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LevelLayout {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Tile columns (0 for levels in the mip tail).
    pub tiles_x: u32,
    /// Tile rows (0 for levels in the mip tail).
    pub tiles_y: u32,
    /// Tiled levels: page offset of the level's first tile. Tail levels: byte offset of the
    /// level within the packed mip tail.
    pub offset: u32,
}

/// The levels a source serves from one decode of the whole image
/// ([`ImageSource::whole_decode`](crate::sources::ImageSource::whole_decode)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeDecode {
    /// The first level served so; every coarser level is too.
    pub first_level: u32,
    /// Bytes the decode holds (the levels it makes) until it is released.
    pub bytes: u64,
}

/// The tiling and page layout of one texture, computed once from its size and format.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureLayout {
    /// Level-0 width.
    pub width: u32,
    /// Level-0 height.
    pub height: u32,
    /// Texel format: what the samplers return (for blocks, the codec's decoded format).
    pub format: TexelFormat,
    /// Pages hold 4×4 blocks of this codec, as the file stores them, rather than texels
    /// of `format` ([`with_blocks`](Self::with_blocks)): decoded when sampled on the
    /// CPU, filtered by the texture unit on CUDA.
    pub blocks: Option<BlockCodec>,
    /// Tile width in texels.
    pub tile_width: u32,
    /// Tile height in texels.
    pub tile_height: u32,
    /// First level that lives in the mip tail (`levels.len()` if none does).
    pub mip_tail_first_level: u32,
    /// Bytes of the packed mip tail (0 if there is none). Each tail level is packed with
    /// rows of [`row_bytes`](Self::row_bytes).
    pub mip_tail_bytes: u64,
    /// Bytes of texel data the source holds itself while the texture is open
    /// ([`ImageSource::held_bytes`](crate::sources::ImageSource::held_bytes); 0 from
    /// [`new`](Self::new)): charged to the budget with the mip tail.
    pub held_bytes: u64,
    /// The levels the source serves from one decode of the whole image
    /// ([`ImageSource::whole_decode`](crate::sources::ImageSource::whole_decode); `None`
    /// from [`new`](Self::new)): the loader fills their pages from one decode.
    pub whole_decode: Option<WholeDecode>,
    /// Pages of the texture's range: 1 (mip tail) + every tile.
    pub num_pages: u32,
    /// Per level, finest first.
    pub levels: Vec<LevelLayout>,
}

/// Levels of a full mip chain for a `width × height` image, sizes rounded down:
/// `floor(log2(max(width, height))) + 1`.
pub fn full_mip_levels(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

/// The tile extent of pages of the file's tiles (`LoaderOptions::pages_of_file_tiles`) for
/// a file whose tiles are `file_tile` texels and texels of `format`: the file's tile where
/// both sides are powers of two no larger than a full tile's ([`TexelFormat::tile_extent`])
/// and it holds a tile size (4 to 64 KiB: `crate::ids::is_tile_size`); `None` where it
/// does not (full tiles then).
pub fn file_tile_pages(format: TexelFormat, file_tile: Option<(u32, u32)>) -> Option<(u32, u32)> {
    let (w, h) = file_tile?;
    let full = format.tile_extent();
    (w.is_power_of_two()
        && h.is_power_of_two()
        && w <= full.0
        && h <= full.1
        && crate::ids::is_tile_size(w as usize * h as usize * format.texel_bytes()))
    .then_some((w, h))
}

/// The size of mip level `level` of a `width × height` image, rounded down:
/// `max(1, side >> level)` on each side (1×1 for any level past the chain).
pub fn mip_level_size(width: u32, height: u32, level: u32) -> (u32, u32) {
    let side = |s: u32| s.checked_shr(level).unwrap_or(0).max(1);
    (side(width), side(height))
}

impl TextureLayout {
    /// Lay out a texture in full tiles ([`TexelFormat::tile_extent`]), checking size,
    /// levels and format.
    pub fn new(width: u32, height: u32, num_levels: u32, format: TexelFormat) -> Result<Self> {
        Self::with_tile(width, height, num_levels, format, format.tile_extent())
    }

    /// Lay out a texture whose pages hold 4×4 blocks of `codec` ([`BlockCodec::tile_extent`]:
    /// 128×64 or 64×64 blocks a page). Levels keep their sizes in texels; a level's tiles
    /// and tail bytes count whole blocks (a 2×2 level is one block).
    pub fn with_blocks(
        width: u32,
        height: u32,
        num_levels: u32,
        codec: BlockCodec,
    ) -> Result<Self> {
        Self::build(
            width,
            height,
            num_levels,
            codec.served_format(),
            Some(codec),
            codec.tile_extent(),
        )
    }

    /// Lay out a texture in tiles of `tile` texels (width, height): powers of two holding a
    /// tile size of texels (`crate::ids::is_tile_size`: 4 to 64 KiB). Backends that sample
    /// host memory give textures whose file tiles are smaller than a full tile tiles of the
    /// file's size (`LoaderOptions::pages_of_file_tiles`); GPUs take full tiles only.
    pub fn with_tile(
        width: u32,
        height: u32,
        num_levels: u32,
        format: TexelFormat,
        tile: (u32, u32),
    ) -> Result<Self> {
        Self::build(width, height, num_levels, format, None, tile)
    }

    fn build(
        width: u32,
        height: u32,
        num_levels: u32,
        format: TexelFormat,
        blocks: Option<BlockCodec>,
        tile: (u32, u32),
    ) -> Result<Self> {
        if width == 0 || height == 0 || width > MAX_TEXTURE_SIZE || height > MAX_TEXTURE_SIZE {
            return Err(Error::Unsupported(format!(
                "texture size {width}×{height} (each side must be 1..={MAX_TEXTURE_SIZE})"
            )));
        }
        // The fields of TexelFormat are public: re-check what a source may have built by hand.
        TexelFormat::new(format.texel_type, format.channels)?;
        let full = full_mip_levels(width, height);
        if num_levels == 0 || num_levels > full {
            return Err(Error::Unsupported(format!(
                "{num_levels} mip levels for {width}×{height} (1..={full})"
            )));
        }
        let (tile_width, tile_height) = tile;
        let texel_bytes = format.texel_bytes() as u64;
        let region_bytes = |w: u32, h: u32| match blocks {
            Some(codec) => codec.region_bytes(w, h),
            None => w as u64 * h as u64 * texel_bytes,
        };
        let tile_bytes = region_bytes(tile_width, tile_height);
        if !tile_width.is_power_of_two()
            || !tile_height.is_power_of_two()
            || !usize::try_from(tile_bytes).is_ok_and(crate::ids::is_tile_size)
        {
            return Err(Error::Unsupported(format!(
                "tiles of {tile_width}×{tile_height} texels of {texel_bytes} bytes (powers of \
                 two, {} to {} bytes)",
                crate::ids::MIN_TILE_BYTES,
                crate::ids::TILE_BYTES
            )));
        }
        let mut levels: Vec<LevelLayout> = (0..num_levels)
            .map(|l| {
                let (width, height) = mip_level_size(width, height, l);
                LevelLayout {
                    width,
                    height,
                    ..LevelLayout::default()
                }
            })
            .collect();
        let mip_tail_first_level = levels
            .iter()
            .position(|l| l.width < tile_width || l.height < tile_height)
            .unwrap_or(levels.len()) as u32;
        let mut tail_bytes = 0u64;
        for level in &mut levels[mip_tail_first_level as usize..] {
            level.offset = u32::try_from(tail_bytes).map_err(|_| {
                Error::Unsupported(format!("mip tail of {width}×{height} exceeds 4 GiB"))
            })?;
            tail_bytes += region_bytes(level.width, level.height);
        }
        let mut next_page = 1u64;
        for level in levels[..mip_tail_first_level as usize].iter_mut().rev() {
            level.tiles_x = level.width.div_ceil(tile_width);
            level.tiles_y = level.height.div_ceil(tile_height);
            level.offset = next_page as u32;
            next_page += level.tiles_x as u64 * level.tiles_y as u64;
        }
        let num_pages = u32::try_from(next_page)
            .map_err(|_| Error::Unsupported(format!("{width}×{height} needs too many pages")))?;
        Ok(TextureLayout {
            width,
            height,
            format,
            blocks,
            tile_width,
            tile_height,
            mip_tail_first_level,
            mip_tail_bytes: tail_bytes,
            held_bytes: 0,
            whole_decode: None,
            num_pages,
            levels,
        })
    }

    /// Number of mip levels.
    pub fn num_levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Whether `level` is stored in the mip tail.
    pub fn in_mip_tail(&self, level: u32) -> bool {
        level >= self.mip_tail_first_level
    }

    /// Page offset (within the texture's range) of a tile of a tiled level.
    pub fn tile_page_offset(&self, level: u32, tile_x: u32, tile_y: u32) -> u32 {
        let l = &self.levels[level as usize];
        debug_assert!(
            level < self.mip_tail_first_level && tile_x < l.tiles_x && tile_y < l.tiles_y
        );
        l.offset + tile_y * l.tiles_x + tile_x
    }

    /// What the page at `offset` within the texture's range holds; `None` past the range.
    pub fn page_content(&self, offset: u32) -> Option<PageContent> {
        if offset == 0 {
            return Some(PageContent::MipTail);
        }
        if offset >= self.num_pages {
            return None;
        }
        // Tiled levels have decreasing offsets as the level number grows.
        let tiled = &self.levels[..self.mip_tail_first_level as usize];
        let level = tiled.iter().position(|l| offset >= l.offset)?;
        let l = &tiled[level];
        let i = offset - l.offset;
        Some(PageContent::Tile {
            level: level as u32,
            tile_x: i % l.tiles_x,
            tile_y: i / l.tiles_x,
        })
    }

    /// Bytes of one tile (page) of this texture: `tile_width × tile_height × texel bytes`,
    /// or the blocks covering as many texels.
    pub fn tile_bytes(&self) -> usize {
        self.region_bytes(self.tile_width, self.tile_height) as usize
    }

    /// Bytes of one row of a `width`-texel-wide region as pages and the packed tail
    /// store it: `width` texels, or the row of blocks covering them (four rows of texels).
    pub fn row_bytes(&self, width: u32) -> usize {
        match self.blocks {
            Some(codec) => codec.row_bytes(width),
            None => width as usize * self.format.texel_bytes(),
        }
    }

    /// Bytes of a `width × height` region as pages store it (texels, or whole blocks).
    pub fn region_bytes(&self, width: u32, height: u32) -> u64 {
        match self.blocks {
            Some(codec) => codec.region_bytes(width, height),
            None => width as u64 * height as u64 * self.format.texel_bytes() as u64,
        }
    }

    /// Rows of storage a region `height` texels high takes: `height`, or its rows of blocks.
    pub fn storage_rows(&self, height: u32) -> u32 {
        match self.blocks {
            Some(_) => height.div_ceil(4),
            None => height,
        }
    }

    /// The texels a tile covers (clipped at the level's edges).
    pub fn tile_region(&self, level: u32, tile_x: u32, tile_y: u32) -> TileRegion {
        let l = &self.levels[level as usize];
        let x = tile_x * self.tile_width;
        let y = tile_y * self.tile_height;
        TileRegion {
            level,
            x,
            y,
            width: (l.width - x).min(self.tile_width),
            height: (l.height - y).min(self.tile_height),
        }
    }

    /// Bytes charged to the budget, non-evictable, while the texture is open: the mip
    /// tail and what the source holds ([`held_bytes`](Self::held_bytes)).
    pub fn non_evictable_bytes(&self) -> u64 {
        self.mip_tail_bytes + self.held_bytes
    }

    /// The levels read from one whole decode that have pages of their own (outside the
    /// mip tail), with the decode: `None` when there are none.
    pub fn whole_decode_pages(&self) -> Option<(std::ops::Range<u32>, WholeDecode)> {
        let w = self.whole_decode?;
        (w.first_level < self.mip_tail_first_level)
            .then_some((w.first_level..self.mip_tail_first_level, w))
    }

    /// Bytes of texel data in level 0 (as pages store it: texels or blocks).
    pub fn level0_bytes(&self) -> u64 {
        self.region_bytes(self.width, self.height)
    }

    /// The whole level as a region (for levels in the mip tail).
    pub fn level_region(&self, level: u32) -> TileRegion {
        let l = &self.levels[level as usize];
        TileRegion {
            level,
            x: 0,
            y: 0,
            width: l.width,
            height: l.height,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::textures::format::{TexelFormat, TexelType};

    fn rgba8() -> TexelFormat {
        TexelFormat::RGBA8
    }

    #[test]
    fn full_chain_counts_levels_down_to_one_texel() {
        assert_eq!(full_mip_levels(1, 1), 1);
        assert_eq!(full_mip_levels(2, 1), 2);
        assert_eq!(full_mip_levels(1000, 3), 10);
        assert_eq!(full_mip_levels(1024, 1024), 11);
        assert_eq!(full_mip_levels(65536, 65536), 17);
        assert_eq!(full_mip_levels(300, 77), 9);
    }

    #[test]
    fn level_sizes_round_down_to_one() {
        assert_eq!(mip_level_size(300, 77, 0), (300, 77));
        assert_eq!(mip_level_size(300, 77, 1), (150, 38));
        assert_eq!(mip_level_size(300, 77, 7), (2, 1));
        assert_eq!(mip_level_size(300, 77, 8), (1, 1));
        assert_eq!(mip_level_size(5, 5, 40), (1, 1));
    }

    #[test]
    fn non_multiple_sizes_have_partial_edge_tiles() {
        // RGBA8 tiles are 128×128.
        let l = TextureLayout::new(1000, 300, full_mip_levels(1000, 300), rgba8()).unwrap();
        assert_eq!((l.tile_width, l.tile_height), (128, 128));
        assert_eq!(l.levels[0].tiles_x, 8); // 1000 / 128 = 7.8
        assert_eq!(l.levels[0].tiles_y, 3); // 300 / 128 = 2.3
                                            // Level 1 is 500×150: 4×2 tiles. Level 2 is 250×75: height < 128, so the tail starts.
        assert_eq!(l.levels[1].tiles_x, 4);
        assert_eq!(l.levels[1].tiles_y, 2);
        assert_eq!(l.mip_tail_first_level, 2);
        let r = l.tile_region(0, 7, 2);
        assert_eq!(
            r,
            TileRegion {
                level: 0,
                x: 896,
                y: 256,
                width: 104,
                height: 44
            }
        );
        // Tail: 250×75, 125×37, 62×18, 31×9, 15×4, 7×2, 3×1, 1×1.
        let expect: u64 = [
            (250, 75),
            (125, 37),
            (62, 18),
            (31, 9),
            (15, 4),
            (7, 2),
            (3, 1),
            (1, 1),
        ]
        .iter()
        .map(|&(w, h): &(u64, u64)| w * h * 4)
        .sum();
        assert_eq!(l.mip_tail_bytes, expect);
        assert_eq!(l.levels.last().unwrap().width, 1);
        assert_eq!(l.levels.last().unwrap().height, 1);
        assert_eq!(l.num_pages, 1 + 8 * 3 + 4 * 2);
    }

    #[test]
    fn every_page_maps_back_to_its_tile() {
        for (w, h, f) in [
            (1000u32, 300u32, rgba8()),
            (65536, 65536, TexelFormat::RGBA32F),
            (257, 129, TexelFormat::new(TexelType::U8, 1).unwrap()),
            (4097, 33, TexelFormat::new(TexelType::F16, 2).unwrap()),
        ] {
            let l = TextureLayout::new(w, h, full_mip_levels(w, h), f).unwrap();
            let mut seen = 1u64;
            for level in 0..l.mip_tail_first_level {
                let ll = l.levels[level as usize];
                // Spot-check corners and the middle for the huge case.
                let xs = [0, ll.tiles_x / 2, ll.tiles_x - 1];
                let ys = [0, ll.tiles_y / 2, ll.tiles_y - 1];
                for &ty in &ys {
                    for &tx in &xs {
                        let p = l.tile_page_offset(level, tx, ty);
                        assert_eq!(
                            l.page_content(p),
                            Some(PageContent::Tile {
                                level,
                                tile_x: tx,
                                tile_y: ty
                            })
                        );
                        let r = l.tile_region(level, tx, ty);
                        assert!(r.width >= 1 && r.x + r.width <= ll.width);
                        assert!(r.height >= 1 && r.y + r.height <= ll.height);
                    }
                }
                seen += ll.tiles_x as u64 * ll.tiles_y as u64;
            }
            assert_eq!(seen, l.num_pages as u64);
            assert_eq!(l.page_content(0), Some(PageContent::MipTail));
            assert_eq!(l.page_content(l.num_pages), None);
        }
    }

    #[test]
    fn coarse_levels_come_first_in_the_page_range() {
        let l = TextureLayout::new(4096, 4096, 13, rgba8()).unwrap();
        for level in 1..l.mip_tail_first_level {
            assert!(l.levels[level as usize].offset < l.levels[level as usize - 1].offset);
        }
    }

    #[test]
    fn tiny_and_thin_textures_live_in_the_tail() {
        let l = TextureLayout::new(1, 1, 1, rgba8()).unwrap();
        assert_eq!(l.mip_tail_first_level, 0);
        assert_eq!(l.num_pages, 1);
        assert_eq!(l.mip_tail_bytes, 4);
        let l = TextureLayout::new(65536, 1, 17, rgba8()).unwrap();
        assert_eq!(l.mip_tail_first_level, 0);
        assert_eq!(l.mip_tail_bytes, (1u64 << 17) * 4 - 4);
        // A non-mipmapped texture exactly one tile: no tail at all.
        let l = TextureLayout::new(128, 128, 1, rgba8()).unwrap();
        assert_eq!(l.mip_tail_first_level, 1);
        assert_eq!(l.mip_tail_bytes, 0);
        assert_eq!(l.num_pages, 2);
    }

    #[test]
    fn absurd_sizes_are_errors() {
        assert!(TextureLayout::new(0, 5, 1, rgba8()).is_err());
        assert!(TextureLayout::new(65537, 5, 1, rgba8()).is_err());
        assert!(TextureLayout::new(16, 16, 6, rgba8()).is_err());
        assert!(TextureLayout::new(16, 16, 0, rgba8()).is_err());
        let rgb = TexelFormat {
            texel_type: TexelType::U8,
            channels: 3,
        };
        assert!(TextureLayout::new(16, 16, 1, rgb).is_err());
    }
}
