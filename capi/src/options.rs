//! The option and statistics structs shared with C, their defaults, and their checked
//! conversion to and from the engine's types.

use crate::boundary::{
    c_bool, check_reserved, entry_value, optional_c_str, optional_in_prefix, Out, Versioned,
};
use crate::status::{ApiError, ApiResult};
use engine::textures::{AddressMode, FilterMode, MipFilter, TextureDesc};
use engine::{LoaderOptions, Stats, StreamingMode};
use std::ffi::c_char;

/// Address mode: repeat.
pub const DTEX_ADDRESS_WRAP: u32 = 0;
/// Address mode: clamp to the edge texel.
pub const DTEX_ADDRESS_CLAMP: u32 = 1;
/// Address mode: repeat mirrored.
pub const DTEX_ADDRESS_MIRROR: u32 = 2;
/// Address mode: outside is transparent black.
pub const DTEX_ADDRESS_BORDER: u32 = 3;
/// Address mode: the file's own wrap mode for this axis (maketx's `wrapmodes` in a `.tx`
/// or OpenEXR file), else BORDER: OpenImageIO's `WrapDefault`, USD's `useMetadata`.
/// Resolved when the texture opens: sampler records hold WRAP..BORDER only.
pub const DTEX_ADDRESS_FROM_FILE: u32 = 4;
/// Filter: nearest texel (or nearest level, for `mip_filter`).
pub const DTEX_FILTER_POINT: u32 = 0;
/// Filter: bilinear (or blend two levels, for `mip_filter`).
pub const DTEX_FILTER_LINEAR: u32 = 1;

