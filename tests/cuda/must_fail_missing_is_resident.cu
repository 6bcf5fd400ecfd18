// Must NOT compile (core/tests/cuda_compile.rs): a lookup without its `isResident`
// out-parameter. Proves the compile checks bite.
// expect-error: no instance of function template "dtex::tex2DGrad" matches the argument list
#include <demandtex/device/texture.cuh>

extern "C" __global__ void wrong_call(DtexDeviceContext ctx, float4* out)
{
    out[0] = dtex::tex2DGrad<float4>(ctx, 0u, 0.5f, 0.5f, make_float2(0.01f, 0.0f),
                                     make_float2(0.0f, 0.01f));
}
