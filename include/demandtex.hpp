/// @file demandtex.hpp
/// @brief demandtex for C++17: a header-only RAII wrapper over the C ABI in demandtex.h.
///
/// Everything here is inline and calls only the `dtex_*` functions of demandtex.h, so it
/// needs no library of its own: link `DemandTex::demandtex` (CMake) or `-ldemandtex`.
///
/// **Errors.** Every failing C call becomes a `demandtex::Error` carrying its
/// `DtexStatus` and the library's message (`dtex_last_error_message()`). Using a moved-from,
/// destroyed or foreign handle is reported by the library as `DTEX_STATUS_INVALID_HANDLE`
/// and thrown like any other error — never undefined behaviour. Timeouts are not errors:
/// `Ticket::waitFor` returns `false`.
///
/// **Ownership.** `Loader`, `Cache`, `Launch` and `Ticket` are move-only owners of one C
/// handle each; the destructor releases it (`dtex_*_destroy`, or `dtex_launch_discard` for
/// a launch that was not processed). Destroying a loader invalidates its launches and
/// tickets: later calls on them throw `DTEX_STATUS_INVALID_HANDLE`, and their destructors
/// do nothing harmful.
///
/// **Callbacks.** A user `ImageSource` (or resource fill function) is owned by the library
/// once its texture is created; the library deletes it exactly once when it no longer needs
/// it. Exceptions thrown by user code never cross into the library: the trampolines catch
/// everything and report `DTEX_SOURCE_ERROR` with the exception's `what()`.
///
/// **Threads.** As the C ABI: a `Loader` or `Cache` may be used from many threads at once;
/// a `Launch` may be sampled from many threads at once, but processing or discarding it
/// (and moving or destroying the C++ object) must not race with sampling it.
///
/// The multi-pass cycle:
/// @code
/// demandtex::Loader loader(demandtex::LoaderOptions().maxTextureMemory(512ull << 20));
/// const demandtex::TextureId tex =
///     loader.createProceduralTexture(demandtex::ProceduralDesc::checkerboard(4096, 4096, 16));
/// for (;;) {
///     demandtex::Launch launch = loader.prepareLaunch();
///     const demandtex::Sample s = launch.tex2DGrad(tex, 0.3f, 0.7f, 1.0f / 512, 0.0f, 0.0f, 1.0f / 512);
///     if (s.resident) break;                               // converged
///     loader.processRequests(std::move(launch)).wait();    // read the missing tiles
/// }
/// @endcode
///
/// Names: everything is in namespace `demandtex`, except the C trampolines for user
/// callbacks, which have C linkage and the prefix `demandtex_hpp_`.
#ifndef DEMANDTEX_HPP
#define DEMANDTEX_HPP

#include "demandtex.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

/// The demandtex C++ API.
namespace demandtex {

// ---------------------------------------------------------------------------------------
// Versions, ids and small value types
// ---------------------------------------------------------------------------------------

/// Major version of the header this code was compiled against.
constexpr std::uint32_t kVersionMajor = DTEX_VERSION_MAJOR;
/// Minor version of the header this code was compiled against.
constexpr std::uint32_t kVersionMinor = DTEX_VERSION_MINOR;
/// Patch version of the header this code was compiled against.
constexpr std::uint32_t kVersionPatch = DTEX_VERSION_PATCH;
/// ABI version (the SONAME number) of the header this code was compiled against.
constexpr std::uint32_t kAbiVersion = DTEX_ABI_VERSION;

/// The loaded library's version, "MAJOR.MINOR.PATCH" (static storage).
inline const char* versionString() noexcept { return dtex_version_string(); }
/// The loaded library's version as `MAJOR*10000 + MINOR*100 + PATCH`.
inline std::uint32_t version() noexcept { return dtex_version(); }
/// The loaded library's ABI version (the SONAME number).
inline std::uint32_t abiVersion() noexcept { return dtex_abi_version(); }
/// The name of a status code, e.g. "DTEX_STATUS_INVALID_HANDLE" (static storage).
inline const char* statusString(DtexStatus status) noexcept { return dtex_status_string(status); }

/// A texture id (as in C and device code). `kNoTexture` names none.
using TextureId = std::uint32_t;
/// A UDIM texture id, sampled with `Launch::tex2DGradUdim`.
using UdimId = std::uint32_t;
/// A page of the virtual page space (generic resources).
using PageId = std::uint32_t;
/// The "no texture" id.
constexpr TextureId kNoTexture = DTEX_NO_TEXTURE;

/// A mip level region (level, x, y, width, height in texels of that level); the C struct.
using TileRegion = DtexTileRegion;
/// One level of a mip-tail read (its region, byte offset in the tail, bytes per row).
using MipTailLevel = DtexMipTailLevel;
/// One batched lookup: texture id, (s, t) and the gradients; the C struct, so arrays of it
/// are passed to the library without copying. Aggregate-initialise it:
/// `GradQuery{tex, s, t, dsdx, dtdx, dsdy, dtdy}`.
using GradQuery = DtexGradQuery;
/// One Ptex lookup of `Cache::ptexSampleBatch` (the C struct): aggregate-initialise it,
/// `PtexQuery{tex, face, u, v, dudx, dvdx, dudy, dvdy}`.
using PtexQuery = DtexPtexQuery;
/// What device code reads: the page table, residence and request bits of one launch.
using DeviceContext = DtexDeviceContext;

/// What happens to coordinates outside [0, 1) (values equal CUDA's address modes).
enum class AddressMode : std::uint32_t {
    Wrap = DTEX_ADDRESS_WRAP,      ///< Repeat.
    Clamp = DTEX_ADDRESS_CLAMP,    ///< Clamp to the edge texel.
    Mirror = DTEX_ADDRESS_MIRROR,  ///< Repeat mirrored.
    Border = DTEX_ADDRESS_BORDER,  ///< Transparent black outside.
    /// The file's own wrap mode (maketx's `wrapmodes`), else Border; resolved at open.
    FromFile = DTEX_ADDRESS_FROM_FILE,
};

/// Which axis points at a lat-long environment map's north pole (`DTEX_UP_AXIS_*`).
enum class UpAxis : std::uint32_t {
    Z = DTEX_UP_AXIS_Z,  ///< +z (RenderMan's convention)
    Y = DTEX_UP_AXIS_Y,  ///< +y (OpenEXR's convention, OpenImageIO's default)
};

/// Filtering within a level, or between levels.
enum class Filter : std::uint32_t {
    Point = DTEX_FILTER_POINT,    ///< Nearest texel (or nearest level).
    Linear = DTEX_FILTER_LINEAR,  ///< Bilinear (or blend of two levels).
};

/// The type of one channel of a texel.
enum class TexelType : std::uint32_t {
    U8 = DTEX_TEXEL_U8,    ///< Unsigned normalised 8 bit.
    U16 = DTEX_TEXEL_U16,  ///< Unsigned normalised 16 bit.
    F16 = DTEX_TEXEL_F16,  ///< IEEE half.
    F32 = DTEX_TEXEL_F32,  ///< IEEE float.
};

/// Bytes of one channel of `type`.
constexpr std::size_t channelBytes(TexelType type) noexcept {
    return type == TexelType::U8 ? 1 : type == TexelType::F32 ? 4 : 2;
}

/// Mip levels of a full chain down to 1×1 for a `width × height` level 0 (0 for an empty image).
constexpr std::uint32_t fullMipLevels(std::uint32_t width, std::uint32_t height) noexcept {
    std::uint32_t side = width > height ? width : height;
    std::uint32_t levels = 0;
    while (side > 0) {
        ++levels;
        side >>= 1;
    }
    return levels;
}

/// What an image is: level-0 size, texel format and the mip levels it has. Plain value.
struct ImageInfo {
    std::uint32_t width = 0;            ///< Level-0 width in texels.
    std::uint32_t height = 0;           ///< Level-0 height in texels.
    TexelType texelType = TexelType::U8;  ///< Channel type.
    std::uint32_t channels = 4;         ///< 1, 2 or 4.
    /// Mip levels: 0 (the default) = the full chain down to 1×1, 1 = level 0 only, at most
    /// `fullMipLevels(width, height)`. From `ImageSource::open`: the levels `readRegion` can
    /// produce. For `Loader::createTextureFromPixels`: the levels generated from level 0.
    std::uint32_t numLevels = 0;

    /// Bytes of one texel.
    constexpr std::size_t texelBytes() const noexcept { return channelBytes(texelType) * channels; }
    /// The C struct, with a `numLevels` of 0 resolved to the full chain.
    DtexImageInfo toC() const noexcept {
        return DtexImageInfo{width, height, static_cast<std::uint32_t>(texelType), channels,
                             numLevels == 0 ? fullMipLevels(width, height) : numLevels};
    }
};

/// Per-lookup options. Plain value; the default is what a NULL pointer means in C.
struct SampleOptions {
    /// On a miss, return the finest coarser resident level (reported resident); the
    /// missing pages are still requested.
    bool fallbackToCoarser = false;
    /// The pixel or sample id of the lookup: the seed of interactive request rejection.
    std::uint32_t requestKey = 0;
    /// Stochastic two-level point filtering: one texel from each of the two mip levels
    /// around the level of detail, blended, each picked by `jitter` with its bilinear
    /// weight (the average over a pixel's samples is the trilinear filter); the footprint
    /// is isotropic. Instead of the texture's filter.
    bool stochastic = false;
    /// The stochastic filter's random numbers for s and t in [0, 1): uniform per sample;
    /// (0.5, 0.5) picks the nearest texels.
    std::array<float, 2> jitter{{0.5f, 0.5f}};

    /// The C struct.
    DtexSampleOptions toC() const noexcept {
        DtexSampleOptions o{};
        o.struct_size = sizeof(DtexSampleOptions);
        o.fallback_to_coarser = fallbackToCoarser ? 1u : 0u;
        o.request_key = requestKey;
        o.stochastic = stochastic ? 1u : 0u;
        o.jitter[0] = jitter[0];
        o.jitter[1] = jitter[1];
        return o;
    }
};

/// The result of one lookup. Plain value.
struct Sample {
    /// RGBA. One-channel textures give (c, c, c, 1), two-channel (c0, c1, 0, 1).
    std::array<float, 4> value{};
    /// Whether every texel the filter needed was resident (otherwise the value is the base
    /// colour or zeros, and the missing pages were requested).
    bool resident = false;
    /// With `fallbackToCoarser`: a coarser resident level stood in for the missing level of
    /// detail asked for (`resident` is then true): not yet at full detail.
    bool coarser = false;

