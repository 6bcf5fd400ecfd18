// A C++ consumer of an installed demandtex's CUDA path, as an OptiX or CUDA renderer uses it:
//
// 1. kernel.cu, which samples through <demandtex/device/...>, is compiled with NVRTC against
//    the installed include directory only (for compute_75, the PTX it runs, and compute_90),
//    with an empty log required - no CUDA toolkit, no GPU;
// 2. a demandtex::CudaLoader is created; without a usable driver or device that is
//    DTEX_STATUS_NO_CUDA with the reason, which is reported and ends the test here (the CPU
//    consumers cover the rest);
// 3. with a GPU: each kernel (trilinear, then stochastic) runs through the multi-pass cycle
//    (prepareLaunch, launch on the default stream, processRequests, wait) until no lookup
//    misses, and its results are compared with the CPU loader's lookups of the same
//    procedural texture with the same options; then a Ptex fixture is registered with its
//    device tables (createDevicePtex), which must describe the file and read back the same.
//
// The driver API (cuda.h) is loaded at run time with dlopen, as the library itself does.
#include <demandtex.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "cuda_consumer: FAIL: %s\n", what.c_str());
    std::exit(1);
}

std::string readFile(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(std::string("cannot read ") + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// The installed include directories (a CMake list: ';'-separated).
std::vector<std::string> includeDirs() {
    std::vector<std::string> dirs;
    std::stringstream list(DEMANDTEX_CONSUMER_INCLUDE);
    std::string dir;
    while (std::getline(list, dir, ';'))
        if (!dir.empty()) dirs.push_back(dir);
    if (dirs.empty()) fail("DemandTex::demandtex has no include directory");
    return dirs;
}

/// PTX of `source` for `arch` (compute_NN); any diagnostic fails the test.
std::string compile(const std::string& source, const std::string& arch) {
    nvrtcProgram prog{};
    if (nvrtcCreateProgram(&prog, source.c_str(), "kernel.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
        fail("nvrtcCreateProgram");
    std::vector<std::string> options = {"--std=c++17", "--gpu-architecture=" + arch};
    for (const std::string& dir : includeDirs()) options.push_back("-I" + dir);
    std::vector<const char*> raw;
    for (const std::string& o : options) raw.push_back(o.c_str());
    const nvrtcResult compiled = nvrtcCompileProgram(prog, static_cast<int>(raw.size()), raw.data());
    std::size_t logSize = 0;
    nvrtcGetProgramLogSize(prog, &logSize);
    std::string log(logSize, '\0');
    if (logSize > 0) nvrtcGetProgramLog(prog, &log[0]);
    log.erase(std::find(log.begin(), log.end(), '\0'), log.end());
    if (compiled != NVRTC_SUCCESS || !log.empty())
        fail("NVRTC (" + arch + "): " + nvrtcGetErrorString(compiled) + "\n" + log);
    std::size_t ptxSize = 0;
    nvrtcGetPTXSize(prog, &ptxSize);
    std::string ptx(ptxSize, '\0');
    nvrtcGetPTX(prog, &ptx[0]);
    nvrtcDestroyProgram(&prog);
    return ptx;
}

#define DTEX_STR_(x) #x
#define DTEX_STR(x) DTEX_STR_(x)  // expands cuda.h's versioned names (cuMemAlloc -> cuMemAlloc_v2)

/// The driver functions the test calls, looked up in libcuda.so.1.
struct Driver {
    decltype(&::cuInit) init = nullptr;
    decltype(&::cuDeviceGet) deviceGet = nullptr;
    decltype(&::cuDevicePrimaryCtxRetain) retain = nullptr;
    decltype(&::cuDevicePrimaryCtxRelease) release = nullptr;
    decltype(&::cuCtxSetCurrent) setCurrent = nullptr;
    decltype(&::cuModuleLoadData) loadModule = nullptr;
    decltype(&::cuModuleUnload) unloadModule = nullptr;
    decltype(&::cuModuleGetFunction) getFunction = nullptr;
    decltype(&::cuMemAlloc) alloc = nullptr;
    decltype(&::cuMemFree) free = nullptr;
    decltype(&::cuMemcpyHtoD) toDevice = nullptr;
    decltype(&::cuMemcpyDtoH) toHost = nullptr;
    decltype(&::cuMemsetD32) memset32 = nullptr;
    decltype(&::cuLaunchKernel) launch = nullptr;
    decltype(&::cuCtxSynchronize) synchronize = nullptr;
};

template <class F>
void lookUp(void* lib, const char* name, F& out) {
    void* p = dlsym(lib, name);
    if (!p) fail(std::string("libcuda lacks ") + name);
    static_assert(sizeof(F) == sizeof(void*), "function pointers are data-pointer sized");
    std::memcpy(&out, &p, sizeof p);
}

Driver loadDriver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) fail("libcuda.so.1 did not load although a CUDA loader was created");
    Driver d;
    lookUp(lib, DTEX_STR(cuInit), d.init);
    lookUp(lib, DTEX_STR(cuDeviceGet), d.deviceGet);
    lookUp(lib, DTEX_STR(cuDevicePrimaryCtxRetain), d.retain);
    lookUp(lib, DTEX_STR(cuDevicePrimaryCtxRelease), d.release);
    lookUp(lib, DTEX_STR(cuCtxSetCurrent), d.setCurrent);
    lookUp(lib, DTEX_STR(cuModuleLoadData), d.loadModule);
    lookUp(lib, DTEX_STR(cuModuleUnload), d.unloadModule);
    lookUp(lib, DTEX_STR(cuModuleGetFunction), d.getFunction);
    lookUp(lib, DTEX_STR(cuMemAlloc), d.alloc);
    lookUp(lib, DTEX_STR(cuMemFree), d.free);
    lookUp(lib, DTEX_STR(cuMemcpyHtoD), d.toDevice);
    lookUp(lib, DTEX_STR(cuMemcpyDtoH), d.toHost);
    lookUp(lib, DTEX_STR(cuMemsetD32), d.memset32);
    lookUp(lib, DTEX_STR(cuLaunchKernel), d.launch);
    lookUp(lib, DTEX_STR(cuCtxSynchronize), d.synchronize);
    return d;
}

void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) fail(std::string(what) + " failed with CUresult " + std::to_string(static_cast<int>(r)));
}

