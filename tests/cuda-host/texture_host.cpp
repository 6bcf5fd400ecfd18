/*
 * Host run of the device texture lookups `dtex::tex2DGrad`, `dtex::tex2DLod`,
 * `dtex::tex2DGradUdim` and `dtex::environment` (include/demandtex/device/texture.cuh,
 * udim.cuh, environment.cuh), compiled by a
 * host C++ compiler after
 * dtex_host_shim.h. Driven by cuda/tests/host_texture.rs:
 *
 *   c++ -std=c++17 -ffp-contract=off -O1 -Wno-unknown-pragmas -I include \
 *       -I tests/cuda-host tests/cuda-host/texture_host.cpp -o texture_host
 *   texture_host input.bin output.bin
 *
 * The input (little-endian; written by host_texture.rs) is a CPU loader's page table at one
 * launch -- some pages resident, some not -- with its textures, and a list of lookups:
 *
 *   "DTXTEX03"
 *   u32 x 3   context: max_textures page_table_entries num_pages
 *   u32 x 4   flags (`DTEX_CONTEXT_FLAG_*`), launch_num, reject_threshold, accumulate
 *   u32 n, n x 8 B    the page table's entries (n = page_table_entries)
 *   u32 n, n x 4 B    the residence bits (n = ceil(num_pages / 32))
 *   u32 n, n x 4 B    the reference bits at the start (n = 0: none set)
 *   u32 n, then n textures:
 *     u32 id, 376 B DtexTextureSampler (core's; texture_object and mip_tail_data ignored),
 *     u32 levels, per level: u32 width height, width x height x 16 B texels (float4, as
 *     the hardware reads them: `DtexHostMipLevel`)
 *   u32 n, n x 76 B   lookups: u32 texture (a UDIM id with flag 8), f32 s t, f32 x 4
 *                     (tex2DGrad, tex2DGradUdim: ddx, ddy; tex2DLod: the level of detail,
 *                     then 0 0 0), u32 flags (1: tex2DLod, 2: fallbackToCoarser,
 *                     4: stochastic, 8: tex2DGradUdim, 16: environment, 32: its up axis
 *                     is z; bits 16..31: the request key, run as block `key` of a grid of
 *                     65536 one-thread blocks), f32 x 2 jitter, f32 x 9 (environment: R,
 *                     dRdx, dRdy; else zeros)
 *
 * It builds a `DtexDeviceContext` in host memory over those arrays (with those flags,
 * launch number and rejection threshold), points each
 * listed texture's sampler page at its sampler, whose texture object is a
 * `DtexHostMipTexture` of its levels, runs each lookup -- with the reference bits cleared
 * before it unless `accumulate` is 1 (then they build up over the lookups, as over a
 * launch) -- and writes:
 *
 *   "DTXTOUT1", u32 lookups, u32 stray (reference bits set outside the entry pages and the
 *   listed textures' ranges, which no lookup should set), per lookup: f32 x 4 value,
 *   u32 resident, u32 n, n x u32 pages (the reference bits the lookup set that were not
 *   set before it, ascending); then u32 standing, u32 rejected (the request counters,
 *   counted with DTEX_CONTEXT_FLAG_COUNT_REQUESTS)
 */
#include "dtex_host_shim.h"


// (udim.cuh's `#pragma unroll` is nvcc's: compiled with -Wno-unknown-pragmas.)
#include <demandtex/device/udim.cuh>
#include <demandtex/device/environment.cuh>

/// This program's name, for `fail`.
static constexpr const char* kProgram = "texture_host";
#include "host_program.h"

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

/// One texture of the input: its sampler, whose object is `mip`, over `levels`.
struct Texture {
    DtexTextureSampler sampler;
    DtexHostMipTexture mip;
    std::vector<DtexHostMipLevel> levels;
    std::vector<std::vector<float4>> texels;
};

/// One lookup of the input.
struct Lookup {
    uint32_t texture;
    float s, t;
    float d[4];
    uint32_t flags;
    float jitter[2];
    float env[9];
};

static_assert(sizeof(DtexTextureSampler) == 376, "DtexTextureSampler");
static_assert(sizeof(Lookup) == 76, "a lookup record");
static_assert(sizeof(float4) == 16, "a texel");

