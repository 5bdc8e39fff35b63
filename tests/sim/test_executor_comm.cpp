#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>

#include "sim/executor.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

// Two stages, two micro-batches: stage 0 computes F (10 us) and sends each activation to stage 1,
// which receives it and computes G (10 us). Transfers: 1 us latency + 2000 B at 1 GB/s (2 us).
struct Pipeline {
    TestProgram p;
    std::vector<Link> links{{"pp", gigabytes_per_second(1.0)}};
    TablePlanner planner;

    Pipeline() {
        const Time us = microseconds(1.0);
        const auto g = p.group({0, 1}, "pp");
        const auto first = p.add_list();
        const auto second = p.add_list();
        for (int mb = 0; mb < 2; ++mb) {
            const auto f = p.compute(first, "F", us * 10);
            p.comm(first, OpKind::Send, "send", 0, Bytes(2000.0), stream::kPipelineSend, comm_class::kPipeline, {f});
            const auto r = p.comm(second, OpKind::Recv, "recv", 0, Bytes(2000.0), stream::kPipelineRecv,
                                  comm_class::kPipeline);
            p.compute(second, "G", us * 10, stream::kCompute, OpCategory::Compute, {r});
        }
        p.rank(first, {g});
        p.rank(second, {g});
        planner.plans[g] = one_flow_plan(us, Bytes(2000.0), {0});
    }
    SimResult run() { return simulate(p.program, p.costs, links, planner); }
};

}  // namespace

TEST_CASE("a two-stage send/recv pipeline has the derived makespan", "[sim][executor]") {
    const Time us = microseconds(1.0);
    Pipeline pipe;
    const SimResult r = pipe.run();
    // Stage 0: F1 [0,10], F2 [10,20]; send 1 [10,13] (3 us: 1 latency + 2 transfer), send 2
    // [20,23]. Stage 1 posted both receives early; G1 [13,23], G2 needs recv 2 (23) and G1 (23):
    // [23,33].
    CHECK(r.ranks[0].finish == us * 23);
    CHECK(r.ranks[1].finish == us * 33);
    CHECK(r.makespan == us * 33);
    // The pair's source is the sender.
    // Both sends are one request (same source and bytes): the planner is asked once.
    const auto made = instance_requests(pipe.planner, pipe.p.program);
    REQUIRE(made.size() == 1);
    CHECK(made[0].source == 0);
    CHECK(made[0].kind == OpKind::Send);

    // Stage 1 waits 0..13: the transfer moved 10..13 (pipeline comm 3 us), the rest is bubble.
    const RankBreakdown& b1 = r.ranks[1].breakdown;
    CHECK(b1.compute == us * 20);
    CHECK(exposed(b1, comm_class::kPipeline) == us * 3);
    CHECK(b1.bubble == us * 10);
    // Stage 0 computes 0..20 and then waits for its last send, 20..23.
    const RankBreakdown& b0 = r.ranks[0].breakdown;
    CHECK(b0.compute == us * 20);
    CHECK(exposed(b0, comm_class::kPipeline) == us * 3);
    CHECK(b0.bubble == Time(0));
    for (const auto& rank : r.ranks) CHECK(sum(rank.breakdown) == rank.finish);
}

TEST_CASE("receives waiting on each other in a cycle are a deadlock", "[sim][executor]") {
    TestProgram p;
    const auto g0 = p.group({0, 1}, "pair0");
    const auto g1 = p.group({0, 1}, "pair1");
    const StreamId s = stream::kPipelineRecv;
    // Each rank first receives what the other sends only after its own receive: a cycle.
    const auto a = p.add_list();
    p.comm(a, OpKind::Recv, "recv-from-1", 0, Bytes(8.0), s, comm_class::kPipeline);
    p.comm(a, OpKind::Send, "send-to-1", 1, Bytes(8.0), s, comm_class::kPipeline);
    const auto b = p.add_list();
    p.comm(b, OpKind::Recv, "recv-from-0", 1, Bytes(8.0), s, comm_class::kPipeline);
    p.comm(b, OpKind::Send, "send-to-0", 0, Bytes(8.0), s, comm_class::kPipeline);
    p.rank(a, {g0, g1});
    p.rank(b, {g0, g1});
    TablePlanner planner;
    planner.plans[g0] = TransferPlan{};
    planner.plans[g1] = TransferPlan{};
    try {
        simulate(p.program, p.costs, {}, planner);
        FAIL("no deadlock reported");
    } catch (const DeadlockError& e) {
        const std::string what = e.what();
        CHECK(what.find("rank 0, op 'recv-from-1'") != std::string::npos);
        CHECK(what.find("rank 1, op 'recv-from-0'") != std::string::npos);
        CHECK(what.find("4 ops unfinished") != std::string::npos);
    }
}