/// The kernel's float2 and float4 (vector_types.h is not part of cuda.h).
struct Float2 {
    float x, y;
};
struct Float4 {
    float x, y, z, w;
};

constexpr unsigned kSide = 64;              // lookups: a kSide x kSide grid over the texture
constexpr unsigned kCount = kSide * kSide;
constexpr float kGradient = 1.0f / 512.0f;  // about level 3 of a 4096^2 texture

std::vector<Float2> coordinates() {
    std::vector<Float2> uv(kCount);
    for (unsigned y = 0; y < kSide; ++y)
        for (unsigned x = 0; x < kSide; ++x) uv[y * kSide + x] = {(x + 0.37f) / kSide, (y + 0.61f) / kSide};
    return uv;
}

/// Lookup `i`'s options: trilinear, or stochastic with kernel.cu's jitter of thread `i`.
demandtex::SampleOptions lookupOptions(unsigned i, bool stochastic) {
    demandtex::SampleOptions o;
    if (stochastic) {
        const unsigned h = (i * 0x9E3779B9u) ^ (i >> 7);
        o.stochastic = true;
        o.jitter[0] = static_cast<float>(h & 0xFFFFu) / 65536.0f;
        o.jitter[1] = static_cast<float>(h >> 16) / 65536.0f;
    }
    return o;
}

