/*
 * demandtex device API: building the separable kernels of the Ptex quad filters (core's
 * `sampling::ptex::build`, the reference library's `PtexFilters.cpp`): box, bilinear, and
 * the width-4 family (Gaussian and the general cubic), with their choice of resolution
 * from the filter width and the `lerp` blend towards the next lower one. Arithmetic as in
 * ptex_kernel.cuh: explicit round-to-nearest, core's order.
 */
#ifndef DEMANDTEX_DEVICE_PTEX_BUILD_CUH
#define DEMANDTEX_DEVICE_PTEX_BUILD_CUH

#include "ptex_kernel.cuh"

namespace dtex {


/// The reference's `calcResFromWidth`: `ceil(log2(1 / w))` read from the float's exponent.
static __device__ __forceinline__ int ptexResFromWidth(float w)
{
    return 127 - static_cast<int>((__float_as_uint(w) >> 23) & 0xFFu);
}

/// `1 / 2^power` as the reference's `reciprocalPow2`.
static __device__ __forceinline__ float ptexReciprocalPow2(int power)
{
    const int e = ptexClampInt(127 - power, 1, 254);
    return __uint_as_float(static_cast<uint32_t>(e) << 23);
}

/// One axis of a box or bilinear kernel: its resolution log2, first texel and weights (at
/// most three, no zero weight at either end).
struct PtexSmallAxis {
    int log2;
    int start;
    float w[3];
    int n;
};

/// The resolution log2 (0 .. face) for filter width `w` clamped to [1 texel, 1]; `*wc` the
/// clamped width.
static __device__ __forceinline__ int ptexClampedRes(float w, int face_log2, float* wc)
{
    w = fmaxf(fminf(w, 1.0f), ptexReciprocalPow2(face_log2));
    *wc = w;
    return ptexClampInt(ptexResFromWidth(w), 0, face_log2);
}

/// One axis of the box kernel at `c` (face uv) for width `w` on a face of `face_log2`.
static __device__ __forceinline__ PtexSmallAxis ptexBoxAxis(float c, float w, int face_log2)
{
    PtexSmallAxis a;
    a.log2 = ptexClampedRes(w, face_log2, &w);
    const float r = __int2float_rn(1 << a.log2);
    c = __fmul_rn(c, r);
    w = __fmul_rn(w, r);
    const float c1 = __fsub_rn(c, __fmul_rn(0.5f, w)), c2 = __fadd_rn(c, __fmul_rn(0.5f, w));
    const float f = floorf(c1), cl = ceilf(c2);
    a.start = static_cast<int>(f);
    a.n = ptexClampInt(static_cast<int>(cl) - a.start, 1, 3);
    const float f1 = __fsub_rn(1.0f, __fsub_rn(c1, f)), f2 = __fsub_rn(1.0f, __fsub_rn(cl, c2));
    a.w[0] = a.w[1] = a.w[2] = 0.0f;
    if (a.n == 1) {
        a.w[0] = __fsub_rn(__fadd_rn(f1, f2), 1.0f);
    } else {
        a.w[0] = f1;
        if (a.n == 3)
            a.w[1] = 1.0f;
        a.w[a.n - 1] = f2;
    }
    return a;
}

/// One axis of the bilinear kernel at `c` (face uv) for width `w` on a face of `face_log2`.
static __device__ __forceinline__ PtexSmallAxis ptexBilinearAxis(float c, float w, int face_log2)
{
    PtexSmallAxis a;
    a.log2 = ptexClampedRes(w, face_log2, &w);
    const float pix = __fsub_rn(__fmul_rn(c, __int2float_rn(1 << a.log2)), 0.5f);
    const float first = floorf(pix);
    const float frac = __fsub_rn(pix, first);
    a.start = static_cast<int>(first);
    a.w[0] = __fsub_rn(1.0f, frac);
    a.w[1] = frac;
    a.w[2] = 0.0f;
    a.n = frac == 0.0f ? 1 : 2;
    return a;
}

/// A kernel of two small axes.
template <int CAP>
static __device__ __forceinline__ void ptexKOfAxes(PtexKernel<CAP>* k, const PtexSmallAxis& au,
                                                   const PtexSmallAxis& av)
{
    ptexKInit(k, au.log2, av.log2);
    ptexKSetU(k, au.start, au.w, au.n);
    ptexKSetV(k, av.start, av.w, av.n);
}

/// The kernel function of a width-4 filter: the Gaussian (`cubic` false) or the general
/// cubic of seven coefficients.
struct PtexWidth4 {
    bool cubic;
    float c[7];
};

/// The width-4 kernel of a `DTEX_PTEX_FILTER_*` (Gaussian, bicubic of `sharpness`,
/// B-spline, Catmull-Rom, Mitchell).
static __device__ __forceinline__ PtexWidth4 ptexWidth4(uint32_t filter, float sharpness)
{
    PtexWidth4 f;
    f.cubic = filter != DTEX_PTEX_FILTER_GAUSSIAN;
    const float s = filter == DTEX_PTEX_FILTER_BSPLINE       ? 0.0f
                    : filter == DTEX_PTEX_FILTER_CATMULL_ROM ? 1.0f
                    : filter == DTEX_PTEX_FILTER_MITCHELL    ? 2.0f / 3.0f
                                                             : sharpness;
    const float b = __fsub_rn(1.0f, s);
    f.c[0] = __fsub_rn(1.5f, b);
    f.c[1] = __fsub_rn(__fmul_rn(1.5f, b), 2.5f);
    f.c[2] = __fsub_rn(1.0f, __fmul_rn(1.0f / 3.0f, b));
    f.c[3] = __fsub_rn(__fmul_rn(1.0f / 3.0f, b), 0.5f);
    f.c[4] = __fsub_rn(2.5f, __fmul_rn(1.5f, b));
    f.c[5] = __fsub_rn(__fmul_rn(2.0f, b), 4.0f);
    f.c[6] = __fsub_rn(2.0f, __fmul_rn(2.0f / 3.0f, b));
    return f;
}

static __device__ __forceinline__ float ptexWidth4Eval(const PtexWidth4& f, float x)
{
    if (!f.cubic)
        return static_cast<float>(exp(static_cast<double>(__fmul_rn(__fmul_rn(-2.0f, x), x))));
    x = fabsf(x);
    if (x < 1.0f)
        return __fadd_rn(__fmul_rn(__fmul_rn(__fadd_rn(__fmul_rn(f.c[0], x), f.c[1]), x), x),
                         f.c[2]);
    if (x < 2.0f)
        return __fadd_rn(
            __fmul_rn(__fadd_rn(__fmul_rn(__fadd_rn(__fmul_rn(f.c[3], x), f.c[4]), x), f.c[5]),
                      x),
            f.c[6]);
    return 0.0f;
}

/// The reference's 2-unit cubic Hermite blur.
static __device__ __forceinline__ float ptexBlur(float x)
{
    x = fabsf(x);
    return x < 1.0f ? __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(__fmul_rn(2.0f, x), 3.0f), x), x),
                                1.0f)
                    : 0.0f;
}

