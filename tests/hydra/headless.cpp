// Headless test driver for the demandtex Hydra render delegate: opens a .usda stage, renders
// it through HdEngine with a minimal render task (no GL, no hdx), writes the colour AOV to a
// PPM image and checks what the options ask for. Also writes the test textures.
//
//   hdDemandTexHeadless make-textures DIR
//   hdDemandTexHeadless render SCENE.usda OUT.ppm [options]
//     --hydra2               UsdImagingStageSceneIndex instead of UsdImagingDelegate
//     --width W --height H   image size (default 256 x 256)
//     --camera PATH          camera prim (default /Cam)
//     --budget-mib N         texture budget (default: the library's)
//     --spp N                samples per pixel (default 4)
//     --interactive          interactive mode (coarser texels while tiles stream in)
//     --max-launches N       give up after N render-pass executes (default 200)
//     --frame-ms N           (interactive) wait N ms between executes, as a viewport's frame
//                            rate does (default 10)
//     --search-path DIRS     demandtex:textureSearchPath
//     --compare-unlimited    render again with an unlimited budget, final mode, and require
//                            the two images to be equal texel for texel
//     --expect-evictions     require the loader to have evicted tiles
//     --expect-preview       (interactive) require a frame, before convergence, in which
//                            pixels were unfinished yet every pixel showing geometry had a
//                            colour (a coarser-level preview) rather than the clear colour
//     --expect-distinct-blue N  require at least N distinct blue values among covered pixels
//                            (each UDIM tile encodes a code 1-15 in blue, see MakeTextures)
//                            and a tile change between neighbouring pixels
//     --expect-prim-color PRIM R G B  every interior pixel of PRIM has colour (R, G, B)
//                            (repeatable)
// PXR_PLUGINPATH_NAME must name the plugin's resources directory, as for any host.
// Exit code 0 when every check passes; messages say which failed.
#include "pxr/pxr.h"
#include "pxr/base/gf/half.h"
#include "pxr/base/gf/vec4f.h"
#include "pxr/base/tf/token.h"
#include "pxr/imaging/cameraUtil/framing.h"
#include "pxr/imaging/hd/camera.h"
#include "pxr/imaging/hd/engine.h"
#include "pxr/imaging/hd/pluginRenderDelegateUniqueHandle.h"
#include "pxr/imaging/hd/renderBuffer.h"
#include "pxr/imaging/hd/renderDelegate.h"
#include "pxr/imaging/hd/renderIndex.h"
#include "pxr/imaging/hd/renderPass.h"
#include "pxr/imaging/hd/renderPassState.h"
#include "pxr/imaging/hd/rendererPluginRegistry.h"
#include "pxr/imaging/hd/rprimCollection.h"
#include "pxr/imaging/hd/task.h"
#include "pxr/imaging/hd/tokens.h"
#include "pxr/usd/usd/stage.h"
#include "pxr/usdImaging/usdImaging/delegate.h"
#include "pxr/usdImaging/usdImaging/sceneIndices.h"
#include "pxr/usdImaging/usdImaging/stageSceneIndex.h"

#include "exr_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

PXR_NAMESPACE_USING_DIRECTIVE

