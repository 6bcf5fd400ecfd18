/*
 * demandtex device API: Ptex lookups.
 *
 *   DtexPtexFilterOptions o = ...;   // DTEX_PTEX_FILTER_*, lerp, noedgeblend, width, jitter
 *   float rgba[4];
 *   dtex::PtexResult r = dtex::ptexSample(ctx, ptex, face, u, v, dudx, dvdx, dudy, dvdy,
 *                                         o, rgba, 4);
 *
 * `ptex` is the `DtexPtexDeviceTexture` the host published (CUDA backend:
 * `CudaLoader::create_ptex_texture`, docs/PTEX.md "On the device"): the face table, the
 * unit table (where each face at each reduction lies in the packed 64 KiB pages) and the
 * per-face constant colours in device memory, and the id of the pages texture. The pages
 * are that texture's tiles (16-byte texels, 64x64 texels = one page; Ptex page `p` is tile
 * (p % DTEX_PTEX_PAGES_ACROSS, p / DTEX_PTEX_PAGES_ACROSS) of level 0), stored on the device
 * as four 32-bit unsigned integers per texel and read back bit for bit through its texture
 * object.
 *
 * The semantics are core's `sampling::ptex::ptex_sample` (the reference library's
 * `PtexFilter` v2.4.3 plus the stochastic filter):
 *
 * - DTEX_PTEX_FILTER_POINT: the texel containing (u, v) at full resolution (quads), or the
 *   even / odd texel of the triangle's half (triangles).
 * - DTEX_PTEX_FILTER_STOCHASTIC: one texel from each of the two levels around the
 *   footprint's level of detail, picked with its bilinear weight by the caller's jitter,
 *   blended by the fraction; a missing texel reads as the face's constant colour. (The
 *   level of detail uses the device's log2f: at the boundary of two levels the blend
 *   weight may differ from the CPU's in the last bits.)
 * - DTEX_PTEX_FILTER_BILINEAR, _BOX, _GAUSSIAN, _BICUBIC (`sharpness`), _BSPLINE,
 *   _CATMULL_ROM, _MITCHELL on quads: the separable kernels (ptex_separable.cuh): the
 *   resolution chosen from the filter width (`width`, `blur`), the kernel split across
 *   edges and corners into the neighbours (rotations, lower resolutions, subfaces), folded
 *   or dropped at mesh borders (the texture's border modes), `lerp` for the width-4
 *   kernels, `noedgeblend`, tangent-vector rotation.
 * - Any of those on triangles: the Gaussian triangle filter (ptex_triangle.cuh).
 * - A filter code past DTEX_PTEX_FILTER_STOCHASTIC: the face's constant colour with
 *   `supported` false and nothing requested.
 *
 * Sums are added in core's order (so results agree to the bit with core's where the
 * device's arithmetic is exact), except where a kernel steps onto a subface or, on
 * triangles, across an edge: those parts are applied after the current face (a fixed
 * stack replaces core's recursion), and agree to rounding.
 *
 * A face id the texture lacks, a non-finite input, or no channel to write: zeros, resident,
 * `channels` 0. A face flagged neighbourhood-constant (non-stochastic filters): its
 * constant, resident. A unit whose page is not resident: the page is requested and the
 * value is the face's constant colour, `resident` false; a filter over several units still
 * requests every unit of its footprint in the same lookup. Requests are de-duplicated per
 * warp: the lanes asking for the same page elect one lane (`__match_any_sync`) that records
 * the request (`dtex::request`, with the launch's rejection), and all of them get its
 * answer. Until the pages texture's sampler is resident every lookup needing a unit is a
 * miss; a failed pages texture reads as constants, resident (core's rule).
 */
#ifndef DEMANDTEX_DEVICE_PTEX_CUH
#define DEMANDTEX_DEVICE_PTEX_CUH

#include "ptex_separable.cuh"
#include "ptex_triangle.cuh"
#include "ptex_units.cuh"

