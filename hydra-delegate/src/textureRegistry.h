// The delegate's textures: one demandtex loader per render delegate, and the textures its
// materials sample, registered once per (file, wrap modes, fallback colour).
#ifndef HD_DEMANDTEX_TEXTURE_REGISTRY_H
#define HD_DEMANDTEX_TEXTURE_REGISTRY_H

#include "pxr/pxr.h"
#include "pxr/base/gf/vec4f.h"

#include <demandtex.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

PXR_NAMESPACE_OPEN_SCOPE

/// What identifies a registered texture.
struct HdDemandTexTextureKey {
    /// An absolute file path, or a pattern with `<UDIM>` / `<UVTILE>`.
    std::string path;
    demandtex::AddressMode wrapS = demandtex::AddressMode::Wrap;
    demandtex::AddressMode wrapT = demandtex::AddressMode::Wrap;
    GfVec4f fallback{0.0f, 0.0f, 0.0f, 1.0f};

    bool IsUdim() const;
    bool operator<(const HdDemandTexTextureKey& o) const {
        return std::tie(path, wrapS, wrapT, fallback[0], fallback[1], fallback[2], fallback[3]) <
               std::tie(o.path, o.wrapS, o.wrapT, o.fallback[0], o.fallback[1], o.fallback[2], o.fallback[3]);
    }
};

/// One file a registered texture reads: its demandtex texture id, whether its texels are
/// 8-bit colour (RGB or RGBA), which UsdUVTexture's `auto` colour space decodes as sRGB, as
/// Storm does (-1 until the texture has opened, then 0 or 1), and the channels it serves
/// (0 until it has opened; 2 is grey and alpha, which UsdUVTexture reads as (g, g, g, a)).
/// Both are set by `HdDemandTexTextureRegistry::ResolveColorFormats`.
struct HdDemandTexTextureFile {
    std::uint32_t id = demandtex::kNoTexture;
    mutable std::atomic<int> eightBitColor{-1};
    mutable std::atomic<int> channels{0};
};

/// A texture registered with the loader. `id` is a `demandtex::TextureId`, or a `demandtex::UdimId`
/// when `udim` is set; it changes only when the loader is recreated (between renders).
struct HdDemandTexTexture {
    HdDemandTexTextureKey key;
    bool udim = false;
    std::uint32_t id = 0;
    /// The files it reads: the one file; for a UDIM set, its tiles row-major
    /// (`udimColumns` a row; a hole's id is `demandtex::kNoTexture`), then its base texture.
    std::unique_ptr<HdDemandTexTextureFile[]> files;
    std::size_t numFiles = 0;
    std::uint32_t udimColumns = 0;
    std::uint32_t udimRows = 0;

    /// The file a lookup at (s, t) reads, in USD's texture coordinates (t up; UDIM tile
    /// `1001 + floor(s) + 10 * floor(t)`): for a UDIM set, the tile there, or the base
    /// outside the grid and in holes (null without one).
    const HdDemandTexTextureFile* FileAt(float s, float t) const;
};

/// Loader settings the host can change (render settings).
struct HdDemandTexLoaderSettings {
    std::uint64_t budgetBytes = 0;
    std::uint32_t fillThreads = 0;
    /// The fills' CPU limit in cores (0: none; `demandtex:fillCpuCores`, interactive only).
    float fillCpuCores = 0.0f;
    /// Interactive streaming (`demandtex:interactive`): fills never waited for, published
    /// at a later launch, requests rejected at random to spread them over the image.
    bool interactive = true;
    bool operator==(const HdDemandTexLoaderSettings& o) const {
        return budgetBytes == o.budgetBytes && fillThreads == o.fillThreads && fillCpuCores == o.fillCpuCores &&
               interactive == o.interactive;
    }
};

/// Thread-safe: materials register textures while rprims sync in parallel; the render pass
/// samples through `Loader()` between syncs.
class HdDemandTexTextureRegistry {
public:
    explicit HdDemandTexTextureRegistry(const HdDemandTexLoaderSettings& settings);

    /// The texture for `key`, registered on first use. Null, after a warning naming
    /// `context` (the material and input), when no file matches `key.path`; the caller then
    /// uses the fallback colour.
    std::shared_ptr<const HdDemandTexTexture> Acquire(const HdDemandTexTextureKey& key, const std::string& context);

    /// Apply new settings: a budget change is applied in place; a change of fill threads or
    /// of streaming mode creates a new loader and registers every texture again (call
    /// between renders only).
    void Configure(const HdDemandTexLoaderSettings& settings);

    /// The loader (valid until the next `Configure`).
    const demandtex::Loader& Loader() const { return *_loader; }

    /// Warn once for each texture whose file failed to read since the last call.
    void ReportFailures();
    /// Learn which textures opened since the last call are 8-bit colour
    /// (`HdDemandTexTexture::eightBitColor`). Called after a launch is prepared and before
    /// it samples: a texture whose tiles the launch sees has opened by then.
    void ResolveColorFormats();

    /// Every registered texture's key path (for statistics and tests).
    std::vector<std::string> Paths() const;

private:
    void _Register(HdDemandTexTexture& texture);

    mutable std::mutex _mutex;
    HdDemandTexLoaderSettings _settings;
    std::unique_ptr<demandtex::Loader> _loader;
    std::map<HdDemandTexTextureKey, std::shared_ptr<HdDemandTexTexture>> _textures;
    std::set<std::uint32_t> _reportedFailures;
};

/// Whether a file matches the `<UDIM>` / `<UVTILE>` pattern, by demandtex's rule
/// (`demandtex::expandUdimPattern`, the rule the loader creates UDIM textures with). When
/// none does, `why` (if given) says so, or why the pattern could not be expanded.
bool HdDemandTexUdimTilesExist(const std::string& pattern, std::string* why);

/// Turn an authored asset path into a file path demandtex can open: the resolved path if the
/// host resolved it; otherwise the authored path if absolute, else the first directory of
/// `searchPaths` in which it (for UDIM patterns: at least one tile) exists. Empty when none.
std::string HdDemandTexResolveTexturePath(const std::string& authored, const std::string& resolved,
                                          const std::vector<std::string>& searchPaths);

PXR_NAMESPACE_CLOSE_SCOPE

#endif
