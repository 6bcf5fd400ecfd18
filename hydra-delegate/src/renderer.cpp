#include "renderer.h"

#include "renderBuffer.h"

#include "pxr/base/gf/vec2f.h"
#include "pxr/base/gf/vec3d.h"
#include "pxr/base/tf/diagnostic.h"
#include "pxr/base/work/loops.h"
#include "pxr/imaging/hd/tokens.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

/// Interactive passes in a row that finished no pixel before fewer pixels are shaded
/// (fills run in the background: a few passes without progress are normal).
constexpr unsigned kStallLaunches = 8;

/// Sample `index` of a pixel, in [0, 1)²: the R2 low-discrepancy sequence, starting at the
/// pixel centre, so any sample count covers the pixel evenly and deterministically.
GfVec2f _SampleOffset(unsigned index) {
    const double a1 = 0.7548776662466927, a2 = 0.5698402909980532;
    const double x = 0.5 + a1 * index, y = 0.5 + a2 * index;
    return GfVec2f(float(x - std::floor(x)), float(y - std::floor(y)));
}

float _SrgbToLinear(float c) {
    return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

void _Error(void*, RTCError code, const char* message) {
    TF_WARN("demandtex: Embree error %d: %s", int(code), message ? message : "");
}

}  // namespace

/// A primary hit and what shading needs of it.
struct HdDemandTexRenderer::Hit {
    const HdDemandTexMeshData* mesh = nullptr;
    unsigned triangle = 0;
    float u = 0.0f, v = 0.0f;  ///< Barycentrics of corners 1 and 2.
    GfVec3f point, normal;      ///< World-space hit point and unit geometric normal.
    Ray ray, rx, ry;            ///< The camera ray and the rays through the next pixel in x and y.
};

HdDemandTexRenderer::HdDemandTexRenderer() {
    _device = rtcNewDevice(nullptr);
    if (!_device) {
        TF_RUNTIME_ERROR("demandtex: cannot create an Embree device (error %d)", int(rtcGetDeviceError(nullptr)));
        return;
    }
    rtcSetDeviceErrorFunction(_device, _Error, nullptr);
}

HdDemandTexRenderer::~HdDemandTexRenderer() {
    if (_scene) rtcReleaseScene(_scene);
    if (_device) rtcReleaseDevice(_device);
}

void HdDemandTexRenderer::SetScene(HdDemandTexSceneSnapshot scene) {
    _snapshot = std::move(scene);
    if (_scene) rtcReleaseScene(_scene);
    _scene = nullptr;
    Restart();
    if (!_device) return;
    _scene = rtcNewScene(_device);
    for (unsigned id = 0; id < _snapshot.meshes.size(); ++id) {
        const HdDemandTexMeshData& mesh = *_snapshot.meshes[id];
        if (mesh.triangles.empty() || mesh.points.empty()) continue;
        RTCGeometry geometry = rtcNewGeometry(_device, RTC_GEOMETRY_TYPE_TRIANGLE);
        auto* vertices = static_cast<float*>(rtcSetNewGeometryBuffer(
            geometry, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3, 3 * sizeof(float), mesh.points.size()));
        auto* indices = static_cast<unsigned*>(rtcSetNewGeometryBuffer(
            geometry, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, 3 * sizeof(unsigned), mesh.triangles.size()));
        if (!vertices || !indices) {
            rtcReleaseGeometry(geometry);
            continue;
        }
        for (size_t i = 0; i < mesh.points.size(); ++i) {
            for (int k = 0; k < 3; ++k) vertices[3 * i + k] = mesh.points[i][k];
        }
        for (size_t i = 0; i < mesh.triangles.size(); ++i) {
            for (int k = 0; k < 3; ++k) indices[3 * i + k] = unsigned(mesh.triangles[i][k]);
        }
        rtcCommitGeometry(geometry);
        rtcAttachGeometryByID(_scene, geometry, id);  // geometry id = index into meshes
        rtcReleaseGeometry(geometry);
    }
    rtcCommitScene(_scene);
}

