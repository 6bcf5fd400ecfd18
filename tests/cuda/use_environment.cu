// Compile check (core/tests/cuda_compile.rs): instantiates every environment lookup of
// environment.cuh.
#include <demandtex/device/environment.cuh>

extern "C" __global__ void check_environment_lookups(DtexDeviceContext ctx, uint32_t texture,
                                                     const float4* dirs, float4* out,
                                                     unsigned char* resident, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 c = dirs[i];
    const float3 r = make_float3(c.x, c.y, c.z);
    const float3 drdx = make_float3(c.w, 0.0f, 0.0f);
    const float3 drdy = make_float3(0.0f, c.w, 0.0f);
    dtex::SampleOptions coarser;
    coarser.fallbackToCoarser = true;
    bool r0, r1, r2;
    const float4 a = dtex::environment<float4>(ctx, texture, r, drdx, drdy, &r0);
    const float2 b =
        dtex::environment<float2>(ctx, texture, r, drdx, drdy, &r1, DTEX_UP_AXIS_Z, coarser);
    const float d = dtex::environment<float>(ctx, texture, r, drdx, drdy, &r2, DTEX_UP_AXIS_Y);
    const float2 st = dtex::latlong(r, DTEX_UP_AXIS_Y);
    out[i] = make_float4(a.x, b.y, d, st.x + st.y);
    resident[i] = static_cast<unsigned char>((r0 ? 1 : 0) | (r1 ? 2 : 0) | (r2 ? 4 : 0));
}
