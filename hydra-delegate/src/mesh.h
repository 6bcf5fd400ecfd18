// HdMesh: triangulates the topology, transforms points to world space and flattens every
// float2 primvar to triangle corners; publishes the result to the render param.
#ifndef HD_DEMANDTEX_MESH_H
#define HD_DEMANDTEX_MESH_H

#include "pxr/pxr.h"
#include "pxr/base/gf/matrix4d.h"
#include "pxr/base/vt/array.h"
#include "pxr/imaging/hd/mesh.h"
#include "pxr/imaging/hd/meshTopology.h"

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexMesh final : public HdMesh {
public:
    explicit HdDemandTexMesh(SdfPath const& id) : HdMesh(id) {}
    ~HdDemandTexMesh() override = default;

    HdDirtyBits GetInitialDirtyBitsMask() const override;
    void Sync(HdSceneDelegate* sceneDelegate, HdRenderParam* renderParam, HdDirtyBits* dirtyBits,
              TfToken const& reprToken) override;
    void Finalize(HdRenderParam* renderParam) override;

protected:
    HdDirtyBits _PropagateDirtyBits(HdDirtyBits bits) const override { return bits; }
    void _InitRepr(TfToken const& reprToken, HdDirtyBits* dirtyBits) override;

private:
    HdMeshTopology _topology;
    VtVec3fArray _points;
    GfMatrix4d _transform{1.0};
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
