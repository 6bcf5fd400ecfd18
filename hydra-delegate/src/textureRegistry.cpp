#include "textureRegistry.h"

#include "pxr/base/tf/diagnostic.h"
#include "pxr/base/tf/stringUtils.h"

#include <filesystem>
#include <system_error>

PXR_NAMESPACE_OPEN_SCOPE

namespace {

const std::string kUdimToken = "<UDIM>";
const std::string kUvTileToken = "<UVTILE>";

bool _FileExists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

demandtex::LoaderOptions _LoaderOptions(const HdDemandTexLoaderSettings& settings) {
    demandtex::LoaderOptions options;
    if (settings.budgetBytes != 0) options.maxTextureMemory(settings.budgetBytes);
    options.fillThreads(settings.fillThreads);
    return options;
}

}  // namespace

bool HdDemandTexTextureKey::IsUdim() const {
    return path.find(kUdimToken) != std::string::npos || path.find(kUvTileToken) != std::string::npos;
}

std::vector<std::string> HdDemandTexExistingUdimTiles(const std::string& pattern) {
    std::vector<std::string> found;
    for (int tile = 1001; tile <= 1100; ++tile) {
        const int col = (tile - 1001) % 10;
        const int row = (tile - 1001) / 10;
        std::string path = TfStringReplace(pattern, kUdimToken, std::to_string(tile));
        path = TfStringReplace(path, kUvTileToken, "u" + std::to_string(col + 1) + "_v" + std::to_string(row + 1));
        if (_FileExists(path)) found.push_back(path);
    }
    return found;
}

std::string HdDemandTexResolveTexturePath(const std::string& authored, const std::string& resolved,
                                          const std::vector<std::string>& searchPaths) {
    const bool udim = authored.find(kUdimToken) != std::string::npos ||
                      authored.find(kUvTileToken) != std::string::npos;
    auto exists = [udim](const std::string& path) {
        return udim ? !HdDemandTexExistingUdimTiles(path).empty() : _FileExists(path);
    };
    if (!resolved.empty()) {
        // Hydra 1.0 keeps the <UDIM> token in the resolved path; a resolved path is final.
        return resolved;
    }
    if (authored.empty()) return std::string();
    const std::filesystem::path authoredPath(authored);
    if (authoredPath.is_absolute()) return exists(authored) ? authored : std::string();
    // Unresolved and relative: Hydra 2.0 in OpenUSD 24.08 delivers UDIM paths like this
    // (OpenUSD issue #3492). Anchor it on the search paths.
    for (const std::string& dir : searchPaths) {
        if (dir.empty()) continue;
        const std::string candidate = (std::filesystem::path(dir) / authoredPath).lexically_normal().string();
        if (exists(candidate)) return candidate;
    }
    return std::string();
}

HdDemandTexTextureRegistry::HdDemandTexTextureRegistry(const HdDemandTexLoaderSettings& settings)
    : _settings(settings), _loader(std::make_unique<demandtex::Loader>(_LoaderOptions(settings))) {}

void HdDemandTexTextureRegistry::_Register(HdDemandTexTexture& texture) {
    const HdDemandTexTextureKey& key = texture.key;
    demandtex::TextureDesc desc;
    desc.fallbackColor({key.fallback[0], key.fallback[1], key.fallback[2], key.fallback[3]});
    if (texture.udim) {
        // Tiles clamp at their edges; the tile grid decides what lies outside.
        desc.address(demandtex::AddressMode::Clamp);
        texture.id = _loader->createUdimFromPattern(key.path, std::nullopt, desc);
    } else {
        desc.addressS(key.wrapS).addressT(key.wrapT);
        texture.id = _loader->createTextureFromFile(key.path, desc);
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
    const bool present = texture->udim ? !HdDemandTexExistingUdimTiles(key.path).empty() : _FileExists(key.path);
    if (!present) {
        TF_WARN("demandtex: %s: texture '%s' not found%s; rendering its fallback colour (%g, %g, %g, %g)",
                context.c_str(), key.path.c_str(), texture->udim ? " (no UDIM tile 1001-1100 exists)" : "",
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
    if (settings.fillThreads != _settings.fillThreads) {
        // Fill threads are fixed when a loader is made: make a new one, register again.
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
        if (texture.udim || _reportedFailures.count(texture.id)) continue;
        if (std::optional<demandtex::Error> error = _loader->textureError(texture.id)) {
            _reportedFailures.insert(texture.id);
            TF_WARN("demandtex: texture '%s' failed: %s; rendering its fallback colour", texture.key.path.c_str(),
                    error->message());
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
