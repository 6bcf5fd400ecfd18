// Compile check (core/tests/cuda_compile.rs): the paging primitives of paging.cuh and the
// footprint maths of footprint.cuh, called directly.
#include <demandtex/device/footprint.cuh>

extern "C" __global__ void check_paging(DtexDeviceContext ctx, const uint32_t* pages,
                                        uint64_t* entries, unsigned int* flags, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t page = pages[i];
    uint64_t entry = 0;
    const bool mapped = dtex::mapOrRequest(ctx, page, &entry);
    const bool requested = dtex::request(ctx, page + 1u);
    const bool resident = dtex::isResident(ctx, page);
    float4 base = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const bool colour = dtex::decodeBaseColor(entry, &base);
    const uint32_t age = ctx.lru_table != nullptr ? dtex::lruAge(ctx.lru_table, page) : 0u;
    entries[i] = entry + static_cast<uint64_t>(base.x > 0.5f) + age;
    flags[i] = (mapped ? 1u : 0u) | (requested ? 2u : 0u) | (resident ? 4u : 0u) |
               (colour ? 8u : 0u);
}

extern "C" __global__ void check_footprint(const float4* grads, float4* out, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 g = grads[i];
    const dtex::Footprint fp = dtex::footprintFromGradients(
        make_float2(g.x, g.y), make_float2(g.z, g.w), 4096u, 2048u, 8u);
    const dtex::MipLevels levels = dtex::mipLevels(fp.lod, 13u, DTEX_FILTER_LINEAR);
    const float2 p = dtex::probeCenter(fp, 0.25f, 0.75f, fp.probes - 1u);
    const dtex::Axis a = dtex::axisTexels(p.x, 4096u, true, DTEX_ADDRESS_MIRROR);
    out[i] = make_float4(fp.lod + static_cast<float>(levels.fine), levels.coarseWeight,
                         a.weight[0] + static_cast<float>(a.index[1]), p.y);
}
