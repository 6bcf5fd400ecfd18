// The C++17 consumer test of demandtex: include/demandtex.hpp over an installed library.
// Runs the multi-pass loop on a procedural texture and on C++ ImageSource subclasses
// (deferral, failures, ownership), the blocking cache on an EXR file it writes, the error
// model (moved-from and destroyed handles, bad arguments), lifecycle and generic resources,
// UDIM patterns (expandUdimPattern, and a set starting at 1101 sampled).
// Exits 0 when every check passed, 1 otherwise.
#include <demandtex.hpp>

#include "check.hpp"
#include "checker.hpp"
#include "exr_writer.hpp"
#include "sources.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dt = demandtex;

// tests/cpp-consumer/ptex.cpp
void testPtex();
// tests/cpp-consumer/interactive.cpp
void testInteractive();

namespace {

/// Small loader options: fast to create, enough for the tests, under valgrind too.
dt::LoaderOptions smallOptions() {
    return dt::LoaderOptions()
        .numPages(1u << 16)
        .pageTableEntries(1u << 12)
        .maxTextures(64)
        .maxTextureMemory(64ull << 20)
        .fillThreads(2);
}

/// Point sampling at texel centres of one level, clamped: lookups return stored texels exactly.
dt::TextureDesc exactDesc() {
    return dt::TextureDesc().address(dt::AddressMode::Clamp).filter(dt::Filter::Point).mipFilter(dt::Filter::Point);
}

/// The multi-pass loop: prepare, run `pass` (true when every lookup was resident), else
/// process the launch's requests and wait. Returns the launches used, or -1.
template <typename Pass>
int converge(const dt::Loader& loader, Pass&& pass, int maxLaunches) {
    for (int n = 1; n <= maxLaunches; ++n) {
        dt::Launch launch = loader.prepareLaunch();
        if (pass(launch)) return n;
        dt::Ticket ticket = loader.processRequests(std::move(launch));
        CHECK(!launch);  // consumed
        CHECK(ticket.waitFor(std::chrono::seconds(60)));
        CHECK(ticket.poll());
    }
    return -1;
}

bool sameColor(const std::array<float, 4>& a, const std::array<float, 4>& b, float tolerance = 0.0f) {
    for (std::size_t i = 0; i < 4; ++i) {
        if (!(std::fabs(a[i] - b[i]) <= tolerance)) return false;
    }
    return true;
}

std::string show(const std::array<float, 4>& c) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "(%g, %g, %g, %g)", static_cast<double>(c[0]), static_cast<double>(c[1]),
                  static_cast<double>(c[2]), static_cast<double>(c[3]));
    return buf;
}

// ----- version ---------------------------------------------------------------------------

void testVersion() {
    const std::string expected = std::to_string(DTEX_VERSION_MAJOR) + "." + std::to_string(DTEX_VERSION_MINOR) + "." +
                                 std::to_string(DTEX_VERSION_PATCH);
    CHECK_MSG(expected == dt::versionString(), dt::versionString());
    CHECK(dt::version() == dt::kVersionMajor * 10000 + dt::kVersionMinor * 100 + dt::kVersionPatch);
    CHECK(dt::abiVersion() == dt::kAbiVersion);
    dt::checkAbiVersion();  // throws on a mismatch
    CHECK(std::string(dt::statusString(DTEX_STATUS_INVALID_HANDLE)) == "DTEX_STATUS_INVALID_HANDLE");
}

// ----- procedural checkerboard -------------------------------------------------------------

struct Probe {
    std::uint32_t level, x, y;
};