    /// Resident at the level of detail asked for.
    bool fullDetail() const noexcept { return resident && !coarser; }

    /// The C++ form of a C sample.
    static Sample fromC(const DtexSample& s) noexcept {
        return Sample{{s.value[0], s.value[1], s.value[2], s.value[3]}, s.resident != 0,
                      s.coarser != 0};
    }
};

/// A lookup with the derivatives of its value with respect to s and t (OpenImageIO's
/// `dresultds` / `dresultdt`; `DtexSampleDerivatives`).
struct SampleDerivatives {
    /// The lookup, as `tex2DGrad` gives it.
    Sample sample;
    /// d value / d s, per channel (1.0 of s is one texture width).
    std::array<float, 4> ds{};
    /// d value / d t, per channel.
    std::array<float, 4> dt{};

    /// The C++ form of the C struct.
    static SampleDerivatives fromC(const DtexSampleDerivatives& d) noexcept {
        return SampleDerivatives{Sample::fromC(d.sample),
                                 {d.ds[0], d.ds[1], d.ds[2], d.ds[3]},
                                 {d.dt[0], d.dt[1], d.dt[2], d.dt[3]}};
    }
};

/// A statistics snapshot: the C struct `DtexStats` (same field names as core's `Stats`)
/// with its `struct_size` filled in. Plain value; cheap to copy.
struct Stats : DtexStats {
    /// All counters zero, `struct_size` set.
    Stats() noexcept : DtexStats{} { struct_size = sizeof(DtexStats); }
};

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// A failed demandtex call: the status and the library's explanation.
/// `what()` is "DTEX_STATUS_NAME: message". Copying never throws.
class Error : public std::runtime_error {
public:
    /// An error with `status` and `message` (the status name alone when `message` is empty).
    Error(DtexStatus status, const std::string& message)
        : std::runtime_error(compose(status, message)),
          status_(status),
          prefix_(std::string(statusString(status)).size() + 2) {}

    /// The status code (never `DTEX_STATUS_OK`).
    DtexStatus status() const noexcept { return status_; }
    /// The status name, e.g. "DTEX_STATUS_IO_ERROR".
    const char* statusName() const noexcept { return statusString(status_); }
    /// The library's message alone (without the status name).
    const char* message() const noexcept {
        const char* w = what();
        return std::char_traits<char>::length(w) >= prefix_ ? w + prefix_ : w;
    }

private:
    /// "NAME: message".
    static std::string compose(DtexStatus status, const std::string& message) {
        std::string s = statusString(status);
        s += ": ";
        s += message.empty() ? statusString(status) : message;
        return s;
    }

    DtexStatus status_;   ///< The status.
    std::size_t prefix_;  ///< Length of "NAME: " at the start of what().
};

/// Throw an `Error` for `status` with the calling thread's `dtex_last_error_message()`.
[[noreturn]] inline void throwError(DtexStatus status) {
    const char* m = dtex_last_error_message();
    throw Error(status, m ? m : "");
}

/// Throw an `Error` unless `status` is `DTEX_STATUS_OK`. Call it right after the C call:
/// the message is thread-local and replaced by the next dtex call on this thread.
inline void check(DtexStatus status) {
    if (status != DTEX_STATUS_OK) throwError(status);
}

/// A convenient exception for `ImageSource` implementations to throw (any exception works:
/// the library reports `what()`, or "unknown C++ exception").
class SourceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Throw `Error(DTEX_STATUS_UNSUPPORTED)` when the loaded library's ABI differs from the
/// header's (a mismatched libdemandtex.so found at run time).
inline void checkAbiVersion() {
    if (abiVersion() != kAbiVersion) {
        throw Error(DTEX_STATUS_UNSUPPORTED,
                    "libdemandtex ABI " + std::to_string(abiVersion()) + " loaded, header is ABI " +
                        std::to_string(kAbiVersion));
    }
}

// ---------------------------------------------------------------------------------------
// Options and descriptions (builder style: every setter returns *this)
// ---------------------------------------------------------------------------------------

/// Loader (and cache) options, starting from the library's defaults
/// (`dtex_loader_options_default`). Builder style:
/// `LoaderOptions().numPages(1 << 20).maxTextureMemory(256 << 20)`.
class LoaderOptions {
public:
    /// The library's defaults.
    LoaderOptions() noexcept : raw_{} { dtex_loader_options_default(&raw_); }

    /// Pages in the virtual page space (64 KiB each; default 2^26).
    LoaderOptions& numPages(std::uint32_t v) noexcept { raw_.num_pages = v; return *this; }
    /// Pages with a 64-bit page-table entry: samplers, base colours, resources (default 2^18).
    LoaderOptions& pageTableEntries(std::uint32_t v) noexcept { raw_.page_table_entries = v; return *this; }
    /// Most textures (default 2^16).
    LoaderOptions& maxTextures(std::uint32_t v) noexcept { raw_.max_textures = v; return *this; }
    /// The texture memory budget in bytes (default 2 GiB).
    LoaderOptions& maxTextureMemory(std::uint64_t bytes) noexcept { raw_.max_texture_memory = bytes; return *this; }
    /// Requests served per launch; the rest are deferred (default 8192).
    LoaderOptions& maxRequestsPerLaunch(std::uint32_t v) noexcept { raw_.max_requests_per_launch = v; return *this; }
    /// Whether stale tiles are evicted to stay in budget (default true).
    LoaderOptions& eviction(bool on) noexcept { raw_.eviction = on ? 1u : 0u; return *this; }
    /// Fill threads (0, the default: one per core, and at least 8 for an interactive loader).
    LoaderOptions& fillThreads(std::uint32_t v) noexcept { raw_.fill_threads = v; return *this; }
    /// LRU age a page must reach before it may be evicted (default 1).
    LoaderOptions& lruThreshold(std::uint32_t v) noexcept { raw_.lru_threshold = v; return *this; }
    /// Fraction of the budget kept staged for second-chance restores (default 0.0625).
    LoaderOptions& stagedReserve(float v) noexcept { raw_.staged_reserve = v; return *this; }
    /// Interactive streaming (a viewport: requests rejected at random to spread them over
    /// the frame, fills published at a later launch, background fill threads) rather than
    /// final (a render that converges; the default).
    LoaderOptions& interactive(bool on) noexcept { raw_.interactive = on ? 1u : 0u; return *this; }
    /// Interactive mode: drop queued fills this many launches old (at least 1).
    LoaderOptions& maxFillAge(std::uint32_t v) noexcept { raw_.max_fill_age = v; return *this; }
    /// Most tile publications per launch start (0 = no limit).
    LoaderOptions& maxPublicationsPerLaunch(std::uint32_t v) noexcept { raw_.max_publications_per_launch = v; return *this; }
    /// Whether constant tiles share one slot per value (CPU loader and cache; default true).
    LoaderOptions& coalesceConstantTiles(bool on) noexcept { raw_.coalesce_constant_tiles = on ? 1u : 0u; return *this; }
    /// Whether blocking lookups read files with tiles smaller than a page one file tile at a
    /// time (CPU loader and cache; default true).
    LoaderOptions& fillByFileTile(bool on) noexcept { raw_.fill_by_file_tile = on ? 1u : 0u; return *this; }
    /// Whether a texture whose file holds the same texels as an open texture's samples that
    /// texture's tiles (CPU loader and cache; default true).
    LoaderOptions& shareDuplicateTextures(bool on) noexcept { raw_.share_duplicate_textures = on ? 1u : 0u; return *this; }
    /// Whether a texture whose file has tiles smaller than a 64 KiB page gets pages of its
    /// file's tiles (CPU loader and cache; default true; C: `full_pages` is its negation).
    LoaderOptions& pagesOfFileTiles(bool on) noexcept { raw_.full_pages = on ? 0u : 1u; return *this; }
    /// Whether a texture whose file stores BC blocks at every level (a DDS with its mips)
    /// keeps them in its pages as stored: 4× to 8× the texels in the budget (default true;
    /// C: `decode_blocks` is its negation).
    LoaderOptions& keepBlocks(bool on) noexcept { raw_.decode_blocks = on ? 0u : 1u; return *this; }
    /// The most CPU time fills may take, in cores (0 = no limit, the default): for a CPU
    /// renderer whose shading uses every core, so a burst of fills cannot stall a frame.
    LoaderOptions& fillCpuCores(float cores) noexcept { raw_.fill_cpu_cores = cores; return *this; }
    /// Bytes of whole decodes (PNG, JPEG, generated mip levels) the loader's unnamed
    /// temporary files may hold at once, so that a texture whose decode the budget cannot
    /// keep is read from its file rather than decoded at each miss (default 8 GiB; 0:
    /// never).
    LoaderOptions& maxSpillBytes(std::uint64_t bytes) noexcept { raw_.max_spill_bytes = bytes; return *this; }
    /// The directory of spilled decodes (default: `$TMPDIR` if set, else `/var/tmp` on
    /// Unix, then the system's temporary directory). The path is kept by these options
    /// (copies share it).
    LoaderOptions& spillDir(const std::string& dir) {
        spillDir_ = std::make_shared<const std::string>(dir);
        raw_.spill_dir = spillDir_->c_str();
        return *this;
    }

