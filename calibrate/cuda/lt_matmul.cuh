// One cuBLASLt matmul, prepared once and run many times: the layout "TN" (A transposed,
// column-major), the one layout fp8 allows, used for every precision so that the precisions
// compare like for like. The calibration times these products (gemm_sweep.cu) and the validation
// executor runs them for the program's GEMMs (validate/cuda/device_work.cu): both must issue the
// same call, or the calibrated rates would not describe what the executor runs.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "calibrate/cuda/device_buffer.cuh"

namespace cuboid::calibrate {

inline void lt_check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + ": cuBLAS status " + std::to_string(int(s)));
}
#define CUBOID_LT(call) ::cuboid::calibrate::lt_check((call), #call)

constexpr std::size_t kLtWorkspace = 32u << 20;  // cuBLAS's recommended workspace on Hopper

struct LtTypes {
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    std::size_t ab_bytes, cd_bytes;
    bool scaled;  // fp8: A/B scale pointers
};

// "fp32", "tf32", "fp16", "bf16" or "fp8" (fp8 inputs, bf16 output).
inline LtTypes lt_types(const std::string& p) {
    if (p == "fp32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, false};
    if (p == "tf32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, false};
    if (p == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, false};
    if (p == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, false};
    if (p == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, true};
    throw std::invalid_argument("no cuBLASLt types for precision " + p);
}

// A cuBLASLt handle with its workspace and the fp8 scale factor 1.0, for one device.
class LtSession {
public:
    LtSession() {
        CUBOID_LT(cublasLtCreate(&handle_));
        const float one = 1.0f;
        CUBOID_CUDA(cudaMemcpy(one_.as(), &one, sizeof one, cudaMemcpyHostToDevice));
    }
    ~LtSession() { cublasLtDestroy(handle_); }
    LtSession(const LtSession&) = delete;
    LtSession& operator=(const LtSession&) = delete;

    cublasLtHandle_t handle() const { return handle_; }
    void* workspace() const { return workspace_.as(); }
    const void* one() const { return one_.as(); }

private:
    cublasLtHandle_t handle_ = nullptr;
    DeviceBuffer workspace_{kLtWorkspace};
    DeviceBuffer one_{sizeof(float)};
};

// D[m x n] = A[m x k] B[k x n], `batch` times with strided operands, with the heuristic's first
// algorithm.
class LtMatmul {
public:
    // Empty when cuBLASLt offers no algorithm for the shape.
    static std::optional<LtMatmul> prepare(const LtSession& lt, const LtTypes& t, std::int64_t m, std::int64_t n,
                                           std::int64_t k, std::int64_t batch) {
        LtMatmul g;
        cublasLtMatmulDesc_t op = nullptr;
        CUBOID_LT(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F));
        g.op_.reset(op);
        const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CUBOID_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        CUBOID_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        if (t.scaled) {
            const void* one = lt.one();
            CUBOID_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof one));
            CUBOID_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof one));
        }
        // Column-major: A is stored k x m (used transposed), B k x n, D m x n.
        g.a_ = layout(t.ab, k, m, batch);
        g.b_ = layout(t.ab, k, n, batch);
        g.d_ = layout(t.cd, m, n, batch);
        cublasLtMatmulPreference_t pref_raw = nullptr;
        CUBOID_LT(cublasLtMatmulPreferenceCreate(&pref_raw));
        const Preference pref(pref_raw);
        const std::uint64_t ws = kLtWorkspace;
        CUBOID_LT(cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        cublasLtMatmulHeuristicResult_t best{};
        int found = 0;
        if (cublasLtMatmulAlgoGetHeuristic(lt.handle(), op, g.a_.get(), g.b_.get(), g.d_.get(), g.d_.get(), pref_raw, 1,
                                           &best, &found) != CUBLAS_STATUS_SUCCESS ||
            found == 0)
            return std::nullopt;
        g.algo_ = best.algo;
        return g;
    }

    void run(const LtSession& lt, const void* a, const void* b, void* d, cudaStream_t stream) const {
        const float alpha = 1.0f, beta = 0.0f;
        CUBOID_LT(cublasLtMatmul(lt.handle(), op_.get(), &alpha, a, a_.get(), b, b_.get(), &beta, d, d_.get(), d,
                                 d_.get(), &algo_, lt.workspace(), kLtWorkspace, stream));
    }

private:
    struct Deleter {
        void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
        void operator()(cublasLtMatrixLayoutOpaque_t* d) const { cublasLtMatrixLayoutDestroy(d); }
        void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { cublasLtMatmulPreferenceDestroy(d); }
    };
    using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, Deleter>;
    using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, Deleter>;
    using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, Deleter>;

    static Layout layout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t batch) {
        cublasLtMatrixLayout_t l = nullptr;
        CUBOID_LT(cublasLtMatrixLayoutCreate(&l, t, std::uint64_t(rows), std::uint64_t(cols), rows));
        Layout owned(l);
        if (batch > 1) {
            const int count = int(batch);
            const std::int64_t stride = rows * cols;
            CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                       sizeof stride));
        }
        return owned;
    }

    OpDesc op_;
    Layout a_, b_, d_;
    cublasLtMatmulAlgo_t algo_{};
};

}  // namespace cuboid::calibrate