void testProcedural() {
    const dt::LoaderOptions options = smallOptions();
    const dt::Loader loader(options);
    const std::uint32_t w = 1024, h = 512, square = 16;
    const dt::TextureId tex = loader.createProceduralTexture(
        dt::ProceduralDesc::checkerboard(w, h, square).texelType(dt::TexelType::F32).channels(4), exactDesc());

    std::vector<Probe> probes;
    for (std::uint32_t level : {0u, 1u, 3u, 6u, 10u}) {
        const std::uint32_t lw = std::max(1u, w >> level), lh = std::max(1u, h >> level);
        for (std::uint32_t i = 0; i < 6; ++i) probes.push_back({level, (i * 173 + 5) % lw, (i * 97 + 3) % lh});
    }
    auto st = [&](const Probe& p) {
        const float lw = static_cast<float>(std::max(1u, w >> p.level)), lh = static_cast<float>(std::max(1u, h >> p.level));
        return std::make_pair((static_cast<float>(p.x) + 0.5f) / lw, (static_cast<float>(p.y) + 0.5f) / lh);
    };
    auto checkValues = [&](const dt::Launch& launch) {
        int wrong = 0;
        for (const Probe& p : probes) {
            const auto [s, t] = st(p);
            const dt::Sample smp = launch.tex2DLod(tex, s, t, static_cast<float>(p.level));
            const std::array<float, 4> want = checker::texel(p.level, p.x, p.y, square);
            if (!smp.resident || !sameColor(smp.value, want)) {
                if (++wrong <= 3)
                    harness::fail(__FILE__, __LINE__, "checker level " + std::to_string(p.level) + " (" + std::to_string(p.x) +
                                                          ", " + std::to_string(p.y) + "): " + show(smp.value) + " want " + show(want));
            }
        }
        return wrong;
    };

    const int launches = converge(loader, [&](const dt::Launch& launch) {
        bool all = true;
        for (const Probe& p : probes) {
            const auto [s, t] = st(p);
            all = launch.tex2DLod(tex, s, t, static_cast<float>(p.level)).resident && all;
        }
        return all;
    }, 8);
    CHECK_MSG(launches >= 2 && launches <= 4, "converged in " + std::to_string(launches) + " launches");

    dt::Launch launch = loader.prepareLaunch();
    CHECK(launch.number() > 0);
    const dt::DeviceContext ctx = launch.deviceContext();
    CHECK(ctx.num_pages == options.numPages());
    CHECK(checkValues(launch) == 0);

    // Many threads sample one launch at once.
    std::atomic<int> threadWrong{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&] { threadWrong += checkValues(launch); });
    for (std::thread& t : threads) t.join();
    CHECK(threadWrong == 0);

    // Batched lookups equal single ones (gradients of 2^level texels select that level).
    std::vector<dt::GradQuery> queries;
    for (const Probe& p : probes) {
        const auto [s, t] = st(p);
        const float g = static_cast<float>(1u << p.level);
        queries.push_back(dt::GradQuery{tex, s, t, g / static_cast<float>(w), 0.0f, 0.0f, g / static_cast<float>(h)});
    }
    const std::vector<dt::Sample> batch = launch.tex2DGradBatch(queries);
    CHECK(batch.size() == queries.size());
    std::size_t same = 0;
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const dt::GradQuery& q = queries[i];
        const dt::Sample one = launch.tex2DGrad(q.texture, q.s, q.t, q.dsdx, q.dtdx, q.dsdy, q.dtdy);
        // At level 10 the footprint covers the whole 1024×512 texture: the base colour answers.
        const bool texel = probes[i].level == 10 ||
                           sameColor(one.value, checker::texel(probes[i].level, probes[i].x, probes[i].y, square));
        same += (one.resident && one.resident == batch[i].resident && sameColor(one.value, batch[i].value) && texel) ? 1 : 0;
    }
    CHECK_MSG(same == queries.size(), std::to_string(same) + " of " + std::to_string(queries.size()));
    std::vector<DtexSample> raw(queries.size());
    CHECK(launch.tex2DGradBatchRaw(queries.data(), queries.size(), raw.data()) == queries.size());

    // Unknown ids give the default fallback colour (magenta), resident, not an error.
    const dt::Sample unknown = launch.tex2D(dt::kNoTexture, 0.5f, 0.5f);
    CHECK(unknown.resident && sameColor(unknown.value, {1.0f, 0.0f, 1.0f, 1.0f}));
    launch.discard();
    CHECK(!launch);

    const dt::Stats stats = loader.stats();
    CHECK(stats.struct_size == sizeof(DtexStats));
    CHECK(stats.tiles_filled > 0);
    CHECK(stats.textures == 1);
    CHECK(stats.resident_bytes <= stats.budget_bytes);
    CHECK(stats.budget_bytes == options.maxTextureMemory());
}

// ----- C++ image sources ---------------------------------------------------------------------