    /// Pages in the virtual page space.
    std::uint32_t numPages() const noexcept { return raw_.num_pages; }
    /// Pages with a page-table entry.
    std::uint32_t pageTableEntries() const noexcept { return raw_.page_table_entries; }
    /// Most textures.
    std::uint32_t maxTextures() const noexcept { return raw_.max_textures; }
    /// The budget in bytes.
    std::uint64_t maxTextureMemory() const noexcept { return raw_.max_texture_memory; }
    /// Requests served per launch.
    std::uint32_t maxRequestsPerLaunch() const noexcept { return raw_.max_requests_per_launch; }
    /// Whether eviction is on.
    bool eviction() const noexcept { return raw_.eviction != 0; }
    /// Fill threads (0: the default, see the setter).
    std::uint32_t fillThreads() const noexcept { return raw_.fill_threads; }
    /// LRU eviction threshold.
    std::uint32_t lruThreshold() const noexcept { return raw_.lru_threshold; }
    /// Staged reserve fraction.
    float stagedReserve() const noexcept { return raw_.staged_reserve; }
    /// Whether the loader streams interactively.
    bool interactive() const noexcept { return raw_.interactive != 0; }
    /// Launches after which a queued interactive fill is dropped.
    std::uint32_t maxFillAge() const noexcept { return raw_.max_fill_age; }
    /// Most tile publications per launch start (0 = no limit).
    std::uint32_t maxPublicationsPerLaunch() const noexcept { return raw_.max_publications_per_launch; }
    /// Whether constant tiles share one slot per value.
    bool coalesceConstantTiles() const noexcept { return raw_.coalesce_constant_tiles != 0; }
    /// Whether blocking lookups fill one file tile at a time.
    bool fillByFileTile() const noexcept { return raw_.fill_by_file_tile != 0; }
    /// Whether textures with the same texels share their tiles.
    bool shareDuplicateTextures() const noexcept { return raw_.share_duplicate_textures != 0; }
    /// Whether textures with smaller file tiles get pages of their file's tiles.
    bool pagesOfFileTiles() const noexcept { return raw_.full_pages == 0; }
    /// Whether pages keep a file's BC blocks as stored.
    bool keepBlocks() const noexcept { return raw_.decode_blocks == 0; }
    /// The fills' CPU-time limit in cores (0: none).
    float fillCpuCores() const noexcept { return raw_.fill_cpu_cores; }
    /// Bytes spilled decodes may hold in files at once (0: never spill).
    std::uint64_t maxSpillBytes() const noexcept { return raw_.max_spill_bytes; }
    /// The directory of spilled decodes, if one was set.
    std::optional<std::string> spillDir() const {
        if (raw_.spill_dir == nullptr) return std::nullopt;
        return std::string(raw_.spill_dir);
    }

    /// The C struct (for mixing with the C API).
    const DtexLoaderOptions& raw() const noexcept { return raw_; }
    /// The C struct, writable (fields appended by newer headers).
    DtexLoaderOptions& raw() noexcept { return raw_; }

private:
    DtexLoaderOptions raw_;  ///< The C options.
    std::shared_ptr<const std::string> spillDir_;  ///< What `raw_.spill_dir` points into.
};

/// How a texture is sampled, starting from the library's defaults
/// (`dtex_texture_desc_default`: wrap, trilinear, no anisotropy, magenta fallback).
/// Builder style: `TextureDesc().address(AddressMode::Clamp).filter(Filter::Point)`.
class TextureDesc {
public:
    /// The library's defaults.
    TextureDesc() noexcept : raw_{} { dtex_texture_desc_default(&raw_); }

    /// Address mode for s and t.
    TextureDesc& address(AddressMode both) noexcept { return addressS(both).addressT(both); }
    /// Address mode for s.
    TextureDesc& addressS(AddressMode m) noexcept { raw_.address_s = static_cast<std::uint32_t>(m); return *this; }
    /// Address mode for t.
    TextureDesc& addressT(AddressMode m) noexcept { raw_.address_t = static_cast<std::uint32_t>(m); return *this; }
    /// Filter within a level.
    TextureDesc& filter(Filter f) noexcept { raw_.filter = static_cast<std::uint32_t>(f); return *this; }
    /// Filter between levels.
    TextureDesc& mipFilter(Filter f) noexcept { raw_.mip_filter = static_cast<std::uint32_t>(f); return *this; }
    /// Largest anisotropy honoured, 1..16 (checked by the library at texture creation).
    TextureDesc& maxAnisotropy(std::uint32_t v) noexcept { raw_.max_anisotropy = v; return *this; }
    /// The colour every lookup returns once the texture has failed or been unloaded.
    TextureDesc& fallbackColor(const std::array<float, 4>& rgba) noexcept {
        for (std::size_t i = 0; i < 4; ++i) raw_.fallback_color[i] = rgba[i];
        return *this;
    }

    /// Address mode for s.
    AddressMode addressS() const noexcept { return static_cast<AddressMode>(raw_.address_s); }
    /// Address mode for t.
    AddressMode addressT() const noexcept { return static_cast<AddressMode>(raw_.address_t); }
    /// Filter within a level.
    Filter filter() const noexcept { return static_cast<Filter>(raw_.filter); }
    /// Filter between levels.
    Filter mipFilter() const noexcept { return static_cast<Filter>(raw_.mip_filter); }
    /// Largest anisotropy honoured.
    std::uint32_t maxAnisotropy() const noexcept { return raw_.max_anisotropy; }
    /// The fallback colour.
    std::array<float, 4> fallbackColor() const noexcept {
        return {raw_.fallback_color[0], raw_.fallback_color[1], raw_.fallback_color[2], raw_.fallback_color[3]};
    }

    /// The C struct.
    const DtexTextureDesc& raw() const noexcept { return raw_; }
    /// The C struct, writable.
    DtexTextureDesc& raw() noexcept { return raw_; }

private:
    DtexTextureDesc raw_;  ///< The C description.
};

/// A Ptex texture id (`Loader::createPtex`, `Cache::createPtex`).
using PtexId = std::uint32_t;
/// A Ptex texture's description (mesh, data type, channels, faces, border modes, pages);
/// the C struct.
using PtexInfo = DtexPtexInfo;
/// One face of a Ptex texture (resolution, flags, adjacency); the C struct.
using PtexFaceInfo = DtexPtexFaceInfo;

/// The Ptex filters (the reference library's `PtexFilter` kernels, plus stochastic
/// two-level point sampling).
enum class PtexFilter : std::uint32_t {
    Point = DTEX_PTEX_FILTER_POINT,              ///< The texel containing the point.
    Bilinear = DTEX_PTEX_FILTER_BILINEAR,        ///< Bilinear, blended across edges.
    Box = DTEX_PTEX_FILTER_BOX,                  ///< Box over the footprint.
    Gaussian = DTEX_PTEX_FILTER_GAUSSIAN,        ///< Separable Gaussian.
    Bicubic = DTEX_PTEX_FILTER_BICUBIC,          ///< Cubic with `sharpness`.
    BSpline = DTEX_PTEX_FILTER_BSPLINE,          ///< Cubic B-spline.
    CatmullRom = DTEX_PTEX_FILTER_CATMULL_ROM,   ///< Catmull-Rom.
    Mitchell = DTEX_PTEX_FILTER_MITCHELL,        ///< Mitchell.
    Stochastic = DTEX_PTEX_FILTER_STOCHASTIC,    ///< One texel of each of two levels, blended.
};

/// How a Ptex lookup filters, starting from the library's defaults
/// (`dtex_ptex_filter_options_default`: box, no lerp, width 1, nearest jitter).
/// Builder style: `PtexFilterOptions().filter(PtexFilter::Bilinear).lerp(true)`.
class PtexFilterOptions {
public:
    /// The library's defaults.
    PtexFilterOptions() noexcept : raw_{} { dtex_ptex_filter_options_default(&raw_); }

    /// The kernel.
    PtexFilterOptions& filter(PtexFilter f) noexcept { raw_.filter = static_cast<std::uint32_t>(f); return *this; }
    /// Blend width-4 kernels towards the next lower resolution.
    PtexFilterOptions& lerp(bool on) noexcept { raw_.lerp = on ? 1u : 0u; return *this; }
    /// Sharpness of `PtexFilter::Bicubic`, 0..1.
    PtexFilterOptions& sharpness(float v) noexcept { raw_.sharpness = v; return *this; }
    /// Filter each face alone (no blending across edges).
    PtexFilterOptions& noEdgeBlend(bool on) noexcept { raw_.noedgeblend = on ? 1u : 0u; return *this; }
    /// Multiplier of the footprint.
    PtexFilterOptions& width(float v) noexcept { raw_.width = v; return *this; }
    /// Added to the footprint (face uv).
    PtexFilterOptions& blur(float v) noexcept { raw_.blur = v; return *this; }
    /// The first channel to filter.
    PtexFilterOptions& firstChannel(std::uint32_t c) noexcept { raw_.first_channel = c; return *this; }
    /// Random numbers in [0, 1) choosing the stochastic filter's texels (0.5: nearest).
    PtexFilterOptions& jitter(float u, float v) noexcept { raw_.jitter_u = u; raw_.jitter_v = v; return *this; }

    /// The C struct.
    const DtexPtexFilterOptions& raw() const noexcept { return raw_; }
    /// The C struct, writable.
    DtexPtexFilterOptions& raw() noexcept { return raw_; }

private:
    DtexPtexFilterOptions raw_;  ///< The C options.
};

/// What a Ptex lookup reports beside its values.
struct PtexSampled {
    std::uint32_t channels = 0;  ///< Values written.
    bool resident = false;       ///< False: the face's constant colour, and the pages were requested.
};

namespace detail {
/// The C++ view of a `DtexPtexSampled`.
inline PtexSampled ptexSampled(const DtexPtexSampled& r) noexcept { return PtexSampled{r.channels, r.resident != 0}; }
/// A `T` (`DtexPtexInfo`, `DtexPtexFaceInfo`) with `struct_size` set.
template <class T>
T sized() noexcept {
    T t{};
    t.struct_size = sizeof(T);
    return t;
}
}  // namespace detail

/// The built-in procedural images.
enum class ProceduralKind : std::uint32_t {
    Checkerboard = DTEX_PROCEDURAL_CHECKERBOARD,  ///< One colour per mip level; param = square side.
    Noise = DTEX_PROCEDURAL_NOISE,                ///< Value noise; param = seed.
    Mandelbrot = DTEX_PROCEDURAL_MANDELBROT,      ///< param = max iterations.
};

/// A procedural texture of any virtual size, starting from the library's default
/// (`dtex_procedural_desc_default`: 4096² RGBA8 checkerboard of 16-texel squares).
class ProceduralDesc {
public:
    /// The library's default.
    ProceduralDesc() noexcept : raw_{} { dtex_procedural_desc_default(&raw_); }

    /// A `width × height` checkerboard of `squareTexels`-texel squares.
    static ProceduralDesc checkerboard(std::uint32_t width, std::uint32_t height, std::uint32_t squareTexels) noexcept {
        return ProceduralDesc().kind(ProceduralKind::Checkerboard).size(width, height).param(squareTexels);
    }
    /// `width × height` noise from `seed`.
    static ProceduralDesc noise(std::uint32_t width, std::uint32_t height, std::uint32_t seed) noexcept {
        return ProceduralDesc().kind(ProceduralKind::Noise).size(width, height).param(seed);
    }
    /// A `width × height` Mandelbrot view iterating at most `maxIterations`.
    static ProceduralDesc mandelbrot(std::uint32_t width, std::uint32_t height, std::uint32_t maxIterations) noexcept {
        return ProceduralDesc().kind(ProceduralKind::Mandelbrot).size(width, height).param(maxIterations);
    }

