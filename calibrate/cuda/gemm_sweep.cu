// GEMM throughput through cuBLASLt over the plan's grid, per precision, and the strided batched
// GEMMs of attention. Layout "TN" (A transposed, column-major), the one layout fp8 allows, used
// for every precision so the precisions compare like for like.
#include <algorithm>
#include <string>

#include "calibrate/cuda/lt_matmul.cuh"
#include "calibrate/cuda/sweeps.hpp"
#include "calibrate/cuda/timing.cuh"

namespace cuboid::calibrate {
namespace {

struct Context {
    LtSession lt;
    cudaStream_t stream = nullptr;
};

// Seconds per product of shape g (all `batch` products for a batched one); < 0 when cuBLASLt
// offers no algorithm for it.
double time_gemm(Context& c, const Plan& plan, const LtTypes& t, const GemmDims& g, const DeviceBuffer& a,
                 const DeviceBuffer& b, const DeviceBuffer& d) {
    const std::optional<LtMatmul> product = LtMatmul::prepare(c.lt, t, g.m, g.n, g.k, g.batch);
    if (!product) return -1.0;
    return time_per_call(c.stream, plan, [&] { product->run(c.lt, a.as(), b.as(), d.as(), c.stream); });
}

void fill_operand(const LtTypes& t, const DeviceBuffer& buf, std::uint64_t seed, cudaStream_t s) {
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
        const LtTypes t = lt_types(p);
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
    CUBOID_CUDA(cudaStreamCreate(&c.stream));
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
}

}  // namespace cuboid::calibrate