namespace dtex {

/// What `ptexSample` reports beside the values.
struct PtexResult {
    /// Channels written: `min(capacity, num_channels - first_channel)`.
    uint32_t channels;
    /// Every unit the filter needed was resident.
    bool resident;
    /// The filter code is known (false: the face's constant colour).
    bool supported;
};

/// The texel (`ui`, `vi`) of `face` at resolution (`ulog2`, `vlog2`) into `out`; false if
/// its unit is missing (the page was requested). Core's `point::texel`.
static __device__ __forceinline__ bool ptexTexel(PtexUnits* units, uint32_t face, uint32_t ulog2,
                                                 uint32_t vlog2, uint32_t ui, uint32_t vi,
                                                 uint32_t first, uint32_t n, float* out)
{
    const DtexPtexDeviceTexture& ptex = *units->ptex;
    const DtexPtexDeviceFace f = ptex.faces[face];
    if (ptexIsConstant(f) || (ulog2 == 0u && vlog2 == 0u)) {
        ptexConstant(ptex, face, first, n, out);
        return true;
    }
    // The tile holding the texel, and the texel within it.
    DtexPtexDeviceUnit unit;
    if (!ptexUnitEntry(ptex, f, ulog2, vlog2, &unit))
        return false;
    const PtexTiling t = ptexTiling(unit, ulog2, vlog2);
    uint32_t tile = 0, tu = ui, tv = vi, row = 1u << ulog2;
    if (t.ntiles_u != 0u) {
        const uint32_t cu = ui >> t.tile_ulog2, cv = vi >> t.tile_vlog2;
        tile = cv * t.ntiles_u + cu;
        tu = ui - (cu << t.tile_ulog2);
        tv = vi - (cv << t.tile_vlog2);
        row = 1u << t.tile_ulog2;
    }
    PtexUnitReader reader;
    if (!ptexOpenUnitInline(units, unit, vlog2, tile, &reader))
        return false;
    const uint32_t at = (tv * row + tu) * ptex.pixel_size;
    for (uint32_t c = 0; c < n; ++c)
        out[c] = ptexChannel(ptex, reader, at, first + c);
    return true;
}

/// `(int64)(x)` clamped into [0, r - 1], as core's `(x as i64).clamp(0, r - 1)`.
static __device__ __forceinline__ uint32_t ptexClampIndex(float x, uint32_t r)
{
    if (!(x > 0.0f))
        return 0u;
    if (x >= __uint2float_rn(r))
        return r - 1u;
    const uint32_t i = static_cast<uint32_t>(x);
    return i < r ? i : r - 1u;
}

/// The texel of a triangle face at resolution `log2` holding (u, v) (core's
/// `point::triangle_texel`).
static __device__ __forceinline__ void ptexTriangleTexel(uint32_t log2, float u, float v,
                                                         uint32_t* ui, uint32_t* vi)
{
    const uint32_t r = 1u << log2;
    const float ut = __fmul_rn(u, __uint2float_rn(r)), vt = __fmul_rn(v, __uint2float_rn(r));
    const uint32_t iu = ptexClampIndex(ut, r), iv = ptexClampIndex(vt, r);
    const float uf = __fsub_rn(ut, __uint2float_rn(iu)), vf = __fsub_rn(vt, __uint2float_rn(iv));
    if (__fadd_rn(uf, vf) <= 1.0f) {
        *ui = iu;
        *vi = iv;
    } else {
        *ui = r - 1u - iv;
        *vi = r - 1u - iu;
    }
}

/// `floor(x * r - 0.5 + j)` clamped into the face (core's stochastic `pick`).
static __device__ __forceinline__ uint32_t ptexPick(float x, uint32_t r, float j)
{
    const float f = floorf(__fadd_rn(__fsub_rn(__fmul_rn(x, __uint2float_rn(r)), 0.5f), j));
    if (!(f > 0.0f))
        return 0u;
    return f >= __uint2float_rn(r) ? r - 1u : static_cast<uint32_t>(f);
}

/// Core's level-of-detail term: `log2(w) + log2` for a positive width, else -infinity.
static __device__ __forceinline__ float ptexLod(float w, int log2)
{
    return w > 0.0f ? __fadd_rn(log2f(w), static_cast<float>(log2)) : __int_as_float(static_cast<int>(0xFF800000u));
}

/// Filter the Ptex texture `ptex` at (`u`, `v`) of `face` over the footprint (`dudx`,
/// `dvdx`), (`dudy`, `dvdy`) into `out[0 .. capacity)` (see the header comment). At most 16
/// channels are filtered.
static __device__ __forceinline__ PtexResult ptexSample(
    const DtexDeviceContext& ctx, const DtexPtexDeviceTexture& ptex, uint32_t face, float u,
    float v, float dudx, float dvdx, float dudy, float dvdy,
    const DtexPtexFilterOptions& options, float* out, uint32_t capacity)
{
    PtexResult r;
    r.channels = 0u;
    r.resident = true;
    r.supported = true;
    const uint32_t first = options.first_channel;
    uint32_t n = ptex.num_channels > first ? ptex.num_channels - first : 0u;
    n = n < capacity ? n : capacity;
    n = n < 16u ? n : 16u;
    const bool finite = isFinite(u) && isFinite(v) && isFinite(dudx) && isFinite(dvdx) &&
                        isFinite(dudy) && isFinite(dvdy) && isFinite(options.width) &&
                        isFinite(options.blur);
    if (face >= ptex.num_faces || n == 0u || !finite) {
        for (uint32_t c = 0; c < capacity; ++c)
            out[c] = 0.0f;
        return r;
    }
    r.channels = n;
    const DtexPtexDeviceFace f = ptex.faces[face];
    const bool stochastic = options.filter == DTEX_PTEX_FILTER_STOCHASTIC;
    if (options.filter > DTEX_PTEX_FILTER_STOCHASTIC) {
        r.supported = false;
        ptexConstant(ptex, face, first, n, out);
        return r;
    }
    if (!stochastic && (f.flags & DTEX_PTEX_FACE_NEIGHBORHOOD_CONSTANT) != 0u) {
        ptexConstant(ptex, face, first, n, out);
        return r;
    }
    PtexUnits units = ptexUnits(ctx, ptex);
    const bool triangle = ptex.mesh_type == DTEX_PTEX_MESH_TRIANGLE;
    if (options.filter != DTEX_PTEX_FILTER_POINT && !stochastic) {
        // The separable filters (quads) or the triangle filter, over the whole footprint.
        r.resident = triangle ? ptexTriangle(&units, face, f, u, v, dudx, dvdx, dudy, dvdy,
                                             options, first, n, out)
                              : ptexSeparable(&units, face, f, u, v, dudx, dvdx, dudy, dvdy,
                                              options, first, n, out);
        if (!r.resident) {
            ptexConstant(ptex, face, first, n, out);
            r.resident = units.pages.failed;
        }
        return r;
    }
    if (!stochastic) {
        uint32_t ui, vi;
        if (triangle) {
            ptexTriangleTexel(f.ulog2, u, v, &ui, &vi);
        } else {
            ui = ptexClampIndex(__fmul_rn(u, __uint2float_rn(1u << f.ulog2)), 1u << f.ulog2);
            vi = ptexClampIndex(__fmul_rn(v, __uint2float_rn(1u << f.vlog2)), 1u << f.vlog2);
        }
        r.resident = ptexTexel(&units, face, f.ulog2, f.vlog2, ui, vi, first, n, out);
        if (!r.resident) {
            ptexConstant(ptex, face, first, n, out);
            r.resident = units.pages.failed;
        }
        return r;
    }
    // Stochastic two-level point (core's `point::stochastic`).
    const float wu = __fadd_rn(__fmul_rn(__fadd_rn(fabsf(dudx), fabsf(dudy)), options.width),
                               options.blur);
    const float wv = __fadd_rn(__fmul_rn(__fadd_rn(fabsf(dvdx), fabsf(dvdy)), options.width),
                               options.blur);
    const int ul = f.ulog2, vl = f.vlog2, top = ul > vl ? ul : vl;
    const float lod = fminf(fmaxf(fmaxf(ptexLod(wu, ul), ptexLod(wv, vl)), 0.0f),
                            static_cast<float>(top));
    int l0 = static_cast<int>(floorf(lod));
    l0 = l0 < top ? l0 : top;
    const float t = l0 < top ? __fsub_rn(lod, static_cast<float>(l0)) : 0.0f;
    const float uc = fminf(fmaxf(u, 0.0f), 1.0f), vc = fminf(fmaxf(v, 0.0f), 1.0f);
    bool resident = true;
    auto level = [&](int lev, float* dst) {
        const uint32_t lu = static_cast<uint32_t>(ul - lev > 0 ? ul - lev : 0);
        const uint32_t lvl = static_cast<uint32_t>(vl - lev > 0 ? vl - lev : 0);
        uint32_t ui, vi;
        if (triangle) {
            const float ju = __fdiv_rn(__fsub_rn(options.jitter_u, 0.5f), __uint2float_rn(1u << lu));
            const float jv = __fdiv_rn(__fsub_rn(options.jitter_v, 0.5f), __uint2float_rn(1u << lvl));
            ptexTriangleTexel(lu, __fadd_rn(uc, ju), __fadd_rn(vc, jv), &ui, &vi);
        } else {
            ui = ptexPick(uc, 1u << lu, options.jitter_u);
            vi = ptexPick(vc, 1u << lvl, options.jitter_v);
        }
        if (!ptexTexel(&units, face, lu, lvl, ui, vi, first, n, dst)) {
            resident = false;
            ptexConstant(ptex, face, first, n, dst);
        }
    };
    level(l0, out);
    if (t > 0.0f) {
        float next[16];
        level(l0 + 1, next);
        for (uint32_t c = 0; c < n; ++c)
            out[c] = __fadd_rn(__fmul_rn(out[c], __fsub_rn(1.0f, t)), __fmul_rn(next[c], t));
    }
    r.resident = resident || units.pages.failed;
    return r;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_CUH
