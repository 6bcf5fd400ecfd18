/*
 * Host run of the device Ptex lookup `dtex::ptexSample` (include/demandtex/device/ptex.cuh),
 * compiled by a host C++ compiler after dtex_host_shim.h. Driven by cuda/tests/host_ptex.rs:
 *
 *   c++ -std=c++17 -ffp-contract=off -O1 -I include -I tests/cuda-host \
 *       tests/cuda-host/ptex_host.cpp -o ptex_host
 *   ptex_host input.bin output.bin
 *
 * The input (little-endian; written by host_ptex.rs) describes one Ptex texture as the CUDA
 * backend publishes it -- the `DtexPtexDeviceTexture` fields, its face, unit and constant
 * tables, the pages texture's `DtexTextureSampler` (core's, for its engine layout) and every
 * page of the pack as core's `PtexPages::fill_page` writes it -- and a list of lookups:
 *
 *   "DTXHOST1"
 *   u32 n, n B        the DtexPtexDeviceTexture's bytes from `pages_texture` to its end
 *                     (everything but the three table pointers, which are set here)
 *   u32 x 3   context: max_textures page_table_entries num_pages
 *   376 B     DtexTextureSampler of the pages texture (texture_object ignored)
 *   u32 n, n x 24 B   faces      u32 n, n x 16 B   units      u32 n, n B   constants
 *   u32 n, n x 65536 B          pages of the pack (page p: tile (p % 1024, p / 1024))
 *   u32 n, n x 4 B    residence bits of the page space (n = ceil(num_pages / 32)), or
 *                     n = 0: every page resident
 *   u32 n, n x 68 B   lookups: u32 face, f32 u v dudx dvdx dudy dvdy, DtexPtexFilterOptions
 *
 * It builds a `DtexDeviceContext` in host memory with those residence bits in which the
 * pages texture's sampler page maps to the sampler, whose texture object is a
 * `DtexHostTexture` holding the pages at their tiles, runs `ptexSample` (capacity 4) for each
 * lookup with the reference bits cleared before it, and writes:
 *
 *   "DTXHOUT2", u32 lookups, u32 stray (reference bits set outside the entry pages and the
 *   pages texture's range, which no lookup should set), per lookup: f32 x 4 values,
 *   u32 channels, u32 resident, u32 supported, u32 n, n x u32 pages requested (the
 *   reference bits the lookup set, ascending)
 */
#include "dtex_host_shim.h"


#include <demandtex/device/ptex.cuh>