/// How a loader (or a cache) is set up. Fill it with `dtex_loader_options_default`, then
/// change fields. Sizes are in pages and bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtexLoaderOptions {
    /// `sizeof(DtexLoaderOptions)` (set by `dtex_loader_options_default`).
    pub struct_size: u32,
    /// Pages in the virtual page space (default 1<<26: 4 TiB of 64 KiB tiles; at most 1<<31).
    pub num_pages: u32,
    /// Pages with a 64-bit page-table entry (default 1<<18; at least 2 * max_textures).
    pub page_table_entries: u32,
    /// Most textures (default 1<<16).
    pub max_textures: u32,
    /// Texture memory budget in bytes: tiles and mip tails (default 2 GiB).
    pub max_texture_memory: u64,
    /// Most fills started by one `dtex_process_requests`; the rest are deferred (default
    /// 8192; at least 1).
    pub max_requests_per_launch: u32,
    /// Boolean: evict stale tiles when memory is needed (default 1).
    pub eviction: u32,
    /// Fill threads (0, the default: one per core, and at least 8 for an interactive
    /// loader, whose reads wait on storage while frames go on).
    pub fill_threads: u32,
    /// Launches a page must go unused before it may be evicted, as 2^(n-1) (default 1; 1..=14).
    pub lru_threshold: u32,
    /// Fraction of the budget kept as staged tiles for a second chance (default 0.0625; 0..=1).
    pub staged_reserve: f32,
    /// Boolean (default 0): interactive streaming (a viewport; new requests are rejected at
    /// random, with the previous launch's `1 - unique / total`, to spread them over the
    /// frame) rather than final (a render that converges). Interactive loaders also run
    /// their fill threads in the background (Linux: niceness +10). Was `reserved` (0) in
    /// 0.1.0.
    pub interactive: u32,
    /// Interactive mode: a queued tile fill that a fill thread takes when the last launch
    /// that asked for its page is this many launches old or more is dropped unread and
    /// counted (`fills_dropped_stale`); a page every launch still asks for is read
    /// (default 3; at least 1). Absent before 0.1 ABI struct size
    /// `DTEX_LOADER_OPTIONS_SIZE_0_1_0`: callers built against that header get the default.
    pub max_fill_age: u32,
    /// Most tile publications one launch start makes; the rest wait for the next, coarse
    /// pages first (`publications_capped`) (default 0: no limit).
    pub max_publications_per_launch: u32,
    /// Boolean (default 1): a CPU loader's or cache's tile whose texels all hold one value
    /// shares one slot of the budget with every other page of that value
    /// (`coalesced_pages`, `shared_constant_tiles`). Absent before struct size
    /// `DTEX_LOADER_OPTIONS_SIZE_FILL_AGE`: callers built against that header get the
    /// default.
    pub coalesce_constant_tiles: u32,
    /// Boolean (default 1): blocking lookups of a CPU loader or cache read a file whose tiles
    /// are smaller than a page (maketx's 64×64) one file tile at a time, as lookups touch
    /// them, rather than whole pages (`tiles_published_unread`, `file_tiles_filled`). Absent
    /// before `DTEX_LOADER_OPTIONS_SIZE_FILL_AGE`, as above.
    pub fill_by_file_tile: u32,
    /// Boolean (default 1): a CPU loader's or cache's texture whose file holds the same
    /// texels as an open texture's (the same file under another path, or a copy: same
    /// size, format and mip tail, then the whole files hashed once to make sure) samples
    /// that texture's tiles instead of reading and holding its own
    /// (`textures_sharing_tiles`). Absent before `DTEX_LOADER_OPTIONS_SIZE_FILE_TILES`:
    /// callers built against that header get the default.
    pub share_duplicate_textures: u32,
    /// Boolean (default 0): a CPU loader or cache gives every texture 64 KiB pages. By
    /// default a texture whose file has tiles smaller than a page (maketx's 64×64) gets
    /// pages of its file tiles' size (4 to 64 KiB), so that the budget holds, and eviction
    /// frees, file tiles rather than pages of several. Was `reserved` (0) before
    /// `pages_of_file_tiles`: callers built against that header get the default.
    pub full_pages: u32,
    /// The most CPU time fills may take, in cores (default 0: no limit; else at least
    /// `DTEX_MIN_FILL_CPU_CORES`). For a CPU renderer whose shading threads use every core,
    /// in interactive mode: what fills decode is taken from the frame being shaded
    /// whatever the fill threads' priority, and this bounds what a frame loses to a burst
    /// of fills. Waits on storage do not count. A GPU renderer leaves it 0. Absent before
    /// `DTEX_LOADER_OPTIONS_SIZE_FULL_PAGES`: callers built against that header get the
    /// default.
    pub fill_cpu_cores: f32,
    /// Reserved: must be 0.
    pub reserved: u32,
    /// Bytes of whole decodes (PNG and JPEG images, mip levels generated in memory) the
    /// loader may write to unnamed temporary files in `spill_dir` (default 8 GiB; 0:
    /// never). A decode released while its texture will need it again (a budget with no
    /// room to keep it for the pages, which would otherwise decode the whole image at
    /// each miss) is spilled, and its pages are then read from the file
    /// (`decodes_spilled`, `spilled_bytes`); a budget with room spills nothing. Absent
    /// before `DTEX_LOADER_OPTIONS_SIZE_FILL_CPU`: callers built against that header get
    /// the default.
    pub max_spill_bytes: u64,
    /// Where spilled decodes go: a NUL-terminated UTF-8 directory path, read when the
    /// loader is created (NULL, the default: the system's temporary directory). Absent
    /// before `DTEX_LOADER_OPTIONS_SIZE_FILL_CPU`, as above.
    pub spill_dir: *const c_char,
}

/// `DtexLoaderOptions.fill_cpu_cores` for an interactive CPU renderer whose shading threads
/// use every core (the engine's `CPU_RENDERER_FILL_CPU_CORES`; not the default, which is 0:
/// a GPU renderer's fills use every idle core).
pub const DTEX_CPU_RENDERER_FILL_CPU_CORES: f32 = 0.25;
const _: () = assert!(DTEX_CPU_RENDERER_FILL_CPU_CORES == engine::CPU_RENDERER_FILL_CPU_CORES);
/// The smallest non-zero `DtexLoaderOptions.fill_cpu_cores` accepted (a hundredth of a
/// core; the engine's `MIN_FILL_CPU_CORES`).
pub const DTEX_MIN_FILL_CPU_CORES: f32 = 0.01;
const _: () = assert!(DTEX_MIN_FILL_CPU_CORES == engine::MIN_FILL_CPU_CORES);

