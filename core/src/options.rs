//! Loader options, with the defaults a production renderer would start from.

use crate::error::{Error, Result};

/// How much higher the niceness of background fill threads is than their creator's
/// ([`LoaderOptions::background_fills`]): at +10, the Linux scheduler gives a runnable fill
/// thread about a tenth of the share of a render thread.
pub const BACKGROUND_FILL_NICENESS: i32 = 10;

/// The fill CPU limit, in cores ([`LoaderOptions::fill_cpu_cores`]), for an interactive
/// CPU renderer whose shading threads use every core: on the built-in scene (2 cores, 2
/// shading threads, threads pinned) it kept every frame within 1.5× of the same frame fully
/// resident, where without it a burst of fills made frames 1.9–2.2× slower; full detail
/// after a camera cut came 35–46 frames after the cut, against 35 without a limit
/// (docs/INTERACTIVE.md). Not a default: a GPU renderer's fills should use every idle core.
pub const CPU_RENDERER_FILL_CPU_CORES: f32 = 0.25;

/// The smallest fill CPU limit accepted ([`LoaderOptions::fill_cpu_cores`]): a hundredth of
/// a core. Smaller limits would hold fills back for minutes.
pub const MIN_FILL_CPU_CORES: f32 = 0.01;

/// The fewest fill threads an interactive loader starts by default
/// ([`LoaderOptions::fill_thread_count`]).
pub const INTERACTIVE_MIN_FILL_THREADS: usize = 8;