constexpr uint32_t kLod = 1, kFallback = 2, kStochastic = 4, kUdim = 8, kEnvironment = 16,
                   kUpZ = 32;

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 3)
        fail("usage: texture_host INPUT OUTPUT");
    Reader in{readFile(argv[1])};
    if (memcmp(in.take(8, "the magic"), "DTXTEX03", 8) != 0)
        fail("not a texture_host input");
    const uint32_t maxTextures = in.u32("the context");
    const uint32_t pageTableEntries = in.u32("the context");
    const uint32_t numPages = in.u32("the context");
    const uint32_t contextFlags = in.u32("the context"), launchNum = in.u32("the context");
    const uint32_t rejectThreshold = in.u32("the context");
    const bool accumulate = in.u32("the context") != 0u;
    std::vector<uint64_t> pageTable = in.array<uint64_t>("the page table");
    std::vector<uint32_t> residence = in.array<uint32_t>("the residence bits");
    std::vector<uint32_t> reference = in.array<uint32_t>("the reference bits");
    if (reference.empty())
        reference.assign(residence.size(), 0u);
    if (pageTable.size() != pageTableEntries || residence.size() != (numPages + 31u) / 32u ||
        reference.size() != residence.size() || pageTableEntries < 2u * maxTextures)
        fail("the arrays do not match the context");

    const uint32_t numTextures = in.u32("the textures");
    std::vector<std::unique_ptr<Texture>> textures;
    for (uint32_t i = 0; i < numTextures; ++i) {
        auto tex = std::make_unique<Texture>();
        const uint32_t id = in.u32("a texture");
        if (id >= maxTextures)
            fail("a texture id past max_textures");
        memcpy(&tex->sampler, in.take(sizeof tex->sampler, "a sampler"), sizeof tex->sampler);
        const uint32_t levels = in.u32("a texture's levels");
        if (levels == 0u || levels > DTEX_MAX_LEVELS)
            fail("a texture's level count");
        for (uint32_t l = 0; l < levels; ++l) {
            const uint32_t w = in.u32("a level"), h = in.u32("a level");
            const size_t n = static_cast<size_t>(w) * h;
            std::vector<float4> texels(n);
            memcpy(texels.data(), in.take(n * sizeof(float4), "a level's texels"),
                   n * sizeof(float4));
            tex->texels.push_back(std::move(texels));
            tex->levels.push_back(DtexHostMipLevel{w, h, nullptr});
        }
        for (uint32_t l = 0; l < levels; ++l)
            tex->levels[l].texels = tex->texels[l].data();
        tex->mip = DtexHostMipTexture{levels, tex->sampler.address_s, tex->sampler.address_t,
                                      tex->sampler.filter, tex->levels.data()};
        tex->sampler.texture_object = reinterpret_cast<uint64_t>(&tex->mip);
        // The sampler page's entry: this process's copy of the record.
        pageTable[id] = reinterpret_cast<uint64_t>(&tex->sampler);
        textures.push_back(std::move(tex));
    }
    const std::vector<Lookup> lookups = in.array<Lookup>("the lookups");
    if (in.at != in.bytes.size())
        fail("bytes after the lookups");

    std::vector<uint32_t> lru((numPages + 7u) / 8u, 0u), lengths(DTEX_ARRAY_LENGTHS, 0u);
    DtexDeviceContext ctx =
        hostContext(pageTable, reference, residence, lru, lengths, numPages, maxTextures);
    ctx.flags = contextFlags;
    ctx.launch_num = launchNum;
    ctx.reject_threshold = rejectThreshold;

    std::vector<unsigned char> results;
    auto put = [&results](const void* p, size_t n) {
        const unsigned char* b = static_cast<const unsigned char*>(p);
        results.insert(results.end(), b, b + n);
    };
    // What a lookup can touch: the entry pages and each listed texture's range.
    ReferenceWatch watch(reference);
    watch.watch(0u, pageTableEntries);
    for (const auto& tex : textures) {
        const uint64_t first = tex->sampler.start_page;
        const uint64_t end = first + tex->sampler.num_pages;
        if (end > numPages)
            fail("a texture's pages outside the page space");
        watch.watch(first, end);
    }
    for (const Lookup& l : lookups) {
        watch.begin(reference, accumulate);
        dtex::SampleOptions options;
        options.fallbackToCoarser = (l.flags & kFallback) != 0u;
        options.stochastic = (l.flags & kStochastic) != 0u;
        options.jitter[0] = l.jitter[0];
        options.jitter[1] = l.jitter[1];
        // The request key (`requestKey()`): this lookup's block in a 65536-block grid.
        gridDim = dim3{65536u, 1u, 1u};
        blockIdx = uint3{l.flags >> 16, 0u, 0u};
        bool resident = false;
        const float2 ddx = make_float2(l.d[0], l.d[1]), ddy = make_float2(l.d[2], l.d[3]);
        float4 v;
        if ((l.flags & kEnvironment) != 0u) {
            const float* e = l.env;
            v = dtex::environment<float4>(
                ctx, l.texture, make_float3(e[0], e[1], e[2]), make_float3(e[3], e[4], e[5]),
                make_float3(e[6], e[7], e[8]), &resident,
                (l.flags & kUpZ) != 0u ? DTEX_UP_AXIS_Z : DTEX_UP_AXIS_Y, options);
        } else if ((l.flags & kLod) != 0u)
            v = dtex::tex2DLod<float4>(ctx, l.texture, l.s, l.t, l.d[0], &resident, options);
        else if ((l.flags & kUdim) != 0u)
            v = dtex::tex2DGradUdim<float4>(ctx, l.texture, l.s, l.t, ddx, ddy, &resident,
                                            options);
        else
            v = dtex::tex2DGrad<float4>(ctx, l.texture, l.s, l.t, ddx, ddy, &resident, options);
        const float value[4] = {v.x, v.y, v.z, v.w};
        put(value, sizeof value);
        const uint32_t res = resident ? 1u : 0u;
        put(&res, 4);
        const std::vector<uint32_t> pages = watch.newlySet(reference);
        const uint32_t n = static_cast<uint32_t>(pages.size());
        put(&n, 4);
        if (n != 0)
            put(pages.data(), n * 4u);
    }
    // The request counters (with DTEX_CONTEXT_FLAG_COUNT_REQUESTS).
    const uint32_t counts[2] = {lengths[DTEX_ARRAY_LENGTH_STANDING],
                                lengths[DTEX_ARRAY_LENGTH_REJECTED]};
    put(counts, sizeof counts);
    writeLookupOutput(argv[2], "DTXTOUT1", lookups.size(), watch.stray(reference), results);
    return 0;
}