    /// Which image.
    ProceduralDesc& kind(ProceduralKind k) noexcept { raw_.kind = static_cast<std::uint32_t>(k); return *this; }
    /// Virtual level-0 size.
    ProceduralDesc& size(std::uint32_t width, std::uint32_t height) noexcept { raw_.width = width; raw_.height = height; return *this; }
    /// Channel type.
    ProceduralDesc& texelType(TexelType t) noexcept { raw_.texel_type = static_cast<std::uint32_t>(t); return *this; }
    /// Channels: 1, 2 or 4.
    ProceduralDesc& channels(std::uint32_t c) noexcept { raw_.channels = c; return *this; }
    /// The kind's parameter (square side, seed, iterations).
    ProceduralDesc& param(std::uint32_t p) noexcept { raw_.param = p; return *this; }

    /// The C struct.
    const DtexProceduralDesc& raw() const noexcept { return raw_; }
    /// The C struct, writable.
    DtexProceduralDesc& raw() noexcept { return raw_; }

private:
    DtexProceduralDesc raw_;  ///< The C description.
};

/// Whether caller-owned pixels are copied or borrowed by `Loader::createTextureFromPixels`.
enum class PixelOwnership : std::uint32_t {
    /// Copied before the call returns; the caller may free them at once.
    Copy = DTEX_PIXELS_COPY,
    /// Borrowed: the caller keeps them valid and unchanged until the texture is unloaded or
    /// replaced, or the loader destroyed.
    Borrow = DTEX_PIXELS_BORROW,
};

// ---------------------------------------------------------------------------------------
// User image sources
// ---------------------------------------------------------------------------------------

/// The answer of a source read: done, or "not yet" (the request is deferred to a later
/// launch; nothing needs to have been written). Failures are thrown.
enum class Readiness : std::int32_t {
    Ready = DTEX_SOURCE_READY,    ///< The destination was filled.
    NotYet = DTEX_SOURCE_NOT_YET, ///< Ask again at a later launch.
};

/// A producer of texel data that the library reads on demand: the C++ form of
/// `DtexImageSourceCallbacks`. Subclass it and hand it to `Loader::createTexture`.
///
/// **Ownership:** the library owns the object from a successful `createTexture` on and
/// deletes it exactly once (its destructor is the C `close`) when the texture's source is
/// dropped: at unload, replace, or loader destruction.
///
/// **Threads:** `open` is called before any read (again after a deferral or an invalidate:
/// see `open`). `readRegion`, `readMipTail` and `readBaseColor` are called from the
/// library's fill threads (and from blocking lookups), **concurrently**: make them
/// thread-safe.
///
/// **Errors:** throw (any exception). The library marks the texture failed (its lookups
/// return the desc's fallback colour) and reports `what()`. Exceptions never reach the library.
class ImageSource {
public:
    /// A source; nothing happens until `Loader::createTexture` adopts it.
    ImageSource() = default;
    /// Called exactly once by the library when it drops the source (the C `close`).
    virtual ~ImageSource() = default;
    ImageSource(const ImageSource&) = delete;             ///< Sources are not copied.
    ImageSource& operator=(const ImageSource&) = delete;  ///< Sources are not copied.

    /// Describe the image. Called at the texture's first use, before any read: normally
    /// once, but again if the mip-tail or base-colour read answered `NotYet` (the texture is
    /// then opened anew at a later launch) and after `Loader::invalidateTexture` (the size
    /// and format may then change; reads of the old contents may still be running), so keep
    /// it cheap and idempotent.
    virtual ImageInfo open() = 0;

    /// Write the texels of `region` (a level and a rectangle inside it) into `dest`, rows
    /// `rowBytes` apart, `destBytes` bytes in all, in the format `open` reported.
    virtual Readiness readRegion(const TileRegion& region, void* dest, std::size_t destBytes,
                                 std::size_t rowBytes) = 0;

    /// Write every level of the mip tail, each whole level at `levels[i].offset` in `dest`
    /// with packed rows of `levels[i].row_bytes`. The default reads each level with
    /// `readRegion`; a "not yet" from any level defers the tail.
    virtual Readiness readMipTail(const MipTailLevel* levels, std::size_t numLevels, void* dest,
                                  std::size_t destBytes) {
        for (std::size_t i = 0; i < numLevels; ++i) {
            const MipTailLevel& l = levels[i];
            const std::size_t bytes = l.row_bytes * static_cast<std::size_t>(l.region.height);
            if (l.offset > destBytes || bytes > destBytes - l.offset) {
                throw SourceError("mip tail level " + std::to_string(l.region.level) +
                                  " overruns the tail buffer");
            }
            if (readRegion(l.region, static_cast<unsigned char*>(dest) + l.offset, bytes, l.row_bytes) ==
                Readiness::NotYet) {
                return Readiness::NotYet;
            }
        }
        return Readiness::Ready;
    }

    /// The image's average colour if known cheaply; `std::nullopt` (the default) lets the
    /// library use the 1×1 level of the mip tail.
    virtual std::optional<std::array<float, 4>> readBaseColor() { return std::nullopt; }
};

/// Fills the page-table entry of page `pageIndex` (0-based within its resource) of a
/// generic resource: a value, `std::nullopt` for "not yet" (deferred), or throws (the page
/// fails; see the C ABI). Called from fill threads, concurrently.
using ResourceFill = std::function<std::optional<std::uint64_t>(std::uint32_t pageIndex)>;

/// One file of a UDIM pattern, as `expandUdimPattern` reports it. Plain value.
struct UdimTile {
    /// `1001 + column + 10 * row`, or `DTEX_UDIM_NO_NUMBER` (0) for a `<UVTILE>` tile that
    /// has none (column 10 or beyond, or row 100 or beyond).
    std::uint32_t udim = DTEX_UDIM_NO_NUMBER;
    std::uint32_t column = 0;  ///< s in [column, column + 1).
    std::uint32_t row = 0;     ///< t in [row, row + 1).
    std::string path;          ///< The file (the pattern's directory joined with its name).
};

/// The grid of a UDIM texture, as `Loader::udimGrid` reports it. Plain value.
struct UdimGrid {
    std::uint32_t width = 0;           ///< Columns.
    std::uint32_t height = 0;          ///< Rows.
    std::optional<TextureId> base;     ///< The whole-grid base texture, if any.
};

/// Implementation details: handle ownership and the C trampolines.
namespace detail {

/// What `expandUdimPattern`'s trampoline collects into.
struct UdimTileCollector {
    std::vector<UdimTile> tiles;     ///< The tiles so far.
    std::exception_ptr error;        ///< An exception that stopped the collection.
};

/// Report the exception in flight to the library (thread-local) and return DTEX_SOURCE_ERROR.
inline std::int32_t reportCurrentException() noexcept {
    try {
        throw;
    } catch (const std::exception& e) {
        dtex_source_set_error(e.what());
    } catch (...) {
        dtex_source_set_error("unknown C++ exception");
    }
    return DTEX_SOURCE_ERROR;
}

extern "C" {
/// `open` trampoline.
inline std::int32_t demandtex_hpp_source_open(void* user, DtexImageInfo* out) noexcept {
    try {
        *out = static_cast<ImageSource*>(user)->open().toC();
        return DTEX_SOURCE_READY;
    } catch (...) {
        return reportCurrentException();
    }
}
/// `read_region` trampoline.
inline std::int32_t demandtex_hpp_source_read_region(void* user, const DtexTileRegion* region, void* dest,
                                                     std::size_t destBytes, std::size_t rowBytes) noexcept {
    try {
        return static_cast<std::int32_t>(
            static_cast<ImageSource*>(user)->readRegion(*region, dest, destBytes, rowBytes));
    } catch (...) {
        return reportCurrentException();
    }
}
/// `read_mip_tail` trampoline.
inline std::int32_t demandtex_hpp_source_read_mip_tail(void* user, const DtexMipTailLevel* levels,
                                                       std::size_t numLevels, void* dest,
                                                       std::size_t destBytes) noexcept {
    try {
        return static_cast<std::int32_t>(
            static_cast<ImageSource*>(user)->readMipTail(levels, numLevels, dest, destBytes));
    } catch (...) {
        return reportCurrentException();
    }
}
/// `read_base_color` trampoline.
inline std::int32_t demandtex_hpp_source_read_base_color(void* user, float* outRgba) noexcept {
    try {
        const std::optional<std::array<float, 4>> c = static_cast<ImageSource*>(user)->readBaseColor();
        if (!c) return DTEX_SOURCE_NOT_YET;
        for (std::size_t i = 0; i < 4; ++i) outRgba[i] = (*c)[i];
        return DTEX_SOURCE_READY;
    } catch (...) {
        return reportCurrentException();
    }
}
/// `close` trampoline: deletes the source.
inline void demandtex_hpp_source_close(void* user) noexcept {
    try {
        delete static_cast<ImageSource*>(user);
    } catch (...) {  // a throwing destructor must not unwind into the library
    }
}
/// Resource fill trampoline.
inline std::int32_t demandtex_hpp_resource_fill(void* user, std::uint32_t pageIndex,
                                                std::uint64_t* outEntry) noexcept {
    try {
        const std::optional<std::uint64_t> e = (*static_cast<ResourceFill*>(user))(pageIndex);
        if (!e) return DTEX_SOURCE_NOT_YET;
        *outEntry = *e;
        return DTEX_SOURCE_READY;
    } catch (...) {
        return reportCurrentException();
    }
}
/// Resource close trampoline: deletes the fill function.
inline void demandtex_hpp_resource_close(void* user) noexcept {
    try {
        delete static_cast<ResourceFill*>(user);
    } catch (...) {
    }
}
/// `DtexUdimTileCallback` trampoline: appends to a `UdimTileCollector`; an exception
/// (`std::bad_alloc`) stops the expansion and is rethrown after it.
inline std::int32_t demandtex_hpp_udim_tile(void* user, std::uint32_t udim, std::uint32_t column,
                                            std::uint32_t row, const char* path) noexcept {
    auto* collector = static_cast<UdimTileCollector*>(user);
    try {
        collector->tiles.push_back(UdimTile{udim, column, row, path});
        return DTEX_UDIM_TILE_CONTINUE;
    } catch (...) {
        collector->error = std::current_exception();
        return DTEX_UDIM_TILE_STOP;
    }
}
}  // extern "C"

/// The C vtable over `source` (which stays owned by the caller until creation succeeds).
inline DtexImageSourceCallbacks callbacksFor(ImageSource* source) noexcept {
    DtexImageSourceCallbacks cb{};
    cb.struct_size = sizeof(DtexImageSourceCallbacks);
    cb.user_data = source;
    cb.open = &demandtex_hpp_source_open;
    cb.read_region = &demandtex_hpp_source_read_region;
    cb.read_mip_tail = &demandtex_hpp_source_read_mip_tail;
    cb.read_base_color = &demandtex_hpp_source_read_base_color;
    cb.close = &demandtex_hpp_source_close;
    return cb;
}

/// Throw INVALID_ARGUMENT with `message` (for checks done on the C++ side).
[[noreturn]] inline void invalidArgument(const std::string& message) {
    throw Error(DTEX_STATUS_INVALID_ARGUMENT, message);
}

/// A C string or NULL for an empty/absent one.
inline const char* cstrOrNull(const std::string& s) noexcept { return s.empty() ? nullptr : s.c_str(); }

/// Move-only owner of one C handle; `Traits::destroy` releases it. The null handle is `{0}`.
template <typename Traits>
class UniqueHandle {
public:
    /// The C handle type.
    using Handle = typename Traits::Handle;

