// Which GPUs there are and what software runs them (for the profile's metadata).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "calibrate/cuda/cuda_check.hpp"
#include "calibrate/cuda/sweeps.hpp"

namespace cuboid::calibrate {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

int visible_devices(std::string& why) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        why = cudaGetErrorString(status);
        return 0;
    }
    if (count == 0) why = "device count is 0";
    return count;
}

DeviceInfo query_device(int device, int device_count) {
    cudaDeviceProp p{};
    CUBOID_CUDA(cudaGetDeviceProperties(&p, device));
    DeviceInfo d;
    d.name = p.name;
    d.sm_count = p.multiProcessorCount;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.memory_bytes = double(p.totalGlobalMem);
    d.device_count = device_count;
    int runtime = 0, driver = 0;
    CUBOID_CUDA(cudaRuntimeGetVersion(&runtime));
    CUBOID_CUDA(cudaDriverGetVersion(&driver));
    d.cuda_runtime = cuda_version(runtime);
    d.driver = cuda_version(driver);
    // cublasLtGetVersion: major * 10000 + minor * 100 + patch (cuBLAS >= 11).
    const std::size_t lt = cublasLtGetVersion();
    d.cublas = std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100);
    return d;
}

}  // namespace cuboid::calibrate
