/*
 * demandtex device API: UDIM lookups.
 *
 *   float4 c = dtex::tex2DGradUdim<float4>(ctx, udimId, s, t, ddx, ddy, &resident);
 *
 * A UDIM texture is a grid of ordinary textures ("tiles"), tile (col, row) covering
 * s in [col, col + 1), t in [row, row + 1), with an optional whole-grid base texture. Its id
 * is a resource page whose 64-bit page-table entry describes the grid (the engine's
 * `udim::UdimEntry`; no pointers, resident and never evicted):
 *
 *   bits  0..24  first tile's texture id (tile (col, row) is first + row * width + col)
 *   bits 24..48  base texture id; 0xFFFFFF = no base texture
 *   bits 48..56  grid width  (columns, 1..=255)
 *   bits 56..64  grid height (rows,    1..=255)
 *
 * (<demandtex.h>: `DTEX_UDIM_{FIRST,BASE,WIDTH,HEIGHT}_SHIFT`, `DTEX_UDIM_ID_MASK`,
 * `DTEX_UDIM_SIDE_MASK`, `DTEX_UDIM_NO_BASE`.)
 *
 * The semantics are the engine's `udim::sample::tex2d_grad_udim`:
 *
 * 1. Unknown UDIM id (not a resident resource page whose entry describes a grid of this
 *    loader's textures): opaque magenta, resident; nothing is requested.
 * 2. Bad input (a NaN or infinite coordinate or gradient): the base texture's answer to
 *    the same input; without a base texture, transparent black, resident.
 * 3. Distant lookups: with a base texture of `bw x bh` texels over a `gw x gh` grid, when
 *    the longer gradient spans at least one base texel (`(ddx.x * bw / gw)^2 +
 *    (ddx.y * bh / gh)^2 >= 1`, or the same for `ddy`), the lookup is the base texture at
 *    `(s / gw, t / gh)` with gradients divided by `(gw, gh)`. Until the base's sampler is
 *    resident the lookup samples the base (requesting its sampler) and the tile, and reports
 *    a miss. A base whose sampler entry is null (a failed texture) is not used for
 *    distant lookups.
 * 4. Tiles: column `floor(s)`, row `floor(t)`; inside the grid and not a hole, the tile is
 *    sampled with `tex2DGrad` at `(s - col, t - row)` with the same gradients. With
 *    `fallbackToCoarser`, a tile lookup that missed is replaced by the base texture's
 *    lookup if that one is resident (reported resident; the tile's requests stand).
 * 5. Holes (a resident null sampler whose base-colour entry is the hole marker) and the
 *    outside of the grid: the base texture (as in 3), else transparent black, resident.
 */
#ifndef DEMANDTEX_DEVICE_UDIM_CUH
#define DEMANDTEX_DEVICE_UDIM_CUH

#include "texture.cuh"

