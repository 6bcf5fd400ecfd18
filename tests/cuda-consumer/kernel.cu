// A renderer-style kernel of a CUDA consumer: one lookup per thread through the device API
// of the installed package, recording misses as requests for the next dtex_cuda_process_requests.
// Compiled at run time by NVRTC (main.cpp) with the installed include directory only.
#include <demandtex/device/demandtex_device.cuh>

extern "C" __global__ void consumer_sample(DtexDeviceContext ctx, uint32_t texture, const float2* uv,
                                           float2 ddx, float2 ddy, float4* out,
                                           unsigned int* missing, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    bool resident = false;
    out[i] = dtex::tex2DGrad<float4>(ctx, texture, uv[i].x, uv[i].y, ddx, ddy, &resident);
    if (!resident)
        atomicAdd(missing, 1u);
}

// The same lookups with stochastic two-level point filtering: one texel per level, picked by
// a per-thread jitter (a hash of the thread index here; a renderer's sample sequence).
extern "C" __global__ void consumer_sample_stochastic(DtexDeviceContext ctx, uint32_t texture,
                                                      const float2* uv, float2 ddx, float2 ddy,
                                                      float4* out, unsigned int* missing,
                                                      unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    dtex::SampleOptions options;
    options.stochastic = true;
    const unsigned int h = (i * 0x9E3779B9u) ^ (i >> 7);
    options.jitter[0] = static_cast<float>(h & 0xFFFFu) / 65536.0f;
    options.jitter[1] = static_cast<float>(h >> 16) / 65536.0f;
    bool resident = false;
    out[i] = dtex::tex2DGrad<float4>(ctx, texture, uv[i].x, uv[i].y, ddx, ddy, &resident, options);
    if (!resident)
        atomicAdd(missing, 1u);
}