void HdDemandTexRenderer::SetCamera(const GfMatrix4d& worldToView, const GfMatrix4d& projection,
                                    const GfRect2i& dataWindow) {
    if (worldToView == _view && projection == _proj && dataWindow == _dataWindow && !_pixels.empty()) return;
    _view = worldToView;
    _proj = projection;
    _invView = worldToView.GetInverse();
    _invProj = projection.GetInverse();
    _orthographic = std::round(projection[3][3]) == 1.0;
    _dataWindow = dataWindow;
    Restart();
}

void HdDemandTexRenderer::SetSamplesPerPixel(unsigned samples) {
    samples = std::max(1u, samples);
    if (samples == _samplesPerPixel) return;
    _samplesPerPixel = samples;
    Restart();
}

void HdDemandTexRenderer::Restart() {
    const size_t w = size_t(std::max(0, _dataWindow.GetWidth()));
    const size_t h = size_t(std::max(0, _dataWindow.GetHeight()));
    _pixels.assign(w * h, Pixel());
    _unfinished = w * h;
    _pixelWindow = 0;
    _stalledPasses = 0;
}

HdDemandTexRenderer::Ray HdDemandTexRenderer::_CameraRay(float x, float y) const {
    // (x, y) in data-window pixels, y up (Hydra buffers have row 0 at the bottom).
    const float w = float(_dataWindow.GetWidth()), h = float(_dataWindow.GetHeight());
    const GfVec3d ndc(2.0 * (x / w) - 1.0, 2.0 * (y / h) - 1.0, -1.0);
    const GfVec3d nearPoint = _invProj.Transform(ndc);
    Ray ray;
    if (_orthographic) {
        ray.origin = GfVec3f(_invView.Transform(nearPoint));
        ray.dir = GfVec3f(_invView.TransformDir(GfVec3d(0.0, 0.0, -1.0)).GetNormalized());
    } else {
        ray.origin = GfVec3f(_invView.Transform(GfVec3d(0.0)));
        ray.dir = GfVec3f(_invView.TransformDir(nearPoint).GetNormalized());
    }
    return ray;
}

