//! `DeviceContext`: everything a sampler (CPU or CUDA) needs from the page layer for one
//! launch, in one `#[repr(C)]` struct whose layout the C and CUDA headers share verbatim.
//! Plain pointers and `u32`s only: no bitfields, no C++ types.

/// Flag: samplers set reference bits for resident pages too, so the LRU sees every use
/// (set while eviction is active).
pub const CONTEXT_FLAG_REQUEST_IF_RESIDENT: u32 = 1;

/// Flag: samplers count the misses whose request stood and the requests they rejected in
/// `array_lengths[ARRAY_LENGTH_STANDING]` and `[ARRAY_LENGTH_REJECTED]` (which must then
/// hold [`ARRAY_LENGTHS`] words). Without it nothing is counted on the device.
pub const CONTEXT_FLAG_COUNT_REQUESTS: u32 = 2;

/// Index of the request count in `DeviceContext::array_lengths`.
pub const ARRAY_LENGTH_REQUESTS: usize = 0;
/// Index of the stale-page count in `DeviceContext::array_lengths`.
pub const ARRAY_LENGTH_STALE: usize = 1;
/// Index of the count of misses whose request stood (not rejected) in
/// `DeviceContext::array_lengths` (the `total` of request rejection; see
/// [`super::rejection`]).
pub const ARRAY_LENGTH_STANDING: usize = 2;
/// Index of the count of rejected requests in `DeviceContext::array_lengths`.
pub const ARRAY_LENGTH_REJECTED: usize = 3;
/// Counters in `DeviceContext::array_lengths`.
pub const ARRAY_LENGTHS: usize = 4;

/// One mapping pushed to the device: page `page` becomes resident with `entry` in the page
/// table (entry pages only) and LRU age `lru` (15 = never evict).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageMapping {
    /// The page.
    pub page: u32,
    /// Initial LRU age (15: not evictable).
    pub lru: u32,
    /// Page-table entry (ignored for pages without one).
    pub entry: u64,
}

/// The page layer as one launch sees it.
///
/// On the CPU backend the pointers address the loader's host arrays, and the request lists
/// are null: the host pull writes into growable vectors instead. On CUDA every pointer is
/// device memory and the lists are the pull/push kernels' inputs and outputs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceContext {
    /// 64-bit entries of the first `page_table_entries` pages: sampler pointers, base colours
    /// (four halfs), user resource values.
    pub page_table: *mut u64,
    /// One bit per page: used (and, if not resident, requested) in this launch.
    pub reference_bits: *mut u32,
    /// One bit per page: resident.
    pub residence_bits: *mut u32,
    /// Four bits per page: LRU age (0 = just used, 14 = oldest, 15 = not evictable).
    pub lru_table: *mut u32,
    /// Pull output: requested pages.
    pub requested_pages: *mut u32,
    /// Pull output: stale pages (resident, unused, old enough to evict).
    pub stale_pages: *mut u32,
    /// `[requests, stale, standing, rejected]` counts (`DTEX_ARRAY_LENGTHS` words): the pull's
    /// list lengths (which may exceed the capacities; the excess was not written), and the
    /// samplers' request-rejection counters (null: not counted).
    pub array_lengths: *mut u32,
    /// Push input: new mappings.
    pub filled_pages: *mut PageMapping,
    /// Push input: pages to make non-resident.
    pub invalidated_pages: *mut u32,
    /// Pages that have a page-table entry.
    pub page_table_entries: u32,
    /// Pages in the virtual page space.
    pub num_pages: u32,
    /// Texture ids are `[0, max_textures)`; base colours start at page `max_textures`.
    pub max_textures: u32,
    /// `CONTEXT_FLAG_*` bits.
    pub flags: u32,
    /// Capacity of `requested_pages`.
    pub requested_capacity: u32,
    /// Capacity of `stale_pages`.
    pub stale_capacity: u32,
    /// Capacity of `filled_pages`.
    pub filled_capacity: u32,
    /// Capacity of `invalidated_pages`.
    pub invalidated_capacity: u32,
    /// The launch number (LRU ageing staggers on it).
    pub launch_num: u32,
    /// Request rejection: a miss of a page not yet requested in this launch is dropped when
    /// `request_hash(key, launch_num, page) < reject_threshold` (`RP × 2^32`; 0 = never;
    /// see the engine's `paging::rejection`).
    pub reject_threshold: u32,
}

const _: () = assert!(std::mem::size_of::<DeviceContext>() == 112);
const _: () = assert!(std::mem::size_of::<PageMapping>() == 16);
