/*
 * demandtex device API: texture lookups over demand-loaded sparse textures.
 *
 *   float4 c = dtex::tex2DGrad<float4>(ctx, textureId, s, t, ddx, ddy, &resident);
 *
 * `tex2D` samples level 0, `tex2DLod` an explicit level of detail (isotropic), `tex2DGrad`
 * the footprint of the screen-space gradients `ddx` = d(s, t)/dx and `ddy` = d(s, t)/dy.
 * The result type `T` is `float4` (RGBA), `float2` (RG) or `float` (R). One-channel
 * textures give (c, c, c, 1), two-channel (c0, c1, 0, 1). `*isResident` is false when a
 * page the lookup needed was missing: the value is then the base colour (or zeros) and the
 * missing pages were requested; the host's `process_requests` loads them for a later launch.
 *
 * The semantics are those of the engine's CPU samplers (core/src/sampling/mod.rs), so a CPU
 * and a GPU render agree within hardware filtering precision. In order:
 *
 * 1. Unknown texture (id >= max_textures): opaque magenta (`defaultFallbackColor`),
 *    resident; nothing is requested.
 * 2. Base-colour shortcut: when the footprint covers the whole texture
 *    (`min(|ddx|^2, |ddy|^2) >= 1` in UV), or any input is NaN or infinite, only the
 *    base-colour page is read: a colour -> that colour, resident; page missing -> zeros,
 *    non-resident. A texture without a base colour is sampled at its coarsest level (for
 *    non-finite inputs: its sampler's fallback colour).
 * 3. Sampler page: missing -> the miss value, non-resident. Entry 0 (degenerate texture)
 *    -> the base colour, resident (magenta without one). A failed texture
 *    (`DTEX_SAMPLER_FLAG_FAILED`) or a malformed record -> its `fallback_color`, resident.
 * 4. Footprint in software (footprint.cuh): the level of detail and anisotropic probes,
 *    the mip level(s), and every tile (or the mip-tail page) each probe's bilinear
 *    footprint touches on each level, recorded as used (misses become requests).
 * 5. All resident: hardware filtering -- one `tex2DLod` per probe at the software level of
 *    detail (bilinear within a level, the two levels blended by the texture object's linear
 *    mip filter), averaged over the probes.
 * 6. A miss: with `SampleOptions::fallbackToCoarser`, the first coarser level whose whole
 *    footprint is resident (tested without requesting) stands in, reported resident.
 *    Otherwise the base colour if its page is resident, else zeros, non-resident.
 * With `SampleOptions::stochastic`, steps 4 to 6 read one texel per level instead: the
 * footprint is isotropic, and in each of the one or two levels the texel the jitter picks
 * (with its bilinear weight) is touched and fetched at its centre (`filterStochastic`).
 *
 * What the CUDA backend publishes: the sampler page's entry is the device address of the
 * texture's `DtexTextureSampler` (device memory, 8-byte aligned, unchanged while a launch
 * can read it); `mip_tail_data` is unused (the tail lives in the sparse array).
 * What the host must give the texture object (`DtexTextureSampler::texture_object`):
 * normalised coordinates; address modes `address_s`/`address_t` (border colour transparent
 * black); filter mode `filter`; mipmap filter mode linear (the device passes exact integer
 * levels where a point mip filter wants one level); max anisotropy 1; minimum and maximum
 * mipmap level clamps 0 and `num_levels - 1`; the trilinear optimisation disabled
 * (`CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`, so level blends use the exact fraction the
 * footprint computed, as on the CPU); read mode "normalised float" for 8- and
 * 16-bit unsigned formats; no sRGB. The pages of a level are resident exactly when their
 * tiles are mapped (a tile is unmapped only after its residence bit was cleared and no
 * launch can still see it).
 */
#ifndef DEMANDTEX_DEVICE_TEXTURE_CUH
#define DEMANDTEX_DEVICE_TEXTURE_CUH

#include "footprint.cuh"

