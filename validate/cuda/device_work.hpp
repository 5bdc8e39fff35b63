// The GPU work of one compute op, behind a C++17 interface (the CUDA sources are C++17, the
// program types C++20): cuBLASLt GEMMs with the op's shape and precision, and memory-bound
// kernels (calibrate/cuda/memory_kernels.cuh, the kernels the calibration measured) sized to move
// the op's bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace cuboid::validate::gpu {

// sim::Precision in its order: Fp32, Tf32, Fp16, Bf16, Fp8.
enum class GemmPrecision { Fp32, Tf32, Fp16, Bf16, Fp8 };

// sim::OpKind's memory-bound kinds, each with the calibrated kernel that stands for it.
enum class MemoryKernel { LayerNorm, Softmax, Activation, Dropout, Elementwise, Copy, Optimizer };

// Enqueues `kernel` so that it moves `bytes` of HBM traffic (at the kernel's bytes per element),
// reading `in` and writing `out` (each at least `bytes` long).
void launch_memory_kernel(MemoryKernel kernel, double bytes, void* in, void* out, int sms, cudaStream_t stream);

// Fills `bytes` at `p` with values in [-1, 1) as bf16 (data-dependent power draw, see
// calibrate/cuda/device_buffer.cuh).
void fill_random(void* p, std::size_t bytes, std::uint64_t seed, cudaStream_t stream);

// cuBLASLt matmuls, layout TN as in the calibration; the descriptors and the heuristic's algorithm
// are prepared once per (precision, shape) and reused.
class GemmRunner {
public:
    GemmRunner();
    ~GemmRunner();
    GemmRunner(const GemmRunner&) = delete;
    GemmRunner& operator=(const GemmRunner&) = delete;

    // D[m x n] = A[m x k] B[k x n], `batch` times with strided operands. Throws std::runtime_error
    // when cuBLASLt has no algorithm for the shape.
    void run(GemmPrecision p, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, const void* a,
             const void* b, void* d, cudaStream_t stream);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cuboid::validate::gpu
