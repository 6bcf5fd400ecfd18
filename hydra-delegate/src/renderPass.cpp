#include "renderPass.h"

#include "renderDelegate.h"

#include "pxr/base/tf/diagnostic.h"
#include "pxr/imaging/cameraUtil/framing.h"
#include "pxr/imaging/hd/renderPassState.h"

#include <chrono>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

GfRect2i _DataWindow(const HdRenderPassStateSharedPtr& state) {
    const CameraUtilFraming& framing = state->GetFraming();
    if (framing.IsValid()) return framing.dataWindow;
    const GfVec4f vp = state->GetViewport();  // hosts still on the viewport API
    return GfRect2i(GfVec2i(0), int(vp[2]), int(vp[3]));
}

}  // namespace

HdDemandTexRenderPass::HdDemandTexRenderPass(HdRenderIndex* index, HdRprimCollection const& collection,
                                             HdDemandTexRenderDelegate* delegate)
    : HdRenderPass(index, collection), _delegate(delegate) {}

HdDemandTexRenderPass::~HdDemandTexRenderPass() {
    // Fills of our launches finish on the loader's threads; nothing to cancel.
    _ticket.reset();
}

void HdDemandTexRenderPass::_WaitForFills(bool interactive) {
    if (!_ticket) return;
    try {
        if (interactive) {
            // Keep the host responsive: wait a little, then draw with what has arrived.
            if (!_ticket->waitFor(std::chrono::milliseconds(50))) return;
        } else {
            _ticket->wait();
        }
    } catch (const demandtex::Error& e) {
        TF_WARN("demandtex: waiting for texture fills failed: %s", e.what());
    }
    _ticket.reset();
}

void HdDemandTexRenderPass::_Execute(HdRenderPassStateSharedPtr const& state, TfTokenVector const& renderTags) {
    TF_UNUSED(renderTags);
    HdDemandTexRenderParam& param = _delegate->Param();
    const HdDemandTexRenderDelegate::Settings settings = _delegate->CurrentSettings();

    // A loader change (fill threads) must not strand a ticket of the old loader.
    if (!(settings.loader == _delegate->AppliedLoaderSettings())) {
        _WaitForFills(false);
        param.Textures().Configure(settings.loader);
        _delegate->SetAppliedLoaderSettings(settings.loader);
    }

    const std::uint64_t version = param.Version();
    if (version != _sceneVersion) {
        _sceneVersion = version;
        _renderer.SetScene(param.Snapshot());
    }
    _renderer.SetCamera(state->GetWorldToViewMatrix(), state->GetProjectionMatrix(), _DataWindow(state));
    _renderer.SetSamplesPerPixel(settings.samplesPerPixel);

    const HdRenderPassAovBindingVector& bindings = state->GetAovBindings();
    if (bindings.empty()) {
        TF_WARN("demandtex: the render pass has no AOV bindings; nothing to render into");
        _converged = true;
        return;
    }

    _WaitForFills(settings.interactive);
    if (!_renderer.Finished()) {
        const demandtex::Loader& loader = param.Textures().Loader();
        demandtex::Launch launch = loader.prepareLaunch();
        const HdDemandTexIterationStats stats = _renderer.Iterate(launch, settings.interactive);
        _ticket = loader.processRequests(std::move(launch));
        ++_launches;
        param.Textures().ReportFailures();
        _delegate->RecordPass(_launches, stats, _renderer.UnfinishedPixels());
        if (!settings.interactive && stats.samplesMissed != 0) _WaitForFills(false);
    }
    const bool fillsDone = !_ticket || _ticket->poll();
    if (fillsDone) _ticket.reset();
    _converged = _renderer.Finished() && fillsDone;
    _renderer.WriteAovs(bindings, _converged);
}

PXR_NAMESPACE_CLOSE_SCOPE
