#include "renderParam.h"

PXR_NAMESPACE_OPEN_SCOPE

void HdDemandTexRenderParam::SetMesh(const SdfPath& id, std::shared_ptr<const HdDemandTexMeshData> mesh) {
    std::lock_guard<std::mutex> lock(_mutex);
    if (mesh) {
        _meshes[id] = std::move(mesh);
    } else if (_meshes.erase(id) == 0) {
        return;
    }
    _version.fetch_add(1, std::memory_order_acq_rel);
}

void HdDemandTexRenderParam::SetMaterial(const SdfPath& id, std::shared_ptr<const HdDemandTexMaterialData> material) {
    std::lock_guard<std::mutex> lock(_mutex);
    if (material) {
        _materials[id] = std::move(material);
    } else if (_materials.erase(id) == 0) {
        return;
    }
    _version.fetch_add(1, std::memory_order_acq_rel);
}

void HdDemandTexRenderParam::SetSearchPaths(std::vector<std::string> paths) {
    std::lock_guard<std::mutex> lock(_mutex);
    _searchPaths = std::move(paths);
}

std::vector<std::string> HdDemandTexRenderParam::SearchPaths() const {
    std::lock_guard<std::mutex> lock(_mutex);
    return _searchPaths;
}

HdDemandTexSceneSnapshot HdDemandTexRenderParam::Snapshot() const {
    std::lock_guard<std::mutex> lock(_mutex);
    HdDemandTexSceneSnapshot snapshot;
    snapshot.version = _version.load(std::memory_order_acquire);
    snapshot.meshes.reserve(_meshes.size());
    for (const auto& entry : _meshes) snapshot.meshes.push_back(entry.second);
    snapshot.materials = _materials;
    return snapshot;
}

PXR_NAMESPACE_CLOSE_SCOPE