/// The CPU loader's values of the same lookups (multi-pass until every one is resident).
std::vector<demandtex::Sample> cpuReference(const demandtex::ProceduralDesc& texture, const std::vector<Float2>& uv,
                                            bool stochastic) {
    demandtex::Loader cpu(demandtex::LoaderOptions().numPages(1u << 20).fillThreads(2));
    const demandtex::TextureId tex = cpu.createProceduralTexture(texture);
    std::vector<demandtex::Sample> out(uv.size());
    for (int launch = 0; launch < 50; ++launch) {
        demandtex::Launch l = cpu.prepareLaunch();
        bool all = true;
        for (std::size_t i = 0; i < uv.size(); ++i) {
            out[i] = l.tex2DGrad(tex, uv[i].x, uv[i].y, kGradient, 0.0f, 0.0f, kGradient,
                                 lookupOptions(static_cast<unsigned>(i), stochastic));
            all = all && out[i].resident;
        }
        if (all) return out;
        cpu.processRequests(std::move(l)).wait();
    }
    fail("the CPU reference did not converge");
}

/// A Ptex file registered with its device tables (`createDevicePtex`): the table describes
/// the file as the loader does, lives in device memory, and reads back the same.
void checkDevicePtex(const demandtex::CudaLoader& loader) {
    DtexPtexDeviceTexture device{};
    const demandtex::PtexId tex = loader.createDevicePtex(DEMANDTEX_CONSUMER_PTEX, &device);
    const demandtex::PtexInfo info = loader.ptexInfo(tex);
    if (device.num_faces != info.num_faces || device.num_channels != info.num_channels ||
        device.faces == nullptr || device.units == nullptr || device.constants == nullptr)
        fail("the device Ptex table does not describe the file");
    const DtexPtexDeviceTexture again = loader.ptexDeviceTexture(tex);
    if (std::memcmp(&again, &device, sizeof device) != 0) fail("ptexDeviceTexture differs from createDevicePtex's");
    std::printf("cuda_consumer: GPU Ptex tables: %u faces, %u unit entries in device memory\n", device.num_faces,
                device.num_units);
}

