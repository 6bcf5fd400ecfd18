#include "mesh.h"
#include "instancer.h"

#include "renderParam.h"
#include "sceneData.h"

#include "pxr/base/gf/vec2d.h"
#include "pxr/base/tf/diagnostic.h"
#include "pxr/imaging/hd/meshUtil.h"
#include "pxr/imaging/hd/renderIndex.h"
#include "pxr/imaging/hd/sceneDelegate.h"
#include "pxr/imaging/hd/tokens.h"

#include <algorithm>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

/// The values of a primvar as `V` (float arrays, double arrays converted, or one value for
/// constant interpolation), with its indices applied. Empty when it is of another type.
template <typename V, typename D>
std::vector<V> _Values(const VtValue& value, const VtIntArray& indices) {
    std::vector<V> raw;
    if (value.IsHolding<VtArray<V>>()) {
        const VtArray<V>& a = value.UncheckedGet<VtArray<V>>();
        raw.assign(a.cbegin(), a.cend());
    } else if (value.IsHolding<VtArray<D>>()) {
        for (const D& v : value.UncheckedGet<VtArray<D>>()) raw.emplace_back(V(v));
    } else if (value.IsHolding<V>()) {
        raw.push_back(value.UncheckedGet<V>());
    } else if (value.IsHolding<D>()) {
        raw.emplace_back(V(value.UncheckedGet<D>()));
    } else {
        return {};
    }
    if (indices.empty()) return raw;
    std::vector<V> flat;
    flat.reserve(indices.size());
    for (int i : indices) {
        // An out-of-range index reads zeros rather than stray memory.
        flat.push_back(i >= 0 && static_cast<size_t>(i) < raw.size() ? raw[i] : V(0.0f));
    }
    return flat;
}

/// The Hydra type of `V`, for triangulating face-varying values.
template <typename V>
HdType _HdType();
template <>
HdType _HdType<GfVec2f>() {
    return HdTypeFloatVec2;
}
template <>
HdType _HdType<GfVec3f>() {
    return HdTypeFloatVec3;
}

/// Corner values (three per triangle) of a primvar with `interp` interpolation; empty when
/// its size does not fit the topology (reported once per sync).
template <typename V>
std::vector<V> _TriangleCorners(const SdfPath& id, const TfToken& name, HdInterpolation interp,
                                const std::vector<V>& values, const HdMeshTopology& topology,
                                const VtVec3iArray& triangles, const VtIntArray& primitiveParams) {
    std::vector<V> corners;
    corners.reserve(triangles.size() * 3);
    auto bad = [&](size_t expected) {
        TF_WARN("demandtex: mesh %s: primvar '%s' has %zu values, %zu expected; ignored", id.GetText(),
                name.GetText(), values.size(), expected);
        return std::vector<V>();
    };
    switch (interp) {
    case HdInterpolationConstant:
        if (values.empty()) return bad(1);
        corners.assign(triangles.size() * 3, values[0]);
        return corners;
    case HdInterpolationUniform: {
        if (values.size() < static_cast<size_t>(topology.GetNumFaces())) return bad(topology.GetNumFaces());
        for (size_t t = 0; t < triangles.size(); ++t) {
            const int face = HdMeshUtil::DecodeFaceIndexFromCoarseFaceParam(primitiveParams[t]);
            corners.insert(corners.end(), 3, values[face]);
        }
        return corners;
    }
    case HdInterpolationVertex:
    case HdInterpolationVarying:
        for (const GfVec3i& tri : triangles) {
            for (int k = 0; k < 3; ++k) {
                if (tri[k] < 0 || static_cast<size_t>(tri[k]) >= values.size()) return bad(tri[k] + 1);
                corners.push_back(values[tri[k]]);
            }
        }
        return corners;
    case HdInterpolationFaceVarying: {
        const size_t expected = topology.GetFaceVertexIndices().size();
        if (values.size() < expected) return bad(expected);
        HdMeshUtil util(&topology, id);
        VtValue triangulated;
        if (!util.ComputeTriangulatedFaceVaryingPrimvar(values.data(), static_cast<int>(values.size()),
                                                        _HdType<V>(), &triangulated) ||
            !triangulated.IsHolding<VtArray<V>>()) {
            return bad(expected);
        }
        const VtArray<V>& t = triangulated.UncheckedGet<VtArray<V>>();
        corners.assign(t.cbegin(), t.cend());
        if (corners.size() != triangles.size() * 3) return bad(triangles.size() * 3);
        return corners;
    }
    default:
        return {};
    }
}

}  // namespace