HdDemandTexIterationStats HdDemandTexRenderer::Iterate(const demandtex::Launch& launch, bool preview) {
    HdDemandTexIterationStats stats;
    if (_pixels.empty() || _unfinished == 0) return stats;
    const unsigned width = unsigned(_dataWindow.GetWidth());
    const unsigned height = unsigned(_dataWindow.GetHeight());
    std::atomic<std::uint64_t> traced{0}, finished{0}, missed{0}, finishedPixels{0};

    // One pixel's unfinished samples: as many as have their texels resident; the first miss
    // stops it. Adds to the pass's counts (traced, finished, missed, pixels finished).
    auto shadePixel = [&](size_t index, std::uint64_t* counts) {
        Pixel& pixel = _pixels[index];
        if (pixel.samples >= _samplesPerPixel) return;
        const unsigned x = unsigned(index % width), y = unsigned(index / width);
        while (pixel.samples < _samplesPerPixel) {
            Hit hit;
            GfVec4f color(0.0f);  // background: transparent
            Lookups found;
            const bool covered = _Intersect(x, y, pixel.samples, &hit);
            // The sample's own seed: the same requests from the same image.
            const auto key = std::uint32_t(index * _samplesPerPixel + pixel.samples);
            if (covered) color = _Shade(hit, launch, preview, key, &found);
            ++counts[0];
            if (pixel.samples == 0) {
                // Depth and id do not wait for texels.
                pixel.depth = covered ? _Depth(hit) : 1.0f;
                pixel.primId = covered ? hit.mesh->primId : -1;
                pixel.instanceId = -1;
                pixel.elementId = -1;
                if (covered && !hit.mesh->faces.empty()) {
                    const size_t perInstance = hit.mesh->faces.size();
                    const size_t triangle = size_t(hit.triangle);
                    if (hit.mesh->instanced) pixel.instanceId = int(triangle / perInstance);
                    pixel.elementId = hit.mesh->faces[triangle % perInstance];
                }
            }
            if (!found.fullDetail) {
                ++counts[2];
                if (preview && pixel.samples == 0) {
                    // Coarser texels that are resident now, for display only.
                    pixel.preview = color;
                    pixel.hasPreview = found.shown;
                }
                break;
            }
            ++counts[1];
            pixel.sum += color;
            ++pixel.samples;
        }
        if (pixel.samples == _samplesPerPixel) ++counts[3];
    };
    auto addCounts = [&](const std::uint64_t* counts) {
        traced += counts[0];
        finished += counts[1];
        missed += counts[2];
        finishedPixels += counts[3];
    };

    // The pixels shaded: every unfinished one, or the first _pixelWindow of them.
    std::vector<size_t> window;
    if (_pixelWindow != 0) {
        window.reserve(_pixelWindow);
        for (size_t i = 0; i < _pixels.size() && window.size() < _pixelWindow; ++i) {
            if (_pixels[i].samples < _samplesPerPixel) window.push_back(i);
        }
        WorkParallelForN(window.size(), [&](size_t begin, size_t end) {
            std::uint64_t counts[4] = {0, 0, 0, 0};
            for (size_t k = begin; k < end; ++k) shadePixel(window[k], counts);
            addCounts(counts);
        });
    } else {
        WorkParallelForN(height, [&](size_t rowBegin, size_t rowEnd) {
            std::uint64_t counts[4] = {0, 0, 0, 0};
            for (size_t y = rowBegin; y < rowEnd; ++y) {
                for (unsigned x = 0; x < width; ++x) shadePixel(y * width + x, counts);
            }
            addCounts(counts);
        });
    }
    _unfinished -= finishedPixels.load();
    if (preview) {
        // Interactive: a frame whose tiles do not all fit the budget stalls (every resident
        // tile is in use, none can be evicted); shade fewer pixels until pixels finish
        // again, and more again after a pass that finished its whole window.
        _stalledPasses = finishedPixels.load() == 0 ? _stalledPasses + 1 : 0;
        if (_stalledPasses >= kStallLaunches && _unfinished != 0) {
            const std::uint64_t current = _pixelWindow == 0 ? _unfinished : _pixelWindow;
            _pixelWindow = std::max<std::uint64_t>(1, current / 2);
            _stalledPasses = 0;
        } else if (_pixelWindow != 0 && finishedPixels.load() == window.size()) {
            _pixelWindow = std::min<std::uint64_t>(_unfinished, 2 * _pixelWindow);
        }
    }
    stats.samplesTraced = traced;
    stats.samplesFinished = finished;
    stats.samplesMissed = missed;
    return stats;
}