    /// The null handle.
    UniqueHandle() noexcept = default;
    /// Own `h`.
    explicit UniqueHandle(Handle h) noexcept : h_(h) {}
    /// Take `o`'s handle; `o` becomes null.
    UniqueHandle(UniqueHandle&& o) noexcept : h_(o.release()) {}
    /// Release ours, take `o`'s; `o` becomes null.
    UniqueHandle& operator=(UniqueHandle&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = o.release();
        }
        return *this;
    }
    UniqueHandle(const UniqueHandle&) = delete;             ///< Move-only.
    UniqueHandle& operator=(const UniqueHandle&) = delete;  ///< Move-only.
    /// Releases the handle (errors ignored).
    ~UniqueHandle() { reset(); }

    /// The handle, still owned.
    Handle get() const noexcept { return h_; }
    /// Give the handle up; this becomes null.
    Handle release() noexcept {
        Handle h = h_;
        h_ = Handle{};
        return h;
    }
    /// Destroy now, ignoring errors (a destructor cannot report them).
    void reset() noexcept {
        if (h_.id != 0) (void)Traits::destroy(release());
    }
    /// Destroy now; throw the library's error, if any.
    void destroy() {
        if (h_.id != 0) check(Traits::destroy(release()));
    }
    /// Whether a handle is held.
    explicit operator bool() const noexcept { return h_.id != 0; }

private:
    Handle h_{};  ///< `{0}` when null.
};

/// How a `DtexLoader` is released.
struct LoaderTraits {
    using Handle = DtexLoader;  ///< The C handle type.
    /// Release `h` (errors are returned, not thrown).
    static DtexStatus destroy(DtexLoader h) noexcept { return dtex_loader_destroy(h); }
};
/// How a `DtexLaunch` is released (ended without processing).
struct LaunchTraits {
    using Handle = DtexLaunch;  ///< The C handle type.
    /// Release `h` (errors are returned, not thrown).
    static DtexStatus destroy(DtexLaunch h) noexcept { return dtex_launch_discard(h); }
};
/// How a `DtexTicket` is released.
struct TicketTraits {
    using Handle = DtexTicket;  ///< The C handle type.
    /// Release `h` (errors are returned, not thrown).
    static DtexStatus destroy(DtexTicket h) noexcept { return dtex_ticket_destroy(h); }
};
/// How a `DtexCache` is released.
struct CacheTraits {
    using Handle = DtexCache;  ///< The C handle type.
    /// Release `h` (errors are returned, not thrown).
    static DtexStatus destroy(DtexCache h) noexcept { return dtex_cache_destroy(h); }
};

/// Lookups per C call when a batch is converted to `Sample`s through a stack buffer.
constexpr std::size_t kBatchChunk = 256;

/// Run `call(queries, n, cOut)` over `count` queries in stack-buffered chunks and convert
/// into `out`; returns how many samples were resident.
template <typename Call>
std::size_t batchInChunks(const GradQuery* queries, std::size_t count, Sample* out, Call&& call) {
    if (count != 0 && (queries == nullptr || out == nullptr)) invalidArgument("null batch array");
    std::array<DtexSample, kBatchChunk> buf;
    std::size_t resident = 0;
    for (std::size_t first = 0; first < count; first += kBatchChunk) {
        const std::size_t n = count - first < kBatchChunk ? count - first : kBatchChunk;
        call(queries + first, n, buf.data());
        for (std::size_t i = 0; i < n; ++i) {
            out[first + i] = Sample::fromC(buf[i]);
            resident += out[first + i].resident ? 1 : 0;
        }
    }
    return resident;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------
// UDIM patterns
// ---------------------------------------------------------------------------------------

/// The files a UDIM pattern (`dir/name.<UDIM>.exr` or `dir/name.<UVTILE>.exr`) names that
/// exist, row-major (for `<UDIM>`: by UDIM number), by the library's rule: the rule
/// `Loader::createUdimFromPattern` uses (`dtex_udim_expand_pattern` states it). Empty when
/// no file matches. Throws `Error`: INVALID_ARGUMENT for a pattern without exactly one
/// token in its file name, IO_ERROR when the directory cannot be listed (e.g. it does not
/// exist). Needs no loader; any thread.
inline std::vector<UdimTile> expandUdimPattern(const std::string& pattern) {
    detail::UdimTileCollector collector;
    std::uint32_t count = 0;
    const DtexStatus status =
        dtex_udim_expand_pattern(pattern.c_str(), &detail::demandtex_hpp_udim_tile, &collector, &count);
    if (collector.error) std::rethrow_exception(collector.error);
    check(status);
    return std::move(collector.tiles);
}

/// Set the most bytes of decoded Ptex face data a decode cache holds (the sources
/// reductions are made from; default 64 MiB, 0 keeps nothing). Each loader or cache takes
/// its own from its texture budget at its first Ptex texture: this many bytes, at most an
/// eighth of the budget. Any thread.
inline void setPtexDecodeCacheBytes(std::uint64_t bytes) noexcept { dtex_ptex_set_decode_cache_bytes(bytes); }

/// The most bytes of decoded Ptex face data a decode cache holds.
inline std::uint64_t ptexDecodeCacheBytes() noexcept { return dtex_ptex_decode_cache_bytes(); }

// ---------------------------------------------------------------------------------------
// Ticket
// ---------------------------------------------------------------------------------------

/// The fills started by one `Loader::processRequests`. Move-only; destroying it does not
/// cancel the fills (they finish and show at a later launch). Safe to wait on or poll from
/// any thread; the loader being destroyed makes it an invalid handle.
class Ticket {
public:
    /// How far the fills have got.
    struct Progress {
        bool done = false;                ///< Every fill finished.
        std::uint64_t tasksRemaining = 0; ///< Fills not finished yet.
        std::uint64_t tasksTotal = 0;     ///< Fills started by the processRequests.
    };

    /// A null ticket (every call throws `DTEX_STATUS_INVALID_HANDLE`).
    Ticket() noexcept = default;
    /// Take ownership of a C ticket handle.
    static Ticket adopt(DtexTicket handle) noexcept { return Ticket(handle); }

    /// Wait until every fill finished.
    void wait() const { check(dtex_ticket_wait(h_.get(), DTEX_WAIT_FOREVER)); }

    /// Wait at most `timeout` (rounded up to milliseconds). `true`: every fill finished;
    /// `false`: the time ran out (not an error).
    template <typename Rep, typename Period>
    bool waitFor(const std::chrono::duration<Rep, Period>& timeout) const {
        std::uint64_t ms = 0;
        if (timeout > std::chrono::duration<Rep, Period>::zero()) {
            const double d = std::ceil(std::chrono::duration<double, std::milli>(timeout).count());
            // Beyond ~584 million years: wait forever (the conversion would overflow).
            ms = d >= 1.8e19 ? std::uint64_t{DTEX_WAIT_FOREVER} : static_cast<std::uint64_t>(d);
        }
        const DtexStatus s = dtex_ticket_wait(h_.get(), ms);
        if (s == DTEX_STATUS_TIMEOUT) return false;
        check(s);
        return true;
    }

    /// Wait until `deadline` at most; as `waitFor`.
    template <typename Clock, typename Duration>
    bool waitUntil(const std::chrono::time_point<Clock, Duration>& deadline) const {
        return waitFor(deadline - Clock::now());
    }

    /// Whether every fill finished (never blocks).
    bool poll() const { return progress().done; }

    /// Done flag and task counts (never blocks).
    Progress progress() const {
        std::uint32_t done = 0;
        Progress p;
        check(dtex_ticket_poll(h_.get(), &done, &p.tasksRemaining, &p.tasksTotal));
        p.done = done != 0;
        return p;
    }

    /// The C handle (still owned by this object).
    DtexTicket handle() const noexcept { return h_.get(); }
    /// Give up ownership of the C handle; this object becomes null.
    DtexTicket release() noexcept { return h_.release(); }
    /// Destroy the handle now (throws on a library error); the object becomes null.
    void destroy() { h_.destroy(); }
    /// Whether this object holds a handle (it may still have been invalidated by the library).
    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

private:
    /// Own `h`.
    explicit Ticket(DtexTicket h) noexcept : h_(h) {}
    detail::UniqueHandle<detail::TicketTraits> h_;  ///< The owned handle.
};

class Loader;

// ---------------------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------------------

/// One launch of the multi-pass cycle: a snapshot of what is resident, sampled by the
/// renderer (CPU lookups here, or device code through `deviceContext()`); misses become
/// requests. End it with `Loader::processRequests(std::move(launch))`, or let the
/// destructor (or `discard()`) end it without processing.
///
/// Move-only. Lookups are `const` and thread-safe: many threads may sample one launch.
/// Moving, discarding, processing or destroying it must not race with sampling it.
class Launch {
public:
    /// A null launch (every call throws `DTEX_STATUS_INVALID_HANDLE`).
    Launch() noexcept = default;
    /// Start a launch of `loader`: fills finished since the last launch become visible.
    static Launch prepare(const Loader& loader);
    /// Take ownership of a C launch handle.
    static Launch adopt(DtexLaunch handle) noexcept { return Launch(handle); }

    /// The launch number (LRU ageing counts launches).
    std::uint32_t number() const {
        std::uint32_t n = 0;
        check(dtex_launch_get_number(h_.get(), &n));
        return n;
    }

    /// The device context of this launch, for device code. Its pointers are valid while
    /// the launch lives (until it is processed, discarded or destroyed).
    DeviceContext deviceContext() const {
        DeviceContext c{};
        check(dtex_launch_get_device_context(h_.get(), &c));
        return c;
    }

    /// Sample level 0 at (s, t). Unknown ids give the library's fallback colour, resident.
    Sample tex2D(TextureId texture, float s, float t, const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_launch_tex2d(h_.get(), texture, s, t, &o, &out));
        return Sample::fromC(out);
    }

    /// Sample at an explicit level of detail (isotropic).
    Sample tex2DLod(TextureId texture, float s, float t, float lod, const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_launch_tex2d_lod(h_.get(), texture, s, t, lod, &o, &out));
        return Sample::fromC(out);
    }

