/* A stand-in for the NVIDIA driver library (libcuda.so.1), for testing demandtex's
 * "no GPU" paths on machines without one. Built by the tests (stub_libcuda/mod.rs) and
 * found through LD_LIBRARY_PATH. Variants, chosen at compile time:
 *
 * - default: cuInit returns CUDA_ERROR_NO_DEVICE (100), as a driver on a machine whose GPU
 *   is absent or hidden;
 * - -DSTUB_DEVICES=N: cuInit succeeds and the driver reports N devices, but the library
 *   lacks cuDeviceTotalMem_v2 (and everything after it), as a driver too old would;
 * - -DSTUB_DEVICES=N -DSTUB_PROBE: as above, plus cuDeviceTotalMem_v2 and
 *   cuDeviceGetAttribute, so that a probe succeeds: device 0 is a compute capability 9.0
 *   device with 132 multiprocessors, 80 GiB, sparse arrays, virtual memory management and
 *   32768² mipmapped textures, every other one a 7.5 device with 40 multiprocessors,
 *   16 GiB, neither, and 16384² mipmapped textures. There is no
 *   context API: creating a context fails as with a driver too old.
 */
#include <string.h>

typedef int CUresult;
typedef int CUdevice;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101

CUresult cuGetErrorString(CUresult error, const char **text) {
    if (!text) return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
    case CUDA_SUCCESS: *text = "no error"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal"; return CUDA_SUCCESS;
    default: *text = 0; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    default: *name = 0; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuDriverGetVersion(int *version) {
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

#ifndef STUB_DEVICES

CUresult cuInit(unsigned int flags) {
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDeviceGetCount(int *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = 0;
    return CUDA_SUCCESS;
}

#else

CUresult cuInit(unsigned int flags) {
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = STUB_DEVICES;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= STUB_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    (void)device;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "demandtex stub device", (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

#ifdef STUB_PROBE

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    if (!bytes || device < 0 || device >= STUB_DEVICES) return CUDA_ERROR_INVALID_VALUE;
    *bytes = (device == 0 ? (size_t)80 : (size_t)16) << 30;
    return CUDA_SUCCESS;
}

/* Attribute numbers of cuda.h's CUdevice_attribute. */
#define ATTR_MULTIPROCESSOR_COUNT 16
#define ATTR_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH 73
#define ATTR_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT 74
#define ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define ATTR_COMPUTE_CAPABILITY_MINOR 76
#define ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 102
#define ATTR_SPARSE_CUDA_ARRAY_SUPPORTED 112

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    int first = device == 0;
    if (!value || device < 0 || device >= STUB_DEVICES) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case ATTR_MULTIPROCESSOR_COUNT: *value = first ? 132 : 40; return CUDA_SUCCESS;
    case ATTR_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: *value = first ? 32768 : 16384; return CUDA_SUCCESS;
    case ATTR_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: *value = first ? 32768 : 16384; return CUDA_SUCCESS;
    case ATTR_COMPUTE_CAPABILITY_MAJOR: *value = first ? 9 : 7; return CUDA_SUCCESS;
    case ATTR_COMPUTE_CAPABILITY_MINOR: *value = first ? 0 : 5; return CUDA_SUCCESS;
    case ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = first; return CUDA_SUCCESS;
    case ATTR_SPARSE_CUDA_ARRAY_SUPPORTED: *value = first; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

#endif

#endif