void testImageSources() {
    SourceCounters ramp, tailRamp, badOpen, badRead, rejected;
    const std::array<float, 4> base = {0.5f, 0.25f, 0.125f, 1.0f};
    const std::array<float, 4> fallback = {0.25f, 0.5f, 0.75f, 1.0f};
    {
        const dt::Loader loader(smallOptions());
        const std::uint32_t w = 300, h = 200;  // not tile multiples
        const dt::TextureId rampTex =
            loader.createTexture(std::make_unique<RampSource>(w, h, ramp, Defer::FirstLevel0Read, base), exactDesc(), "ramp");
        // Its first read is the mip tail, at open: the whole open is deferred.
        const dt::TextureId tailTex =
            loader.createTexture(std::make_unique<RampSource>(64, 32, tailRamp, Defer::FirstRead, std::nullopt), exactDesc());
        const dt::TextureId openTex = loader.createTexture(std::make_unique<FailingSource>(FailingSource::Where::Open, badOpen),
                                                           exactDesc().fallbackColor(fallback));
        const dt::TextureId readTex = loader.createTexture(std::make_unique<FailingSource>(FailingSource::Where::Read, badRead),
                                                           exactDesc().fallbackColor(fallback));
        CHECK(rampTex != openTex && openTex != readTex);

        // A source the library refuses (bad desc) stays ours: the unique_ptr deletes it.
        CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT,
                            loader.createTexture(std::make_unique<RampSource>(8, 8, rejected, Defer::Never, std::nullopt),
                                                 dt::TextureDesc().maxAnisotropy(0)));
        CHECK(rejected.destroyed == 1 && rejected.opens == 0);
        CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, loader.createTexture(nullptr));

        const std::vector<Probe> probes = {{0, 0, 0}, {0, 299, 199}, {0, 150, 77}, {0, 257, 130}, {1, 149, 99},
                                           {2, 40, 30},  {5, 8, 5},     {8, 0, 0}};
        auto sampleProbe = [&](const dt::Launch& launch, const Probe& p) {
            const float lw = static_cast<float>(std::max(1u, w >> p.level)), lh = static_cast<float>(std::max(1u, h >> p.level));
            return launch.tex2DLod(rampTex, (static_cast<float>(p.x) + 0.5f) / lw, (static_cast<float>(p.y) + 0.5f) / lh,
                                   static_cast<float>(p.level));
        };
        const int launches = converge(loader, [&](const dt::Launch& launch) {
            bool all = true;
            for (const Probe& p : probes) all = sampleProbe(launch, p).resident && all;
            all = launch.tex2D(openTex, 0.5f, 0.5f).resident && all;
            all = launch.tex2D(readTex, 0.5f, 0.5f).resident && all;
            all = launch.tex2DGrad(rampTex, 0.5f, 0.5f, 2.0f, 0.0f, 0.0f, 2.0f).resident && all;  // base colour
            all = launch.tex2DLod(tailTex, 0.7f, 0.3f, 1.0f).resident && all;
            return all;
        }, 10);
        CHECK_MSG(launches >= 3 && launches <= 6, "converged in " + std::to_string(launches) + " launches (deferral adds one)");
        CHECK_MSG(ramp.notYets == 1 && ramp.opens == 1,
                  std::to_string(ramp.notYets) + " not-yets, " + std::to_string(ramp.opens) + " opens");
        // (The library opens the source again after a deferred mip tail.)
        CHECK(tailRamp.notYets == 1 && tailRamp.opens >= 1);

        dt::Launch launch = loader.prepareLaunch();
        for (const Probe& p : probes) {
            const dt::Sample s = sampleProbe(launch, p);
            const std::array<float, 4> want = rampTexel(p.level, p.x, p.y);
            CHECK_MSG(s.resident && sameColor(s.value, want),
                      "ramp level " + std::to_string(p.level) + ": " + show(s.value) + " want " + show(want));
        }
        // A footprint covering the whole texture reads the source's base colour.
        const dt::Sample tail = launch.tex2DLod(tailTex, 0.7f, 0.3f, 1.0f);  // level 1 is 32×16: texel (22, 4)
        CHECK_MSG(tail.resident && sameColor(tail.value, rampTexel(1, 22, 4)), show(tail.value));
        const dt::Sample whole = launch.tex2DGrad(rampTex, 0.5f, 0.5f, 2.0f, 0.0f, 0.0f, 2.0f);
        CHECK_MSG(whole.resident && sameColor(whole.value, base), show(whole.value));
        // Failed sources (std and non-std exceptions) sample their fallback colour.
        for (dt::TextureId t : {openTex, readTex}) {
            const dt::Sample s = launch.tex2D(t, 0.5f, 0.5f);
            CHECK_MSG(s.resident && sameColor(s.value, fallback), show(s.value));
        }
        const std::optional<dt::Error> why = loader.textureError(openTex);
        CHECK(why.has_value() && std::string(why->what()).find("boom: open failed") != std::string::npos);
        CHECK(!loader.textureError(rampTex).has_value());
        const std::optional<dt::Error> whyRead = loader.textureError(readTex);
        CHECK(whyRead.has_value() && std::string(whyRead->what()).find("unknown C++ exception") != std::string::npos);
        launch.discard();

        const dt::Stats stats = loader.stats();
        CHECK(stats.deferred_not_yet >= 1);
        CHECK(stats.failed_textures == 2);
        CHECK(stats.read_errors >= 1);

        // Unloading drops (deletes) the source; the id then samples its fallback colour.
        loader.unloadTexture(readTex);
        CHECK(badRead.destroyed == 1);
        CHECK(ramp.destroyed == 0);  // (a failed texture's source may already be dropped)
    }
    // The loader is gone: every source it adopted was deleted exactly once.
    CHECK_MSG(ramp.destroyed == 1, std::to_string(ramp.destroyed));
    CHECK_MSG(tailRamp.destroyed == 1, std::to_string(tailRamp.destroyed));
    CHECK_MSG(badOpen.destroyed == 1, std::to_string(badOpen.destroyed));
    CHECK_MSG(badRead.destroyed == 1, std::to_string(badRead.destroyed));
    CHECK(rejected.destroyed == 1);
}

