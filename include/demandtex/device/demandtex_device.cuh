/*
 * demandtex device API: everything, in one include.
 *
 *   #include <demandtex/device/demandtex_device.cuh>   // with include/ on the include path
 *
 * - paging.cuh:    page bits, `dtex::request`, `dtex::mapOrRequest`, `dtex::isResident`
 * - footprint.cuh: level of detail, anisotropic probes and the pages a lookup touches
 * - texture.cuh:   `dtex::tex2D<T>`, `dtex::tex2DLod<T>`, `dtex::tex2DGrad<T>`
 * - udim.cuh:      `dtex::tex2DGradUdim<T>`
 * - environment.cuh: `dtex::environment<T>` (lat-long maps by direction)
 * - ptex.cuh:      `dtex::ptexSample` (Ptex: point, bilinear, box, the cubics, Gaussian,
 *                  stochastic two-level point; ptex_units, ptex_kernel, ptex_build,
 *                  ptex_separable and ptex_triangle.cuh)
 *
 * Header-only CUDA C++17 for NVRTC or nvcc (sm_75 and newer); it reads the shared structs
 * of <demandtex.h> (`DtexDeviceContext`, `DtexTextureSampler`, ...) and needs no CUDA
 * toolkit header beyond what NVRTC provides built in.
 */
#ifndef DEMANDTEX_DEVICE_CUH
#define DEMANDTEX_DEVICE_CUH

#include "paging.cuh"
#include "footprint.cuh"
#include "texture.cuh"
#include "udim.cuh"
#include "environment.cuh"
#include "ptex.cuh"

#endif  // DEMANDTEX_DEVICE_CUH
