// Must NOT compile (core/tests/cuda_compile.rs): a result type other than float, float2 or
// float4.
// expect-error: dtex: the result type of tex2D/tex2DLod/tex2DGrad must be float, float2 or float4
#include <demandtex/device/texture.cuh>

extern "C" __global__ void wrong_call(DtexDeviceContext ctx, int* out)
{
    bool resident;
    out[0] = dtex::tex2DGrad<int>(ctx, 0u, 0.5f, 0.5f, make_float2(0.01f, 0.0f),
                                  make_float2(0.0f, 0.01f), &resident);
}