/// This program's name, for `fail`.
static constexpr const char* kProgram = "ptex_host";
#include "host_program.h"

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace {

/// One page of the pack, as core's `PtexPages::fill_page` writes it.
struct Page {
    unsigned char bytes[DTEX_TILE_BYTES];
};

/// One lookup of the input.
struct Lookup {
    uint32_t face;
    float u, v, dudx, dvdx, dudy, dvdy;
    DtexPtexFilterOptions options;
};

static_assert(sizeof(DtexPtexFilterOptions) == 40, "DtexPtexFilterOptions");
static_assert(sizeof(Lookup) == 68, "a lookup record");
static_assert(sizeof(uint4) == 16, "a texel of the pages texture");

constexpr uint32_t kTileSide = 64;  // texels of 16 bytes: one 64 KiB page per tile

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3)
        fail("usage: ptex_host INPUT OUTPUT");
    Reader in{readFile(argv[1])};
    if (memcmp(in.take(8, "the magic"), "DTXHOST1", 8) != 0)
        fail("not a ptex_host input");

    DtexPtexDeviceTexture ptex{};
    constexpr size_t kScalars = offsetof(DtexPtexDeviceTexture, pages_texture);
    if (in.u32("the texture") != sizeof ptex - kScalars)
        fail("the texture's fields are not those of this DtexPtexDeviceTexture");
    memcpy(reinterpret_cast<unsigned char*>(&ptex) + kScalars,
           in.take(sizeof ptex - kScalars, "the texture"), sizeof ptex - kScalars);
    const uint32_t maxTextures = in.u32("the context");
    const uint32_t pageTableEntries = in.u32("the context");
    const uint32_t numPages = in.u32("the context");
    DtexTextureSampler sampler;
    memcpy(&sampler, in.take(sizeof sampler, "the sampler"), sizeof sampler);
    const auto faces = in.array<DtexPtexDeviceFace>("the faces");
    const auto units = in.array<DtexPtexDeviceUnit>("the units");
    const auto constants = in.array<uint8_t>("the constants");
    const auto pages = in.array<Page>("the pages");
    auto residence = in.array<uint32_t>("the residence bits");
    const auto lookups = in.array<Lookup>("the lookups");
    if (in.at != in.bytes.size())
        fail("bytes after the lookups");
    if (faces.size() != ptex.num_faces || units.size() != ptex.num_units ||
        constants.size() != static_cast<size_t>(ptex.num_faces) * ptex.pixel_size)
        fail("the tables do not match the texture's counts");
    if (ptex.pages_texture >= maxTextures || pageTableEntries < maxTextures ||
        sampler.start_page + sampler.num_pages > numPages)
        fail("the pages texture does not fit the context");
    // Empty tables still get an address (as the CUDA backend's one-byte allocations).
    static const uint8_t none[24] = {};
    ptex.faces = faces.empty() ? reinterpret_cast<const DtexPtexDeviceFace*>(none) : faces.data();
    ptex.units = units.empty() ? reinterpret_cast<const DtexPtexDeviceUnit*>(none) : units.data();
    ptex.constants = constants.empty() ? none : constants.data();

    // The pages texture: pack page p is tile (p % DTEX_PTEX_PAGES_ACROSS, p / ...) of level
    // 0, its bytes row by row (64 texels of 16 bytes a row), as `PtexPages::read_region`.
    if (sampler.tile_width != kTileSide || sampler.tile_height != kTileSide ||
        sampler.texel_bytes != 16u)
        fail("the pages texture's tiles are not 64x64 texels of 16 bytes");
    std::vector<uint4> texels(static_cast<size_t>(sampler.width) * sampler.height);
    for (size_t p = 0; p < pages.size(); ++p) {
        const uint32_t tx = static_cast<uint32_t>(p % DTEX_PTEX_PAGES_ACROSS);
        const uint32_t ty = static_cast<uint32_t>(p / DTEX_PTEX_PAGES_ACROSS);
        if ((tx + 1) * kTileSide > sampler.width || (ty + 1) * kTileSide > sampler.height)
            fail("a page outside the pages texture");
        for (uint32_t row = 0; row < kTileSide; ++row)
            memcpy(&texels[static_cast<size_t>(ty * kTileSide + row) * sampler.width +
                           tx * kTileSide],
                   pages[p].bytes + row * kTileSide * 16u, kTileSide * 16u);
    }
    const DtexHostTexture pagesTexture{sampler.width, sampler.height, texels.data()};
    sampler.texture_object = reinterpret_cast<uint64_t>(&pagesTexture);

    // The context: the pages given resident (all by default), the pages texture's sampler
    // page mapped; nothing requested yet, no eviction (flags 0), no rejection.
    std::vector<uint64_t> pageTable(pageTableEntries, 0u);
    pageTable[ptex.pages_texture] = reinterpret_cast<uint64_t>(&sampler);
    const size_t words = (numPages + 31u) / 32u;
    if (residence.empty())
        residence.assign(words, 0xFFFFFFFFu);
    if (residence.size() != words)
        fail("the residence bits do not match the page space");
    std::vector<uint32_t> reference(words, 0u);
    std::vector<uint32_t> lru((numPages + 7u) / 8u, 0u), lengths(DTEX_ARRAY_LENGTHS, 0u);
    const DtexDeviceContext ctx =
        hostContext(pageTable, reference, residence, lru, lengths, numPages, maxTextures);

    std::vector<unsigned char> results;
    auto put = [&results](const void* p, size_t n) {
        const unsigned char* b = static_cast<const unsigned char*>(p);
        results.insert(results.end(), b, b + n);
    };
    // What a lookup can touch: the entry pages and the pages texture's range.
    ReferenceWatch watch(reference);
    watch.watch(0u, pageTableEntries);
    watch.watch(sampler.start_page, static_cast<uint64_t>(sampler.start_page) + sampler.num_pages);
    for (const Lookup& l : lookups) {
        watch.begin(reference, false);
        float value[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const dtex::PtexResult r = dtex::ptexSample(ctx, ptex, l.face, l.u, l.v, l.dudx, l.dvdx,
                                                    l.dudy, l.dvdy, l.options, value, 4u);
        const uint32_t flags[3] = {r.channels, r.resident ? 1u : 0u, r.supported ? 1u : 0u};
        put(value, sizeof value);
        put(flags, sizeof flags);
        const std::vector<uint32_t> requested = watch.newlySet(reference);
        const uint32_t n = static_cast<uint32_t>(requested.size());
        put(&n, 4);
        if (n != 0)
            put(requested.data(), n * 4u);
    }
    writeLookupOutput(argv[2], "DTXHOUT2", lookups.size(), watch.stray(reference), results);
    return 0;
}
