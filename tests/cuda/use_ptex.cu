// Compile check (cuda/tests/cuda_compile.rs): instantiates the Ptex lookups of ptex.cuh
// (point and stochastic, several channel counts) as a renderer's kernel would.
#include <demandtex/device/ptex.cuh>

extern "C" __global__ void check_ptex_lookups(DtexDeviceContext ctx, DtexPtexDeviceTexture ptex,
                                              const unsigned int* faces, const float4* coords,
                                              float4* out, unsigned char* flags, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 c = coords[i];
    DtexPtexFilterOptions point;
    point.struct_size = sizeof(DtexPtexFilterOptions);
    point.filter = DTEX_PTEX_FILTER_POINT;
    point.lerp = 0u;
    point.sharpness = 0.0f;
    point.noedgeblend = 0u;
    point.width = 1.0f;
    point.blur = 0.0f;
    point.first_channel = 0u;
    point.jitter_u = 0.5f;
    point.jitter_v = 0.5f;
    DtexPtexFilterOptions stochastic = point;
    stochastic.filter = DTEX_PTEX_FILTER_STOCHASTIC;
    stochastic.jitter_u = c.z;
    stochastic.jitter_v = c.w;
    float a[4], b[2];
    const dtex::PtexResult ra =
        dtex::ptexSample(ctx, ptex, faces[i], c.x, c.y, c.z, 0.0f, 0.0f, c.w, point, a, 4u);
    const dtex::PtexResult rb =
        dtex::ptexSample(ctx, ptex, faces[i], c.x, c.y, c.z, 0.0f, 0.0f, c.w, stochastic, b, 2u);
    out[i] = make_float4(a[0], a[1], b[0], b[1]);
    flags[i] = static_cast<unsigned char>((ra.resident ? 1 : 0) | (rb.resident ? 2 : 0) |
                                          (ra.supported ? 4 : 0) | (ra.channels << 3));
}