/// `sizeof(DtexLoaderOptions)` before `max_fill_age` and `max_publications_per_launch`:
/// callers built against that header keep working (those fields take their defaults).
pub const DTEX_LOADER_OPTIONS_SIZE_0_1_0: u32 = 48;
/// `sizeof(DtexLoaderOptions)` with `max_fill_age` and `max_publications_per_launch`, before
/// `coalesce_constant_tiles` and `fill_by_file_tile`: callers built against that header keep
/// working (those fields take their defaults).
pub const DTEX_LOADER_OPTIONS_SIZE_FILL_AGE: u32 = 56;
/// `sizeof(DtexLoaderOptions)` with `coalesce_constant_tiles` and `fill_by_file_tile`, before
/// `share_duplicate_textures`: callers built against that header keep working (it takes its
/// default).
pub const DTEX_LOADER_OPTIONS_SIZE_FILE_TILES: u32 = 64;
/// `sizeof(DtexLoaderOptions)` with `share_duplicate_textures` and `full_pages`, before
/// `fill_cpu_cores`: callers built against that header keep working (it takes its
/// default).
pub const DTEX_LOADER_OPTIONS_SIZE_FULL_PAGES: u32 = 72;
/// `sizeof(DtexLoaderOptions)` with `fill_cpu_cores`, before `max_spill_bytes` and
/// `spill_dir`: callers built against that header keep working (they take their defaults).
pub const DTEX_LOADER_OPTIONS_SIZE_FILL_CPU: u32 = 80;
const _: () = assert!(
    std::mem::offset_of!(DtexLoaderOptions, max_fill_age) == 48
        && std::mem::offset_of!(DtexLoaderOptions, coalesce_constant_tiles) == 56
        && std::mem::offset_of!(DtexLoaderOptions, share_duplicate_textures) == 64
        && std::mem::offset_of!(DtexLoaderOptions, fill_cpu_cores) == 72
        && std::mem::offset_of!(DtexLoaderOptions, max_spill_bytes) == 80
);

/// `sizeof(DtexStats)` with the duplicate-texture counters, before the whole-decode
/// counters (`whole_decodes`): callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_DUPLICATES: u32 = std::mem::offset_of!(DtexStats, whole_decodes) as u32;

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexLoaderOptions {
    const NAME: &'static str = "DtexLoaderOptions";
    const KNOWN_SIZES: &'static [u32] = &[
        DTEX_LOADER_OPTIONS_SIZE_0_1_0,
        DTEX_LOADER_OPTIONS_SIZE_FILL_AGE,
        DTEX_LOADER_OPTIONS_SIZE_FILE_TILES,
        DTEX_LOADER_OPTIONS_SIZE_FULL_PAGES,
        DTEX_LOADER_OPTIONS_SIZE_FILL_CPU,
        std::mem::size_of::<DtexLoaderOptions>() as u32,
    ];
}

