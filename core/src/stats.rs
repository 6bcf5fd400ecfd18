//! `Stats`: one serialisable snapshot of everything the loader counts.

use serde::Serialize;

/// A snapshot of a loader's counters. Totals are since creation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Level-0 texel bytes of the textures opened so far (their virtual size).
    pub virtual_bytes: u64,
    /// Textures created.
    pub textures: u64,
    /// Textures whose source failed (they sample as their fallback colour).
    pub failed_textures: u64,
    /// Distinct pages requested, summed over launches (a page missed by many lookups in one
    /// launch counts once).
    pub requests: u64,
    /// Requests that could not be served in their launch (over the per-launch maximum, no
    /// memory free, or a source that said "not yet") and were carried to the next.
    pub requests_deferred: u64,
    /// Of those: over `max_requests_per_launch`.
    pub deferred_over_limit: u64,
    /// Of those: no tile memory could be had — every resident tile was used by the launch
    /// (the frame's working set exceeds the budget) or is still visible to a live launch.
    pub deferred_no_memory: u64,
    /// Of those: the source answered "not yet".
    pub deferred_not_yet: u64,
    /// Tiles read from sources into the pool.
    pub tiles_filled: u64,
    /// Mip tails read (one per opened texture).
    pub mip_tails_filled: u64,
    /// Texel bytes written by sources (tiles and mip tails).
    pub bytes_read: u64,
    /// Requests for pages no resource owns (a renderer bug or a corrupt id), ignored.
    pub unowned_requests: u64,
    /// Reads that failed.
    pub read_errors: u64,
    /// Staged pages requested again and restored without a read.
    pub second_chance_restores: u64,
    /// Pages made non-resident to free memory (staged).
    pub pages_staged: u64,
    /// Staged tiles whose memory was reused or freed: they must be read again if needed.
    pub evictions: u64,
    /// Bytes of texture memory held now: tiles (resident, staged, being filled, free for
    /// reuse, or dropped by an invalidation but still visible to a live launch), mip
    /// tails, and texels sources hold for open textures (Ptex per-face constants).
    pub resident_bytes: u64,
    /// Highest `resident_bytes` seen.
    pub peak_resident_bytes: u64,
    /// The texture memory budget.
    pub budget_bytes: u64,
    /// Bytes of page bookkeeping: bits, LRU ages, entries, tile directory.
    pub bookkeeping_bytes: u64,
    /// Seconds spent in fills, summed over fill threads.
    pub fill_seconds: f64,
    /// Launches prepared.
    pub launches: u64,
    /// Blocking mode: misses that waited for another thread's read of the same page
    /// instead of reading it again.
    pub fill_waits: u64,
    /// Blocking mode: tile fills that found no memory (every tile held by a live launch,
    /// or a budget smaller than the lookups in progress need).
    pub blocking_no_memory: u64,
    /// Blocking mode: clock sweeps over the resident tiles to choose tiles to stage.
    pub clock_sweeps: u64,
    /// Blocking mode: lookups that could not make their footprint resident (budget too
    /// small for the lookups in flight, failed or "not yet" reads) and returned the best
    /// resident approximation (coarser level or base colour), reported non-resident.
    pub blocking_fallbacks: u64,
    /// Bytes of host memory holding tiles now. With the CPU backend every resident or
    /// staged tile is here (it is sampled in place); with a backend that holds tile data
    /// itself (a GPU), only tiles being filled or waiting for publication, and spare
    /// buffers — bounded by the fills in flight, whatever the budget.
    pub host_tile_bytes: u64,
    /// Highest `host_tile_bytes` seen.
    pub peak_host_tile_bytes: u64,
    /// Publications the backend could not take yet (no device memory free) and that were
    /// offered again at the next launch.
    pub publications_deferred: u64,
    /// Interactive mode: new requests dropped by probabilistic request rejection (see
    /// [`crate::paging::rejection`]); the pages are asked for again by later lookups.
    pub requests_rejected: u64,
    /// Interactive mode: requests dropped rather than deferred — over
    /// `max_requests_per_launch`, beyond the fill queue's bound, or with no tile memory
    /// free; a page still needed is requested again by a later launch.
    pub requests_dropped: u64,
    /// Interactive mode: queued tile fills dropped unread because their launch was
    /// `max_fill_age` launches old when a fill thread took them, or cancelled
    /// (`Engine::cancel_queued_fills`).
    pub fills_dropped_stale: u64,
    /// Tile publications held for a later launch by `max_publications_per_launch`.
    pub publications_capped: u64,
    /// Blocking mode: of `tiles_filled`, pages published before their file tiles were
    /// read, filled in place file tile by file tile as lookups touch them
    /// (`LoaderOptions::fill_by_file_tile`).
    pub tiles_published_unread: u64,
    /// File tiles read into such pages (their bytes are in `bytes_read`).
    pub file_tiles_filled: u64,
    /// Of `tiles_filled`, constant tiles given the shared slot of their value instead of
    /// one of their own (`LoaderOptions::coalesce_constant_tiles`).
    pub tiles_coalesced: u64,
    /// Pages served by a shared constant slot now.
    pub coalesced_pages: u64,
    /// Shared constant slots held now (distinct values; each counts once in
    /// `resident_bytes`). The budget saved is `coalesced_pages - shared_constant_tiles`
    /// tiles.
    pub shared_constant_tiles: u64,
    /// Textures open now that sample another texture's tiles, their files holding the
    /// same texels (`LoaderOptions::share_duplicate_textures`).
    pub textures_sharing_tiles: u64,
    /// Bytes of files read to confirm that two textures' files hold the same bytes (each
    /// unchanged file once).
    pub duplicate_bytes_hashed: u64,
    /// Whole decodes made for fills (PNG, JPEG, Radiance HDR, Targa and BMP images decoded whole, mip levels
    /// generated in memory: `ImageSource::whole_decode`), each used for every page of
    /// those levels that a batch fills.
    pub whole_decodes: u64,
    /// Of those, decodes whose bytes the budget could not take (served all the same).
    pub whole_decodes_over_budget: u64,
    /// Pages filled from a whole decode without being asked for (`tiles_filled` counts
    /// them too).
    pub pages_prefetched: u64,
    /// Bytes of whole decodes charged to the budget now (in `resident_bytes`).
    pub whole_decode_bytes: u64,
    /// Whole decodes written to spill files: textures whose decode the budget could not
    /// keep for all their pages, which are read from the file since
    /// (`LoaderOptions::max_spill_bytes`).
    pub decodes_spilled: u64,
    /// Bytes the spill files hold now (at most `LoaderOptions::max_spill_bytes`; a file
    /// goes with its texture, or at the texture's next open).
    pub spilled_bytes: u64,
}
