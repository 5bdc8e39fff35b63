// Error checks for the CUDA runtime and cuBLASLt: a failed call becomes a std::runtime_error
// naming the call, so a calibration stops with a readable message instead of measuring garbage.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace cuboid::calibrate {

inline void cuda_check(cudaError_t status, const char* call) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
}

}  // namespace cuboid::calibrate

#define CUBOID_CUDA(call) ::cuboid::calibrate::cuda_check((call), #call)