impl Default for DtexLoaderOptions {
    fn default() -> Self {
        let d = LoaderOptions::default();
        DtexLoaderOptions {
            struct_size: std::mem::size_of::<DtexLoaderOptions>() as u32,
            num_pages: d.num_pages,
            page_table_entries: d.page_table_entries,
            max_textures: d.max_textures,
            max_texture_memory: d.max_texture_memory,
            max_requests_per_launch: d.max_requests_per_launch as u32,
            eviction: d.eviction as u32,
            fill_threads: d.fill_threads as u32,
            lru_threshold: d.lru_threshold as u32,
            staged_reserve: d.staged_reserve,
            interactive: (d.mode == StreamingMode::Interactive) as u32,
            max_fill_age: d.max_fill_age,
            max_publications_per_launch: if d.max_publications_per_launch == usize::MAX {
                0
            } else {
                d.max_publications_per_launch as u32
            },
            coalesce_constant_tiles: d.coalesce_constant_tiles as u32,
            fill_by_file_tile: d.fill_by_file_tile as u32,
            share_duplicate_textures: d.share_duplicate_textures as u32,
            full_pages: !d.pages_of_file_tiles as u32,
            fill_cpu_cores: d.fill_cpu_cores.unwrap_or(0.0),
            reserved: 0,
            max_spill_bytes: d.max_spill_bytes,
            spill_dir: std::ptr::null(),
        }
    }
}

impl DtexLoaderOptions {
    /// The engine options `ptr` describes (NULL: the defaults), checked.
    ///
    /// # Safety
    /// `ptr` is NULL or points to a `DtexLoaderOptions` readable for its `struct_size`.
    pub unsafe fn resolve(ptr: *const DtexLoaderOptions) -> ApiResult<LoaderOptions> {
        // SAFETY: the caller's contract (an old caller's struct has no padding: its
        // `struct_size` bytes are its fields).
        let options = unsafe { optional_in_prefix(ptr) }?.unwrap_or_default();
        // SAFETY: the caller's contract: `spill_dir`, if within `struct_size`, is NULL or a
        // C string (an older caller's struct leaves it at its default, NULL).
        unsafe { options.to_engine() }
    }

    /// The engine's options (checked by the engine when the loader is created).
    ///
    /// # Safety
    /// `spill_dir` is NULL or a NUL-terminated string.
    pub unsafe fn to_engine(&self) -> ApiResult<LoaderOptions> {
        // SAFETY: the caller's contract.
        let spill_dir = unsafe { optional_c_str(self.spill_dir, "DtexLoaderOptions.spill_dir") }?;
        let lru_threshold = u8::try_from(self.lru_threshold).map_err(|_| {
            ApiError::invalid_argument(format!(
                "DtexLoaderOptions.lru_threshold {} (1..=14)",
                self.lru_threshold
            ))
        })?;
        check_reserved(self.reserved, "DtexLoaderOptions.reserved")?;
        // 0 is "no limit"; other values are checked by the engine (finite, at least
        // `MIN_FILL_CPU_CORES`), whose message names the field.
        let fill_cpu_cores = (self.fill_cpu_cores != 0.0).then_some(self.fill_cpu_cores);
        Ok(LoaderOptions {
            num_pages: self.num_pages,
            page_table_entries: self.page_table_entries,
            max_textures: self.max_textures,
            max_texture_memory: self.max_texture_memory,
            max_requests_per_launch: self.max_requests_per_launch as usize,
            eviction: c_bool(self.eviction, "DtexLoaderOptions.eviction")?,
            fill_threads: self.fill_threads as usize,
            lru_threshold,
            staged_reserve: self.staged_reserve,
            mode: if c_bool(self.interactive, "DtexLoaderOptions.interactive")? {
                StreamingMode::Interactive
            } else {
                StreamingMode::Final
            },
            request_rejection: None,
            background_fills: None,
            fill_cpu_cores,
            max_publications_per_launch: match self.max_publications_per_launch {
                0 => usize::MAX,
                n => n as usize,
            },
            max_fill_age: self.max_fill_age,
            coalesce_constant_tiles: c_bool(
                self.coalesce_constant_tiles,
                "DtexLoaderOptions.coalesce_constant_tiles",
            )?,
            fill_by_file_tile: c_bool(
                self.fill_by_file_tile,
                "DtexLoaderOptions.fill_by_file_tile",
            )?,
            share_duplicate_textures: c_bool(
                self.share_duplicate_textures,
                "DtexLoaderOptions.share_duplicate_textures",
            )?,
            pages_of_file_tiles: !c_bool(self.full_pages, "DtexLoaderOptions.full_pages")?,
            max_spill_bytes: self.max_spill_bytes,
            spill_dir: spill_dir.map(std::path::PathBuf::from),
        })
    }
}

