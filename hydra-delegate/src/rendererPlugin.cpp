#include "rendererPlugin.h"

#include "renderDelegate.h"

#include "pxr/base/tf/diagnostic.h"
#include "pxr/imaging/hd/rendererPluginRegistry.h"

#include <demandtex.hpp>

PXR_NAMESPACE_OPEN_SCOPE

TF_REGISTRY_FUNCTION(TfType) { HdRendererPluginRegistry::Define<HdDemandTexRendererPlugin>(); }

HdRenderDelegate* HdDemandTexRendererPlugin::CreateRenderDelegate() {
    try {
        return new HdDemandTexRenderDelegate();
    } catch (const std::exception& e) {
        TF_RUNTIME_ERROR("demandtex: cannot create the render delegate: %s", e.what());
        return nullptr;
    }
}

HdRenderDelegate* HdDemandTexRendererPlugin::CreateRenderDelegate(HdRenderSettingsMap const& settingsMap) {
    try {
        return new HdDemandTexRenderDelegate(settingsMap);
    } catch (const std::exception& e) {
        TF_RUNTIME_ERROR("demandtex: cannot create the render delegate: %s", e.what());
        return nullptr;
    }
}

void HdDemandTexRendererPlugin::DeleteRenderDelegate(HdRenderDelegate* renderDelegate) { delete renderDelegate; }

bool HdDemandTexRendererPlugin::IsSupported(bool gpuEnabled) const {
    TF_UNUSED(gpuEnabled);  // a CPU renderer
    try {
        demandtex::checkAbiVersion();
        return true;
    } catch (const std::exception& e) {
        TF_WARN("demandtex: render delegate unavailable: %s", e.what());
        return false;
    }
}

PXR_NAMESPACE_CLOSE_SCOPE
