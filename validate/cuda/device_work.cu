#include "validate/cuda/device_work.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "calibrate/cuda/device_buffer.cuh"
#include "calibrate/cuda/kernel_bytes.hpp"
#include "calibrate/cuda/lt_matmul.cuh"
#include "calibrate/cuda/memory_kernels.cuh"

namespace cuboid::validate::gpu {
namespace {

namespace k = calibrate::kernels;

constexpr int kThreads = 256;
constexpr int kRowLength = 4096;               // layer norm / softmax rows: <= 8 * 256 * kRowVecs

int blocks_for(std::size_t items, int sms) {
    return int(std::max<std::size_t>(1, std::min<std::size_t>((items + kThreads - 1) / kThreads, std::size_t(sms) * 32)));
}

// sim::Precision, in GemmPrecision's order, as the calibration names it.
const char* precision_name(GemmPrecision p) {
    switch (p) {
        case GemmPrecision::Fp32: return "fp32";
        case GemmPrecision::Tf32: return "tf32";
        case GemmPrecision::Fp16: return "fp16";
        case GemmPrecision::Bf16: return "bf16";
        case GemmPrecision::Fp8: return "fp8";
    }
    return "bf16";
}

}  // namespace

// The products of the calibration (calibrate/cuda/lt_matmul.cuh), prepared once per shape.
struct GemmRunner::Impl {
    calibrate::LtSession lt;
    std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, calibrate::LtMatmul> cache;
};

GemmRunner::GemmRunner() : impl_(std::make_unique<Impl>()) {}

GemmRunner::~GemmRunner() = default;

void GemmRunner::run(GemmPrecision p, std::int64_t m, std::int64_t n, std::int64_t kk, std::int64_t batch,
                     const void* a, const void* b, void* d, cudaStream_t stream) {
    const auto key = std::make_tuple(int(p), m, n, kk, batch);
    auto it = impl_->cache.find(key);
    if (it == impl_->cache.end()) {
        auto product = calibrate::LtMatmul::prepare(impl_->lt, calibrate::lt_types(precision_name(p)), m, n, kk, batch);
        if (!product)
            throw std::runtime_error("cuBLASLt has no algorithm for a GEMM " + std::to_string(m) + "x" + std::to_string(n) +
                                     "x" + std::to_string(kk) + " batch " + std::to_string(batch));
        it = impl_->cache.emplace(key, std::move(*product)).first;
    }
    it->second.run(impl_->lt, a, b, d, stream);
}

void launch_memory_kernel(MemoryKernel kernel, double bytes, void* in, void* out, int sms, cudaStream_t s) {
    using bf16 = k::bf16;
    namespace kb = calibrate::kernel_bytes;
    // Elements at the kernel's HBM bytes per element (kernel_bytes.hpp), rounded down to whole
    // 8-element vectors; at least one vector.
    auto elements = [&](double per_element) {
        return std::max<std::size_t>(8, std::size_t(bytes / per_element) / 8 * 8);
    };
    auto* x = static_cast<bf16*>(in);
    auto* y = static_cast<bf16*>(out);
    switch (kernel) {
        case MemoryKernel::LayerNorm:
        case MemoryKernel::Softmax: {
            const std::size_t n = elements(kernel == MemoryKernel::LayerNorm ? kb::kLayerNorm : kb::kSoftmax);
            const int cols = int(std::min<std::size_t>(n, kRowLength));
            const int rows = int(std::max<std::size_t>(1, n / std::size_t(cols)));
            if (kernel == MemoryKernel::LayerNorm) k::layer_norm<<<rows, kThreads, 0, s>>>(x, x, x, y, cols);
            else k::softmax<<<rows, kThreads, 0, s>>>(x, y, cols);
            break;
        }
        case MemoryKernel::Activation: {
            const std::size_t n8 = elements(kb::kGelu) / 8;
            k::gelu<<<blocks_for(n8, sms), kThreads, 0, s>>>(x, y, n8);
            break;
        }
        case MemoryKernel::Dropout: {
            const std::size_t n = elements(kb::kDropout);
            k::dropout<<<blocks_for(n / 8, sms), kThreads, 0, s>>>(x, y, reinterpret_cast<std::uint8_t*>(y + n), n / 8,
                                                                    0.1f, 7);
            break;
        }
        case MemoryKernel::Elementwise: {
            const std::size_t n = elements(kb::kResidualAdd);
            k::residual_add<<<blocks_for(n / 8, sms), kThreads, 0, s>>>(x, x + n, y, n / 8);
            break;
        }
        case MemoryKernel::Copy: {
            // One 16-byte step copies 8 elements.
            const std::size_t n16 = std::max<std::size_t>(1, std::size_t(bytes / (8 * kb::kCopy)));
            k::copy<<<blocks_for(n16, sms), kThreads, 0, s>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out), n16);
            break;
        }
        case MemoryKernel::Optimizer: {
            const std::size_t n = std::max<std::size_t>(1, std::size_t(bytes / kb::kAdam));
            float* w = static_cast<float*>(in);
            float* m = static_cast<float*>(out);
            k::adam<<<blocks_for(n, sms), kThreads, 0, s>>>(w, w + n, m, m + n, n, 1e-4f, 0.9f, 0.95f, 1e-8f);
            break;
        }
    }
    CUBOID_CUDA(cudaGetLastError());
}

void fill_random(void* p, std::size_t bytes, std::uint64_t seed, cudaStream_t stream) {
    calibrate::fill(static_cast<__nv_bfloat16*>(p), bytes / 2, seed, stream);
}

}  // namespace cuboid::validate::gpu