/// Fill `*out` with the default options (and `struct_size`). NULL: does nothing.
///
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for writing a `DtexLoaderOptions`.
#[no_mangle]
pub unsafe extern "C" fn dtex_loader_options_default(out: *mut DtexLoaderOptions) {
    entry_value((), || {
        // SAFETY: the caller's contract.
        if let Some(out) = unsafe { Out::optional(out) } {
            out.write(DtexLoaderOptions::default());
        }
    })
}

/// How a texture is sampled, fixed at creation. Fill it with `dtex_texture_desc_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DtexTextureDesc {
    /// `sizeof(DtexTextureDesc)` (set by `dtex_texture_desc_default`).
    pub struct_size: u32,
    /// `DTEX_ADDRESS_*` for s (default WRAP).
    pub address_s: u32,
    /// `DTEX_ADDRESS_*` for t (default WRAP).
    pub address_t: u32,
    /// `DTEX_FILTER_*` within a level (default LINEAR).
    pub filter: u32,
    /// `DTEX_FILTER_*` between levels (default LINEAR: trilinear).
    pub mip_filter: u32,
    /// Largest anisotropy honoured, 1..=16 (default 1).
    pub max_anisotropy: u32,
    /// RGBA returned by every lookup once the texture has failed (default opaque magenta).
    pub fallback_color: [f32; 4],
}

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexTextureDesc {
    const NAME: &'static str = "DtexTextureDesc";
}

impl Default for DtexTextureDesc {
    fn default() -> Self {
        DtexTextureDesc::from_engine(&TextureDesc::default())
    }
}

impl DtexTextureDesc {
    /// The C form of an engine description.
    pub fn from_engine(d: &TextureDesc) -> DtexTextureDesc {
        DtexTextureDesc {
            struct_size: std::mem::size_of::<DtexTextureDesc>() as u32,
            address_s: d.address[0] as u32,
            address_t: d.address[1] as u32,
            filter: d.filter as u32,
            mip_filter: d.mip_filter as u32,
            max_anisotropy: d.max_anisotropy,
            fallback_color: d.fallback_color,
        }
    }

    /// The engine's description, checking every code.
    pub fn to_engine(&self) -> ApiResult<TextureDesc> {
        let address = |v: u32, what: &str| match v {
            DTEX_ADDRESS_WRAP => Ok(AddressMode::Wrap),
            DTEX_ADDRESS_CLAMP => Ok(AddressMode::Clamp),
            DTEX_ADDRESS_MIRROR => Ok(AddressMode::Mirror),
            DTEX_ADDRESS_BORDER => Ok(AddressMode::Border),
            DTEX_ADDRESS_FROM_FILE => Ok(AddressMode::FromFile),
            _ => Err(ApiError::invalid_argument(format!(
                "DtexTextureDesc.{what} is {v} (DTEX_ADDRESS_WRAP 0 .. DTEX_ADDRESS_FROM_FILE 4)"
            ))),
        };
        let filter = |v: u32, what: &str| match v {
            DTEX_FILTER_POINT | DTEX_FILTER_LINEAR => Ok(v == DTEX_FILTER_LINEAR),
            _ => Err(ApiError::invalid_argument(format!(
                "DtexTextureDesc.{what} is {v} (DTEX_FILTER_POINT 0 or DTEX_FILTER_LINEAR 1)"
            ))),
        };
        if !(1..=engine::textures::MAX_ANISOTROPY).contains(&self.max_anisotropy) {
            return Err(ApiError::invalid_argument(format!(
                "DtexTextureDesc.max_anisotropy is {} (1..=16)",
                self.max_anisotropy
            )));
        }
        Ok(TextureDesc {
            address: [
                address(self.address_s, "address_s")?,
                address(self.address_t, "address_t")?,
            ],
            filter: if filter(self.filter, "filter")? {
                FilterMode::Linear
            } else {
                FilterMode::Point
            },
            mip_filter: if filter(self.mip_filter, "mip_filter")? {
                MipFilter::Linear
            } else {
                MipFilter::Point
            },
            max_anisotropy: self.max_anisotropy,
            fallback_color: self.fallback_color,
        })
    }

