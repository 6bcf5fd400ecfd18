/*
 * demandtex device API: the Ptex separable filters on quad meshes (bilinear, box,
 * Gaussian, bicubic, B-spline, Catmull-Rom, Mitchell), core's `sampling::ptex::separable`
 * and the reference library's `PtexSeparableFilter`: border modes, the kernel split where
 * it crosses an edge and applied to the neighbour across it (rotated into its frame, at
 * its resolution if lower, through subface / main-face transitions), the faces around a
 * corner (valence 4: the diagonal face; 5 and more: a symmetric kernel over every corner
 * face; 3: the corner's weight dropped), folding at mesh boundaries (clamp, periodic) or
 * dropping (black), `noedgeblend`, and tangent-vector rotation.
 *
 * Core recurses where a kernel moves onto a subface; recursion on the device would need a
 * stack whose size the driver cannot know, so here such a kernel is queued on a small fixed
 * stack (`DTEX_PTEX_FILTER_STACK` entries) and applied after the current face. The sums
 * are therefore added in core's order except after a subface transition (the results then
 * agree to rounding). A kernel that finds the stack full, or has crossed
 * `DTEX_PTEX_MAX_SUBFACE_DEPTH` transitions, is folded into its face as with `noedgeblend`
 * (core does so past the same depth).
 *
 * Reading: every unit (face at the kernel's resolution, or each tile of it) is opened
 * with `ptexOpenUnit`, which records its page; a missing unit clears `resident` but the
 * filter goes on, so one lookup requests every unit of its footprint.
 */
#ifndef DEMANDTEX_DEVICE_PTEX_SEPARABLE_CUH
#define DEMANDTEX_DEVICE_PTEX_SEPARABLE_CUH

#include "ptex_build.cuh"
#include "ptex_units.cuh"

#ifndef DTEX_PTEX_FILTER_STACK
/// Kernels on subfaces waiting to be applied, per lookup.
#define DTEX_PTEX_FILTER_STACK 8
#endif

/// How deep subface transitions nest (a valid mesh needs two; core's `MAX_DEPTH`).
#define DTEX_PTEX_MAX_SUBFACE_DEPTH 8

