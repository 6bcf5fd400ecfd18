/*
 * demandtex device API: the Ptex triangle filter (every filter but point and stochastic on
 * a triangle mesh), core's `sampling::ptex::triangle` and the reference library's
 * `PtexTriangleFilter`: a Gaussian over the elliptical footprint in the triangle's
 * barycentric frame, split across the three edges and reoriented into each neighbour's
 * frame; texels are the "even" (lower-left) and "odd" (upper-right, stored flipped)
 * triangles of each square texel. Where no texel gets any weight the face's constant
 * colour is returned.
 *
 * Core recurses across edges; here the parts across edges wait on a fixed stack
 * (`DTEX_PTEX_TRIANGLE_STACK` entries) and are applied after the current face, so the sums
 * agree with core's to rounding. A part that finds the stack full is not split off: the
 * kernel is clipped to its face there, as core does past its depth limit.
 */
#ifndef DEMANDTEX_DEVICE_PTEX_TRIANGLE_CUH
#define DEMANDTEX_DEVICE_PTEX_TRIANGLE_CUH

#include "ptex_build.cuh"
#include "ptex_units.cuh"

#ifndef DTEX_PTEX_TRIANGLE_STACK
/// Parts of a triangle kernel across edges waiting to be applied, per lookup.
#define DTEX_PTEX_TRIANGLE_STACK 8
#endif

/// How many edges a triangle kernel may cross (core's `MAX_DEPTH`).
#define DTEX_PTEX_TRIANGLE_MAX_DEPTH 16

