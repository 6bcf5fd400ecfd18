/*
 * demandtex device API: the separable kernels of the Ptex quad filters (core's
 * `sampling::ptex::kernel`, the reference library's `PtexSeparableKernel`): weights in u
 * and v over a window of texels of one resolution, and the operations that carry a kernel
 * across edges (split, fold back, rotate, change of resolution, subface transitions). The
 * builders are in ptex_build.cuh.
 *
 * Every operation rounds as core's does (explicit `__f*_rn` arithmetic: no multiply-add
 * contraction whatever the caller's `--fmad`), so a kernel built here has core's weights
 * to the bit, except the Gaussian's, which uses the device's double `exp`.
 *
 * `PtexKernel<CAP>` keeps its weights in two fixed arrays of `CAP` floats with a start
 * offset. Only a kernel at a resolution of one texel is ever doubled (`ptexKUpresU`: a
 * subface's kernel, then a step onto a subface), at most twice. The box and bilinear
 * filters make at most 3 weights per axis and use `CAP` 12. The width-4 filters make up to
 * `DTEX_PTEX_KMAX` (10), but at most 4 at one texel, and use `CAP` 20 (core keeps 40 for
 * every kernel; both clamp a doubling that would not fit, which no builder's kernel meets).
 */
#ifndef DEMANDTEX_DEVICE_PTEX_KERNEL_CUH
#define DEMANDTEX_DEVICE_PTEX_KERNEL_CUH

#include "footprint.cuh"

#ifndef DTEX_NOINLINE
/// Keeps the large steps of the Ptex filters out of line: inlining every call site of the
/// edge and corner walks multiplies the code (and NVRTC's memory) many times over.
#define DTEX_NOINLINE __noinline__
#endif

/// The most weights a builder makes along one axis (the reference's `kmax`).
#define DTEX_PTEX_KMAX 10

namespace dtex {

/// A separable kernel over texels `u .. u + uw`, `v .. v + vw` of resolution
/// (2^`ulog2`, 2^`vlog2`).
template <int CAP>
struct PtexKernel {
    int ulog2, vlog2;
    int u, v, uw, vw;
    /// Where the weights start in `ku` and `kv`.
    int ku0, kv0;
    /// Quarter turns applied so far (tangent-vector data).
    int rot;
    float ku[CAP];
    float kv[CAP];
};

/// Sum of `n` weights from `w`, in order (the reference's `accumulate`).
static __device__ __forceinline__ float ptexSum(const float* w, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; ++i)
        s = __fadd_rn(s, w[i]);
    return s;
}

/// An empty kernel at (`ulog2`, `vlog2`).
template <int CAP>
static __device__ __forceinline__ void ptexKInit(PtexKernel<CAP>* k, int ulog2, int vlog2)
{
    k->ulog2 = ulog2;
    k->vlog2 = vlog2;
    k->u = k->v = k->uw = k->vw = 0;
    k->ku0 = k->kv0 = 0;
    k->rot = 0;
}

/// The kernel's total weight, `sum(ku) * sum(kv)`.
template <int CAP>
static __device__ __forceinline__ float ptexKWeight(const PtexKernel<CAP>& k)
{
    return __fmul_rn(ptexSum(k.ku + k.ku0, k.uw > 0 ? k.uw : 0),
                     ptexSum(k.kv + k.kv0, k.vw > 0 ? k.vw : 0));
}

/// The most weights `ptexKSetU` takes: `DTEX_PTEX_KMAX`, or `CAP`.
template <int CAP>
static __device__ __forceinline__ int ptexKSetMax()
{
    return CAP < DTEX_PTEX_KMAX ? CAP : DTEX_PTEX_KMAX;
}

/// Set the u weights to the first `n` (at most `ptexKSetMax`) of `w`, starting at texel `u`.
template <int CAP>
static __device__ __forceinline__ void ptexKSetU(PtexKernel<CAP>* k, int u, const float* w, int n)
{
    n = n < ptexKSetMax<CAP>() ? n : ptexKSetMax<CAP>();
    for (int i = 0; i < n; ++i)
        k->ku[i] = w[i];
    k->ku0 = 0;
    k->u = u;
    k->uw = n;
}

/// Set the v weights to the first `n` (at most `ptexKSetMax`) of `w`, starting at texel `v`.
template <int CAP>
static __device__ __forceinline__ void ptexKSetV(PtexKernel<CAP>* k, int v, const float* w, int n)
{
    n = n < ptexKSetMax<CAP>() ? n : ptexKSetMax<CAP>();
    for (int i = 0; i < n; ++i)
        k->kv[i] = w[i];
    k->kv0 = 0;
    k->v = v;
    k->vw = n;
}