    /// The engine description of an optional C description (NULL = `default`).
    pub fn resolve(desc: Option<&DtexTextureDesc>, default: TextureDesc) -> ApiResult<TextureDesc> {
        desc.map_or(Ok(default), DtexTextureDesc::to_engine)
    }
}

/// Fill `*out` with the default texture description (wrap, trilinear, anisotropy 1, opaque
/// magenta fallback). NULL: does nothing.
///
/// Ownership: `*out` is the caller's; nothing is kept. Thread-safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for writing a `DtexTextureDesc`.
#[no_mangle]
pub unsafe extern "C" fn dtex_texture_desc_default(out: *mut DtexTextureDesc) {
    entry_value((), || {
        // SAFETY: the caller's contract.
        if let Some(out) = unsafe { Out::optional(out) } {
            out.write(DtexTextureDesc::default());
        }
    })
}

/// A snapshot of a loader's (or cache's) counters; totals are since creation. The caller
/// sets `struct_size = sizeof(DtexStats)` before the call. The fields are those of the
/// Rust `demandtex::Stats`, in the same order and with the same meaning.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DtexStats {
    /// `sizeof(DtexStats)`, set by the caller.
    pub struct_size: u32,
    /// Zero.
    pub reserved: u32,
    /// Level-0 texel bytes of the textures opened so far (their virtual size).
    pub virtual_bytes: u64,
    /// Textures created.
    pub textures: u64,
    /// Textures whose source failed (they sample as their fallback colour).
    pub failed_textures: u64,
    /// Distinct pages requested, summed over launches.
    pub requests: u64,
    /// Requests carried to a later launch (over the limit, no memory, or "not yet").
    pub requests_deferred: u64,
    /// Of those: over `max_requests_per_launch`.
    pub deferred_over_limit: u64,
    /// Of those: no tile memory could be had.
    pub deferred_no_memory: u64,
    /// Of those: the source answered "not yet".
    pub deferred_not_yet: u64,
    /// Tiles read from sources.
    pub tiles_filled: u64,
    /// Mip tails read (one per opened texture).
    pub mip_tails_filled: u64,
    /// Texel bytes written by sources.
    pub bytes_read: u64,
    /// Requests for pages no resource owns, ignored.
    pub unowned_requests: u64,
    /// Reads that failed.
    pub read_errors: u64,
    /// Staged pages requested again and restored without a read.
    pub second_chance_restores: u64,
    /// Pages made non-resident to free memory (staged).
    pub pages_staged: u64,
    /// Staged tiles whose memory was reused or freed.
    pub evictions: u64,
    /// Bytes of texture memory held now.
    pub resident_bytes: u64,
    /// Highest `resident_bytes` seen.
    pub peak_resident_bytes: u64,
    /// The texture memory budget.
    pub budget_bytes: u64,
    /// Bytes of page bookkeeping.
    pub bookkeeping_bytes: u64,
    /// Seconds spent in fills, summed over fill threads.
    pub fill_seconds: f64,
    /// Launches prepared.
    pub launches: u64,
    /// Blocking mode: misses that waited for another thread's read of the same page.
    pub fill_waits: u64,
    /// Blocking mode: tile fills that found no memory.
    pub blocking_no_memory: u64,
    /// Blocking mode: clock sweeps over the resident tiles.
    pub clock_sweeps: u64,
    /// Blocking mode: lookups that returned the best resident approximation.
    pub blocking_fallbacks: u64,
    /// Bytes of host memory holding tiles now (CPU loader: every resident or staged tile;
    /// CUDA loader: only tiles being filled or waiting for publication, and spares).
    pub host_tile_bytes: u64,
    /// Highest `host_tile_bytes` seen.
    pub peak_host_tile_bytes: u64,
    /// Publications the backend could not take yet (no device memory free), offered again
    /// at the next launch.
    pub publications_deferred: u64,
    /// Interactive mode: new requests dropped by probabilistic request rejection.
    pub requests_rejected: u64,
    /// Interactive mode: requests dropped rather than deferred (over the per-launch cap,
    /// beyond the fill queue's bound, or no tile memory free).
    pub requests_dropped: u64,
    /// Interactive mode: queued tile fills dropped unread (too old when taken up, or
    /// cancelled).
    pub fills_dropped_stale: u64,
    /// Tile publications held for a later launch by the per-launch cap.
    pub publications_capped: u64,
    /// Blocking mode: of `tiles_filled`, pages published before their file tiles were
    /// read, filled in place file tile by file tile as lookups touch them.
    pub tiles_published_unread: u64,
    /// File tiles read into such pages (their bytes are in `bytes_read`).
    pub file_tiles_filled: u64,
    /// CPU loader and cache: of `tiles_filled`, constant tiles (every texel one value)
    /// given the shared slot of their value instead of a slot of their own.
    pub tiles_coalesced: u64,
    /// Pages served by a shared constant slot now.
    pub coalesced_pages: u64,
    /// Shared constant slots held now (distinct values; each counts once in
    /// `resident_bytes`).
    pub shared_constant_tiles: u64,
    /// CPU loader and cache: textures open now that sample another texture's tiles,
    /// their files holding the same texels (`share_duplicate_textures`).
    pub textures_sharing_tiles: u64,
    /// Bytes of files read to confirm that two textures' files hold the same bytes.
    pub duplicate_bytes_hashed: u64,
    /// Whole decodes made for fills: PNG and JPEG files decoded whole, mip levels
    /// generated for files that lack them. Each fills every page of those levels that a
    /// batch fills, charged to the budget while it is used, and is released after.
    pub whole_decodes: u64,
    /// Of those, decodes whose bytes the budget could not take (served all the same).
    pub whole_decodes_over_budget: u64,
    /// Pages filled from a whole decode without being asked for (in `tiles_filled`).
    pub pages_prefetched: u64,
    /// Bytes of whole decodes charged to the budget now (in `resident_bytes`).
    pub whole_decode_bytes: u64,
    /// Whole decodes written to spill files (textures whose decode the budget could not
    /// keep for all their pages, which are read from the file since). Absent before `DTEX_STATS_SIZE_WHOLE_DECODES`.
    pub decodes_spilled: u64,
    /// Bytes written to spill files over the loader's life.
    pub spilled_bytes: u64,
}

