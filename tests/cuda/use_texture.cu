// Compile check (core/tests/cuda_compile.rs): instantiates every lookup of texture.cuh for
// every result type, with and without options, so that NVRTC type-checks the templates.
#include <demandtex/device/texture.cuh>

extern "C" __global__ void check_texture_lookups(DtexDeviceContext ctx, const float4* coords,
                                                 float4* out, unsigned int* residentCount,
                                                 unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 c = coords[i];
    const uint32_t texture = i % 7u;
    const float2 ddx = make_float2(c.z, 0.0f);
    const float2 ddy = make_float2(0.0f, c.w);
    dtex::SampleOptions coarser;
    coarser.fallbackToCoarser = true;
    bool r[9];
    const float4 a = dtex::tex2D<float4>(ctx, texture, c.x, c.y, &r[0]);
    const float2 b = dtex::tex2D<float2>(ctx, texture, c.x, c.y, &r[1], coarser);
    const float d = dtex::tex2DLod<float>(ctx, texture, c.x, c.y, c.z, &r[2]);
    const float4 e = dtex::tex2DLod<float4>(ctx, texture, c.x, c.y, c.w, &r[3], coarser);
    const float4 f = dtex::tex2DGrad<float4>(ctx, texture, c.x, c.y, ddx, ddy, &r[4]);
    const float2 g = dtex::tex2DGrad<float2>(ctx, texture, c.x, c.y, ddx, ddy, &r[5], coarser);
    const float h = dtex::tex2DGrad<float>(ctx, texture, c.x, c.y, ddx, ddy, &r[6]);
    // A null residency pointer is allowed.
    const float4 k = dtex::tex2DGrad<float4>(ctx, texture, c.x, c.y, ddx, ddy, nullptr);
    r[7] = true;
    r[8] = true;
    unsigned int resident = 0;
    for (int j = 0; j < 9; ++j)
        resident += r[j] ? 1u : 0u;
    out[i] = make_float4(a.x + b.x + d + e.y, f.z + g.y + h, k.w, 0.0f);
    atomicAdd(residentCount, resident);
}