HdDirtyBits HdDemandTexMesh::GetInitialDirtyBitsMask() const {
    return HdChangeTracker::Clean | HdChangeTracker::InitRepr | HdChangeTracker::DirtyPoints |
           HdChangeTracker::DirtyTopology | HdChangeTracker::DirtyTransform | HdChangeTracker::DirtyVisibility |
           HdChangeTracker::DirtyPrimvar | HdChangeTracker::DirtyMaterialId | HdChangeTracker::DirtyInstancer |
           HdChangeTracker::DirtyInstanceIndex;
}

void HdDemandTexMesh::_InitRepr(TfToken const& reprToken, HdDirtyBits* dirtyBits) {
    TF_UNUSED(dirtyBits);
    auto it = std::find_if(_reprs.begin(), _reprs.end(), _ReprComparator(reprToken));
    if (it == _reprs.end()) _reprs.emplace_back(reprToken, HdReprSharedPtr());
}

void HdDemandTexMesh::Sync(HdSceneDelegate* sceneDelegate, HdRenderParam* renderParam, HdDirtyBits* dirtyBits,
                           TfToken const& reprToken) {
    TF_UNUSED(reprToken);
    auto* param = static_cast<HdDemandTexRenderParam*>(renderParam);
    const SdfPath& id = GetId();
    const HdDirtyBits bits = *dirtyBits;

    if (bits & HdChangeTracker::DirtyMaterialId) SetMaterialId(sceneDelegate->GetMaterialId(id));
    if (HdChangeTracker::IsVisibilityDirty(bits, id)) _UpdateVisibility(sceneDelegate, dirtyBits);
    if (HdChangeTracker::IsTransformDirty(bits, id)) _transform = sceneDelegate->GetTransform(id);
    if (HdChangeTracker::IsTopologyDirty(bits, id)) _topology = GetMeshTopology(sceneDelegate);
    if (HdChangeTracker::IsPrimvarDirty(bits, id, HdTokens->points)) {
        const VtValue points = GetPoints(sceneDelegate);
        _points = points.IsHolding<VtVec3fArray>() ? points.UncheckedGet<VtVec3fArray>() : VtVec3fArray();
    }
    _UpdateInstancer(sceneDelegate, dirtyBits);
    HdInstancer::_SyncInstancerAndParents(sceneDelegate->GetRenderIndex(), GetInstancerId());
    // One world transform per instance (one, the mesh's own, without an instancer).
    std::vector<GfMatrix4d> placements{_transform};
    if (!GetInstancerId().IsEmpty()) {
        placements.clear();
        auto* instancer =
            static_cast<HdDemandTexInstancer*>(sceneDelegate->GetRenderIndex().GetInstancer(GetInstancerId()));
        if (instancer) {
            for (const GfMatrix4d& t : instancer->ComputeInstanceTransforms(id)) placements.push_back(_transform * t);
        }
    }

    if (!IsVisible() || placements.empty()) {
        param->SetMesh(id, nullptr);
        *dirtyBits &= ~HdChangeTracker::AllSceneDirtyBits;
        return;
    }

    // Rebuilt whole on any change: meshes in the scenes this delegate serves are small
    // enough, and the render pass rebuilds its acceleration structure anyway.
    auto mesh = std::make_shared<HdDemandTexMeshData>();
    mesh->id = id;
    mesh->primId = GetPrimId();
    mesh->materialId = GetMaterialId();
    // Instances are world-space copies of the prototype: points, triangles and corners.
    mesh->points.reserve(_points.size() * placements.size());
    for (const GfMatrix4d& m : placements) {
        for (const GfVec3f& p : _points) mesh->points.emplace_back(GfVec3f(m.Transform(GfVec3d(p))));
    }

    HdMeshUtil util(&_topology, id);
    VtVec3iArray triangles;
    VtIntArray primitiveParams;
    util.ComputeTriangleIndices(&triangles, &primitiveParams);
    size_t dropped = 0;
    for (const GfVec3i& tri : triangles) {
        const bool valid = tri[0] >= 0 && tri[1] >= 0 && tri[2] >= 0 &&
                           static_cast<size_t>(std::max({tri[0], tri[1], tri[2]})) < _points.size();
        dropped += valid ? 0 : 1;
    }
    if (dropped != 0) {
        TF_WARN("demandtex: mesh %s: %zu triangles index past its %zu points; mesh skipped", id.GetText(), dropped,
                _points.size());
        param->SetMesh(id, nullptr);
        *dirtyBits &= ~HdChangeTracker::AllSceneDirtyBits;
        return;
    }
    const int pointCount = int(_points.size());
    mesh->instanced = !GetInstancerId().IsEmpty();
    mesh->faces.reserve(triangles.size());
    for (size_t t = 0; t < triangles.size(); ++t) {
        const int face = t < primitiveParams.size()
                             ? HdMeshUtil::DecodeFaceIndexFromCoarseFaceParam(primitiveParams[t])
                             : int(t);
        mesh->faces.push_back(face);
    }
    mesh->triangles.reserve(triangles.size() * placements.size());
    for (size_t k = 0; k < placements.size(); ++k) {
        const GfVec3i offset(int(k) * pointCount);
        for (const GfVec3i& tri : triangles) mesh->triangles.push_back(tri + offset);
    }

    for (size_t i = 0; i < HdInterpolationCount; ++i) {
        const auto interp = static_cast<HdInterpolation>(i);
        for (const HdPrimvarDescriptor& pv : GetPrimvarDescriptors(sceneDelegate, interp)) {
            if (pv.name == HdTokens->points) continue;
            VtIntArray indices;
            const VtValue value = pv.indexed ? GetIndexedPrimvar(sceneDelegate, pv.name, &indices)
                                             : GetPrimvar(sceneDelegate, pv.name);
            if (pv.name == HdTokens->displayColor) {
                // The colour of meshes without a material, as Storm shows them.
                std::vector<GfVec3f> colors = _TriangleCorners(
                    id, pv.name, interp, _Values<GfVec3f, GfVec3d>(value, indices), _topology, triangles,
                    primitiveParams);
                if (colors.empty()) continue;
                mesh->displayColors.reserve(colors.size() * placements.size());
                for (size_t k = 0; k < placements.size(); ++k) {
                    mesh->displayColors.insert(mesh->displayColors.end(), colors.begin(), colors.end());
                }
                continue;
            }
            const std::vector<GfVec2f> values = _Values<GfVec2f, GfVec2d>(value, indices);
            if (values.empty()) continue;
            std::vector<GfVec2f> corners =
                _TriangleCorners(id, pv.name, interp, values, _topology, triangles, primitiveParams);
            if (corners.empty()) continue;
            std::vector<GfVec2f>& all = mesh->texcoords[pv.name];
            all.reserve(corners.size() * placements.size());
            for (size_t k = 0; k < placements.size(); ++k) all.insert(all.end(), corners.begin(), corners.end());
        }
    }

    param->SetMesh(id, std::move(mesh));
    *dirtyBits &= ~HdChangeTracker::AllSceneDirtyBits;
}

void HdDemandTexMesh::Finalize(HdRenderParam* renderParam) {
    static_cast<HdDemandTexRenderParam*>(renderParam)->SetMesh(GetId(), nullptr);
}

PXR_NAMESPACE_CLOSE_SCOPE