namespace {

const TfToken kPlugin("HdDemandTexRendererPlugin");

/// Runs a render pass (what HdxRenderTask does, without hdx).
class DrawTask final : public HdTask {
public:
    DrawTask(HdRenderPassSharedPtr pass, HdRenderPassStateSharedPtr state, TfTokenVector tags)
        : HdTask(SdfPath::EmptyPath()), _pass(std::move(pass)), _state(std::move(state)), _tags(std::move(tags)) {}
    void Sync(HdSceneDelegate*, HdTaskContext*, HdDirtyBits* bits) override {
        _pass->Sync();
        *bits = HdChangeTracker::Clean;
    }
    void Prepare(HdTaskContext*, HdRenderIndex* index) override { _state->Prepare(index->GetResourceRegistry()); }
    void Execute(HdTaskContext*) override { _pass->Execute(_state, _tags); }
    const TfTokenVector& GetRenderTags() const override { return _tags; }

private:
    HdRenderPassSharedPtr _pass;
    HdRenderPassStateSharedPtr _state;
    TfTokenVector _tags;
};

struct Options {
    std::string scene, out;
    bool hydra2 = false, interactive = false, compareUnlimited = false, expectEvictions = false;
    bool expectPreview = false;
    bool compareFormats = false;  ///< Also render into Float16Vec4 and UNorm8Vec4 colour buffers.
    int width = 256, height = 256, spp = 4, maxLaunches = 200, expectDistinctBlue = 0;
    int frameMs = 10;  ///< Interactive: time between draws, as a viewport's frame rate gives.
    long long budgetMiB = 0;
    std::string camera = "/Cam", searchPath;
    std::string compareScene;  ///< Another scene that must render (almost) the same image.
    std::vector<std::pair<std::string, GfVec3f>> primColors;
    int expectInstanced = -1;  ///< Distinct (primId, instanceId >= 0) pairs expected on screen.
    std::vector<std::pair<std::string, int>> primElements;  ///< Prim, distinct elementIds expected.
};

struct Render {
    std::vector<GfVec4f> color;  // row 0 at the bottom
    std::vector<int> primId;
    std::vector<int> instanceId, elementId;
    std::map<std::string, int> primIdPaths;  // prim path -> primId, from the render index
    VtDictionary stats;
    int launches = 0;
    bool converged = false;
    int previewFrames = 0;  ///< Frames with unfinished pixels and no geometry pixel left clear.
};

std::uint64_t _Stat(const VtDictionary& stats, const std::string& key) {
    auto it = stats.find(key);
    return it != stats.end() && it->second.IsHolding<std::uint64_t>() ? it->second.UncheckedGet<std::uint64_t>() : 0;
}

/// `n` pixels of a colour buffer of `format` (Float32Vec4, Float16Vec4 or UNorm8Vec4) as float RGBA.
std::vector<GfVec4f> ReadColor(const void* data, HdFormat format, size_t n) {
    std::vector<GfVec4f> out(n);
    for (size_t i = 0; i < n; ++i) {
        for (int c = 0; c < 4; ++c) {
            switch (format) {
            case HdFormatFloat16Vec4:
                out[i][c] = float(static_cast<const GfHalf*>(data)[4 * i + c]);
                break;
            case HdFormatUNorm8Vec4:
                out[i][c] = float(static_cast<const unsigned char*>(data)[4 * i + c]) / 255.0f;
                break;
            default:
                out[i][c] = static_cast<const float*>(data)[4 * i + c];
                break;
            }
        }
    }
    return out;
}

/// `v` stored in a colour buffer of `format` and read back as float.
GfVec4f StoredAs(const GfVec4f& v, HdFormat format) {
    GfVec4f out = v;
    for (int c = 0; c < 4; ++c) {
        if (format == HdFormatFloat16Vec4) out[c] = float(GfHalf(v[c]));
        if (format == HdFormatUNorm8Vec4) out[c] = float(std::lround(std::clamp(v[c], 0.0f, 1.0f) * 255.0f)) / 255.0f;
    }
    return out;
}

std::optional<Render> RenderStage(const Options& o, long long budgetMiB, bool interactive,
                                  HdFormat colorFormat = HdFormatFloat32Vec4) {
    UsdStageRefPtr stage = UsdStage::Open(o.scene);
    if (!stage) {
        std::cerr << "cannot open stage " << o.scene << "\n";
        return std::nullopt;
    }
    HdRenderSettingsMap settings;
    settings[TfToken("demandtex:textureMemoryMiB")] = VtValue(int(budgetMiB));
    settings[TfToken("demandtex:interactive")] = VtValue(interactive);
    settings[TfToken("demandtex:textureSearchPath")] = VtValue(o.searchPath);
    settings[HdRenderSettingsTokens->convergedSamplesPerPixel] = VtValue(o.spp);
    HdPluginRenderDelegateUniqueHandle delegate =
        HdRendererPluginRegistry::GetInstance().CreateRenderDelegate(kPlugin, settings);
    if (!delegate) {
        std::cerr << "cannot create the demandtex render delegate (is PXR_PLUGINPATH_NAME set?)\n";
        return std::nullopt;
    }
    std::unique_ptr<HdRenderIndex> index(HdRenderIndex::New(delegate.Get(), HdDriverVector()));
    std::unique_ptr<UsdImagingDelegate> sceneDelegate;
    UsdImagingSceneIndices sceneIndices;
    if (o.hydra2) {
        UsdImagingCreateSceneIndicesInfo info;
        info.stage = stage;
        sceneIndices = UsdImagingCreateSceneIndices(info);
        sceneIndices.stageSceneIndex->SetTime(UsdTimeCode::Default());
        index->InsertSceneIndex(sceneIndices.finalSceneIndex, SdfPath::AbsoluteRootPath());
    } else {
        sceneDelegate = std::make_unique<UsdImagingDelegate>(index.get(), SdfPath::AbsoluteRootPath());
        sceneDelegate->Populate(stage->GetPseudoRoot());
        sceneDelegate->SetTime(UsdTimeCode::Default());
    }

    HdRenderPassSharedPtr pass = delegate->CreateRenderPass(
        index.get(), HdRprimCollection(HdTokens->geometry, HdReprSelector(HdReprTokens->smoothHull)));
    HdRenderPassStateSharedPtr state = delegate->CreateRenderPassState();
    auto newBuffer = [&](const SdfPath& id) {
        return std::unique_ptr<HdRenderBuffer>(
            static_cast<HdRenderBuffer*>(delegate->CreateBprim(HdPrimTypeTokens->renderBuffer, id)));
    };
    auto binding = [](const TfToken& aov, HdRenderBuffer* buffer, const SdfPath& id, const VtValue& clear) {
        HdRenderPassAovBinding b;
        b.aovName = aov;
        b.renderBuffer = buffer;
        b.renderBufferId = id;
        b.clearValue = clear;
        return b;
    };
    const SdfPath colorId("/__aov/color");
    std::unique_ptr<HdRenderBuffer> color = newBuffer(colorId);
    if (!color->Allocate(GfVec3i(o.width, o.height, 1), colorFormat, false)) {
        std::cerr << "the delegate refused a colour buffer of format " << int(colorFormat) << "\n";
        return std::nullopt;
    }
    HdRenderPassAovBindingVector bindings{
        binding(HdAovTokens->color, color.get(), colorId, VtValue(GfVec4f(0.0f, 0.0f, 0.0f, 1.0f)))};
    // The id AOVs (Int32, cleared to -1), and where each is read back to.
    Render r;
    struct IdAov {
        TfToken aov;
        std::vector<int>* out;
        std::unique_ptr<HdRenderBuffer> buffer;
    };
    IdAov ids[] = {{HdAovTokens->primId, &r.primId, nullptr},
                   {HdAovTokens->instanceId, &r.instanceId, nullptr},
                   {HdAovTokens->elementId, &r.elementId, nullptr}};
    for (IdAov& id : ids) {
        const SdfPath path("/__aov/" + id.aov.GetString());
        id.buffer = newBuffer(path);
        id.buffer->Allocate(GfVec3i(o.width, o.height, 1), HdFormatInt32, false);
        bindings.push_back(binding(id.aov, id.buffer.get(), path, VtValue(-1)));
    }
    HdRenderBuffer* prim = ids[0].buffer.get();
    state->SetAovBindings(bindings);

    const SdfPath cameraPath(o.camera);
    const auto* camera = static_cast<const HdCamera*>(index->GetSprim(HdPrimTypeTokens->camera, cameraPath));
    if (!camera) {
        std::cerr << "no camera " << o.camera << " in " << o.scene << "\n";
        return std::nullopt;
    }
    state->SetCamera(camera);
    state->SetFraming(CameraUtilFraming(GfRect2i(GfVec2i(0), o.width, o.height)));
    state->SetOverrideWindowPolicy(std::make_optional(CameraUtilFit));

    HdTaskSharedPtrVector tasks{
        std::make_shared<DrawTask>(pass, state, TfTokenVector{HdRenderTagTokens->geometry})};
    HdEngine engine;
    for (r.launches = 1; r.launches <= o.maxLaunches; ++r.launches) {
        engine.Execute(index.get(), &tasks);
        if (pass->IsConverged()) {
            r.converged = true;
            break;
        }
        // An interactive draw never waits for tiles; a viewport draws again a frame later,
        // and the fill threads have that time.
        if (interactive) std::this_thread::sleep_for(std::chrono::milliseconds(o.frameMs));
        if (o.expectPreview) {
            const std::uint64_t unfinished = _Stat(delegate->GetRenderStats(), "demandtex:unfinishedPixels");
            const auto* c = static_cast<const GfVec4f*>(color->Map());
            const auto* p = static_cast<const int*>(prim->Map());
            size_t clearGeometry = 0;
            for (size_t i = 0; i < size_t(o.width) * o.height; ++i) {
                clearGeometry += p[i] >= 0 && c[i] == GfVec4f(0.0f, 0.0f, 0.0f, 1.0f) ? 1 : 0;
            }
            prim->Unmap();
            color->Unmap();
            const VtDictionary now = delegate->GetRenderStats();
            std::printf("launch %d: %llu pixels unfinished, %zu geometry pixels without a colour yet; requests %llu "
                        "(rejected %llu, dropped %llu), tiles filled %llu, evictions %llu\n",
                        r.launches, (unsigned long long)unfinished, clearGeometry,
                        (unsigned long long)_Stat(now, "demandtex:requests"),
                        (unsigned long long)_Stat(now, "demandtex:requestsRejected"),
                        (unsigned long long)_Stat(now, "demandtex:requestsDropped"),
                        (unsigned long long)_Stat(now, "demandtex:tilesFilled"),
                        (unsigned long long)_Stat(now, "demandtex:evictions"));
            if (unfinished > 0 && clearGeometry == 0) ++r.previewFrames;
        }
    }
    color->Resolve();
    r.color = ReadColor(color->Map(), colorFormat, size_t(o.width) * o.height);
    color->Unmap();
    for (IdAov& id : ids) {
        const auto* values = static_cast<const int*>(id.buffer->Map());
        id.out->assign(values, values + size_t(o.width) * o.height);
        id.buffer->Unmap();
    }
    for (int id : std::set<int>(r.primId.begin(), r.primId.end())) {
        if (id >= 0) r.primIdPaths[index->GetRprimPathFromPrimId(id).GetString()] = id;
    }
    r.stats = delegate->GetRenderStats();
    // Render buffers belong to the delegate: destroy them before it.
    delegate->DestroyBprim(color.release());
    for (IdAov& id : ids) delegate->DestroyBprim(id.buffer.release());
    pass.reset();
    sceneDelegate.reset();
    index.reset();
    return r;
}

bool WritePpm(const std::string& path, const Render& r, int width, int height) {
    std::ofstream f(path, std::ios::binary);
    f << "P6\n" << width << " " << height << "\n255\n";
    for (int y = height - 1; y >= 0; --y) {  // PPM rows run down; Hydra's run up
        for (int x = 0; x < width; ++x) {
            const GfVec4f& c = r.color[size_t(y) * width + x];
            for (int k = 0; k < 3; ++k) {
                const float v = std::pow(std::min(std::max(c[k], 0.0f), 1.0f), 1.0f / 2.2f);
                f.put(char(std::lround(v * 255.0f)));
            }
        }
    }
    return bool(f);
}

/// The test textures: a checker with gradients (so mip levels differ), one colour per file.
void WriteTexture(const std::string& path, int size, GfVec3f tint, float blue) {
    const bool ok = exrw::writeRgbaF32(path, size, size, [&](int x, int y, float rgba[4]) {
        const bool on = ((x / 16) + (y / 16)) % 2 == 0;
        const float g = on ? 1.0f : 0.35f;
        rgba[0] = tint[0] * g * (0.5f + 0.5f * float(x) / float(size));
        rgba[1] = tint[1] * g * (0.5f + 0.5f * float(y) / float(size));
        rgba[2] = blue;
        rgba[3] = 1.0f;
    });
    if (!ok) {
        std::cerr << "cannot write " << path << "\n";
        std::exit(1);
    }
}

int MakeTextures(const std::string& dir) {
    std::filesystem::create_directories(dir);
    WriteTexture(dir + "/checker.exr", 512, GfVec3f(1.0f, 0.8f, 0.3f), 0.2f);
    // UDIM tiles 1001-1003 and 1011-1013; blue encodes the tile number (code = number - 1000).
    for (int tile : {1001, 1002, 1003, 1011, 1012, 1013}) {
        WriteTexture(dir + "/udim." + std::to_string(tile) + ".exr", 256, GfVec3f(0.9f, 0.6f, 0.0f),
                     float(tile - 1000) / 16.0f);
    }
    // udim_high.usda: tiles OpenUSD's own UDIM resolver (1001-1100) never looks at; blue
    // encodes codes 1-9. A <UDIM> set starting at 1101; a <UVTILE> set reaching column 10
    // (u11, no UDIM number) and row 11 (v12); a <UDIM> set with 1001 and 1201.
    const std::pair<const char*, int> highTiles[] = {
        {"high.1101.exr", 1},     {"high.1102.exr", 2},     {"high.1111.exr", 3},  {"high.1112.exr", 4},
        {"wide.u1_v1.exr", 5},    {"wide.u11_v1.exr", 6},   {"wide.u2_v12.exr", 7}, {"mixed.1001.exr", 8},
        {"mixed.1201.exr", 9},
    };
    for (const auto& [name, code] : highTiles) {
        WriteTexture(dir + "/" + name, 128, GfVec3f(0.3f, 0.8f, 0.6f), float(code) / 16.0f);
    }
    // Sixteen textures for the over-budget scene (the test converts them to tiled files).
    for (int i = 0; i < 16; ++i) {
        const GfVec3f tint(0.3f + 0.7f * float(i % 4) / 3.0f, 0.3f + 0.7f * float(i / 4) / 3.0f, 0.5f);
        WriteTexture(dir + "/grid" + std::to_string(i) + ".src.exr", 1024, tint, float(i) / 16.0f);
    }
    // A file that is not an EXR: the texture must fail cleanly to its fallback colour.
    std::ofstream(dir + "/corrupt.exr", std::ios::binary) << "this is not an OpenEXR file";
    std::cout << "wrote test textures to " << dir << "\n";
    return 0;
}

int Fail(const std::string& message) {
    std::cerr << "FAIL: " << message << "\n";
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 2 && args[0] == "make-textures") return MakeTextures(args[1]);
    if (args.size() < 3 || args[0] != "render") {
        std::cerr << "usage: hdDemandTexHeadless make-textures DIR | render SCENE.usda OUT.ppm [options]\n";
        return 2;
    }
    Options o;
    o.scene = args[1];
    o.out = args[2];
    for (size_t i = 3; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                std::cerr << a << " needs a value\n";
                std::exit(2);
            }
            return args[++i];
        };
        if (a == "--hydra2") o.hydra2 = true;
        else if (a == "--interactive") o.interactive = true;
        else if (a == "--compare-unlimited") o.compareUnlimited = true;
        else if (a == "--expect-evictions") o.expectEvictions = true;
        else if (a == "--expect-preview") o.expectPreview = true;
        else if (a == "--compare-formats") o.compareFormats = true;
        else if (a == "--width") o.width = std::stoi(next());
        else if (a == "--height") o.height = std::stoi(next());
        else if (a == "--spp") o.spp = std::stoi(next());
        else if (a == "--max-launches") o.maxLaunches = std::stoi(next());
        else if (a == "--frame-ms") o.frameMs = std::stoi(next());
        else if (a == "--budget-mib") o.budgetMiB = std::stoll(next());
        else if (a == "--camera") o.camera = next();
        else if (a == "--search-path") o.searchPath = next();
        else if (a == "--compare-scene") o.compareScene = next();
        else if (a == "--expect-distinct-blue") o.expectDistinctBlue = std::stoi(next());
        else if (a == "--expect-prim-color") {
            const std::string prim = next();
            const float r = std::stof(next()), g = std::stof(next()), b = std::stof(next());
            o.primColors.emplace_back(prim, GfVec3f(r, g, b));
        } else if (a == "--expect-instanced") {
            o.expectInstanced = std::stoi(next());
        } else if (a == "--expect-elements") {
            const std::string prim = next();
            o.primElements.emplace_back(prim, std::stoi(next()));
        } else {
            std::cerr << "unknown option " << a << "\n";
            return 2;
        }
    }

    const std::optional<Render> r = RenderStage(o, o.budgetMiB, o.interactive);
    if (!r) return 1;
    if (!WritePpm(o.out, *r, o.width, o.height)) return Fail("cannot write " + o.out);
    const std::uint64_t peak = _Stat(r->stats, "demandtex:peakResidentBytes");
    const std::uint64_t budget = _Stat(r->stats, "demandtex:budgetBytes");
    std::printf("%s%s: %s after %d launch(es); tiles filled %llu, evictions %llu, peak resident %.2f MiB "
                "of a %.2f MiB budget, %.2f MiB read\n",
                o.scene.c_str(), o.hydra2 ? " (Hydra 2.0)" : "", r->converged ? "converged" : "NOT converged",
                r->launches, (unsigned long long)_Stat(r->stats, "demandtex:tilesFilled"),
                (unsigned long long)_Stat(r->stats, "demandtex:evictions"), peak / 1048576.0, budget / 1048576.0,
                _Stat(r->stats, "demandtex:bytesRead") / 1048576.0);

    int failures = 0;
    if (!r->converged) failures += Fail("did not converge in " + std::to_string(o.maxLaunches) + " launches");
    if (peak > budget) failures += Fail("peak resident bytes exceed the budget");
    if (o.expectEvictions && _Stat(r->stats, "demandtex:evictions") == 0) {
        failures += Fail("expected the budget to force evictions; none happened");
    }
    if (o.expectPreview && r->previewFrames == 0) {
        failures += Fail("no frame showed a coarser-level preview for every unfinished pixel");
    }
    size_t covered = 0;
    for (int id : r->primId) covered += id >= 0 ? 1 : 0;
    if (covered == 0) failures += Fail("no pixel shows geometry");

    // Pixel i shows a prim, and so do its four neighbours: none of its samples can have
    // missed the prim (its colour is not blended with the background or another prim's).
    auto interior = [&](size_t i) {
        const int x = int(i % o.width), y = int(i / o.width), id = r->primId[i];
        if (id < 0 || x <= 0 || y <= 0 || x + 1 >= o.width || y + 1 >= o.height) return false;
        return r->primId[i - 1] == id && r->primId[i + 1] == id && r->primId[i - o.width] == id &&
               r->primId[i + o.width] == id;
    };

    if (o.expectDistinctBlue > 0) {
        // A UDIM tile has blue code / 16 everywhere: interior pixels whose samples all fell
        // in one tile show that code exactly (the fallback colours' blue of 1 is no tile's;
        // at a prim's edge, a fallback colour blended with the background could fake one).
        auto tileCode = [&](size_t i) {
            if (!interior(i)) return -1;
            const float code = r->color[i][2] * 16.0f;
            const int rounded = int(std::lround(code));
            return std::abs(code - float(rounded)) < 1e-3f && rounded >= 1 && rounded <= 15 ? rounded : -1;
        };
        std::set<int> tiles;
        size_t changes = 0;
        for (int y = 0; y < o.height; ++y) {
            for (int x = 0; x < o.width; ++x) {
                const size_t i = size_t(y) * o.width + x;
                const int code = tileCode(i);
                if (code < 0) continue;
                tiles.insert(code);
                // Neighbours two pixels apart: the pixel between may blend both tiles.
                if (x + 2 < o.width) {
                    const int other = tileCode(i + 2);
                    if (other >= 0 && other != code) ++changes;
                }
            }
        }
        std::printf("UDIM: %zu distinct tiles seen, %zu tile changes between nearby pixels\n", tiles.size(), changes);
        if (int(tiles.size()) < o.expectDistinctBlue) {
            failures += Fail("expected " + std::to_string(o.expectDistinctBlue) + " UDIM tiles, saw " +
                             std::to_string(tiles.size()));
        }
        if (changes == 0) failures += Fail("no UDIM tile boundary crossed between nearby pixels");
    }

    for (const auto& primColor : o.primColors) {
        auto it = r->primIdPaths.find(primColor.first);
        if (it == r->primIdPaths.end()) {
            failures += Fail("prim " + primColor.first + " not visible");
        } else {
            const int id = it->second;
            size_t wrong = 0, seen = 0;
            for (size_t i = 0; i < r->color.size(); ++i) {
                if (r->primId[i] != id || !interior(i)) continue;
                ++seen;
                const GfVec3f c(r->color[i][0], r->color[i][1], r->color[i][2]);
                if ((c - primColor.second).GetLength() > 1e-4f) ++wrong;
            }
            std::printf("%s: %zu interior pixels, %zu not the expected colour\n", primColor.first.c_str(), seen, wrong);
            if (wrong != 0 || seen == 0) failures += Fail(primColor.first + " does not show the expected colour");
        }
    }

    // The id AOVs a host's picking reads: an instanced prim's instances apart, a prim's
    // authored faces apart; background pixels -1 in every id buffer.
    if (o.expectInstanced >= 0) {
        std::set<std::pair<int, int>> pairs;
        size_t stray = 0;
        for (size_t i = 0; i < r->primId.size(); ++i) {
            if (r->primId[i] < 0) stray += r->instanceId[i] != -1 || r->elementId[i] != -1 ? 1 : 0;
            else if (r->instanceId[i] >= 0) pairs.emplace(r->primId[i], r->instanceId[i]);
        }
        std::printf("instances: %zu distinct (primId, instanceId) pairs seen\n", pairs.size());
        if (int(pairs.size()) != o.expectInstanced) {
            failures += Fail("expected " + std::to_string(o.expectInstanced) + " instances, saw " +
                             std::to_string(pairs.size()));
        }
        if (stray != 0) failures += Fail("background pixels with an instanceId or elementId");
    }
    for (const auto& primElements : o.primElements) {
        auto it = r->primIdPaths.find(primElements.first);
        if (it == r->primIdPaths.end()) {
            failures += Fail("prim " + primElements.first + " not visible");
            continue;
        }
        std::set<int> elements;
        for (size_t i = 0; i < r->primId.size(); ++i) {
            if (r->primId[i] == it->second) elements.insert(r->elementId[i]);
        }
        std::printf("%s: elementIds", primElements.first.c_str());
        for (int e : elements) std::printf(" %d", e);
        std::printf("\n");
        std::set<int> want;
        for (int e = 0; e < primElements.second; ++e) want.insert(e);
        if (elements != want) failures += Fail(primElements.first + " does not show its faces as elementIds");
    }

    if (o.compareUnlimited) {
        const std::optional<Render> ref = RenderStage(o, 1 << 20, false);
        if (!ref) return 1;
        if (!ref->converged) failures += Fail("the unlimited-budget render did not converge");
        size_t differ = 0;
        for (size_t i = 0; i < r->color.size(); ++i) differ += r->color[i] != ref->color[i] ? 1 : 0;
        std::printf("against the unlimited-budget render (%d launches): %zu of %zu pixels differ\n", ref->launches,
                    differ, r->color.size());
        if (differ != 0) failures += Fail("the image differs from the unlimited-budget render");
    }
    if (!o.compareScene.empty()) {
        // The same camera on another scene that should give the same image (the same st
        // reached another way): equal up to float rounding of the texture coordinates.
        Options other = o;
        other.scene = o.compareScene;
        const std::optional<Render> ref = RenderStage(other, o.budgetMiB, o.interactive);
        if (!ref) return 1;
        size_t off = 0;
        double sum = 0.0;
        for (size_t i = 0; i < r->color.size(); ++i) {
            float worst = 0.0f;
            for (int c = 0; c < 4; ++c) worst = std::max(worst, std::abs(r->color[i][c] - ref->color[i][c]));
            off += worst > 1e-3f ? 1 : 0;
            sum += worst;
        }
        const double mean = sum / double(r->color.size());
        std::printf("against %s: %zu of %zu pixels differ by more than 1e-3, mean largest difference %.3g\n",
                    o.compareScene.c_str(), off, r->color.size(), mean);
        if (!ref->converged || off * 200 > r->color.size() || mean > 1e-4) {
            failures += Fail("the image differs from " + o.compareScene + "'s");
        }
    }
    if (o.compareFormats) {
        // The same render into half and 8-bit colour buffers (as usdview or another host may
        // bind them): each pixel is the float render's, converted.
        for (HdFormat format : {HdFormatFloat16Vec4, HdFormatUNorm8Vec4}) {
            const std::optional<Render> alt = RenderStage(o, o.budgetMiB, o.interactive, format);
            if (!alt) return 1;
            size_t differ = 0;
            for (size_t i = 0; i < r->color.size(); ++i) differ += alt->color[i] != StoredAs(r->color[i], format);
            std::printf("colour buffer format %d: %zu of %zu pixels differ from the float render converted\n",
                        int(format), differ, r->color.size());
            if (!alt->converged || differ != 0) {
                failures += Fail("the render into colour format " + std::to_string(int(format)) +
                                 " differs from the float render");
            }
        }
    }
    if (failures == 0) std::printf("OK\n");
    return failures == 0 ? 0 : 1;
}