TEST_CASE("members posting different collectives or sizes is a programming error", "[sim][executor]") {
    const auto second_kind = GENERATE(OpKind::AllGather, OpKind::AllReduce);
    const double second_bytes = second_kind == OpKind::AllReduce ? 200.0 : 100.0;
    TestProgram p;
    const auto g = p.group({0, 1}, "tp");
    const auto a = p.add_list();
    p.comm(a, OpKind::AllReduce, "ar", 0, Bytes(100.0), stream::kTensorComm, comm_class::kTensor);
    const auto b = p.add_list();
    p.comm(b, second_kind, "other", 0, Bytes(second_bytes), stream::kTensorComm, comm_class::kTensor);
    p.rank(a, {g});
    p.rank(b, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{};
    CHECK_THROWS_WITH(simulate(p.program, p.costs, {}, planner), Catch::Contains("communication mismatch on group 'tp'"));
}

TEST_CASE("two sends on one pair are a programming error", "[sim][executor]") {
    TestProgram p;
    const auto g = p.group({0, 1}, "pp");
    const auto l = p.add_list();
    p.comm(l, OpKind::Send, "send", 0, Bytes(100.0), stream::kPipelineSend, comm_class::kPipeline);
    p.rank(l, {g});
    p.rank(l, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{};
    CHECK_THROWS_AS(simulate(p.program, p.costs, {}, planner), std::logic_error);
}

TEST_CASE("a broadcast is rooted at the group's first rank", "[sim][executor]") {
    TestProgram p;
    const auto g = p.group({1, 0}, "dp");
    const auto l = p.add_list();
    p.comm(l, OpKind::Broadcast, "bcast", 0, Bytes(100.0), stream::kDataComm, comm_class::kData);
    p.rank(l, {g});
    p.rank(l, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{};
    simulate(p.program, p.costs, {}, planner);
    const auto made = instance_requests(planner, p.program);
    REQUIRE(made.size() == 1);
    CHECK(made[0].source == 1);
}

TEST_CASE("a pair that alternates two requests is planned once for each", "[sim][executor]") {
    // Ranks 0 and 1 pass a message back and forth on one pair three times: rank 0 sends A, rank 1
    // sends B once A has arrived, rank 0 sends the next A once B has. The requests alternate
    // (Send from 0, Send from 1); 0's plan has 1 us of latency, 1's 3 us, both 1000 B at 1 GB/s
    // (1 us).
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto g = p.group({0, 1}, "pp");
    const auto l0 = p.add_list();
    const auto l1 = p.add_list();
    constexpr int kRounds = 3;
    std::uint32_t back = 0;
    for (int k = 0; k < kRounds; ++k) {
        if (k == 0) {
            p.comm(l0, OpKind::Send, "a", 0, Bytes(1000.0), stream::kPipelineSend, comm_class::kPipeline);
        } else {
            p.comm(l0, OpKind::Send, "a", 0, Bytes(1000.0), stream::kPipelineSend, comm_class::kPipeline, {back});
        }
        back = p.comm(l0, OpKind::Recv, "b", 0, Bytes(1000.0), stream::kPipelineRecv, comm_class::kPipeline);
        const auto got =
            p.comm(l1, OpKind::Recv, "a", 0, Bytes(1000.0), stream::kPipelineRecv, comm_class::kPipeline);
        p.comm(l1, OpKind::Send, "b", 0, Bytes(1000.0), stream::kPipelineSend, comm_class::kPipeline, {got});
    }
    p.rank(l0, {g});
    p.rank(l1, {g});
    std::vector<Link> links{{"pp", gigabytes_per_second(1.0)}};
    TablePlanner planner;
    planner.by_source = true;
    planner.plans[0] = one_flow_plan(us, Bytes(1000.0), {0});
    planner.plans[1] = one_flow_plan(us * 3, Bytes(1000.0), {0});
    const SimResult r = simulate(p.program, p.costs, links, planner);
    // Each round: A (1 + 1 us), then B (3 + 1 us).
    CHECK(r.makespan == (us * 2 + us * 4) * kRounds);
    // Six instances, two requests: each asked of the planner once (after those planned ahead).
    const std::size_t ahead = possible_requests(p.program).size();
    REQUIRE(planner.requests.size() == ahead + 2);
    CHECK(planner.requests[ahead].source == 0);
    CHECK(planner.requests[ahead + 1].source == 1);
}
