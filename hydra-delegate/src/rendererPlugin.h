// The plugin entry point hosts find through plugInfo.json (PXR_PLUGINPATH_NAME).
#ifndef HD_DEMANDTEX_RENDERER_PLUGIN_H
#define HD_DEMANDTEX_RENDERER_PLUGIN_H

#include "pxr/pxr.h"
#include "pxr/imaging/hd/rendererPlugin.h"

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexRendererPlugin final : public HdRendererPlugin {
public:
    HdDemandTexRendererPlugin() = default;
    ~HdDemandTexRendererPlugin() override = default;

    HdRenderDelegate* CreateRenderDelegate() override;
    HdRenderDelegate* CreateRenderDelegate(HdRenderSettingsMap const& settingsMap) override;
    void DeleteRenderDelegate(HdRenderDelegate* renderDelegate) override;
    bool IsSupported(bool gpuEnabled = true) const override;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
