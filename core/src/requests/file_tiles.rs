//! Pages filled file tile by file tile: a blocking fill on the CPU backend publishes a page
//! whose file has smaller tiles than a page (maketx's 64×64 tiles in 128×64 or 128×128
//! pages) without reading it, its [`TileTrailer`] listing every file tile as missing
//! (`fill::TileTask::by_file_tile`). A lookup that needs texels of a missing file tile
//! reads that file tile into the page in place ([`Engine::fill_file_tile`], through the
//! view's [`FileTileFiller`]), so a page costs the file tiles lookups use — what
//! OpenImageIO's tile cache reads — not every one it covers.
//!
//! The protocol, which makes the in-place writes safe for readers of the same page:
//! - a file tile's texels are written only while its bit is set, by one thread at a time
//!   (a striped lock per page and file tile), then the bit is cleared with Release;
//! - samplers read a file tile's texels only after they see its bit clear (Acquire), and
//!   borrow only the bytes of the texels they read;
//! - the writer is inside a lookup (its epoch pinned), so the buffer is not reused under
//!   it; it writes only if the page's texture is still at the generation the page was
//!   published for, so a page never mixes two generations' texels.

use super::engine::Engine;
use super::fill::contain;
use crate::backend::cpu::FileTileFiller;
use crate::ids::{PageId, TextureId};
use crate::memory::TileTrailer;
use crate::resources::Route;
use crate::sources::{ImageInfo, ImageSource, Readiness};
use crate::textures::{file_tile_pages, BlockCodec, TexelFormat, TextureLayout, TileRegion};
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::Arc;

/// Stripes of the file-tile locks.
const STRIPES: usize = 64;

/// One lock per stripe of (page, file tile): concurrent lookups missing the same file
/// tile read it once.
pub(crate) struct FileTileLocks([Mutex<()>; STRIPES]);

impl FileTileLocks {
    pub(crate) fn new() -> FileTileLocks {
        FileTileLocks(std::array::from_fn(|_| Mutex::new(())))
    }

    fn of(&self, page: u32, index: u32) -> &Mutex<()> {
        let h = (page as usize).wrapping_mul(0x9e37_79b9) ^ index as usize;
        &self.0[h % STRIPES]
    }
}

