// Device and pinned host allocations that free themselves, and a random fill: GEMM power draw
// (and so clocks) depends on the data, zeros would flatter the measurement.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "calibrate/cuda/cuda_check.hpp"

namespace cuboid::calibrate {

class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
        const cudaError_t s = cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes);
        if (s != cudaSuccess)
            throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(s));
    }
    ~DeviceBuffer() { cudaFree(ptr_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    template <class T = void>
    T* as() const { return static_cast<T*>(ptr_); }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

class PinnedBuffer {
public:
    explicit PinnedBuffer(std::size_t bytes) { CUBOID_CUDA(cudaMallocHost(&ptr_, bytes)); }
    ~PinnedBuffer() { cudaFreeHost(ptr_); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    void* get() const { return ptr_; }

private:
    void* ptr_ = nullptr;
};

// Counter-based hash (a 64-bit finaliser of splitmix64): the value at index i depends only on
// (seed, i), so any thread computes it without state.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 24 bits.
__device__ inline float uniform01(std::uint64_t seed, std::uint64_t i) {
    return float(mix64(seed ^ mix64(i)) >> 40) * (1.0f / 16777216.0f);
}

__device__ inline void store_as(float v, float* p) { *p = v; }
__device__ inline void store_as(float v, __half* p) { *p = __float2half(v); }
__device__ inline void store_as(float v, __nv_bfloat16* p) { *p = __float2bfloat16(v); }
__device__ inline void store_as(float v, __nv_fp8_e4m3* p) { *p = __nv_fp8_e4m3(v); }

// Values uniform in [-1, 1): no overflow in any precision, products of mean zero.
template <class T>
__global__ void fill_uniform(T* p, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        store_as(2.0f * uniform01(seed, i) - 1.0f, p + i);
}

template <class T>
void fill(T* p, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
    fill_uniform<<<1024, 256, 0, stream>>>(p, n, seed);
    CUBOID_CUDA(cudaGetLastError());
}

}  // namespace cuboid::calibrate