    /// Sample the footprint of the screen-space gradients (dsdx, dtdx), (dsdy, dtdy) of (s, t).
    Sample tex2DGrad(TextureId texture, float s, float t, float dsdx, float dtdx, float dsdy, float dtdy,
                     const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_launch_tex2d_grad(h_.get(), texture, s, t, dsdx, dtdx, dsdy, dtdy, &o, &out));
        return Sample::fromC(out);
    }

    /// `tex2DGrad` with the derivatives of the value with respect to s and t
    /// (`dtex_launch_tex2d_grad_derivatives`).
    SampleDerivatives tex2DGradDerivatives(TextureId texture, float s, float t, float dsdx, float dtdx,
                                           float dsdy, float dtdy,
                                           const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSampleDerivatives out{};
        check(dtex_launch_tex2d_grad_derivatives(h_.get(), texture, s, t, dsdx, dtdx, dsdy, dtdy, &o,
                                                 &out));
        return SampleDerivatives::fromC(out);
    }

    /// Sample lat-long environment map `texture` in direction `r` with its screen-space
    /// differentials `drdx`, `drdy`: OpenImageIO's `TextureSystem::environment` with bilinear
    /// interpolation (`dtex_launch_environment`).
    Sample environment(TextureId texture, const float r[3], const float drdx[3], const float drdy[3],
                       UpAxis up = UpAxis::Y, const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_launch_environment(h_.get(), texture, r, drdx, drdy, static_cast<std::uint32_t>(up), &o,
                                      &out));
        return Sample::fromC(out);
    }

    /// `tex2DGrad` on a UDIM texture: (s, t) select the tile (or the base texture).
    Sample tex2DGradUdim(UdimId udim, float s, float t, float dsdx, float dtdx, float dsdy, float dtdy,
                         const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_launch_tex2d_grad_udim(h_.get(), udim, s, t, dsdx, dtdx, dsdy, dtdy, &o, &out));
        return Sample::fromC(out);
    }

    /// `tex2DGradUdim` with the derivatives of the value with respect to the UDIM
    /// coordinates (`dtex_launch_tex2d_grad_udim_derivatives`).
    SampleDerivatives tex2DGradUdimDerivatives(UdimId udim, float s, float t, float dsdx, float dtdx,
                                               float dsdy, float dtdy,
                                               const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSampleDerivatives out{};
        check(dtex_launch_tex2d_grad_udim_derivatives(h_.get(), udim, s, t, dsdx, dtdx, dsdy, dtdy, &o,
                                                      &out));
        return SampleDerivatives::fromC(out);
    }

    /// `count` lookups in one call, results in `out[0..count)`; returns how many were
    /// resident. Zero-copy: the arrays go to the library as they are.
    std::size_t tex2DGradBatchRaw(const GradQuery* queries, std::size_t count, DtexSample* out,
                                  const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        std::size_t resident = 0;
        check(dtex_launch_tex2d_grad_batch(h_.get(), queries, count, &o, out, &resident));
        return resident;
    }

    /// `count` lookups, results in `out[0..count)` as `Sample`s (converted through a small
    /// stack buffer, a few hundred lookups per library call); returns how many were resident.
    std::size_t tex2DGradBatch(const GradQuery* queries, std::size_t count, Sample* out,
                               const SampleOptions& options = {}) const {
        return detail::batchInChunks(queries, count, out, [&](const GradQuery* q, std::size_t n, DtexSample* o) {
            tex2DGradBatchRaw(q, n, o, options);
        });
    }

    /// The lookups of `queries`, one `Sample` each.
    std::vector<Sample> tex2DGradBatch(const std::vector<GradQuery>& queries, const SampleOptions& options = {}) const {
        std::vector<Sample> out(queries.size());
        tex2DGradBatch(queries.data(), queries.size(), out.data(), options);
        return out;
    }

    /// Filter the Ptex texture `texture` at (u, v) of `face` over the footprint (dudx, dvdx),
    /// (dudy, dvdy) into `out[0..channels)` (`dtex_launch_ptex_sample`). A miss requests
    /// the missing pages and gives the face's constant colour, `resident` false.
    PtexSampled ptexSample(PtexId texture, std::uint32_t face, float u, float v, float dudx, float dvdx, float dudy,
                           float dvdy, float* out, std::size_t channels,
                           const PtexFilterOptions& options = PtexFilterOptions()) const {
        DtexPtexSampled r{};
        check(dtex_launch_ptex_sample(h_.get(), texture, face, u, v, dudx, dvdx, dudy, dvdy, &options.raw(), out,
                                      channels, &r));
        return detail::ptexSampled(r);
    }

    /// `count` Ptex lookups of this launch (`dtex_launch_ptex_sample_batch`): query `i`
    /// writes `channels` floats at `out + i * channels` and, if `results` is not null,
    /// `results[i]`; faster than a call per query.
    void ptexSampleBatch(const PtexQuery* queries, std::size_t count, float* out, std::size_t channels,
                         DtexPtexSampled* results = nullptr,
                         const PtexFilterOptions& options = PtexFilterOptions()) const {
        check(dtex_launch_ptex_sample_batch(h_.get(), queries, count, &options.raw(), out, channels, results));
    }

    /// Generic resources: the entry of `page` if resident; otherwise `std::nullopt` and the
    /// page is requested (filled by its resource's callback for a later launch).
    std::optional<std::uint64_t> mapOrRequest(PageId page) const {
        std::uint64_t entry = 0;
        std::uint32_t resident = 0;
        check(dtex_launch_map_or_request(h_.get(), page, &entry, &resident));
        if (resident == 0) return std::nullopt;
        return entry;
    }

    /// End the launch without processing its requests (throws on a library error, e.g. the
    /// loader was destroyed). The object becomes null.
    void discard() { h_.destroy(); }

    /// The C handle (still owned by this object).
    DtexLaunch handle() const noexcept { return h_.get(); }
    /// Give up ownership of the C handle; this object becomes null.
    DtexLaunch release() noexcept { return h_.release(); }
    /// Whether this object holds a handle.
    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

private:
    /// Own `h`.
    explicit Launch(DtexLaunch h) noexcept : h_(h) {}
    detail::UniqueHandle<detail::LaunchTraits> h_;  ///< The owned handle.
};

// ---------------------------------------------------------------------------------------
// Loader
// ---------------------------------------------------------------------------------------

/// What every loader offers, whatever backend its tiles live on: textures, UDIM grids, user
/// resources, invalidate / replace / unload, the budget, statistics — one page table, tile
/// pool and fill pool, driving the multi-pass cycle `prepareLaunch → sample →
/// processRequests → Ticket::wait` (see `Loader` for the CPU, `CudaLoader` for a GPU).
///
/// Move-only owner of a `DtexLoader`. Every member is `const` and thread-safe: share a
/// `const Loader&` between threads. Destruction waits for the fills of its tickets and
/// drops its textures' sources (deleting the `ImageSource`s it owns); its launches and
/// tickets become invalid handles.
class LoaderBase {
public:
    /// Change the texture memory budget (shrinking evicts; throws if it cannot hold the
    /// non-evictable mip tails).
    void setMaxTextureMemory(std::uint64_t bytes) const { check(dtex_loader_set_max_texture_memory(h_.get(), bytes)); }

    /// A statistics snapshot.
    Stats stats() const {
        Stats s;
        check(dtex_loader_get_stats(h_.get(), &s));
        return s;
    }

    /// A Ptex texture from a `.ptx` file (UTF-8 path): its header is read now (a missing
    /// file, or one that is not Ptex, throws IO_ERROR / UNSUPPORTED naming the file), the
    /// rest when the texture is first looked up. Sample it with `Launch::ptexSample`.
    PtexId createPtex(const std::string& path) const {
        PtexId id = kNoTexture;
        check(dtex_ptex_create(h_.get(), path.c_str(), &id));
        return id;
    }

    /// The description of a Ptex texture of this loader.
    PtexInfo ptexInfo(PtexId texture) const {
        PtexInfo i = detail::sized<PtexInfo>();
        check(dtex_ptex_get_info(h_.get(), texture, &i));
        return i;
    }

    /// One face of a Ptex texture of this loader.
    PtexFaceInfo ptexFaceInfo(PtexId texture, std::uint32_t face) const {
        PtexFaceInfo i = detail::sized<PtexFaceInfo>();
        check(dtex_ptex_get_face_info(h_.get(), texture, face, &i));
        return i;
    }

    /// A texture read from an image file (UTF-8 path), opened at its first use: a missing
    /// or bad file makes the texture sample its fallback colour, not this call throw.
    TextureId createTextureFromFile(const std::string& path, const TextureDesc& desc = TextureDesc()) const {
        TextureId id = kNoTexture;
        check(dtex_texture_create_from_file(h_.get(), path.c_str(), &desc.raw(), &id));
        return id;
    }

    /// A texture of caller-owned level-0 pixels (rows `rowBytes` apart, 0 = packed; mips
    /// are generated). `PixelOwnership::Copy` copies them now; `Borrow` reads them later, so
    /// they must stay valid and unchanged until the texture is unloaded or replaced or the
    /// loader destroyed.
    TextureId createTextureFromPixels(const ImageInfo& info, const void* pixels, std::size_t rowBytes,
                                      PixelOwnership ownership, const TextureDesc& desc = TextureDesc()) const {
        const DtexImageInfo ci = info.toC();
        TextureId id = kNoTexture;
        check(dtex_texture_create_from_pixels(h_.get(), &ci, pixels, rowBytes, static_cast<std::uint32_t>(ownership),
                                              &desc.raw(), &id));
        return id;
    }

