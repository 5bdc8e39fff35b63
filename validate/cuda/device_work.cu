#include "validate/cuda/device_work.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "calibrate/cuda/device_buffer.cuh"
#include "calibrate/cuda/memory_kernels.cuh"

namespace cuboid::validate::gpu {
namespace {

namespace k = calibrate::kernels;
using calibrate::DeviceBuffer;

constexpr int kThreads = 256;
constexpr std::size_t kWorkspace = 32u << 20;  // as in the calibration (cuBLAS's advice on Hopper)
constexpr int kRowLength = 4096;               // layer norm / softmax rows: <= 8 * 256 * kRowVecs

int blocks_for(std::size_t items, int sms) {
    return int(std::max<std::size_t>(1, std::min<std::size_t>((items + kThreads - 1) / kThreads, std::size_t(sms) * 32)));
}

void lt_check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + ": cuBLAS status " + std::to_string(int(s)));
}
#define CUBOID_LT(call) lt_check((call), #call)

struct Types {
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    bool scaled;
};

Types types_of(GemmPrecision p) {
    switch (p) {
        case GemmPrecision::Fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, false};
        case GemmPrecision::Tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false};
        case GemmPrecision::Fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
        case GemmPrecision::Bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
        case GemmPrecision::Fp8: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, true};
    }
    return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
}

cublasLtMatrixLayout_t layout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t batch) {
    cublasLtMatrixLayout_t l = nullptr;
    CUBOID_LT(cublasLtMatrixLayoutCreate(&l, t, std::uint64_t(rows), std::uint64_t(cols), rows));
    if (batch > 1) {
        const int count = int(batch);
        const std::int64_t stride = rows * cols;
        CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return l;
}

// One prepared product: descriptors and the heuristic's first algorithm.
struct Prepared {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct GemmRunner::Impl {
    cublasLtHandle_t handle = nullptr;
    DeviceBuffer workspace{kWorkspace};
    DeviceBuffer one{sizeof(float)};  // fp8 scale factors: 1.0
    std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, Prepared> cache;

    Prepared prepare(GemmPrecision p, std::int64_t m, std::int64_t n, std::int64_t kk, std::int64_t batch) {
        const Types t = types_of(p);
        Prepared g;
        CUBOID_LT(cublasLtMatmulDescCreate(&g.op, t.compute, CUDA_R_32F));
        const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CUBOID_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        CUBOID_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        if (t.scaled) {
            const void* scale = one.as();
            CUBOID_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale));
            CUBOID_LT(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale, sizeof scale));
        }
        // Column-major: A stored k x m (used transposed), B k x n, D m x n.
        g.a = layout(t.ab, kk, m, batch);
        g.b = layout(t.ab, kk, n, batch);
        g.d = layout(t.cd, m, n, batch);
        cublasLtMatmulPreference_t pref = nullptr;
        CUBOID_LT(cublasLtMatmulPreferenceCreate(&pref));
        const std::uint64_t ws = kWorkspace;
        CUBOID_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        cublasLtMatmulHeuristicResult_t best{};
        int found = 0;
        const cublasStatus_t s =
            cublasLtMatmulAlgoGetHeuristic(handle, g.op, g.a, g.b, g.d, g.d, pref, 1, &best, &found);
        cublasLtMatmulPreferenceDestroy(pref);
        if (s != CUBLAS_STATUS_SUCCESS || found == 0)
            throw std::runtime_error("cuBLASLt has no algorithm for a GEMM " + std::to_string(m) + "x" + std::to_string(n) +
                                     "x" + std::to_string(kk) + " batch " + std::to_string(batch));
        g.algo = best.algo;
        return g;
    }

    ~Impl() {
        for (auto& [key, g] : cache) {
            cublasLtMatrixLayoutDestroy(g.a);
            cublasLtMatrixLayoutDestroy(g.b);
            cublasLtMatrixLayoutDestroy(g.d);
            cublasLtMatmulDescDestroy(g.op);
        }
        if (handle) cublasLtDestroy(handle);
    }
};

GemmRunner::GemmRunner() : impl_(std::make_unique<Impl>()) {
    CUBOID_LT(cublasLtCreate(&impl_->handle));
    const float one = 1.0f;
    CUBOID_CUDA(cudaMemcpy(impl_->one.as(), &one, sizeof one, cudaMemcpyHostToDevice));
}

GemmRunner::~GemmRunner() = default;

void GemmRunner::run(GemmPrecision p, std::int64_t m, std::int64_t n, std::int64_t kk, std::int64_t batch,
                     const void* a, const void* b, void* d, cudaStream_t stream) {
    const auto key = std::make_tuple(int(p), m, n, kk, batch);
    auto it = impl_->cache.find(key);
    if (it == impl_->cache.end()) it = impl_->cache.emplace(key, impl_->prepare(p, m, n, kk, batch)).first;
    const Prepared& g = it->second;
    const float alpha = 1.0f, beta = 0.0f;
    CUBOID_LT(cublasLtMatmul(impl_->handle, g.op, &alpha, a, g.a, b, g.b, &beta, d, g.d, d, g.d, &g.algo,
                             impl_->workspace.as(), kWorkspace, stream));
}

void launch_memory_kernel(MemoryKernel kernel, double bytes, void* in, void* out, int sms, cudaStream_t s) {
    using bf16 = k::bf16;
    // Elements at the kernel's HBM bytes per element (memory_kernels.cuh), rounded down to whole
    // 8-element vectors; at least one vector.
    auto elements = [&](double per_element) {
        return std::max<std::size_t>(8, std::size_t(bytes / per_element) / 8 * 8);
    };
    auto* x = static_cast<bf16*>(in);
    auto* y = static_cast<bf16*>(out);
    switch (kernel) {
        case MemoryKernel::LayerNorm:
        case MemoryKernel::Softmax: {
            const std::size_t n = elements(4.0);
            const int cols = int(std::min<std::size_t>(n, kRowLength));
            const int rows = int(std::max<std::size_t>(1, n / std::size_t(cols)));
            if (kernel == MemoryKernel::LayerNorm) k::layer_norm<<<rows, kThreads, 0, s>>>(x, x, x, y, cols);
            else k::softmax<<<rows, kThreads, 0, s>>>(x, y, cols);
            break;
        }
        case MemoryKernel::Activation: {
            const std::size_t n8 = elements(4.0) / 8;
            k::gelu<<<blocks_for(n8, sms), kThreads, 0, s>>>(x, y, n8);
            break;
        }
        case MemoryKernel::Dropout: {
            const std::size_t n = elements(5.0);
            k::dropout<<<blocks_for(n / 8, sms), kThreads, 0, s>>>(x, y, reinterpret_cast<std::uint8_t*>(y + n), n / 8,
                                                                    0.1f, 7);
            break;
        }
        case MemoryKernel::Elementwise: {
            const std::size_t n = elements(6.0);
            k::residual_add<<<blocks_for(n / 8, sms), kThreads, 0, s>>>(x, x + n, y, n / 8);
            break;
        }
        case MemoryKernel::Copy: {
            const std::size_t n16 = std::max<std::size_t>(1, std::size_t(bytes / 32.0));  // 2 x 16 bytes per step
            k::copy<<<blocks_for(n16, sms), kThreads, 0, s>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out), n16);
            break;
        }
        case MemoryKernel::Optimizer: {
            const std::size_t n = std::max<std::size_t>(1, std::size_t(bytes / 28.0));
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