/// How a [`crate::Loader`] is set up. Sizes are in pages and bytes, never "MB".
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoaderOptions {
    /// Pages in the virtual page space (default 2^26: 4 TiB of 64 KiB tiles).
    pub num_pages: u32,
    /// Pages with a 64-bit page-table entry: samplers, base colours, user resources
    /// (default 2^18; must hold `2 × max_textures`).
    pub page_table_entries: u32,
    /// Most textures (default 2^16).
    pub max_textures: u32,
    /// Texture memory budget in bytes: tiles and mip tails (default 2 GiB).
    pub max_texture_memory: u64,
    /// Most fills started by one `process_requests`; the rest are deferred to the next
    /// launch and counted (default 8192).
    pub max_requests_per_launch: usize,
    /// Evict stale tiles when memory is needed (default true). Without eviction, requests
    /// beyond the budget are deferred.
    pub eviction: bool,
    /// Fill threads (0 = the default: one per core, and in interactive mode at least
    /// [`INTERACTIVE_MIN_FILL_THREADS`]; see [`LoaderOptions::fill_thread_count`]).
    pub fill_threads: usize,
    /// Fill threads run at a lower OS scheduling priority than the threads that created the
    /// loader (Linux: niceness [`BACKGROUND_FILL_NICENESS`] higher), so that a burst of
    /// fills takes the cycles the render threads leave rather than theirs. `None` (the
    /// default) = on in interactive mode (a frame must not slow down because tiles are
    /// being decoded), off in final mode. No effect on other systems.
    pub background_fills: Option<bool>,
    /// The most CPU time fills may take, in cores (a rate: CPU-seconds per second, averaged
    /// over a few milliseconds; at least [`MIN_FILL_CPU_CORES`]), or `None` (the default)
    /// for no limit. For a CPU renderer whose shading threads use every core, in
    /// interactive mode: a fill's decoding is taken from the frame being shaded whatever
    /// the fill threads' priority, and this bounds what a frame loses to a burst of fills
    /// (docs/INTERACTIVE.md). Time fills spend waiting on storage does not count. Tile and
    /// user-resource fills on fill threads are limited; texture opens and blocking fills
    /// are not. A GPU renderer, whose frames do not run on the CPU, leaves it unset.
    pub fill_cpu_cores: Option<f32>,
    /// Pages must go unused for about 2^(threshold-1) launches before they may be staged
    /// (default 1: unused in the last launch).
    pub lru_threshold: u8,
    /// When memory is tight, stale tiles are staged (made non-resident, data kept) beyond
    /// what the launch needs, up to this fraction of the budget, so that a staged tile
    /// requested again is restored without a read (default 1/16).
    pub staged_reserve: f32,
    /// Interactive (a viewport: frames never wait, detail sharpens over the next frames)
    /// or final (a render that converges) streaming (default final).
    pub mode: StreamingMode,
    /// Probabilistic request rejection ([`crate::paging::rejection`]): `None` (the
    /// default) = on in interactive mode, off in final mode.
    pub request_rejection: Option<bool>,
    /// Most tile publications one launch start makes (default: no limit); the rest wait
    /// for the next, coarse pages first, and are counted (`Stats::publications_capped`).
    /// Keeps a burst of finished fills from stalling one frame.
    pub max_publications_per_launch: usize,
    /// Interactive mode: a queued tile fill that a fill thread takes when the last launch
    /// that asked for its page is this many launches old or more is dropped unread (the
    /// view has moved on; a page needed again is requested again) and counted
    /// (`Stats::fills_dropped_stale`). A page every launch still asks for is read however
    /// long the queue takes to reach it (default 3).
    pub max_fill_age: u32,
    /// Blocking fills of a CPU loader publish a page whose file has smaller tiles than a
    /// page (maketx's 64×64) before reading it, and lookups read the file tiles they touch
    /// into it, one at a time ([`crate::sources::ImageSource::file_tile`]): under a
    /// thrashing cache a page costs the file tiles used, not all those it covers
    /// (default true).
    pub fill_by_file_tile: bool,
    /// On a backend that samples host tiles (the CPU loader and cache), a texture whose
    /// file has tiles smaller than a page (maketx's 64×64 tiles: 16 KiB of 8-bit RGBA, 32
    /// KiB of half RGBA) gets pages of its file tiles' size, from 4 to 64 KiB
    /// ([`crate::textures::TextureLayout::with_tile`]): a page then holds, and costs the
    /// budget, exactly the file tile a lookup needed, as in OpenImageIO's tile cache, and
    /// eviction frees file tiles rather than pages holding several of them. Applies to
    /// multi-pass and blocking fills alike; a GPU backend always takes 64 KiB pages. Where
    /// it applies, `fill_by_file_tile` has nothing left to cut (default true).
    pub pages_of_file_tiles: bool,
    /// A filled tile whose texels all hold one value is stored once per distinct value: its
    /// page points at one shared slot, counted against the budget once, and is not evicted
    /// while its texture's contents stay (`Stats::coalesced_pages`). Needs a backend that
    /// can publish one tile for many pages (`Backend::shares_tiles`: the CPU loader and
    /// cache, and the CUDA loader, which maps one physical tile per value); sources whose
    /// tiles are written after publication (Ptex pages) never share (default true).
    pub coalesce_constant_tiles: bool,
    /// A texture whose file stores 4×4 blocks of a BC codec at every level (a DDS with
    /// its mips) keeps them in its pages as stored, rather than decoded
    /// ([`crate::textures::TextureLayout::with_blocks`]): the budget holds 4× (BC2, BC3,
    /// BC5, BC6H, BC7) to 8× (BC1, BC4) more texels than 8-bit RGBA, and the samplers
    /// decode the texels a lookup reads. Needs a backend that samples blocks
    /// (`Backend::samples_blocks`: the CPU loader and cache); others get decoded texels
    /// (default true).
    pub keep_blocks: bool,
    /// Textures whose files hold the same texels share one set of tiles: a texture that
    /// opens with the size, format and mip tail of an open one, read the same way from
    /// the same file or from a file with the same bytes (hashed once to make sure:
    /// [`crate::sources::identity`]), samples that texture's pages, so its tiles are read
    /// and held once (`Stats::textures_sharing_tiles`). Needs a backend that lets two
    /// samplers address one range (`Backend::shares_texture_tiles`: the CPU loader and
    /// cache, and the CUDA loader, where the copy is a texture object over its owner's
    /// array) and sources that name their file
    /// ([`crate::sources::ImageSource::content_identity`]) (default true).
    pub share_duplicate_textures: bool,
    /// Bytes of whole decodes (PNG, JPEG, Radiance HDR, Targa and BMP images, mip levels generated in memory:
    /// [`crate::sources::ImageSource::whole_decode`]) the loader's unnamed temporary files
    /// in [`spill_dir`](Self::spill_dir) may hold at once. A decode is spilled when it is
    /// released while its texture will need it again: an open's decode the budget has no
    /// room to keep for the pages, a decode whose fills left pages of its levels out for
    /// want of room, and a texture's second decode. Without that, a budget much smaller
    /// than the decodes would decode the whole image again at each miss; with it, the
    /// pages are read from the file by position (`Stats::decodes_spilled`,
    /// `Stats::spilled_bytes`). A budget with room for the decode (a quarter of it) and the
    /// pages spills nothing. The files go with their textures (unregistered, or opened
    /// again), which makes room. Default 8 GiB; 0: never spill.
    pub max_spill_bytes: u64,
    /// Where spilled decodes go. Default `None`: `$TMPDIR` if set; else, on Unix,
    /// `/var/tmp` (on disk by convention: `/tmp` is often a RAM file system, which would
    /// hold the spilled bytes in memory), then the system's temporary directory if
    /// `/var/tmp` cannot take a file. A directory that cannot take a file (the last one,
    /// by default) is warned about once, and the texture is decoded again at need, as
    /// without spilling.
    pub spill_dir: Option<std::path::PathBuf>,
}