    /// A built-in procedural texture.
    TextureId createProceduralTexture(const ProceduralDesc& procedural, const TextureDesc& desc = TextureDesc()) const {
        TextureId id = kNoTexture;
        check(dtex_texture_create_procedural(h_.get(), &procedural.raw(), &desc.raw(), &id));
        return id;
    }

    /// A texture read from a user `ImageSource`. On success the library owns `source` and
    /// deletes it exactly once when done with it; if this throws, `source` was never
    /// adopted and is deleted by the `unique_ptr` as usual. `name` (optional) appears in
    /// the library's messages.
    TextureId createTexture(std::unique_ptr<ImageSource> source, const TextureDesc& desc = TextureDesc(),
                            const std::string& name = std::string()) const {
        if (!source) detail::invalidArgument("createTexture: null ImageSource");
        const DtexImageSourceCallbacks cb = detail::callbacksFor(source.get());
        TextureId id = kNoTexture;
        check(dtex_texture_create_from_callbacks(h_.get(), &cb, detail::cstrOrNull(name), &desc.raw(), &id));
        (void)source.release();  // adopted: the library's close deletes it
        return id;
    }

    /// A UDIM texture from a row-major `gridWidth × gridHeight` grid of file paths (row 0 is
    /// v in [0, 1); `std::nullopt` is a hole) and an optional whole-grid base texture.
    UdimId createUdim(const std::vector<std::optional<std::string>>& tilePaths, std::uint32_t gridWidth,
                      std::uint32_t gridHeight, const std::optional<std::string>& basePath = std::nullopt,
                      const TextureDesc& desc = TextureDesc()) const {
        if (tilePaths.size() != static_cast<std::size_t>(gridWidth) * gridHeight) {
            detail::invalidArgument("createUdim: " + std::to_string(tilePaths.size()) + " paths for a " +
                                    std::to_string(gridWidth) + "x" + std::to_string(gridHeight) + " grid");
        }
        std::vector<const char*> paths;
        paths.reserve(tilePaths.size());
        for (const std::optional<std::string>& p : tilePaths) paths.push_back(p ? p->c_str() : nullptr);
        UdimId id = kNoTexture;
        check(dtex_udim_create(h_.get(), paths.data(), gridWidth, gridHeight, basePath ? basePath->c_str() : nullptr,
                               &desc.raw(), &id));
        return id;
    }

    /// A UDIM texture from the files matching `pattern` (`name.<UDIM>.exr` or
    /// `name.<UVTILE>.exr`) and an optional base texture file.
    UdimId createUdimFromPattern(const std::string& pattern, const std::optional<std::string>& basePath = std::nullopt,
                                 const TextureDesc& desc = TextureDesc()) const {
        UdimId id = kNoTexture;
        check(dtex_udim_create_from_pattern(h_.get(), pattern.c_str(), basePath ? basePath->c_str() : nullptr,
                                            &desc.raw(), &id));
        return id;
    }

    /// The grid of UDIM texture `udim` (`dtex_udim_get_grid`); throws UNKNOWN_TEXTURE for an
    /// id that is not a UDIM texture of this loader.
    UdimGrid udimGrid(UdimId udim) const {
        UdimGrid g;
        TextureId base = kNoTexture;
        check(dtex_udim_get_grid(h_.get(), udim, &g.width, &g.height, &base));
        if (base != kNoTexture) g.base = base;
        return g;
    }

    /// The texture of tile (`column`, `row`) of UDIM texture `udim` (`dtex_udim_get_tile`):
    /// an ordinary texture id (`imageInfo`, `textureError`), or `std::nullopt` for a hole or
    /// a tile outside the grid.
    std::optional<TextureId> udimTile(UdimId udim, std::uint32_t column, std::uint32_t row) const {
        TextureId t = kNoTexture;
        check(dtex_udim_get_tile(h_.get(), udim, column, row, &t));
        if (t == kNoTexture) return std::nullopt;
        return t;
    }

    /// The texture's source changed: drop its tiles; they are read again on demand.
    void invalidateTexture(TextureId texture) const { check(dtex_texture_invalidate(h_.get(), texture)); }

    /// Drop the texture's tiles and source (a user `ImageSource` is deleted); the id then
    /// samples its fallback colour. The id is not reused.
    void unloadTexture(TextureId texture) const { check(dtex_texture_unload(h_.get(), texture)); }

    /// The same id now reads the image file at `path` (size and format may change).
    void replaceTextureFromFile(TextureId texture, const std::string& path, const TextureDesc& desc = TextureDesc()) const {
        check(dtex_texture_replace_from_file(h_.get(), texture, path.c_str(), &desc.raw()));
    }

    /// The same id now reads `source` (ownership as `createTexture`: adopted on success;
    /// the old source is dropped).
    void replaceTexture(TextureId texture, std::unique_ptr<ImageSource> source, const TextureDesc& desc = TextureDesc(),
                        const std::string& name = std::string()) const {
        if (!source) detail::invalidArgument("replaceTexture: null ImageSource");
        const DtexImageSourceCallbacks cb = detail::callbacksFor(source.get());
        check(dtex_texture_replace_from_callbacks(h_.get(), texture, &cb, detail::cstrOrNull(name), &desc.raw()));
        (void)source.release();
    }

    /// Why lookups of `texture` do not give its texels, or `std::nullopt` if it is healthy:
    /// its source failed (the source's message), it was unloaded, or the id names no
    /// texture (`DTEX_STATUS_UNKNOWN_TEXTURE`). Throws only for an invalid loader handle.
    /// The description of `texture` as its source opened it (size, stored texel type,
    /// channels, mip levels); empty before the texture has opened (its first lookups'
    /// fills), or if it failed or was unloaded.
    std::optional<ImageInfo> imageInfo(TextureId texture) const {
        DtexImageInfo c{};
        std::uint32_t opened = 0;
        check(dtex_texture_get_image_info(h_.get(), texture, &c, &opened));
        if (opened == 0) return std::nullopt;
        ImageInfo i;
        i.width = c.width;
        i.height = c.height;
        i.texelType = static_cast<TexelType>(c.texel_type);
        i.channels = c.channels;
        i.numLevels = c.num_levels;
        return i;
    }

    std::optional<Error> textureError(TextureId texture) const {
        const DtexStatus s = dtex_texture_get_error(h_.get(), texture);
        if (s == DTEX_STATUS_OK) return std::nullopt;
        if (s == DTEX_STATUS_INVALID_HANDLE) throwError(s);
        const char* m = dtex_last_error_message();
        return Error(s, m ? m : "");
    }

    /// A generic resource of `numPages` pages whose 64-bit entries `fill` produces on demand
    /// (see `Launch::mapOrRequest`). Returns its first page. The library owns `fill` on
    /// success and destroys it when the loader is destroyed.
    PageId createResource(std::uint32_t numPages, ResourceFill fill) const {
        if (!fill) detail::invalidArgument("createResource: empty fill function");
        auto owned = std::make_unique<ResourceFill>(std::move(fill));
        PageId first = 0;
        check(dtex_resource_create(h_.get(), numPages, &detail::demandtex_hpp_resource_fill, owned.get(),
                                   &detail::demandtex_hpp_resource_close, &first));
        (void)owned.release();  // adopted: the library's close deletes it
        return first;
    }

    /// The C handle (still owned by this object).
    DtexLoader handle() const noexcept { return h_.get(); }
    /// Give up ownership of the C handle; this object becomes null.
    DtexLoader release() noexcept { return h_.release(); }
    /// Destroy the loader now (throws on a library error); the object becomes null.
    void destroy() { h_.destroy(); }
    /// Whether this object holds a handle.
    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

protected:
    /// Own `h`.
    explicit LoaderBase(detail::UniqueHandle<detail::LoaderTraits> h) noexcept : h_(std::move(h)) {}
    detail::UniqueHandle<detail::LoaderTraits> h_;  ///< The owned handle.
};

/// A demand loader on the CPU: launches sample through `Launch` (`tex2DGrad` and friends)
/// between `prepareLaunch` and `processRequests`.
class Loader : public LoaderBase {
public:
    /// A loader with `options` (throws on invalid options).
    explicit Loader(const LoaderOptions& options = LoaderOptions()) : LoaderBase(create(options)) {}
    /// Take ownership of a C loader handle.
    static Loader adopt(DtexLoader handle) noexcept { return Loader(detail::UniqueHandle<detail::LoaderTraits>(handle)); }

    /// Start a launch: fills finished since the last launch become visible.
    Launch prepareLaunch() const {
        DtexLaunch l{};
        check(dtex_launch_prepare(h_.get(), &l));
        return Launch::adopt(l);
    }

    /// End `launch` and start filling the pages it requested. The launch is consumed (null
    /// afterwards) even if this throws.
    Ticket processRequests(Launch&& launch) const {
        const DtexLaunch l = launch.release();
        DtexTicket t{};
        check(dtex_process_requests(l, &t));
        return Ticket::adopt(t);
    }

private:
    /// Own `h`.
    explicit Loader(detail::UniqueHandle<detail::LoaderTraits> h) noexcept : LoaderBase(std::move(h)) {}
    /// Create the C object (throws on failure).
    static detail::UniqueHandle<detail::LoaderTraits> create(const LoaderOptions& options) {
        DtexLoader h{};
        check(dtex_loader_create(&options.raw(), &h));
        return detail::UniqueHandle<detail::LoaderTraits>(h);
    }
};

/// One launch of a `CudaLoader`: pass `context` by value to the kernels that sample through
/// the device API (`dtex::tex2DGrad(ctx, ...)`), then hand the launch to `processRequests`.
/// Plain data: a launch never processed needs no clean-up.
struct CudaLaunch {
    DtexCudaLaunch launch{};      ///< The C launch.
    DtexDeviceContext context{};  ///< The device context for this launch's kernels.
};

/// A demand loader on a CUDA device: tiles live in sparse CUDA textures, the page table on
/// the device. Kernels launched on a caller's stream (a `CUstream`, passed as `void*` so
/// that this header needs no CUDA header; nullptr: the default stream) between
/// `prepareLaunch` and `processRequests` sample through `include/demandtex/device/`.
class CudaLoader : public LoaderBase {
public:
    /// A loader on CUDA device `device` (throws `Error` with `DTEX_STATUS_NO_CUDA` and the
    /// reason when there is no usable driver or device: fall back to `Loader`).
    explicit CudaLoader(std::uint32_t device = 0, const LoaderOptions& options = LoaderOptions())
        : LoaderBase(create(device, options)) {}

