#include "renderDelegate.h"

#include "material.h"
#include "mesh.h"
#include "renderBuffer.h"
#include "renderPass.h"

#include "pxr/base/tf/getenv.h"
#include "pxr/base/tf/diagnostic.h"
#include "pxr/base/tf/stringUtils.h"
#include "pxr/imaging/hd/camera.h"
#include "pxr/imaging/hd/instancer.h"
#include "instancer.h"
#include "pxr/imaging/hd/tokens.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>

PXR_NAMESPACE_OPEN_SCOPE

TF_DEFINE_PUBLIC_TOKENS(HdDemandTexRenderSettingsTokens, HD_DEMANDTEX_RENDER_SETTINGS_TOKENS);

namespace {

const TfTokenVector kRprimTypes = {HdPrimTypeTokens->mesh};
const TfTokenVector kSprimTypes = {HdPrimTypeTokens->camera, HdPrimTypeTokens->material};
const TfTokenVector kBprimTypes = {HdPrimTypeTokens->renderBuffer};

/// A setting as an integer, accepting the int types hosts send (usdview: int; others may
/// send unsigned or 64-bit values, or doubles from UI sliders).
long long _AsInt(const VtValue& v, long long fallback) {
    if (v.IsHolding<int>()) return v.UncheckedGet<int>();
    if (v.IsHolding<unsigned int>()) return v.UncheckedGet<unsigned int>();
    if (v.IsHolding<long>()) return v.UncheckedGet<long>();
    if (v.IsHolding<long long>()) return v.UncheckedGet<long long>();
    if (v.IsHolding<unsigned long>()) return (long long)v.UncheckedGet<unsigned long>();
    if (v.IsHolding<float>()) return (long long)v.UncheckedGet<float>();
    if (v.IsHolding<double>()) return (long long)v.UncheckedGet<double>();
    return fallback;
}

/// A setting as a real number (doubles from UI sliders and usdview, floats, or integers).
double _AsDouble(const VtValue& v, double fallback) {
    if (v.IsHolding<double>()) return v.UncheckedGet<double>();
    if (v.IsHolding<float>()) return v.UncheckedGet<float>();
    constexpr long long kNotANumber = std::numeric_limits<long long>::min();
    const long long i = _AsInt(v, kNotANumber);
    return i == kNotANumber ? fallback : double(i);
}

bool _AsBool(const VtValue& v, bool fallback) {
    if (v.IsHolding<bool>()) return v.UncheckedGet<bool>();
    return _AsInt(v, fallback ? 1 : 0) != 0;
}

}  // namespace

HdDemandTexRenderDelegate::HdDemandTexRenderDelegate() : HdRenderDelegate() { _Initialize(); }

HdDemandTexRenderDelegate::HdDemandTexRenderDelegate(HdRenderSettingsMap const& settingsMap)
    : HdRenderDelegate(settingsMap) {
    _Initialize();
}

HdDemandTexRenderDelegate::~HdDemandTexRenderDelegate() = default;

void HdDemandTexRenderDelegate::_Initialize() {
    const demandtex::LoaderOptions defaults;
    _descriptors = {
        {"Texture memory budget (MiB)", HdDemandTexRenderSettingsTokens->textureMemoryMiB,
         VtValue(int(defaults.maxTextureMemory() >> 20))},
        {"Texture fill threads (0 = the default: one per core, at least 8 when interactive)", HdDemandTexRenderSettingsTokens->fillThreads, VtValue(0)},
        {"Texture fill CPU limit when interactive (cores; 0 = none)", HdDemandTexRenderSettingsTokens->fillCpuCores,
         VtValue(double(DTEX_CPU_RENDERER_FILL_CPU_CORES))},
        {"Interactive (coarser texels while tiles stream in)", HdDemandTexRenderSettingsTokens->interactive,
         VtValue(true)},
        {"Samples per pixel", HdRenderSettingsTokens->convergedSamplesPerPixel, VtValue(4)},
        {"Texture search path (for unresolved relative paths)", HdDemandTexRenderSettingsTokens->textureSearchPath,
         VtValue(std::string())},
    };
    _PopulateDefaultSettings(_descriptors);
    _appliedLoader = CurrentSettings().loader;
    _param = std::make_unique<HdDemandTexRenderParam>(_appliedLoader);
    _resourceRegistry = std::make_shared<HdResourceRegistry>();
    _UpdateSearchPaths();
}