// ----- caller-owned pixels ----------------------------------------------------------------------

/// A 4×2 RGBA8 image whose byte i is 8 i.
std::vector<std::uint8_t> smallPixels() {
    std::vector<std::uint8_t> pixels(4 * 2 * 4);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 8);
    return pixels;
}

dt::ImageInfo smallPixelsInfo() {
    dt::ImageInfo info;
    info.width = 4;
    info.height = 2;
    info.texelType = dt::TexelType::U8;
    info.channels = 4;  // numLevels 0: the full chain (4×2, 2×1, 1×1) is generated
    return info;
}

void testPixels() {
    // Declared before the loader: borrowed pixels must outlive it.
    const std::vector<std::uint8_t> pixels = smallPixels();
    const dt::Loader loader(smallOptions());
    std::vector<std::uint8_t> scratch = smallPixels();
    const dt::TextureId copied = loader.createTextureFromPixels(smallPixelsInfo(), scratch.data(), 0, dt::PixelOwnership::Copy, exactDesc());
    scratch.assign(scratch.size(), 0);  // copied: our buffer no longer matters
    const dt::TextureId borrowed = loader.createTextureFromPixels(smallPixelsInfo(), pixels.data(), 4 * 4, dt::PixelOwnership::Borrow, exactDesc());

    const int launches = converge(loader, [&](const dt::Launch& launch) {
        const bool a = launch.tex2D(copied, 0.6f, 0.7f).resident;  // sample both: both request
        const bool b = launch.tex2D(borrowed, 0.6f, 0.7f).resident;
        return a && b;
    }, 6);
    CHECK_MSG(launches >= 2 && launches <= 4, std::to_string(launches));

    const dt::Launch launch = loader.prepareLaunch();
    // Texel (2, 1): bytes 4 * (1 * 4 + 2) = 24.. → values 192, 200, 208, 216.
    const std::array<float, 4> want = {192.0f / 255.0f, 200.0f / 255.0f, 208.0f / 255.0f, 216.0f / 255.0f};
    // Level 1 texel (1, 0): the mean of level-0 texels (2..3, 0..1) → 144, 152, 160, 168.
    const std::array<float, 4> want1 = {144.0f / 255.0f, 152.0f / 255.0f, 160.0f / 255.0f, 168.0f / 255.0f};
    for (dt::TextureId t : {copied, borrowed}) {
        const dt::Sample s = launch.tex2D(t, 0.6f, 0.7f);
        CHECK_MSG(s.resident && sameColor(s.value, want, 1e-6f), show(s.value));
        const dt::Sample s1 = launch.tex2DLod(t, 0.6f, 0.7f, 1.0f);
        CHECK_MSG(s1.resident && sameColor(s1.value, want1, 1e-6f), show(s1.value));
    }
    // Bad pixel descriptions are errors, not crashes.
    dt::ImageInfo bad = smallPixelsInfo();
    bad.channels = 5;
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT,
                        loader.createTextureFromPixels(bad, pixels.data(), 0, dt::PixelOwnership::Copy));
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT,
                        loader.createTextureFromPixels(smallPixelsInfo(), nullptr, 0, dt::PixelOwnership::Copy));
}

// ----- lifecycle (invalidate / replace / unload) and generic resources ---------------------------