/// [`LoaderOptions::max_spill_bytes`]'s default: 8 GiB.
pub const DEFAULT_MAX_SPILL_BYTES: u64 = 8 << 30;

/// How a loader streams (see [`LoaderOptions::mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum StreamingMode {
    /// A render that converges: every request is served, in order; what a launch cannot
    /// serve is deferred to the next.
    #[default]
    Final,
    /// A viewport: requests are rejected at random to spread them over the frame; the
    /// fill queue is bounded (`max_requests_per_launch` tile fills queued at most),
    /// served coarse levels first, and what does not fit is dropped rather than deferred
    /// (a page still needed is requested again); fills the view has moved on from are
    /// dropped (`max_fill_age`).
    Interactive,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            num_pages: 1 << 26,
            page_table_entries: 1 << 18,
            max_textures: 1 << 16,
            max_texture_memory: 2 << 30,
            max_requests_per_launch: 8192,
            eviction: true,
            fill_threads: 0,
            background_fills: None,
            fill_cpu_cores: None,
            lru_threshold: 1,
            staged_reserve: 0.0625,
            mode: StreamingMode::Final,
            request_rejection: None,
            max_publications_per_launch: usize::MAX,
            max_fill_age: 3,
            fill_by_file_tile: true,
            pages_of_file_tiles: true,
            coalesce_constant_tiles: true,
            keep_blocks: true,
            share_duplicate_textures: true,
            max_spill_bytes: DEFAULT_MAX_SPILL_BYTES,
            spill_dir: None,
        }
    }
}

impl LoaderOptions {
    /// The codec of the blocks a texture read from `source` keeps in its pages
    /// ([`keep_blocks`](Self::keep_blocks)) on a backend that samples blocks or not
    /// (`Backend::samples_blocks`): the option is on, the backend samples blocks, and the
    /// source stores every level in blocks ([`crate::sources::ImageSource::block_codec`]).
    pub fn kept_block_codec(
        &self,
        source: &dyn crate::sources::ImageSource,
        backend_samples_blocks: bool,
    ) -> Option<crate::textures::BlockCodec> {
        (self.keep_blocks && backend_samples_blocks)
            .then(|| source.block_codec())
            .flatten()
    }

    /// Whether launches reject requests: `request_rejection`, else on in interactive mode.
    pub fn rejects_requests(&self) -> bool {
        self.request_rejection
            .unwrap_or(self.mode == StreamingMode::Interactive)
    }

    /// Whether CPU launches count their misses per page through the request gate: when
    /// they reject requests, and in interactive mode, whose fill queue serves the pages
    /// most lookups missed first.
    pub fn counts_requests(&self) -> bool {
        self.rejects_requests() || self.mode == StreamingMode::Interactive
    }