/// `sizeof(DtexStats)` of ABI 0.1.0, before `host_tile_bytes`: callers built against that
/// header get the fields they know.
pub const DTEX_STATS_SIZE_0_1_0: u32 = std::mem::offset_of!(DtexStats, host_tile_bytes) as u32;

/// `sizeof(DtexStats)` with the host-tile and publication counters, before
/// `requests_rejected` and the other interactive-mode counters: callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_HOST_TILES: u32 =
    std::mem::offset_of!(DtexStats, requests_rejected) as u32;

/// `sizeof(DtexStats)` with the interactive-mode counters, before the file-tile counters
/// (`tiles_published_unread`): callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_INTERACTIVE: u32 =
    std::mem::offset_of!(DtexStats, tiles_published_unread) as u32;

/// `sizeof(DtexStats)` with the file-tile counters, before the constant-tile counters
/// (`tiles_coalesced`): callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_FILE_TILES: u32 = std::mem::offset_of!(DtexStats, tiles_coalesced) as u32;

/// `sizeof(DtexStats)` with the constant-tile counters, before the duplicate-texture
/// counters (`textures_sharing_tiles`): callers built against that header get the fields
/// they know.
pub const DTEX_STATS_SIZE_CONSTANT_TILES: u32 =
    std::mem::offset_of!(DtexStats, textures_sharing_tiles) as u32;

