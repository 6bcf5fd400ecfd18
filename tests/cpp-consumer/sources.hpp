// Test image sources for the C++ consumer: C++ subclasses of demandtex::ImageSource.
#ifndef DEMANDTEX_CPP_CONSUMER_SOURCES_HPP
#define DEMANDTEX_CPP_CONSUMER_SOURCES_HPP

#include <demandtex.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

/// What the library did with a source (shared with the test after the source is handed over).
struct SourceCounters {
    std::atomic<int> opens{0};
    std::atomic<int> reads{0};
    std::atomic<int> notYets{0};
    std::atomic<int> destroyed{0};
};

/// The texel of `RampSource` at (x, y) of `level`.
inline std::array<float, 4> rampTexel(std::uint32_t level, std::uint32_t x, std::uint32_t y) {
    return {static_cast<float>(x), static_cast<float>(y), static_cast<float>(level), 1.0f};
}

/// Which read of a `RampSource` answers "not yet" (once).
enum class Defer {
    Never,
    FirstRead,        ///< The first read of all: the mip tail, read when the texture is opened.
    FirstLevel0Read,  ///< The first read of a level-0 tile.
};

/// RGBA float texels (x, y, level, 1) with a full mip chain; optionally answers "not yet"
/// once (deferral) and knows a base colour.
class RampSource final : public demandtex::ImageSource {
public:
    RampSource(std::uint32_t width, std::uint32_t height, SourceCounters& counters, Defer defer,
               std::optional<std::array<float, 4>> baseColor)
        : width_(width), height_(height), counters_(counters), defer_(defer), base_(baseColor) {}

    ~RampSource() override { ++counters_.destroyed; }

    demandtex::ImageInfo open() override {
        ++counters_.opens;
        demandtex::ImageInfo info;
        info.width = width_;
        info.height = height_;
        info.texelType = demandtex::TexelType::F32;
        info.channels = 4;
        info.numLevels = demandtex::fullMipLevels(width_, height_);
        return info;
    }

    demandtex::Readiness readRegion(const demandtex::TileRegion& region, void* dest, std::size_t destBytes,
                                    std::size_t rowBytes) override {
        ++counters_.reads;
        const bool candidate = defer_ == Defer::FirstRead || (defer_ == Defer::FirstLevel0Read && region.level == 0);
        if (candidate && !deferred_.exchange(true)) {
            ++counters_.notYets;
            return demandtex::Readiness::NotYet;
        }
        const std::size_t texel = 4 * sizeof(float);
        if (region.height == 0 || rowBytes < region.width * texel ||
            rowBytes * (region.height - 1) + region.width * texel > destBytes) {
            throw demandtex::SourceError("RampSource: destination too small");
        }
        auto* out = static_cast<unsigned char*>(dest);
        for (std::uint32_t y = 0; y < region.height; ++y) {
            for (std::uint32_t x = 0; x < region.width; ++x) {
                const std::array<float, 4> t = rampTexel(region.level, region.x + x, region.y + y);
                std::memcpy(out + y * rowBytes + x * texel, t.data(), texel);
            }
        }
        return demandtex::Readiness::Ready;
    }

    std::optional<std::array<float, 4>> readBaseColor() override { return base_; }

private:
    std::uint32_t width_;
    std::uint32_t height_;
    SourceCounters& counters_;
    Defer defer_;
    std::optional<std::array<float, 4>> base_;
    std::atomic<bool> deferred_{false};
};

/// A source that fails: in `open` (with a std::runtime_error) or in every read (with a
/// non-std exception, an int).
class FailingSource final : public demandtex::ImageSource {
public:
    enum class Where { Open, Read };

    FailingSource(Where where, SourceCounters& counters) : where_(where), counters_(counters) {}
    ~FailingSource() override { ++counters_.destroyed; }

    demandtex::ImageInfo open() override {
        ++counters_.opens;
        if (where_ == Where::Open) throw std::runtime_error("boom: open failed on purpose");
        demandtex::ImageInfo info;
        info.width = 256;
        info.height = 256;
        info.numLevels = demandtex::fullMipLevels(256, 256);
        return info;
    }

    demandtex::Readiness readRegion(const demandtex::TileRegion&, void*, std::size_t, std::size_t) override {
        ++counters_.reads;
        throw 42;  // not a std::exception: the trampoline must still contain it
    }

private:
    Where where_;
    SourceCounters& counters_;
};

/// A 64×64 one-channel U8 source whose reads wait until `gate` opens (at most 20 s), so a
/// ticket is certainly unfinished until the test opens it.
class GatedSource final : public demandtex::ImageSource {
public:
    GatedSource(const std::atomic<bool>& gate, SourceCounters& counters) : gate_(gate), counters_(counters) {}
    ~GatedSource() override { ++counters_.destroyed; }

    demandtex::ImageInfo open() override {
        ++counters_.opens;
        demandtex::ImageInfo info;
        info.width = 64;
        info.height = 64;
        info.channels = 1;
        info.numLevels = demandtex::fullMipLevels(64, 64);
        return info;
    }

    demandtex::Readiness readRegion(const demandtex::TileRegion& region, void* dest, std::size_t destBytes,
                                    std::size_t rowBytes) override {
        ++counters_.reads;
        for (int i = 0; i < 20000 && !gate_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (region.height == 0 || rowBytes * (region.height - 1) + region.width > destBytes)
            throw demandtex::SourceError("GatedSource: destination too small");
        for (std::uint32_t y = 0; y < region.height; ++y) std::memset(static_cast<unsigned char*>(dest) + y * rowBytes, 128, region.width);
        return demandtex::Readiness::Ready;
    }

private:
    const std::atomic<bool>& gate_;
    SourceCounters& counters_;
};

#endif