namespace dtex {

/// The kernel in normalised triangle coordinates.
struct PtexTriKernel {
    int log2;
    float u, v, u1, v1, w1, u2, v2, w2, a, b, c;
};

/// The kernel over one half (even or odd) of the texels, in texel units.
struct PtexTriIter {
    int rowlen;
    float u, v;
    int u1, v1, w1, u2, v2, w2;
    float a, b, c;
    bool valid;
    float wscale;
};

/// A kernel part waiting to be applied.
struct PtexTriJob {
    PtexTriKernel k;
    int face;
    int depth;
};

static __device__ __forceinline__ float ptexTriGaussian(float x_squared)
{
    // -0.5 * 3.5 * 3.5 (the kernel width) is exact in f32.
    return static_cast<float>(exp(static_cast<double>(__fmul_rn(-6.125f, x_squared))));
}

static __device__ __forceinline__ float ptexSq(float x)
{
    return __fmul_rn(x, x);
}

/// Core's `triangle::build`.
static __device__ __forceinline__ PtexTriKernel ptexTriBuild(float u, float v, float uw1,
                                                             float vw1, float uw2, float vw2,
                                                             float width, float blur,
                                                             int face_log2)
{
    const float sqrt3 = 1.7320508f;
    const float scale_ac = __fmul_rn(__fmul_rn(0.25f, width), width);
    const float scale_b = __fmul_rn(-2.0f, scale_ac);
    float a = __fmul_rn(__fadd_rn(__fmul_rn(vw1, vw1), __fmul_rn(vw2, vw2)), scale_ac);
    float b = __fmul_rn(__fadd_rn(__fmul_rn(uw1, vw1), __fmul_rn(uw2, vw2)), scale_b);
    float c = __fmul_rn(__fadd_rn(__fmul_rn(uw1, uw1), __fmul_rn(uw2, uw2)), scale_ac);
    float ac = __fmul_rn(0.75f, a);
    const float bc = __fmul_rn(sqrt3 / 2.0f, __fsub_rn(b, a));
    float cc = __fadd_rn(__fsub_rn(__fmul_rn(0.25f, a), __fmul_rn(0.5f, b)), c);
    const float ecc_ratio = __fdiv_rn(226.0f, 224.0f);
    const float x = __fsqrt_rn(__fadd_rn(ptexSq(__fsub_rn(ac, cc)), ptexSq(bc)));
    const float b_e = __fmul_rn(0.5f, __fsub_rn(__fmul_rn(ecc_ratio, x), __fadd_rn(ac, cc)));
    const float b_t = ptexSq(__fdiv_rn(0.5f, __int2float_rn(1 << face_log2)));
    const float b_b = __fmul_rn(__fmul_rn(0.25f, blur), blur);
    const float bl = fmaxf(b_b, fmaxf(b_e, b_t));
    ac = __fadd_rn(ac, bl);
    cc = __fadd_rn(cc, bl);
    const float m = __fsqrt_rn(
        __fdiv_rn(__fmul_rn(2.0f, __fsub_rn(__fmul_rn(ac, cc), __fmul_rn(__fmul_rn(0.25f, bc), bc))),
                  __fadd_rn(__fadd_rn(ac, cc), x)));
    PtexTriKernel k;
    k.log2 = ptexClampInt(ptexResFromWidth(__fmul_rn(2.0f, m)), 0, 30);
    a = __fmul_rn(4.0f / 3.0f, ac);
    b = __fadd_rn(__fmul_rn(2.0f / sqrt3, bc), a);
    c = __fadd_rn(__fadd_rn(__fmul_rn(-0.25f, a), __fmul_rn(0.5f, b)), cc);
    const float s = 12.25f;
    a = __fmul_rn(a, s);
    b = __fmul_rn(b, s);
    c = __fmul_rn(c, s);
    const float uw = fminf(__fsqrt_rn(c), 1.0f);
    const float vw = fminf(__fsqrt_rn(a), 1.0f);
    const float ww = fminf(__fsqrt_rn(__fadd_rn(__fsub_rn(a, b), c)), 1.0f);
    const float w = __fsub_rn(__fsub_rn(1.0f, u), v);
    k.u = u;
    k.v = v;
    k.u1 = __fsub_rn(u, uw);
    k.v1 = __fsub_rn(v, vw);
    k.w1 = __fsub_rn(w, ww);
    k.u2 = __fadd_rn(u, uw);
    k.v2 = __fadd_rn(v, vw);
    k.w2 = __fadd_rn(w, ww);
    k.a = a;
    k.b = b;
    k.c = c;
    return k;
}

static __device__ __forceinline__ void ptexTriSet(PtexTriKernel* k, float u, float v, float u1,
                                                  float v1, float w1, float u2, float v2, float w2)
{
    k->u = u;
    k->v = v;
    k->u1 = u1;
    k->v1 = v1;
    k->w1 = w1;
    k->u2 = u2;
    k->v2 = v2;
    k->w2 = w2;
}

/// u' = w, v' = u, w' = v.
static __device__ __forceinline__ void ptexTriRotate1(PtexTriKernel* k)
{
    const float a = k->a, b = k->b, c = k->c;
    k->a = c;
    k->b = __fsub_rn(__fmul_rn(2.0f, c), b);
    k->c = __fsub_rn(__fadd_rn(a, c), b);
}

/// u' = v, v' = w, w' = u.
static __device__ __forceinline__ void ptexTriRotate2(PtexTriKernel* k)
{
    const float a = k->a, b = k->b, c = k->c;
    k->a = __fsub_rn(__fadd_rn(a, c), b);
    k->b = __fsub_rn(__fmul_rn(2.0f, a), b);
    k->c = a;
}

/// Into the frame of the neighbour whose edge `aeid` is this face's edge `eid`.
static __device__ __forceinline__ void ptexTriReorient(PtexTriKernel* k, int eid, int aeid)
{
    const float u = k->u, v = k->v, w = __fsub_rn(__fsub_rn(1.0f, k->u), k->v);
    const float u1 = k->u1, v1 = k->v1, w1 = k->w1, u2 = k->u2, v2 = k->v2, w2 = k->w2;
    auto om = [](float x) { return __fsub_rn(1.0f, x); };
    // (eid, aeid) as eid * 4 + aeid; a neighbour edge of 3 (a corrupt file) changes nothing.
    switch (eid * 4 + aeid) {
    case 0: ptexTriSet(k, om(u), -v, om(u2), -v2, om(w2), om(u1), -v1, om(w1)); break;
    case 1:
        ptexTriSet(k, om(w), om(u), om(w2), om(u2), -v2, om(w1), om(u1), -v1);
        ptexTriRotate1(k);
        break;
    case 2:
        ptexTriSet(k, -v, om(w), -v2, om(w2), om(u2), -v1, om(w1), om(u1));
        ptexTriRotate2(k);
        break;
    case 4:
        ptexTriSet(k, om(v), -w, om(v2), -w2, om(u2), om(v1), -w1, om(u1));
        ptexTriRotate2(k);
        break;
    case 5: ptexTriSet(k, om(u), om(v), om(u2), om(v2), -w2, om(u1), om(v1), -w1); break;
    case 6:
        ptexTriSet(k, -w, om(u), -w2, om(u2), om(v2), -w1, om(u1), om(v1));
        ptexTriRotate1(k);
        break;
    case 8:
        ptexTriSet(k, om(w), -u, om(w2), -u2, om(v2), om(w1), -u1, om(v1));
        ptexTriRotate1(k);
        break;
    case 9:
        ptexTriSet(k, om(v), om(w), om(v2), om(w2), -u2, om(v1), om(w1), -u1);
        ptexTriRotate2(k);
        break;
    case 10: ptexTriSet(k, -u, om(v), -u2, om(v2), om(w2), -u1, om(v1), om(w1)); break;
    default: break;
    }
}

/// The even and odd iterators of a kernel (core's `Kernel::iterators`).
static __device__ __forceinline__ void ptexTriIterators(const PtexTriKernel& k, PtexTriIter* ke,
                                                        PtexTriIter* ko)
{
    const float resu = __int2float_rn(1 << k.log2);
    const float finv = __fdiv_rn(
        1.0f, __fmul_rn(__fmul_rn(resu, resu),
                        __fsub_rn(__fmul_rn(k.a, k.c), __fmul_rn(__fmul_rn(0.25f, k.b), k.b))));
    const float ak = __fmul_rn(k.a, finv), bk = __fmul_rn(k.b, finv), ck = __fmul_rn(k.c, finv);
    const float third = 1.0f / 3.0f;
    auto at = [&](float x) { return static_cast<int>(ceilf(__fsub_rn(__fmul_rn(x, resu), third))); };
    ke->rowlen = 1 << k.log2;
    ke->u = __fsub_rn(__fmul_rn(k.u, resu), third);
    ke->v = __fsub_rn(__fmul_rn(k.v, resu), third);
    ke->u1 = at(k.u1);
    ke->v1 = at(k.v1);
    ke->w1 = at(k.w1);
    ke->u2 = at(k.u2);
    ke->v2 = at(k.v2);
    ke->w2 = at(k.w2);
    ke->a = ak;
    ke->b = bk;
    ke->c = ck;
    ke->wscale = __fdiv_rn(1.0f, __fmul_rn(resu, resu));
    ke->valid = ke->u2 > ke->u1 && ke->v2 > ke->v1 && ke->w2 > ke->w1;
    *ko = *ke;
    ko->u = __fsub_rn(__fmul_rn(__fsub_rn(1.0f, k.v), resu), third);
    ko->v = __fsub_rn(__fmul_rn(__fsub_rn(1.0f, k.u), resu), third);
    ko->u1 = at(__fsub_rn(1.0f, k.v2));
    ko->v1 = at(__fsub_rn(1.0f, k.u2));
    ko->w1 = at(-k.w2);
    ko->u2 = at(__fsub_rn(1.0f, k.v1));
    ko->v2 = at(__fsub_rn(1.0f, k.u1));
    ko->w2 = at(-k.w1);
    ko->a = ck;
    ko->b = bk;
    ko->c = ak;
    ko->valid = ko->u2 > ko->u1 && ko->v2 > ko->v1 && ko->w2 > ko->w1;
}

/// Visit every texel of the footprint with its weight (`visit(index, w)`, only for texels
/// at non-negative coordinates); the total weight (core's `Iter::each`).
template <class Visit>
static __device__ __forceinline__ float ptexTriEach(const PtexTriIter& it, Visit visit)
{
    const float ddq = __fmul_rn(2.0f, it.a);
    float total = 0.0f;
    for (int vi = it.v1; vi < it.v2; ++vi) {
        const int xw = it.rowlen - vi;
        const int x1 = it.u1 > xw - it.w2 ? it.u1 : xw - it.w2;
        const int x2 = it.u2 < xw - it.w1 ? it.u2 : xw - it.w1;
        const float uu = __fsub_rn(__int2float_rn(x1), it.u);
        const float vv = __fsub_rn(__int2float_rn(vi), it.v);
        float dq = __fadd_rn(__fmul_rn(it.a, __fadd_rn(__fmul_rn(2.0f, uu), 1.0f)),
                             __fmul_rn(it.b, vv));
        float q = __fadd_rn(__fmul_rn(__fmul_rn(it.a, uu), uu),
                            __fmul_rn(__fadd_rn(__fmul_rn(it.b, uu), __fmul_rn(it.c, vv)), vv));
        for (int x = x1; x < x2; ++x) {
            if (q < 1.0f) {
                const float w = __fmul_rn(ptexTriGaussian(q), it.wscale);
                total = __fadd_rn(total, w);
                if (vi >= 0 && x >= 0)
                    visit(vi * it.rowlen + x, w);
            }
            q = __fadd_rn(q, dq);
            dq = __fadd_rn(dq, ddq);
        }
    }
    return total;
}

/// The state of one triangle evaluation.
struct PtexTriEval {
    PtexUnits* units;
    uint32_t first;
    uint32_t n;
    float weight;
    bool resident;
    float result[16];
    PtexTriJob jobs[DTEX_PTEX_TRIANGLE_STACK];
    int count;
};

/// Apply iterator `it` to one unit (`texels` texels from `reader`) into the sums; its
/// weight.
static __device__ __forceinline__ float ptexTriApplyTexels(PtexTriEval& e, const PtexTriIter& it,
                                                           PtexUnitReader& reader, int texels)
{
    const uint32_t ps = e.units->ptex->pixel_size, dt = e.units->ptex->data_type;
    return ptexTriEach(it, [&](int index, float w) {
        if (index >= texels)
            return;  // outside the unit: reads as 0, as core's
        const uint32_t at = static_cast<uint32_t>(index) * ps;
        for (uint32_t c = 0; c < e.n; ++c)
            e.result[c] =
                __fadd_rn(e.result[c], __fmul_rn(ptexRaw(dt, reader, at, e.first + c), w));
    });
}

/// Core's `apply_iter`: one iterator over `face` at resolution `log2` (0: its constant).
static __device__ DTEX_NOINLINE void ptexTriApplyIter(PtexTriEval& e, const PtexTriIter& k,
                                                        uint32_t face, const DtexPtexDeviceFace& f,
                                                        int log2)
{
    const DtexPtexDeviceTexture& ptex = *e.units->ptex;
    if (log2 == 0) {
        const float w = ptexTriEach(k, [](int, float) {});
        PtexConstantWords word = ptexConstantWords(ptex, face);
        for (uint32_t c = 0; c < e.n; ++c)
            e.result[c] =
                __fadd_rn(e.result[c], __fmul_rn(ptexRaw(ptex.data_type, word, 0u, e.first + c), w));
        e.weight = __fadd_rn(e.weight, w);
        return;
    }
    const uint32_t l = static_cast<uint32_t>(log2);
    DtexPtexDeviceUnit unit;
    if (!ptexUnitEntry(ptex, f, l, l, &unit)) {
        e.resident = false;
        return;
    }
    const PtexTiling t = ptexTiling(unit, l, l);
    PtexUnitReader reader;
    if (t.ntiles_u == 0u) {
        if (ptexOpenUnit(e.units, unit, l, 0u, &reader))
            e.weight = __fadd_rn(e.weight, ptexTriApplyTexels(e, k, reader, 1 << (2 * log2)));
        else
            e.resident = false;
        return;
    }
    const int tru = 1 << t.tile_ulog2, trv = 1 << t.tile_vlog2;
    const int wbase = k.rowlen - tru;
    for (int tv = k.v1 / trv; tv <= (k.v2 - 1) / trv; ++tv) {
        const int voff = tv * trv;
        for (int tu = k.u1 / tru; tu <= (k.u2 - 1) / tru; ++tu) {
            const int uoff = tu * tru;
            const int woff = wbase - uoff - voff;
            PtexTriIter kt = k;
            kt.rowlen = tru;
            kt.u = __fsub_rn(k.u, __int2float_rn(uoff));
            kt.v = __fsub_rn(k.v, __int2float_rn(voff));
            kt.u1 = k.u1 - uoff > 0 ? k.u1 - uoff : 0;
            kt.u2 = k.u2 - uoff < tru ? k.u2 - uoff : tru;
            kt.v1 = k.v1 - voff > 0 ? k.v1 - voff : 0;
            kt.v2 = k.v2 - voff < trv ? k.v2 - voff : trv;
            kt.w1 = k.w1 - woff;
            kt.w2 = k.w2 - woff;
            const uint32_t tile = static_cast<uint32_t>(tv) * t.ntiles_u + static_cast<uint32_t>(tu);
            if (ptexOpenUnit(e.units, unit, l, tile, &reader))
                e.weight = __fadd_rn(e.weight, ptexTriApplyTexels(e, kt, reader, tru * trv));
            else
                e.resident = false;
        }
    }
}

/// Core's `Eval::apply`: the kernel clipped to `face` and applied to its data.
static __device__ DTEX_NOINLINE void ptexTriApply(PtexTriEval& e, PtexTriKernel k, uint32_t face,
                                                    const DtexPtexDeviceFace& f)
{
    k.log2 = k.log2 < static_cast<int>(f.ulog2) ? k.log2 : static_cast<int>(f.ulog2);
    k.u1 = fmaxf(k.u1, 0.0f);
    k.v1 = fmaxf(k.v1, 0.0f);
    k.w1 = fmaxf(k.w1, 0.0f);
    k.u2 = fminf(k.u2, __fsub_rn(1.0f, __fadd_rn(k.v1, k.w1)));
    k.v2 = fminf(k.v2, __fsub_rn(1.0f, __fadd_rn(k.w1, k.u1)));
    k.w2 = fminf(k.w2, __fsub_rn(1.0f, __fadd_rn(k.u1, k.v1)));
    PtexTriIter ke, ko;
    ptexTriIterators(k, &ke, &ko);
    if (!ke.valid && !ko.valid)
        return;
    const int log2 = ptexIsConstant(f) ? 0 : k.log2;
    if (ke.valid)
        ptexTriApplyIter(e, ke, face, f, log2);
    if (ko.valid)
        ptexTriApplyIter(e, ko, face, f, log2);
}

/// Core's `split_and_apply`: the parts of `k` beyond the edges of `face` queued for the
/// neighbours (reoriented into their frames), the rest applied to `face`.
static __device__ DTEX_NOINLINE void ptexTriSplitApply(PtexTriEval& e, PtexTriKernel k, int face,
                                                         const DtexPtexDeviceFace& f, int depth)
{
    const DtexPtexDeviceTexture& ptex = *e.units->ptex;
    // Edge 2 where u < 0, edge 0 where v < 0, edge 1 where w < 0, in core's order.
    const int edges[3] = {2, 0, 1};
    for (int i = 0; i < 3; ++i) {
        const int eid = edges[i];
        float* lo = eid == 2 ? &k.u1 : eid == 0 ? &k.v1 : &k.w1;
        const int afid = f.adjfaces[eid];
        if (!(*lo < 0.0f) || afid < 0 || depth >= DTEX_PTEX_TRIANGLE_MAX_DEPTH ||
            e.count >= DTEX_PTEX_TRIANGLE_STACK)
            continue;
        PtexTriKernel ka = k;
        *lo = 0.0f;
        float* hi = eid == 2 ? &ka.u2 : eid == 0 ? &ka.v2 : &ka.w2;
        *hi = 0.0f;
        DtexPtexDeviceFace af;
        if (!ptexFaceInfo(ptex, afid, &af))
            continue;
        ptexTriReorient(&ka, eid, ptexAdjEdge(f, eid));
        PtexTriJob& j = e.jobs[e.count++];
        j.k = ka;
        j.face = afid;
        j.depth = depth + 1;
    }
    ptexTriApply(e, k, static_cast<uint32_t>(face), f);
}

/// Evaluate the triangle filter at (`u`, `v`) of `face` (face-table entry `f`) over the
/// footprint `uw1 .. vw2`; channels `first .. first + n` into `out`. False if a unit was
/// missing (core's `triangle::eval`).
static __device__ DTEX_NOINLINE bool ptexTriangle(PtexUnits* units, uint32_t face,
                                                    const DtexPtexDeviceFace& f, float u, float v,
                                                    float uw1, float vw1, float uw2, float vw2,
                                                    const DtexPtexFilterOptions& options,
                                                    uint32_t first, uint32_t n, float* out)
{
    PtexTriEval e;
    e.units = units;
    e.first = first;
    e.n = n;
    e.weight = 0.0f;
    e.resident = true;
    e.count = 0;
    for (uint32_t c = 0; c < n; ++c)
        e.result[c] = 0.0f;
    u = fminf(fmaxf(u, 0.0f), 1.0f);
    v = fminf(fmaxf(v, 0.0f), 1.0f);
    const PtexTriKernel k =
        ptexTriBuild(u, v, uw1, vw1, uw2, vw2, options.width, options.blur, f.ulog2);
    ptexTriSplitApply(e, k, static_cast<int>(face), f, 0);
    while (e.count > 0) {
        const PtexTriJob j = e.jobs[--e.count];
        const DtexPtexDeviceFace jf = units->ptex->faces[j.face];
        ptexTriSplitApply(e, j.k, j.face, jf, j.depth);
    }
    const float scale =
        __fdiv_rn(1.0f, __fmul_rn(e.weight, ptexOneValue(units->ptex->data_type)));
    bool finite = true;
    for (uint32_t c = 0; c < n; ++c) {
        out[c] = __fmul_rn(e.result[c], scale);
        finite = finite && isFinite(out[c]);
    }
    if (!finite)
        ptexConstant(*units->ptex, face, first, n, out);
    return e.resident;
}

}  // namespace dtex

#endif  // DEMANDTEX_DEVICE_PTEX_TRIANGLE_CUH
