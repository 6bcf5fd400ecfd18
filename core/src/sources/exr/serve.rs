//! What an [`ExrSource`](super::ExrSource) serves from a file: one rule, shared by
//! [`ExrSource::open`](crate::sources::ImageSource::open) and [`super::describe`], so that
//! `demandtex info` and the loader never disagree about a file.
//!
//! From the header and offset tables ([`RawFile`]): the part (checked by
//! [`ExrFile::from_raw`]), the channels and texel format (the [`ChannelSelection`] resolved
//! by [`channels::resolve`]), the image reported to the loader (a full mip chain, sizes
//! rounded down), and how many of its levels the file stores at those sizes.

use super::channels::{self, Plan};
use super::file::{ExrFile, RawFile, Storage};
use super::ChannelSelection;
use crate::sources::limits::SizeLimits;
use crate::sources::region::full_chain_info;
use crate::sources::{ImageInfo, SourceError};
use crate::textures::{file_tile_pages, mip_level_size};
use std::path::Path;

/// How one part of a file is served.
#[derive(Debug)]
pub(crate) struct Served {
    /// The part's structure.
    pub file: ExrFile,
    /// Which channels become which components.
    pub plan: Plan,
    /// What the loader is told: level-0 size, texel format, a full mip chain.
    pub info: ImageInfo,
    /// Levels `0..stored_levels` come from the file; the rest are generated.
    pub stored_levels: u32,
}

impl Served {
    /// Resolve part `part` and `selection` of the file read into `raw` (at `path`),
    /// within `limits`: one decoded block within `max_decoded_block_bytes`, the levels
    /// generated in memory (if any) within `max_image_bytes`. Errors (the reason the file
    /// cannot be served) name the file.
    pub fn new(
        path: &Path,
        raw: RawFile,
        part: usize,
        selection: &ChannelSelection,
        limits: &SizeLimits,
    ) -> Result<Served, SourceError> {
        let fail = |reason: String| SourceError(format!("{}: {reason}", path.display()));
        let file = ExrFile::from_raw(path, raw, part)?;
        let header = file.header();
        let plan = channels::resolve(selection, &header.channels).map_err(fail)?;
        let (w, h) = (header.layer_size.x() as u32, header.layer_size.y() as u32);
        let info = full_chain_info(w, h, plan.format).map_err(|e| fail(e.0))?;
        let stored_levels = stored_levels(&file, &info);
        let block = header.max_block_pixel_size();
        let block_bytes = (block.x() as u64)
            .saturating_mul(block.y() as u64)
            .saturating_mul(header.channels.bytes_per_pixel as u64);
        limits
            .check_block("one decoded block", block_bytes)
            .map_err(fail)?;
        let generated =
            crate::sources::whole_decode_of_levels(&info, stored_levels).map_or(0, |w| w.bytes);
        limits
            .check_image("the mip levels generated in memory", generated)
            .map_err(fail)?;
        Ok(Served {
            file,
            plan,
            info,
            stored_levels,
        })
    }

    /// Why levels `stored_levels..` are generated in memory; `None` when the file stores
    /// every level.
    pub fn generated_because(&self) -> Option<&'static str> {
        if self.stored_levels >= self.info.num_levels {
            return None;
        }
        Some(match self.file.storage {
            Storage::ScanLines => "a scan-line file (no tiles, no mip levels)",
            Storage::TiledSingle => "a tiled file without mip levels",
            Storage::TiledMip(_) => "a tiled file with mip levels rounded up",
            Storage::TiledRip(_) => "a tiled file with rip-map levels rounded up",
        })
    }

    /// The page extent of a CPU loader with `pages_of_file_tiles` on: the file's level-0
    /// tiles where they make pages ([`file_tile_pages`]), else a full page.
    pub fn cpu_page_tile(&self) -> (u32, u32) {
        let file_tile = file_tile(&self.file, self.stored_levels, 0);
        file_tile_pages(self.plan.format, file_tile).unwrap_or(self.plan.format.tile_extent())
    }

    /// How many file blocks a full page (cache tile) covers when blocks line up with
    /// pages (each page decodes whole blocks of its own); `None` where they do not, and
    /// neighbouring pages share decoded blocks through a cache.
    pub fn blocks_per_page(&self) -> Option<u32> {
        let g = self.file.grids[0];
        let (tw, th) = self.plan.format.tile_extent();
        let (tw, th) = (tw as usize, th as usize);
        (tw % g.block_w == 0 && th % g.block_h == 0)
            .then(|| ((tw / g.block_w) * (th / g.block_h)) as u32)
    }
}

/// The size of the file's tiles at `level` (`ImageSource::file_tile`): `None` for scan-line
/// files and levels not read from the file (`stored_levels`).
pub(super) fn file_tile(file: &ExrFile, stored_levels: u32, level: u32) -> Option<(u32, u32)> {
    if level >= stored_levels || matches!(file.storage, Storage::ScanLines) {
        return None;
    }
    let g = file.grids.get(level as usize)?;
    Some((g.block_w as u32, g.block_h as u32))
}

/// How many levels, from the finest, the file stores at our sizes ([`mip_level_size`]).
fn stored_levels(exr: &ExrFile, info: &ImageInfo) -> u32 {
    let matching = exr
        .grids
        .iter()
        .take(info.num_levels as usize)
        .enumerate()
        .take_while(|&(l, g)| {
            let (w, h) = mip_level_size(info.width, info.height, l as u32);
            (g.width, g.height) == (w as usize, h as usize)
        })
        .count();
    matching.max(1) as u32
}