/// One axis of a width-4 kernel (`buildKernelAxis`): the resolution log2, first texel and
/// the number of weights written to `k`.
static __device__ __forceinline__ int ptexWidth4Axis(const PtexWidth4& f, bool lerp, float u,
                                                     float uw, int face_log2, float* k,
                                                     int* start)
{
    uw = fmaxf(uw, ptexReciprocalPow2(face_log2));
    int log2 = ptexClampInt(ptexResFromWidth(uw), 0, face_log2);
    const float resu = __int2float_rn(1 << log2);
    const float uwlo = __fdiv_rn(1.0f, resu);
    const float lerp2 = lerp ? __fdiv_rn(__fsub_rn(uw, uwlo), uwlo) : 0.0f;
    const float lerp1 = __fsub_rn(1.0f, lerp2);
    int n;
    if (uw >= 0.25f) {
        if (uw < 0.5f) {
            const float upix = __fsub_rn(__fmul_rn(u, 4.0f), 0.5f);
            const int u1 = static_cast<int>(ceilf(__fsub_rn(upix, 2.0f))) & ~1;
            const int u2 = (static_cast<int>(ceilf(__fadd_rn(upix, 2.0f))) + 1) & ~1;
            n = ptexClampInt(u2 - u1, 0, DTEX_PTEX_KMAX);
            const float x1 = __fsub_rn(__int2float_rn(u1), upix);
            const float s = __fdiv_rn(1.0f, __fadd_rn(uw, 0.75f));
            for (int i = 0; i < n; i += 2) {
                const float xa = __fadd_rn(x1, __int2float_rn(i)), xb = __fadd_rn(xa, 1.0f);
                const float xc = __fmul_rn(__fadd_rn(xa, xb), 0.25f);
                const float ka = ptexWidth4Eval(f, xa), kb = ptexWidth4Eval(f, xb);
                const float kc = ptexBlur(__fmul_rn(xc, s));
                k[i] = __fadd_rn(__fmul_rn(ka, lerp1), __fmul_rn(kc, lerp2));
                k[i + 1] = __fadd_rn(__fmul_rn(kb, lerp1), __fmul_rn(kc, lerp2));
            }
            *start = u1;
            return (2 << 8) | n;
        }
        if (uw < 1.0f) {
            const float upix = __fsub_rn(__fmul_rn(u, 2.0f), 0.5f);
            const int s0 = static_cast<int>(floorf(__fsub_rn(u, 0.5f))) * 2;
            const float x1 = __fsub_rn(__int2float_rn(s0), upix);
            const float s = __fdiv_rn(1.0f, __fadd_rn(__fmul_rn(uw, 1.5f), 0.5f));
            for (int i = 0; i < 4; i += 2) {
                const float xa = __fadd_rn(x1, __int2float_rn(i)), xb = __fadd_rn(xa, 1.0f);
                const float xc = __fmul_rn(__fadd_rn(xa, xb), 0.5f);
                const float ka = ptexBlur(__fmul_rn(xa, s)), kb = ptexBlur(__fmul_rn(xb, s));
                const float kc = ptexBlur(__fmul_rn(xc, s));
                k[i] = __fadd_rn(__fmul_rn(ka, lerp1), __fmul_rn(kc, lerp2));
                k[i + 1] = __fadd_rn(__fmul_rn(kb, lerp1), __fmul_rn(kc, lerp2));
            }
            *start = s0;
            return (1 << 8) | 4;
        }
        const float upix = __fsub_rn(u, 0.5f);
        const float ui = floorf(upix);
        k[0] = ptexBlur(__fsub_rn(upix, ui));
        k[1] = __fsub_rn(1.0f, k[0]);
        *start = static_cast<int>(ui);
        return 2;
    }
    const float upix = __fsub_rn(__fmul_rn(u, resu), 0.5f);
    const float uwpix = __fmul_rn(uw, resu);
    const float dupix = __fmul_rn(2.0f, uwpix);
    int u1 = static_cast<int>(ceilf(__fsub_rn(upix, dupix)));
    int u2 = static_cast<int>(ceilf(__fadd_rn(upix, dupix)));
    const float step = __fdiv_rn(1.0f, uwpix);
    if (lerp2 != 0.0f) {
        u1 &= ~1;
        u2 = (u2 + 1) & ~1;
        n = ptexClampInt(u2 - u1, 0, DTEX_PTEX_KMAX);
        const float x1 = __fmul_rn(__fsub_rn(__int2float_rn(u1), upix), step);
        for (int i = 0; i < n; i += 2) {
            const float xa = __fadd_rn(x1, __fmul_rn(__int2float_rn(i), step));
            const float xb = __fadd_rn(xa, step);
            const float xc = __fmul_rn(__fadd_rn(xa, xb), 0.5f);
            const float ka = ptexWidth4Eval(f, xa), kb = ptexWidth4Eval(f, xb);
            const float kc = ptexWidth4Eval(f, xc);
            k[i] = __fadd_rn(__fmul_rn(ka, lerp1), __fmul_rn(kc, lerp2));
            k[i + 1] = __fadd_rn(__fmul_rn(kb, lerp1), __fmul_rn(kc, lerp2));
        }
    } else {
        n = ptexClampInt(u2 - u1, 0, DTEX_PTEX_KMAX);
        const float x1 = __fdiv_rn(__fsub_rn(__int2float_rn(u1), upix), uwpix);
        for (int i = 0; i < n; ++i)
            k[i] = ptexWidth4Eval(f, __fadd_rn(x1, __fmul_rn(__int2float_rn(i), step)));
    }
    *start = u1;
    return (log2 << 8) | n;
}

/// The width-4 kernel at (`u`, `v`) of widths `uw`, `vw` on a face of (`ulog2`, `vlog2`).
template <int CAP>
static __device__ __forceinline__ void ptexKWidth4(PtexKernel<CAP>* k, const PtexWidth4& f,
                                                   bool lerp, float u, float v, float uw, float vw,
                                                   int ulog2, int vlog2)
{
    float w[DTEX_PTEX_KMAX];
    int start;
    const int ru = ptexWidth4Axis(f, lerp, u, uw, ulog2, w, &start);
    ptexKInit(k, ru >> 8, 0);
    ptexKSetU(k, start, w, ru & 0xFF);
    const int rv = ptexWidth4Axis(f, lerp, v, vw, vlog2, w, &start);
    k->vlog2 = rv >> 8;
    ptexKSetV(k, start, w, rv & 0xFF);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_BUILD_CUH