/// Drop zero weights at both ends (a kernel of only zeros keeps one weight).
template <int CAP>
static __device__ __forceinline__ void ptexKStripZeros(PtexKernel<CAP>* k)
{
    while (k->uw > 1 && k->ku[k->ku0] == 0.0f) {
        ++k->ku0;
        ++k->u;
        --k->uw;
    }
    while (k->uw > 1 && k->ku[k->ku0 + k->uw - 1] == 0.0f)
        --k->uw;
    while (k->vw > 1 && k->kv[k->kv0] == 0.0f) {
        ++k->kv0;
        ++k->v;
        --k->vw;
    }
    while (k->vw > 1 && k->kv[k->kv0 + k->vw - 1] == 0.0f)
        --k->vw;
}

/// `x` clamped into [lo, hi] (hi >= lo).
static __device__ __forceinline__ int ptexClampInt(int x, int lo, int hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/// Fold the weights `w` outside one end of an axis back into it (dropped for a black
/// border): core's `merge_l` / `merge_b` (`low` true) and `merge_r` / `merge_t`.
static __device__ __forceinline__ void ptexFoldLow(float* buf, int* k0, int* start, int* width,
                                                   uint32_t border)
{
    const int w = ptexClampInt(-*start, 0, *width > 0 ? *width : 0);
    const float s = ptexSum(buf + *k0, w);
    if (border != DTEX_PTEX_BORDER_BLACK && w < *width)
        buf[*k0 + w] = __fadd_rn(buf[*k0 + w], s);
    *k0 += w;
    *width -= w;
    *start = 0;
}

static __device__ __forceinline__ void ptexFoldHigh(float* buf, int k0, int start, int* width,
                                                    int res, uint32_t border)
{
    const int w = ptexClampInt(*width + start - res, 0, *width > 0 ? *width : 0);
    const int end = k0 + (*width > 0 ? *width : 0);
    const float s = ptexSum(buf + end - w, w);
    if (border != DTEX_PTEX_BORDER_BLACK && w > 0 && w < *width)
        buf[end - w - 1] = __fadd_rn(buf[end - w - 1], s);
    *width -= w;
}

template <int CAP>
static __device__ __forceinline__ void ptexKMergeL(PtexKernel<CAP>* k, uint32_t border)
{
    ptexFoldLow(k->ku, &k->ku0, &k->u, &k->uw, border);
}

template <int CAP>
static __device__ __forceinline__ void ptexKMergeR(PtexKernel<CAP>* k, uint32_t border)
{
    ptexFoldHigh(k->ku, k->ku0, k->u, &k->uw, 1 << k->ulog2, border);
}

template <int CAP>
static __device__ __forceinline__ void ptexKMergeB(PtexKernel<CAP>* k, uint32_t border)
{
    ptexFoldLow(k->kv, &k->kv0, &k->v, &k->vw, border);
}

template <int CAP>
static __device__ __forceinline__ void ptexKMergeT(PtexKernel<CAP>* k, uint32_t border)
{
    ptexFoldHigh(k->kv, k->kv0, k->v, &k->vw, 1 << k->vlog2, border);
}

/// A kernel at `k`'s resolution over a window of its weights (core's `Kernel::part`).
template <int CAP>
static __device__ __forceinline__ PtexKernel<CAP> ptexKPart(const PtexKernel<CAP>& k, int u, int v,
                                                            int ku0, int uw, int kv0, int vw)
{
    PtexKernel<CAP> p;
    ptexKInit(&p, k.ulog2, k.vlog2);
    uw = uw > 0 ? uw : 0;
    vw = vw > 0 ? vw : 0;
    for (int i = 0; i < uw; ++i)
        p.ku[i] = k.ku[ku0 + i];
    for (int i = 0; i < vw; ++i)
        p.kv[i] = k.kv[kv0 + i];
    p.u = u;
    p.v = v;
    p.uw = uw;
    p.vw = vw;
    return p;
}

/// Split off the part left of u = 0 (in the left neighbour's texel range).
template <int CAP>
static __device__ __forceinline__ PtexKernel<CAP> ptexKSplitL(PtexKernel<CAP>* k)
{
    const int w = -k->u, ru = 1 << k->ulog2;
    if (w < k->uw) {
        PtexKernel<CAP> p = ptexKPart(*k, ru - w, k->v, k->ku0, w, k->kv0, k->vw);
        k->u = 0;
        k->uw -= w;
        k->ku0 += w;
        return p;
    }
    PtexKernel<CAP> p = *k;
    p.u += ru;
    k->u = 0;
    k->uw = 0;
    return p;
}

/// Split off the part right of the face.
template <int CAP>
static __device__ __forceinline__ PtexKernel<CAP> ptexKSplitR(PtexKernel<CAP>* k)
{
    const int ru = 1 << k->ulog2, w = k->u + k->uw - ru;
    if (w < k->uw) {
        PtexKernel<CAP> p = ptexKPart(*k, 0, k->v, k->ku0 + (k->uw - w), w, k->kv0, k->vw);
        k->uw -= w;
        return p;
    }
    PtexKernel<CAP> p = *k;
    p.u -= ru;
    k->u = 0;
    k->uw = 0;
    return p;
}

/// Split off the part below v = 0.
template <int CAP>
static __device__ __forceinline__ PtexKernel<CAP> ptexKSplitB(PtexKernel<CAP>* k)
{
    const int w = -k->v, rv = 1 << k->vlog2;
    if (w < k->vw) {
        PtexKernel<CAP> p = ptexKPart(*k, k->u, rv - w, k->ku0, k->uw, k->kv0, w);
        k->v = 0;
        k->vw -= w;
        k->kv0 += w;
        return p;
    }
    PtexKernel<CAP> p = *k;
    p.v += rv;
    k->v = 0;
    k->vw = 0;
    return p;
}

/// Split off the part above the face.
template <int CAP>
static __device__ __forceinline__ PtexKernel<CAP> ptexKSplitT(PtexKernel<CAP>* k)
{
    const int rv = 1 << k->vlog2, w = k->v + k->vw - rv;
    if (w < k->vw) {
        PtexKernel<CAP> p = ptexKPart(*k, k->u, 0, k->ku0, k->uw, k->kv0 + (k->vw - w), w);
        k->vw -= w;
        return p;
    }
    PtexKernel<CAP> p = *k;
    p.v -= rv;
    k->v = 0;
    k->vw = 0;
    return p;
}

/// Reverse `n` weights of `buf` from `at`.
static __device__ __forceinline__ void ptexReverse(float* buf, int at, int n)
{
    for (int i = 0, j = n - 1; i < j; ++i, --j) {
        const float t = buf[at + i];
        buf[at + i] = buf[at + j];
        buf[at + j] = t;
    }
}

template <int CAP>
static __device__ __forceinline__ void ptexKFlipU(PtexKernel<CAP>* k)
{
    k->u = (1 << k->ulog2) - k->u - k->uw;
    ptexReverse(k->ku, k->ku0, k->uw > 0 ? k->uw : 0);
}

template <int CAP>
static __device__ __forceinline__ void ptexKFlipV(PtexKernel<CAP>* k)
{
    k->v = (1 << k->vlog2) - k->v - k->vw;
    ptexReverse(k->kv, k->kv0, k->vw > 0 ? k->vw : 0);
}

template <int CAP>
static __device__ __forceinline__ void ptexKSwapUV(PtexKernel<CAP>* k)
{
    int t = k->ulog2;
    k->ulog2 = k->vlog2;
    k->vlog2 = t;
    t = k->u;
    k->u = k->v;
    k->v = t;
    t = k->uw;
    k->uw = k->vw;
    k->vw = t;
    t = k->ku0;
    k->ku0 = k->kv0;
    k->kv0 = t;
    for (int i = 0; i < CAP; ++i) {
        const float f = k->ku[i];
        k->ku[i] = k->kv[i];
        k->kv[i] = f;
    }
}

/// Rotate `turns` quarter turns counter-clockwise.
template <int CAP>
static __device__ DTEX_NOINLINE void ptexKRotate(PtexKernel<CAP>* k, int turns)
{
    switch (turns & 3) {
    case 1:
        ptexKFlipU(k);
        ptexKSwapUV(k);
        break;
    case 2:
        ptexKFlipU(k);
        ptexKFlipV(k);
        break;
    case 3:
        ptexKFlipV(k);
        ptexKSwapUV(k);
        break;
    default: return;
    }
    k->rot = (k->rot + turns) & 3;
}

/// Combine pairs of the `w` weights at `k0` (a window starting at texel `start`) in place,
/// as the reference's `downresU`; the new width.
static __device__ __forceinline__ int ptexDownres(float* buf, int k0, int start, int w)
{
    int src = k0, dst = k0;
    w = w > 0 ? w : 0;
    if ((start & 1) != 0 && w > 0) {
        ++src;
        ++dst;
        --w;
    }
    for (int i = 0; i < w / 2; ++i) {
        buf[dst] = __fadd_rn(buf[src], buf[src + 1]);
        ++dst;
        src += 2;
    }
    if ((w & 1) != 0) {
        buf[dst] = buf[src];
        ++dst;
    }
    return dst - k0;
}

/// Split each of the `w` weights at `*k0` in two halves, as the reference's `upresU`
/// (moving the window to the buffer's start if it would not fit); the new width.
template <int CAP>
static __device__ __forceinline__ int ptexUpres(float* buf, int* k0, int w)
{
    w = w > 0 ? w : 0;
    w = w < CAP / 2 ? w : CAP / 2;
    if (*k0 + 2 * w > CAP) {
        for (int i = 0; i < w; ++i)
            buf[i] = buf[*k0 + i];
        *k0 = 0;
    }
    for (int i = w - 1; i >= 0; --i) {
        const float x = __fdiv_rn(buf[*k0 + i], 2.0f);
        buf[*k0 + 2 * i] = x;
        buf[*k0 + 2 * i + 1] = x;
    }
    return 2 * w;
}

template <int CAP>
static __device__ __forceinline__ void ptexKDownresU(PtexKernel<CAP>* k)
{
    k->uw = ptexDownres(k->ku, k->ku0, k->u, k->uw);
    k->u /= 2;
    --k->ulog2;
}

template <int CAP>
static __device__ __forceinline__ void ptexKDownresV(PtexKernel<CAP>* k)
{
    k->vw = ptexDownres(k->kv, k->kv0, k->v, k->vw);
    k->v /= 2;
    --k->vlog2;
}

template <int CAP>
static __device__ __forceinline__ void ptexKUpresU(PtexKernel<CAP>* k)
{
    k->uw = ptexUpres<CAP>(k->ku, &k->ku0, k->uw);
    k->u *= 2;
    ++k->ulog2;
}

template <int CAP>
static __device__ __forceinline__ void ptexKUpresV(PtexKernel<CAP>* k)
{
    k->vw = ptexUpres<CAP>(k->kv, &k->kv0, k->vw);
    k->v *= 2;
    ++k->vlog2;
}

/// Move from a main face across edge `eid` onto a subface (half resolution); whether the
/// target is the primary subface (the one the main face points at).
template <int CAP>
static __device__ DTEX_NOINLINE bool ptexKMainToSubface(PtexKernel<CAP>* k, int eid)
{
    if (k->ulog2 == 0)
        ptexKUpresU(k);
    if (k->vlog2 == 0)
        ptexKUpresV(k);
    if (k->ulog2 > 0)
        --k->ulog2;
    if (k->vlog2 > 0)
        --k->vlog2;
    const int ru = 1 << k->ulog2, rv = 1 << k->vlog2;
    bool primary;
    switch (eid & 3) {
    case 0:
        primary = k->u < ru;
        k->v -= rv;
        if (!primary)
            k->u -= ru;
        return primary;
    case 1:
        primary = k->v < rv;
        if (!primary)
            k->v -= rv;
        return primary;
    case 2:
        primary = k->u >= ru;
        if (primary)
            k->u -= ru;
        return primary;
    default:
        primary = k->v >= rv;
        k->u -= ru;
        if (primary)
            k->v -= rv;
        return primary;
    }
}

/// Move from a subface across edge `eid` onto its main face (double resolution).
template <int CAP>
static __device__ __forceinline__ void ptexKSubfaceToMain(PtexKernel<CAP>* k, int eid)
{
    switch (eid & 3) {
    case 0: k->v += 1 << k->vlog2; break;
    case 1: break;
    case 2: k->u += 1 << k->ulog2; break;
    default:
        k->u += 1 << k->ulog2;
        k->v += 1 << k->vlog2;
        break;
    }
    ++k->ulog2;
    ++k->vlog2;
}

/// Make the kernel square and symmetric (corners of valence 5 and more), keeping its
/// weight where possible; the new weight.
template <int CAP>
static __device__ DTEX_NOINLINE float ptexKMakeSymmetric(PtexKernel<CAP>* k, float initial)
{
    while (k->ulog2 > k->vlog2)
        ptexKDownresU(k);
    while (k->vlog2 > k->ulog2)
        ptexKDownresV(k);
    int n = k->uw < k->vw ? k->uw : k->vw;
    n = n > 0 ? n : 0;
    k->uw = n;
    k->vw = n;
    float weight = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float s = __fadd_rn(k->ku[k->ku0 + i], k->kv[k->kv0 + i]);
        k->ku[k->ku0 + i] = s;
        k->kv[k->kv0 + i] = s;
        weight = __fadd_rn(weight, s);
    }
    weight = __fmul_rn(weight, weight);
    const float scale = weight == 0.0f ? 1.0f : __fdiv_rn(initial, weight);
    if (scale < 1.0f) {
        if (scale < -1.0f) {
            for (int i = 0; i < n; ++i)
                k->ku[k->ku0 + i] = __fmul_rn(k->ku[k->ku0 + i], -1.0f);
            weight = -weight;
        } else {
            for (int i = 0; i < n; ++i)
                k->ku[k->ku0 + i] = __fmul_rn(k->ku[k->ku0 + i], scale);
            weight = initial;
        }
    }
    return weight;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_KERNEL_CUH
