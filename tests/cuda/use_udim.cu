// Compile check (core/tests/cuda_compile.rs): instantiates every UDIM lookup of udim.cuh.
#include <demandtex/device/udim.cuh>

extern "C" __global__ void check_udim_lookups(DtexDeviceContext ctx, uint32_t udim,
                                              const float4* coords, float4* out,
                                              unsigned char* resident, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 c = coords[i];
    const float2 ddx = make_float2(c.z, 0.0f);
    const float2 ddy = make_float2(0.0f, c.w);
    dtex::SampleOptions coarser;
    coarser.fallbackToCoarser = true;
    bool r0, r1, r2;
    const float4 a = dtex::tex2DGradUdim<float4>(ctx, udim, c.x, c.y, ddx, ddy, &r0);
    const float2 b = dtex::tex2DGradUdim<float2>(ctx, udim, c.x, c.y, ddx, ddy, &r1, coarser);
    const float d = dtex::tex2DGradUdim<float>(ctx, udim, c.x, c.y, ddx, ddy, &r2);
    out[i] = make_float4(a.x, b.y, d, a.w);
    resident[i] = static_cast<unsigned char>((r0 ? 1 : 0) | (r1 ? 2 : 0) | (r2 ? 4 : 0));
}
