#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/hardware.hpp"
#include "hardware_models/profile.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

// A 2x2x2 grid of bf16 GEMM measurements, rate = 100 + 10*i + 20*j + 40*l TFLOP/s for
// m = 1024 * 4^i, n = 1024 * 4^j, k = 1024 * 4^l; and the keys a newer tool might add.
const char* kProfile = R"(
format: cuboid-hardware-profile/1
metadata: {gpu: a100-sxm-80gb, date: 2026-01-01, tool_version: 9}
future_section: {anything: [1, 2]}
kernel_launch_us: 3.0
gemm:
  - {precision: bf16, m: 1024, n: 1024, k: 1024, tflops: 100}
  - {precision: bf16, m: 4096, n: 1024, k: 1024, tflops: 110}
  - {precision: bf16, m: 1024, n: 4096, k: 1024, tflops: 120}
  - {precision: bf16, m: 4096, n: 4096, k: 1024, tflops: 130}
  - {precision: bf16, m: 1024, n: 1024, k: 4096, tflops: 140}
  - {precision: bf16, m: 4096, n: 1024, k: 4096, tflops: 150}
  - {precision: bf16, m: 1024, n: 4096, k: 4096, tflops: 160}
  - {precision: bf16, m: 4096, n: 4096, k: 4096, tflops: 170, repeats: 50}
memory:
  - {kind: elementwise, bytes: 1.0e6, gb_per_s: 500}
  - {kind: elementwise, bytes: 1.0e8, gb_per_s: 1500}
collectives:
  - {kind: all-reduce, ranks: 8, alpha_us: 50, bus_gb_per_s: 200}
)";

}  // namespace

TEST_CASE("profile: GEMM rates interpolate in log space inside the grid", "[profile]") {
    const HardwareProfile p = HardwareProfile::parse(kProfile, "p.yaml");
    using P = sim::Precision;
    CHECK(p.gemm_rate(P::Bf16, 4096, 1024, 4096)->value == Approx(150e12));  // measured point
    // 2048 is halfway between 1024 and 4096 in log space on every axis: the mean of the corners.
    CHECK(p.gemm_rate(P::Bf16, 2048, 2048, 2048)->value == Approx(135e12));
    // Halfway on m only: between 100 and 110.
    CHECK(p.gemm_rate(P::Bf16, 2048, 1024, 1024)->value == Approx(105e12));
    // Outside the grid: the nearest measured shape in log space (4096^3 for 16384^3).
    CHECK(p.gemm_rate(P::Bf16, 16384, 16384, 16384)->value == Approx(170e12));
    CHECK(!p.gemm_rate(P::Fp16, 1024, 1024, 1024));  // precision not measured
    // Memory: halfway in log(bytes) between 1 MB and 100 MB is 10 MB: 1000 GB/s.
    CHECK(p.memory_rate(sim::OpKind::LayerNorm, Bytes(1e7))->value == Approx(1000e9));
    CHECK(p.metadata.at("gpu") == "a100-sxm-80gb");
}

TEST_CASE("profile: memory rates of a kind, from samples in any order", "[profile]") {
    // layer-norm measured at 1e8, 1e6, 1e7 bytes (not sorted); elementwise as the fallback.
    const HardwareProfile p = HardwareProfile::parse(R"(
memory:
  - {kind: layer-norm, bytes: 1.0e8, gb_per_s: 1200}
  - {kind: elementwise, bytes: 1.0e6, gb_per_s: 50}
  - {kind: layer-norm, bytes: 1.0e6, gb_per_s: 400}
  - {kind: layer-norm, bytes: 1.0e7, gb_per_s: 1000}
)", "m.yaml");
    using K = sim::OpKind;
    CHECK(p.memory_rate(K::LayerNorm, Bytes(1e7))->value == Approx(1000e9));  // a measured size
    // sqrt(1e6 * 1e7) is halfway in log(bytes) between its neighbours 400 and 1000: 700.
    CHECK(p.memory_rate(K::LayerNorm, Bytes(std::sqrt(1e13)))->value == Approx(700e9));
    // sqrt(1e7 * 1e8): between 1000 and 1200, not across to the 1e6 sample.
    CHECK(p.memory_rate(K::LayerNorm, Bytes(std::sqrt(1e15)))->value == Approx(1100e9));
    CHECK(p.memory_rate(K::LayerNorm, Bytes(10.0))->value == Approx(400e9));    // clamped below
    CHECK(p.memory_rate(K::LayerNorm, Bytes(1e12))->value == Approx(1200e9));   // and above
    CHECK(p.memory_rate(K::Softmax, Bytes(1e7))->value == Approx(50e9));        // unmeasured kind
}

TEST_CASE("profile: wrong types are input errors with the key", "[profile]") {
    const std::string bad = "gemm:\n  - {precision: bf16, m: 1024, n: 1024, k: 1024, tflops: fast}\n";
    try {
        (void)HardwareProfile::parse(bad, "p.yaml");
        FAIL("expected InputError");
    } catch (const InputError& e) {
        CHECK(e.where().key == "gemm[0].tflops");
        CHECK(e.where().line == 2);
    }
    CHECK_THROWS_AS(HardwareProfile::parse("collectives:\n  - {kind: all-sum, ranks: 2, alpha_us: 1, "
                                           "bus_gb_per_s: 1}\n", "p.yaml"),
                    InputError);
}

TEST_CASE("profile: a cluster's profile replaces the catalog curves and collective costs", "[profile]") {
    const std::string path = cuboid::scratch::file("cuboid-profile-test.yaml").string();
    std::ofstream(path) << kProfile;
    ClusterSpec spec;
    spec.gpu = "a100-sxm-80gb";
    spec.profile = path;
    const auto hw = Hardware::build(spec, Catalog::load_builtin());
    std::remove(path.c_str());
    sim::Op op;
    op.kind = sim::OpKind::Gemm;
    op.shape = {4096, 4096, 4096, 1};
    op.flops = Flops(2.0 * 4096.0 * 4096.0 * 4096.0);
    // Measured 170 TFLOP/s at 4096^3 and a 3 us launch from the profile.
    CHECK(to_seconds(hw->compute_duration(op)) == Approx(op.flops.value / 170e12 + 3e-6).epsilon(1e-6));
    // All-reduce on 8 ranks: alpha 50 us + 2(8-1)/8 S / 200 GB/s (bus bandwidth convention).
    const std::vector<std::uint32_t> ranks{0, 1, 2, 3, 4, 5, 6, 7};
    const double s = 256e6;
    CHECK(to_seconds(hw->collective_time(sim::OpKind::AllReduce, Bytes(s), ranks)) ==
          Approx(50e-6 + 1.75 * s / 200e9).epsilon(1e-6));
}

TEST_CASE("profile: measured on another GPU is an input error", "[profile]") {
    const std::string path = cuboid::scratch::file("cuboid-profile-test2.yaml").string();
    std::ofstream(path) << kProfile;
    ClusterSpec spec;
    spec.gpu = "h100-sxm-80gb";
    spec.profile = path;
    CHECK_THROWS_AS(Hardware::build(spec, Catalog::load_builtin()), InputError);
    std::remove(path.c_str());
}
