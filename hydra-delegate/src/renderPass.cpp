#include "renderPass.h"

#include "renderDelegate.h"

#include "pxr/base/tf/diagnostic.h"
#include "pxr/imaging/cameraUtil/framing.h"
#include "pxr/imaging/hd/renderPassState.h"

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

void HdDemandTexRenderPass::_WaitForFills() {
    if (!_ticket) return;
    try {
        _ticket->wait();
    } catch (const demandtex::Error& e) {
        TF_WARN("demandtex: waiting for texture fills failed: %s", e.what());
    }
    _ticket.reset();
}

void HdDemandTexRenderPass::_Execute(HdRenderPassStateSharedPtr const& state, TfTokenVector const& renderTags) {
    TF_UNUSED(renderTags);
    HdDemandTexRenderParam& param = _delegate->Param();
    const HdDemandTexRenderDelegate::Settings settings = _delegate->CurrentSettings();

    // A loader change (fill threads, streaming mode) must not strand a ticket of the old
    // loader. An interactive loader's fills are never waited for: they finish (or are
    // dropped unread) on its threads, which the loader's destruction stops.
    if (!(settings.loader == _delegate->AppliedLoaderSettings())) {
        if (_delegate->AppliedLoaderSettings().interactive) {
            _ticket.reset();
        } else {
            _WaitForFills();
        }
        param.Textures().Configure(settings.loader);
        _delegate->SetAppliedLoaderSettings(settings.loader);
    }
    // The mode the loader in use streams in (a refused change keeps the old loader).
    const bool interactive = _delegate->AppliedLoaderSettings().interactive;

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

    // Final mode: the previous launch's fills are in before this launch samples. Interactive
    // mode never waits: the launch start publishes the fills that have finished, and the
    // frame shows coarser levels where tiles are still on their way.
    if (!interactive) _WaitForFills();
    if (!_renderer.Finished()) {
        const demandtex::Loader& loader = param.Textures().Loader();
        demandtex::Launch launch = loader.prepareLaunch();
        param.Textures().ResolveColorFormats();
        const HdDemandTexIterationStats stats = _renderer.Iterate(launch, interactive);
        // Interactive: returns at once, the fills go to the loader's background threads.
        _ticket = loader.processRequests(std::move(launch));
        ++_launches;
        param.Textures().ReportFailures();
        _delegate->RecordPass(_launches, stats, _renderer.UnfinishedPixels());
        if (!interactive && stats.samplesMissed != 0) _WaitForFills();
    }
    const bool fillsDone = !_ticket || _ticket->poll();
    if (fillsDone) _ticket.reset();
    // Interactive: every pixel at full detail is the end, whatever fills of views that have
    // gone are still running.
    _converged = _renderer.Finished() && (interactive || fillsDone);
    _renderer.WriteAovs(bindings, _converged);
}

PXR_NAMESPACE_CLOSE_SCOPE
