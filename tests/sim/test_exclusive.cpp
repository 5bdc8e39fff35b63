// Transfers on links of their own run as one event (sim/exclusive.hpp) with the times of the
// flow network, to the picosecond; anything that shares a link, or may overlap, still shares.
#include <catch2/catch.hpp>

#include <cmath>
#include <deque>
#include <optional>
#include <string>

#include "sim/executor.hpp"
#include "sim/flow_network.hpp"
#include "sim/op_order.hpp"
#include "sim/symmetry.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

SimResult run(const TestProgram& p, TablePlanner& planner, std::span<const Link> links, bool exclusive) {
    SimOptions options;
    options.exclusive_transfers = exclusive;
    options.lockstep_runs = false;  // one event per transfer, as counted below (test_lockstep.cpp)
    return simulate(p.program, p.costs, links, planner, {}, options);
}

Flow flow(Bytes bytes, std::vector<LinkUse> uses) { return Flow{std::move(uses), bytes}; }

}  // namespace

TEST_CASE("a solo flow's closed form is the completion the network announces", "[sim][exclusive]") {
    // Odd sizes and bandwidths, so that the rounding up to a picosecond matters.
    const std::vector<Link> links{{"a", BytesPerSecond(3.3e9)}, {"b", BytesPerSecond(1.7e9)}};
    for (const double bytes : {1.0, 1000.3, 7.77e6, 1.234567e9}) {
        FlowNetwork net(links);
        const std::vector<LinkUse> uses{{0, 2.0}, {1, 1.0}};
        const FlowId id = net.start(uses, Bytes(bytes), Time(5), 0);
        REQUIRE(net.completions().size() == 1);
        const auto solo = net.solo_duration(uses, Bytes(bytes));
        REQUIRE(solo.has_value());
        CHECK(net.completions().front().time == Time(5) + *solo);
        // The tighter link is a (3.3e9 / 2 < 1.7e9): the time is bytes / 1.65e9, rounded up.
        CHECK(std::abs(static_cast<double>(solo->value) - bytes / 1.65e9 * 1e12) <= 1.0);
        net.finish(id, net.completions().front().time);
    }
    FlowNetwork net(links);
    CHECK(net.solo_duration({}, Bytes(100.0)) == Time(0));  // a local copy
    const std::vector<LinkUse> twice{{0, 1.0}, {0, 1.0}};
    CHECK_FALSE(net.solo_duration(twice, Bytes(100.0)).has_value());
}

TEST_CASE("tensor rings on links of their own take one event per instance and the network's times",
          "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    // Two groups {0,1} and {2,3}, each with its own two links; three all-reduces per rank on one
    // stream, with compute between. A plan of two phases: 0.7 us, then two disjoint flows (one
    // with weight 2); then 0.3 us and a flow of odd size.
    TestProgram p;
    const auto l = p.add_list();
    std::uint32_t prev = p.compute(l, "fwd", us * 1.3);
    for (int i = 0; i < 3; ++i) {
        const auto ar = p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(4096.0), stream::kTensorComm,
                               comm_class::kTensor, {prev});
        prev = p.compute(l, "mlp", us * 0.9, stream::kCompute, OpCategory::Compute, {ar});
    }
    const auto g0 = p.group({0, 1}, "tp");
    const auto g1 = p.group({2, 3}, "tp");
    for (const auto g : {g0, g0, g1, g1}) p.rank(l, {g});
    const std::vector<Link> links{{"g0.a", BytesPerSecond(3.3e9)}, {"g0.b", BytesPerSecond(1.7e9)},
                                  {"g1.a", BytesPerSecond(2.9e9)}, {"g1.b", BytesPerSecond(1.1e9)}};
    TablePlanner planner;
    for (const auto g : {g0, g1}) {
        const LinkId a = 2 * g;
        const LinkId b = a + 1;
        TransferPlan plan;
        plan.phases.push_back({nanoseconds(700.0), {flow(Bytes(4096.0), {{a, 2.0}}), flow(Bytes(3000.5), {{b, 1.0}})}});
        plan.phases.push_back({nanoseconds(300.0), {flow(Bytes(777.7), {{a, 1.0}, {b, 1.0}})}});
        planner.plans[g] = plan;
    }
    const SimResult network = run(p, planner, links, false);
    const SimResult shortcut = run(p, planner, links, true);
    require_same_outcome(shortcut, network);
    // Per instance the network takes 2 PhaseDue and 3 FlowDue events, the shortcut one event:
    // 2 groups x 3 instances x (5 - 1) fewer.
    CHECK(network.events - shortcut.events == 2 * 3 * 4);
    // Rank 2's finish, derived: 1.3 us of compute, then 3 x (all-reduce + 0.9 us). Phase 1 lasts
    // 0.7 us + max(4096 B at 2.9e9 / 2, 3000.5 B at 1.1e9); phase 2 0.3 us + 777.7 B at 1.1e9 (the
    // tighter link), each flow rounded up to a whole picosecond.
    const auto ps = [](double bytes, double rate) { return Time(static_cast<std::int64_t>(std::ceil(bytes / rate / 1e-12))); };
    const Time ar = nanoseconds(700.0) + std::max(ps(4096.0, 2.9e9 / 2.0), ps(3000.5, 1.1e9)) + nanoseconds(300.0) +
                    ps(777.7, 1.1e9);
    CHECK(shortcut.ranks[2].finish == us * 1.3 + (ar + us * 0.9) * 3);
}