int runOnGpu(const demandtex::CudaLoader& loader, const std::string& ptx) {
    const Driver d = loadDriver();
    check(d.init(0), "cuInit");
    CUdevice device = 0;
    check(d.deviceGet(&device, 0), "cuDeviceGet");
    CUcontext context = nullptr;  // the primary context, which the loader uses too
    check(d.retain(&context, device), "cuDevicePrimaryCtxRetain");
    check(d.setCurrent(context), "cuCtxSetCurrent");
    CUmodule module = nullptr;
    check(d.loadModule(&module, ptx.c_str()), "cuModuleLoadData");
    const demandtex::ProceduralDesc noise = demandtex::ProceduralDesc::noise(4096, 4096, 7);
    const demandtex::TextureId tex = loader.createProceduralTexture(noise);
    const std::vector<Float2> uv = coordinates();
    CUdeviceptr uvDev = 0, outDev = 0, missingDev = 0;
    check(d.alloc(&uvDev, uv.size() * sizeof(Float2)), "cuMemAlloc");
    check(d.alloc(&outDev, uv.size() * sizeof(Float4)), "cuMemAlloc");
    check(d.alloc(&missingDev, sizeof(unsigned)), "cuMemAlloc");
    check(d.toDevice(uvDev, uv.data(), uv.size() * sizeof(Float2)), "cuMemcpyHtoD");

    // Trilinear, then stochastic (kernel.cu's consumer_sample_stochastic, each thread its own
    // jitter), each against the CPU loader's same lookups.
    for (const bool stochastic : {false, true}) {
        CUfunction kernel = nullptr;
        check(d.getFunction(&kernel, module, stochastic ? "consumer_sample_stochastic" : "consumer_sample"),
              "cuModuleGetFunction");
        // The trilinear pass publishes tiles before each launch, the stochastic one while
        // the kernel runs (sampled from the next launch on); both converge.
        loader.setTilePublication(stochastic ? DTEX_TILE_PUBLICATION_DURING_LAUNCH
                                             : DTEX_TILE_PUBLICATION_BEFORE_LAUNCH);
        unsigned missing = kCount;
        int launches = 0;
        while (missing != 0) {
            if (++launches > 50) fail("the GPU lookups did not converge in 50 launches");
            demandtex::CudaLaunch launch = loader.prepareLaunch(nullptr);
            check(d.memset32(missingDev, 0u, 1), "cuMemsetD32");
            std::uint32_t texture = tex;
            Float2 ddx = {kGradient, 0.0f}, ddy = {0.0f, kGradient};
            unsigned count = kCount;
            void* params[] = {&launch.context, &texture, &uvDev, &ddx, &ddy, &outDev, &missingDev, &count};
            check(d.launch(kernel, (kCount + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
            loader.processRequests(launch, nullptr).wait();
            check(d.synchronize(), "cuCtxSynchronize");
            check(d.toHost(&missing, missingDev, sizeof missing), "cuMemcpyDtoH");
        }
        std::vector<Float4> gpu(kCount);
        check(d.toHost(gpu.data(), outDev, gpu.size() * sizeof(Float4)), "cuMemcpyDtoH");

        const std::vector<demandtex::Sample> cpu = cpuReference(noise, uv, stochastic);
        double worst = 0.0;
        unsigned beyond = 0;
        // Hardware filtering weights have 8 fractional bits; RGBA8 texels 1/255 steps.
        const double tolerance = 0.02;
        for (unsigned i = 0; i < kCount; ++i) {
            const float g[4] = {gpu[i].x, gpu[i].y, gpu[i].z, gpu[i].w};
            double lookup = 0.0;
            for (int c = 0; c < 4; ++c) lookup = std::max(lookup, std::fabs(double(g[c]) - double(cpu[i].value[c])));
            worst = std::max(worst, lookup);
            beyond += lookup > tolerance ? 1u : 0u;
        }
        // A stochastic lookup whose jittered coordinate lands on a texel edge may pick the
        // neighbour on one side and not the other (the device's float arithmetic is not the
        // CPU's): allow 1 % of them.
        const unsigned allowed = stochastic ? kCount / 100 : 0;
        const demandtex::Stats stats = loader.stats();
        std::printf("cuda_consumer: GPU %s: %u lookups converged in %d launches; %llu tiles filled; "
                    "largest difference from the CPU loader %.5f, %u lookups beyond %.2f (%u allowed); "
                    "peak host tile bytes %llu\n",
                    stochastic ? "stochastic" : "trilinear", kCount, launches,
                    static_cast<unsigned long long>(stats.tiles_filled), worst, beyond, tolerance, allowed,
                    static_cast<unsigned long long>(stats.peak_host_tile_bytes));
        if (beyond > allowed) fail("the GPU lookups differ from the CPU loader's");
    }

    d.free(uvDev);
    d.free(outDev);
    d.free(missingDev);
    d.unloadModule(module);
    d.release(device);
    checkDevicePtex(loader);
    return 0;
}

}  // namespace

int main() {
    demandtex::checkAbiVersion();
    const std::string source = readFile(DEMANDTEX_CONSUMER_KERNEL);
    std::string ptx;
    for (const char* arch : {"compute_90", "compute_75"}) ptx = compile(source, arch);
    std::printf("cuda_consumer: kernel.cu compiled against the installed headers (compute_75, compute_90)\n");

    try {
        const demandtex::CudaLoader loader(
            0, demandtex::LoaderOptions().numPages(1u << 20).maxTextureMemory(64ull << 20).fillThreads(2));
        return runOnGpu(loader, ptx);
    } catch (const demandtex::Error& e) {
        if (e.status() != DTEX_STATUS_NO_CUDA) throw;
        std::printf("cuda_consumer: no GPU here (%s): the kernel was compiled, not run\n", e.what());
        return 0;
    }
}
