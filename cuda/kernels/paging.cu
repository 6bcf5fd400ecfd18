/*
 * demandtex paging kernels: the device side of the engine's `PageTable::{pull, push_mapping,
 * invalidate, clear_references}` (core/src/paging/page_table.rs), over the arrays of a
 * `DtexDeviceContext`. Shipped as PTX (kernels/ptx/paging.ptx) and launched by these
 * plain names:
 *
 *   dtex_pull_requests(ctx, end_page, lru_threshold, stale_ages, stale_age_counts)
 *   dtex_collect_stale(ctx, end_page, min_age, stale_ages)
 *   dtex_clear_references(ctx, end_page)
 *   dtex_push_mappings(ctx, count)
 *   dtex_invalidate_pages(ctx, count)
 *
 * Every kernel is a grid-stride loop over a 1D grid: any size works (e.g. 256 threads per
 * block and enough blocks to cover the work, at most a few thousand; the pull kernels give
 * each warp 32 consecutive bit words, 1024 pages, per step, which a partial warp's lanes
 * take in turns). tests/cuda-host/paging_host.cpp runs them on the host, one thread a
 * block (cuda/tests/host_paging.rs). All run on the loader's stream,
 * between launches of the renderer, never concurrently with a launch that samples the same
 * context.
 *
 * One cycle: the renderer's launch sets reference bits; the host zeroes `array_lengths`,
 * runs `dtex_pull_requests` and copies the lists back; pages it stages are cleared by
 * `dtex_invalidate_pages`, finished fills made resident by `dtex_push_mappings`, and
 * `dtex_clear_references` starts the next launch.
 */
#include <demandtex/device/paging.cuh>

