#include <catch2/catch.hpp>

#include "calibrate/fit/plan.hpp"
#include "calibrate/fit/tables.hpp"

using namespace cuboid;
using namespace cuboid::calibrate;

TEST_CASE("calibration plan: groups across nodes under mpirun", "[calibrate]") {
    // 4 nodes of 8 GPUs: n in {2, 4}, each as one GPU per node (a data-parallel rail) and as all
    // 8 GPUs of the n nodes.
    const auto groups = node_groups_for(4, 8);
    REQUIRE(groups.size() == 4);
    CHECK(groups[0].nodes == 2);
    CHECK(groups[0].ranks() == 2);
    CHECK(groups[1].ranks() == 16);
    CHECK(groups[3].ranks() == 32);
    // 6 nodes: powers of two, then the whole job.
    const auto six = node_groups_for(6, 1);
    REQUIRE(six.size() == 3);  // one GPU per node only: 2, 4, 6 nodes
    CHECK(six.back().nodes == 6);
    // One node: nothing across nodes, and the plan says nothing about it.
    CHECK(node_groups_for(1, 8).empty());
    CHECK(make_plan({false, 8, true, 1}).node_groups.empty());
    const Plan two = make_plan({true, 8, true, 2});
    CHECK(describe(two).find("across nodes") != std::string::npos);
    // Measuring across nodes costs time: the estimate grows.
    CHECK(estimate_seconds(two) > estimate_seconds(make_plan({true, 8, true, 1})));
}

TEST_CASE("collective fits keep node-local and cross-node groups of one size apart", "[calibrate]") {
    // Same kind and group size, two placements with different bandwidths (300 GB/s NVLink,
    // 25 GB/s across nodes): two fits, each recovering its own bandwidth.
    std::vector<CollectivePoint> points;
    for (double b = 1 << 20; b <= 1 << 30; b *= 4) {
        points.push_back({"all-reduce", 8, b, 10e-6 + 1.75 * b / 300e9, 1});
        points.push_back({"all-reduce", 8, b, 30e-6 + 1.75 * b / 25e9, 2});
    }
    const auto fits = collective_fits(points);
    REQUIRE(fits.size() == 2);
    for (const auto& f : fits) {
        const double expected = f.sample.nodes == 1 ? 300.0 : 25.0;
        CHECK(f.sample.bus_gb_per_s == Approx(expected).epsilon(1e-3));
    }
}

TEST_CASE("calibration plan: Adam is measured beyond the other kernels' sizes, up to a stage's state",
          "[calibrate]") {
    const Plan full = make_plan({false, 8, true, 1});
    REQUIRE(full.optimizer_bytes.size() == 2);
    // Larger than every other kernel's size: these are the points the other sizes cannot give.
    for (double b : full.optimizer_bytes) CHECK(b > full.memory_bytes.back());
    // 64 GiB moved at 28 bytes per parameter keeps 16 per parameter: 36.6 GiB of state, which
    // fits in half of an 80 GB GPU (the sweep skips sizes that do not).
    CHECK(full.optimizer_bytes.back() / 28.0 * 16.0 < 0.5 * 80e9);
    CHECK(describe(full).find("adam also at 16 GiB to 64 GiB") != std::string::npos);
    CHECK(make_plan({true, 8, true, 1}).optimizer_bytes.empty());  // --quick stays quick
}
