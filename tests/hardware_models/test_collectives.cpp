#include <catch2/catch.hpp>

#include "hardware_models/collectives.hpp"
#include "hw_test_util.hpp"

using namespace cuboid;
using namespace cuboid::hw;
using namespace cuboid::hw::test;
using sim::OpKind;

namespace {

// NCCL Simple constants (nccl.yaml, hardware.md §6.3): ring base 8.4 us, NVLink step 3.4 us,
// network step 14 us; NVLink payload efficiency 0.8 (nodes.yaml), InfiniBand 0.94.
constexpr double kBase = 8.4e-6, kNvStep = 3.4e-6, kNetStep = 14e-6;
constexpr double kNvLinkEff = 300e9 * 0.80;  // A100 NVLink3 per direction x efficiency

// Plans every transfer with one given plan: simulates an algorithm other than the one chosen.
class FixedPlanner : public sim::TransferPlanner {
public:
    explicit FixedPlanner(sim::TransferPlan plan) : plan_(std::move(plan)) {}
    const sim::TransferPlan& plan(const sim::TransferRequest&) override { return plan_; }

private:
    sim::TransferPlan plan_;
};

// Simulated time within 1 ns of the closed form (integer picoseconds, rounding per phase).
void check_close(Time simulated, double expected_s) {
    CHECK(to_seconds(simulated) == Approx(expected_s).margin(1e-9));
}

}  // namespace

TEST_CASE("collectives: ring all-reduce in one node matches its closed form", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(1), Catalog::load_builtin());
    const Bytes s = gibibytes(0.25);
    for (std::uint32_t p : {2u, 4u, 8u}) {
        INFO("P = " << p);
        const auto ranks = iota_ranks(0, p);
        // Every GPU's up and down NVSwitch link carries one ring hop: busbw = 0.8 x 300 GB/s,
        // t = 2(P-1)/P S / B + base + 2(P-1) steps.
        const double expected = 2.0 * (p - 1) / p * s.value / kNvLinkEff + kBase + 2.0 * (p - 1) * kNvStep;
        CHECK(to_seconds(hw->collective_time(OpKind::AllReduce, s, ranks)) == Approx(expected).epsilon(1e-9));
        check_close(simulate(*hw, collective_program(8, OpKind::AllReduce, s, {ranks})), expected);
    }
}

TEST_CASE("collectives: ring all-gather and reduce-scatter move (P-1)/P of the full buffer", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(1), Catalog::load_builtin());
    const Bytes s = gibibytes(0.5);  // the full gathered buffer (nccl-tests size convention)
    const auto ranks = iota_ranks(0, 8);
    const double expected = 7.0 / 8.0 * s.value / kNvLinkEff + kBase + 7 * kNvStep;
    check_close(simulate(*hw, collective_program(8, OpKind::AllGather, s, {ranks})), expected);
    check_close(simulate(*hw, collective_program(8, OpKind::ReduceScatter, s, {ranks})), expected);
}

TEST_CASE("collectives: send/recv is S/B plus one step", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(2), Catalog::load_builtin());
    const Bytes s = gigabytes(0.1);
    // Inside a node: GPU -> NVSwitch -> GPU at 0.8 x 300 GB/s.
    check_close(simulate(*hw, collective_program(16, OpKind::Send, s, {{2, 5}})),
                s.value / kNvLinkEff + kBase + kNvStep);
    // Across nodes: the HDR NIC is the bottleneck, 0.94 x 25 GB/s (its PCIe link: 0.8 x 31 =
    // 24.8 GB/s); the step is the network's plus 1 leaf switch crossing of 0.13 us.
    check_close(simulate(*hw, collective_program(16, OpKind::Send, s, {{2, 8 + 2}})),
                s.value / (25e9 * 0.94) + kBase + kNetStep + 0.13e-6);
}