void testLifecycleAndResources() {
    // Declared before the loader: borrowed pixels, counters and the resource's state outlive it.
    const std::vector<std::uint8_t> pixels = smallPixels();
    SourceCounters replacement;
    std::atomic<int> fills{0};
    {
        const dt::Loader loader(smallOptions());
        const dt::TextureId copied = loader.createTextureFromPixels(smallPixelsInfo(), pixels.data(), 0, dt::PixelOwnership::Copy, exactDesc());
        const dt::TextureId swapped = loader.createTextureFromPixels(smallPixelsInfo(), pixels.data(), 0, dt::PixelOwnership::Borrow, exactDesc());
        // A resource whose page i holds 1000 + i, "not yet" the first time.
        const dt::PageId first = loader.createResource(4, [&fills](std::uint32_t page) -> std::optional<std::uint64_t> {
            if (fills++ == 0) return std::nullopt;
            return 1000u + page;
        });

        auto allResident = [&](const dt::Launch& launch) {
            bool all = launch.tex2D(copied, 0.6f, 0.7f).resident;
            all = launch.tex2D(swapped, 5.5f / 16, 7.5f / 16).resident && all;
            for (std::uint32_t i = 0; i < 4; ++i) all = launch.mapOrRequest(first + i).has_value() && all;
            return all;
        };
        const int launches = converge(loader, allResident, 8);
        CHECK_MSG(launches >= 2 && launches <= 5, std::to_string(launches));
        {
            const dt::Launch launch = loader.prepareLaunch();
            for (std::uint32_t i = 0; i < 4; ++i) {
                const std::optional<std::uint64_t> e = launch.mapOrRequest(first + i);
                CHECK(e.has_value() && *e == 1000u + i);
            }
        }

        // Replace: the same id now reads a 16×16 C++ source.
        loader.replaceTexture(swapped, std::make_unique<RampSource>(16, 16, replacement, Defer::Never, std::nullopt), exactDesc(),
                              "replacement");
        CHECK(converge(loader, allResident, 6) > 0);
        {
            const dt::Launch launch = loader.prepareLaunch();
            const dt::Sample s = launch.tex2D(swapped, 5.5f / 16, 7.5f / 16);
            CHECK_MSG(s.resident && sameColor(s.value, rampTexel(0, 5, 7)), show(s.value));
        }
        // Invalidate: its tiles are read again.
        const int readsBefore = replacement.reads;
        loader.invalidateTexture(swapped);
        CHECK(converge(loader, allResident, 6) > 1);
        CHECK(replacement.reads > readsBefore);

        // Unload: the id samples its fallback colour (magenta by default) and reports why.
        loader.unloadTexture(swapped);
        CHECK(replacement.destroyed == 1);  // the source is dropped at once (no fill running)
        loader.unloadTexture(copied);
        converge(loader, [&](const dt::Launch& l) { return l.tex2D(copied, 0.5f, 0.5f).resident; }, 4);
        const dt::Launch after = loader.prepareLaunch();
        const dt::Sample gone = after.tex2D(copied, 0.5f, 0.5f);
        CHECK_MSG(gone.resident && sameColor(gone.value, {1.0f, 0.0f, 1.0f, 1.0f}), show(gone.value));
        CHECK(loader.textureError(copied).has_value());
        const std::optional<dt::Error> unknown = loader.textureError(12345);
        CHECK(unknown && unknown->status() == DTEX_STATUS_UNKNOWN_TEXTURE);
    }
    CHECK(replacement.destroyed == 1);
}

// ----- the blocking cache ---------------------------------------------------------------------