bool HdDemandTexRenderer::_Intersect(unsigned x, unsigned y, unsigned index, Hit* hit) const {
    const GfVec2f offset = _SampleOffset(index);
    const float px = float(x) + offset[0], py = float(y) + offset[1];
    const Ray ray = _CameraRay(px, py);
    if (!_scene) return false;

    RTCIntersectContext context;
    rtcInitIntersectContext(&context);
    RTCRayHit rh;
    rh.ray.org_x = ray.origin[0];
    rh.ray.org_y = ray.origin[1];
    rh.ray.org_z = ray.origin[2];
    rh.ray.dir_x = ray.dir[0];
    rh.ray.dir_y = ray.dir[1];
    rh.ray.dir_z = ray.dir[2];
    rh.ray.tnear = 0.0f;
    rh.ray.tfar = std::numeric_limits<float>::infinity();
    rh.ray.time = 0.0f;
    rh.ray.mask = ~0u;
    rh.ray.id = 0;
    rh.ray.flags = 0;
    rh.hit.geomID = RTC_INVALID_GEOMETRY_ID;
    rh.hit.instID[0] = RTC_INVALID_GEOMETRY_ID;
    rtcIntersect1(_scene, &context, &rh);
    if (rh.hit.geomID == RTC_INVALID_GEOMETRY_ID) return false;

    hit->mesh = _snapshot.meshes[rh.hit.geomID].get();
    hit->triangle = rh.hit.primID;
    hit->u = rh.hit.u;
    hit->v = rh.hit.v;
    hit->point = ray.origin + ray.dir * rh.ray.tfar;
    const GfVec3i& tri = hit->mesh->triangles[hit->triangle];
    const GfVec3f& p0 = hit->mesh->points[tri[0]];
    hit->normal = GfCross(hit->mesh->points[tri[1]] - p0, hit->mesh->points[tri[2]] - p0);
    const float len = hit->normal.GetLength();
    hit->normal = len > 0.0f ? hit->normal / len : GfVec3f(0.0f, 0.0f, 1.0f);

    // Ray differentials: the rays through the next pixel in x and in y.
    hit->ray = ray;
    hit->rx = _CameraRay(px + 1.0f, py);
    hit->ry = _CameraRay(px, py + 1.0f);
    return true;
}

float HdDemandTexRenderer::_Depth(const Hit& hit) const {
    const GfVec3d clip = _proj.Transform(_view.Transform(GfVec3d(hit.point)));
    return std::clamp(float(clip[2] * 0.5 + 0.5), 0.0f, 1.0f);
}

GfVec4f HdDemandTexRenderer::_Shade(const Hit& hit, const demandtex::Launch& launch, bool preview,
                                    std::uint32_t requestKey, Lookups* found) const {
    const HdDemandTexMaterialData* material = &_defaultMaterial;
    auto it = _snapshot.materials.find(hit.mesh->materialId);
    const bool bound = it != _snapshot.materials.end() && it->second;
    if (bound) material = it->second.get();
    GfVec3f diffuse = _EvalColor(material->diffuseColor, hit, launch, preview, requestKey, found);
    const std::vector<GfVec3f>& display = hit.mesh->displayColors;
    if (!bound && display.size() >= size_t(hit.triangle + 1) * 3) {
        // No material: the mesh's displayColor, interpolated over the triangle.
        const GfVec3f* c = &display[size_t(hit.triangle) * 3];
        diffuse = c[0] * (1.0f - hit.u - hit.v) + c[1] * hit.u + c[2] * hit.v;
    }
    const GfVec3f emissive = _EvalColor(material->emissiveColor, hit, launch, preview, requestKey, found);
    // A headlight: enough shape to read a scene, no lights to set up.
    const float facing = std::abs(GfDot(hit.normal, hit.ray.dir));
    const GfVec3f c = diffuse * (0.2f + 0.8f * facing) + emissive;
    return GfVec4f(c[0], c[1], c[2], 1.0f);
}

