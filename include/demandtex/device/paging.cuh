/*
 * demandtex device API: paging primitives.
 *
 * Header-only CUDA C++17 over the `DtexDeviceContext` of <demandtex.h>; it needs nothing
 * beyond what NVRTC provides built in. Everything lives in namespace `dtex` and is
 * `static __device__ __forceinline__`.
 *
 * The page layer as a launch sees it (the same words as the engine's `paging::bits`):
 * page `p` is bit `p % 32` of word `p / 32` of `residence_bits` (resident) and
 * `reference_bits` (used in this launch; a request if not resident), and nibble `p % 8` of
 * word `p / 8` of `lru_table` (its LRU age). Pages below `page_table_entries` also have a
 * 64-bit entry in `page_table`. These functions are the device side of the engine's
 * `PageTable::{request_and_test, map_or_request, is_resident}`.
 *
 * Reference bits: a lookup that finds a page missing always sets its bit (that is the
 * request). A lookup that finds it resident sets the bit only while eviction is active
 * (`DTEX_CONTEXT_FLAG_REQUEST_IF_RESIDENT`), so that the pull kernel's LRU ageing sees the
 * use; with eviction off nothing reads those bits and the atomic is saved.
 *
 * Request rejection (the engine's `paging::rejection`, Disney's eq. 1): a tile or mip-tail
 * miss (`request`) of a page whose reference bit is still clear is dropped when
 * `requestHash(requestKey(), launch_num, page) < reject_threshold`; the key is the thread's
 * global index, so a launch with the same grid makes the same decisions. Entry pages
 * (`mapOrRequest`) are never rejected. With `DTEX_CONTEXT_FLAG_COUNT_REQUESTS`, standing
 * misses and rejections are counted in `array_lengths`.
 */
#ifndef DEMANDTEX_DEVICE_PAGING_CUH
#define DEMANDTEX_DEVICE_PAGING_CUH

#include <demandtex.h>

