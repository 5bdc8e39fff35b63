// Lists the CUDA devices of this machine. Exit status 0 with at least one device, 1 without.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        std::fprintf(stderr, "cuboid-gpu-info: no CUDA device available (%s)\n",
                     status == cudaSuccess ? "device count is 0" : cudaGetErrorString(status));
        return 1;
    }
    int runtime = 0;
    int driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    std::printf("CUDA runtime %d, driver %d, %d device(s)\n", runtime, driver, count);
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp p{};
        cudaGetDeviceProperties(&p, d);
        std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.1f MiB\n", d, p.name, p.major,
                    p.minor, p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1 << 30),
                    static_cast<double>(p.l2CacheSize) / (1 << 20));
    }
    return 0;
}
