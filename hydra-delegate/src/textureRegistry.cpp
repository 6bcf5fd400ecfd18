#include "textureRegistry.h"

#include "pxr/base/tf/diagnostic.h"

#include <cmath>
#include <filesystem>
#include <system_error>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

/// Whether `path` is meant as a UDIM pattern: the loader is asked for a UDIM texture, and
/// demandtex judges the pattern (which token, where; which files match).
bool _HasUdimToken(const std::string& path) {
    return path.find("<UDIM>") != std::string::npos || path.find("<UVTILE>") != std::string::npos;
}

bool _FileExists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

demandtex::LoaderOptions _LoaderOptions(const HdDemandTexLoaderSettings& settings) {
    demandtex::LoaderOptions options;
    if (settings.budgetBytes != 0) options.maxTextureMemory(settings.budgetBytes);
    options.fillThreads(settings.fillThreads);
    options.fillCpuCores(settings.fillCpuCores);
    options.interactive(settings.interactive);
    return options;
}

}  // namespace

bool HdDemandTexTextureKey::IsUdim() const { return _HasUdimToken(path); }

bool HdDemandTexUdimTilesExist(const std::string& pattern, std::string* why) {
    try {
        // demandtex's own rule: the one createUdimFromPattern registers the texture with.
        if (!demandtex::expandUdimPattern(pattern).empty()) return true;
        if (why) *why = "no file matches the UDIM pattern";
    } catch (const demandtex::Error& e) {
        if (why) *why = e.message();
    }
    return false;
}

std::string HdDemandTexResolveTexturePath(const std::string& authored, const std::string& resolved,
                                          const std::vector<std::string>& searchPaths) {
    const bool udim = _HasUdimToken(authored);
    auto exists = [udim](const std::string& path) {
        return udim ? HdDemandTexUdimTilesExist(path, nullptr) : _FileExists(path);
    };
    if (!resolved.empty()) {
        // Hydra 1.0 keeps the <UDIM> token in the resolved path; a resolved path is final.
        return resolved;
    }
    if (authored.empty()) return std::string();
    const std::filesystem::path authoredPath(authored);
    if (authoredPath.is_absolute()) return exists(authored) ? authored : std::string();
    // Unresolved and relative: Hydra 2.0 in OpenUSD 24.08 delivers UDIM paths like this
    // (OpenUSD issue #3492), and so does Hydra 1.0 for the UDIM sets OpenUSD's own resolver
    // does not find (UsdShadeUdimUtils looks for tiles 1001-1100 only, and knows no
    // <UVTILE>). Anchor it on the search paths.
    for (const std::string& dir : searchPaths) {
        if (dir.empty()) continue;
        const std::string candidate = (std::filesystem::path(dir) / authoredPath).lexically_normal().string();
        if (exists(candidate)) return candidate;
    }
    return std::string();
}

HdDemandTexTextureRegistry::HdDemandTexTextureRegistry(const HdDemandTexLoaderSettings& settings)
    : _settings(settings), _loader(std::make_unique<demandtex::Loader>(_LoaderOptions(settings))) {}

const HdDemandTexTextureFile* HdDemandTexTexture::FileAt(float s, float t) const {
    if (!files) return nullptr;
    if (!udim) return &files[0];
    const float column = std::floor(s), row = std::floor(t);
    const HdDemandTexTextureFile& base = files[numFiles - 1];
    if (column >= 0.0f && row >= 0.0f && column < float(udimColumns) && row < float(udimRows)) {
        const HdDemandTexTextureFile& tile = files[std::size_t(row) * udimColumns + std::size_t(column)];
        if (tile.id != demandtex::kNoTexture) return &tile;
    }
    return base.id != demandtex::kNoTexture ? &base : nullptr;
}

void HdDemandTexTextureRegistry::_Register(HdDemandTexTexture& texture) {
    const HdDemandTexTextureKey& key = texture.key;
    demandtex::TextureDesc desc;
    desc.fallbackColor({key.fallback[0], key.fallback[1], key.fallback[2], key.fallback[3]});
    texture.files.reset();
    texture.numFiles = 0;
    if (texture.udim) {
        // Tiles clamp at their edges; the tile grid decides what lies outside.
        desc.address(demandtex::AddressMode::Clamp);
        texture.id = _loader->createUdimFromPattern(key.path, std::nullopt, desc);
        // Each tile is a texture of its own (its own file format, its own errors).
        const demandtex::UdimGrid grid = _loader->udimGrid(texture.id);
        const std::size_t tiles = std::size_t(grid.width) * grid.height;
        texture.files.reset(new HdDemandTexTextureFile[tiles + 1]);
        texture.numFiles = tiles + 1;
        texture.udimColumns = grid.width;
        texture.udimRows = grid.height;
        for (std::uint32_t row = 0; row < grid.height; ++row) {
            for (std::uint32_t column = 0; column < grid.width; ++column) {
                if (std::optional<demandtex::TextureId> tile = _loader->udimTile(texture.id, column, row)) {
                    texture.files[std::size_t(row) * grid.width + column].id = *tile;
                }
            }
        }
        if (grid.base) texture.files[tiles].id = *grid.base;
    } else {
        desc.addressS(key.wrapS).addressT(key.wrapT);
        texture.id = _loader->createTextureFromFile(key.path, desc);
        texture.files.reset(new HdDemandTexTextureFile[1]);
        texture.numFiles = 1;
        texture.files[0].id = texture.id;
    }
}