namespace {

/// The lanes of this thread's warp that exist (a block whose size is not a multiple of 32
/// has a partial last warp: its lanes are the low ones).
__device__ __forceinline__ unsigned int existingLanes()
{
    const unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int linear =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int warpFirst = linear & ~31u;
    const unsigned int n = threads - warpFirst;
    return n >= 32u ? 0xFFFFFFFFu : (1u << n) - 1u;
}

/// Warp-aggregated reservation: every lane of `lanes` (this lane included, all executing
/// this call) asks for `count` consecutive slots of a list whose length is `*length`; one
/// atomic per warp reserves them all. Returns this lane's first slot. The length may grow
/// past the list's capacity: the caller writes only slots below it.
__device__ __forceinline__ uint32_t reserveSlots(unsigned int lanes, uint32_t count,
                                                 uint32_t* length)
{
    const unsigned int lane = dtex::laneId();
    uint32_t inclusive = count;
#pragma unroll
    for (unsigned int delta = 1u; delta < 32u; delta <<= 1) {
        const uint32_t v = __shfl_up_sync(lanes, inclusive, delta);
        if (lane >= delta)
            inclusive += v;
    }
    const unsigned int last = 31u - static_cast<unsigned int>(__clz(lanes));
    const uint32_t total = __shfl_sync(lanes, inclusive, last);
    uint32_t first = 0u;
    if (lane == last && total != 0u)
        first = atomicAdd(length, total);
    first = __shfl_sync(lanes, first, last);
    return first + inclusive - count;
}

/// The age of an unused page after one more launch (the engine's `lru::age_once`): a page
/// of age `a` ages on launches where `(launch + page) % 2^a == 0`, up to `DTEX_LRU_MAX_AGE`.
__device__ __forceinline__ uint32_t ageOnce(uint32_t age, uint32_t launchAndPage)
{
    if (age >= DTEX_LRU_MAX_AGE)
        return age;
    return (launchAndPage & ((1u << age) - 1u)) == 0u ? age + 1u : age;
}

/// Write `bits` (pages `base + bit`) to `pages[first..]`, skipping slots at or past
/// `capacity`; with `outAges` not null, also each page's age (from the word's ages: 16
/// nibbles for pages 0..15 in `agesLo`, 16..31 in `agesHi`) to `outAges[first..]`.
__device__ __forceinline__ void writePages(uint32_t bits, uint32_t base, uint32_t first,
                                           uint32_t* pages, uint32_t capacity,
                                           uint64_t agesLo = 0u, uint64_t agesHi = 0u,
                                           uint8_t* outAges = nullptr)
{
    if (pages == nullptr)
        return;
    uint32_t slot = first;
    while (bits != 0u && slot < capacity) {
        const uint32_t bit = static_cast<uint32_t>(__ffs(static_cast<int>(bits)) - 1);
        bits &= bits - 1u;
        pages[slot] = base + bit;
        if (outAges != nullptr) {
            const uint64_t half = bit < 16u ? agesLo : agesHi;
            outAges[slot] = static_cast<uint8_t>((half >> ((bit & 15u) * 4u)) & 0xFu);
        }
        ++slot;
    }
}

/// The pull and stale-collection scan. `Pull`: compact requested pages (referenced, not
/// resident), reset the age of referenced resident pages, age unreferenced ones. Both:
/// compact stale pages (resident, unreferenced, evictable, age >= `minAge`).
template <bool Pull>
__device__ __forceinline__ void scanPages(const DtexDeviceContext& ctx, uint32_t endPage,
                                          uint32_t minAge, uint8_t* staleAges,
                                          uint32_t* staleAgeCounts)
{
    __shared__ uint32_t histogram[16];
    const unsigned int linear =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
    if (Pull && staleAgeCounts != nullptr) {
        for (unsigned int i = linear; i < 16u; i += threads)
            histogram[i] = 0u;
        __syncthreads();
    }

    const unsigned int lanes = existingLanes();
    const unsigned int laneCount = static_cast<unsigned int>(__popc(lanes));
    const uint32_t end = endPage < ctx.num_pages ? endPage : ctx.num_pages;
    const uint32_t words = (end + 31u) / 32u;
    // Warps step through the words together: a warp takes 32 consecutive words, a lane
    // each (a partial warp's lanes take them in turns, so that every word is read whatever
    // the block size; a full warp's in one turn).
    const unsigned int warpsPerBlock = (threads + 31u) / 32u;
    const unsigned int warpInGrid = blockIdx.x * warpsPerBlock + linear / 32u;
    const unsigned int warpsInGrid = gridDim.x * warpsPerBlock;
    const unsigned int lane = dtex::laneId();
    for (uint32_t group = warpInGrid * 32u; group < words; group += warpsInGrid * 32u) {
        for (uint32_t turn = 0u; turn < 32u; turn += laneCount) {
            const bool mine = turn + lane < 32u;
            const uint32_t w = group + turn + lane;
            uint32_t referenced = 0u, resident = 0u;
            if (mine && w < words) {
                referenced = ctx.reference_bits[w];
                resident = ctx.residence_bits[w];
            }
            const uint32_t base = w * 32u;
            // Ages of this word's 32 pages: LRU words 4w..4w+3, owned by this lane alone,
            // held as two 64-bit halves (pages 0..15 and 16..31 of the word).
            uint64_t agesLo = 0u, agesHi = 0u;
            uint32_t stale = 0u;
            if (resident != 0u && ctx.lru_table != nullptr) {
                const uint32_t* lru = &ctx.lru_table[4u * w];
                agesLo = lru[0] | static_cast<uint64_t>(lru[1]) << 32;
                agesHi = lru[2] | static_cast<uint64_t>(lru[3]) << 32;
                const uint64_t beforeLo = agesLo, beforeHi = agesHi;
                uint32_t pending = resident;
                while (pending != 0u) {
                    const uint32_t bit =
                        static_cast<uint32_t>(__ffs(static_cast<int>(pending)) - 1);
                    pending &= pending - 1u;
                    const bool low = bit < 16u;
                    uint64_t half = low ? agesLo : agesHi;
                    const uint32_t shift = (bit & 15u) * 4u;
                    const uint32_t age = static_cast<uint32_t>(half >> shift) & 0xFu;
                    if (age == DTEX_LRU_NON_EVICTABLE)
                        continue;
                    uint32_t now = age;
                    if ((referenced >> bit) & 1u) {
                        if (Pull)
                            now = 0u;
                    } else {
                        if (Pull)
                            now = ageOnce(age, ctx.launch_num + base + bit);
                        if (now >= minAge) {
                            stale |= 1u << bit;
                            if (Pull && staleAgeCounts != nullptr)
                                atomicAdd(&histogram[now], 1u);
                        }
                    }
                    half = (half & ~(0xFull << shift)) | (static_cast<uint64_t>(now) << shift);
                    if (low)
                        agesLo = half;
                    else
                        agesHi = half;
                }
                if (Pull) {
                    uint32_t* out = &ctx.lru_table[4u * w];
                    if (agesLo != beforeLo) {
                        out[0] = static_cast<uint32_t>(agesLo);
                        out[1] = static_cast<uint32_t>(agesLo >> 32);
                    }
                    if (agesHi != beforeHi) {
                        out[2] = static_cast<uint32_t>(agesHi);
                        out[3] = static_cast<uint32_t>(agesHi >> 32);
                    }
                }
            }

            if (Pull) {
                uint32_t requested = referenced & ~resident;
                if (mine && w < words && end - base < 32u)
                    requested &= (1u << (end - base)) - 1u;  // pages past end_page
                const uint32_t slot =
                    reserveSlots(lanes, static_cast<uint32_t>(__popc(requested)),
                                 &ctx.array_lengths[DTEX_ARRAY_LENGTH_REQUESTS]);
                writePages(requested, base, slot, ctx.requested_pages, ctx.requested_capacity);
            }
            const uint32_t slot = reserveSlots(lanes, static_cast<uint32_t>(__popc(stale)),
                                               &ctx.array_lengths[DTEX_ARRAY_LENGTH_STALE]);
            writePages(stale, base, slot, ctx.stale_pages, ctx.stale_capacity, agesLo, agesHi,
                       staleAges);
        }
    }

    if (Pull && staleAgeCounts != nullptr) {
        __syncthreads();
        for (unsigned int i = linear; i < 16u; i += threads)
            if (histogram[i] != 0u)
                atomicAdd(&staleAgeCounts[i], histogram[i]);
    }
}

}  // namespace

