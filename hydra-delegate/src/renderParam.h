// The render param: what prims reach during Sync (the texture registry and the scene
// snapshot the render pass reads).
#ifndef HD_DEMANDTEX_RENDER_PARAM_H
#define HD_DEMANDTEX_RENDER_PARAM_H

#include "pxr/pxr.h"
#include "pxr/imaging/hd/renderDelegate.h"

#include "sceneData.h"
#include "textureRegistry.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

PXR_NAMESPACE_OPEN_SCOPE

/// Everything the render pass needs of the scene at one version.
struct HdDemandTexSceneSnapshot {
    std::uint64_t version = 0;
    std::vector<std::shared_ptr<const HdDemandTexMeshData>> meshes;
    std::map<SdfPath, std::shared_ptr<const HdDemandTexMaterialData>> materials;
};

class HdDemandTexRenderParam final : public HdRenderParam {
public:
    explicit HdDemandTexRenderParam(const HdDemandTexLoaderSettings& settings) : _textures(settings) {}

    HdDemandTexTextureRegistry& Textures() { return _textures; }

    /// Publish (or, with null, withdraw) a mesh. Thread-safe (rprims sync in parallel).
    void SetMesh(const SdfPath& id, std::shared_ptr<const HdDemandTexMeshData> mesh);
    /// Publish (or, with null, withdraw) a material.
    void SetMaterial(const SdfPath& id, std::shared_ptr<const HdDemandTexMaterialData> material);

    /// Directories tried for texture paths the host left unresolved.
    void SetSearchPaths(std::vector<std::string> paths);
    std::vector<std::string> SearchPaths() const;

    std::uint64_t Version() const { return _version.load(std::memory_order_acquire); }
    HdDemandTexSceneSnapshot Snapshot() const;

private:
    HdDemandTexTextureRegistry _textures;
    mutable std::mutex _mutex;
    std::map<SdfPath, std::shared_ptr<const HdDemandTexMeshData>> _meshes;
    std::map<SdfPath, std::shared_ptr<const HdDemandTexMaterialData>> _materials;
    std::vector<std::string> _searchPaths;
    std::atomic<std::uint64_t> _version{1};
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
