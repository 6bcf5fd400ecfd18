// The demandtex render delegate: meshes, UsdPreviewSurface materials with demand-loaded
// textures, cameras and CPU render buffers; render settings for the texture budget, fill
// threads, interactive vs final mode and samples per pixel; demandtex's statistics.
#ifndef HD_DEMANDTEX_RENDER_DELEGATE_H
#define HD_DEMANDTEX_RENDER_DELEGATE_H

#include "pxr/pxr.h"
#include "pxr/base/tf/staticTokens.h"
#include "pxr/imaging/hd/renderDelegate.h"
#include "pxr/imaging/hd/resourceRegistry.h"

#include "renderParam.h"
#include "renderer.h"

#include <memory>
#include <mutex>

PXR_NAMESPACE_OPEN_SCOPE

// clang-format off
#define HD_DEMANDTEX_RENDER_SETTINGS_TOKENS               \
    ((textureMemoryMiB, "demandtex:textureMemoryMiB"))    \
    ((fillThreads, "demandtex:fillThreads"))              \
    ((fillCpuCores, "demandtex:fillCpuCores"))            \
    ((interactive, "demandtex:interactive"))              \
    ((textureSearchPath, "demandtex:textureSearchPath"))
// clang-format on
TF_DECLARE_PUBLIC_TOKENS(HdDemandTexRenderSettingsTokens, HD_DEMANDTEX_RENDER_SETTINGS_TOKENS);

class HdDemandTexRenderDelegate final : public HdRenderDelegate {
public:
    /// The settings the render pass applies at each execute.
    struct Settings {
        HdDemandTexLoaderSettings loader;
        bool interactive = true;
        unsigned samplesPerPixel = 4;
    };

    HdDemandTexRenderDelegate();
    explicit HdDemandTexRenderDelegate(HdRenderSettingsMap const& settingsMap);
    ~HdDemandTexRenderDelegate() override;

    const TfTokenVector& GetSupportedRprimTypes() const override;
    const TfTokenVector& GetSupportedSprimTypes() const override;
    const TfTokenVector& GetSupportedBprimTypes() const override;
    HdResourceRegistrySharedPtr GetResourceRegistry() const override { return _resourceRegistry; }
    HdRenderParam* GetRenderParam() const override { return _param.get(); }

    HdRenderSettingDescriptorList GetRenderSettingDescriptors() const override { return _descriptors; }
    void SetRenderSetting(TfToken const& key, VtValue const& value) override;
    VtDictionary GetRenderStats() const override;
    HdAovDescriptor GetDefaultAovDescriptor(TfToken const& name) const override;

    HdRenderPassSharedPtr CreateRenderPass(HdRenderIndex* index, HdRprimCollection const& collection) override;
    HdInstancer* CreateInstancer(HdSceneDelegate* delegate, SdfPath const& id) override;
    void DestroyInstancer(HdInstancer* instancer) override;
    HdRprim* CreateRprim(TfToken const& typeId, SdfPath const& rprimId) override;
    void DestroyRprim(HdRprim* rprim) override;
    HdSprim* CreateSprim(TfToken const& typeId, SdfPath const& sprimId) override;
    HdSprim* CreateFallbackSprim(TfToken const& typeId) override;
    void DestroySprim(HdSprim* sprim) override;
    HdBprim* CreateBprim(TfToken const& typeId, SdfPath const& bprimId) override;
    HdBprim* CreateFallbackBprim(TfToken const& typeId) override;
    void DestroyBprim(HdBprim* bprim) override;
    void CommitResources(HdChangeTracker* tracker) override {}

    HdDemandTexRenderParam& Param() { return *_param; }
    /// The current render settings, parsed.
    Settings CurrentSettings() const;
    const HdDemandTexLoaderSettings& AppliedLoaderSettings() const { return _appliedLoader; }
    void SetAppliedLoaderSettings(const HdDemandTexLoaderSettings& s) { _appliedLoader = s; }
    /// Called by the render pass after each launch (for GetRenderStats).
    void RecordPass(std::uint64_t launches, const HdDemandTexIterationStats& stats, std::uint64_t unfinishedPixels);

private:
    void _Initialize();
    void _UpdateSearchPaths();

    HdRenderSettingDescriptorList _descriptors;
    std::unique_ptr<HdDemandTexRenderParam> _param;
    HdResourceRegistrySharedPtr _resourceRegistry;
    HdDemandTexLoaderSettings _appliedLoader;

    mutable std::mutex _statsMutex;
    std::uint64_t _launches = 0;
    HdDemandTexIterationStats _lastPass;
    std::uint64_t _unfinishedPixels = 0;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
