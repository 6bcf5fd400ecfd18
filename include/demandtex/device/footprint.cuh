/*
 * demandtex device API: the footprint of a lookup, computed in software exactly as the
 * engine's CPU samplers compute it (core/src/sampling/{lod,address,fetch}.rs), so that a
 * GPU lookup touches -- and requests -- the same pages as the CPU one:
 *
 * - level of detail and anisotropic probes from screen-space gradients (`lod.rs`);
 * - the mip level(s) read (`mip_levels`);
 * - per probe and level, the (at most two) texels along each axis after the address mode
 *   and their weights (`address.rs`), hence the (at most four) tiles of a tiled level, or
 *   the mip-tail page of a level in the tail (`fetch.rs`).
 *
 * All arithmetic uses explicitly rounded intrinsics (`__fmul_rn`, `__fadd_rn`, ...), so the
 * results do not depend on the caller's `--fmad` or `--use_fast_math` (only `log2f` may
 * differ from the CPU's `f32::log2` by an ulp).
 */
#ifndef DEMANDTEX_DEVICE_FOOTPRINT_CUH
#define DEMANDTEX_DEVICE_FOOTPRINT_CUH

#include "paging.cuh"

namespace dtex {

/// Whether `x` is neither NaN nor infinite (a bit test: immune to fast-math flags).
static __device__ __forceinline__ bool isFinite(float x)
{
    return (__float_as_uint(x) & 0x7F800000u) != 0x7F800000u;
}

/// `ceil(x)` for `0 <= x < 2^32` (the engine's `lod::ceil`).
static __device__ __forceinline__ uint32_t ceilU32(float x)
{
    const uint32_t t = __float2uint_rz(x);
    return t + (__uint2float_rn(t) < x ? 1u : 0u);
}

/// The footprint of one lookup: a level of detail and `probes` isotropic samples spread
/// evenly along (`axisS`, `axisT`) (normalised UV; zero for one probe) around the lookup
/// point. The engine's `sampling::lod::Footprint`.
struct Footprint {
    /// Level of detail, unclamped (may be negative or huge; never NaN).
    float lod;
    /// Number of probes, `1..=max_anisotropy`.
    uint32_t probes;
    /// The major axis of the footprint in UV, s component.
    float axisS;
    /// The major axis of the footprint in UV, t component.
    float axisT;
};

/// One probe at an explicit level of detail.
static __device__ __forceinline__ Footprint isotropicFootprint(float lod)
{
    Footprint f;
    f.lod = lod;
    f.probes = 1u;
    f.axisS = 0.0f;
    f.axisT = 0.0f;
    return f;
}

/// The footprint of gradients `ddx`, `ddy` (normalised UV per pixel, finite) on a texture
/// whose level 0 is `width x height`, honouring up to `maxAnisotropy` probes. In level-0
/// texels `dx = (ddx.x * width, ddx.y * height)`, likewise `dy`. Isotropic:
/// `lod = log2(max(|dx|, |dy|))`. Anisotropic: with `major`, `minor` the longer and shorter
/// of `|dx|`, `|dy|`, `n = min(ceil(major / minor), maxAnisotropy)` probes along the major
/// gradient and `lod = log2(max(major / n, minor))`.
static __device__ __forceinline__ Footprint footprintFromGradients(float2 ddx, float2 ddy,
                                                                   uint32_t width, uint32_t height,
                                                                   uint32_t maxAnisotropy)
{
    const float w = __uint2float_rn(width);
    const float h = __uint2float_rn(height);
    const float xs = __fmul_rn(ddx.x, w), xt = __fmul_rn(ddx.y, h);
    const float ys = __fmul_rn(ddy.x, w), yt = __fmul_rn(ddy.y, h);
    const float lenX = __fsqrt_rn(__fadd_rn(__fmul_rn(xs, xs), __fmul_rn(xt, xt)));
    const float lenY = __fsqrt_rn(__fadd_rn(__fmul_rn(ys, ys), __fmul_rn(yt, yt)));
    if (maxAnisotropy <= 1u)
        return isotropicFootprint(log2f(fmaxf(lenX, lenY)));
    const bool alongX = lenX >= lenY;
    const float major = alongX ? lenX : lenY;
    const float minor = alongX ? lenY : lenX;
    const float2 axis = alongX ? ddx : ddy;
    if (major == 0.0f)
        return isotropicFootprint(-__int_as_float(0x7F800000));
    const float ratio = __fdiv_rn(major, minor);
    // NaN (inf / inf) or past the limit: the limit.
    uint32_t probes = maxAnisotropy;
    if (ratio < __uint2float_rn(maxAnisotropy)) {
        probes = ceilU32(ratio);
        if (probes < 1u)
            probes = 1u;
    }
    Footprint f;
    f.lod = log2f(fmaxf(__fdiv_rn(major, __uint2float_rn(probes)), minor));
    f.probes = probes;
    f.axisS = probes > 1u ? axis.x : 0.0f;
    f.axisT = probes > 1u ? axis.y : 0.0f;
    return f;
}

/// The centre of probe `i` of footprint `fp` around (s, t): offset
/// `((i + 0.5) / probes - 0.5) x axis`.
static __device__ __forceinline__ float2 probeCenter(const Footprint& fp, float s, float t,
                                                     uint32_t i)
{
    if (fp.probes == 1u)
        return make_float2(s, t);
    const float f = __fsub_rn(
        __fdiv_rn(__fadd_rn(__uint2float_rn(i), 0.5f), __uint2float_rn(fp.probes)), 0.5f);
    return make_float2(__fadd_rn(s, __fmul_rn(f, fp.axisS)), __fadd_rn(t, __fmul_rn(f, fp.axisT)));
}

/// The mip levels a lookup reads: `fine` with weight `1 - coarseWeight`, and `fine + 1`
/// with `coarseWeight` when that is non-zero.
struct MipLevels {
    /// The finest level read.
    uint32_t fine;
    /// Weight of level `fine + 1` (0: not read).
    float coarseWeight;
};

/// Levels for `lod` clamped to `[0, numLevels - 1]` (negative or NaN lod reads level 0):
/// linear mip filtering blends `floor(lod)` and the next level by the fraction; point mip
/// filtering (`mipFilter == DTEX_FILTER_POINT`) reads the nearest level.
static __device__ __forceinline__ MipLevels mipLevels(float lod, uint32_t numLevels,
                                                      uint32_t mipFilter)
{
    const float last = __uint2float_rn(numLevels > 0u ? numLevels - 1u : 0u);
    const float l = lod >= 0.0f ? fminf(lod, last) : 0.0f;
    const uint32_t fine = __float2uint_rz(l);
    const float frac = __fsub_rn(l, __uint2float_rn(fine));
    MipLevels m;
    if (mipFilter == DTEX_FILTER_POINT) {
        m.fine = fine + (frac >= 0.5f ? 1u : 0u);
        m.coarseWeight = 0.0f;
    } else {
        m.fine = fine;
        m.coarseWeight = frac;
    }
    return m;
}

/// Texel-space coordinates are clamped to +-2^40 texels before conversion to integers.
constexpr float kMaxTexelCoord = 1099511627776.0f;

/// Map integer texel coordinate `i` into `[0, size)` by address mode `mode`
/// (`DTEX_ADDRESS_*`; an unknown code is wrap); false outside a border.
static __device__ __forceinline__ bool addressTexel(long long i, uint32_t size, uint32_t mode,
                                                    uint32_t* out)
{
    const long long n = static_cast<long long>(size);
    if (i >= 0 && i < n) {
        *out = static_cast<uint32_t>(i);
        return true;
    }
    switch (mode) {
    case DTEX_ADDRESS_CLAMP:
        *out = i < 0 ? 0u : static_cast<uint32_t>(n - 1);
        return true;
    case DTEX_ADDRESS_MIRROR: {
        long long m = i % (2 * n);
        if (m < 0)
            m += 2 * n;
        *out = static_cast<uint32_t>(m < n ? m : 2 * n - 1 - m);
        return true;
    }
    case DTEX_ADDRESS_BORDER:
        return false;
    default: {
        long long m = i % n;
        if (m < 0)
            m += n;
        *out = static_cast<uint32_t>(m);
        return true;
    }
    }
}

/// `floor(x)` as an integer and `x - floor(x)`, for `|x| <= 2^40` (the engine's
/// `address::floor`).
static __device__ __forceinline__ long long floorSplit(float x, float* frac)
{
    const long long t = __float2ll_rz(x);
    const long long i = t - (__ll2float_rn(t) > x ? 1 : 0);
    *frac = __fsub_rn(x, __ll2float_rn(i));
    return i;
}

/// Clamp a texel-space coordinate to +-2^40; NaN becomes 0.
static __device__ __forceinline__ float sanitiseTexelCoord(float x)
{
    if (x != x)
        return 0.0f;
    return fminf(fmaxf(x, -kMaxTexelCoord), kMaxTexelCoord);
}

/// The texels one axis of a filter reads, with their weights (the engine's
/// `address::Axis`). A texel with weight 0 is not read and touches no page.
struct Axis {
    /// Texel indices within `[0, size)` (0 where the weight is 0).
    uint32_t index[2];
    /// Weights: `1 - frac` and `frac`, or 0 for texels outside a border.
    float weight[2];
};

/// The one texel at texel-space coordinate `x` (`floor(x)`, addressed), weight 1, or
/// weight 0 outside a border: point filtering, and a stochastic lookup's pick.
static __device__ __forceinline__ Axis oneTexel(float x, uint32_t size, uint32_t mode)
{
    Axis a;
    float frac;
    const long long i = floorSplit(sanitiseTexelCoord(x), &frac);
    const bool in = addressTexel(i, size, mode, &a.index[0]);
    a.weight[0] = in ? 1.0f : 0.0f;
    if (!in)
        a.index[0] = 0u;
    a.index[1] = 0u;
    a.weight[1] = 0.0f;
    return a;
}

/// The texels and weights for normalised coordinate `coord` on an axis `size` texels long:
/// `linear`, the two texels around `coord` (bilinear), else the one containing it (point).
static __device__ __forceinline__ Axis axisTexels(float coord, uint32_t size, bool linear,
                                                  uint32_t mode)
{
    Axis a;
    const float n = __uint2float_rn(size);
    float frac;
    if (linear) {
        const long long i0 =
            floorSplit(sanitiseTexelCoord(__fsub_rn(__fmul_rn(coord, n), 0.5f)), &frac);
        const bool in0 = addressTexel(i0, size, mode, &a.index[0]);
        const bool in1 = addressTexel(i0 + 1, size, mode, &a.index[1]);
        a.weight[0] = in0 ? __fsub_rn(1.0f, frac) : 0.0f;
        a.weight[1] = in1 ? frac : 0.0f;
        if (!in0)
            a.index[0] = 0u;
        if (!in1)
            a.index[1] = 0u;
    } else {
        a = oneTexel(__fmul_rn(coord, n), size, mode);
    }
    return a;
}

/// A caller's stochastic-filter jitter as used: within [0, 1); NaN means 0.5 (the engine's
/// `address::sanitise_jitter`).
static __device__ __forceinline__ float sanitiseJitter(float j)
{
    if (j != j)
        return 0.5f;
    return fminf(fmaxf(j, 0.0f), 0.99999994f);
}

/// The one texel a jittered pick reads along an axis `size` texels long:
/// `floor(coord * size - 0.5 + jitter)` (the engine's `AxisFilter::Jitter`), weight 1, or
/// 0 outside a border. `jitter` is sanitised.
static __device__ __forceinline__ Axis axisJittered(float coord, uint32_t size, float jitter,
                                                    uint32_t mode)
{
    const float x = __fadd_rn(__fsub_rn(__fmul_rn(coord, __uint2float_rn(size)), 0.5f), jitter);
    return oneTexel(x, size, mode);
}

/// How a footprint touches pages.
enum class Touch {
    /// Record a use of every page (misses become requests): the footprint proper.
    Record,
    /// Only test residence (fallback to coarser levels must not request them).
    Peek,
};

/// Touch `page` as `touch` says; whether it is resident.
static __device__ __forceinline__ bool touchPage(const DtexDeviceContext& ctx, uint32_t page,
                                                 Touch touch)
{
    return touch == Touch::Record ? request(ctx, page) : isResident(ctx, page);
}

/// The distinct tiles (one or two) that an axis's texels with non-zero weight fall in: the
/// count, and the tile indices in `tiles[0..count)`.
static __device__ __forceinline__ uint32_t axisTiles(const Axis& a, uint32_t shift,
                                                     uint32_t tiles[2])
{
    const uint32_t t0 = a.index[0] >> shift;
    const uint32_t t1 = a.index[1] >> shift;
    if (a.weight[0] != 0.0f && a.weight[1] != 0.0f && t0 != t1) {
        tiles[0] = t0;
        tiles[1] = t1;
        return 2u;
    }
    tiles[0] = a.weight[0] != 0.0f ? t0 : t1;
    tiles[1] = tiles[0];
    return 1u;
}

/// log2 of a power of two (the tile sides of a well-formed sampler).
static __device__ __forceinline__ uint32_t log2PowerOfTwo(uint32_t x)
{
    return static_cast<uint32_t>(__ffs(static_cast<int>(x)) - 1);
}

/// Touch the pages of the texels `ax` × `ay` of `level` (a level the loader built): the
/// tiles of a tiled level, the mip-tail page of a level in the tail; see `touchLevel`.
static __device__ __forceinline__ bool touchAxes(const DtexDeviceContext& ctx,
                                                 const DtexTextureSampler& smp, uint32_t level,
                                                 const Axis& ax, const Axis& ay, Touch touch,
                                                 float* coverage)
{
    const DtexSamplerLevel& lv = smp.levels[level];
    const float wx = __fadd_rn(ax.weight[0], ax.weight[1]);
    const float wy = __fadd_rn(ay.weight[0], ay.weight[1]);
    if (wx == 0.0f || wy == 0.0f)
        return true;  // all outside a border: transparent black, no page
    *coverage = __fmul_rn(wx, wy);
    if (level >= smp.mip_tail_first_level)
        return touchPage(ctx, smp.start_page, touch);
    uint32_t cols[2], rows[2];
    const uint32_t numCols = axisTiles(ax, log2PowerOfTwo(smp.tile_width), cols);
    const uint32_t numRows = axisTiles(ay, log2PowerOfTwo(smp.tile_height), rows);
    const uint32_t first = smp.start_page + lv.offset;
    bool resident = true;
    for (uint32_t r = 0; r < numRows; ++r)
        for (uint32_t c = 0; c < numCols; ++c)
            resident = touchPage(ctx, first + rows[r] * lv.tiles_x + cols[c], touch) && resident;
    return resident;
}

/// Touch the pages of one bilinear (or point) footprint of `level` at (s, t) -- the tiles
/// of a tiled level, the mip-tail page of a level in the tail -- and say whether all are
/// resident. `*coverage` receives the summed weight of the texels inside the texture (1,
/// less only where border addressing puts texels outside; 0 and no page touched when all
/// are outside). Every distinct page is touched once, even after a miss was found, so one
/// launch requests all of a lookup's pages. The sampler must be well formed
/// (`isWellFormed` in texture.cuh). The engine's `Fetch::add`.
static __device__ __forceinline__ bool touchLevel(const DtexDeviceContext& ctx,
                                                  const DtexTextureSampler& smp, uint32_t level,
                                                  float s, float t, Touch touch, float* coverage)
{
    const DtexSamplerLevel& lv = smp.levels[level];
    *coverage = 0.0f;
    if (lv.width == 0u || lv.height == 0u)
        return true;  // never built by the loader: transparent black
    const bool linear = smp.filter == DTEX_FILTER_LINEAR;
    const Axis ax = axisTexels(s, lv.width, linear, smp.address_s);
    const Axis ay = axisTexels(t, lv.height, linear, smp.address_t);
    return touchAxes(ctx, smp, level, ax, ay, touch, coverage);
}

/// `touchLevel` for the one texel a stochastic lookup picks with `jitter` (sanitised), and
/// the normalised coordinate of that texel's centre in `*centre` (inside the level, where
/// any filter reads exactly that texel).
static __device__ __forceinline__ bool touchJittered(const DtexDeviceContext& ctx,
                                                     const DtexTextureSampler& smp,
                                                     uint32_t level, float s, float t,
                                                     float2 jitter, Touch touch,
                                                     float* coverage, float2* centre)
{
    const DtexSamplerLevel& lv = smp.levels[level];
    *coverage = 0.0f;
    *centre = make_float2(s, t);
    if (lv.width == 0u || lv.height == 0u)
        return true;  // never built by the loader: transparent black
    const Axis ax = axisJittered(s, lv.width, jitter.x, smp.address_s);
    const Axis ay = axisJittered(t, lv.height, jitter.y, smp.address_t);
    *centre = make_float2(
        __fdiv_rn(__fadd_rn(__uint2float_rn(ax.index[0]), 0.5f), __uint2float_rn(lv.width)),
        __fdiv_rn(__fadd_rn(__uint2float_rn(ay.index[0]), 0.5f), __uint2float_rn(lv.height)));
    return touchAxes(ctx, smp, level, ax, ay, touch, coverage);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_FOOTPRINT_CUH