GfVec3f HdDemandTexRenderer::_EvalColor(const HdDemandTexColorInput& input, const Hit& hit,
                                        const demandtex::Launch& launch, bool preview, std::uint32_t requestKey,
                                        Lookups* found) const {
    if (!input.textured) return input.value;
    const HdDemandTexTextureInput& tex = input.texture;
    GfVec4f rgba = tex.fallback;
    if (tex.texture) {
        // st at the hit and where the differential rays cross the triangle's plane.
        GfVec2f st(0.0f), stx(0.0f), sty(0.0f);
        auto corners = hit.mesh->texcoords.find(tex.primvar);
        if (corners != hit.mesh->texcoords.end()) {
            const GfVec2f* c = &corners->second[size_t(hit.triangle) * 3];
            const GfVec3i& tri = hit.mesh->triangles[hit.triangle];
            const GfVec3f& p0 = hit.mesh->points[tri[0]];
            const GfVec3f e1 = hit.mesh->points[tri[1]] - p0, e2 = hit.mesh->points[tri[2]] - p0;
            const float d00 = GfDot(e1, e1), d01 = GfDot(e1, e2), d11 = GfDot(e2, e2);
            const float denom = d00 * d11 - d01 * d01;
            auto stAt = [&](const Ray& r, GfVec2f* out) {
                const float along = GfDot(hit.normal, r.dir);
                if (std::abs(along) < 1e-12f || denom == 0.0f) return false;
                const float t = GfDot(hit.normal, p0 - r.origin) / along;
                const GfVec3f q = r.origin + r.dir * t - p0;
                const float d20 = GfDot(q, e1), d21 = GfDot(q, e2);
                const float b1 = (d11 * d20 - d01 * d21) / denom;
                const float b2 = (d00 * d21 - d01 * d20) / denom;
                *out = c[0] * (1.0f - b1 - b2) + c[1] * b1 + c[2] * b2;
                return std::isfinite((*out)[0]) && std::isfinite((*out)[1]);
            };
            st = c[0] * (1.0f - hit.u - hit.v) + c[1] * hit.u + c[2] * hit.v;
            // A grazing differential ray misses the plane: take the whole texture as footprint.
            if (!stAt(hit.rx, &stx)) stx = st + GfVec2f(1.0f, 0.0f);
            if (!stAt(hit.ry, &sty)) sty = st + GfVec2f(0.0f, 1.0f);
            // A UsdTransform2d: the points move, so the footprint's differences transform too.
            auto xf = [&tex](const GfVec2f& p) { return tex.stX * p[0] + tex.stY * p[1] + tex.stOffset; };
            st = xf(st);
            stx = xf(stx);
            sty = xf(sty);
        }
        float dsdx = stx[0] - st[0], dtdx = stx[1] - st[1];
        float dsdy = sty[0] - st[0], dtdy = sty[1] - st[1];
        // USD's t runs up the image; demandtex's t runs down from the first row.
        float s = st[0], t;
        dtdx = -dtdx;
        dtdy = -dtdy;
        demandtex::SampleOptions options;
        options.fallbackToCoarser = preview;
        options.requestKey = requestKey;
        demandtex::Sample sample;
        if (tex.texture->udim) {
            // Flip inside the tile, keeping the tile row: (row + 1 - frac), kept below row + 1.
            const float row = std::floor(st[1]);
            t = std::min(row + (1.0f - (st[1] - row)), std::nextafter(row + 1.0f, row));
            sample = launch.tex2DGradUdim(tex.texture->id, s, t, dsdx, dtdx, dsdy, dtdy, options);
        } else {
            t = 1.0f - st[1];
            sample = launch.tex2DGrad(tex.texture->id, s, t, dsdx, dtdx, dsdy, dtdy, options);
        }
        if (!sample.fullDetail()) found->fullDetail = false;
        if (!sample.resident) found->shown = false;
        rgba = GfVec4f(sample.value[0], sample.value[1], sample.value[2], sample.value[3]);
        // The file the lookup read (a UDIM set's tile) decides how its channels and colour
        // space are read.
        const HdDemandTexTextureFile* file = tex.texture->FileAt(st[0], st[1]);
        // Grey and alpha: demandtex serves (g, a, 0, 1); UsdUVTexture reads (g, g, g, a), as
        // Storm swizzles a two-channel texture. One channel is already (g, g, g, 1).
        if (file && file->channels.load(std::memory_order_relaxed) == 2) {
            rgba = GfVec4f(rgba[0], rgba[0], rgba[0], rgba[1]);
        }
        // `auto`: 8-bit colour files are sRGB-encoded (Storm's rule); the rest are linear.
        const bool autoSrgb =
            tex.autoColorSpace && file && file->eightBitColor.load(std::memory_order_relaxed) == 1;
        if (tex.srgb || autoSrgb) {
            for (int k = 0; k < 3; ++k) rgba[k] = _SrgbToLinear(rgba[k]);
        }
        for (int k = 0; k < 4; ++k) rgba[k] = rgba[k] * tex.scale[k] + tex.bias[k];
    }
    switch (tex.output) {
    case HdDemandTexTextureOutput::R:
        return GfVec3f(rgba[0]);
    case HdDemandTexTextureOutput::G:
        return GfVec3f(rgba[1]);
    case HdDemandTexTextureOutput::B:
        return GfVec3f(rgba[2]);
    case HdDemandTexTextureOutput::A:
        return GfVec3f(rgba[3]);
    default:
        return GfVec3f(rgba[0], rgba[1], rgba[2]);
    }
}

