/*
 * The kernels of `demandtex bench --backend cuda` (cli/src/bench/cuda/, launched through
 * core/src/backend/cuda/bench.rs). They measure; they check nothing.
 *
 *   dtex_bench_fetch_demand(ctx, texture, params, sums, non_resident)
 *   dtex_bench_fetch_hardware(texture_object, params, sums, non_resident)
 *
 * The same lookups twice: through the demand path (`dtex::tex2DGrad`: sampler page,
 * software footprint, residence bits, reference bits when the context asks for them, then
 * hardware filtering) and as one plain hardware `tex2DGrad` on the texture object the
 * demand path filters with. Each thread makes `params.lookups_per_thread` lookups; lookup
 * `j` of thread `i` (of `T` threads in the grid) has index `i + j * T`, so the lanes of a
 * warp take neighbouring indices. Its coordinates (`coordinate` below) are either a sweep
 * of an `image_width`² image laid over the texture, row by row (coherent, as a render
 * samples), or a hash of the index (random). The gradients are (g, 0) and (0, g). The sum
 * of a thread's RGBA values goes to `sums[i]` (so nothing is optimised away) and the
 * lookups that were not resident are added to `*non_resident`.
 *
 *   dtex_bench_request_tiles(ctx, texture, first_tile, count, tiles_x, tiles_y, non_resident)
 *
 * One `dtex::tex2DLod` at level 0 at the centre of each of the level-0 tiles
 * `first_tile .. first_tile + count` (row-major, modulo the tile count) of a texture of
 * `tiles_x` x `tiles_y` whole tiles: one request per missing tile. Counts the lookups that
 * were not resident.
 */
#include <demandtex/device/texture.cuh>

/// Coordinates of a coherent sweep (see the file comment).
#define DTEX_BENCH_COHERENT 0u
/// Coordinates from a hash of the lookup's index.
#define DTEX_BENCH_RANDOM 1u

/// What a fetch benchmark samples (a `#[repr(C)]` mirror in bench.rs).
struct DtexBenchFetch {
    /// Lookups each thread makes.
    uint32_t lookups_per_thread;
    /// `DTEX_BENCH_COHERENT` or `DTEX_BENCH_RANDOM`.
    uint32_t pattern;
    /// Coherent: pixels per row (and rows) of the swept image (at least 1).
    uint32_t image_width;
    /// Random: the hash's seed.
    uint32_t seed;
    /// The gradients' length in texture coordinates: ddx = (g, 0), ddy = (0, g).
    float gradient;
    /// Zero.
    uint32_t reserved;
};

static_assert(sizeof(DtexBenchFetch) == 24 && alignof(DtexBenchFetch) == 4, "DtexBenchFetch");
static_assert(DTEX_OFFSETOF(DtexBenchFetch, gradient) == 16, "DtexBenchFetch fields");

namespace {

/// A 32-bit integer hash with good avalanche (lowbias32).
__device__ __forceinline__ uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/// The texture coordinates of lookup `index` (see the file comment).
__device__ __forceinline__ float2 coordinate(const DtexBenchFetch& p, uint32_t index)
{
    if (p.pattern == DTEX_BENCH_RANDOM) {
        const uint32_t a = hash32(index ^ p.seed);
        const uint32_t b = hash32(a + 0x9e3779b9u);
        const float scale = 1.0f / 16777216.0f;
        return make_float2(__uint2float_rn(a >> 8) * scale, __uint2float_rn(b >> 8) * scale);
    }
    const uint32_t w = p.image_width > 0u ? p.image_width : 1u;
    const uint32_t x = index % w, y = (index / w) % w;
    const float inv = 1.0f / __uint2float_rn(w);
    return make_float2((__uint2float_rn(x) + 0.5f) * inv, (__uint2float_rn(y) + 0.5f) * inv);
}

/// Add a thread's missed lookups to the counter (one atomic per thread that missed).
__device__ __forceinline__ void countMisses(uint32_t* non_resident, uint32_t missed)
{
    if (missed != 0u)
        atomicAdd(non_resident, missed);
}

}  // namespace

/// The demand path: `dtex::tex2DGrad` through `ctx` (see the file comment).
extern "C" __global__ void dtex_bench_fetch_demand(DtexDeviceContext ctx, uint32_t texture,
                                                   DtexBenchFetch params, float* sums,
                                                   uint32_t* non_resident)
{
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
    const float2 ddx = make_float2(params.gradient, 0.0f);
    const float2 ddy = make_float2(0.0f, params.gradient);
    float sum = 0.0f;
    uint32_t missed = 0u;
    for (uint32_t j = 0; j < params.lookups_per_thread; ++j) {
        const float2 c = coordinate(params, idx + j * threads);
        bool resident = false;
        const float4 v = dtex::tex2DGrad<float4>(ctx, texture, c.x, c.y, ddx, ddy, &resident);
        sum += (v.x + v.y) + (v.z + v.w);
        missed += resident ? 0u : 1u;
    }
    sums[idx] = sum;
    countMisses(non_resident, missed);
}

/// The baseline: a plain hardware `tex2DGrad` on `texture_object` (see the file comment).
extern "C" __global__ void dtex_bench_fetch_hardware(unsigned long long texture_object,
                                                     DtexBenchFetch params, float* sums,
                                                     uint32_t* non_resident)
{
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
    const cudaTextureObject_t tex = static_cast<cudaTextureObject_t>(texture_object);
    const float2 ddx = make_float2(params.gradient, 0.0f);
    const float2 ddy = make_float2(0.0f, params.gradient);
    float sum = 0.0f;
    for (uint32_t j = 0; j < params.lookups_per_thread; ++j) {
        const float2 c = coordinate(params, idx + j * threads);
        const float4 v = ::tex2DGrad<float4>(tex, c.x, c.y, ddx, ddy);
        sum += (v.x + v.y) + (v.z + v.w);
    }
    sums[idx] = sum;
    // Every hardware lookup is "resident": the counter is left as it is.
    (void)non_resident;
}

/// One level-0 lookup at the centre of each tile of a range (see the file comment).
extern "C" __global__ void dtex_bench_request_tiles(DtexDeviceContext ctx, uint32_t texture,
                                                    uint32_t first_tile, uint32_t count,
                                                    uint32_t tiles_x, uint32_t tiles_y,
                                                    uint32_t* non_resident)
{
    const unsigned long long total = static_cast<unsigned long long>(tiles_x) * tiles_y;
    if (total == 0u)
        return;
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const unsigned long long tile = (static_cast<unsigned long long>(first_tile) + i) % total;
        const uint32_t tx = static_cast<uint32_t>(tile % tiles_x);
        const uint32_t ty = static_cast<uint32_t>(tile / tiles_x);
        const float s = (__uint2float_rn(tx) + 0.5f) / __uint2float_rn(tiles_x);
        const float t = (__uint2float_rn(ty) + 0.5f) / __uint2float_rn(tiles_y);
        bool resident = false;
        (void)dtex::tex2DLod<float4>(ctx, texture, s, t, 0.0f, &resident);
        if (!resident)
            atomicAdd(non_resident, 1u);
    }
}
