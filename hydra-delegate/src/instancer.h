// HdInstancer: the instance transforms of point instancers and native instancing (Hydra's
// hydra:instanceTranslations / Rotations / Scales / Transforms primvars, nested instancers
// composed), which meshes bake into world-space copies of themselves.
#ifndef HD_DEMANDTEX_INSTANCER_H
#define HD_DEMANDTEX_INSTANCER_H

#include "pxr/pxr.h"
#include "pxr/base/tf/token.h"
#include "pxr/base/vt/types.h"
#include "pxr/base/vt/value.h"
#include "pxr/imaging/hd/instancer.h"

#include <map>

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexInstancer final : public HdInstancer {
public:
    HdDemandTexInstancer(HdSceneDelegate* delegate, SdfPath const& id) : HdInstancer(delegate, id) {}

    void Sync(HdSceneDelegate* delegate, HdRenderParam* renderParam, HdDirtyBits* dirtyBits) override;

    /// One transform per instance of `prototypeId` (parent instancers' instances included):
    /// instancerTransform · translation · rotation · scale · instanceTransform, composed as
    /// Gf's row vectors read them (the prototype's own transform goes first).
    VtMatrix4dArray ComputeInstanceTransforms(SdfPath const& prototypeId);

private:
    std::map<TfToken, VtValue> _primvars;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