thread_local! {
    /// Each thread's buffer for one decoded file tile.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// What a file tile's read needs, taken under the host lock.
struct Target {
    texture: TextureId,
    source: Arc<dyn ImageSource>,
    region: TileRegion,
    /// Byte offset of the file tile's first texel in the page.
    offset: usize,
    row_bytes: usize,
    texel_bytes: usize,
}

impl Engine {
    /// The tile extent of a texture's pages (`LoaderOptions::pages_of_file_tiles`): the
    /// file's tiles at level 0 ([`file_tile_pages`]) where the option is on and samplers
    /// read host tiles; else a full tile ([`TexelFormat::tile_extent`]).
    pub(crate) fn page_tile(&self, source: &dyn ImageSource, format: TexelFormat) -> (u32, u32) {
        debug_assert!(
            self.block_codec(source).is_none(),
            "a layout of blocks has full tiles"
        );
        let own = self.options.pages_of_file_tiles && self.backend.samples_host_tiles();
        own.then(|| file_tile_pages(format, source.file_tile(0)))
            .flatten()
            .unwrap_or_else(|| format.tile_extent())
    }

    /// The codec of the blocks `source`'s pages keep, if they keep blocks: the option is on,
    /// the backend samples blocks and the source stores every level in blocks.
    pub(crate) fn block_codec(&self, source: &dyn ImageSource) -> Option<BlockCodec> {
        self.options
            .kept_block_codec(source, self.backend.samples_blocks())
    }

    /// The layout of a texture `source` describes as `info`: in blocks
    /// ([`block_codec`](Self::block_codec)), else in texels of [`page_tile`](Self::page_tile).
    pub(crate) fn lay_out(
        &self,
        source: &dyn ImageSource,
        info: &ImageInfo,
    ) -> crate::error::Result<TextureLayout> {
        match self.block_codec(source) {
            Some(codec) => {
                TextureLayout::with_blocks(info.width, info.height, info.num_levels, codec)
            }
            None => {
                let tile = self.page_tile(source, info.format);
                TextureLayout::with_tile(
                    info.width,
                    info.height,
                    info.num_levels,
                    info.format,
                    tile,
                )
            }
        }
    }

    /// Whether blocking fills publish pages to be filled file tile by file tile (the
    /// option is on and samplers read host tiles in place).
    pub(crate) fn fills_by_file_tile(&self) -> bool {
        self.options.fill_by_file_tile && self.backend.samples_host_tiles()
    }

    /// The region, source and row layout of file tile `index` of `page`, if the page still
    /// holds texels of its texture at `generation` and the file tile is inside the image.
    fn file_tile_target(
        &self,
        page: u32,
        generation: u32,
        index: u32,
        trailer: &TileTrailer,
    ) -> Option<Target> {
        let host = self.host.lock();
        let Route::Tile {
            texture,
            generation: current,
            level,
            tile_x,
            tile_y,
            ..
        } = host.resources.route(&self.layout, PageId(page))
        else {
            return None;
        };
        if current != generation {
            return None;
        }
        let record = host.resources.get(texture)?;
        let layout = record.layout.as_ref()?;
        let tile = layout.tile_region(level, tile_x, tile_y);
        let cut = trailer.sub_tiles();
        let (sx, sy) = (index % u32::from(cut.cols), index / u32::from(cut.cols));
        let (x, y) = (tile.x + (sx << cut.w_shift), tile.y + (sy << cut.h_shift));
        let (x_end, y_end) = (tile.x + tile.width, tile.y + tile.height);
        let texel_bytes = layout.format.texel_bytes();
        let row_bytes = layout.tile_width as usize * texel_bytes;
        Some(Target {
            texture,
            source: record.source.clone(),
            region: TileRegion {
                level,
                x,
                y,
                width: (1u32 << cut.w_shift).min(x_end.saturating_sub(x)),
                height: (1u32 << cut.h_shift).min(y_end.saturating_sub(y)),
            },
            offset: (sy << cut.h_shift) as usize * row_bytes
                + (sx << cut.w_shift) as usize * texel_bytes,
            row_bytes,
            texel_bytes,
        })
    }

    /// Read file tile `index` of `page` into the page at `tile` (see the module docs).
    pub(crate) fn fill_file_tile(&self, page: u32, tile: *const u8, index: u32) -> bool {
        // SAFETY: the caller's view saw `tile` as the directory entry of resident `page`:
        // the address of a live TileBuffer, not reused while the caller's lookup lasts.
        let trailer = unsafe { TileTrailer::of(tile) };
        let _one_reader = self.file_tile_locks.of(page, index).lock();
        if trailer.missing() & (1 << index) == 0 {
            return true; // read by another lookup meanwhile
        }
        let generation = trailer.generation();
        let Some(t) = self.file_tile_target(page, generation, index, trailer) else {
            return false;
        };
        if t.region.width == 0 || t.region.height == 0 {
            // Past the image's edge: nothing is ever sampled there.
            trailer.mark_written(index);
            return true;
        }
        let packed = t.region.width as usize * t.texel_bytes;
        let mut scratch = SCRATCH.take();
        scratch.resize(packed * t.region.height as usize, 0);
        let outcome = contain(|| t.source.read_region(t.region, &mut scratch, packed));
        let written = matches!(outcome, Ok(Readiness::Ready));
        if written {
            for (r, row) in scratch.chunks_exact(packed).enumerate() {
                let at = t.offset + r * t.row_bytes;
                debug_assert!(at + packed <= crate::TILE_BYTES);
                // SAFETY: `tile` is a live TileBuffer's writable memory (above), and bytes
                // [at, at + packed) belong to file tile `index` alone (the cut's geometry),
                // which no sampler reads while its bit is set and no other thread writes
                // (this stripe's lock). The source is within the tile: the region is
                // clipped to the tile.
                unsafe {
                    std::ptr::copy_nonoverlapping(row.as_ptr(), (tile as *mut u8).add(at), packed);
                }
            }
            trailer.mark_written(index);
        }
        SCRATCH.set(scratch);
        let mut host = self.host.lock();
        match outcome {
            Ok(Readiness::Ready) => {
                host.counters.file_tiles_filled += 1;
                host.counters.bytes_read += (packed * t.region.height as usize) as u64;
            }
            Ok(Readiness::NotYet) => {}
            Err(e) => {
                host.counters.read_errors += 1;
                if host.is_current(t.texture, generation) {
                    let msg = format!(
                        "reading level {} file tile at ({}, {}): {e}",
                        t.region.level, t.region.x, t.region.y
                    );
                    host.fail_texture(&self.layout, t.texture, msg);
                    // The fallback is visible at once, as after a failed blocking fill.
                    if let Err(e) = self.publish(&mut host, usize::MAX) {
                        tracing::error!("publishing a failed texture's fallback: {e}");
                    }
                    self.fill_done.notify_all();
                }
            }
        }
        written
    }
}

impl FileTileFiller for Engine {
    fn fill_file_tile(&self, page: u32, tile: *const u8, index: u32) -> bool {
        Engine::fill_file_tile(self, page, tile, index)
    }
}
