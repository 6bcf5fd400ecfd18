#include "material.h"

#include "renderParam.h"

#include "pxr/base/gf/vec2d.h"
#include "pxr/base/gf/vec3d.h"
#include "pxr/base/gf/vec4d.h"
#include "pxr/base/tf/diagnostic.h"
#include "pxr/base/tf/staticTokens.h"
#include "pxr/imaging/hd/sceneDelegate.h"
#include "pxr/usd/sdf/assetPath.h"

#include <cmath>

PXR_NAMESPACE_OPEN_SCOPE

// clang-format off
TF_DEFINE_PRIVATE_TOKENS(
    _tokens,
    (UsdPreviewSurface)
    (UsdUVTexture)
    (UsdPrimvarReader_float2)
    (UsdTransform2d)
    (in)
    (rotation)
    (translation)
    (surface)
    (diffuseColor)
    (emissiveColor)
    (file)
    (st)
    (varname)
    (wrapS)
    (wrapT)
    (scale)
    (bias)
    (fallback)
    (sourceColorSpace)
    (sRGB)
    ((autoColorSpace, "auto"))
    (repeat)
    (mirror)
    (clamp)
    (black)
    (rgb)
    (r)
    (g)
    (b)
    (a)
);
// clang-format on

namespace {

template <typename T>
bool _Param(const HdMaterialNode2& node, const TfToken& name, T* out) {
    auto it = node.parameters.find(name);
    if (it == node.parameters.end()) return false;
    if (it->second.IsHolding<T>()) {
        *out = it->second.UncheckedGet<T>();
        return true;
    }
    return false;
}

/// A parameter of type `F`, or of its double-precision form `D` converted; `fallback` when
/// it is neither (or absent).
template <typename F, typename D>
F _Value(const HdMaterialNode2& node, const TfToken& name, F fallback) {
    F f;
    D d;
    if (_Param(node, name, &f)) return f;
    if (_Param(node, name, &d)) return F(d);
    return fallback;
}

GfVec3f _Color(const HdMaterialNode2& node, const TfToken& name, GfVec3f fallback) {
    return _Value<GfVec3f, GfVec3d>(node, name, fallback);
}

GfVec4f _Vec4(const HdMaterialNode2& node, const TfToken& name, GfVec4f fallback) {
    return _Value<GfVec4f, GfVec4d>(node, name, fallback);
}

GfVec2f _Vec2(const HdMaterialNode2& node, const TfToken& name, GfVec2f fallback) {
    return _Value<GfVec2f, GfVec2d>(node, name, fallback);
}

float _Float(const HdMaterialNode2& node, const TfToken& name, float fallback) {
    return _Value<float, double>(node, name, fallback);
}

/// The node the first of `connections` comes from, or null.
const HdMaterialNode2* _Upstream(const HdMaterialNetwork2& network,
                                 const std::vector<HdMaterialConnection2>& connections) {
    if (connections.empty()) return nullptr;
    auto it = network.nodes.find(connections.front().upstreamNode);
    return it == network.nodes.end() ? nullptr : &it->second;
}

/// A token-valued parameter that hosts deliver as TfToken or std::string.
TfToken _Token(const HdMaterialNode2& node, const TfToken& name) {
    TfToken t;
    std::string s;
    if (_Param(node, name, &t)) return t;
    if (_Param(node, name, &s)) return TfToken(s);
    return TfToken();
}

/// UsdUVTexture's wrap modes. `useMetadata` (the default, and any value not named here)
/// means the file's opinion, and black where the file has none, as Storm does: demandtex's
/// `FromFile`, which reads maketx's `wrapmodes` when the texture opens.
demandtex::AddressMode _Wrap(const TfToken& mode) {
    if (mode == _tokens->repeat) return demandtex::AddressMode::Wrap;
    if (mode == _tokens->mirror) return demandtex::AddressMode::Mirror;
    if (mode == _tokens->clamp) return demandtex::AddressMode::Clamp;
    if (mode == _tokens->black) return demandtex::AddressMode::Border;
    return demandtex::AddressMode::FromFile;
}

HdDemandTexTextureOutput _Output(const TfToken& name) {
    if (name == _tokens->r) return HdDemandTexTextureOutput::R;
    if (name == _tokens->g) return HdDemandTexTextureOutput::G;
    if (name == _tokens->b) return HdDemandTexTextureOutput::B;
    if (name == _tokens->a) return HdDemandTexTextureOutput::A;
    return HdDemandTexTextureOutput::Rgb;
}

/// Fill `input` from the UsdUVTexture `texNode`; false if the node is not one.
bool _ReadTexture(const SdfPath& materialId, const TfToken& inputName, const HdMaterialNetwork2& network,
                  const HdMaterialConnection2& connection, HdDemandTexRenderParam& param,
                  HdDemandTexTextureInput* input) {
    auto it = network.nodes.find(connection.upstreamNode);
    if (it == network.nodes.end() || it->second.nodeTypeId != _tokens->UsdUVTexture) return false;
    const HdMaterialNode2& tex = it->second;
    const std::string context = "material " + materialId.GetString() + " input " + inputName.GetString();

    input->output = _Output(connection.upstreamOutputName);
    input->scale = _Vec4(tex, _tokens->scale, GfVec4f(1.0f));
    input->bias = _Vec4(tex, _tokens->bias, GfVec4f(0.0f));
    input->fallback = _Vec4(tex, _tokens->fallback, GfVec4f(0.0f, 0.0f, 0.0f, 1.0f));
    // "auto": sRGB for 8-bit colour files, decided once the texture has opened (its format).
    const TfToken colorSpace = _Token(tex, _tokens->sourceColorSpace);
    input->srgb = colorSpace == _tokens->sRGB;
    input->autoColorSpace = colorSpace.IsEmpty() || colorSpace == _tokens->autoColorSpace;

    input->primvar = _tokens->st;
    auto st = tex.inputConnections.find(_tokens->st);
    if (st != tex.inputConnections.end() && !st->second.empty()) {
        const HdMaterialNode2* node = _Upstream(network, st->second);
        if (node && node->nodeTypeId == _tokens->UsdTransform2d) {
            // st = R(rotation) (in * scale) + translation, the rotation in degrees counter-
            // clockwise, as UsdPreviewSurface defines it; `in` comes from a primvar reader.
            const GfVec2f scale = _Vec2(*node, _tokens->scale, GfVec2f(1.0f));
            const double radians = double(_Float(*node, _tokens->rotation, 0.0f)) * M_PI / 180.0;
            const float c = float(std::cos(radians)), s = float(std::sin(radians));
            input->stX = GfVec2f(c * scale[0], s * scale[0]);
            input->stY = GfVec2f(-s * scale[1], c * scale[1]);
            input->stOffset = _Vec2(*node, _tokens->translation, GfVec2f(0.0f));
            auto in = node->inputConnections.find(_tokens->in);
            node = in != node->inputConnections.end() ? _Upstream(network, in->second) : nullptr;
        }
        if (node && node->nodeTypeId == _tokens->UsdPrimvarReader_float2) {
            const TfToken varname = _Token(*node, _tokens->varname);
            if (!varname.IsEmpty()) input->primvar = varname;
        } else {
            TF_WARN("demandtex: %s: st comes from an unsupported node; reading primvar 'st'", context.c_str());
        }
    }

    SdfAssetPath asset;
    std::string authored;
    if (_Param(tex, _tokens->file, &asset)) {
        authored = asset.GetAssetPath();
    } else {
        _Param(tex, _tokens->file, &authored);
    }
    const std::string resolved = asset.GetResolvedPath();
    if (authored.empty() && resolved.empty()) {
        TF_WARN("demandtex: %s: UsdUVTexture has no file; rendering its fallback colour", context.c_str());
        return true;
    }
    HdDemandTexTextureKey key;
    key.path = HdDemandTexResolveTexturePath(authored, resolved, param.SearchPaths());
    key.wrapS = _Wrap(_Token(tex, _tokens->wrapS));
    key.wrapT = _Wrap(_Token(tex, _tokens->wrapT));
    key.fallback = input->fallback;
    if (key.path.empty()) {
        TF_WARN("demandtex: %s: texture '%s' not found (unresolved; searched the demandtex:textureSearchPath "
                "setting, $DEMANDTEX_TEXTURE_PATH and the working directory); rendering its fallback colour",
                context.c_str(), authored.c_str());
        return true;
    }
    input->texture = param.Textures().Acquire(key, context);
    return true;
}

HdDemandTexColorInput _ReadColor(const SdfPath& materialId, const HdMaterialNetwork2& network,
                                 const HdMaterialNode2& surface, const TfToken& name, GfVec3f defaultValue,
                                 HdDemandTexRenderParam& param) {
    HdDemandTexColorInput input;
    input.value = _Color(surface, name, defaultValue);
    auto conn = surface.inputConnections.find(name);
    if (conn != surface.inputConnections.end() && !conn->second.empty()) {
        if (_ReadTexture(materialId, name, network, conn->second.front(), param, &input.texture)) {
            input.textured = true;
        } else {
            TF_WARN("demandtex: material %s: %s comes from an unsupported node; using its value",
                    materialId.GetText(), name.GetText());
        }
    }
    return input;
}

/// The material data of a network whose surface terminal is a UsdPreviewSurface.
HdDemandTexMaterialData _ReadPreviewSurface(const SdfPath& materialId, const HdMaterialNetwork2& network,
                                            HdDemandTexRenderParam& param) {
    HdDemandTexMaterialData data;
    auto terminal = network.terminals.find(_tokens->surface);
    if (terminal == network.terminals.end()) return data;
    auto node = network.nodes.find(terminal->second.upstreamNode);
    if (node == network.nodes.end()) return data;
    if (node->second.nodeTypeId != _tokens->UsdPreviewSurface) {
        TF_WARN("demandtex: material %s: surface is a %s, not a UsdPreviewSurface; using the default grey",
                materialId.GetText(), node->second.nodeTypeId.GetText());
        return data;
    }
    const HdMaterialNode2& surface = node->second;
    data.diffuseColor =
        _ReadColor(materialId, network, surface, _tokens->diffuseColor, GfVec3f(0.18f), param);
    data.emissiveColor =
        _ReadColor(materialId, network, surface, _tokens->emissiveColor, GfVec3f(0.0f), param);
    return data;
}

}  // namespace

void HdDemandTexMaterial::Sync(HdSceneDelegate* sceneDelegate, HdRenderParam* renderParam,
                               HdDirtyBits* dirtyBits) {
    auto* param = static_cast<HdDemandTexRenderParam*>(renderParam);
    if (*dirtyBits & (DirtyResource | DirtyParams)) {
        const VtValue resource = sceneDelegate->GetMaterialResource(GetId());
        auto data = std::make_shared<HdDemandTexMaterialData>();
        if (resource.IsHolding<HdMaterialNetworkMap>()) {
            const HdMaterialNetwork2 network =
                HdConvertToHdMaterialNetwork2(resource.UncheckedGet<HdMaterialNetworkMap>());
            *data = _ReadPreviewSurface(GetId(), network, *param);
        }
        param->SetMaterial(GetId(), std::move(data));
    }
    *dirtyBits = Clean;
}

void HdDemandTexMaterial::Finalize(HdRenderParam* renderParam) {
    static_cast<HdDemandTexRenderParam*>(renderParam)->SetMaterial(GetId(), nullptr);
}

PXR_NAMESPACE_CLOSE_SCOPE