HdDemandTexRenderDelegate::Settings HdDemandTexRenderDelegate::CurrentSettings() const {
    Settings s;
    const long long mib = _AsInt(GetRenderSetting(HdDemandTexRenderSettingsTokens->textureMemoryMiB), 0);
    s.loader.budgetBytes = mib > 0 ? std::uint64_t(mib) << 20 : 0;
    const long long threads = _AsInt(GetRenderSetting(HdDemandTexRenderSettingsTokens->fillThreads), 0);
    s.loader.fillThreads = threads > 0 ? std::uint32_t(threads) : 0;
    s.interactive = _AsBool(GetRenderSetting(HdDemandTexRenderSettingsTokens->interactive), true);
    s.loader.interactive = s.interactive;
    // The render threads shade on every core: an interactive loader's fills take at most
    // this much CPU, so a burst of them does not stall a frame. Final renders wait for
    // their fills and take them at full speed.
    const double cores = _AsDouble(GetRenderSetting(HdDemandTexRenderSettingsTokens->fillCpuCores),
                                   DTEX_CPU_RENDERER_FILL_CPU_CORES);
    s.loader.fillCpuCores = s.interactive && std::isfinite(cores) && cores > 0.0
                                ? float(std::max(cores, double(DTEX_MIN_FILL_CPU_CORES)))
                                : 0.0f;
    const long long spp = _AsInt(GetRenderSetting(HdRenderSettingsTokens->convergedSamplesPerPixel), 4);
    s.samplesPerPixel = unsigned(std::clamp<long long>(spp, 1, 4096));
    return s;
}

void HdDemandTexRenderDelegate::SetRenderSetting(TfToken const& key, VtValue const& value) {
    HdRenderDelegate::SetRenderSetting(key, value);
    if (key == HdDemandTexRenderSettingsTokens->textureSearchPath) _UpdateSearchPaths();
}

void HdDemandTexRenderDelegate::_UpdateSearchPaths() {
    std::vector<std::string> paths;
    const VtValue setting = GetRenderSetting(HdDemandTexRenderSettingsTokens->textureSearchPath);
    if (setting.IsHolding<std::string>()) {
        for (const std::string& p : TfStringSplit(setting.UncheckedGet<std::string>(), ":"))
            if (!p.empty()) paths.push_back(p);
    }
    for (const std::string& p : TfStringSplit(TfGetenv("DEMANDTEX_TEXTURE_PATH"), ":"))
        if (!p.empty()) paths.push_back(p);
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (!ec) paths.push_back(cwd.string());
    _param->SetSearchPaths(std::move(paths));
}

void HdDemandTexRenderDelegate::RecordPass(std::uint64_t launches, const HdDemandTexIterationStats& stats,
                                           std::uint64_t unfinishedPixels) {
    std::lock_guard<std::mutex> lock(_statsMutex);
    _launches = launches;
    _lastPass = stats;
    _unfinishedPixels = unfinishedPixels;
}

VtDictionary HdDemandTexRenderDelegate::GetRenderStats() const {
    VtDictionary out;
    try {
        const demandtex::Stats s = _param->Textures().Loader().stats();
        out["demandtex:tilesFilled"] = VtValue(uint64_t(s.tiles_filled));
        out["demandtex:mipTailsFilled"] = VtValue(uint64_t(s.mip_tails_filled));
        out["demandtex:bytesRead"] = VtValue(uint64_t(s.bytes_read));
        out["demandtex:residentBytes"] = VtValue(uint64_t(s.resident_bytes));
        out["demandtex:peakResidentBytes"] = VtValue(uint64_t(s.peak_resident_bytes));
        out["demandtex:budgetBytes"] = VtValue(uint64_t(s.budget_bytes));
        out["demandtex:evictions"] = VtValue(uint64_t(s.evictions));
        out["demandtex:requests"] = VtValue(uint64_t(s.requests));
        out["demandtex:readErrors"] = VtValue(uint64_t(s.read_errors));
        out["demandtex:textures"] = VtValue(uint64_t(s.textures));
        out["demandtex:failedTextures"] = VtValue(uint64_t(s.failed_textures));
        out["demandtex:loaderLaunches"] = VtValue(uint64_t(s.launches));
        out["demandtex:requestsRejected"] = VtValue(uint64_t(s.requests_rejected));
        out["demandtex:requestsDropped"] = VtValue(uint64_t(s.requests_dropped));
        out["demandtex:fillsDroppedStale"] = VtValue(uint64_t(s.fills_dropped_stale));
    } catch (const demandtex::Error& e) {
        out["demandtex:error"] = VtValue(std::string(e.what()));
    }
    std::lock_guard<std::mutex> lock(_statsMutex);
    out["demandtex:launches"] = VtValue(_launches);
    out["demandtex:samplesTracedLastLaunch"] = VtValue(uint64_t(_lastPass.samplesTraced));
    out["demandtex:samplesMissedLastLaunch"] = VtValue(uint64_t(_lastPass.samplesMissed));
    out["demandtex:unfinishedPixels"] = VtValue(_unfinishedPixels);
    return out;
}

