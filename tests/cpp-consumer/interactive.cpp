// Interactive streaming through demandtex.hpp (main.cpp calls testInteractive): a loader
// made with `LoaderOptions().interactive(true)` draws frames that never wait for a fill.
// Every lookup answers at once: once the texture's open (on a fill thread, from creation)
// has made its mip tail resident, a coarser level stands in for every miss, in every frame
// after. Requests are rejected at random to spread them over the frame, tickets are
// dropped unwaited, and detail arrives over later frames until the frame equals the
// texture's own texels. Then stochastic filtering's jitter picks between neighbours.
#include <demandtex.hpp>

#include "check.hpp"
#include "checker.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

namespace dt = demandtex;

namespace {

/// One frame: a `side`×`side` grid of level-0 lookups spread over the texture.
struct Frame {
    int lookups = 0;
    int resident = 0;
    int fullDetail = 0;
    int exact = 0;  ///< Full-detail lookups equal to the checkerboard's texel.
};

}  // namespace

void testInteractive() {
    CHECK(!dt::LoaderOptions().interactive());
    const dt::LoaderOptions options = dt::LoaderOptions()
                                          .numPages(1u << 16)
                                          .pageTableEntries(1u << 12)
                                          .maxTextures(64)
                                          .maxTextureMemory(64ull << 20)
                                          .fillThreads(2)
                                          .maxRequestsPerLaunch(16)
                                          .interactive(true);
    CHECK(options.interactive() && options.maxRequestsPerLaunch() == 16);
    const dt::Loader loader(options);
    // 1024² RGBA float: 256 tiles of 64×64 texels at level 0.
    const std::uint32_t size = 1024, square = 16, side = 32, step = size / side;
    const dt::TextureId tex = loader.createProceduralTexture(
        dt::ProceduralDesc::checkerboard(size, size, square).texelType(dt::TexelType::F32).channels(4),
        dt::TextureDesc().address(dt::AddressMode::Clamp).filter(dt::Filter::Point).mipFilter(dt::Filter::Point));

    auto draw = [&](const dt::Launch& launch) {
        Frame f;
        for (std::uint32_t j = 0; j < side; ++j) {
            for (std::uint32_t i = 0; i < side; ++i) {
                const std::uint32_t x = i * step + 5, y = j * step + 3;
                dt::SampleOptions o;
                o.fallbackToCoarser = true;
                o.requestKey = j * side + i;  // the pixel: reproducible rejection
                const dt::Sample smp = launch.tex2DLod(tex, (float(x) + 0.5f) / float(size),
                                                       (float(y) + 0.5f) / float(size), 0.0f, o);
                ++f.lookups;
                f.resident += smp.resident ? 1 : 0;
                if (smp.fullDetail()) {
                    ++f.fullDetail;
                    const std::array<float, 4> want = checker::texel(0, x, y, square);
                    bool same = true;
                    for (int c = 0; c < 4; ++c) same = same && smp.value[c] == want[c];
                    f.exact += same ? 1 : 0;
                }
            }
        }
        return f;
    };

    int frames = 0;
    int firstResident = -1;  // the first frame with every lookup resident
    int residentSince = 0;   // frames from then on with every lookup resident
    int wrongTexels = 0;
    Frame first, last;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        dt::Launch launch = loader.prepareLaunch();
        last = draw(launch);
        if (frames == 0) first = last;
        ++frames;
        if (last.resident == last.lookups && firstResident < 0) firstResident = frames - 1;
        if (firstResident >= 0) residentSince += last.resident == last.lookups ? 1 : 0;
        wrongTexels += last.fullDetail - last.exact;
        if (last.fullDetail == last.lookups) break;
        // Hand the requests over and draw the next frame without waiting for them.
        dt::Ticket ticket = loader.processRequests(std::move(launch));
        CHECK(!launch);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK_MSG(last.fullDetail == last.lookups, "full detail in " + std::to_string(last.fullDetail) + " of " +
                                                  std::to_string(last.lookups) + " lookups after " +
                                                  std::to_string(frames) + " frames");
    // The first frame comes before any fill; from the open on, a coarser level stands in.
    CHECK(first.fullDetail == 0);
    CHECK_MSG(firstResident >= 0 && firstResident < frames, "no frame had every lookup resident");
    CHECK_MSG(residentSince == frames - firstResident,
              std::to_string(frames - firstResident - residentSince) +
                  " frames after the mip tail arrived had a non-resident lookup");
    CHECK_MSG(wrongTexels == 0, std::to_string(wrongTexels) + " full-detail lookups differ from the texture");
    // 256 pages at 16 requests a launch: many frames, and requests rejected on the way.
    CHECK_MSG(frames >= 256 / 16, std::to_string(frames) + " frames");
    // Stochastic filtering through the wrapper: at 0.25 into texel 16 of row 3 (a square's
    // first column), jitter 0 picks texel 15 (the square before), 0.5 the nearest, 16.
    {
        dt::Launch launch = loader.prepareLaunch();
        dt::SampleOptions o;
        o.stochastic = true;
        const float s = 16.25f / float(size), t = 3.5f / float(size);
        o.jitter = {{0.0f, 0.5f}};
        const dt::Sample before = launch.tex2DLod(tex, s, t, 0.0f, o);
        o.jitter = {{0.5f, 0.5f}};
        const dt::Sample nearest = launch.tex2DLod(tex, s, t, 0.0f, o);
        CHECK(before.fullDetail() && nearest.fullDetail());
        CHECK_MSG(before.value == checker::texel(0, 15, 3, square), "jitter 0 read the wrong texel");
        CHECK_MSG(nearest.value == checker::texel(0, 16, 3, square), "jitter 0.5 read the wrong texel");
        CHECK(before.value != nearest.value);
    }
    const dt::Stats stats = loader.stats();
    CHECK_MSG(stats.requests_rejected > 0, "no request rejected");
    CHECK(stats.resident_bytes <= stats.budget_bytes);
}
