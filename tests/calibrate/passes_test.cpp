#include <catch2/catch.hpp>

#include <stdexcept>

#include "calibrate/fit/passes.hpp"

using namespace cuboid::calibrate;

namespace {

// One pass: a GEMM, a memory kernel, a host copy and the launch figure, with given seconds.
Measurements pass(double gemm_s, double memory_s, double launch_s) {
    Measurements m;
    m.device.name = "test GPU";
    m.launch_seconds = launch_s;
    m.gemm.push_back({"bf16", 128, 128, 128, 1, gemm_s});
    m.memory.push_back({"gelu", 1048576.0, memory_s});
    m.copies.push_back({"h2d", 4096.0, 2e-6});
    m.notes.push_back("collectives: skipped");
    return m;
}

}  // namespace

TEST_CASE("calibration passes: each point keeps the median of its passes", "[calibrate]") {
    // The GEMM was hit by an interference in pass 2 (10x), the memory kernel in pass 3: the
    // median of three is the undisturbed time in both, and the launch figure is merged likewise.
    const Measurements m = median_of_passes({pass(6e-6, 4e-6, 4.2e-6), pass(60e-6, 4.1e-6, 4.4e-6),
                                             pass(6.2e-6, 40e-6, 4.3e-6)});
    REQUIRE(m.gemm.size() == 1);
    CHECK(m.gemm[0].seconds == Approx(6.2e-6));
    CHECK(m.memory[0].seconds == Approx(4.1e-6));
    CHECK(*m.launch_seconds == Approx(4.3e-6));
    CHECK(m.copies[0].seconds == Approx(2e-6));
    CHECK(m.notes.size() == 1);  // notes once, not once per pass
    CHECK(m.device.name == "test GPU");
    // One pass is returned as it was.
    CHECK(median_of_passes({pass(6e-6, 4e-6, 4.2e-6)}).gemm[0].seconds == Approx(6e-6));
}

TEST_CASE("calibration passes: passes over different points are refused", "[calibrate]") {
    Measurements other = pass(6e-6, 4e-6, 4.2e-6);
    other.gemm[0].k = 256;
    CHECK_THROWS_AS(median_of_passes({pass(6e-6, 4e-6, 4.2e-6), other}), std::logic_error);
    Measurements shorter = pass(6e-6, 4e-6, 4.2e-6);
    shorter.memory.clear();
    CHECK_THROWS_AS(median_of_passes({pass(6e-6, 4e-6, 4.2e-6), shorter}), std::logic_error);
    CHECK_THROWS_AS(median_of_passes({}), std::logic_error);
}
