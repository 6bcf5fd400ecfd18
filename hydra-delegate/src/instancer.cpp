#include "instancer.h"

#include "pxr/base/gf/matrix4d.h"
#include "pxr/base/gf/matrix4f.h"
#include "pxr/base/gf/quatd.h"
#include "pxr/base/gf/quatf.h"
#include "pxr/base/gf/quath.h"
#include "pxr/base/gf/vec3d.h"
#include "pxr/base/gf/vec3f.h"
#include "pxr/base/gf/vec3h.h"
#include "pxr/base/gf/vec4f.h"
#include "pxr/base/tf/diagnostic.h"
#include "pxr/imaging/hd/renderIndex.h"
#include "pxr/imaging/hd/sceneDelegate.h"
#include "pxr/imaging/hd/tokens.h"

PXR_NAMESPACE_OPEN_SCOPE

namespace {

/// Element `i` of a primvar holding an array of any of `Ts`, converted to `Out` by `convert`.
template <typename Out, typename... Ts, typename Convert>
bool _Sample(const VtValue& value, int i, Out* out, Convert convert) {
    if (i < 0) return false;
    bool found = false;
    auto one = [&](auto tag) {
        using T = decltype(tag);
        if (found || !value.IsHolding<VtArray<T>>()) return;
        const VtArray<T>& a = value.UncheckedGet<VtArray<T>>();
        if (size_t(i) < a.size()) {
            *out = convert(a[size_t(i)]);
            found = true;
        }
    };
    (one(Ts{}), ...);
    return found;
}

template <typename V>
GfVec3d _Vec3(const V& v) {
    return GfVec3d(double(v[0]), double(v[1]), double(v[2]));
}

}  // namespace

void HdDemandTexInstancer::Sync(HdSceneDelegate* delegate, HdRenderParam* renderParam, HdDirtyBits* dirtyBits) {
    TF_UNUSED(renderParam);
    _UpdateInstancer(delegate, dirtyBits);
    const SdfPath& id = GetId();
    if (!HdChangeTracker::IsAnyPrimvarDirty(*dirtyBits, id)) return;
    for (const HdPrimvarDescriptor& pv : delegate->GetPrimvarDescriptors(id, HdInterpolationInstance)) {
        if (!HdChangeTracker::IsPrimvarDirty(*dirtyBits, id, pv.name)) continue;
        VtValue value = delegate->Get(id, pv.name);
        if (value.IsEmpty()) {
            _primvars.erase(pv.name);
        } else {
            _primvars[pv.name] = std::move(value);
        }
    }
}

VtMatrix4dArray HdDemandTexInstancer::ComputeInstanceTransforms(SdfPath const& prototypeId) {
    const GfMatrix4d instancerTransform = GetDelegate()->GetInstancerTransform(GetId());
    const VtIntArray indices = GetDelegate()->GetInstanceIndices(GetId(), prototypeId);
    VtMatrix4dArray transforms(indices.size(), instancerTransform);
    // Each part applies before what is already there (row vectors: m = part · m).
    auto compose = [&](const TfToken& name, auto part) {
        auto it = _primvars.find(name);
        if (it == _primvars.end()) return;
        for (size_t i = 0; i < indices.size(); ++i) {
            GfMatrix4d m(1.0);
            if (part(it->second, indices[i], &m)) transforms[i] = m * transforms[i];
        }
    };
    // A part made from one vector per instance (a translation, a scale).
    auto vectorPart = [](auto set) {
        return [set](const VtValue& v, int i, GfMatrix4d* m) {
            GfVec3d x;
            if (!_Sample<GfVec3d, GfVec3f, GfVec3d, GfVec3h>(v, i, &x, [](auto y) { return _Vec3(y); })) {
                return false;
            }
            set(m, x);
            return true;
        };
    };
    compose(HdInstancerTokens->instanceTranslations,
            vectorPart([](GfMatrix4d* m, const GfVec3d& t) { m->SetTranslate(t); }));
    compose(HdInstancerTokens->instanceRotations, [](const VtValue& v, int i, GfMatrix4d* m) {
        GfQuatd q;
        const bool found = _Sample<GfQuatd, GfQuath, GfQuatf, GfQuatd>(v, i, &q, [](auto x) {
            const auto im = x.GetImaginary();
            return GfQuatd(double(x.GetReal()), double(im[0]), double(im[1]), double(im[2]));
        }) || _Sample<GfQuatd, GfVec4f>(v, i, &q, [](const GfVec4f& x) {
            // <real, i, j, k>, as Hydra's older instancers give them.
            return GfQuatd(x[0], x[1], x[2], x[3]);
        });
        if (found) m->SetRotate(q);
        return found;
    });
    compose(HdInstancerTokens->instanceScales, vectorPart([](GfMatrix4d* m, const GfVec3d& x) { m->SetScale(x); }));
    compose(HdInstancerTokens->instanceTransforms, [](const VtValue& v, int i, GfMatrix4d* m) {
        return _Sample<GfMatrix4d, GfMatrix4d, GfMatrix4f>(v, i, m, [](auto x) { return GfMatrix4d(x); });
    });
    if (GetParentId().IsEmpty()) return transforms;
    auto* parent = static_cast<HdDemandTexInstancer*>(GetDelegate()->GetRenderIndex().GetInstancer(GetParentId()));
    if (!TF_VERIFY(parent)) return transforms;
    // Nested: every instance of this level inside every instance of the parent.
    const VtMatrix4dArray outer = parent->ComputeInstanceTransforms(GetId());
    VtMatrix4dArray composed;
    composed.reserve(outer.size() * transforms.size());
    for (const GfMatrix4d& o : outer) {
        for (const GfMatrix4d& t : transforms) composed.push_back(t * o);
    }
    return composed;
}

PXR_NAMESPACE_CLOSE_SCOPE