namespace dtex {

// The constants (tile bytes, LRU ages, base-colour markers, default fallback colour, UDIM
// entry layout) are the `DTEX_*` macros of <demandtex.h>, defined once, with the engine.

/// This thread's lane in its warp (`%laneid`, right for any block shape).
static __device__ __forceinline__ unsigned int laneId()
{
#ifdef DTEX_DEVICE_HOST_EMULATION  // host tests (tests/cuda-host/dtex_host_shim.h): no PTX
    return dtexHostLaneId();
#else
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
#endif
}

/// Whether bit `i` of a bit array is set.
static __device__ __forceinline__ bool testBit(const uint32_t* words, uint32_t i)
{
    return (words[i >> 5] & (1u << (i & 31u))) != 0u;
}

/// Set bit `i` of a bit array with one atomic OR.
static __device__ __forceinline__ void atomicSetBit(uint32_t* words, uint32_t i)
{
    atomicOr(&words[i >> 5], 1u << (i & 31u));
}

/// Clear bit `i` of a bit array with one atomic AND.
static __device__ __forceinline__ void atomicClearBit(uint32_t* words, uint32_t i)
{
    atomicAnd(&words[i >> 5], ~(1u << (i & 31u)));
}

/// Set reference bit `page`, reading first so that an already-set bit costs no atomic, and
/// letting the lanes of a warp that ask for the same page at once share one atomic (warp
/// aggregation over the lanes active here: `__match_any_sync`, sm_70 and newer).
static __device__ __forceinline__ void setReferenceBit(uint32_t* referenceBits, uint32_t page)
{
    uint32_t* word = &referenceBits[page >> 5];
    const uint32_t mask = 1u << (page & 31u);
    if ((*word & mask) != 0u)
        return;
    const unsigned int active = __activemask();
    const unsigned int peers = __match_any_sync(active, page);
    if (laneId() == static_cast<unsigned int>(__ffs(peers) - 1))
        atomicOr(word, mask);
}

/// The 4-bit LRU age of `page` (0 = used in the last launch, 14 = oldest, 15 = never
/// evictable).
static __device__ __forceinline__ uint32_t lruAge(const uint32_t* lruTable, uint32_t page)
{
    return (lruTable[page >> 3] >> ((page & 7u) * 4u)) & 0xFu;
}

/// Set the LRU age of `page` (compare-and-swap: neighbouring nibbles stay intact).
static __device__ __forceinline__ void setLruAge(uint32_t* lruTable, uint32_t page, uint32_t age)
{
    uint32_t* word = &lruTable[page >> 3];
    const uint32_t shift = (page & 7u) * 4u;
    uint32_t old = *word;
    for (;;) {
        const uint32_t desired = (old & ~(0xFu << shift)) | ((age & 0xFu) << shift);
        if (desired == old)
            return;
        const uint32_t seen = atomicCAS(word, old, desired);
        if (seen == old)
            return;
        old = seen;
    }
}

/// Whether `page` is resident, recording nothing. Pages outside the page space are not.
static __device__ __forceinline__ bool isResident(const DtexDeviceContext& ctx, uint32_t page)
{
    return page < ctx.num_pages && testBit(ctx.residence_bits, page);
}

/// Record a use of `page` (see the header comment: always when missing, when resident only
/// while eviction is active) and return whether it is resident. Pages outside the page
/// space are never resident and record nothing. Never rejects: entry pages.
static __device__ __forceinline__ bool recordUse(const DtexDeviceContext& ctx, uint32_t page)
{
    if (page >= ctx.num_pages)
        return false;
    const bool resident = testBit(ctx.residence_bits, page);
    if (!resident || (ctx.flags & DTEX_CONTEXT_FLAG_REQUEST_IF_RESIDENT) != 0u)
        setReferenceBit(ctx.reference_bits, page);
    return resident;
}

/// The rejection coin of one request (the engine's `paging::rejection::request_hash`;
/// (1, 2, 3) gives 0x02D0ED25).
static __device__ __forceinline__ uint32_t requestHash(uint32_t key, uint32_t launch, uint32_t page)
{
    uint32_t h = key ^ (launch * 0x9E3779B9u) ^ __funnelshift_l(page * 0x85EBCA6Bu, page * 0x85EBCA6Bu, 13u);
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/// This thread's request key: its global linear index in the grid.
static __device__ __forceinline__ uint32_t requestKey()
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
    const uint32_t z = blockIdx.z * blockDim.z + threadIdx.z;
    const uint32_t width = gridDim.x * blockDim.x;
    const uint32_t height = gridDim.y * blockDim.y;
    return (z * height + y) * width + x;
}

/// Record a use of tile or mip-tail page `page` and return whether it is resident: as
/// `recordUse`, except that a miss of a page not yet requested in this launch may be
/// rejected (see the header comment). The engine's `RequestGate::request_and_test`.
static __device__ __forceinline__ bool request(const DtexDeviceContext& ctx, uint32_t page)
{
    if (page >= ctx.num_pages)
        return false;
    if (testBit(ctx.residence_bits, page))
        return recordUse(ctx, page);
    const bool count = (ctx.flags & DTEX_CONTEXT_FLAG_COUNT_REQUESTS) != 0u;
    if (ctx.reject_threshold != 0u && !testBit(ctx.reference_bits, page) &&
        requestHash(requestKey(), ctx.launch_num, page) < ctx.reject_threshold) {
        if (count)
            atomicAdd(&ctx.array_lengths[DTEX_ARRAY_LENGTH_REJECTED], 1u);
        return false;
    }
    if (count)
        atomicAdd(&ctx.array_lengths[DTEX_ARRAY_LENGTH_STANDING], 1u);
    setReferenceBit(ctx.reference_bits, page);
    return false;
}

/// Record a use of an entry page and, if it is resident, write its 64-bit page-table entry
/// to `*entry` and return true. Pages without an entry (`page >= page_table_entries`)
/// return false and record nothing. The engine's `PageTable::map_or_request` (OTK's
/// `pagingMapOrRequest`).
static __device__ __forceinline__ bool mapOrRequest(const DtexDeviceContext& ctx, uint32_t page,
                                                    uint64_t* entry)
{
    if (page >= ctx.page_table_entries || !recordUse(ctx, page))
        return false;
    *entry = ctx.page_table[page];
    return true;
}

/// One half-float (IEEE binary16 bits) as a float (PTX `cvt.f32.f16`).
static __device__ __forceinline__ float halfBitsToFloat(unsigned short bits)
{
#ifdef DTEX_DEVICE_HOST_EMULATION  // host tests: the exact conversion in software
    return dtexHostHalfBitsToFloat(bits);
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
#endif
}

/// Decode a base-colour entry (four halfs, red in the low 16 bits) into `*rgba`; false for
/// `DTEX_NO_BASE_COLOR` and `DTEX_HOLE_BASE_COLOR` ("no colour"). The engine's
/// `decode_base_color`.
static __device__ __forceinline__ bool decodeBaseColor(uint64_t entry, float4* rgba)
{
    if (entry == DTEX_NO_BASE_COLOR || entry == DTEX_HOLE_BASE_COLOR)
        return false;
    rgba->x = halfBitsToFloat(static_cast<unsigned short>(entry & 0xFFFFu));
    rgba->y = halfBitsToFloat(static_cast<unsigned short>((entry >> 16) & 0xFFFFu));
    rgba->z = halfBitsToFloat(static_cast<unsigned short>((entry >> 32) & 0xFFFFu));
    rgba->w = halfBitsToFloat(static_cast<unsigned short>((entry >> 48) & 0xFFFFu));
    return true;
}

/// The sampler page of texture `texture` (the engine's `PageLayout::sampler_page`).
static __device__ __forceinline__ uint32_t samplerPage(const DtexDeviceContext&, uint32_t texture)
{
    return texture;
}

/// The base-colour page of texture `texture` (`PageLayout::base_color_page`).
static __device__ __forceinline__ uint32_t baseColorPage(const DtexDeviceContext& ctx,
                                                         uint32_t texture)
{
    return ctx.max_textures + texture;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PAGING_CUH