TEST_CASE("collectives: a ring exchange moves S from every member to the next at once", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(2), Catalog::load_builtin());
    const Bytes s = gigabytes(0.1);
    // Inside a node every GPU sends S on its own up-link and receives S on its down-link: S/B and
    // one step, the time of one send, however many members.
    for (const std::uint32_t p : {2u, 4u, 8u})
        check_close(simulate(*hw, collective_program(16, OpKind::RingExchange, s, {iota_ranks(0, p)})),
                    s.value / kNvLinkEff + kBase + kNvStep);
    // Across nodes (ring 6, 7, 8, 9): two of the four transfers leave a node, each through its
    // sender's own NIC, so a NIC carries S: the network step and one leaf switch crossing.
    const auto plan = hw->collectives().plan(OpKind::RingExchange, s, iota_ranks(6, 4), 0);
    REQUIRE(plan.plan.phases.size() == 1);
    CHECK(plan.plan.phases[0].flows.size() == 4);
    check_close(simulate(*hw, collective_program(16, OpKind::RingExchange, s, {iota_ranks(6, 4)})),
                s.value / (25e9 * 0.94) + kBase + kNetStep + 0.13e-6);
}

TEST_CASE("collectives: two collectives sharing a NIC each get half of it", "[collectives]") {
    // 2 nodes x 2 GPUs, one NIC per node: groups {0, 2} and {1, 3} both cross both NICs.
    const auto hw = Hardware::build(a100_cluster(2, 2, 1), Catalog::load_builtin());
    const Bytes s = gibibytes(0.25);
    const std::vector<std::uint32_t> a{0, 2}, b{1, 3};
    const auto plan = hw->collectives().plan(OpKind::AllReduce, s, a, 0);
    Time latency{0};
    for (const auto& phase : plan.plan.phases) latency += phase.latency;
    const Time alone = simulate(*hw, collective_program(4, OpKind::AllReduce, s, {a}));
    const Time together = simulate(*hw, collective_program(4, OpKind::AllReduce, s, {a, b}));
    // Max-min fair sharing of the bottleneck: the bandwidth term doubles, the latency does not.
    CHECK(to_seconds(together - latency) == Approx(2.0 * to_seconds(alone - latency)).epsilon(1e-6));
    CHECK(alone - latency > latency);  // the bandwidth term dominates at 256 MiB
}

TEST_CASE("collectives: NCCL-like choice of algorithm by size and placement", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(16), Catalog::load_builtin());
    const auto& model = hw->collectives();
    std::vector<std::uint32_t> one_per_node;
    for (std::uint32_t n = 0; n < 16; ++n) one_per_node.push_back(n * 8);
    // 16 nodes, 1 GPU each. Small: ring latency 8.4 + 30 x 14.x us ~ 430 us against tree
    // 8.4 + 2 x 4 x 14.x ~ 120 us -> tree (hardware.md §6.3 worked example: tree wins small).
    CHECK(model.plan(OpKind::AllReduce, Bytes(1024), one_per_node, 0).algorithm == CollectiveAlgorithm::Tree);
    // Large: the ring puts 2(N-1)/N S = 1.875 S through each NIC, the double binary tree 2 S
    // through interior nodes' NICs -> ring.
    CHECK(model.plan(OpKind::AllReduce, gibibytes(1), one_per_node, 0).algorithm == CollectiveAlgorithm::Ring);
    // One node: only the ring is eligible (NCCL's NVLSTree/tree need several nodes here).
    CHECK(model.eligible(OpKind::AllReduce, iota_ranks(0, 8)).size() == 1);
    // Several GPUs per node on several nodes: hierarchical is a candidate too.
    CHECK(model.eligible(OpKind::AllReduce, iota_ranks(0, 16)).size() == 3);
    // Two full nodes, 1 GiB: the 8-channel tree sends S/8 per NIC against the ring's
    // 2(15/16) S / 8 -> tree (NCCL uses tree on 2 nodes, hardware.md §5.2).
    CHECK(model.plan(OpKind::AllReduce, gibibytes(1), iota_ranks(0, 16), 0).algorithm ==
          CollectiveAlgorithm::Tree);
}

