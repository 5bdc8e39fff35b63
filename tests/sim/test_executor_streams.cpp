#include <catch2/catch.hpp>

#include "sim/executor.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

SimResult run(const TestProgram& p, TablePlanner& planner, std::span<const Link> links, Recorder& rec, bool merge) {
    SimObserver* observers[] = {&rec};
    SimOptions options;
    options.merge_compute_chains = merge;
    return simulate(p.program, p.costs, links, planner, observers, options);
}

}  // namespace

TEST_CASE("ops of a stream run in issue order without overlap; streams overlap", "[sim][executor]") {
    const bool merge = GENERATE(false, true);
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto l = p.add_list();
    const auto a = p.compute(l, "a", us * 3);
    const auto b = p.compute(l, "b", us * 5);
    const auto c = p.compute(l, "c", us * 2);
    const auto d = p.compute(l, "d", us * 4, 1);
    const auto e = p.compute(l, "e", us * 1, 1, OpCategory::Compute, {b});
    const auto f = p.compute(l, "f", us * 1, 0, OpCategory::Compute, {e});
    p.rank(l);
    TablePlanner planner;
    Recorder rec;
    const SimResult r = run(p, planner, {}, rec, merge);

    // Stream 0 back to back: a [0,3], b [3,8], c [8,10]; f waits for e (below) and c: [10,11].
    CHECK(rec.at(0, a).started == Time(0));
    CHECK(rec.at(0, b).started == us * 3);
    CHECK(rec.at(0, c).started == us * 8);
    CHECK(rec.at(0, c).finished == us * 10);
    // Stream 1 runs beside it: d [0,4] overlaps a and b; e needs b (ends at 8): [8,9].
    CHECK(rec.at(0, d).started == Time(0));
    CHECK(rec.at(0, d).finished == us * 4);
    CHECK(rec.at(0, e).started == us * 8);
    CHECK(rec.at(0, f).started == us * 10);
    CHECK(r.makespan == us * 11);
    for (const auto& [key, t] : rec.ops) {
        CHECK(t.starts == 1);
        CHECK(t.finishes == 1);
    }
    // Busy compute stream: 3 + 5 + 2 + 1 = 11 us, no gap.
    CHECK(r.ranks[0].breakdown.compute == us * 11);
    CHECK(sum(r.ranks[0].breakdown) == r.ranks[0].finish);
}

TEST_CASE("a collective starts only when its last member posts it", "[sim][executor]") {
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto g = p.group({0, 1, 2}, "tp");
    const std::int64_t work[] = {1, 2, 5};  // microseconds of compute before the all-reduce
    for (int i = 0; i < 3; ++i) {
        const auto l = p.add_list();
        const auto c = p.compute(l, "fwd", us * work[i]);
        p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1000.0), stream::kTensorComm, comm_class::kTensor, {c});
        p.rank(l, {g});
    }
    // One link of 1 GB/s: 1000 B take 1 us, after a 1 us latency.
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g] = one_flow_plan(us, Bytes(1000.0), {0});
    Recorder rec;
    const SimResult r = run(p, planner, links, rec, true);

    // Posted at 1, 2 and 5 us; everyone starts when the slowest posts (5 us) and ends at
    // 5 + 1 (latency) + 1 (1000 B at 1 GB/s) = 7 us.
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
        CHECK(rec.at(rank, 1).posted == us * work[rank]);
        CHECK(rec.at(rank, 1).started == us * 5);
        CHECK(rec.at(rank, 1).finished == us * 7);
        CHECK(r.ranks[rank].finish == us * 7);
    }
    const auto made = instance_requests(planner, p.program);
    REQUIRE(made.size() == 1);
    CHECK(made[0].kind == OpKind::AllReduce);
    CHECK(r.flows == 1);
    // Rank 0: compute 1 us; idle 1..7 us, of which the transfer moved data during 5..7: tensor
    // comm exposed 2 us, bubble (waiting for rank 2) 4 us.
    const RankBreakdown& b = r.ranks[0].breakdown;
    CHECK(b.compute == us * 1);
    CHECK(exposed(b, comm_class::kTensor) == us * 2);
    CHECK(b.bubble == us * 4);
    CHECK(sum(b) == r.ranks[0].finish);
}

TEST_CASE("concurrent transfers of independent groups share a common link", "[sim][executor]") {
    TestProgram p;
    const auto l = p.add_list();
    p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1e6), stream::kDataComm, comm_class::kData);
    const auto g0 = p.group({0, 1}, "dp");
    const auto g1 = p.group({2, 3}, "dp");
    for (const auto g : {g0, g0, g1, g1}) p.rank(l, {g});
    const std::vector<Link> links{{"spine", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g0] = one_flow_plan(Time(0), Bytes(1e6), {0});
    planner.plans[g1] = one_flow_plan(Time(0), Bytes(1e6), {0});
    Recorder rec;
    const SimResult r = run(p, planner, links, rec, true);
    // Two flows of 1e6 B on one 1e9 B/s link: 0.5e9 B/s each, 2 ms.
    CHECK(r.makespan == to_time(1e6 / 0.5e9));
    CHECK(r.flows == 2);
    // Nothing computes: the whole iteration is exposed data-parallel communication.
    CHECK(exposed(r.ranks[3].breakdown, comm_class::kData) == r.makespan);
}

