/*
 * demandtex device API: lat-long environment lookups by direction.
 *
 *   float4 c = dtex::environment<float4>(ctx, textureId, R, dRdx, dRdy, &resident);
 *
 * The semantics are the engine's `environment` (core/src/sampling/environment.rs), which are
 * OpenImageIO 2.4's `TextureSystem::environment` with bilinear interpolation: the direction
 * `R` (any length) maps to lat-long (s, t) with the north pole on +y (`DTEX_UP_AXIS_Y`, the
 * default) or +z (`DTEX_UP_AXIS_Z`); the footprint is the angles between `R` and `R + dRdx`,
 * `R + dRdy`; the shorter one picks two levels and their blend, the longer one adds probes
 * (up to the texture's `max_anisotropy`), each probe an isotropic lookup at that level of
 * detail. Residency, requests and misses are those of `tex2DLod` (texture.cuh), with the
 * environment's address modes (periodic in s, clamped in t) for the pages touched.
 *
 * One difference from the CPU: the hardware filters with the texture object's own address
 * modes, so create environment maps with `DTEX_ADDRESS_WRAP` in s and `DTEX_ADDRESS_CLAMP`
 * in t for the seam and the poles to match (the CPU overrides the modes itself). The
 * trigonometry is CUDA's `atan2f`, `hypotf` and `acosf`, a few ulps from the host's.
 */
#ifndef DEMANDTEX_DEVICE_ENVIRONMENT_CUH
#define DEMANDTEX_DEVICE_ENVIRONMENT_CUH

#include "texture.cuh"

namespace dtex {

/// The dot product, in the engine's order and rounding.
static __device__ __forceinline__ float envDot(float3 a, float3 b)
{
    return __fadd_rn(__fadd_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)), __fmul_rn(a.z, b.z));
}

/// `v` divided by its length (unchanged if the length is 0), as Imath's `normalize`.
static __device__ __forceinline__ float3 envNormalized(float3 v)
{
    const float l = __fsqrt_rn(envDot(v, v));
    if (l == 0.0f)
        return v;
    return make_float3(__fdiv_rn(v.x, l), __fdiv_rn(v.y, l), __fdiv_rn(v.z, l));
}

/// `a + b`.
static __device__ __forceinline__ float3 envAdd(float3 a, float3 b)
{
    return make_float3(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z));
}

/// The angle between unit vectors, `acos` clamped (OpenImageIO's `safe_acos`).
static __device__ __forceinline__ float envAngle(float3 a, float3 b)
{
    const float c = envDot(a, b);
    if (c <= -1.0f)
        return 3.14159265358979323846f;
    if (c >= 1.0f)
        return 0.0f;
    return acosf(c);
}

/// The lat-long coordinates of direction `r` (OpenImageIO's `vector_to_latlong`); NaN
/// coordinates become 0.
static __device__ __forceinline__ float2 latlong(float3 r, uint32_t upAxis)
{
    const float pi = 3.14159265358979323846f;
    float s, t;
    if (upAxis == DTEX_UP_AXIS_Z) {
        s = __fadd_rn(__fdiv_rn(atan2f(r.y, r.x), __fmul_rn(2.0f, pi)), 0.5f);
        t = __fsub_rn(0.5f, __fdiv_rn(atan2f(r.z, hypotf(r.x, r.y)), pi));
    } else {
        s = __fadd_rn(__fdiv_rn(atan2f(-r.x, r.z), __fmul_rn(2.0f, pi)), 0.5f);
        t = __fsub_rn(0.5f, __fdiv_rn(atan2f(r.y, hypotf(r.z, -r.x)), pi));
    }
    return make_float2(s != s ? 0.0f : s, t != t ? 0.0f : t);
}

/// The level of detail at which a footprint `width` radians across is sampled on a lat-long
/// map with the levels of `smp` (the engine's `latlong_lod`).
static __device__ __forceinline__ float latlongLod(const DtexTextureSampler& smp, float width)
{
    const uint32_t levels = smp.num_levels > 0u ? smp.num_levels : 1u;
    for (uint32_t m = 0; m < levels; ++m) {
        // A float product, times the double 1/pi, back to float (OpenImageIO's precision).
        const float raster = static_cast<float>(
            static_cast<double>(__fmul_rn(__uint2float_rn(smp.levels[m].height), width)) *
            0.31830988618379067154);
        if (raster <= 1.0f) {
            if (m == 0u)
                return 0.0f;
            const float blend = fminf(fmaxf(__fsub_rn(__fmul_rn(2.0f, raster), 1.0f), 0.0f), 1.0f);
            return __fadd_rn(__uint2float_rn(m - 1u), blend);
        }
    }
    return __uint2float_rn(levels - 1u);
}