TEST_CASE("a link shared with another group's flow is still shared", "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    // Group 0 runs over links 0 and 1, group 1 over link 1 only, group 2 over link 2 alone; all
    // start at 0 with 1000 B. Links of 1 GB/s.
    TestProgram p;
    const auto l = p.add_list();
    p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1000.0), stream::kTensorComm, comm_class::kTensor);
    const auto g0 = p.group({0, 1}, "tp");
    const auto g1 = p.group({2, 3}, "tp");
    const auto g2 = p.group({4, 5}, "tp");
    for (const auto g : {g0, g0, g1, g1, g2, g2}) p.rank(l, {g});
    const std::vector<Link> links{{"x", gigabytes_per_second(1.0)}, {"shared", gigabytes_per_second(1.0)},
                                  {"own", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g0] = one_flow_plan(Time(0), Bytes(1000.0), {0, 1});
    planner.plans[g1] = one_flow_plan(Time(0), Bytes(1000.0), {1});
    planner.plans[g2] = one_flow_plan(Time(0), Bytes(1000.0), {2});
    const SimResult network = run(p, planner, links, false);
    const SimResult shortcut = run(p, planner, links, true);
    require_same_outcome(shortcut, network);
    // Groups 0 and 1 split the shared link: 0.5 GB/s each, 1000 B in 2 us. Group 2 alone: 1 us.
    CHECK(shortcut.ranks[0].finish == us * 2);
    CHECK(shortcut.ranks[2].finish == us * 2);
    CHECK(shortcut.ranks[4].finish == us * 1);
    // Only group 2 takes the shortcut: 1 event instead of PhaseDue + FlowDue.
    CHECK(network.events - shortcut.events == 1);
}

TEST_CASE("instances of one group that may overlap share its links", "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    // Both members post ar0 on the tensor stream and ar1 on the data stream, at once: the two
    // instances of the group run together on its one link (1 GB/s).
    TestProgram p;
    const auto l = p.add_list();
    p.comm(l, OpKind::AllReduce, "ar0", 0, Bytes(1000.0), stream::kTensorComm, comm_class::kTensor);
    p.comm(l, OpKind::AllReduce, "ar1", 0, Bytes(1000.0), stream::kDataComm, comm_class::kData);
    const auto g = p.group({0, 1}, "tp");
    p.rank(l, {g});
    p.rank(l, {g});
    const std::vector<Link> links{{"own", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g] = one_flow_plan(Time(0), Bytes(1000.0), {0});
    const SimResult network = run(p, planner, links, false);
    const SimResult shortcut = run(p, planner, links, true);
    require_same_outcome(shortcut, network);
    // Two flows of 1000 B at 0.5 GB/s each: both end at 2 us (alone, each would take 1 us).
    CHECK(shortcut.makespan == us * 2);
    CHECK(network.events == shortcut.events);
}

TEST_CASE("flows of one phase that share a link among themselves take the network", "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto l = p.add_list();
    p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1000.0), stream::kTensorComm, comm_class::kTensor);
    const auto g = p.group({0, 1}, "tp");
    p.rank(l, {g});
    p.rank(l, {g});
    const std::vector<Link> links{{"own", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g].phases.push_back({Time(0), {flow(Bytes(1000.0), {{0, 1.0}}), flow(Bytes(1000.0), {{0, 1.0}})}});
    const SimResult network = run(p, planner, links, false);
    const SimResult shortcut = run(p, planner, links, true);
    require_same_outcome(shortcut, network);
    CHECK(shortcut.makespan == us * 2);  // two flows at 0.5 GB/s
    CHECK(network.events == shortcut.events);
}

