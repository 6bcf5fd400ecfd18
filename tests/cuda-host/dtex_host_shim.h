/*
 * Host emulation of the CUDA built-ins that the device headers (include/demandtex/device/)
 * use, so that a host C++17 compiler can compile and run them: one thread, a "warp" of one
 * lane, plain memory for atomics, and texture objects that are pointers to host arrays
 * (`DtexHostTexture`). Include it before any device header:
 *
 *   #include "dtex_host_shim.h"
 *   #include <demandtex/device/ptex.cuh>
 *
 * Compile with `-std=c++17 -ffp-contract=off` (no fused multiply-adds) on a target whose
 * `float` arithmetic is IEEE single precision (x86-64 SSE, AArch64): the `__f*_rn`
 * intrinsics are then exactly the device's. `log2f` and the other libm functions are the
 * host's (the device's may differ in the last bit). What is not emulated: warps of more than
 * one lane, concurrency, and texture filtering -- only point reads of level 0 through
 * `tex2DLod<uint4>` (how ptex.cuh reads its pages); every other texture fetch aborts.
 * See README.md beside this file.
 */
#ifndef DTEX_HOST_SHIM_H
#define DTEX_HOST_SHIM_H

// The device headers replace their inline PTX (`%laneid`, `cvt.f32.f16`) by the functions
// below when this is defined.
#define DTEX_DEVICE_HOST_EMULATION 1

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- Keywords -------------------------------------------------------------------------
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
// The device headers' out-of-line marker (`__noinline__` in CUDA; ptex_units.cuh defines it
// only if unset). `__noinline__` itself is not defined: glibc and libstdc++ use that name in
// their own attributes. `inline`: no "defined but not used" warnings where a header's
// functions are not called.
#define DTEX_NOINLINE inline __attribute__((noinline))

// ---- Vector types ---------------------------------------------------------------------
/// CUDA's `float2` (8-byte aligned).
struct alignas(8) float2 {
    float x, y;
};
/// CUDA's `float4` (16-byte aligned).
struct alignas(16) float4 {
    float x, y, z, w;
};
/// CUDA's `uint3` (the type of `blockIdx` and `threadIdx`).
struct uint3 {
    unsigned int x, y, z;
};
/// CUDA's `uint4` (16-byte aligned).
struct alignas(16) uint4 {
    unsigned int x, y, z, w;
};
/// CUDA's `dim3` (the type of `blockDim` and `gridDim`).
struct dim3 {
    unsigned int x, y, z;
};

inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
    return uint4{x, y, z, w};
}

// ---- Launch geometry: one block of one thread -------------------------------------------
inline constexpr uint3 threadIdx{0u, 0u, 0u};
inline constexpr uint3 blockIdx{0u, 0u, 0u};
inline constexpr dim3 blockDim{1u, 1u, 1u};
inline constexpr dim3 gridDim{1u, 1u, 1u};

// ---- Float intrinsics: IEEE single precision, round to nearest even ---------------------
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __uint2float_rn(unsigned int x) { return static_cast<float>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }

/// Float to unsigned, rounding toward zero, saturating (PTX `cvt.rzi.u32.f32`: NaN -> 0).
inline unsigned int __float2uint_rz(float x)
{
    if (!(x > 0.0f))
        return 0u;
    if (x >= 4294967296.0f)
        return 0xFFFFFFFFu;
    return static_cast<unsigned int>(x);
}

/// Float to signed 64-bit, rounding toward zero, saturating (PTX `cvt.rzi.s64.f32`: NaN -> 0).
inline long long __float2ll_rz(float x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775808.0f)
        return INT64_MAX;
    if (x < -9223372036854775808.0f)
        return INT64_MIN;
    return static_cast<long long>(x);
}

