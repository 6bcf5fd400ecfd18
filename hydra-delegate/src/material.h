// HdMaterial: reads a UsdPreviewSurface network (diffuseColor and emissiveColor, constant or
// from a UsdUVTexture read through a UsdPrimvarReader_float2) and registers its textures.
#ifndef HD_DEMANDTEX_MATERIAL_H
#define HD_DEMANDTEX_MATERIAL_H

#include "pxr/pxr.h"
#include "pxr/imaging/hd/material.h"

#include "sceneData.h"

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexMaterial final : public HdMaterial {
public:
    explicit HdDemandTexMaterial(SdfPath const& id) : HdMaterial(id) {}
    ~HdDemandTexMaterial() override = default;

    void Sync(HdSceneDelegate* sceneDelegate, HdRenderParam* renderParam, HdDirtyBits* dirtyBits) override;
    HdDirtyBits GetInitialDirtyBitsMask() const override { return AllDirty; }
    void Finalize(HdRenderParam* renderParam) override;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