namespace {

// Nodes of two GPUs, each GPU with an up and a down link to its node's switch: a collective of a
// node's pair is a ring over those four links, alone on them.
class NodePlanner final : public TransferPlanner {
public:
    NodePlanner(const Program& program, std::uint32_t gpus) : program_(program) {
        for (std::uint32_t g = 0; g < gpus; ++g) {
            links.push_back({"up" + std::to_string(g), BytesPerSecond(3.3e9)});
            links.push_back({"down" + std::to_string(g), BytesPerSecond(3.3e9)});
        }
    }
    std::vector<Link> links;

    std::optional<std::vector<LinkId>> route(std::uint32_t a, std::uint32_t b) override {
        if (a == b) return std::vector<LinkId>{};
        return std::vector<LinkId>{2 * a, 2 * b + 1};
    }
    const TransferPlan& plan(const TransferRequest& q) override {
        const auto& ranks = program_.groups[q.group].ranks;
        Flow f;
        f.bytes = q.bytes;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            const auto hop = route(ranks[i], ranks[(i + 1) % ranks.size()]);  // kept: the loop outlives a temporary
            for (const LinkId l : *hop) f.links.push_back({l, 1.0});
        }
        TransferPlan p;
        p.phases.push_back(TransferPhase{nanoseconds(900.0), {f}});
        return store_.emplace_back(std::move(p));
    }

private:
    const Program& program_;
    std::deque<TransferPlan> store_;
};

}  // namespace

TEST_CASE("a folded run takes the shortcut on the quotient links with the full run's times", "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    // Four nodes of two GPUs: tensor groups {0,1} .. {6,7}, four all-reduces each, with compute
    // between. Shifting by one node maps the program and the network onto themselves.
    TestProgram p;
    const auto l = p.add_list();
    std::uint32_t prev = p.compute(l, "fwd", us * 2.1);
    for (int i = 0; i < 4; ++i) {
        const auto ar = p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1.0e6 + i), stream::kTensorComm,
                               comm_class::kTensor, {prev});
        prev = p.compute(l, "mlp", us * 1.7, stream::kCompute, OpCategory::Compute, {ar});
    }
    for (std::uint32_t n = 0; n < 4; ++n) p.group({2 * n, 2 * n + 1}, "tp");
    for (std::uint32_t r = 0; r < 8; ++r) p.rank(l, {r / 2});
    RankMap shift(8);
    for (std::uint32_t r = 0; r < 8; ++r) shift[r] = (r + 2) % 8;

    NodePlanner planner(p.program, 8);
    const auto simulate_with = [&](bool fold, bool exclusive) {
        SimOptions options;
        options.fold = fold;
        options.fold_generators.push_back(shift);
        options.exclusive_transfers = exclusive;
        options.lockstep_runs = false;
        return simulate(p.program, p.costs, planner.links, planner, {}, options);
    };
    const SimResult full = simulate_with(false, false);
    const SimResult folded_network = simulate_with(true, false);
    const SimResult folded = simulate_with(true, true);
    REQUIRE(folded.folded);
    require_same_outcome(folded, full, false);
    require_same_outcome(folded, folded_network);
    // The folded run keeps one node (fold factor 4): its 4 all-reduces take 1 event each instead
    // of PhaseDue + FlowDue.
    CHECK(folded.fold_factor == 4.0);
    CHECK(folded_network.events - folded.events == 4);
}