/// `environment` as a `Sample` (see the header comment).
static __device__ __forceinline__ Sample sampleEnvironment(const DtexDeviceContext& ctx,
                                                           uint32_t texture, float3 r,
                                                           float3 drdx, float3 drdy,
                                                           uint32_t upAxis,
                                                           const SampleOptions& options)
{
    if (texture >= ctx.max_textures)
        return makeSample(defaultFallbackColor(), true);
    if (!(isFinite(r.x) && isFinite(r.y) && isFinite(r.z) && isFinite(drdx.x) &&
          isFinite(drdx.y) && isFinite(drdx.z) && isFinite(drdy.x) && isFinite(drdy.y) &&
          isFinite(drdy.z)))
        return nonFiniteLookup(ctx, texture);
    const DtexTextureSampler* found = nullptr;
    Sample answer;
    if (!resolveSampler(ctx, texture, &found, &answer))
        return answer;
    // The environment's address modes for the pages touched.
    DtexTextureSampler smp = *found;
    smp.address_s = DTEX_ADDRESS_WRAP;
    smp.address_t = DTEX_ADDRESS_CLAMP;
    const float3 rn = envNormalized(r);
    const float3 rx = envNormalized(envAdd(r, drdx));
    const float3 ry = envNormalized(envAdd(r, drdy));
    const float xfilt = fmaxf(envAngle(rn, rx), 1e-8f);
    const float yfilt = fmaxf(envAngle(rn, ry), 1e-8f);
    const bool xMajor = xfilt >= yfilt;
    const float3 rMajor = xMajor ? rx : ry;
    const float major = xMajor ? xfilt : yfilt;
    float minor = xMajor ? yfilt : xfilt;
    const float maxAniso = __uint2float_rn(smp.max_anisotropy > 0u ? smp.max_anisotropy : 1u);
    float aspect = fminf(fmaxf(__fdiv_rn(major, minor), 1.0f), 1.0e6f);
    if (aspect > maxAniso) {
        aspect = maxAniso;
        minor = __fdiv_rn(__fmul_rn(0.5f, __fadd_rn(major, __fmul_rn(minor, maxAniso))), maxAniso);
    }
    const float probesF = ceilf(__fsub_rn(aspect, 0.25f));
    const uint32_t probes = probesF > 1.0f ? static_cast<uint32_t>(probesF) : 1u;
    const Footprint fp = isotropicFootprint(latlongLod(smp, minor));
    const float step = __fdiv_rn(1.0f, __uint2float_rn(probes));
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    bool resident = true, coarser = false;
    float pos = __fadd_rn(-0.5f, __fmul_rn(0.5f, step));
    for (uint32_t k = 0; k < probes; ++k) {
        const float3 dir = envAdd(
            rn, make_float3(__fmul_rn(pos, rMajor.x), __fmul_rn(pos, rMajor.y), __fmul_rn(pos, rMajor.z)));
        pos = __fadd_rn(pos, step);
        const float2 st = latlong(dir, upAxis);
        const Sample p = filterFootprint(ctx, texture, smp, st.x, st.y, fp, options);
        sum.x = __fadd_rn(sum.x, __fmul_rn(p.value.x, step));
        sum.y = __fadd_rn(sum.y, __fmul_rn(p.value.y, step));
        sum.z = __fadd_rn(sum.z, __fmul_rn(p.value.z, step));
        sum.w = __fadd_rn(sum.w, __fmul_rn(p.value.w, step));
        resident = resident && p.resident;
        coarser = coarser || p.coarser;
    }
    Sample out = makeSample(sum, resident);
    out.coarser = coarser;
    return out;
}

/// Sample lat-long environment map `texture` in direction `r` (any length) with its
/// screen-space differentials `drdx`, `drdy`; `upAxis` `DTEX_UP_AXIS_Y` (OpenImageIO's
/// default) or `DTEX_UP_AXIS_Z`. `*isResident`: whether every page the lookup needed was
/// resident. See the header comment.
template <class T>
static __device__ __forceinline__ T environment(const DtexDeviceContext& ctx, uint32_t texture,
                                                float3 r, float3 drdx, float3 drdy,
                                                bool* isResident,
                                                uint32_t upAxis = DTEX_UP_AXIS_Y,
                                                const SampleOptions& options = SampleOptions())
{
    return finish<T>(sampleEnvironment(ctx, texture, r, drdx, drdy, upAxis, options), isResident);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_ENVIRONMENT_CUH