HdAovDescriptor HdDemandTexRenderDelegate::GetDefaultAovDescriptor(TfToken const& name) const {
    if (name == HdAovTokens->color) return HdAovDescriptor(HdFormatFloat32Vec4, false, VtValue(GfVec4f(0.0f)));
    if (name == HdAovTokens->depth) return HdAovDescriptor(HdFormatFloat32, false, VtValue(1.0f));
    if (name == HdAovTokens->primId || name == HdAovTokens->instanceId || name == HdAovTokens->elementId) {
        return HdAovDescriptor(HdFormatInt32, false, VtValue(-1));
    }
    return HdAovDescriptor();
}

const TfTokenVector& HdDemandTexRenderDelegate::GetSupportedRprimTypes() const { return kRprimTypes; }
const TfTokenVector& HdDemandTexRenderDelegate::GetSupportedSprimTypes() const { return kSprimTypes; }
const TfTokenVector& HdDemandTexRenderDelegate::GetSupportedBprimTypes() const { return kBprimTypes; }

HdRenderPassSharedPtr HdDemandTexRenderDelegate::CreateRenderPass(HdRenderIndex* index,
                                                                  HdRprimCollection const& collection) {
    return std::make_shared<HdDemandTexRenderPass>(index, collection, this);
}

HdInstancer* HdDemandTexRenderDelegate::CreateInstancer(HdSceneDelegate* delegate, SdfPath const& id) {
    return new HdDemandTexInstancer(delegate, id);
}

void HdDemandTexRenderDelegate::DestroyInstancer(HdInstancer* instancer) { delete instancer; }

HdRprim* HdDemandTexRenderDelegate::CreateRprim(TfToken const& typeId, SdfPath const& rprimId) {
    if (typeId == HdPrimTypeTokens->mesh) return new HdDemandTexMesh(rprimId);
    TF_CODING_ERROR("demandtex: unknown rprim type %s", typeId.GetText());
    return nullptr;
}

void HdDemandTexRenderDelegate::DestroyRprim(HdRprim* rprim) { delete rprim; }

HdSprim* HdDemandTexRenderDelegate::CreateSprim(TfToken const& typeId, SdfPath const& sprimId) {
    if (typeId == HdPrimTypeTokens->camera) return new HdCamera(sprimId);
    if (typeId == HdPrimTypeTokens->material) return new HdDemandTexMaterial(sprimId);
    TF_CODING_ERROR("demandtex: unknown sprim type %s", typeId.GetText());
    return nullptr;
}

HdSprim* HdDemandTexRenderDelegate::CreateFallbackSprim(TfToken const& typeId) {
    return CreateSprim(typeId, SdfPath::EmptyPath());
}

void HdDemandTexRenderDelegate::DestroySprim(HdSprim* sprim) { delete sprim; }

HdBprim* HdDemandTexRenderDelegate::CreateBprim(TfToken const& typeId, SdfPath const& bprimId) {
    if (typeId == HdPrimTypeTokens->renderBuffer) return new HdDemandTexRenderBuffer(bprimId);
    TF_CODING_ERROR("demandtex: unknown bprim type %s", typeId.GetText());
    return nullptr;
}

HdBprim* HdDemandTexRenderDelegate::CreateFallbackBprim(TfToken const& typeId) {
    return CreateBprim(typeId, SdfPath::EmptyPath());
}

void HdDemandTexRenderDelegate::DestroyBprim(HdBprim* bprim) { delete bprim; }

PXR_NAMESPACE_CLOSE_SCOPE
