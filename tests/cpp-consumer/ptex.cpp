// The Ptex part of the C++ consumer (main.cpp calls testPtex): quad_half_rgba.ptx through
// demandtex.hpp — info, multi-pass from the faces' constant colours to the reference
// library's PtexFilter values (the fixture's JSON, within 1e-5), the same values blocking
// and from several threads, and the error model (thrown statuses).
#include <demandtex.hpp>

#include "check.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace dt = demandtex;

#ifndef DTEX_PTEX_FIXTURES
#define DTEX_PTEX_FIXTURES "tests/fixtures/ptex"
#endif

void testPtex();

namespace {

/// One lookup of quad_half_rgba.json's `filters` and the library's result.
struct Case {
    std::uint32_t face;
    dt::PtexFilter filter;
    bool lerp;
    float u, v, uw1, vw1, uw2, vw2;
    float want[4];
};

const Case kCases[] = {
    {0, dt::PtexFilter::Point, false, 0.129999995f, 0.769999981f, 0.0799999982f, 0, 0, 0.0500000007f,
     {0.168334961f, 0.179077148f, 0.191040039f, 0.75f}},
    {0, dt::PtexFilter::Bilinear, false, 0.129999995f, 0.769999981f, 0.0799999982f, 0, 0, 0.0500000007f,
     {0.170303702f, 0.181787759f, 0.192891315f, 0.473500013f}},
    {0, dt::PtexFilter::Box, false, 0.129999995f, 0.769999981f, 0.0799999982f, 0, 0, 0.0500000007f,
     {0.170706585f, 0.181785405f, 0.193227768f, 0.436328143f}},
    {3, dt::PtexFilter::Mitchell, true, 0.129999995f, 0.769999981f, 0.0799999982f, 0, 0, 0.0500000007f,
     {0.196791902f, 0.209112734f, 0.22199519f, 0.531672895f}},
};

std::string fixture() {
    const char* dir = std::getenv("DEMANDTEX_PTEX_FIXTURES");
    return std::string(dir ? dir : DTEX_PTEX_FIXTURES) + "/quad_half_rgba.ptx";
}

dt::PtexFilterOptions options(const Case& c) { return dt::PtexFilterOptions().filter(c.filter).lerp(c.lerp); }

}  // namespace

void testPtex() {
    const std::string path = fixture();
    std::vector<std::array<float, 4>> multi(std::size(kCases));
    {
        const dt::Loader loader(dt::LoaderOptions().maxTextureMemory(64u << 20));
        const dt::PtexId tex = loader.createPtex(path);
        const dt::PtexInfo info = loader.ptexInfo(tex);
        CHECK(info.num_faces == 6 && info.num_channels == 4 && info.alpha_channel == 3);
        CHECK(info.data_type == DTEX_TEXEL_F16 && info.u_border == DTEX_PTEX_BORDER_PERIODIC);
        CHECK(loader.ptexFaceInfo(tex, 0).adj_faces[1] == 1);
        int launches = 0;
        for (bool all = false; !all;) {
            CHECK(++launches <= 8);
            if (launches > 8) return;
            dt::Launch launch = dt::Launch::prepare(loader);
            all = true;
            for (std::size_t i = 0; i < std::size(kCases); ++i) {
                const Case& c = kCases[i];
                const dt::PtexSampled r =
                    launch.ptexSample(tex, c.face, c.u, c.v, c.uw1, c.vw1, c.uw2, c.vw2, multi[i].data(), 4, options(c));
                CHECK(r.channels == 4);
                all = all && r.resident;
            }
            if (launches == 1) {
                CHECK(!all);
                float out[4];
                CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, launch.ptexSample(tex, 6, 0.5f, 0.5f, 0, 0, 0, 0, out, 4));
                CHECK_THROWS_STATUS(DTEX_STATUS_UNKNOWN_TEXTURE, launch.ptexSample(tex + 7, 0, 0.5f, 0.5f, 0, 0, 0, 0, out, 4));
                dt::PtexFilterOptions bad;
                bad.raw().filter = 77;
                CHECK_THROWS_STATUS(DTEX_STATUS_INVALID_ARGUMENT, launch.ptexSample(tex, 0, 0.5f, 0.5f, 0, 0, 0, 0, out, 4, bad));
            }
            if (all) {
                launch.discard();
            } else {
                loader.processRequests(std::move(launch)).wait();
            }
        }
        for (std::size_t i = 0; i < std::size(kCases); ++i) {
            for (int ch = 0; ch < 4; ++ch) {
                CHECK_MSG(std::fabs(multi[i][ch] - kCases[i].want[ch]) <= 1e-5f,
                          "case " + std::to_string(i) + " channel " + std::to_string(ch) + ": " +
                              std::to_string(multi[i][ch]));
            }
        }
        CHECK_THROWS_STATUS(DTEX_STATUS_IO_ERROR, loader.createPtex("/nonexistent/file.ptx"));
    }
    // Blocking, from four threads at once, on a cache of 4 pages: the same values.
    const dt::Cache cache(dt::LoaderOptions().maxTextureMemory(4u * DTEX_TILE_BYTES));
    const dt::PtexId tex = cache.createPtex(path);
    CHECK(cache.ptexInfo(tex).num_faces == 6);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int round = 0; round < 20; ++round) {
                for (std::size_t i = 0; i < std::size(kCases); ++i) {
                    const Case& c = kCases[i];
                    float out[4];
                    const dt::PtexSampled r = cache.ptexSample(tex, c.face, c.u, c.v, c.uw1, c.vw1, c.uw2, c.vw2, out, 4, options(c));
                    CHECK(r.resident && r.channels == 4);
                    for (int ch = 0; ch < 4; ++ch) CHECK(out[ch] == multi[i][ch]);
                }
            }
        });
    }
    for (auto& th : threads) th.join();
}