/// Pull the requests of a launch over pages `[0, end_page)` (the engine's
/// `PageTable::pull`):
/// - requested pages (referenced, not resident) go to `ctx.requested_pages`, their count to
///   `ctx.array_lengths[DTEX_ARRAY_LENGTH_REQUESTS]`;
/// - referenced resident pages get LRU age 0; unreferenced resident pages age once
///   (logarithmically, staggered by `ctx.launch_num + page`); never-evictable pages (age
///   15) are left alone;
/// - stale pages (resident, unreferenced, evictable, age >= `lru_threshold`) go to
///   `ctx.stale_pages`, their ages to `stale_ages[i]` (same index; may be null), their
///   count to `ctx.array_lengths[DTEX_ARRAY_LENGTH_STALE]`; `stale_age_counts[a]` (16
///   counters, may be null) gains the number of stale pages of age `a`.
/// The host zeroes `ctx.array_lengths` (and `stale_age_counts`) first. Counts may exceed
/// the capacities: the excess was not written (the lists are in no particular order). When
/// the stale count exceeds `ctx.stale_capacity`, the histogram says which age keeps the
/// oldest pages within it: run `dtex_collect_stale` with that age to list exactly those.
extern "C" __global__ void dtex_pull_requests(DtexDeviceContext ctx, uint32_t end_page,
                                              uint32_t lru_threshold, uint8_t* stale_ages,
                                              uint32_t* stale_age_counts)
{
    scanPages<true>(ctx, end_page, lru_threshold, stale_ages, stale_age_counts);
}

/// List the stale pages over `[0, end_page)` again -- resident, unreferenced, evictable,
/// age >= `min_age` -- without ageing anything: after `dtex_pull_requests` (before the
/// reference bits are cleared), with a higher `min_age` when the pull's stale list
/// overflowed, to rank by LRU age. Writes `ctx.stale_pages`, `stale_ages` (may be null) and
/// `ctx.array_lengths[DTEX_ARRAY_LENGTH_STALE]` (zeroed by the host first) as the pull does.
extern "C" __global__ void dtex_collect_stale(DtexDeviceContext ctx, uint32_t end_page,
                                              uint32_t min_age, uint8_t* stale_ages)
{
    scanPages<false>(ctx, end_page, min_age, stale_ages, nullptr);
}

/// Clear every reference bit of pages `[0, end_page)` (word-wise; the engine's
/// `PageTable::clear_references`): the start of a launch.
extern "C" __global__ void dtex_clear_references(DtexDeviceContext ctx, uint32_t end_page)
{
    const uint32_t end = end_page < ctx.num_pages ? end_page : ctx.num_pages;
    const uint32_t words = (end + 31u) / 32u;
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride)
        ctx.reference_bits[w] = 0u;
}

/// Make the first `count` mappings of `ctx.filled_pages` resident (at most
/// `ctx.filled_capacity`; the engine's `PageTable::push_mapping`): the page-table entry
/// (entry pages only), the LRU age (`lru`, at most 15 = never evict), then the residence
/// bit. Pages outside the page space are ignored.
extern "C" __global__ void dtex_push_mappings(DtexDeviceContext ctx, uint32_t count)
{
    const uint32_t n = count < ctx.filled_capacity ? count : ctx.filled_capacity;
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const DtexPageMapping m = ctx.filled_pages[i];
        if (m.page >= ctx.num_pages)
            continue;
        if (m.page < ctx.page_table_entries)
            ctx.page_table[m.page] = m.entry;
        if (ctx.lru_table != nullptr)
            dtex::setLruAge(ctx.lru_table, m.page, m.lru < 15u ? m.lru : 15u);
        dtex::atomicSetBit(ctx.residence_bits, m.page);
    }
}

/// Make the first `count` pages of `ctx.invalidated_pages` non-resident (at most
/// `ctx.invalidated_capacity`; the engine's `PageTable::invalidate`). Their entries are
/// kept (a second chance may restore them). Pages outside the page space are ignored.
extern "C" __global__ void dtex_invalidate_pages(DtexDeviceContext ctx, uint32_t count)
{
    const uint32_t n = count < ctx.invalidated_capacity ? count : ctx.invalidated_capacity;
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint32_t page = ctx.invalidated_pages[i];
        if (page < ctx.num_pages)
            dtex::atomicClearBit(ctx.residence_bits, page);
    }
}