namespace dtex {

/// A decoded UDIM entry (the engine's `udim::UdimEntry`).
struct UdimGrid {
    /// Texture id of tile (0, 0).
    uint32_t first;
    /// The base texture, or `DTEX_UDIM_NO_BASE`.
    uint32_t base;
    /// Columns (1..=255).
    uint32_t width;
    /// Rows (1..=255).
    uint32_t height;
};

/// The grid named by `udim`, if `udim` is a resident resource page whose entry describes a
/// grid of textures below `max_textures` (its use is recorded only then). The engine's
/// `udim::create::read_entry` + `UdimEntry::{decode, fits}`.
static __device__ __forceinline__ bool readUdimEntry(const DtexDeviceContext& ctx, uint32_t udim,
                                                     UdimGrid* grid)
{
    if (udim < 2u * static_cast<unsigned long long>(ctx.max_textures) ||
        udim >= ctx.page_table_entries || !isResident(ctx, udim))
        return false;
    uint64_t entry;
    if (!mapOrRequest(ctx, udim, &entry))
        return false;
    grid->width = static_cast<uint32_t>((entry >> DTEX_UDIM_WIDTH_SHIFT) & DTEX_UDIM_SIDE_MASK);
    grid->height = static_cast<uint32_t>((entry >> DTEX_UDIM_HEIGHT_SHIFT) & DTEX_UDIM_SIDE_MASK);
    if (grid->width == 0u || grid->height == 0u)
        return false;
    grid->first = static_cast<uint32_t>((entry >> DTEX_UDIM_FIRST_SHIFT) & DTEX_UDIM_ID_MASK);
    grid->base = static_cast<uint32_t>((entry >> DTEX_UDIM_BASE_SHIFT) & DTEX_UDIM_ID_MASK);
    const unsigned long long end =
        static_cast<unsigned long long>(grid->first) + grid->width * grid->height;
    return end <= ctx.max_textures &&
           (grid->base == DTEX_UDIM_NO_BASE || grid->base < ctx.max_textures);
}

/// Whether `texture` is a hole: a resident null sampler whose base colour is the hole
/// marker (a tile not opened yet is never one: holes are resident from creation).
static __device__ __forceinline__ bool isUdimHole(const DtexDeviceContext& ctx, uint32_t texture)
{
    const uint32_t page = samplerPage(ctx, texture);
    if (!isResident(ctx, page))
        return false;
    uint64_t entry;
    if (!mapOrRequest(ctx, page, &entry) || entry != 0u)
        return false;
    return mapOrRequest(ctx, baseColorPage(ctx, texture), &entry) && entry == DTEX_HOLE_BASE_COLOR;
}

/// What the base texture's sampler page says about its size.
enum class UdimBaseSize {
    /// Level-0 size known.
    Known,
    /// A null (or unusable) sampler record: a failed texture.
    Null,
    /// The sampler page is not resident (a request was recorded).
    NotResident,
};

/// Read (and record a use of) the base texture's sampler page.
static __device__ __forceinline__ UdimBaseSize udimBaseSize(const DtexDeviceContext& ctx,
                                                            uint32_t base, uint32_t* width,
                                                            uint32_t* height)
{
    uint64_t entry;
    if (!mapOrRequest(ctx, samplerPage(ctx, base), &entry))
        return UdimBaseSize::NotResident;
    if (entry == 0u || entry % alignof(DtexTextureSampler) != 0u)
        return UdimBaseSize::Null;
    const DtexTextureSampler* s = reinterpret_cast<const DtexTextureSampler*>(entry);
    *width = s->width;
    *height = s->height;
    return (*width == 0u || *height == 0u) ? UdimBaseSize::Null : UdimBaseSize::Known;
}

/// `tex2DGradUdim` as a `Sample` (see the header comment). At most two lookups run -- the
/// tile and the base texture -- through one call site of `sampleGrad`, so the sampler is
/// inlined once.
static __device__ __forceinline__ Sample sampleGradUdim(const DtexDeviceContext& ctx,
                                                        uint32_t udim, float s, float t,
                                                        float2 ddx, float2 ddy,
                                                        const SampleOptions& options)
{
    const Sample empty = makeSample(make_float4(0.0f, 0.0f, 0.0f, 0.0f), true);
    UdimGrid grid;
    if (!readUdimEntry(ctx, udim, &grid))
        return makeSample(defaultFallbackColor(), true);
    const bool hasBase = grid.base != DTEX_UDIM_NO_BASE;

    // The base texture's lookup: (s, t) and the gradients scaled to the base, or unscaled
    // for bad input (the base then answers bad input as `tex2DGrad` does).
    const float gw = __uint2float_rn(grid.width);
    const float gh = __uint2float_rn(grid.height);
    float baseS = __fdiv_rn(s, gw), baseT = __fdiv_rn(t, gh);
    float2 baseDdx = make_float2(__fdiv_rn(ddx.x, gw), __fdiv_rn(ddx.y, gh));
    float2 baseDdy = make_float2(__fdiv_rn(ddy.x, gw), __fdiv_rn(ddy.y, gh));

    bool useTile = false;  // else the base texture alone answers
    bool baseSizeUnknown = false;
    uint32_t tile = 0u;
    float col = 0.0f, row = 0.0f;
    if (!(isFinite(s) && isFinite(t) && isFinite(ddx.x) && isFinite(ddx.y) && isFinite(ddy.x) &&
          isFinite(ddy.y))) {
        if (!hasBase)
            return empty;
        baseS = s;
        baseT = t;
        baseDdx = ddx;
        baseDdy = ddy;
    } else {
        bool distant = false;
        if (hasBase) {
            uint32_t bw = 0u, bh = 0u;
            switch (udimBaseSize(ctx, grid.base, &bw, &bh)) {
            case UdimBaseSize::Known: {
                const float sx = __fdiv_rn(__uint2float_rn(bw), gw);
                const float sy = __fdiv_rn(__uint2float_rn(bh), gh);
                const float xs = __fmul_rn(ddx.x, sx), xt = __fmul_rn(ddx.y, sy);
                const float ys = __fmul_rn(ddy.x, sx), yt = __fmul_rn(ddy.y, sy);
                const float lenX = __fadd_rn(__fmul_rn(xs, xs), __fmul_rn(xt, xt));
                const float lenY = __fadd_rn(__fmul_rn(ys, ys), __fmul_rn(yt, yt));
                distant = fmaxf(lenX, lenY) >= 1.0f;
                break;
            }
            case UdimBaseSize::NotResident: baseSizeUnknown = true; break;
            default: break;
            }
        }
        if (!distant) {
            col = floorf(s);
            row = floorf(t);
            const bool inside = col >= 0.0f && col < gw && row >= 0.0f && row < gh;
            if (inside)
                tile = grid.first + __float2uint_rz(row) * grid.width + __float2uint_rz(col);
            useTile = inside && !isUdimHole(ctx, tile);
            if (!useTile && !hasBase)
                return empty;
        }
    }

    // Pass 0: the tile (if one answers); pass 1: the base texture (if needed).
    Sample tileSample = empty;
    Sample result = empty;
#pragma unroll 1
    for (uint32_t pass = useTile ? 0u : 1u; pass < 2u; ++pass) {
        const bool isTile = pass == 0u;
        result = sampleGrad(ctx, isTile ? tile : grid.base, isTile ? __fsub_rn(s, col) : baseS,
                            isTile ? __fsub_rn(t, row) : baseT, isTile ? ddx : baseDdx,
                            isTile ? ddy : baseDdy, options);
        if (isTile) {
            tileSample = result;
            // The base runs too when it decides (its size is unknown yet) or may stand in.
            if (!(hasBase &&
                  (baseSizeUnknown || (!result.resident && options.fallbackToCoarser))))
                return tileSample;
        }
    }
    if (!useTile)
        return result;
    if (baseSizeUnknown) {
        // Which of the two serves this lookup is known once the base sampler is resident:
        // both were requested; report a miss.
        return makeSample(tileSample.value, false);
    }
    if (!result.resident)
        return tileSample;
    // The base stood in for a tile that missed.
    result.coarser = true;
    return result;
}

/// Sample the UDIM texture `udim` at (s, t) in UDIM space over the footprint of the
/// screen-space gradients `ddx`, `ddy` (see the header comment). `*isResident`: whether
/// every page the lookup needed was resident.
template <class T>
static __device__ __forceinline__ T tex2DGradUdim(const DtexDeviceContext& ctx, uint32_t udim,
                                                  float s, float t, float2 ddx, float2 ddy,
                                                  bool* isResident,
                                                  const SampleOptions& options = SampleOptions())
{
    return finish<T>(sampleGradUdim(ctx, udim, s, t, ddx, ddy, options), isResident);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_UDIM_CUH