TEST_CASE("a fast member may post the next instance before a slow one posts the current", "[sim][executor]") {
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto g = p.group({0, 1}, "tp");
    const auto fast = p.add_list();
    p.comm(fast, OpKind::AllReduce, "ar0", 0, Bytes(100.0), stream::kTensorComm, comm_class::kTensor);
    p.comm(fast, OpKind::AllReduce, "ar1", 0, Bytes(200.0), stream::kDataComm, comm_class::kTensor);
    const auto slow = p.add_list();
    const auto w = p.compute(slow, "work", us * 5);
    const auto ar0 = p.comm(slow, OpKind::AllReduce, "ar0", 0, Bytes(100.0), stream::kTensorComm,
                            comm_class::kTensor, {w});
    p.comm(slow, OpKind::AllReduce, "ar1", 0, Bytes(200.0), stream::kDataComm, comm_class::kTensor, {ar0});
    p.rank(fast, {g});
    p.rank(slow, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{{TransferPhase{us, {}}}};  // latency only
    Recorder rec;
    const SimResult r = run(p, planner, {}, rec, true);
    // Rank 0 posts both at 0; rank 1 posts ar0 at 5 us (instance 0: 5..6 us), then ar1 at 6 us
    // (instance 1: 6..7 us). Pairing by post order, not by time: bytes 100 then 200.
    const auto made = instance_requests(planner, p.program);
    REQUIRE(made.size() == 2);
    CHECK(made[0].bytes.value == 100.0);
    CHECK(made[1].bytes.value == 200.0);
    CHECK(rec.at(0, 1).started == us * 6);
    CHECK(r.makespan == us * 7);
}

TEST_CASE("a plan without phases or flows ends the instance at once", "[sim][executor]") {
    TestProgram p;
    const auto g = p.group({0}, "solo");
    const auto l = p.add_list();
    p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(8.0), stream::kTensorComm, comm_class::kTensor);
    p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(8.0), stream::kTensorComm, comm_class::kTensor);
    p.rank(l, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{};
    Recorder rec;
    const SimResult r = run(p, planner, {}, rec, true);
    CHECK(r.makespan == Time(0));
    CHECK(rec.at(0, 1).finished == Time(0));
    // Two instances of one request: the group's last plan is reused, so the planner is asked once.
    CHECK(instance_requests(planner, p.program).size() == 1);
}

namespace {

// One rank: a (1 us), then two collectives after it on streams of their own, a 4 us one of
// category `first` and a 6 us one of category `second`, then b (1 us) after both.
struct Overlap {
    TestProgram p;
    std::uint32_t first_group = 0;
    std::uint32_t second_group = 0;

    Overlap(OpCategory first, StreamId first_stream, OpCategory second, StreamId second_stream) {
        const Time us = microseconds(1.0);
        first_group = p.group({0}, "first");
        second_group = p.group({0}, "second");
        const auto l = p.add_list();
        const auto a = p.compute(l, "a", us);
        const auto x = p.comm(l, OpKind::AllReduce, "first.ar", 0, Bytes(8.0), first_stream, first, {a});
        const auto y = p.comm(l, OpKind::AllReduce, "second.ar", 1, Bytes(8.0), second_stream, second, {a});
        p.compute(l, "b", us, stream::kCompute, OpCategory::Compute, {x, y});
        p.rank(l, {first_group, second_group});
    }
    SimResult run() {
        const Time us = microseconds(1.0);
        TablePlanner planner;
        planner.plans[first_group] = TransferPlan{{TransferPhase{us * 4, {}}}};
        planner.plans[second_group] = TransferPlan{{TransferPhase{us * 6, {}}}};
        Recorder rec;
        return ::run(p, planner, {}, rec, true);
    }
};

}  // namespace

TEST_CASE("idle time under overlapping transfers goes to the highest-priority category", "[sim][breakdown]") {
    const Time us = microseconds(1.0);
    Overlap o(comm_class::kTensor, stream::kTensorComm, comm_class::kData, stream::kDataComm);
    const SimResult r = o.run();
    // a [0,1]; tensor transfer [1,5] and data transfer [1,7] overlap; b [7,8]. The gap [1,7]:
    // 1..5 both move data -> tensor (higher priority) 4 us; 5..7 only data -> data 2 us.
    const RankBreakdown& b = r.ranks[0].breakdown;
    CHECK(r.makespan == us * 8);
    CHECK(b.compute == us * 2);
    CHECK(exposed(b, comm_class::kTensor) == us * 4);
    CHECK(exposed(b, comm_class::kData) == us * 2);
    CHECK(b.bubble == Time(0));
}