TEST_CASE("a link shared with a group that has a member in common is exclusive while their ops are ordered",
          "[sim][exclusive]") {
    const Time us = microseconds(1.0);
    // Tensor groups {0,1}, {2,3}; data groups {0,2}, {1,3}. Every rank: c0 -> AR1 -> c1, then AR2
    // and the data reduction both after c1 (they may overlap), then c2 after AR2. The data group
    // {0,2} crosses links 1 and 2 of the tensor groups; {1,3} has link 4 alone.
    TestProgram p;
    const auto l = p.add_list();
    const auto c0 = p.compute(l, "c0", us);
    const auto ar1 = p.comm(l, OpKind::AllReduce, "ar1", 0, Bytes(2000.0), stream::kTensorComm, comm_class::kTensor, {c0});
    const auto c1 = p.compute(l, "c1", us, stream::kCompute, OpCategory::Compute, {ar1});
    const auto ar2 = p.comm(l, OpKind::AllReduce, "ar2", 0, Bytes(2000.0), stream::kTensorComm, comm_class::kTensor, {c1});
    p.comm(l, OpKind::AllReduce, "dp", 1, Bytes(3000.0), stream::kDataComm, comm_class::kData, {c1});
    p.compute(l, "c2", us, stream::kCompute, OpCategory::Compute, {ar2});
    const auto [t0, t1, d0, d1] = tensor_data_grid(p, l);
    std::vector<Link> links;
    for (const char* name : {"l0", "l1", "l2", "l3", "l4"}) links.push_back({name, gigabytes_per_second(1.0)});
    TablePlanner planner;
    planner.plans[t0] = one_flow_plan(us, Bytes(2000.0), {0, 1});
    planner.plans[t1] = one_flow_plan(us, Bytes(2000.0), {2, 3});
    planner.plans[d0] = one_flow_plan(us, Bytes(3000.0), {1, 2});
    planner.plans[d1] = one_flow_plan(us, Bytes(3000.0), {4});
    const SimResult network = run(p, planner, links, false);
    const SimResult shortcut = run(p, planner, links, true);
    require_same_outcome(shortcut, network);
    // AR1 ends before any rank posts the reduction: one event instead of a latency and a flow
    // event, in both tensor groups; so does the reduction of {1,3}, on a link of its own. AR2 and
    // the reduction of {0,2} may overlap (they do: both start after c1), and share links 1 and 2.
    CHECK(network.events - shortcut.events == 3);
    // Rank 0: c0, AR1 alone (1 us + 2 us), c1, then AR2 beside the reduction on link 1 at half
    // rate each, until AR2's 2000 B are through (4 us): 1 + 3 + 1 + (1 + 4) + 1.
    CHECK(shortcut.ranks[0].finish == us * 11.0);
}

TEST_CASE("streams ordered with a communication op follow from the dependencies alone", "[sim][exclusive]") {
    // a (compute) -> x (tensor stream) -> b (compute); d (data stream) after a only.
    TestProgram p;
    const auto l = p.add_list();
    const auto a = p.compute(l, "a", microseconds(1.0));
    const auto x = p.comm(l, OpKind::AllReduce, "x", 0, Bytes(1.0), stream::kTensorComm, comm_class::kTensor, {a});
    p.compute(l, "b", microseconds(1.0), stream::kCompute, OpCategory::Compute, {x});
    const auto d = p.comm(l, OpKind::AllReduce, "d", 1, Bytes(1.0), stream::kDataComm, comm_class::kData, {a});
    const std::vector<StreamMask> ordered = ordered_streams(p.program.op_lists[l]);
    const auto bit = [](StreamId s) { return static_cast<StreamMask>(1U << s); };
    // x: a finishes before it, b starts after it: the compute stream is ordered; d may run
    // beside it. A stream without ops is ordered with anything.
    CHECK((ordered[x] & bit(stream::kCompute)) != 0);
    CHECK((ordered[x] & bit(stream::kDataComm)) == 0);
    CHECK((ordered[x] & bit(stream::kPipelineSend)) != 0);
    // d: x may run beside it, and so may b (which only follows x).
    CHECK((ordered[d] & bit(stream::kTensorComm)) == 0);
    CHECK((ordered[d] & bit(stream::kCompute)) == 0);
    CHECK(ordered[a] == 0);  // compute ops are not looked at
}
