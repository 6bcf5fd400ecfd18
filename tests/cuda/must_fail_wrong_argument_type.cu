// Must NOT compile (core/tests/cuda_compile.rs): scalar gradients where `tex2DGrad` takes
// float2 (ddx, ddy), and a context pointer where it takes the context.
// expect-error: no instance of function template "dtex::tex2DGrad" matches the argument list
// expect-error: no instance of function template "dtex::tex2DLod" matches the argument list
#include <demandtex/device/texture.cuh>

extern "C" __global__ void wrong_call(DtexDeviceContext ctx, float4* out)
{
    bool resident;
    out[0] = dtex::tex2DGrad<float4>(ctx, 0u, 0.5f, 0.5f, 0.01f, 0.01f, &resident);
    out[1] = dtex::tex2DLod<float4>(&ctx, 0u, 0.5f, 0.5f, 0.0f, &resident);
}
