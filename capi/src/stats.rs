//! The statistics struct shared with C (`DtexStats`): the engine's `Stats`, field for
//! field, versioned by `struct_size` for callers built against older headers.

use crate::boundary::Versioned;
use engine::Stats;

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
    /// Textures open now that sample another texture's tiles,
    /// their files holding the same texels (`share_duplicate_textures`).
    pub textures_sharing_tiles: u64,
    /// Bytes of files read to confirm that two textures' files hold the same bytes.
    pub duplicate_bytes_hashed: u64,
    /// Whole decodes made for fills: PNG, JPEG, HDR, Targa and BMP files decoded whole, mip levels
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
    /// Bytes the spill files hold now (at most `max_spill_bytes`).
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

/// `sizeof(DtexStats)` with the duplicate-texture counters, before the whole-decode
/// counters (`whole_decodes`): callers built against that header get the fields they know.
pub const DTEX_STATS_SIZE_DUPLICATES: u32 = std::mem::offset_of!(DtexStats, whole_decodes) as u32;

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
