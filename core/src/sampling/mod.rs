//! CPU samplers over the page layer, with the semantics of the CUDA device API: every
//! lookup records the pages its footprint touches (misses become requests at the next
//! `process_requests`), and returns the filtered value plus whether it was resident.

use crate::backend::cpu::TileDirectory;
use crate::paging::PageTable;

/// What a sampler reads: the page layer and the CPU tile directory of one loader.
/// [`crate::Launch::view`] hands one out; building one by hand is `unsafe`.
#[derive(Clone, Copy)]
pub struct CpuView<'a> {
    pages: &'a PageTable,
    tiles: &'a TileDirectory,
}

impl<'a> CpuView<'a> {
    /// A view over a page table and tile directory.
    ///
    /// # Safety
    /// While the view lives: every resident sampler page's entry is 0 or the address of a
    /// valid [`crate::textures::TextureSampler`] whose `mip_tail_data` (if its mip tail page
    /// is resident) addresses the packed tail its levels describe; every resident tile
    /// page's directory entry addresses [`crate::TILE_BYTES`] readable bytes; and none of
    /// that memory is written or freed.
    pub unsafe fn new(pages: &'a PageTable, tiles: &'a TileDirectory) -> Self {
        CpuView { pages, tiles }
    }

    /// The page layer.
    pub fn pages(&self) -> &'a PageTable {
        self.pages
    }

    /// The tile directory.
    pub fn tiles(&self) -> &'a TileDirectory {
        self.tiles
    }
}

/// Per-lookup options.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleOptions {
    /// On a miss, return the value of the finest coarser level whose footprint is resident
    /// (the mip tail always is once the sampler is) and report it as resident. The missing
    /// pages are still requested, so later launches sharpen.
    pub fallback_to_coarser: bool,
}

/// The result of one lookup.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// RGBA. One-channel textures give (c, c, c, 1), two-channel (c0, c1, 0, 1).
    pub value: [f32; 4],
    /// Whether every texel the filter needed was resident (or, with
    /// `fallback_to_coarser`, a coarser resident level stood in).
    pub resident: bool,
}

/// Sample level 0 (placeholder; being written).
pub fn tex2d(view: CpuView<'_>, texture: crate::TextureId, s: f32, t: f32, options: &SampleOptions) -> Sample {
    tex2d_lod(view, texture, s, t, 0.0, options)
}
/// Sample at a level of detail (placeholder; being written).
pub fn tex2d_lod(view: CpuView<'_>, texture: crate::TextureId, s: f32, t: f32, lod: f32, options: &SampleOptions) -> Sample {
    let _ = (view, texture, s, t, lod, options);
    todo!()
}
/// Sample with gradients (placeholder; being written).
pub fn tex2d_grad(view: CpuView<'_>, texture: crate::TextureId, s: f32, t: f32, ddx: [f32; 2], ddy: [f32; 2], options: &SampleOptions) -> Sample {
    let _ = (view, texture, s, t, ddx, ddy, options);
    todo!()
}
