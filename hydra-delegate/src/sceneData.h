// What prims hand the renderer: immutable snapshots of meshes and materials, published
// through the render param and read by the render pass between syncs.
#ifndef HD_DEMANDTEX_SCENE_DATA_H
#define HD_DEMANDTEX_SCENE_DATA_H

#include "pxr/pxr.h"
#include "pxr/base/gf/vec2f.h"
#include "pxr/base/gf/vec3f.h"
#include "pxr/base/gf/vec3i.h"
#include "pxr/base/gf/vec4f.h"
#include "pxr/base/tf/token.h"
#include "pxr/usd/sdf/path.h"

#include "textureRegistry.h"

#include <map>
#include <memory>
#include <vector>

PXR_NAMESPACE_OPEN_SCOPE

/// A triangulated mesh in world space.
struct HdDemandTexMeshData {
    SdfPath id;
    int primId = -1;
    std::vector<GfVec3f> points;     ///< World-space positions.
    std::vector<GfVec3i> triangles;  ///< Indices into `points`.
    /// The authored face of each triangle of one instance (its `elementId`); the triangles
    /// of instance k follow those of instance k - 1, `faces.size()` of them each.
    std::vector<int> faces;
    bool instanced = false;  ///< Drawn by an instancer: the `instanceId` AOV is k, else -1.
    /// Float2 primvars (texture coordinates), three values per triangle (its corners).
    std::map<TfToken, std::vector<GfVec2f>> texcoords;
    /// `displayColor` at every triangle corner (three per triangle), when the mesh has one:
    /// the diffuse colour when no material is bound.
    std::vector<GfVec3f> displayColors;
    SdfPath materialId;
};

/// Which output of a UsdUVTexture a material input reads.
enum class HdDemandTexTextureOutput { Rgb, R, G, B, A };

/// A UsdUVTexture feeding a material input.
struct HdDemandTexTextureInput {
    std::shared_ptr<const HdDemandTexTexture> texture;  ///< Null: the file is missing.
    TfToken primvar;                                     ///< The st primvar's name.
    /// A UsdTransform2d between the primvar and the texture: st' = stX st[0] + stY st[1] +
    /// stOffset (the identity without one).
    GfVec2f stX{1.0f, 0.0f};
    GfVec2f stY{0.0f, 1.0f};
    GfVec2f stOffset{0.0f, 0.0f};
    HdDemandTexTextureOutput output = HdDemandTexTextureOutput::Rgb;
    GfVec4f scale{1.0f, 1.0f, 1.0f, 1.0f};
    GfVec4f bias{0.0f, 0.0f, 0.0f, 0.0f};
    GfVec4f fallback{0.0f, 0.0f, 0.0f, 1.0f};
    bool srgb = false;  ///< Decode sRGB-encoded texels to linear.
    /// `sourceColorSpace` "auto" (the default): decode as sRGB if the file is 8-bit colour.
    bool autoColorSpace = false;
};

/// A colour input: a constant, or a texture.
struct HdDemandTexColorInput {
    GfVec3f value{0.0f, 0.0f, 0.0f};
    bool textured = false;
    HdDemandTexTextureInput texture;

    /// An untextured input of value `v`.
    static HdDemandTexColorInput Constant(const GfVec3f& v) {
        HdDemandTexColorInput input;
        input.value = v;
        return input;
    }
};

/// The UsdPreviewSurface inputs the renderer uses.
struct HdDemandTexMaterialData {
    HdDemandTexColorInput diffuseColor = HdDemandTexColorInput::Constant(GfVec3f(0.18f, 0.18f, 0.18f));
    HdDemandTexColorInput emissiveColor;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
