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
 * host's (the device's may differ in the last bit). Texture fetches: point reads of level 0
 * through `tex2DLod<uint4>` (how ptex.cuh reads its pages), and filtered reads of a mip chain
 * through `tex2DLod<float4>` (how texture.cuh reads a texture: `DtexHostMipTexture`), with
 * exact float weights where the hardware quantises them. What is not emulated: warps of more
 * than one lane, concurrency, and every other texture fetch (which aborts). See README.md
 * beside this file.
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

/// CUDA's `float3`.
struct float3 {
    float x, y, z;
};

inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
    return uint4{x, y, z, w};
}

// ---- Launch geometry: blocks of one thread ----------------------------------------------
// One block by default. A kernel's grid is emulated by setting `gridDim` and calling the
// kernel once per `blockIdx` (`dtexHostLaunch`), in order.
inline constexpr uint3 threadIdx{0u, 0u, 0u};
inline uint3 blockIdx{0u, 0u, 0u};
inline constexpr dim3 blockDim{1u, 1u, 1u};
inline dim3 gridDim{1u, 1u, 1u};

/// Run `kernel(args...)` over a grid of `blocks` one-thread blocks, one block after the
/// other; the geometry is one block again afterwards.
template <class Kernel, class... Args>
inline void dtexHostLaunch(unsigned int blocks, Kernel kernel, Args... args)
{
    gridDim = dim3{blocks, 1u, 1u};
    for (unsigned int b = 0; b < blocks; ++b) {
        blockIdx = uint3{b, 0u, 0u};
        kernel(args...);
    }
    gridDim = dim3{1u, 1u, 1u};
    blockIdx = uint3{0u, 0u, 0u};
}

/// Block-shared memory: one block runs at a time, so one copy serves every block (a
/// kernel initialises what it reads, as on the device).
#define __shared__ static

/// A block of one thread has nothing to wait for.
inline void __syncthreads() {}

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

/// The set bits of `x`.
inline int __popc(unsigned int x) { return __builtin_popcount(x); }

/// The leading zero bits of `x` (32 for 0).
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }

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

/// Lane `laneId - delta`'s `var`, or this lane's below lane `delta`: lane 0's own.
template <class T>
inline T __shfl_up_sync(unsigned int, T var, unsigned int, int = 32) { return var; }

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

/// One level of a `DtexHostMipTexture`: `width x height` texels, row-major, each the four
/// components the hardware returns for the texel ("normalised float" read mode: 8- and
/// 16-bit unsigned components divided by 255 and 65535; halfs and floats as they are;
/// absent components 0, alpha 1).
struct DtexHostMipLevel {
    uint32_t width;
    uint32_t height;
    const float4* texels;
};

/// What the object of a `tex2DLod<float4>` fetch addresses: a mip-mapped texture with the
/// texture object settings texture.cuh's header asks for -- normalised coordinates, address
/// modes `addressS`/`addressT` (`DTEX_ADDRESS_WRAP`, `CLAMP`, `MIRROR`, `BORDER` with a
/// transparent black border), filter mode `filter` (`DTEX_FILTER_POINT` or `LINEAR`), a
/// linear mip filter with the levels clamped to [0, numLevels - 1], no trilinear
/// optimisation.
struct DtexHostMipTexture {
    uint32_t numLevels;
    uint32_t addressS;
    uint32_t addressT;
    uint32_t filter;
    /// Finest first; `numLevels` of them.
    const DtexHostMipLevel* levels;
};

/// Texel index `i` of a side of `n` texels under address mode `mode` (0..3 as
/// `DTEX_ADDRESS_*`); -1 for the border.
inline int64_t dtexHostAddress(int64_t i, int64_t n, uint32_t mode)
{
    switch (mode) {
    case 0: {  // wrap
        const int64_t m = i % n;
        return m < 0 ? m + n : m;
    }
    case 2: {  // mirror
        int64_t m = i % (2 * n);
        if (m < 0)
            m += 2 * n;
        return m < n ? m : 2 * n - 1 - m;
    }
    case 3:  // border
        return i < 0 || i >= n ? -1 : i;
    default:  // clamp
        return i < 0 ? 0 : (i >= n ? n - 1 : i);
    }
}