    /// When filled tiles are published on the device, from the next launch on:
    /// `DTEX_TILE_PUBLICATION_BEFORE_LAUNCH` (at `prepareLaunch`: the launch samples them)
    /// or `DTEX_TILE_PUBLICATION_DURING_LAUNCH` (at `processRequests`, while the kernel
    /// runs: the frame does not pay for them; they are sampled one launch later). The
    /// default follows the streaming mode (final: before; interactive: during).
    void setTilePublication(std::uint32_t publication) const {
        check(dtex_cuda_loader_set_tile_publication(h_.get(), publication));
    }

    /// A Ptex texture from a `.ptx` file (UTF-8 path), parsed now, with its face and unit
    /// tables copied to the device: `*device` is what kernels pass, by value, to
    /// `dtex::ptexSample`. A missing or bad file throws (IO_ERROR / UNSUPPORTED, naming
    /// the file). The tables live as long as the loader.
    PtexId createDevicePtex(const std::string& path, DtexPtexDeviceTexture* device) const {
        PtexId id = kNoTexture;
        check(dtex_cuda_ptex_create(h_.get(), path.c_str(), &id, device));
        return id;
    }

    /// The device tables of a Ptex texture made by `createDevicePtex` (the same value).
    DtexPtexDeviceTexture ptexDeviceTexture(PtexId texture) const {
        DtexPtexDeviceTexture d{};
        check(dtex_cuda_ptex_get_device_texture(h_.get(), texture, &d));
        return d;
    }

    /// Start a launch: what finished since the last one becomes visible on the device;
    /// `stream` waits for it there (the call does not wait for the GPU).
    CudaLaunch prepareLaunch(void* stream = nullptr) const {
        CudaLaunch l;
        check(dtex_cuda_launch_prepare(h_.get(), stream, &l.launch, &l.context));
        return l;
    }

    /// Publish what finished since `prepareLaunch` (while the kernels run), then serve the
    /// requests of `launch` once the work enqueued on `stream` so far (its kernels) has run
    /// on the device; the fills run on the loader's fill threads.
    Ticket processRequests(const CudaLaunch& launch, void* stream = nullptr) const {
        DtexTicket t{};
        check(dtex_cuda_process_requests(launch.launch, stream, &t));
        return Ticket::adopt(t);
    }

private:
    /// Create the C object (throws on failure).
    static detail::UniqueHandle<detail::LoaderTraits> create(std::uint32_t device, const LoaderOptions& options) {
        DtexLoader h{};
        check(dtex_cuda_loader_create(device, &options.raw(), &h));
        return detail::UniqueHandle<detail::LoaderTraits>(h);
    }
};

inline Launch Launch::prepare(const Loader& loader) { return loader.prepareLaunch(); }

// ---------------------------------------------------------------------------------------
// Cache
// ---------------------------------------------------------------------------------------

/// A blocking texture cache (as OpenImageIO's TextureSystem) on the same engine: a miss
/// reads the tile in the calling thread before the lookup returns. Move-only owner of a
/// `DtexCache`; every member is `const` and thread-safe.
class Cache {
public:
    /// A cache with `options` (`maxTextureMemory` is the cache size).
    explicit Cache(const LoaderOptions& options = LoaderOptions()) : h_(create(options)) {}
    /// Take ownership of a C cache handle.
    static Cache adopt(DtexCache handle) noexcept { return Cache(detail::UniqueHandle<detail::CacheTraits>(handle)); }

    /// The texture of an image file, registered at the first call for `path` with `desc`
    /// (later calls return the same id and ignore `desc`). Opened at the first lookup: a
    /// missing or bad file samples its fallback colour.
    TextureId textureForPath(const std::string& path, const TextureDesc& desc = TextureDesc()) const {
        TextureId id = kNoTexture;
        check(dtex_cache_texture_for_path(h_.get(), path.c_str(), &desc.raw(), &id));
        return id;
    }

    /// A texture's description, opening its file if no lookup has yet
    /// (`dtex_cache_get_texture_info`); throws the texture's failure (a missing file, ...).
    /// `averageColor`, if not null, gets the texture's average colour (four floats).
    ImageInfo textureInfo(TextureId texture, std::array<float, 4>* averageColor = nullptr) const {
        DtexImageInfo info{};
        check(dtex_cache_get_texture_info(h_.get(), texture, &info,
                                          averageColor ? averageColor->data() : nullptr));
        return ImageInfo{info.width, info.height, static_cast<TexelType>(info.texel_type), info.channels,
                         info.num_levels};
    }

    /// Blocking lookup of the footprint of gradients (dsdx, dtdx), (dsdy, dtdy) at (s, t).
    Sample tex2DGrad(TextureId texture, float s, float t, float dsdx, float dtdx, float dsdy, float dtdy,
                     const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_cache_tex2d_grad(h_.get(), texture, s, t, dsdx, dtdx, dsdy, dtdy, &o, &out));
        return Sample::fromC(out);
    }

    /// Blocking `tex2DGrad` with the derivatives of the value with respect to s and t, as
    /// OpenImageIO's `dresultds` / `dresultdt` (`dtex_cache_tex2d_grad_derivatives`).
    SampleDerivatives tex2DGradDerivatives(TextureId texture, float s, float t, float dsdx, float dtdx,
                                           float dsdy, float dtdy,
                                           const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSampleDerivatives out{};
        check(dtex_cache_tex2d_grad_derivatives(h_.get(), texture, s, t, dsdx, dtdx, dsdy, dtdy, &o,
                                                &out));
        return SampleDerivatives::fromC(out);
    }

    /// Blocking lookup of lat-long environment map `texture` in direction `r` with its
    /// differentials (`dtex_cache_environment`).
    Sample environment(TextureId texture, const float r[3], const float drdx[3], const float drdy[3],
                       UpAxis up = UpAxis::Y, const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        DtexSample out{};
        check(dtex_cache_environment(h_.get(), texture, r, drdx, drdy, static_cast<std::uint32_t>(up), &o, &out));
        return Sample::fromC(out);
    }

    /// `count` blocking lookups into `out[0..count)`, zero-copy.
    void tex2DGradBatchRaw(const GradQuery* queries, std::size_t count, DtexSample* out,
                           const SampleOptions& options = {}) const {
        const DtexSampleOptions o = options.toC();
        check(dtex_cache_tex2d_grad_batch(h_.get(), queries, count, &o, out));
    }

    /// `count` blocking lookups into `out[0..count)` as `Sample`s; returns how many were resident.
    std::size_t tex2DGradBatch(const GradQuery* queries, std::size_t count, Sample* out,
                               const SampleOptions& options = {}) const {
        return detail::batchInChunks(queries, count, out, [&](const GradQuery* q, std::size_t n, DtexSample* o) {
            tex2DGradBatchRaw(q, n, o, options);
        });
    }

    /// The blocking lookups of `queries`, one `Sample` each.
    std::vector<Sample> tex2DGradBatch(const std::vector<GradQuery>& queries, const SampleOptions& options = {}) const {
        std::vector<Sample> out(queries.size());
        tex2DGradBatch(queries.data(), queries.size(), out.data(), options);
        return out;
    }

    /// A Ptex texture from a `.ptx` file: its header is read now (throws for a missing file
    /// or one that is not Ptex), the rest at its first lookup.
    PtexId createPtex(const std::string& path) const {
        PtexId id = kNoTexture;
        check(dtex_cache_ptex_create(h_.get(), path.c_str(), &id));
        return id;
    }

    /// The description of a Ptex texture of this cache.
    PtexInfo ptexInfo(PtexId texture) const {
        PtexInfo i = detail::sized<PtexInfo>();
        check(dtex_cache_ptex_get_info(h_.get(), texture, &i));
        return i;
    }

    /// One face of a Ptex texture of this cache.
    PtexFaceInfo ptexFaceInfo(PtexId texture, std::uint32_t face) const {
        PtexFaceInfo i = detail::sized<PtexFaceInfo>();
        check(dtex_cache_ptex_get_face_info(h_.get(), texture, face, &i));
        return i;
    }

    /// Blocking Ptex lookup (`dtex_cache_ptex_sample`): the footprint's pages are read in
    /// this thread first; `resident` is false only if the budget cannot hold them.
    PtexSampled ptexSample(PtexId texture, std::uint32_t face, float u, float v, float dudx, float dvdx, float dudy,
                           float dvdy, float* out, std::size_t channels,
                           const PtexFilterOptions& options = PtexFilterOptions()) const {
        DtexPtexSampled r{};
        check(dtex_cache_ptex_sample(h_.get(), texture, face, u, v, dudx, dvdx, dudy, dvdy, &options.raw(), out,
                                     channels, &r));
        return detail::ptexSampled(r);
    }

    /// `count` blocking Ptex lookups (`dtex_cache_ptex_sample_batch`): query `i` writes
    /// `channels` floats at `out + i * channels` and, if `results` is not null, `results[i]`;
    /// faster than a call per query.
    void ptexSampleBatch(const PtexQuery* queries, std::size_t count, float* out, std::size_t channels,
                         DtexPtexSampled* results = nullptr,
                         const PtexFilterOptions& options = PtexFilterOptions()) const {
        check(dtex_cache_ptex_sample_batch(h_.get(), queries, count, &options.raw(), out, channels, results));
    }

    /// A statistics snapshot.
    Stats stats() const {
        Stats s;
        check(dtex_cache_get_stats(h_.get(), &s));
        return s;
    }

    /// Change the cache size in bytes.
    void setMaxTextureMemory(std::uint64_t bytes) const { check(dtex_cache_set_max_texture_memory(h_.get(), bytes)); }

    /// The C handle (still owned by this object).
    DtexCache handle() const noexcept { return h_.get(); }
    /// Give up ownership of the C handle; this object becomes null.
    DtexCache release() noexcept { return h_.release(); }
    /// Destroy the cache now (throws on a library error); the object becomes null.
    void destroy() { h_.destroy(); }
    /// Whether this object holds a handle.
    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

private:
    /// Own `h`.
    explicit Cache(detail::UniqueHandle<detail::CacheTraits> h) noexcept : h_(std::move(h)) {}
    /// Create the C object (throws on failure).
    static detail::UniqueHandle<detail::CacheTraits> create(const LoaderOptions& options) {
        DtexCache h{};
        check(dtex_cache_create(&options.raw(), &h));
        return detail::UniqueHandle<detail::CacheTraits>(h);
    }
    detail::UniqueHandle<detail::CacheTraits> h_;  ///< The owned handle.
};

}  // namespace demandtex

#endif  // DEMANDTEX_HPP