// sim gives communication classes no meaning: the program lists them, and the first class listed
// with a transfer in flight takes the idle time. Five classes, the 4 us collective in class 4 and
// the 6 us one in class 1: the same overlap as above now charges all of the gap to class 1.
TEST_CASE("the program's order of its communication classes decides who takes idle time", "[sim][breakdown]") {
    const Time us = microseconds(1.0);
    Overlap o(comm_category(4), 3, comm_category(1), 9);
    o.p.program.comm_classes = {{"a", false}, {"reduce", false}, {"b", false}, {"c", false}, {"layer", true}};
    const SimResult r = o.run();
    const RankBreakdown& b = r.ranks[0].breakdown;
    CHECK(r.makespan == us * 8);
    CHECK(b.comm_exposed[1] == us * 6);
    CHECK(b.comm_exposed[4] == Time(0));
    CHECK(b.comm_exposed[0] + b.comm_exposed[2] + b.comm_exposed[3] == Time(0));
    CHECK(sum(b) == r.makespan);

    // A communication op whose category names no class of the program is a malformed program.
    o.p.program.comm_classes.resize(4);
    CHECK_THROWS_WITH(o.run(), Catch::Contains("names no communication class"));
}

TEST_CASE("an op waiting on two other streams starts when the later of them is done", "[sim][executor]") {
    const bool merge = GENERATE(false, true);
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto l = p.add_list();
    const auto x = p.compute(l, "x", us * 2, 1);  // stream 1: [0,2], then x2 [2,7]
    const auto x2 = p.compute(l, "x2", us * 5, 1);
    const auto y = p.compute(l, "y", us * 6, 2);  // stream 2: [0,6]
    const auto y2 = p.compute(l, "y2", us * 1, 4);  // stream 4: [0,1]
    // g (stream 0) needs stream 1 (met at 2) and stream 2 (met at 6): the second binds, [6,7].
    const auto g = p.compute(l, "g", us * 1, 0, OpCategory::Compute, {x, y});
    // h (stream 3) needs stream 1 up to x2 (met at 7) and stream 4 (met at 1): the first binds,
    // [7,10].
    const auto h = p.compute(l, "h", us * 3, 3, OpCategory::Compute, {y2, x2});
    p.rank(l);
    TablePlanner planner;
    Recorder rec;
    const SimResult r = run(p, planner, {}, rec, merge);
    CHECK(rec.at(0, g).started == us * 6);
    CHECK(rec.at(0, g).finished == us * 7);
    CHECK(rec.at(0, h).started == us * 7);
    CHECK(r.makespan == us * 10);
}

namespace {
// The order in which compute ops finish, as the observer is told.
struct FinishOrder : SimObserver {
    std::vector<std::pair<std::uint32_t, Time>> finished;  // (rank, time)
    void compute_finished(std::uint32_t rank, std::uint32_t, Time t) override { finished.emplace_back(rank, t); }
};
}  // namespace

TEST_CASE("events due at one time run in the order they were scheduled", "[sim][executor]") {
    const Time us = microseconds(1.0);
    TestProgram p;
    // Members in the order 2, 0, 1: the instance's end advances them in that order, and each
    // schedules its next compute op (1 us) as it is advanced.
    const auto g = p.group({2, 0, 1}, "tp");
    const auto l = p.add_list();
    const auto ar = p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1000.0), stream::kTensorComm, comm_class::kTensor);
    p.compute(l, "after", us, stream::kCompute, OpCategory::Compute, {ar});
    for (int r = 0; r < 3; ++r) p.rank(l, {g});
    const std::vector<Link> links{{"l", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.plans[g] = one_flow_plan(us, Bytes(1000.0), {0});
    FinishOrder order;
    SimObserver* observers[] = {&order};
    SimOptions unmerged;
    unmerged.merge_compute_chains = false;
    const SimResult r = simulate(p.program, p.costs, links, planner, observers, unmerged);

    // The all-reduce ends at 1 (latency) + 1 (1000 B at 1 GB/s) = 2 us; the three ops at 3 us,
    // in member order.
    REQUIRE(order.finished.size() == 3);
    const std::uint32_t expected[] = {2, 0, 1};
    for (int i = 0; i < 3; ++i) {
        CHECK(order.finished[i].first == expected[i]);
        CHECK(order.finished[i].second == us * 3);
    }
    // Every event counts, whether or not it shared a queue entry. The all-reduce has its link to
    // itself, so it is one event (sim/exclusive.hpp): 1 TransferDue + 3 OpsDone.
    CHECK(r.events == 4);
}

TEST_CASE("a requested cancellation ends a simulation with Cancelled; an unset flag changes nothing",
          "[sim][executor]") {
    TestProgram p;
    const auto l = p.add_list();
    for (int i = 0; i < 10'000; ++i) p.compute(l, "op", microseconds(1.0));  // one event each, unmerged
    p.rank(l);
    TablePlanner planner;
    SimOptions options;
    options.merge_compute_chains = false;
    std::atomic<int> flag{0};
    options.cancel = Cancellation(&flag);
    CHECK(simulate(p.program, p.costs, {}, planner, {}, options).makespan == microseconds(10'000.0));
    flag = 15;  // any non-zero value: the caller's reason is none of the simulation's business
    CHECK_THROWS_AS(simulate(p.program, p.costs, {}, planner, {}, options), Cancelled);
}