void testCache() {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() /
                         ("demandtex-cpp-consumer-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
    const std::string path = (dir / "grid.exr").string();
    const int w = 200, h = 120;
    auto texel = [](int x, int y, float rgba[4]) {
        rgba[0] = static_cast<float>(x);
        rgba[1] = static_cast<float>(y);
        rgba[2] = 0.5f;
        rgba[3] = 1.0f;
    };
    CHECK(exrw::writeRgbaF32(path, w, h, texel));
    {
        const dt::Cache cache(smallOptions());
        const dt::TextureId tex = cache.textureForPath(path, exactDesc());
        CHECK(cache.textureForPath(path) == tex);  // same path, same id
        const std::array<float, 4> fallback = {0.0f, 1.0f, 0.0f, 1.0f};
        const dt::TextureId missing = cache.textureForPath((dir / "missing.exr").string(), exactDesc().fallbackColor(fallback));
        CHECK(missing != tex);

        std::vector<dt::GradQuery> queries;
        std::vector<std::array<float, 4>> wants;
        for (int i = 0; i < 16; ++i) {
            const int x = (i * 37 + 3) % w, y = (i * 23 + 1) % h;
            queries.push_back(dt::GradQuery{tex, (static_cast<float>(x) + 0.5f) / w, (static_cast<float>(y) + 0.5f) / h,
                                            1.0f / w, 0.0f, 0.0f, 1.0f / h});
            float c[4];
            texel(x, y, c);
            wants.push_back({c[0], c[1], c[2], c[3]});
        }
        for (std::size_t i = 0; i < queries.size(); ++i) {
            const dt::GradQuery& q = queries[i];
            const dt::Sample s = cache.tex2DGrad(q.texture, q.s, q.t, q.dsdx, q.dtdx, q.dsdy, q.dtdy);
            CHECK_MSG(s.resident && sameColor(s.value, wants[i]), show(s.value) + " want " + show(wants[i]));
        }
        std::vector<dt::Sample> batch(queries.size());
        CHECK(cache.tex2DGradBatch(queries.data(), queries.size(), batch.data()) == queries.size());
        for (std::size_t i = 0; i < queries.size(); ++i) CHECK(sameColor(batch[i].value, wants[i]));

        // The texture's description (opened already) and its average colour.
        std::array<float, 4> average{};
        const dt::ImageInfo info = cache.textureInfo(tex, &average);
        CHECK(info.width == static_cast<std::uint32_t>(w) && info.height == static_cast<std::uint32_t>(h) &&
              info.channels == 4 && info.texelType == dt::TexelType::F32 && info.numLevels == 8);
        CHECK_MSG(std::fabs(average[2] - 0.5f) < 1e-3f && average[3] == 1.0f, show(average));
        CHECK_THROWS_STATUS(DTEX_STATUS_SOURCE_ERROR, cache.textureInfo(missing));

        // Derivatives of a bilinear lookup of the same ramp (a copy: one description per
        // path): red is x and green y in texels, so d red/ds = w and d green/dt = h.
        const std::string linearPath = (dir / "grid-linear.exr").string();
        fs::copy_file(path, linearPath);
        const dt::TextureId linear = cache.textureForPath(linearPath, dt::TextureDesc().address(dt::AddressMode::Clamp));
        const dt::SampleDerivatives d = cache.tex2DGradDerivatives(linear, 0.4321f, 0.5678f, 0.5f / w, 0.0f, 0.0f, 0.5f / h);
        const dt::Sample plain = cache.tex2DGrad(linear, 0.4321f, 0.5678f, 0.5f / w, 0.0f, 0.0f, 0.5f / h);
        CHECK_MSG(d.sample.resident && d.sample.value == plain.value, show(d.sample.value) + " want " + show(plain.value));
        CHECK_MSG(std::fabs(d.ds[0] - w) < 1e-2f && std::fabs(d.ds[1]) < 1e-2f && std::fabs(d.dt[1] - h) < 1e-2f &&
                      std::fabs(d.dt[0]) < 1e-2f && d.ds[3] == 0.0f && d.dt[3] == 0.0f,
                  "d/ds " + show(d.ds) + ", d/dt " + show(d.dt));

        // Lat-long lookups (y up) towards texel centres: the texel itself (point filtering).
        for (int i = 0; i < 8; ++i) {
            const int x = (i * 53 + 11) % w, y = 20 + (i * 17) % (h - 40);
            const double pi = 3.14159265358979323846;
            const double phi = ((x + 0.5) / w - 0.5) * 2.0 * pi, theta = (0.5 - (y + 0.5) / h) * pi;
            const float r[3] = {static_cast<float>(-std::cos(theta) * std::sin(phi)), static_cast<float>(std::sin(theta)),
                                static_cast<float>(std::cos(theta) * std::cos(phi))};
            const float drdx[3] = {1e-5f, 0.0f, 0.0f}, drdy[3] = {0.0f, 1e-5f, 0.0f};
            float c[4];
            texel(x, y, c);
            const std::array<float, 4> want = {c[0], c[1], c[2], c[3]};
            const dt::Sample env = cache.environment(tex, r, drdx, drdy);
            CHECK_MSG(env.resident && sameColor(env.value, want), show(env.value) + " want " + show(want));
            const dt::Sample z = cache.environment(tex, r, drdx, drdy, dt::UpAxis::Z);
            CHECK_MSG(!sameColor(z.value, want), "the up axis made no difference");
        }

        const dt::Sample bad = cache.tex2DGrad(missing, 0.5f, 0.5f, 0.01f, 0.0f, 0.0f, 0.01f);
        CHECK_MSG(bad.resident && sameColor(bad.value, fallback), show(bad.value));

        cache.setMaxTextureMemory(32ull << 20);
        const dt::Stats stats = cache.stats();
        CHECK(stats.tiles_filled > 0);
        CHECK(stats.budget_bytes == (32ull << 20));
        CHECK(stats.failed_textures == 1);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
}

// ----- UDIM patterns --------------------------------------------------------------------------

void testUdimPatterns() {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() /
                         ("demandtex-cpp-udim-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
    // A set starting at 1101 (rows 0-9 are holes): one colour per tile.
    const std::array<float, 4> colors[2] = {{0.25f, 0.5f, 0.75f, 1.0f}, {0.75f, 0.5f, 0.25f, 1.0f}};
    const char* names[2] = {"paint.1101.exr", "paint.1112.exr"};
    for (int i = 0; i < 2; ++i) {
        CHECK(exrw::writeRgbaF32((dir / names[i]).string(), 8, 8, [&](int, int, float rgba[4]) {
            for (int k = 0; k < 4; ++k) rgba[k] = colors[i][k];
        }));
    }
    const std::string pattern = (dir / "paint.<UDIM>.exr").string();
    const std::vector<dt::UdimTile> tiles = dt::expandUdimPattern(pattern);
    CHECK_MSG(tiles.size() == 2, std::to_string(tiles.size()) + " tiles");
    if (tiles.size() == 2) {
        CHECK(tiles[0].udim == 1101 && tiles[0].column == 0 && tiles[0].row == 10);
        CHECK(tiles[0].path == (dir / names[0]).string());
        CHECK(tiles[1].udim == 1112 && tiles[1].column == 1 && tiles[1].row == 11);
    }
    {
        // The same rule creates the texture: both tiles sample their colours.
        const dt::Loader loader(smallOptions());
        const dt::UdimId udim = loader.createUdimFromPattern(pattern, std::nullopt, exactDesc());
        const int launches = converge(
            loader,
            [&](const dt::Launch& launch) {
                const dt::Sample a = launch.tex2DGradUdim(udim, 0.5f, 10.5f, 0.125f, 0.0f, 0.0f, 0.125f);
                const dt::Sample b = launch.tex2DGradUdim(udim, 1.5f, 11.5f, 0.125f, 0.0f, 0.0f, 0.125f);
                if (!a.resident || !b.resident) return false;
                CHECK_MSG(sameColor(a.value, colors[0]), show(a.value));
                CHECK_MSG(sameColor(b.value, colors[1]), show(b.value));
                return true;
            },
            20);
        CHECK(launches > 0);
        // Each tile is an ordinary texture: its grid place, its id, its image information.
        const dt::UdimGrid grid = loader.udimGrid(udim);
        CHECK(grid.width == 2 && grid.height == 12 && !grid.base);
        const std::optional<dt::TextureId> first = loader.udimTile(udim, 0, 10);
        const std::optional<dt::TextureId> second = loader.udimTile(udim, 1, 11);
        CHECK(first && second && *first != *second);
        CHECK(!loader.udimTile(udim, 0, 0) && !loader.udimTile(udim, 1, 10) && !loader.udimTile(udim, 2, 11));
        if (second) {
            const std::optional<dt::ImageInfo> info = loader.imageInfo(*second);
            CHECK(info && info->width == 8 && info->height == 8);
            CHECK_THROWS_STATUS(DTEX_STATUS_UNKNOWN_TEXTURE, loader.udimGrid(*second));
        }
    }

    // <UVTILE> beyond u10: column 10 has no UDIM number.
    std::FILE* f = std::fopen((dir / "wide_u11_v1.exr").string().c_str(), "wb");
    CHECK(f != nullptr);
    if (f != nullptr) std::fclose(f);
    const std::vector<dt::UdimTile> wide = dt::expandUdimPattern((dir / "wide_<UVTILE>.exr").string());
    CHECK(wide.size() == 1 && wide[0].udim == DTEX_UDIM_NO_NUMBER && wide[0].column == 10 && wide[0].row == 0);

    // No match: empty. Bad patterns and unlistable directories: errors.
    CHECK(dt::expandUdimPattern((dir / "none.<UDIM>.exr").string()).empty());
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, dt::expandUdimPattern((dir / names[0]).string()));
    CHECK_THROWS_STATUS(DTEX_STATUS_IO_ERROR, dt::expandUdimPattern((dir / "missing" / "x.<UDIM>.exr").string()));
    std::error_code ec;
    fs::remove_all(dir, ec);
}

// ----- the error model ------------------------------------------------------------------------

void testErrors() {
    const dt::ProceduralDesc checker = dt::ProceduralDesc::checkerboard(256, 256, 8);

    // Moved-from owners hold the null handle: the library reports INVALID_HANDLE.
    dt::Loader a(smallOptions());
    dt::Loader b = std::move(a);
    CHECK(!a && b);
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, a.createProceduralTexture(checker));
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, (void)a.stats());
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, (void)a.prepareLaunch());
    const dt::TextureId tex = b.createProceduralTexture(checker);

    dt::Launch launch = b.prepareLaunch();
    (void)launch.tex2D(tex, 0.5f, 0.5f);
    dt::Ticket ticket = b.processRequests(std::move(launch));
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, (void)launch.tex2D(tex, 0.5f, 0.5f));       // consumed
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, (void)b.processRequests(std::move(launch))); // twice
    dt::Ticket moved = std::move(ticket);
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, ticket.wait());
    moved.wait();
    const dt::Ticket::Progress p = moved.progress();
    CHECK(p.done && p.tasksRemaining == 0 && p.tasksTotal >= 1);
    CHECK(moved.waitFor(std::chrono::milliseconds(0)));
    CHECK(moved.waitFor(std::chrono::duration<double>(0.25)));
    CHECK(moved.waitFor(std::chrono::seconds(-1)));
    CHECK(moved.waitFor(std::chrono::hours::max()));  // "forever"
    CHECK(moved.waitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(1)));

    // A timeout is an answer, not an error: fills held back by a gated source.
    {
        std::atomic<bool> gate{false};
        SourceCounters gated;
        const dt::TextureId gatedTex = b.createTexture(std::make_unique<GatedSource>(gate, gated));
        dt::Launch first = b.prepareLaunch();
        (void)first.tex2D(gatedTex, 0.5f, 0.5f);
        dt::Ticket held = b.processRequests(std::move(first));
        CHECK(!held.waitFor(std::chrono::milliseconds(20)));
        CHECK(!held.poll());
        CHECK(held.progress().tasksRemaining >= 1);
        gate = true;
        held.wait();
        CHECK(held.poll());
    }

    // Bad arguments.
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, b.createProceduralTexture(dt::ProceduralDesc(checker).channels(3)));
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, (void)dt::Loader(dt::LoaderOptions().numPages(0)));
    CHECK(dt::LoaderOptions().pagesOfFileTiles());
    CHECK(!dt::LoaderOptions().pagesOfFileTiles(false).pagesOfFileTiles());
    CHECK(dt::LoaderOptions().pagesOfFileTiles(false).raw().full_pages == 1u);
    CHECK(dt::LoaderOptions().keepBlocks());
    CHECK(!dt::LoaderOptions().keepBlocks(false).keepBlocks());
    CHECK(dt::LoaderOptions().keepBlocks(false).raw().decode_blocks == 1u);
    CHECK(dt::LoaderOptions().fillCpuCores() == 0.0f);
    CHECK(dt::LoaderOptions().fillCpuCores(DTEX_CPU_RENDERER_FILL_CPU_CORES).fillCpuCores() == 0.25f);
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, (void)dt::Loader(dt::LoaderOptions().fillCpuCores(-1.0f)));
    {
        // Spilled decodes: the directory's path is kept by the options and their copies.
        CHECK(dt::LoaderOptions().maxSpillBytes() == (8ull << 30) && !dt::LoaderOptions().spillDir());
        dt::LoaderOptions spill;
        {
            dt::LoaderOptions made = dt::LoaderOptions().maxSpillBytes(1ull << 20).spillDir(std::string(200, 'x'));
            spill = made;
        }
        CHECK(spill.maxSpillBytes() == (1ull << 20) && spill.spillDir() == std::string(200, 'x'));
        const dt::Loader spilling(spill.spillDir(std::filesystem::temp_directory_path().string()));
        CHECK(spilling.stats().spilled_bytes == 0);
    }
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, b.createUdim({std::string("a.exr")}, 2, 1));

    // A launch outliving its loader: calls fail cleanly, its destructor is harmless.
    dt::Launch orphan = b.prepareLaunch();
    b.destroy();
    CHECK(!b);
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, (void)orphan.tex2D(tex, 0.5f, 0.5f));
    CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_HANDLE, moved.wait());

    // Error values: status, name, message; copyable.
    try {
        dt::check(dtex_loader_destroy(DtexLoader{}));
        CHECK_MSG(false, "destroying the null loader should fail");
    } catch (const dt::Error& e) {
        const dt::Error copy = e;
        CHECK(copy.status() == DTEX_STATUS_INVALID_HANDLE);
        CHECK(std::string(copy.statusName()) == "DTEX_STATUS_INVALID_HANDLE");
        CHECK(std::string(copy.what()).rfind("DTEX_STATUS_INVALID_HANDLE: ", 0) == 0);
        CHECK(std::string(copy.message()).size() > 0);
    }
}

}  // namespace

int main() {
    const std::pair<const char*, void (*)()> tests[] = {
        {"version", testVersion},
        {"procedural multi-pass", testProcedural},
        {"C++ image sources", testImageSources},
        {"caller-owned pixels", testPixels},
        {"lifecycle, resources", testLifecycleAndResources},
        {"blocking cache", testCache},
        {"UDIM patterns", testUdimPatterns},
        {"error model", testErrors},
        {"Ptex", testPtex},
        {"interactive streaming", testInteractive},
    };
    for (const auto& [name, run] : tests) {
        const int before = harness::failures();
        try {
            run();
        } catch (const std::exception& e) {
            harness::fail(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
        }
        std::printf("%-32s %s\n", name, harness::failures() == before ? "ok" : "FAILED");
    }
    if (harness::failures() != 0) {
        std::fprintf(stderr, "cpp-consumer: %d check(s) failed\n", harness::failures().load());
        return 1;
    }
    std::printf("cpp-consumer: all checks passed (demandtex %s)\n", dt::versionString());
    return 0;
}
