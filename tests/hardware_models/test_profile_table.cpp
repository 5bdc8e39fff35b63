// A collective sample's per-size table of measured bus bandwidth (docs/hardware_profile.md):
// exact at the measured sizes, monotone between them, the alpha-beta line outside, and old
// profiles (no table) priced exactly as before.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hardware_models/collectives.hpp"
#include "hardware_models/errors.hpp"
#include "hardware_models/hardware.hpp"
#include "hardware_models/profile.hpp"
#include "hw_test_util.hpp"
#include "tests/scratch_dir.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

constexpr double kMiB = 1048576.0;

// 4 ranks on one node: all-reduce bus bytes = 2 * 3/4 * S = 1.5 S. Table: 40, 100, 150 GB/s at
// 1, 16, 256 MiB; alpha 30 us, fitted 180 GB/s.
const char* kProfile = R"(
metadata: {gpu: a100-sxm-80gb}
collectives:
  - {kind: all-reduce, ranks: 8, nodes: 1, alpha_us: 50, bus_gb_per_s: 200}
  - kind: all-reduce
    ranks: 4
    nodes: 1
    alpha_us: 30
    bus_gb_per_s: 180
    table:
      - {bytes: 1048576, bus_gb_per_s: 40}
      - {bytes: 16777216, bus_gb_per_s: 100}
      - {bytes: 268435456, bus_gb_per_s: 150}
)";

double seconds(const CollectiveCost& c) { return to_seconds(c.latency) + c.bandwidth_seconds; }

// A table point's time: its bus bytes over its bus bandwidth.
double point_time(double bytes, double gbps) { return 1.5 * bytes / (gbps * 1e9); }

const CollectiveSample& four_ranks(const HardwareProfile& p) {
    const CollectiveSample* s = p.collective(sim::OpKind::AllReduce, 4, 1, "ring");
    REQUIRE(s != nullptr);
    return *s;
}

}  // namespace

TEST_CASE("profile table: exact at the measured sizes", "[profile]") {
    const auto p = HardwareProfile::parse(kProfile, "t.yaml");
    const auto& s = four_ranks(p);
    REQUIRE(s.table.size() == 3);
    for (const auto& [bytes, gbps] : {std::pair{1.0, 40.0}, {16.0, 100.0}, {256.0, 150.0}})
        CHECK(seconds(s.cost(bytes * kMiB)) == Approx(point_time(bytes * kMiB, gbps)).epsilon(1e-9));
    // 1 MiB takes 1.5 MiB / 40 GB/s = 39.3 us > alpha: the latency stays alpha.
    CHECK(to_seconds(s.cost(kMiB).latency) == Approx(30e-6).epsilon(1e-9));
}

TEST_CASE("profile table: time grows monotonically between points, on a power law", "[profile]") {
    const auto p = HardwareProfile::parse(kProfile, "t.yaml");
    const auto& s = four_ranks(p);
    double previous = 0.0;
    for (double b = kMiB; b <= 256 * kMiB; b *= 1.05) {
        const double t = seconds(s.cost(b));
        CHECK(t >= previous);
        previous = t;
    }
    // Midway in log size between 1 and 16 MiB (4 MiB) the time is the geometric mean of the two.
    const double expected = std::sqrt(point_time(kMiB, 40) * point_time(16 * kMiB, 100));
    CHECK(seconds(s.cost(4 * kMiB)) == Approx(expected).epsilon(1e-9));
}

TEST_CASE("profile table: outside the measured sizes the fitted line takes over", "[profile]") {
    const auto p = HardwareProfile::parse(kProfile, "t.yaml");
    const auto& s = four_ranks(p);
    // Above 256 MiB: the last point's time plus the extra bus bytes at the fitted 180 GB/s.
    const double last = point_time(256 * kMiB, 150);
    CHECK(seconds(s.cost(1024 * kMiB)) == Approx(last + 1.5 * 768 * kMiB / 180e9).epsilon(1e-9));
    // Below 1 MiB: falls from the first point at 180 GB/s, never below alpha (30 us).
    // 0.5 MiB: 39.3 us - 1.5 * 0.5 MiB / 180 GB/s = 34.95 us; 1 KiB: 30.6 us.
    const double first = point_time(kMiB, 40);
    CHECK(seconds(s.cost(0.5 * kMiB)) == Approx(first - 1.5 * 0.5 * kMiB / 180e9).epsilon(1e-9));
    CHECK(seconds(s.cost(1024.0)) == Approx(first - 1.5 * (kMiB - 1024.0) / 180e9).epsilon(1e-9));
    // With alpha above the first point's time (60 us > 39.3 us) the time stays at that point's.
    auto slow = s;
    slow.alpha = microseconds(60);
    CHECK(seconds(slow.cost(1024.0)) == Approx(first).epsilon(1e-9));
    CHECK(to_seconds(slow.cost(1024.0).latency) == Approx(first).epsilon(1e-6));
}

TEST_CASE("profile table: a sample without one prices as alpha + bus bytes / busbw", "[profile]") {
    const auto p = HardwareProfile::parse(kProfile, "t.yaml");
    const CollectiveSample* s = p.collective(sim::OpKind::AllReduce, 8, 1, "ring");
    REQUIRE(s != nullptr);
    CHECK(s->table.empty());
    const double bytes = 64 * kMiB;
    const CollectiveCost c = s->cost(bytes);
    CHECK(c.latency == microseconds(50));
    CHECK(c.bandwidth_seconds == bytes * bus_factor(sim::OpKind::AllReduce, 8) / (200.0 * 1e9));
}

TEST_CASE("profile table: sizes must ascend", "[profile]") {
    const std::string bad = R"(
collectives:
  - kind: all-reduce
    ranks: 2
    alpha_us: 30
    bus_gb_per_s: 180
    table: [{bytes: 2048, bus_gb_per_s: 40}, {bytes: 1024, bus_gb_per_s: 50}]
)";
    CHECK_THROWS_AS(HardwareProfile::parse(bad, "t.yaml"), InputError);
}

TEST_CASE("profile table: the planner prices a one-node group from the table", "[profile]") {
    const std::string path = cuboid::scratch::file("cuboid-profile-table-test.yaml").string();
    std::ofstream(path) << kProfile;
    auto spec = test::a100_cluster(2);
    spec.profile = path;
    const auto hw = Hardware::build(spec, Catalog::load_builtin());
    // 4 GPUs of node 0 at 16 MiB: the table point, 1.5 * 16 MiB / 100 GB/s = 251.7 us.
    const double t = to_seconds(hw->collective_time(sim::OpKind::AllReduce, Bytes(16 * kMiB), test::iota_ranks(0, 4)));
    CHECK(t == Approx(point_time(16 * kMiB, 100)).epsilon(1e-6));
    // 4 GPUs over two nodes (2 + 2): the node-local sample does not apply; the model prices it.
    const std::vector<std::uint32_t> spread{6, 7, 8, 9};
    const double across = to_seconds(hw->collective_time(sim::OpKind::AllReduce, Bytes(16 * kMiB), spread));
    CHECK(std::abs(across - t) / t > 0.01);
    std::filesystem::remove(path);
}
