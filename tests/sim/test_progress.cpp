// SimOptions::progress: what a long run tells its caller (the `cuboid run` progress line) is its
// own state, read without changing anything that is simulated.
#include <catch2/catch.hpp>

#include <vector>

#include "sim/executor.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

// Two ranks pass a message back and forth `rounds` times over one link, each computing before it
// sends: a few events per round, so a thousand rounds outlast several of the engine's polls.
struct PingPong {
    TestProgram p;
    std::vector<Link> links{{"wire", gigabytes_per_second(10.0)}};
    TablePlanner planner;
    std::uint64_t ops = 0;

    explicit PingPong(int rounds) {
        const Time us = microseconds(1.0);
        const auto there = p.group({0, 1}, "there"), back = p.group({0, 1}, "back");
        planner.plans[there] = one_flow_plan(us, Bytes(1e6), {0});
        planner.plans[back] = one_flow_plan(us, Bytes(1e6), {0});
        const auto first = p.add_list(), second = p.add_list();
        std::uint32_t got = 0;
        for (int i = 0; i < rounds; ++i) {
            const auto c = i == 0 ? p.compute(first, "work", us * 3)
                                  : p.compute(first, "work", us * 3, 0, OpCategory::Compute, {got});
            p.comm(first, OpKind::Send, "send", 0, Bytes(1e6), stream::kPipelineSend, comm_class::kPipeline, {c});
            got = p.comm(first, OpKind::Recv, "recv", 1, Bytes(1e6), stream::kPipelineRecv, comm_class::kPipeline);
            const auto r = p.comm(second, OpKind::Recv, "recv", 0, Bytes(1e6), stream::kPipelineRecv,
                                  comm_class::kPipeline);
            const auto d = p.compute(second, "work", us * 2, 0, OpCategory::Compute, {r});
            p.comm(second, OpKind::Send, "send", 1, Bytes(1e6), stream::kPipelineSend, comm_class::kPipeline, {d});
        }
        p.rank(first, {there, back});
        p.rank(second, {there, back});
        ops = p.program.op_lists[first].ops.size() + p.program.op_lists[second].ops.size();
    }

    SimResult run(ProgressCallback progress = {}) {
        SimOptions options;
        options.merge_compute_chains = false;  // an event per op
        options.progress = std::move(progress);
        return simulate(p.program, p.costs, links, planner, {}, options);
    }
};

}  // namespace

TEST_CASE("a run reports its progress as it goes and once at its end, and the reports change nothing",
          "[sim][progress]") {
    PingPong pp(2000);
    std::vector<SimProgress> reports;
    const SimResult watched = pp.run([&reports](const SimProgress& p) { reports.push_back(p); });
    const SimResult plain = PingPong(2000).run();
    require_same_outcome(watched, plain);
    CHECK(watched.events == plain.events);

    REQUIRE(reports.size() >= 3);  // some on the way (every 4,096 queue entries), and the end
    for (std::size_t i = 0; i < reports.size(); ++i) {
        INFO("report " << i);
        CHECK(reports[i].ops_total == pp.ops);
        CHECK(reports[i].ops_done <= reports[i].ops_total);
        if (i == 0) continue;
        CHECK(reports[i].ops_done >= reports[i - 1].ops_done);
        CHECK(reports[i].now >= reports[i - 1].now);
        CHECK(reports[i].events >= reports[i - 1].events);
    }
    // On the way: part of the work done, part of the iteration simulated.
    CHECK(reports.front().ops_done > 0);
    CHECK(reports.front().ops_done < pp.ops);
    CHECK(reports.front().now > Time(0));
    CHECK(reports.front().now < watched.makespan);
    // At the end: everything, at the iteration's end.
    CHECK(reports.back().ops_done == pp.ops);
    CHECK(reports.back().fraction() == 1.0);
    CHECK(reports.back().now == watched.makespan);
    CHECK(reports.back().events == watched.events);
}