    /// The fill threads a loader with these options starts: `fill_threads`, or when 0 one
    /// per core — and in interactive mode at least [`INTERACTIVE_MIN_FILL_THREADS`]: an
    /// interactive frame's reads wait on storage while the frame goes on, so they are
    /// served by more threads than cores (which run in the background, below the render
    /// threads' priority, and mostly sleep in their reads). With one per core on a 2-core
    /// machine and 50 ms per read, 2 threads serve 40 tiles/s and a view never reached full
    /// detail (docs/INTERACTIVE.md).
    pub fn fill_thread_count(&self) -> usize {
        if self.fill_threads != 0 {
            return self.fill_threads;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        match self.mode {
            StreamingMode::Interactive => cores.max(INTERACTIVE_MIN_FILL_THREADS),
            StreamingMode::Final => cores,
        }
    }

    /// Whether fill threads run in the background: `background_fills`, else on in
    /// interactive mode.
    pub fn fills_in_background(&self) -> bool {
        self.background_fills
            .unwrap_or(self.mode == StreamingMode::Interactive)
    }

    /// Check the options for consistency.
    pub fn validate(&self) -> Result<()> {
        crate::paging::PageLayout::new(self.max_textures, self.page_table_entries, self.num_pages)?;
        if self.num_pages > 1 << 31 {
            return Err(Error::InvalidArgument(format!(
                "num_pages {} exceeds 2^31",
                self.num_pages
            )));
        }
        if self.max_requests_per_launch == 0 {
            return Err(Error::InvalidArgument(
                "max_requests_per_launch must be at least 1".into(),
            ));
        }
        if self.max_publications_per_launch == 0 {
            return Err(Error::InvalidArgument(
                "max_publications_per_launch must be at least 1".into(),
            ));
        }
        if let Some(c) = self.fill_cpu_cores {
            if !(c.is_finite() && c >= MIN_FILL_CPU_CORES) {
                return Err(Error::InvalidArgument(format!(
                    "fill_cpu_cores {c} (at least {MIN_FILL_CPU_CORES} cores, or none)"
                )));
            }
        }
        if self.max_fill_age == 0 {
            return Err(Error::InvalidArgument(
                "max_fill_age must be at least 1".into(),
            ));
        }
        if !(1..=crate::paging::MAX_LRU_AGE).contains(&self.lru_threshold) {
            return Err(Error::InvalidArgument(format!(
                "lru_threshold {} (1..=14)",
                self.lru_threshold
            )));
        }
        if !(0.0..=1.0).contains(&self.staged_reserve) {
            return Err(Error::InvalidArgument(format!(
                "staged_reserve {} (0..=1)",
                self.staged_reserve
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_threads_default_to_one_per_core_and_at_least_eight_when_interactive() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let interactive = LoaderOptions {
            mode: StreamingMode::Interactive,
            ..LoaderOptions::default()
        };
        assert_eq!(LoaderOptions::default().fill_thread_count(), cores);
        assert_eq!(
            interactive.fill_thread_count(),
            cores.max(INTERACTIVE_MIN_FILL_THREADS)
        );
        for mode in [StreamingMode::Final, StreamingMode::Interactive] {
            let given = LoaderOptions {
                mode,
                fill_threads: 3,
                ..LoaderOptions::default()
            };
            assert_eq!(given.fill_thread_count(), 3, "given: as given");
        }
    }

    #[test]
    fn a_fill_cpu_limit_must_be_a_positive_number_of_cores() {
        for ok in [None, Some(MIN_FILL_CPU_CORES), Some(0.25), Some(4.0)] {
            let o = LoaderOptions {
                fill_cpu_cores: ok,
                ..LoaderOptions::default()
            };
            assert!(o.validate().is_ok(), "{ok:?}");
        }
        for bad in [0.0, 0.009, 1e-30, -1.0, f32::NAN, f32::INFINITY] {
            let o = LoaderOptions {
                fill_cpu_cores: Some(bad),
                ..LoaderOptions::default()
            };
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains("fill_cpu_cores"), "{e}");
        }
    }
}