/// Texel (x, y) of `level` under the texture's address modes (transparent black outside a
/// border).
inline float4 dtexHostTexel(const DtexHostMipTexture& tex, const DtexHostMipLevel& level,
                            int64_t x, int64_t y)
{
    const int64_t ax = dtexHostAddress(x, level.width, tex.addressS);
    const int64_t ay = dtexHostAddress(y, level.height, tex.addressT);
    if (ax < 0 || ay < 0)
        return float4{0.0f, 0.0f, 0.0f, 0.0f};
    return level.texels[static_cast<size_t>(ay) * level.width + static_cast<size_t>(ax)];
}

/// Level `l` of `tex` filtered at (s, t): the nearest texel, or the bilinear blend of the
/// four around (s * width - 0.5, t * height - 0.5) with exact float weights (the hardware's
/// are 8-bit fractions).
inline float4 dtexHostFilterLevel(const DtexHostMipTexture& tex, uint32_t l, float s, float t)
{
    const DtexHostMipLevel& level = tex.levels[l];
    const float w = static_cast<float>(level.width), h = static_cast<float>(level.height);
    if (tex.filter == 0u) {
        return dtexHostTexel(tex, level, static_cast<int64_t>(floorf(s * w)),
                             static_cast<int64_t>(floorf(t * h)));
    }
    const float x = s * w - 0.5f, y = t * h - 0.5f;
    const float fx = floorf(x), fy = floorf(y);
    const float a = x - fx, b = y - fy;
    const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    const float4 t00 = dtexHostTexel(tex, level, x0, y0);
    const float4 t10 = dtexHostTexel(tex, level, x0 + 1, y0);
    const float4 t01 = dtexHostTexel(tex, level, x0, y0 + 1);
    const float4 t11 = dtexHostTexel(tex, level, x0 + 1, y0 + 1);
    const float w00 = (1.0f - a) * (1.0f - b), w10 = a * (1.0f - b);
    const float w01 = (1.0f - a) * b, w11 = a * b;
    return float4{t00.x * w00 + t10.x * w10 + t01.x * w01 + t11.x * w11,
                  t00.y * w00 + t10.y * w10 + t01.y * w01 + t11.y * w11,
                  t00.z * w00 + t10.z * w10 + t01.z * w01 + t11.z * w11,
                  t00.w * w00 + t10.w * w10 + t01.w * w01 + t11.w * w11};
}

/// Texture fetches with an explicit level: `uint4` and `float4` (below) are emulated.
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

/// A filtered read of a `DtexHostMipTexture` at (s, t) and level of detail `lod`: `lod`
/// clamped to the levels, the levels on either side of it blended by its fraction (linear
/// mip filter), each filtered as `dtexHostFilterLevel` says. A NaN coordinate or level
/// aborts (a correct caller passes none).
template <>
inline float4 tex2DLod<float4>(cudaTextureObject_t object, float s, float t, float lod)
{
    const DtexHostMipTexture* tex = reinterpret_cast<const DtexHostMipTexture*>(object);
    if (s != s || t != t || lod != lod || tex->numLevels == 0u) {
        fprintf(stderr, "dtex_host_shim: tex2DLod<float4>(%g, %g, lod %g) of %u levels\n",
                static_cast<double>(s), static_cast<double>(t), static_cast<double>(lod),
                tex->numLevels);
        abort();
    }
    const float top = static_cast<float>(tex->numLevels - 1u);
    const float clamped = lod < 0.0f ? 0.0f : (lod > top ? top : lod);
    const uint32_t fine = static_cast<uint32_t>(floorf(clamped));
    const float f = clamped - static_cast<float>(fine);
    const float4 a = dtexHostFilterLevel(*tex, fine, s, t);
    if (f == 0.0f || fine + 1u >= tex->numLevels)
        return a;
    const float4 b = dtexHostFilterLevel(*tex, fine + 1u, s, t);
    return float4{a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f, a.z + (b.z - a.z) * f,
                  a.w + (b.w - a.w) * f};
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