std::shared_ptr<const HdDemandTexTexture> HdDemandTexTextureRegistry::Acquire(const HdDemandTexTextureKey& key,
                                                                             const std::string& context) {
    std::lock_guard<std::mutex> lock(_mutex);
    auto it = _textures.find(key);
    if (it != _textures.end()) return it->second;

    auto texture = std::make_shared<HdDemandTexTexture>();
    texture->key = key;
    texture->udim = key.IsUdim();
    std::string why;
    const bool present = texture->udim ? HdDemandTexUdimTilesExist(key.path, &why) : _FileExists(key.path);
    if (!present) {
        TF_WARN("demandtex: %s: texture '%s' not found%s%s%s; rendering its fallback colour (%g, %g, %g, %g)",
                context.c_str(), key.path.c_str(), why.empty() ? "" : " (", why.c_str(), why.empty() ? "" : ")",
                key.fallback[0], key.fallback[1], key.fallback[2], key.fallback[3]);
        return nullptr;
    }
    try {
        _Register(*texture);
    } catch (const demandtex::Error& e) {
        TF_WARN("demandtex: %s: cannot register texture '%s': %s; rendering its fallback colour", context.c_str(),
                key.path.c_str(), e.what());
        return nullptr;
    }
    _textures.emplace(key, texture);
    return texture;
}

void HdDemandTexTextureRegistry::Configure(const HdDemandTexLoaderSettings& settings) {
    std::lock_guard<std::mutex> lock(_mutex);
    if (settings == _settings) return;
    if (settings.fillThreads != _settings.fillThreads || settings.fillCpuCores != _settings.fillCpuCores ||
        settings.interactive != _settings.interactive) {
        // Fill threads, their CPU limit and the streaming mode are fixed when a loader is
        // made: make a new one, register again.
        _loader = std::make_unique<demandtex::Loader>(_LoaderOptions(settings));
        _reportedFailures.clear();
        for (auto& entry : _textures) {
            try {
                _Register(*entry.second);
            } catch (const demandtex::Error& e) {
                TF_WARN("demandtex: cannot register texture '%s' again: %s", entry.first.path.c_str(), e.what());
            }
        }
    } else if (settings.budgetBytes != _settings.budgetBytes) {
        try {
            _loader->setMaxTextureMemory(settings.budgetBytes != 0 ? settings.budgetBytes
                                                                   : demandtex::LoaderOptions().maxTextureMemory());
        } catch (const demandtex::Error& e) {
            TF_WARN("demandtex: texture budget of %llu bytes refused: %s",
                    static_cast<unsigned long long>(settings.budgetBytes), e.what());
            return;  // keep the old settings
        }
    }
    _settings = settings;
}

void HdDemandTexTextureRegistry::ReportFailures() {
    std::lock_guard<std::mutex> lock(_mutex);
    for (const auto& entry : _textures) {
        const HdDemandTexTexture& texture = *entry.second;
        for (std::size_t i = 0; i < texture.numFiles; ++i) {
            const std::uint32_t id = texture.files[i].id;
            if (id == demandtex::kNoTexture || _reportedFailures.count(id)) continue;
            if (std::optional<demandtex::Error> error = _loader->textureError(id)) {
                _reportedFailures.insert(id);
                // For a UDIM set, demandtex's message names the tile's file.
                TF_WARN("demandtex: texture '%s' failed: %s; rendering its fallback colour", texture.key.path.c_str(),
                        error->message());
            }
        }
    }
}

void HdDemandTexTextureRegistry::ResolveColorFormats() {
    std::lock_guard<std::mutex> lock(_mutex);
    for (const auto& entry : _textures) {
        const HdDemandTexTexture& texture = *entry.second;
        for (std::size_t i = 0; i < texture.numFiles; ++i) {
            const HdDemandTexTextureFile& file = texture.files[i];
            if (file.id == demandtex::kNoTexture || file.eightBitColor.load() != -1) continue;
            try {
                if (std::optional<demandtex::ImageInfo> info = _loader->imageInfo(file.id)) {
                    const bool color8 = info->texelType == demandtex::TexelType::U8 && info->channels == 4;
                    file.channels.store(int(info->channels));
                    file.eightBitColor.store(color8 ? 1 : 0);
                }
            } catch (const demandtex::Error&) {
                // Unknown to this loader: it stays undecided (read as stored).
            }
        }
    }
}

std::vector<std::string> HdDemandTexTextureRegistry::Paths() const {
    std::lock_guard<std::mutex> lock(_mutex);
    std::vector<std::string> paths;
    for (const auto& entry : _textures) paths.push_back(entry.first.path);
    return paths;
}

PXR_NAMESPACE_CLOSE_SCOPE
