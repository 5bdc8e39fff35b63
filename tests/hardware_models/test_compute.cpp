#include <catch2/catch.hpp>

#include <cmath>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/errors.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

sim::Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, sim::Precision p = sim::Precision::Bf16) {
    sim::Op op;
    op.kind = sim::OpKind::Gemm;
    op.precision = p;
    op.shape = sim::PackedGemmShape::of({m, n, k, 1});
    op.flops = Flops(2.0 * double(m) * double(n) * double(k));
    op.bytes = Bytes(2.0 * double(m * k + k * n + m * n));  // 16-bit operands and result
    return op;
}

}  // namespace

TEST_CASE("efficiency curve: log interpolation, monotone between monotone points, clamped", "[compute]") {
    const EfficiencyCurve c{{{1e9, 0.2}, {1e10, 0.6}, {1e11, 0.8}}};
    // Halfway in log(size) between 1e9 and 1e10 is sqrt(1e9 * 1e10): halfway in efficiency, 0.4.
    CHECK(c.at(std::sqrt(1e9 * 1e10)) == Approx(0.4));
    CHECK(c.at(1e10) == Approx(0.6));
    double previous = 0.0;
    for (double s = 1e8; s < 1e12; s *= 1.1) {
        CHECK(c.at(s) >= previous);
        previous = c.at(s);
    }
    CHECK(c.at(1.0) == Approx(0.2));   // clamped below the first point
    CHECK(c.at(1e15) == Approx(0.8));  // and above the last
}

TEST_CASE("compute: a large GEMM runs at peak x measured efficiency", "[compute]") {
    const Catalog catalog = Catalog::load_builtin();
    const GpuSpec& a100 = catalog.gpu("a100-sxm-80gb");
    const ComputeModel model(a100, nullptr);
    // 16384^3: 8.796e12 FLOPs, at the last point of the A100 curve (cuBLASLt 256.5 of 312 =
    // 0.822, hardware.md §2.2); square multiples of 128: no tile padding. Compute-bound: the
    // 1.6 GB of operands take 1.6e9 / (2.039e12 * 0.79) ~ 1 ms, far below 34 ms of math.
    const sim::Op op = gemm(16384, 16384, 16384);
    const double expected = 2.0 * std::pow(16384.0, 3) / (312e12 * 0.822) + 2e-6;  // + launch
    CHECK(to_seconds(model.duration(op)) == Approx(expected).epsilon(1e-6));
}

TEST_CASE("compute: a memory-bound op is priced by HBM bandwidth", "[compute]") {
    const Catalog catalog = Catalog::load_builtin();
    const GpuSpec& a100 = catalog.gpu("a100-sxm-80gb");
    const ComputeModel model(a100, nullptr);
    sim::Op ln;
    ln.kind = sim::OpKind::LayerNorm;
    ln.bytes = Bytes(1e9);
    ln.flops = Flops(5e8);
    // 1 GB is past the curve's last point (100 MB): STREAM copy fraction 0.79 of 2.039 TB/s
    // (hardware.md §2.3); the 5e8 FLOPs take 26 us at the 19.5 TFLOP/s vector peak, less than
    // the 621 us of memory traffic.
    const double expected = 1e9 / (2.039e12 * 0.79) + 2e-6;
    CHECK(to_seconds(model.duration(ln)) == Approx(expected).epsilon(1e-6));
    // Ten times fewer bytes (100 MB, the curve's last point) take ten times less, plus launch.
    ln.bytes = Bytes(1e8);
    CHECK(to_seconds(model.duration(ln)) == Approx(1e8 / (2.039e12 * 0.79) + 2e-6).epsilon(1e-6));
}

TEST_CASE("compute: skinny GEMMs pay tile padding", "[compute]") {
    // 128 x 128 output tiles, 64-deep K slices: m = 64 fills half a tile row.
    CHECK(ComputeModel::shape_factor({64, 4096, 4096, 1}) == Approx(0.5));
    CHECK(ComputeModel::shape_factor({128, 4096, 4096, 1}) == Approx(1.0));
    CHECK(ComputeModel::shape_factor({192, 4096, 4096, 1}) == Approx(192.0 / 256.0));
    CHECK(ComputeModel::shape_factor({4096, 4096, 96, 1}) == Approx(96.0 / 128.0));
    // The skinny A100 GEMM of hardware.md §2.2 (802816x192x768, measured 0.51 of peak): curve at
    // 2.37e11 FLOPs x 192/256 lands within 0.1 of the measurement.
    const Catalog catalog = Catalog::load_builtin();
    const GpuSpec& a100 = catalog.gpu("a100-sxm-80gb");
    const ComputeModel model(a100, nullptr);
    const sim::Op op = gemm(802816, 192, 768, sim::Precision::Fp16);
    CHECK(model.gemm_rate(op).value / 312e12 == Approx(0.51).margin(0.1));
}

TEST_CASE("compute: a batched GEMM is one kernel sized by all its products", "[compute]") {
    const Catalog catalog = Catalog::load_builtin();
    const GpuSpec& h100 = catalog.gpu("h100-sxm-80gb");
    const ComputeModel model(h100, nullptr);
    sim::Op one = gemm(2048, 2048, 128);
    sim::Op batched = one;
    batched.kind = sim::OpKind::BatchedGemm;
    batched.shape.batch = 64;
    batched.flops = one.flops * 64.0;
    // Same shape factor, larger size on the curve: a higher rate than one product alone.
    CHECK(model.gemm_rate(batched).value > model.gemm_rate(one).value);
    CHECK(model.gemm_rate(batched).value ==
          Approx(989.4e12 * h100.gemm_efficiency.at(batched.flops.value)));
}

TEST_CASE("compute: fp8 on a GPU without FP8 tensor cores is an input error", "[compute]") {
    const Catalog c = Catalog::load_builtin();
    const ComputeModel a100(c.gpu("a100-sxm-80gb"), nullptr);
    CHECK_THROWS_AS(a100.duration(gemm(4096, 4096, 4096, sim::Precision::Fp8)), InputError);
    // H100 has FP8 and its own FP8 curve: 16384^3 at 1377.3 of 1978.9 (0.696, hardware.md §2.2).
    const ComputeModel h100(c.gpu("h100-sxm-80gb"), nullptr);
    const sim::Op op = gemm(16384, 16384, 16384, sim::Precision::Fp8);
    CHECK(h100.gemm_rate(op).value == Approx(1978.9e12 * 0.696).epsilon(1e-3));
}

TEST_CASE("compute: communication ops cost nothing on the compute stream", "[compute]") {
    const Catalog catalog = Catalog::load_builtin();
    const ComputeModel model(catalog.gpu("a100-sxm-80gb"), nullptr);
    sim::Op ar;
    ar.kind = sim::OpKind::AllReduce;
    ar.bytes = Bytes(1e9);
    CHECK(model.duration(ar) == kTimeZero);
}
