// The ray caster: Embree for visibility, ray differentials for texture footprints, and
// demandtex in multi-pass mode for texels. One Iterate() is one demandtex launch: every
// pixel sample whose texels are all resident is finished; the others are traced again in a
// later launch, after their tiles arrived. A sample's value depends only on the texels it
// reads, so the finished image equals the render with every texture resident.
#ifndef HD_DEMANDTEX_RENDERER_H
#define HD_DEMANDTEX_RENDERER_H

#include "pxr/pxr.h"
#include "pxr/base/gf/matrix4d.h"
#include "pxr/base/gf/rect2i.h"
#include "pxr/base/gf/vec4f.h"
#include "pxr/imaging/hd/renderPassState.h"

#include "renderParam.h"
#include "sceneData.h"

#include <embree3/rtcore.h>

#include <cstdint>
#include <memory>
#include <vector>

PXR_NAMESPACE_OPEN_SCOPE

/// What one iteration did.
struct HdDemandTexIterationStats {
    std::uint64_t samplesTraced = 0;    ///< Samples traced in this launch.
    std::uint64_t samplesFinished = 0;  ///< Of those, finished (every texel resident).
    std::uint64_t samplesMissed = 0;    ///< Of those, waiting for tiles.
};

class HdDemandTexRenderer {
public:
    HdDemandTexRenderer();
    ~HdDemandTexRenderer();
    HdDemandTexRenderer(const HdDemandTexRenderer&) = delete;
    HdDemandTexRenderer& operator=(const HdDemandTexRenderer&) = delete;

    /// Rebuild the acceleration structure from `scene`; restarts the image.
    void SetScene(HdDemandTexSceneSnapshot scene);
    /// The camera and the pixels to render; restarts the image when they change.
    void SetCamera(const GfMatrix4d& worldToView, const GfMatrix4d& projection, const GfRect2i& dataWindow);
    /// Samples per pixel (at least 1); restarts the image when it changes.
    void SetSamplesPerPixel(unsigned samples);
    /// Forget every finished sample.
    void Restart();

    /// One launch over every unfinished pixel. `preview`: pixels that have no finished
    /// sample yet get a preview from the finest resident coarser level, from the same
    /// lookups (`SampleOptions::fallbackToCoarser`, `Sample::fullDetail`).
    HdDemandTexIterationStats Iterate(const demandtex::Launch& launch, bool preview);

    /// Write the image into the bindings' buffers (color, depth, primId, instanceId,
    /// elementId; others are cleared) and mark them converged when `converged`.
    void WriteAovs(const HdRenderPassAovBindingVector& bindings, bool converged) const;

    /// Whether every pixel has all its samples.
    bool Finished() const { return _unfinished == 0; }
    /// Pixels still missing samples.
    std::uint64_t UnfinishedPixels() const { return _unfinished; }

private:
    struct Pixel {
        GfVec4f sum{0.0f};       ///< Sum of finished samples (premultiplied RGBA).
        GfVec4f preview{0.0f};   ///< Coarser-level preview of the next sample.
        float depth = 1.0f;      ///< Of the first sample.
        int primId = -1;         ///< Of the first sample.
        int instanceId = -1;     ///< Of the first sample: its instance, -1 if not instanced.
        int elementId = -1;      ///< Of the first sample: the authored face.
        std::uint32_t samples = 0;
        bool hasPreview = false;
    };
    struct Ray {
        GfVec3f origin, dir;
    };
    struct Hit;

    Ray _CameraRay(float x, float y) const;
    /// The primary hit of sample `index` of pixel (x, y), with its differential rays;
    /// false for the background.
    bool _Intersect(unsigned x, unsigned y, unsigned index, Hit* hit) const;
    /// NDC depth in [0, 1] of a hit.
    float _Depth(const Hit& hit) const;
    /// What a sample's texture lookups found.
    struct Lookups {
        bool fullDetail = true;  ///< Every texel at the level of detail asked for.
        bool shown = true;       ///< Something to show: full detail or a coarser level.
    };
    /// The colour of a hit, its texture lookups seeded with `requestKey` (interactive
    /// request rejection); `preview`: a missing level shows the finest resident coarser one
    /// (one lookup tells both: `found`).
    GfVec4f _Shade(const Hit& hit, const demandtex::Launch& launch, bool preview, std::uint32_t requestKey,
                   Lookups* found) const;
    GfVec3f _EvalColor(const HdDemandTexColorInput& input, const Hit& hit, const demandtex::Launch& launch,
                       bool preview, std::uint32_t requestKey, Lookups* found) const;

    RTCDevice _device = nullptr;
    RTCScene _scene = nullptr;
    HdDemandTexSceneSnapshot _snapshot;
    HdDemandTexMaterialData _defaultMaterial;

    GfMatrix4d _view{1.0}, _proj{1.0}, _invView{1.0}, _invProj{1.0};
    bool _orthographic = false;
    GfRect2i _dataWindow;
    unsigned _samplesPerPixel = 1;
    std::vector<Pixel> _pixels;
    std::uint64_t _unfinished = 0;
    // Interactive passes over a frame larger than the texture budget: when no pixel has
    // finished for kStallLaunches passes, only the first _pixelWindow unfinished pixels (in
    // row order) are shaded — half the unfinished ones, halved at each further stall down to
    // one pixel, twice as many after a pass that finished its whole window — so that
    // the tiles of the other pixels go unused and can be evicted. 0: every pixel.
    std::uint64_t _pixelWindow = 0;
    unsigned _stalledPasses = 0;
};

PXR_NAMESPACE_CLOSE_SCOPE

#endif
