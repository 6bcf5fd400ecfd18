//! The option structs shared with C, their defaults, and their checked conversion to the
//! engine's types (the statistics struct: `stats`).

use crate::boundary::{c_bool, entry_value, optional_c_str, optional_in_prefix, Out, Versioned};
use crate::status::{ApiError, ApiResult};
use engine::textures::{AddressMode, FilterMode, MipFilter, TextureDesc};
use engine::{LoaderOptions, StreamingMode};
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
    /// Boolean (default 1): a loader's or cache's tile whose texels all hold one value
    /// shares one slot of the budget (on CUDA, one physical tile) with every other page of
    /// that value
    /// (`coalesced_pages`, `shared_constant_tiles`). Absent before struct size
    /// `DTEX_LOADER_OPTIONS_SIZE_FILL_AGE`: callers built against that header get the
    /// default.
    pub coalesce_constant_tiles: u32,
    /// Boolean (default 1): blocking lookups of a CPU loader or cache read a file whose tiles
    /// are smaller than a page (maketx's 64×64) one file tile at a time, as lookups touch
    /// them, rather than whole pages (`tiles_published_unread`, `file_tiles_filled`). Absent
    /// before `DTEX_LOADER_OPTIONS_SIZE_FILL_AGE`, as above.
    pub fill_by_file_tile: u32,
    /// Boolean (default 1): a loader's or cache's texture whose file holds the same
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
    /// Boolean (default 0): decode block-compressed files into texel pages. By default a
    /// texture whose file stores BC1–BC7 blocks at every level (a DDS with its mips) keeps
    /// them in its pages as stored, on a loader whose samplers decode blocks (CPU loader
    /// and cache): the budget holds 4× to 8× more texels than 8-bit RGBA. Was `reserved`
    /// (0) before `keep_blocks`: callers built against that header get the default.
    pub decode_blocks: u32,
    /// Bytes of whole decodes (PNG, JPEG, Radiance HDR, Targa and BMP images, mip levels generated in memory) the
    /// loader's unnamed temporary files in `spill_dir` may hold at once (default 8 GiB;
    /// 0: never). A decode released while its texture will need it again (a budget with no
    /// room to keep it for the pages, which would otherwise decode the whole image at
    /// each miss) is spilled, and its pages are then read from the file
    /// (`decodes_spilled`, `spilled_bytes`); a budget with room spills nothing. Absent
    /// before `DTEX_LOADER_OPTIONS_SIZE_FILL_CPU`: callers built against that header get
    /// the default.
    pub max_spill_bytes: u64,
    /// Where spilled decodes go: a NUL-terminated UTF-8 directory path, read when the
    /// loader is created (NULL, the default: `$TMPDIR` if set, else `/var/tmp` on Unix,
    /// then the system's temporary directory). Absent
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
            decode_blocks: !d.keep_blocks as u32,
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
            keep_blocks: !c_bool(self.decode_blocks, "DtexLoaderOptions.decode_blocks")?,
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
