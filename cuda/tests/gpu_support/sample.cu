// A test kernel for the GPU tests (cuda/tests/gpu_sparse.rs): sample a texture object at
// given points and an explicit level, one thread per point. Its PTX, ptx/sample.ptx, is checked
// in (generated with the pinned NVRTC of scripts/check-cuda.sh: --gpu-architecture=compute_75
// --std=c++17), so the tests need no NVRTC on the GPU machine.
extern "C" __global__ void dtex_test_sample(unsigned long long tex, const float2* points,
                                            float lod, float4* out, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = tex2DLod<float4>(static_cast<cudaTextureObject_t>(tex), points[i].x,
                                  points[i].y, lod);
}
