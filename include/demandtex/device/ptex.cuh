/*
 * demandtex device API: Ptex lookups.
 *
 *   DtexPtexFilterOptions o = ...;   // DTEX_PTEX_FILTER_POINT or _STOCHASTIC, jitter
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
 * The semantics are core's `sampling::ptex::ptex_sample` for the filters implemented here:
 *
 * - DTEX_PTEX_FILTER_POINT: the texel containing (u, v) at full resolution (quads), or the
 *   even / odd texel of the triangle's half (triangles).
 * - DTEX_PTEX_FILTER_STOCHASTIC: one texel from each of the two levels around the
 *   footprint's level of detail, picked with its bilinear weight by the caller's jitter,
 *   blended by the fraction; a missing texel reads as the face's constant colour. (The
 *   level of detail uses the device's log2f: at the boundary of two levels the blend
 *   weight may differ from the CPU's in the last bits.)
 * - Every other filter (bilinear, box, the cubics: the separable kernels with edge blending
 *   across adjacent faces) is not implemented on the device yet: the result is the face's
 *   constant colour with `supported` false and nothing requested.
 *
 * A face id the texture lacks, a non-finite input, or no channel to write: zeros, resident,
 * `channels` 0. A face flagged neighbourhood-constant (non-stochastic filters): its
 * constant, resident. A unit whose page is not resident: the page is requested and the
 * value is the face's constant colour, `resident` false. Requests are de-duplicated per
 * warp: the lanes asking for the same page elect one lane (`__match_any_sync`) that records
 * the request (`dtex::request`, with the launch's rejection), and all of them get its
 * answer. Until the pages texture's sampler is resident every lookup needing a unit is a
 * miss; a failed pages texture reads as constants, resident (core's rule).
 */
#ifndef DEMANDTEX_DEVICE_PTEX_CUH
#define DEMANDTEX_DEVICE_PTEX_CUH

#include "texture.cuh"