namespace dtex {

/// Per-lookup options (the engine's `SampleOptions`); every field has its default, so
/// `dtex::SampleOptions options;` is the defaults, as `{true}` is "fall back to coarser".
struct SampleOptions {
    /// On a miss, return the value of the finest coarser level whose footprint is resident
    /// (the mip tail always is once the sampler is) and report it as resident. The missing
    /// pages are still requested, so later launches sharpen.
    bool fallbackToCoarser = false;
    /// Stochastic two-level point filtering (the engine's `SampleOptions::stochastic`): one
    /// texel from each of the two mip levels around the level of detail (one where the
    /// texture's mip filter is point), blended by the fraction, each picked by `jitter`
    /// with its bilinear weight -- averaged over a pixel's samples, the trilinear filter --
    /// over an isotropic footprint. One or two hardware fetches at texel centres.
    bool stochastic = false;
    /// The stochastic filter's random numbers for s and t, uniform in [0, 1) per sample
    /// (0.5, 0.5: the nearest texels); clamped into [0, 1), NaN means 0.5.
    float jitter[2] = {0.5f, 0.5f};
};

/// Opaque magenta: what an unknown texture id samples as (`DTEX_DEFAULT_FALLBACK_COLOR_*`,
/// the engine's `DEFAULT_FALLBACK_COLOR`).
static __device__ __forceinline__ float4 defaultFallbackColor()
{
    return make_float4(static_cast<float>(DTEX_DEFAULT_FALLBACK_COLOR_R),
                       static_cast<float>(DTEX_DEFAULT_FALLBACK_COLOR_G),
                       static_cast<float>(DTEX_DEFAULT_FALLBACK_COLOR_B),
                       static_cast<float>(DTEX_DEFAULT_FALLBACK_COLOR_A));
}

/// The value and residency of one lookup, before conversion to the caller's type.
struct Sample {
    /// RGBA.
    float4 value;
    /// Every page the lookup needed was resident (or a coarser level stood in).
    bool resident;
    /// A coarser resident level stood in for the missing level of detail asked for
    /// (`fallbackToCoarser`; the engine's `Sample::coarser`): not yet at full detail.
    bool coarser;
};

/// A `Sample` at the level of detail asked for, from its parts.
static __device__ __forceinline__ Sample makeSample(float4 value, bool resident)
{
    Sample s;
    s.value = value;
    s.resident = resident;
    s.coarser = false;
    return s;
}

/// A coarser resident level's value standing in for a missing one (reported resident).
static __device__ __forceinline__ Sample makeCoarserSample(float4 value)
{
    Sample s = makeSample(value, true);
    s.coarser = true;
    return s;
}

/// What a texture's base-colour page says (the engine's `resolve::BaseColor`).
enum class BaseColorState {
    /// The average colour of the texture.
    Color,
    /// The texture has no base colour.
    Absent,
    /// The page is not resident (a request was recorded).
    NotResident,
};

/// Read (and record a use of) the base-colour page of `texture`.
static __device__ __forceinline__ BaseColorState baseColor(const DtexDeviceContext& ctx,
                                                           uint32_t texture, float4* color)
{
    uint64_t entry;
    if (!mapOrRequest(ctx, baseColorPage(ctx, texture), &entry))
        return BaseColorState::NotResident;
    return decodeBaseColor(entry, color) ? BaseColorState::Color : BaseColorState::Absent;
}

/// The value of a lookup that missed: the base colour if resident, else zeros.
static __device__ __forceinline__ float4 missColor(const DtexDeviceContext& ctx, uint32_t texture)
{
    float4 c;
    if (baseColor(ctx, texture, &c) == BaseColorState::Color)
        return c;
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/// Whether a sampler record is one the lookups can use without dividing by zero or
/// indexing out of bounds: a known format, 1..=DTEX_MAX_LEVELS levels, power-of-two tiles
/// of exactly `DTEX_TILE_BYTES` (the engine's `resolve::is_well_formed`, which also accepts
/// the smaller tiles a CPU loader gives textures with smaller file tiles; a CUDA loader's
/// tiles are always full). Pages of BC blocks (`block_codec` `DTEX_BLOCK_BC1` to `BC7`)
/// hold 64 KiB of 8- or 16-byte blocks (`texel_bytes`), 4×4 texels each, which the
/// texture unit decodes.
static __device__ __forceinline__ bool isWellFormed(const DtexTextureSampler& s)
{
    const bool pow2Tiles = s.tile_width >= 4u && (s.tile_width & (s.tile_width - 1u)) == 0u &&
                           s.tile_height >= 4u && (s.tile_height & (s.tile_height - 1u)) == 0u;
    if (s.block_codec != DTEX_BLOCK_NONE)
        return s.block_codec <= DTEX_BLOCK_BC7 && (s.texel_bytes == 8u || s.texel_bytes == 16u) &&
               s.num_levels >= 1u && s.num_levels <= DTEX_MAX_LEVELS &&
               s.mip_tail_first_level <= s.num_levels && pow2Tiles &&
               static_cast<unsigned long long>(s.tile_width / 4u) * (s.tile_height / 4u) *
                       s.texel_bytes ==
                   DTEX_TILE_BYTES;
    uint32_t componentBytes;
    switch (s.texel_type) {
    case DTEX_TEXEL_U8: componentBytes = 1u; break;
    case DTEX_TEXEL_U16:
    case DTEX_TEXEL_F16: componentBytes = 2u; break;
    case DTEX_TEXEL_F32: componentBytes = 4u; break;
    default: return false;
    }
    const bool pow2 = s.tile_width != 0u && (s.tile_width & (s.tile_width - 1u)) == 0u &&
                      s.tile_height != 0u && (s.tile_height & (s.tile_height - 1u)) == 0u;
    return (s.channels == 1u || s.channels == 2u || s.channels == 4u) &&
           s.texel_bytes == componentBytes * s.channels && s.num_levels >= 1u &&
           s.num_levels <= DTEX_MAX_LEVELS && s.mip_tail_first_level <= s.num_levels && pow2 &&
           static_cast<unsigned long long>(s.tile_width) * s.tile_height * s.texel_bytes ==
               DTEX_TILE_BYTES;
}

/// The sampler record of `texture` (its page recorded as used) in `*sampler`, or, returning
/// false, the whole answer in `*answer` when there is nothing to filter (the engine's
/// `resolve::sampler`): page missing -> the miss colour, non-resident; entry 0 -> the base
/// colour, resident (magenta without one; zeros, non-resident, if its page is missing);
/// failed or malformed record -> its `fallback_color`, resident.
static __device__ __forceinline__ bool resolveSampler(const DtexDeviceContext& ctx,
                                                      uint32_t texture,
                                                      const DtexTextureSampler** sampler,
                                                      Sample* answer)
{
    uint64_t entry;
    if (!mapOrRequest(ctx, samplerPage(ctx, texture), &entry)) {
        *answer = makeSample(missColor(ctx, texture), false);
        return false;
    }
    if (entry == 0u) {
        float4 c;
        switch (baseColor(ctx, texture, &c)) {
        case BaseColorState::Color: *answer = makeSample(c, true); break;
        case BaseColorState::Absent: *answer = makeSample(defaultFallbackColor(), true); break;
        default: *answer = makeSample(make_float4(0.0f, 0.0f, 0.0f, 0.0f), false); break;
        }
        return false;
    }
    if (entry % alignof(DtexTextureSampler) != 0u) {
        // A corrupt entry (never published by the loader): nothing safe to read.
        *answer = makeSample(defaultFallbackColor(), true);
        return false;
    }
    const DtexTextureSampler* s = reinterpret_cast<const DtexTextureSampler*>(entry);
    if ((s->flags & DTEX_SAMPLER_FLAG_FAILED) != 0u || !isWellFormed(*s)) {
        *answer = makeSample(make_float4(s->fallback_color[0], s->fallback_color[1],
                                         s->fallback_color[2], s->fallback_color[3]),
                             true);
        return false;
    }
    *sampler = s;
    return true;
}

/// Hardware-filtered RGBA of the texture at (s, t) and level of detail `lod` (fractions
/// blend two levels), expanded from the texture's channels as the CPU decodes texels: one
/// channel (c, c, c, a), two (c0, c1, 0, a), where `a` is `coverage`, the summed weight
/// of the texels inside the texture (the alpha the CPU filter sums).
static __device__ __forceinline__ float4 fetchLevel(const DtexTextureSampler& smp, float s,
                                                    float t, float lod, float coverage)
{
    const float4 v = ::tex2DLod<float4>(static_cast<cudaTextureObject_t>(smp.texture_object), s,
                                        t, lod);
    if (smp.channels == 1u)
        return make_float4(v.x, v.x, v.x, coverage);
    if (smp.channels == 2u)
        return make_float4(v.x, v.y, 0.0f, coverage);
    return v;
}

/// `acc += v * w`, component-wise.
static __device__ __forceinline__ void accumulate(float4* acc, float4 v, float w)
{
    acc->x = __fadd_rn(acc->x, __fmul_rn(v.x, w));
    acc->y = __fadd_rn(acc->y, __fmul_rn(v.y, w));
    acc->z = __fadd_rn(acc->z, __fmul_rn(v.z, w));
    acc->w = __fadd_rn(acc->w, __fmul_rn(v.w, w));
}

/// The value of the first level from `first` on whose whole footprint is resident, found
/// without recording any request; false if there is none (the engine's `filter::coarser`).
/// A cold path: only lookups that missed with `fallbackToCoarser` get here.
static __device__ __forceinline__ bool coarserLevel(const DtexDeviceContext& ctx,
                                                    const DtexTextureSampler& smp, float s,
                                                    float t, const Footprint& fp,
                                                    uint32_t first, float4* value)
{
    const float probeWeight = __fdiv_rn(1.0f, __uint2float_rn(fp.probes));
    for (uint32_t level = first; level < smp.num_levels; ++level) {
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        bool resident = true;
        for (uint32_t i = 0; i < fp.probes && resident; ++i) {
            const float2 p = probeCenter(fp, s, t, i);
            float coverage;
            resident = touchLevel(ctx, smp, level, p.x, p.y, Touch::Peek, &coverage);
            if (resident && coverage != 0.0f)
                accumulate(&acc, fetchLevel(smp, p.x, p.y, __uint2float_rn(level), coverage),
                           probeWeight);
        }
        if (resident) {
            *value = acc;
            return true;
        }
    }
    return false;
}

/// `filterFootprint` for a stochastic lookup (`SampleOptions::stochastic`; `fp` has one
/// probe): the jittered texel of the one or two levels read, each fetched at its centre.
/// On a miss, with `fallbackToCoarser`, the first coarser level whose jittered texel is
/// resident (peeked) stands in.
static __device__ __forceinline__ Sample filterStochastic(const DtexDeviceContext& ctx,
                                                          uint32_t texture,
                                                          const DtexTextureSampler& smp,
                                                          float s, float t, const Footprint& fp,
                                                          const SampleOptions& options)
{
    const uint32_t mipFilter =
        smp.mip_filter == DTEX_FILTER_POINT ? DTEX_FILTER_POINT : DTEX_FILTER_LINEAR;
    const MipLevels levels = mipLevels(fp.lod, smp.num_levels, mipFilter);
    const float2 jitter =
        make_float2(sanitiseJitter(options.jitter[0]), sanitiseJitter(options.jitter[1]));
    const uint32_t count = levels.coarseWeight > 0.0f ? 2u : 1u;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    bool resident = true;
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t level = levels.fine + k;
        const float weight =
            k == 0u ? __fsub_rn(1.0f, levels.coarseWeight) : levels.coarseWeight;
        float coverage;
        float2 centre;
        resident = touchJittered(ctx, smp, level, s, t, jitter, Touch::Record, &coverage,
                                 &centre) &&
                   resident;
        if (resident && coverage != 0.0f)
            accumulate(&acc, fetchLevel(smp, centre.x, centre.y, __uint2float_rn(level), coverage),
                       weight);
    }
    if (resident)
        return makeSample(acc, true);
    if (options.fallbackToCoarser) {
        for (uint32_t level = levels.fine + 1u; level < smp.num_levels; ++level) {
            float coverage;
            float2 centre;
            if (touchJittered(ctx, smp, level, s, t, jitter, Touch::Peek, &coverage, &centre)) {
                const float4 v =
                    coverage != 0.0f
                        ? fetchLevel(smp, centre.x, centre.y, __uint2float_rn(level), coverage)
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                return makeCoarserSample(v);
            }
        }
    }
    return makeSample(missColor(ctx, texture), false);
}

/// Filter `texture` (whose resident, well-formed sampler is `smp`) over footprint `fp`
/// centred at (s, t): steps 4 to 6 of the header comment (the engine's `filter::run`).
/// The probes are fetched while their pages are touched; the sum is used only if every
/// page was resident (an unmapped sparse tile reads as zeros, and the sum is then dropped).
static __device__ __forceinline__ Sample filterFootprint(const DtexDeviceContext& ctx,
                                                         uint32_t texture,
                                                         const DtexTextureSampler& smp, float s,
                                                         float t, const Footprint& fp,
                                                         const SampleOptions& options)
{
    if (options.stochastic)
        return filterStochastic(ctx, texture, smp, s, t, fp, options);
    const uint32_t mipFilter =
        smp.mip_filter == DTEX_FILTER_POINT ? DTEX_FILTER_POINT : DTEX_FILTER_LINEAR;
    const MipLevels levels = mipLevels(fp.lod, smp.num_levels, mipFilter);
    const bool twoLevels = levels.coarseWeight > 0.0f;
    // The level of detail the hardware blends: an exact integer where one level is read.
    const float hwLod = twoLevels ? __fadd_rn(__uint2float_rn(levels.fine), levels.coarseWeight)
                                  : __uint2float_rn(levels.fine);
    const float fineWeight = __fsub_rn(1.0f, levels.coarseWeight);
    const float probeWeight = __fdiv_rn(1.0f, __uint2float_rn(fp.probes));
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    bool resident = true;
    for (uint32_t i = 0; i < fp.probes; ++i) {
        const float2 p = probeCenter(fp, s, t, i);
        float fine, coarse = 0.0f;
        resident = touchLevel(ctx, smp, levels.fine, p.x, p.y, Touch::Record, &fine) && resident;
        if (twoLevels)
            resident =
                touchLevel(ctx, smp, levels.fine + 1u, p.x, p.y, Touch::Record, &coarse) &&
                resident;
        // The alpha of one- and two-channel textures: the CPU filter's summed weights.
        const float coverage =
            __fadd_rn(__fmul_rn(fine, fineWeight), __fmul_rn(coarse, levels.coarseWeight));
        if (resident && coverage != 0.0f)
            accumulate(&acc, fetchLevel(smp, p.x, p.y, hwLod, coverage), probeWeight);
    }
    if (resident)
        return makeSample(acc, true);
    float4 value;
    if (options.fallbackToCoarser &&
        coarserLevel(ctx, smp, s, t, fp, levels.fine + 1u, &value))
        return makeCoarserSample(value);
    return makeSample(missColor(ctx, texture), false);
}

/// A lookup with a NaN or infinite input: the base colour, else the sampler's fallback.
static __device__ __forceinline__ Sample nonFiniteLookup(const DtexDeviceContext& ctx,
                                                         uint32_t texture)
{
    float4 c;
    switch (baseColor(ctx, texture, &c)) {
    case BaseColorState::Color: return makeSample(c, true);
    case BaseColorState::NotResident:
        return makeSample(make_float4(0.0f, 0.0f, 0.0f, 0.0f), false);
    default: break;
    }
    const DtexTextureSampler* smp = nullptr;
    Sample answer;
    if (!resolveSampler(ctx, texture, &smp, &answer))
        return answer;
    return makeSample(make_float4(smp->fallback_color[0], smp->fallback_color[1],
                                  smp->fallback_color[2], smp->fallback_color[3]),
                      true);
}

/// `tex2DLod` as a `Sample` (see the header comment).
static __device__ __forceinline__ Sample sampleLod(const DtexDeviceContext& ctx, uint32_t texture,
                                                   float s, float t, float lod,
                                                   const SampleOptions& options)
{
    if (texture >= ctx.max_textures)
        return makeSample(defaultFallbackColor(), true);
    if (!(isFinite(s) && isFinite(t) && isFinite(lod)))
        return nonFiniteLookup(ctx, texture);
    const DtexTextureSampler* smp = nullptr;
    Sample answer;
    if (!resolveSampler(ctx, texture, &smp, &answer))
        return answer;
    return filterFootprint(ctx, texture, *smp, s, t, isotropicFootprint(lod), options);
}

/// `tex2DGrad` as a `Sample` (see the header comment).
static __device__ __forceinline__ Sample sampleGrad(const DtexDeviceContext& ctx,
                                                    uint32_t texture, float s, float t,
                                                    float2 ddx, float2 ddy,
                                                    const SampleOptions& options)
{
    if (texture >= ctx.max_textures)
        return makeSample(defaultFallbackColor(), true);
    if (!(isFinite(s) && isFinite(t) && isFinite(ddx.x) && isFinite(ddx.y) && isFinite(ddy.x) &&
          isFinite(ddy.y)))
        return nonFiniteLookup(ctx, texture);
    const float lenX = __fadd_rn(__fmul_rn(ddx.x, ddx.x), __fmul_rn(ddx.y, ddx.y));
    const float lenY = __fadd_rn(__fmul_rn(ddy.x, ddy.x), __fmul_rn(ddy.y, ddy.y));
    const bool wholeTexture = fminf(lenX, lenY) >= 1.0f;
    if (wholeTexture) {
        float4 c;
        switch (baseColor(ctx, texture, &c)) {
        case BaseColorState::Color: return makeSample(c, true);
        case BaseColorState::NotResident:
            return makeSample(make_float4(0.0f, 0.0f, 0.0f, 0.0f), false);
        default: break;
        }
    }
    const DtexTextureSampler* smp = nullptr;
    Sample answer;
    if (!resolveSampler(ctx, texture, &smp, &answer))
        return answer;
    const Footprint fp =
        wholeTexture ? isotropicFootprint(__int_as_float(0x7F800000))  // the coarsest level
                     : footprintFromGradients(ddx, ddy, smp->width, smp->height,
                                              options.stochastic ? 1u : smp->max_anisotropy);
    return filterFootprint(ctx, texture, *smp, s, t, fp, options);
}

/// Converts a lookup's RGBA to the result type `T` of `tex2D`, `tex2DLod`, `tex2DGrad` and
/// `tex2DGradUdim`: only `float4`, `float2` and `float` are provided.
template <class T>
struct ResultType {
    static_assert(sizeof(T) == 0,
                  "dtex: the result type of tex2D/tex2DLod/tex2DGrad must be float, float2 or "
                  "float4");
};

/// RGBA.
template <>
struct ResultType<float4> {
    /// The value itself.
    static __device__ __forceinline__ float4 from(float4 v) { return v; }
};

/// The first two channels.
template <>
struct ResultType<float2> {
    /// (r, g).
    static __device__ __forceinline__ float2 from(float4 v) { return make_float2(v.x, v.y); }
};

/// The first channel.
template <>
struct ResultType<float> {
    /// r.
    static __device__ __forceinline__ float from(float4 v) { return v.x; }
};

/// Write the residency (if `isResident` is not null) and convert the value.
template <class T>
static __device__ __forceinline__ T finish(const Sample& sample, bool* isResident)
{
    if (isResident != nullptr)
        *isResident = sample.resident;
    return ResultType<T>::from(sample.value);
}

/// Sample `texture` at (s, t) and an explicit level of detail `lod` (0 = finest; isotropic;
/// fractions blend levels with a linear mip filter). `*isResident`: whether every page the
/// lookup needed was resident.
template <class T>
static __device__ __forceinline__ T tex2DLod(const DtexDeviceContext& ctx, uint32_t texture,
                                             float s, float t, float lod, bool* isResident,
                                             const SampleOptions& options = SampleOptions())
{
    return finish<T>(sampleLod(ctx, texture, s, t, lod, options), isResident);
}

/// Sample level 0 of `texture` at (s, t): `tex2DLod` at lod 0.
template <class T>
static __device__ __forceinline__ T tex2D(const DtexDeviceContext& ctx, uint32_t texture, float s,
                                          float t, bool* isResident,
                                          const SampleOptions& options = SampleOptions())
{
    return finish<T>(sampleLod(ctx, texture, s, t, 0.0f, options), isResident);
}

/// Sample `texture` at (s, t) over the footprint of the screen-space gradients
/// `ddx` = d(s, t)/dx and `ddy` = d(s, t)/dy (trilinear, anisotropic up to the texture's
/// `max_anisotropy`; see the header comment). `*isResident`: whether every page the lookup
/// needed was resident.
template <class T>
static __device__ __forceinline__ T tex2DGrad(const DtexDeviceContext& ctx, uint32_t texture,
                                              float s, float t, float2 ddx, float2 ddy,
                                              bool* isResident,
                                              const SampleOptions& options = SampleOptions())
{
    return finish<T>(sampleGrad(ctx, texture, s, t, ddx, ddy, options), isResident);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_TEXTURE_CUH