void HdDemandTexRenderer::WriteAovs(const HdRenderPassAovBindingVector& bindings, bool converged) const {
    const unsigned width = unsigned(std::max(0, _dataWindow.GetWidth()));
    const unsigned height = unsigned(std::max(0, _dataWindow.GetHeight()));
    const int x0 = _dataWindow.GetMinX(), y0 = _dataWindow.GetMinY();
    for (const HdRenderPassAovBinding& binding : bindings) {
        auto* buffer = dynamic_cast<HdDemandTexRenderBuffer*>(binding.renderBuffer);
        if (!buffer) continue;
        if (binding.aovName == HdAovTokens->color) {
            GfVec4f clear(0.0f);
            if (binding.clearValue.IsHolding<GfVec4f>()) clear = binding.clearValue.UncheckedGet<GfVec4f>();
            WorkParallelForN(height, [&](size_t begin, size_t end) {
                for (size_t y = begin; y < end; ++y) {
                    for (unsigned x = 0; x < width; ++x) {
                        const Pixel& p = _pixels[y * width + x];
                        GfVec4f c(0.0f);
                        if (p.samples > 0) {
                            c = p.sum / float(p.samples);
                        } else if (p.hasPreview) {
                            c = p.preview;
                        } else {
                            // Nothing to show yet (final mode, or no coarser level resident).
                            buffer->WriteColor(unsigned(x0) + x, unsigned(y0 + int(y)), clear);
                            continue;
                        }
                        // Over the clear colour: background samples are transparent.
                        const float a = c[3];
                        const GfVec4f out(c[0] + (1.0f - a) * clear[0], c[1] + (1.0f - a) * clear[1],
                                          c[2] + (1.0f - a) * clear[2], a + (1.0f - a) * clear[3]);
                        buffer->WriteColor(unsigned(x0) + x, unsigned(y0 + int(y)), out);
                    }
                }
            });
        } else if (binding.aovName == HdAovTokens->depth) {
            for (unsigned y = 0; y < height; ++y)
                for (unsigned x = 0; x < width; ++x)
                    buffer->WriteFloat(unsigned(x0) + x, unsigned(y0 + int(y)), _pixels[y * width + x].depth);
        } else if (binding.aovName == HdAovTokens->primId || binding.aovName == HdAovTokens->instanceId ||
                   binding.aovName == HdAovTokens->elementId) {
            int Pixel::*field = binding.aovName == HdAovTokens->primId       ? &Pixel::primId
                                : binding.aovName == HdAovTokens->instanceId ? &Pixel::instanceId
                                                                             : &Pixel::elementId;
            for (unsigned y = 0; y < height; ++y)
                for (unsigned x = 0; x < width; ++x)
                    buffer->WriteInt(unsigned(x0) + x, unsigned(y0 + int(y)), _pixels[y * width + x].*field);
        } else {
            buffer->Clear(binding.clearValue);
        }
        buffer->SetConverged(converged);
    }
}

PXR_NAMESPACE_CLOSE_SCOPE