/// `sizeof(DtexStats)` with the whole-decode counters, before the spill counters
/// (`decodes_spilled`): callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_WHOLE_DECODES: u32 =
    std::mem::offset_of!(DtexStats, decodes_spilled) as u32;

// SAFETY: repr(C), first field u32 struct_size.
unsafe impl Versioned for DtexStats {
    const NAME: &'static str = "DtexStats";
    const KNOWN_SIZES: &'static [u32] = &[
        DTEX_STATS_SIZE_0_1_0,
        DTEX_STATS_SIZE_HOST_TILES,
        DTEX_STATS_SIZE_INTERACTIVE,
        DTEX_STATS_SIZE_FILE_TILES,
        DTEX_STATS_SIZE_CONSTANT_TILES,
        DTEX_STATS_SIZE_DUPLICATES,
        DTEX_STATS_SIZE_WHOLE_DECODES,
        std::mem::size_of::<DtexStats>() as u32,
    ];
}

impl DtexStats {
    /// The C form of an engine snapshot.
    pub fn from_engine(s: &Stats) -> DtexStats {
        // A field added to `Stats` is caught by the `stats_fields_match_the_engine` test
        // (not by an exhaustive pattern here, which would break the build of whoever adds it).
        let Stats {
            virtual_bytes,
            textures,
            failed_textures,
            requests,
            requests_deferred,
            deferred_over_limit,
            deferred_no_memory,
            deferred_not_yet,
            tiles_filled,
            mip_tails_filled,
            bytes_read,
            unowned_requests,
            read_errors,
            second_chance_restores,
            pages_staged,
            evictions,
            resident_bytes,
            peak_resident_bytes,
            budget_bytes,
            bookkeeping_bytes,
            fill_seconds,
            launches,
            fill_waits,
            blocking_no_memory,
            clock_sweeps,
            blocking_fallbacks,
            host_tile_bytes,
            peak_host_tile_bytes,
            publications_deferred,
            requests_rejected,
            requests_dropped,
            fills_dropped_stale,
            publications_capped,
            tiles_published_unread,
            file_tiles_filled,
            tiles_coalesced,
            coalesced_pages,
            shared_constant_tiles,
            textures_sharing_tiles,
            duplicate_bytes_hashed,
            whole_decodes,
            whole_decodes_over_budget,
            pages_prefetched,
            whole_decode_bytes,
            decodes_spilled,
            spilled_bytes,
            ..
        } = s.clone();
        DtexStats {
            struct_size: std::mem::size_of::<DtexStats>() as u32,
            reserved: 0,
            virtual_bytes,
            textures,
            failed_textures,
            requests,
            requests_deferred,
            deferred_over_limit,
            deferred_no_memory,
            deferred_not_yet,
            tiles_filled,
            mip_tails_filled,
            bytes_read,
            unowned_requests,
            read_errors,
            second_chance_restores,
            pages_staged,
            evictions,
            resident_bytes,
            peak_resident_bytes,
            budget_bytes,
            bookkeeping_bytes,
            fill_seconds,
            launches,
            fill_waits,
            blocking_no_memory,
            clock_sweeps,
            blocking_fallbacks,
            host_tile_bytes,
            peak_host_tile_bytes,
            publications_deferred,
            requests_rejected,
            requests_dropped,
            fills_dropped_stale,
            publications_capped,
            tiles_published_unread,
            file_tiles_filled,
            tiles_coalesced,
            coalesced_pages,
            shared_constant_tiles,
            textures_sharing_tiles,
            duplicate_bytes_hashed,
            whole_decodes,
            whole_decodes_over_budget,
            pages_prefetched,
            whole_decode_bytes,
            decodes_spilled,
            spilled_bytes,
        }
    }
}