namespace dtex {

/// What `ptexSample` reports beside the values.
struct PtexResult {
    /// Channels written: `min(capacity, num_channels - first_channel)`.
    uint32_t channels;
    /// Every unit the filter needed was resident.
    bool resident;
    /// The filter is implemented on the device (false: the face's constant colour).
    bool supported;
};

/// The pages of one Ptex texture as a lookup sees them: the pages texture's sampler, or
/// why there is none; resolved at the first unit the lookup needs (core's `EnginePtex`).
struct PtexPages {
    /// The resident, well-formed sampler of the pages texture, or null.
    const DtexTextureSampler* sampler;
    /// Without a sampler: whether the pages texture failed (constants, resident).
    bool failed;
    /// Whether the sampler was looked up.
    bool resolved;
};

/// Record (with the launch's rejection) a use of `page` once per warp for the lanes that
/// ask for the same page; every active lane gets whether it is resident.
static __device__ __forceinline__ bool ptexRequestOncePerWarp(const DtexDeviceContext& ctx,
                                                              uint32_t page)
{
    const unsigned int active = __activemask();
    const unsigned int peers = __match_any_sync(active, page);
    const int leader = __ffs(static_cast<int>(peers)) - 1;
    int resident = 0;
    if (static_cast<int>(laneId()) == leader)
        resident = request(ctx, page) ? 1 : 0;
    return __shfl_sync(active, resident, leader) != 0;
}

/// Look up the pages texture's sampler (its page recorded as used) once per lookup.
static __device__ __forceinline__ void ptexResolvePages(const DtexDeviceContext& ctx,
                                                        const DtexPtexDeviceTexture& ptex,
                                                        PtexPages* p)
{
    if (p->resolved)
        return;
    p->resolved = true;
    const DtexTextureSampler* smp = nullptr;
    Sample answer;
    if (resolveSampler(ctx, ptex.pages_texture, &smp, &answer))
        p->sampler = smp;
    else
        p->failed = answer.resident;
}

/// The 32-bit word at byte `offset` (a multiple of 4) of Ptex page `page`, read from the
/// pages texture's level 0 (integer texels, point-filtered, so the bits come back unchanged).
static __device__ __forceinline__ uint32_t ptexWord(const DtexTextureSampler& smp, uint32_t page,
                                                    uint32_t offset)
{
    const uint32_t texel = offset / 16u;
    const uint32_t x = (page % DTEX_PTEX_PAGES_ACROSS) * smp.tile_width + texel % smp.tile_width;
    const uint32_t y = (page / DTEX_PTEX_PAGES_ACROSS) * smp.tile_height + texel / smp.tile_width;
    const float s = __fdiv_rn(__fadd_rn(__uint2float_rn(x), 0.5f), __uint2float_rn(smp.width));
    const float t = __fdiv_rn(__fadd_rn(__uint2float_rn(y), 0.5f), __uint2float_rn(smp.height));
    // The pages texture stores 32-bit words read as integers (a float read would flush
    // denormal bit patterns to zero).
    const uint4 v =
        ::tex2DLod<uint4>(static_cast<cudaTextureObject_t>(smp.texture_object), s, t, 0.0f);
    switch ((offset / 4u) % 4u) {
    case 0: return v.x;
    case 1: return v.y;
    case 2: return v.z;
    default: return v.w;
    }
}

/// Channel `c` (absolute) of the texel at byte `at` of a run of bytes read by `word(o)`,
/// normalised (u8 / 255, u16 / 65535), as core's `Channels::raw` times `one_value_inv`.
template <class Word>
static __device__ __forceinline__ float ptexChannel(const DtexPtexDeviceTexture& ptex, Word word,
                                                    uint32_t at, uint32_t c)
{
    switch (ptex.data_type) {
    case DTEX_TEXEL_U8: {
        const uint32_t o = at + c;
        const uint32_t b = (word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFu;
        return __fmul_rn(__uint2float_rn(b), 1.0f / 255.0f);
    }
    case DTEX_TEXEL_U16: {
        const uint32_t o = at + 2u * c;
        const uint32_t b = (word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFFFu;
        return __fmul_rn(__uint2float_rn(b), 1.0f / 65535.0f);
    }
    case DTEX_TEXEL_F16: {
        const uint32_t o = at + 2u * c;
        const uint32_t b = (word(o & ~3u) >> ((o & 3u) * 8u)) & 0xFFFFu;
        return halfBitsToFloat(static_cast<unsigned short>(b));
    }
    default: return __uint_as_float(word(at + 4u * c));
    }
}

/// The face's constant colour, channels `first .. first + n`, into `out`.
static __device__ __forceinline__ void ptexConstant(const DtexPtexDeviceTexture& ptex,
                                                    uint32_t face, uint32_t first, uint32_t n,
                                                    float* out)
{
    const unsigned char* bytes = ptex.constants + static_cast<size_t>(face) * ptex.pixel_size;
    // The constant is pixel_size bytes: read only the bytes that exist.
    auto word = [&](uint32_t o) {
        uint32_t w = 0;
        for (uint32_t i = 0; i < 4u && o + i < ptex.pixel_size; ++i)
            w |= static_cast<uint32_t>(bytes[o + i]) << (8u * i);
        return w;
    };
    for (uint32_t c = 0; c < n; ++c)
        out[c] = ptexChannel(ptex, word, 0u, first + c);
}

/// The texel (`ui`, `vi`) of `face` at resolution (`ulog2`, `vlog2`) into `out`; false if
/// its unit is missing (the page was requested). Core's `point::texel`.
static __device__ __forceinline__ bool ptexTexel(const DtexDeviceContext& ctx,
                                                 const DtexPtexDeviceTexture& ptex,
                                                 PtexPages* pages, uint32_t face,
                                                 uint32_t ulog2, uint32_t vlog2, uint32_t ui,
                                                 uint32_t vi, uint32_t first, uint32_t n,
                                                 float* out)
{
    const DtexPtexDeviceFace f = ptex.faces[face];
    if ((f.flags & DTEX_PTEX_FACE_CONSTANT) != 0u || (ulog2 == 0u && vlog2 == 0u)) {
        ptexConstant(ptex, face, first, n, out);
        return true;
    }
    const uint32_t redu = f.ulog2 - ulog2, redv = f.vlog2 - vlog2;
    const uint32_t index = f.units + redu * (f.vlog2 + 1u) + redv;
    if (index >= ptex.num_units)
        return false;
    const DtexPtexDeviceUnit unit = ptex.units[index];
    if (unit.page == DTEX_PTEX_NO_UNIT)
        return false;
    ptexResolvePages(ctx, ptex, pages);
    if (pages->sampler == nullptr)
        return false;
    // The tile holding the texel, and the texel within it.
    uint32_t tile = 0, tu = ui, tv = vi, row = 1u << ulog2;
    if (unit.ntiles_u != 0u) {
        const uint32_t cu = ui >> unit.tile_ulog2, cv = vi >> unit.tile_vlog2;
        tile = cv * unit.ntiles_u + cu;
        tu = ui - (cu << unit.tile_ulog2);
        tv = vi - (cv << unit.tile_vlog2);
        row = 1u << unit.tile_ulog2;
    }
    // Core's `UnitLoc::tile`: tiles follow each other, never straddling a page.
    const uint32_t bytes = unit.bytes > 0u ? unit.bytes : 1u;
    const uint32_t fit = (DTEX_TILE_BYTES - unit.offset) / bytes;
    uint32_t page, offset;
    if (tile < fit) {
        page = unit.page;
        offset = unit.offset + tile * bytes;
    } else {
        const uint32_t per = DTEX_TILE_BYTES / bytes, rest = tile - fit;
        page = unit.page + 1u + rest / per;
        offset = (rest % per) * bytes;
    }
    // The page's place in the page space (core's `EnginePtex::texels`).
    const DtexTextureSampler& smp = *pages->sampler;
    const DtexSamplerLevel& lv = smp.levels[0];
    const uint32_t px = page % DTEX_PTEX_PAGES_ACROSS, py = page / DTEX_PTEX_PAGES_ACROSS;
    if (px >= lv.tiles_x || py >= smp.num_pages)
        return false;
    const uint32_t global = smp.start_page + lv.offset + py * lv.tiles_x + px;
    if (global >= smp.start_page + smp.num_pages || !ptexRequestOncePerWarp(ctx, global))
        return false;
    const uint32_t at = offset + (tv * row + tu) * ptex.pixel_size;
    auto word = [&smp, page](uint32_t o) { return ptexWord(smp, page, o); };
    for (uint32_t c = 0; c < n; ++c)
        out[c] = ptexChannel(ptex, word, at, first + c);
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
    if (options.filter != DTEX_PTEX_FILTER_POINT && !stochastic) {
        r.supported = false;
        ptexConstant(ptex, face, first, n, out);
        return r;
    }
    if (!stochastic && (f.flags & DTEX_PTEX_FACE_NEIGHBORHOOD_CONSTANT) != 0u) {
        ptexConstant(ptex, face, first, n, out);
        return r;
    }
    PtexPages pages;
    pages.sampler = nullptr;
    pages.failed = false;
    pages.resolved = false;
    const bool triangle = ptex.mesh_type == DTEX_PTEX_MESH_TRIANGLE;
    if (!stochastic) {
        uint32_t ui, vi;
        if (triangle) {
            ptexTriangleTexel(f.ulog2, u, v, &ui, &vi);
        } else {
            ui = ptexClampIndex(__fmul_rn(u, __uint2float_rn(1u << f.ulog2)), 1u << f.ulog2);
            vi = ptexClampIndex(__fmul_rn(v, __uint2float_rn(1u << f.vlog2)), 1u << f.vlog2);
        }
        r.resident = ptexTexel(ctx, ptex, &pages, face, f.ulog2, f.vlog2, ui, vi, first, n, out);
        if (!r.resident) {
            ptexConstant(ptex, face, first, n, out);
            r.resident = pages.failed;
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
        if (!ptexTexel(ctx, ptex, &pages, face, lu, lvl, ui, vi, first, n, dst)) {
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
    r.resident = resident || pages.failed;
    return r;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_CUH
