//! The dense fallback for devices without sparse arrays (`sparse_supported` false): one plain
//! mipmapped array per texture, all its memory allocated at creation, filled page by page
//! through the same staging copies as a sparse texture (nothing to map). Also the one place
//! that says how a page's data is copied into an array ([`page_copies`], [`upload_page`]),
//! for both kinds.

use crate::array::{LevelRect, MipmappedArray, TexelStorage};
use crate::staging::{Fence, StagingRing};
use cudarc::driver::{CudaContext, CudaStream};
use demandtex::error::{Error, Result};
use demandtex::textures::{PageContent, TextureLayout};
use std::sync::Arc;

/// One copy of page data into an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCopy {
    /// Where the texels go.
    pub rect: LevelRect,
    /// Byte offset of the rectangle's first texel in the page's data.
    pub data_offset: usize,
    /// Bytes from one row of the page's data to the next.
    pub pitch: usize,
}

/// The copies that put the data of the page at `offset` of the texture's range into its
/// array, as the engine's fills produce it: a tile (rows of a whole tile width, clipped at
/// the level's edges) is one copy; the packed mip tail is one copy per level (rows of the
/// level's width). Rows are of texels, or of blocks for a layout of blocks. `None` past the range; empty for the page of an empty tail.
pub fn page_copies(layout: &TextureLayout, offset: u32) -> Option<Vec<PageCopy>> {
    match layout.page_content(offset)? {
        PageContent::Tile {
            level,
            tile_x,
            tile_y,
        } => {
            let r = layout.tile_region(level, tile_x, tile_y);
            Some(vec![PageCopy {
                rect: LevelRect {
                    level,
                    x: r.x,
                    y: r.y,
                    width: r.width,
                    height: r.height,
                },
                data_offset: 0,
                pitch: layout.row_bytes(layout.tile_width),
            }])
        }
        PageContent::MipTail => Some(
            (layout.mip_tail_first_level..layout.num_levels())
                .map(|level| {
                    let l = layout.levels[level as usize];
                    PageCopy {
                        rect: LevelRect {
                            level,
                            x: 0,
                            y: 0,
                            width: l.width,
                            height: l.height,
                        },
                        data_offset: l.offset as usize,
                        pitch: layout.row_bytes(l.width),
                    }
                })
                .collect(),
        ),
    }
}

/// Copy the data of the page at `offset` (as the engine's fill wrote it) into `array`
/// through `staging` on `stream`; returns the fence after which it is in the array. In a
/// sparse array the page's tile (or mip tail) must be mapped first, on the same stream.
pub fn upload_page(
    staging: &mut StagingRing,
    stream: &CudaStream,
    array: &MipmappedArray,
    layout: &TextureLayout,
    offset: u32,
    data: &[u8],
) -> Result<Fence> {
    let copies = page_copies(layout, offset).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "page {offset} of a texture of {} pages",
            layout.num_pages
        ))
    })?;
    let mut fence = staging.timeline().last();
    for c in copies {
        let data = data.get(c.data_offset..).ok_or_else(|| {
            Error::InvalidArgument(format!("{} bytes of data for {c:?}", data.len()))
        })?;
        fence = staging.upload(stream, array, &c.rect, data, c.pitch)?;
    }
    Ok(fence)
}

/// A texture's dense mipmapped array (every level allocated).
#[derive(Debug)]
pub struct DenseTexture {
    array: Arc<MipmappedArray>,
    layout: TextureLayout,
}

impl DenseTexture {
    /// Allocate the array of `layout` (its levels only) in `ctx`.
    ///
    /// Errors: the driver's (out of memory for a texture too large to hold whole).
    pub fn new(ctx: &Arc<CudaContext>, layout: &TextureLayout) -> Result<DenseTexture> {
        Self::new_stored(ctx, layout, TexelStorage::of(layout, false))
    }

    /// [`Self::new`] with the texels stored as `storage`.
    pub fn new_stored(
        ctx: &Arc<CudaContext>,
        layout: &TextureLayout,
        storage: TexelStorage,
    ) -> Result<DenseTexture> {
        let array = MipmappedArray::new(
            ctx,
            layout.width,
            layout.height,
            layout.num_levels(),
            layout.format,
            storage,
            false,
        )?;
        Ok(DenseTexture {
            array,
            layout: layout.clone(),
        })
    }

    /// The array (shared with the texture objects over it).
    pub fn array(&self) -> &Arc<MipmappedArray> {
        &self.array
    }

    /// The engine's layout of the texture.
    pub fn layout(&self) -> &TextureLayout {
        &self.layout
    }

    /// Bytes of texel (or block) data the array holds (every level).
    pub fn bytes(&self) -> u64 {
        self.layout
            .levels
            .iter()
            .map(|l| self.layout.region_bytes(l.width, l.height))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::textures::{full_mip_levels, TexelFormat};

    #[test]
    fn tiles_are_one_copy_and_the_tail_one_per_level() {
        let layout =
            TextureLayout::new(1000, 300, full_mip_levels(1000, 300), TexelFormat::RGBA8).unwrap();
        let p = layout.tile_page_offset(0, 7, 2);
        assert_eq!(
            page_copies(&layout, p).unwrap(),
            vec![PageCopy {
                rect: LevelRect {
                    level: 0,
                    x: 896,
                    y: 256,
                    width: 104,
                    height: 44
                },
                data_offset: 0,
                pitch: 512
            }]
        );
        let tail = page_copies(&layout, 0).unwrap();
        assert_eq!(tail.len(), 8, "levels 2..10");
        assert_eq!(tail[0].rect.level, 2);
        assert_eq!((tail[0].rect.width, tail[0].rect.height), (250, 75));
        assert_eq!(tail[0].data_offset, 0);
        assert_eq!(tail[1].data_offset, 250 * 75 * 4);
        assert_eq!(tail[1].pitch, 125 * 4);
        let last = tail.last().unwrap();
        assert_eq!(last.data_offset + 4, layout.mip_tail_bytes as usize);
        assert_eq!(page_copies(&layout, layout.num_pages), None);
        let no_tail = TextureLayout::new(128, 128, 1, TexelFormat::RGBA8).unwrap();
        assert_eq!(page_copies(&no_tail, 0), Some(vec![]));
    }

    #[test]
    fn pages_of_blocks_copy_rows_of_blocks() {
        use demandtex::textures::BlockCodec;
        let layout = TextureLayout::with_blocks(1037, 601, 11, BlockCodec::Bc1).unwrap();
        let c = page_copies(&layout, layout.tile_page_offset(0, 2, 2)).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].rect.x, c[0].rect.y), (1024, 512));
        assert_eq!((c[0].rect.width, c[0].rect.height), (13, 89));
        assert_eq!(c[0].pitch, 128 * 8, "a tile's row of 128 blocks");
        let tail = page_copies(&layout, 0).unwrap();
        for (copy, level) in tail.iter().zip(layout.mip_tail_first_level..) {
            let l = layout.levels[level as usize];
            assert_eq!(copy.pitch, l.width.div_ceil(4) as usize * 8);
            assert_eq!(copy.data_offset, l.offset as usize);
        }
        let last = tail.last().unwrap();
        assert_eq!((last.rect.width, last.rect.height), (1, 1));
        assert_eq!(
            last.data_offset + last.pitch,
            layout.mip_tail_bytes as usize,
            "the 1×1 level is the tail's last block"
        );
    }
}