inline float __int_as_float(int x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
inline float __uint_as_float(unsigned int x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
inline unsigned int __float_as_uint(float x)
{
    unsigned int u;
    memcpy(&u, &x, sizeof u);
    return u;
}
inline int __float_as_int(float x)
{
    int i;
    memcpy(&i, &x, sizeof i);
    return i;
}

// ---- Integer intrinsics -----------------------------------------------------------------
/// 1 + the index of the least significant set bit; 0 for 0.
inline int __ffs(int x) { return __builtin_ffs(x); }

/// The high 32 bits of (`hi`:`lo`) << (`shift` & 31).
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift)
{
    const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned int>((v << (shift & 31u)) >> 32);
}

// ---- Warp intrinsics: a warp of one lane (lane 0) ----------------------------------------
inline unsigned int __activemask() { return 1u; }

/// The lanes of `mask` holding the same value: lane 0 alone.
template <class T>
inline unsigned int __match_any_sync(unsigned int mask, T) { return mask & 1u; }

/// Lane `srcLane`'s `var`: lane 0's, the only one.
template <class T>
inline T __shfl_sync(unsigned int, T var, int, int = 32) { return var; }

inline void __syncwarp(unsigned int = 0xFFFFFFFFu) {}

/// `%laneid` (paging.cuh's `laneId` under DTEX_DEVICE_HOST_EMULATION).
inline unsigned int dtexHostLaneId() { return 0u; }

/// IEEE binary16 bits as a float, exactly (normals, denormals, zeros, infinities; NaN
/// payloads kept, as core's `values::half_to_f32`); paging.cuh's `halfBitsToFloat` under
/// DTEX_DEVICE_HOST_EMULATION, in place of PTX `cvt.f32.f16`.
inline float dtexHostHalfBitsToFloat(unsigned short h)
{
    const unsigned int sign = static_cast<unsigned int>(h & 0x8000u) << 16;
    const unsigned int magnitude = h & 0x7FFFu;
    unsigned int bits;
    if (magnitude < 0x0400u)  // zero or denormal: magnitude x 2^-24, exact in float
        bits = __float_as_uint(static_cast<float>(magnitude) * (1.0f / 16777216.0f));
    else if (magnitude >= 0x7C00u)  // infinity or NaN: exponent 31 -> 255
        bits = (magnitude << 13) + 0x70000000u;
    else  // normal: exponent bias 15 -> 127
        bits = (magnitude << 13) + 0x38000000u;
    return __uint_as_float(sign | bits);
}

// ---- Atomics on plain memory (one thread: nothing races) ---------------------------------
inline unsigned int atomicOr(unsigned int* p, unsigned int v)
{
    const unsigned int old = *p;
    *p = old | v;
    return old;
}
inline unsigned int atomicAnd(unsigned int* p, unsigned int v)
{
    const unsigned int old = *p;
    *p = old & v;
    return old;
}
inline unsigned int atomicAdd(unsigned int* p, unsigned int v)
{
    const unsigned int old = *p;
    *p = old + v;
    return old;
}
inline unsigned int atomicCAS(unsigned int* p, unsigned int compare, unsigned int v)
{
    const unsigned int old = *p;
    if (old == compare)
        *p = v;
    return old;
}

// ---- Textures ---------------------------------------------------------------------------
typedef unsigned long long cudaTextureObject_t;

/// What a texture object addresses in the emulation: one level of `width x height` texels
/// of 16 bytes, row-major. The object is `reinterpret_cast<cudaTextureObject_t>(&texture)`.
struct DtexHostTexture {
    /// Texels across.
    uint32_t width;
    /// Texels down.
    uint32_t height;
    /// `width * height` texels.
    const uint4* texels;
};

/// A fetch the emulation does not provide: report it and abort.
[[noreturn]] inline void dtexHostUnsupportedFetch(const char* what)
{
    fprintf(stderr, "dtex_host_shim: %s is not emulated on the host\n", what);
    abort();
}

/// Texture fetches with an explicit level: only `uint4` (below) is emulated.
template <class T>
inline T tex2DLod(cudaTextureObject_t, float, float, float)
{
    dtexHostUnsupportedFetch("tex2DLod of this type");
}

/// A point read of level 0 of a `DtexHostTexture`: texel (floor(s * width),
/// floor(t * height)), computed in float. Any other level, or a texel outside the texture
/// (which a correct caller never reads: ptex.cuh reads texel centres), aborts.
template <>
inline uint4 tex2DLod<uint4>(cudaTextureObject_t object, float s, float t, float lod)
{
    const DtexHostTexture* tex = reinterpret_cast<const DtexHostTexture*>(object);
    const float x = floorf(s * static_cast<float>(tex->width));
    const float y = floorf(t * static_cast<float>(tex->height));
    if (lod != 0.0f || !(x >= 0.0f && x < static_cast<float>(tex->width)) ||
        !(y >= 0.0f && y < static_cast<float>(tex->height))) {
        fprintf(stderr, "dtex_host_shim: tex2DLod<uint4>(%.9g, %.9g, lod %g) outside %ux%u\n",
                static_cast<double>(s), static_cast<double>(t), static_cast<double>(lod),
                tex->width, tex->height);
        abort();
    }
    return tex->texels[static_cast<size_t>(y) * tex->width + static_cast<size_t>(x)];
}

/// Declared for the headers; never emulated.
template <class T>
inline T tex2DGrad(cudaTextureObject_t, float, float, float2, float2)
{
    dtexHostUnsupportedFetch("tex2DGrad");
}

/// Declared for the headers; never emulated.
template <class T>
inline T tex2D(cudaTextureObject_t, float, float)
{
    dtexHostUnsupportedFetch("tex2D");
}

#endif  // DTEX_HOST_SHIM_H