TEST_CASE("collectives: a tree all-reduce gets NCCL's bandwidth factor of its size", "[collectives]") {
    // Two full nodes: the same tree at 16 MiB (factor 0.7, nccl.yaml) and at 2 GiB (past the
    // table, factor 1). The plan's bytes scale with S and its latency does not, so the bandwidth
    // term per byte differs by exactly 1 / 0.7, in the closed form and in the simulation.
    const auto hw = Hardware::build(a100_cluster(2), Catalog::load_builtin());
    const auto ranks = iota_ranks(0, 16);
    const auto per_byte = [&](Bytes s) {
        const auto tree = hw->collectives().build(CollectiveAlgorithm::Tree, OpKind::AllReduce, s, ranks, 0);
        FixedPlanner planner(tree.plan);
        const auto program = collective_program(16, OpKind::AllReduce, s, {ranks});
        const Time simulated = sim::simulate(program, hw->price(program), hw->links(), planner).makespan;
        CHECK(to_seconds(simulated) == Approx(to_seconds(tree.time)).margin(1e-9));
        Time latency{0};
        for (const auto& phase : tree.plan.phases) latency += phase.latency;
        return to_seconds(tree.time - latency) / s.value;
    };
    CHECK(per_byte(Bytes(16.0 * 1024 * 1024)) == Approx(per_byte(gibibytes(2)) / 0.7).epsilon(1e-9));
}

TEST_CASE("collectives: multi-node rings use every NIC of a node", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(2), Catalog::load_builtin());
    const Bytes s = gibibytes(1);
    const auto ring = hw->collectives().build(CollectiveAlgorithm::Ring, OpKind::AllGather, s,
                                              iota_ranks(0, 16), 0);
    // 8 channels, each leaving a node through another member's NIC: per NIC (15/16) S / 8 at
    // 0.94 x 25 GB/s. Latency: base + (15 - 1) x max(3.4, 3.0 overhead) + 1 x (14 + 0.13) us.
    const double expected = 15.0 / 16.0 * s.value / 8.0 / (25e9 * 0.94) + kBase + 14 * kNvStep + kNetStep + 0.13e-6;
    CHECK(to_seconds(ring.time) == Approx(expected).epsilon(1e-9));
    check_close(simulate(*hw, collective_program(16, OpKind::AllGather, s, {iota_ranks(0, 16)})), expected);
}

TEST_CASE("collectives: all-to-all and broadcast", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(1), Catalog::load_builtin());
    const Bytes s = gibibytes(0.125);
    const auto ranks = iota_ranks(0, 8);
    // All-to-all: each GPU sends 7 x S/8 through its up-link and receives as much on its down
    // link: (P-1)/P S at 0.8 x 300 GB/s.
    check_close(simulate(*hw, collective_program(8, OpKind::AllToAll, s, {ranks})),
                7.0 / 8.0 * s.value / kNvLinkEff + kBase + kNvStep);
    // Broadcast chain 0 -> 1 -> ... -> 7: every link once, S at 0.8 x 300 GB/s; 7 steps.
    check_close(simulate(*hw, collective_program(8, OpKind::Broadcast, s, {ranks})),
                s.value / kNvLinkEff + kBase + 7 * kNvStep);
}

TEST_CASE("collectives: plans are cached per group, kind, size and source", "[collectives]") {
    const auto hw = Hardware::build(a100_cluster(1), Catalog::load_builtin());
    const auto program = collective_program(8, OpKind::AllReduce, Bytes(1e6), {iota_ranks(0, 8)});
    auto planner = hw->make_planner(program);
    const sim::TransferRequest r{0, OpKind::AllReduce, Bytes(1e6), 0};
    const sim::TransferPlan* first = &planner->plan(r);
    CHECK(&planner->plan(r) == first);
    CHECK(&planner->plan({0, OpKind::AllReduce, Bytes(2e6), 0}) != first);
}
