// The render pass: each _Execute is one demandtex launch over the pixels still missing
// samples, then the launch's requests go to the fill threads. Interactive mode (the
// default) never blocks _Execute on a fill; final mode waits for each launch's fills.
// IsConverged() stays false until every sample is finished (and, in final mode, no request
// is outstanding), so hosts keep redrawing while tiles stream in.
#ifndef HD_DEMANDTEX_RENDER_PASS_H
#define HD_DEMANDTEX_RENDER_PASS_H

#include "pxr/pxr.h"
#include "pxr/imaging/hd/renderPass.h"

#include "renderer.h"

#include <demandtex.hpp>

#include <cstdint>
#include <optional>

PXR_NAMESPACE_OPEN_SCOPE

class HdDemandTexRenderDelegate;

class HdDemandTexRenderPass final : public HdRenderPass {
public:
    HdDemandTexRenderPass(HdRenderIndex* index, HdRprimCollection const& collection,
                          HdDemandTexRenderDelegate* delegate);
    ~HdDemandTexRenderPass() override;

    bool IsConverged() const override { return _converged; }

protected:
    void _Execute(HdRenderPassStateSharedPtr const& renderPassState, TfTokenVector const& renderTags) override;

private:
    /// Final mode: wait for the last launch's fills (never called for an interactive loader).
    void _WaitForFills();

    HdDemandTexRenderDelegate* _delegate;
    HdDemandTexRenderer _renderer;
    std::uint64_t _sceneVersion = 0;
    std::optional<demandtex::Ticket> _ticket;
    bool _converged = false;
    std::uint64_t _launches = 0;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