namespace dtex {

/// The state of one separable evaluation.
struct PtexSepEval {
    PtexUnits* units;
    uint32_t first;
    uint32_t n;
    bool noedgeblend;
    bool tanvec;
    uint32_t u_mode;
    uint32_t v_mode;
    float weight;
    bool resident;
    float result[16];
};

/// A kernel waiting to be applied at a subface.
template <int CAP>
struct PtexSepJob {
    PtexKernel<CAP> k;
    int face;
    int depth;
};

template <int CAP>
struct PtexSepStack {
    PtexSepJob<CAP> jobs[DTEX_PTEX_FILTER_STACK];
    int count;
};

/// Add the window of `k` over one unit's texels (`row` texels per row, the window's first
/// texel at (`u0`, `v0`)) to `dst`: each row's sum from its first product, then the rows
/// weighted by `kv` (core's `apply_texels`, to the bit).
static __device__ __forceinline__ void ptexSepApplyTexels(const PtexSepEval& e,
                                                          PtexUnitReader& reader, int u0,
                                                          int v0, int row, int uw, int vw,
                                                          const float* ku, const float* kv,
                                                          float* dst)
{
    const uint32_t ps = e.units->ptex->pixel_size, dt = e.units->ptex->data_type;
    float r[16];
    for (int j = 0; j < vw; ++j) {
        const uint32_t base = (static_cast<uint32_t>(v0 + j) * row + u0) * ps;
        for (int i = 0; i < uw; ++i) {
            const uint32_t at = base + static_cast<uint32_t>(i) * ps;
            for (uint32_t c = 0; c < e.n; ++c) {
                const float x = __fmul_rn(ptexRaw(dt, reader, at, e.first + c), ku[i]);
                r[c] = i == 0 ? x : __fadd_rn(r[c], x);
            }
        }
        for (uint32_t c = 0; c < e.n; ++c)
            dst[c] = __fadd_rn(dst[c], __fmul_rn(r[c], kv[j]));
    }
}

/// Apply `k` (inside the face) to `face`'s data at its resolution, or to its constant
/// (`constant`), into `acc`, or into `rotated` for packed data with tangent vectors.
template <int CAP>
static __device__ DTEX_NOINLINE bool ptexSepApplyData(PtexSepEval& e, const PtexKernel<CAP>& k,
                                                        uint32_t face,
                                                        const DtexPtexDeviceFace& f, bool constant,
                                                        float* acc, float* rotated)
{
    const DtexPtexDeviceTexture& ptex = *e.units->ptex;
    if (constant || (k.ulog2 == 0 && k.vlog2 == 0)) {
        const float w = ptexKWeight(k);
        PtexConstantWords word = ptexConstantWords(ptex, face);
        for (uint32_t c = 0; c < e.n; ++c)
            acc[c] = __fadd_rn(acc[c], __fmul_rn(ptexRaw(ptex.data_type, word, 0u, e.first + c), w));
        return true;
    }
    float* dst = rotated != nullptr ? rotated : acc;
    const uint32_t ul = static_cast<uint32_t>(k.ulog2), vl = static_cast<uint32_t>(k.vlog2);
    DtexPtexDeviceUnit unit;
    if (!ptexUnitEntry(ptex, f, ul, vl, &unit))
        return false;
    const PtexTiling t = ptexTiling(unit, ul, vl);
    PtexUnitReader reader;
    if (t.ntiles_u == 0u) {
        if (!ptexOpenUnit(e.units, unit, vl, 0u, &reader))
            return false;
        ptexSepApplyTexels(e, reader, k.u, k.v, 1 << k.ulog2, k.uw, k.vw, k.ku + k.ku0,
                           k.kv + k.kv0, dst);
        return true;
    }
    // Tile by tile (core's `apply_data`): the kernel's window cut at tile boundaries.
    const int tru = 1 << t.tile_ulog2, trv = 1 << t.tile_vlog2;
    bool resident = true;
    int v = k.v, vw = k.vw;
    while (vw > 0) {
        const int tile_v = v / trv, tv0 = v % trv;
        const int tvw = vw < trv - tv0 ? vw : trv - tv0;
        int u = k.u, uw = k.uw;
        while (uw > 0) {
            const int tile_u = u / tru, tu0 = u % tru;
            const int tuw = uw < tru - tu0 ? uw : tru - tu0;
            const uint32_t tile = static_cast<uint32_t>(tile_v) * t.ntiles_u + tile_u;
            if (ptexOpenUnit(e.units, unit, vl, tile, &reader))
                ptexSepApplyTexels(e, reader, tu0, tv0, tru, tuw, tvw, k.ku + k.ku0 + (u - k.u),
                                   k.kv + k.kv0 + (v - k.v), dst);
            else
                resident = false;
            uw -= tuw;
            u += tuw;
        }
        vw -= tvw;
        v += tvw;
    }
    return resident;
}

/// Apply the kernel (now inside the face, or clipped) to `face`'s data (core's
/// `Eval::apply`).
template <int CAP>
static __device__ DTEX_NOINLINE void ptexSepApply(PtexSepEval& e, PtexKernel<CAP>& k,
                                                    uint32_t face, const DtexPtexDeviceFace& f)
{
    if (k.uw <= 0 || k.vw <= 0)
        return;
    while (k.ulog2 > static_cast<int>(f.ulog2))
        ptexKDownresU(&k);
    while (k.vlog2 > static_cast<int>(f.vlog2))
        ptexKDownresV(&k);
    // A kernel outside the face (only from a corrupt adjacency) is clipped, never read.
    if ((k.u) < 0 || (k.v) < 0 || k.u + k.uw > (1 << k.ulog2) || k.v + k.vw > (1 << k.vlog2) ||
        k.ulog2 < 0 || k.vlog2 < 0)
        return;
    const bool tanvec = e.tanvec && e.n >= 2u && k.rot > 0;
    float local[16];
    if (tanvec)
        for (uint32_t c = 0; c < e.n; ++c)
            local[c] = 0.0f;
    if (!ptexSepApplyData(e, k, face, f, ptexIsConstant(f), e.result, tanvec ? local : nullptr))
        e.resident = false;
    if (tanvec) {
        const float r0 = local[0], r1 = local[1];
        switch (k.rot) {
        case 1:
            e.result[0] = __fsub_rn(e.result[0], r1);
            e.result[1] = __fadd_rn(e.result[1], r0);
            break;
        case 2:
            e.result[0] = __fsub_rn(e.result[0], r0);
            e.result[1] = __fsub_rn(e.result[1], r1);
            break;
        case 3:
            e.result[0] = __fadd_rn(e.result[0], r1);
            e.result[1] = __fsub_rn(e.result[1], r0);
            break;
        default:
            e.result[0] = __fadd_rn(e.result[0], r0);
            e.result[1] = __fadd_rn(e.result[1], r1);
            break;
        }
        for (uint32_t c = 2; c < e.n; ++c)
            e.result[c] = __fadd_rn(e.result[c], local[c]);
    }
}

/// Fold every part of `k` outside the face back into it and apply it (`noedgeblend`, or
/// too deep).
template <int CAP>
static __device__ __forceinline__ void ptexSepFoldApply(PtexSepEval& e, PtexKernel<CAP>& k,
                                                        uint32_t face, const DtexPtexDeviceFace& f)
{
    if (k.u + k.uw > (1 << k.ulog2))
        ptexKMergeR(&k, e.u_mode);
    if ((k.u) < 0)
        ptexKMergeL(&k, e.u_mode);
    if (k.v + k.vw > (1 << k.vlog2))
        ptexKMergeT(&k, e.v_mode);
    if ((k.v) < 0)
        ptexKMergeB(&k, e.v_mode);
    ptexSepApply(e, k, face, f);
}

/// Queue `k` to be split and applied at subface `face` (depth `depth`), or fold it into
/// the face now when the stack is full or the depth too great.
template <int CAP>
static __device__ __forceinline__ void ptexSepDefer(PtexSepEval& e, PtexSepStack<CAP>& stack,
                                                    PtexKernel<CAP>& k, int face,
                                                    const DtexPtexDeviceFace& f, int depth)
{
    if (stack.count < DTEX_PTEX_FILTER_STACK && depth < DTEX_PTEX_MAX_SUBFACE_DEPTH) {
        PtexSepJob<CAP>& j = stack.jobs[stack.count++];
        j.k = k;
        j.face = face;
        j.depth = depth;
        return;
    }
    ptexSepFoldApply(e, k, static_cast<uint32_t>(face), f);
}

/// Apply `k` at `face` or queue it for its subface (core's `apply` at a main face,
/// `split_and_apply` at a subface).
template <int CAP>
static __device__ __forceinline__ void ptexSepApplyOrDefer(PtexSepEval& e,
                                                           PtexSepStack<CAP>& stack,
                                                           PtexKernel<CAP>& k, int face,
                                                           const DtexPtexDeviceFace& f, int depth)
{
    if (ptexIsSubface(f))
        ptexSepDefer(e, stack, k, face, f, depth + 1);
    else
        ptexSepApply(e, k, static_cast<uint32_t>(face), f);
}

/// Core's `apply_across_edge`: `k` (split off across edge `eid` of `face`) into the
/// neighbour's frame, then applied there.
template <int CAP>
static __device__ DTEX_NOINLINE void ptexSepAcrossEdge(PtexSepEval& e, PtexSepStack<CAP>& stack,
                                                         PtexKernel<CAP>& k, int face,
                                                         const DtexPtexDeviceFace& f, int eid,
                                                         int depth)
{
    const DtexPtexDeviceTexture& ptex = *e.units->ptex;
    int afid = f.adjfaces[eid];
    int aeid = ptexAdjEdge(f, eid);
    DtexPtexDeviceFace af;
    if (!ptexFaceInfo(ptex, afid, &af))
        return;
    int rot = eid - aeid + 2;
    if (ptexIsSubface(f) != ptexIsSubface(af)) {
        if (ptexIsSubface(af)) {
            if (!ptexKMainToSubface(&k, eid)) {
                const int neid = (aeid + 3) % 4;
                afid = af.adjfaces[neid];
                aeid = ptexAdjEdge(af, neid);
                if (!ptexFaceInfo(ptex, afid, &af))
                    return;
                rot += neid - aeid + 2;
            }
        } else {
            const bool primary = af.adjfaces[aeid] == face;
            ptexKSubfaceToMain(&k, eid - (primary ? 1 : 0));
        }
    }
    ptexKRotate(&k, rot);
    ptexSepApplyOrDefer(e, stack, k, afid, af, depth);
}

/// Core's `apply_to_corner_face`.
template <int CAP>
static __device__ DTEX_NOINLINE void ptexSepCornerFace(PtexSepEval& e, PtexSepStack<CAP>& stack,
                                                         PtexKernel<CAP>& k,
                                                         const DtexPtexDeviceFace& f, int eid,
                                                         int cfid, const DtexPtexDeviceFace& cf,
                                                         int ceid, int depth)
{
    if (ptexIsSubface(f) != ptexIsSubface(cf)) {
        if (ptexIsSubface(cf))
            ptexKMainToSubface(&k, eid + 3);
        else
            ptexKSubfaceToMain(&k, eid + 3);
    }
    ptexKRotate(&k, eid - ceid + 2);
    ptexSepApplyOrDefer(e, stack, k, cfid, cf, depth);
}

/// Core's `apply_to_corner`: `k` (split off beyond corner `eid` of `face`) applied to the
/// faces around that corner.
template <int CAP>
static __device__ DTEX_NOINLINE void ptexSepCorner(PtexSepEval& e, PtexSepStack<CAP>& stack,
                                                     PtexKernel<CAP>& k, int face,
                                                     const DtexPtexDeviceFace& f, int eid,
                                                     int depth)
{
    const int MAX_VALENCE = 10;
    const DtexPtexDeviceTexture& ptex = *e.units->ptex;
    int afid = face, aeid = eid;
    DtexPtexDeviceFace af = f;
    bool prev_sub = ptexIsSubface(af);
    int ids[MAX_VALENCE], edges[MAX_VALENCE];
    int num = 0;
    for (int i = 0; i < MAX_VALENCE; ++i) {
        const int prev_face = afid;
        afid = af.adjfaces[aeid & 3];
        aeid = (ptexAdjEdge(af, aeid) + 1) % 4;
        if (afid < 0 || (afid == face && aeid == eid)) {
            num = i - 2;
            break;
        }
        if (!ptexFaceInfo(ptex, afid, &af))
            return;
        ids[i] = afid;
        edges[i] = aeid;
        const bool sub = ptexIsSubface(af);
        if (prev_sub && !sub && af.adjfaces[(aeid + 3) % 4] == prev_face) {
            const int primary = i == 1 ? 1 : 0;
            ptexKSubfaceToMain(&k, eid + primary * 2);
            ptexKRotate(&k, eid - aeid + 3 - primary);
            ptexSepDefer(e, stack, k, afid, af, depth + 1);
            return;
        }
        prev_sub = sub;
    }
    DtexPtexDeviceFace cf;
    if (num == 1) {
        if (ptexFaceInfo(ptex, ids[1], &cf))
            ptexSepCornerFace(e, stack, k, f, eid, ids[1], cf, edges[1], depth);
    } else if (num > 1) {
        ptexKRotate(&k, eid + 2);
        const float initial = ptexKWeight(k);
        const float new_weight = ptexKMakeSymmetric(&k, initial);
        for (int i = 1; i <= num; ++i) {
            if (!ptexFaceInfo(ptex, ids[i], &cf))
                continue;
            PtexKernel<CAP> kc = k;
            ptexSepCornerFace(e, stack, kc, f, 2, ids[i], cf, edges[i], depth);
        }
        e.weight = __fadd_rn(e.weight,
                             __fsub_rn(__fmul_rn(new_weight, __int2float_rn(num)), initial));
    } else {
        e.weight = __fsub_rn(e.weight, ptexKWeight(k));
    }
}

/// Core's `split_and_apply`: `k` split where it crosses the edges and corners of `face`,
/// each part applied across them, the rest applied to `face`.
template <int CAP>
static __device__ DTEX_NOINLINE void ptexSepSplitApply(PtexSepEval& e, PtexSepStack<CAP>& stack,
                                                         PtexKernel<CAP>& k, int face,
                                                         const DtexPtexDeviceFace& f, int depth)
{
    if (e.noedgeblend || depth >= DTEX_PTEX_MAX_SUBFACE_DEPTH) {
        ptexSepFoldApply(e, k, static_cast<uint32_t>(face), f);
        return;
    }
    const int ru = 1 << k.ulog2, rv = 1 << k.vlog2;
    const bool split_r = k.u + k.uw > ru, split_l = (k.u) < 0;
    const bool split_t = k.v + k.vw > rv, split_b = (k.v) < 0;
    const bool adj0 = f.adjfaces[0] >= 0, adj1 = f.adjfaces[1] >= 0;
    const bool adj2 = f.adjfaces[2] >= 0, adj3 = f.adjfaces[3] >= 0;
    // One part across an edge and one beyond a corner at a time: two kernels of scratch.
    PtexKernel<CAP> ka, kc;
    if (split_r) {
        if (adj1) {
            ka = ptexKSplitR(&k);
            if (split_t) {
                if (adj2) {
                    kc = ptexKSplitT(&ka);
                    ptexSepCorner(e, stack, kc, face, f, 2, depth);
                }
                else
                    ptexKMergeT(&ka, e.v_mode);
            }
            if (split_b) {
                if (adj0) {
                    kc = ptexKSplitB(&ka);
                    ptexSepCorner(e, stack, kc, face, f, 1, depth);
                }
                else
                    ptexKMergeB(&ka, e.v_mode);
            }
            ptexSepAcrossEdge(e, stack, ka, face, f, 1, depth);
        } else {
            ptexKMergeR(&k, e.u_mode);
        }
    }
    if (split_l) {
        if (adj3) {
            ka = ptexKSplitL(&k);
            if (split_t) {
                if (adj2) {
                    kc = ptexKSplitT(&ka);
                    ptexSepCorner(e, stack, kc, face, f, 3, depth);
                }
                else
                    ptexKMergeT(&ka, e.v_mode);
            }
            if (split_b) {
                if (adj0) {
                    kc = ptexKSplitB(&ka);
                    ptexSepCorner(e, stack, kc, face, f, 0, depth);
                }
                else
                    ptexKMergeB(&ka, e.v_mode);
            }
            ptexSepAcrossEdge(e, stack, ka, face, f, 3, depth);
        } else {
            ptexKMergeL(&k, e.u_mode);
        }
    }
    if (split_t) {
        if (adj2) {
            ka = ptexKSplitT(&k);
            ptexSepAcrossEdge(e, stack, ka, face, f, 2, depth);
        } else
            ptexKMergeT(&k, e.v_mode);
    }
    if (split_b) {
        if (adj0) {
            ka = ptexKSplitB(&k);
            ptexSepAcrossEdge(e, stack, ka, face, f, 0, depth);
        } else
            ptexKMergeB(&k, e.v_mode);
    }
    ptexSepApply(e, k, static_cast<uint32_t>(face), f);
}

/// Core's `apply_kernel`: `k` at `face`, its zero weights dropped, split across edges and
/// corners (and the queued subface kernels after it), normalised into `out`.
template <int CAP>
static __device__ DTEX_NOINLINE bool ptexSepRun(PtexSepEval& e, PtexKernel<CAP>& k, int face,
                                                  const DtexPtexDeviceFace& f, float* out)
{
    ptexKStripZeros(&k);
    e.weight = ptexKWeight(k);
    PtexSepStack<CAP> stack;
    stack.count = 0;
    ptexSepSplitApply(e, stack, k, face, f, 0);
    while (stack.count > 0) {
        PtexSepJob<CAP> j = stack.jobs[--stack.count];
        DtexPtexDeviceFace jf;
        if (ptexFaceInfo(*e.units->ptex, j.face, &jf))
            ptexSepSplitApply(e, stack, j.k, j.face, jf, j.depth);
    }
    const float scale =
        __fdiv_rn(1.0f, __fmul_rn(e.weight, ptexOneValue(e.units->ptex->data_type)));
    for (uint32_t c = 0; c < e.n; ++c)
        out[c] = __fmul_rn(e.result[c], scale);
    return e.resident;
}

/// A subface's kernel, built at its main face's resolution, brought to the subface's.
template <int CAP>
static __device__ __forceinline__ void ptexKToSubface(PtexKernel<CAP>* k)
{
    if (k->ulog2 == 0)
        ptexKUpresU(k);
    if (k->vlog2 == 0)
        ptexKUpresV(k);
    --k->ulog2;
    --k->vlog2;
}

/// The box or bilinear filter (`box`) at (`u`, `v`) of widths `uw`, `vw` on a face of
/// (`ul`, `vl`) (a subface's: `sub`, its main face's resolution), run over the face.
static __device__ DTEX_NOINLINE bool ptexSepSmall(PtexSepEval& e, bool box, float u, float v,
                                                  float uw, float vw, int ul, int vl, bool sub,
                                                  int face, const DtexPtexDeviceFace& f,
                                                  float* out)
{
    const PtexSmallAxis au = box ? ptexBoxAxis(u, uw, ul) : ptexBilinearAxis(u, uw, ul);
    const PtexSmallAxis av = box ? ptexBoxAxis(v, vw, vl) : ptexBilinearAxis(v, vw, vl);
    PtexKernel<12> k;
    ptexKOfAxes(&k, au, av);
    if (sub)
        ptexKToSubface(&k);
    return ptexSepRun(e, k, face, f, out);
}

/// A width-4 filter (`options.filter`, `sharpness`, `lerp`), as `ptexSepSmall`.
static __device__ DTEX_NOINLINE bool ptexSepWidth4(PtexSepEval& e,
                                                   const DtexPtexFilterOptions& options, float u,
                                                   float v, float uw, float vw, int ul, int vl,
                                                   bool sub, int face,
                                                   const DtexPtexDeviceFace& f, float* out)
{
    PtexKernel<20> k;
    ptexKWidth4(&k, ptexWidth4(options.filter, options.sharpness), options.lerp != 0u, u, v, uw,
                vw, ul, vl);
    if (sub)
        ptexKToSubface(&k);
    return ptexSepRun(e, k, face, f, out);
}

/// Evaluate a separable filter (`options.filter`: bilinear, box or a width-4 kernel) at
/// (`u`, `v`) of quad face `face` (face-table entry `f`) over the footprint `uw1 .. vw2`;
/// channels `first .. first + n` into `out`. False if a unit was missing (core's
/// `separable::eval`).
static __device__ DTEX_NOINLINE bool ptexSeparable(PtexUnits* units, uint32_t face,
                                                     const DtexPtexDeviceFace& f, float u,
                                                     float v, float uw1, float vw1, float uw2,
                                                     float vw2,
                                                     const DtexPtexFilterOptions& options,
                                                     uint32_t first, uint32_t n, float* out)
{
    const DtexPtexDeviceTexture& ptex = *units->ptex;
    float uw = __fadd_rn(fabsf(uw1), fabsf(uw2)), vw = __fadd_rn(fabsf(vw1), fabsf(vw2));
    bool black = false;
    switch (ptex.u_border) {
    case DTEX_PTEX_BORDER_CLAMP: u = fminf(fmaxf(u, 0.0f), 1.0f); break;
    case DTEX_PTEX_BORDER_PERIODIC: u = __fsub_rn(u, floorf(u)); break;
    default: black = black || u <= -1.0f || u >= 2.0f; break;
    }
    switch (ptex.v_border) {
    case DTEX_PTEX_BORDER_CLAMP: v = fminf(fmaxf(v, 0.0f), 1.0f); break;
    case DTEX_PTEX_BORDER_PERIODIC: v = __fsub_rn(v, floorf(v)); break;
    default: black = black || v <= -1.0f || v >= 2.0f; break;
    }
    if (black) {
        for (uint32_t c = 0; c < n; ++c)
            out[c] = 0.0f;
        return true;
    }
    PtexSepEval e;
    e.units = units;
    e.first = first;
    e.n = n;
    e.noedgeblend = options.noedgeblend != 0u;
    e.tanvec = ptex.edge_filter == DTEX_PTEX_EDGE_FILTER_TANVEC;
    e.u_mode = ptex.u_border;
    e.v_mode = ptex.v_border;
    e.weight = 0.0f;
    e.resident = true;
    for (uint32_t c = 0; c < n; ++c)
        e.result[c] = 0.0f;
    const bool sub = ptexIsSubface(f);
    // A subface's kernel is built on its main face (twice the resolution), then halved.
    const float blur = sub ? __fmul_rn(options.blur, 2.0f) : options.blur;
    uw = __fadd_rn(__fmul_rn(uw, options.width), blur);
    vw = __fadd_rn(__fmul_rn(vw, options.width), blur);
    const int ul = f.ulog2 + (sub ? 1 : 0), vl = f.vlog2 + (sub ? 1 : 0);
    if (sub) {
        u = __fmul_rn(u, 0.5f);
        v = __fmul_rn(v, 0.5f);
        uw = __fmul_rn(uw, 0.5f);
        vw = __fmul_rn(vw, 0.5f);
    }
    const int fid = static_cast<int>(face);
    if (options.filter == DTEX_PTEX_FILTER_BOX || options.filter == DTEX_PTEX_FILTER_BILINEAR)
        return ptexSepSmall(e, options.filter == DTEX_PTEX_FILTER_BOX, u, v, uw, vw, ul, vl, sub,
                            fid, f, out);
    return ptexSepWidth4(e, options, u, v, uw, vw, ul, vl, sub, fid, f, out);
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_SEPARABLE_CUH
