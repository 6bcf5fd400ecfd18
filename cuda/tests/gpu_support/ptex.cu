// A test kernel for the GPU tests (cuda/tests/gpu_ptex.rs): one Ptex lookup per thread with
// dtex::ptexSample. Its PTX, ptx/ptex.ptx, is checked in (generated with the pinned NVRTC of
// scripts/check-cuda.sh: --gpu-architecture=compute_75 --std=c++17 --fmad=false
// -I include), so the tests need no NVRTC on the GPU machine.
#include <demandtex/device/ptex.cuh>

/// One lookup (32 bytes; `Lookup` in gpu_ptex.rs).
struct PtexTestLookup {
    unsigned int face;
    unsigned int filter;
    float u, v, dudx, dvdy, jitter_u, jitter_v;
};

extern "C" __global__ void dtex_test_ptex(DtexDeviceContext ctx, DtexPtexDeviceTexture ptex,
                                          const PtexTestLookup* lookups, float4* out,
                                          unsigned int* flags, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const PtexTestLookup l = lookups[i];
    DtexPtexFilterOptions o;
    o.struct_size = sizeof(DtexPtexFilterOptions);
    o.filter = l.filter;
    o.lerp = 0u;
    o.sharpness = 0.0f;
    o.noedgeblend = 0u;
    o.width = 1.0f;
    o.blur = 0.0f;
    o.first_channel = 0u;
    o.jitter_u = l.jitter_u;
    o.jitter_v = l.jitter_v;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const dtex::PtexResult r =
        dtex::ptexSample(ctx, ptex, l.face, l.u, l.v, l.dudx, 0.0f, 0.0f, l.dvdy, o, v, 4u);
    out[i] = make_float4(v[0], v[1], v[2], v[3]);
    flags[i] = (r.resident ? 1u : 0u) | (r.supported ? 2u : 0u) | (r.channels << 2);
}
