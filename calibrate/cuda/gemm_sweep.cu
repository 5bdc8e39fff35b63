// GEMM throughput through cuBLASLt over the plan's grid, per precision, and the strided batched
// GEMMs of attention. Layout "TN" (A transposed, column-major), the one layout fp8 allows, used
// for every precision so the precisions compare like for like.
#include <cublasLt.h>

#include <algorithm>
#include <memory>
#include <string>

#include "calibrate/cuda/device_buffer.cuh"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/cuda/timing.cuh"

namespace cuboid::calibrate {
namespace {

void lt_check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + ": cuBLAS status " + std::to_string(int(s)));
}
#define CUBOID_LT(call) lt_check((call), #call)

constexpr std::size_t kWorkspace = 32u << 20;  // cuBLAS's recommended workspace on Hopper

struct Types {
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    std::size_t ab_bytes, cd_bytes;
    bool scaled;  // fp8: A/B scale pointers
};

Types types_of(const std::string& p) {
    if (p == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, false};
    if (p == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, false};
    if (p == "tf32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, false};
    return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, true};  // fp8 in, bf16 out
}

struct DescDeleter {
    void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
    void operator()(cublasLtMatrixLayoutOpaque_t* d) const { cublasLtMatrixLayoutDestroy(d); }
    void operator()(cublasLtMatmulPreferenceOpaque_t* d) const { cublasLtMatmulPreferenceDestroy(d); }
};
using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

Layout layout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t batch) {
    cublasLtMatrixLayout_t l = nullptr;
    CUBOID_LT(cublasLtMatrixLayoutCreate(&l, t, std::uint64_t(rows), std::uint64_t(cols), rows));
    if (batch > 1) {
        const int count = int(batch);
        const std::int64_t stride = rows * cols;
        CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        CUBOID_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    return Layout(l);
}

struct Context {
    cublasLtHandle_t handle = nullptr;
    cudaStream_t stream = nullptr;
    DeviceBuffer workspace{kWorkspace};
    DeviceBuffer one{sizeof(float)};  // fp8 scale factors: 1.0
};

// Seconds per product of shape g (all `batch` products for a batched one); < 0 when cuBLASLt
// offers no algorithm for it.
double time_gemm(Context& c, const Plan& plan, const Types& t, const GemmDims& g, const DeviceBuffer& a,
                 const DeviceBuffer& b, const DeviceBuffer& d) {
    cublasLtMatmulDesc_t raw = nullptr;
    CUBOID_LT(cublasLtMatmulDescCreate(&raw, t.compute, CUDA_R_32F));
    const OpDesc op(raw);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CUBOID_LT(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBOID_LT(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (t.scaled) {
        const void* one = c.one.as();
        CUBOID_LT(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof one));
        CUBOID_LT(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof one));
    }
    // Column-major: A is stored k x m (used transposed), B k x n, D m x n.
    const Layout la = layout(t.ab, g.k, g.m, g.batch), lb = layout(t.ab, g.k, g.n, g.batch),
                 ld = layout(t.cd, g.m, g.n, g.batch);
    cublasLtMatmulPreference_t pref_raw = nullptr;
    CUBOID_LT(cublasLtMatmulPreferenceCreate(&pref_raw));
    const Preference pref(pref_raw);
    const std::uint64_t ws = kWorkspace;
    CUBOID_LT(cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(c.handle, raw, la.get(), lb.get(), ld.get(), ld.get(), pref_raw, 1, &best,
                                       &found) != CUBLAS_STATUS_SUCCESS || found == 0)
        return -1.0;
    const float alpha = 1.0f, beta = 0.0f;
    auto run = [&] {
        CUBOID_LT(cublasLtMatmul(c.handle, raw, &alpha, a.as(), la.get(), b.as(), lb.get(), &beta, d.as(), ld.get(),
                                 d.as(), ld.get(), &best.algo, c.workspace.as(), kWorkspace, c.stream));
    };
    return time_per_call(c.stream, plan, run);
}

void fill_operand(const Types& t, const DeviceBuffer& buf, std::uint64_t seed, cudaStream_t s) {
    const std::size_t n = buf.bytes() / t.ab_bytes;
    if (t.ab == CUDA_R_16F) fill(buf.as<__half>(), n, seed, s);
    else if (t.ab == CUDA_R_16BF) fill(buf.as<__nv_bfloat16>(), n, seed, s);
    else if (t.ab == CUDA_R_32F) fill(buf.as<float>(), n, seed, s);
    else fill(buf.as<__nv_fp8_e4m3>(), n, seed, s);
}

// Largest operand sizes (bytes) over the shapes, at 4 bytes per element (the widest type).
void max_bytes(const std::vector<GemmDims>& shapes, std::size_t& a, std::size_t& b, std::size_t& d) {
    for (const auto& g : shapes) {
        a = std::max(a, std::size_t(4 * g.k * g.m * g.batch));
        b = std::max(b, std::size_t(4 * g.k * g.n * g.batch));
        d = std::max(d, std::size_t(4 * g.m * g.n * g.batch));
    }
}

void sweep(Context& c, const Plan& plan, const std::vector<std::string>& precisions,
           const std::vector<GemmDims>& shapes, const DeviceBuffer* buf[3], std::vector<GemmPoint>& out,
           Measurements& m) {
    for (const auto& p : precisions) {
        const Types t = types_of(p);
        fill_operand(t, *buf[0], 1, c.stream);
        fill_operand(t, *buf[1], 2, c.stream);
        int skipped = 0;
        for (const auto& g : shapes) {
            const double s = time_gemm(c, plan, t, g, *buf[0], *buf[1], *buf[2]);
            if (s < 0) ++skipped;
            else out.push_back({p, g.m, g.n, g.k, g.batch, s});
        }
        if (skipped)
            m.notes.push_back(p + ": cuBLASLt offered no algorithm for " + std::to_string(skipped) + " shapes");
    }
}

}  // namespace

void measure_gemms(int device, const Plan& plan, Measurements& out) {
    CUBOID_CUDA(cudaSetDevice(device));
    Context c;
    CUBOID_LT(cublasLtCreate(&c.handle));
    CUBOID_CUDA(cudaStreamCreate(&c.stream));
    const float one = 1.0f;
    CUBOID_CUDA(cudaMemcpy(c.one.as(), &one, sizeof one, cudaMemcpyHostToDevice));
    std::vector<std::string> precisions;
    for (const auto& p : plan.gemm_precisions) {
        if (p == "fp8" && out.device.cc_major * 10 + out.device.cc_minor < 89) {
            out.notes.push_back("fp8: skipped: compute capability " + std::to_string(out.device.cc_major) + "." +
                                std::to_string(out.device.cc_minor) + " < 8.9");
            continue;
        }
        precisions.push_back(p);
    }
    std::size_t a = 0, b = 0, d = 0;
    max_bytes(plan.gemm, a, b, d);
    max_bytes(plan.batched, a, b, d);
    {
        const DeviceBuffer ba(a), bb(b), bd(d);
        const DeviceBuffer* bufs[3] = {&ba, &bb, &bd};
        sweep(c, plan, precisions, plan.gemm, bufs, out.gemm, out);
        sweep(c, plan, plan.batched_precisions, plan.batched, bufs, out.batched_gemm, out);
    }
    cudaStreamDestroy(c.stream);
    cublasLtDestroy(c.handle);
}

}  // namespace cuboid::calibrate
