// Small programs, a table planner and a recording observer for the sim tests.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/executor.hpp"
#include "sim/observer.hpp"
#include "sim/program.hpp"
#include "sim/symmetry.hpp"
#include "sim/transfer.hpp"

namespace cuboid::sim::test {

// The streams and communication classes of these tests' programs. sim gives them no meaning but
// the compute stream's and the lockstep flag's; the names echo those of cuboid's strategies.
namespace stream {
inline constexpr StreamId kCompute = kComputeStream;
inline constexpr StreamId kTensorComm = 1;
inline constexpr StreamId kPipelineSend = 2;
inline constexpr StreamId kPipelineRecv = 3;
inline constexpr StreamId kDataComm = 4;
inline constexpr StreamId kHost = 5;
inline constexpr StreamId kParamGather = 6;
inline constexpr StreamId kContextComm = 7;
}  // namespace stream
namespace comm_class {
inline constexpr OpCategory kTensor = comm_category(0);  // the lockstep class
inline constexpr OpCategory kPipeline = comm_category(1);
inline constexpr OpCategory kData = comm_category(2);
}  // namespace comm_class

// Names the streams and classes above in `program`.
inline void name_test_classes(Program& program) {
    program.stream_names = {"compute", "tensor-comm", "pipeline-send", "pipeline-recv", "data-comm", "host",
                            "param-gather", "context-comm"};
    program.comm_classes = {{"tensor", true}, {"pipeline", false}, {"data", false}};
}

// The idle time of `b` charged to class `c`.
inline Time exposed(const RankBreakdown& b, OpCategory c) {
    return b.comm_exposed[static_cast<std::size_t>(comm_class_of(c))];
}

// Builds a Program and its costs op by op.
struct TestProgram {
    Program program;
    ProgramCosts costs;

    TestProgram() { name_test_classes(program); }

    std::uint32_t add_list() {
        program.op_lists.emplace_back();
        costs.durations.emplace_back();
        return static_cast<std::uint32_t>(program.op_lists.size() - 1);
    }
    std::uint32_t compute(std::uint32_t list, const std::string& label, Time duration, StreamId stream = 0,
                          OpCategory category = OpCategory::Compute, std::initializer_list<std::uint32_t> deps = {}) {
        Op op;
        op.kind = OpKind::Gemm;
        op.category = category;
        op.stream = stream;
        op.label = program.intern(label);
        costs.durations[list].push_back(duration);
        return OpListBuilder(program.op_lists[list]).add(op, deps);
    }
    std::uint32_t comm(std::uint32_t list, OpKind kind, const std::string& label, std::uint16_t slot, Bytes bytes,
                       StreamId stream, OpCategory category, std::initializer_list<std::uint32_t> deps = {}) {
        Op op;
        op.kind = kind;
        op.category = category;
        op.stream = stream;
        op.group_slot = slot;
        op.bytes = bytes;
        op.label = program.intern(label);
        costs.durations[list].push_back(Time(0));
        return OpListBuilder(program.op_lists[list]).add(op, deps);
    }
    std::uint32_t group(std::vector<std::uint32_t> ranks, const std::string& label) {
        program.groups.push_back(Group{std::move(ranks), program.intern(label)});
        return static_cast<std::uint32_t>(program.groups.size() - 1);
    }
    void rank(std::uint32_t list, std::vector<std::uint32_t> groups = {}) {
        program.ranks.push_back(RankProgram{list, std::move(groups)});
    }
};

// One fixed plan per group (or, with `by_source`, per request source: the two directions of a
// pair); remembers every request.
class TablePlanner : public TransferPlanner {
public:
    std::map<std::uint32_t, TransferPlan> plans;
    std::vector<TransferRequest> requests;
    bool by_source = false;

    const TransferPlan& plan(const TransferRequest& request) override {
        requests.push_back(request);
        return plans.at(by_source ? request.source : request.group);
    }
};

// The requests the run made as instances started, in order (an instance whose request equals its
// group's previous one reuses that plan and asks nothing). With SimOptions::exclusive_transfers
// (the default) the simulation first plans every possible request once (sim/exclusive.hpp); those
// come first and are skipped here.
inline std::vector<TransferRequest> instance_requests(const TablePlanner& planner, const Program& program,
                                                      bool planned_ahead = true) {
    const std::size_t ahead = planned_ahead ? possible_requests(program).size() : 0;
    if (planner.requests.size() < ahead) return {};
    return {planner.requests.begin() + static_cast<std::ptrdiff_t>(ahead), planner.requests.end()};
}

// A plan of one phase: `latency`, then one flow of `bytes` over `links` (weight 1 each).
inline TransferPlan one_flow_plan(Time latency, Bytes bytes, std::vector<LinkId> links) {
    Flow flow;
    flow.bytes = bytes;
    for (const LinkId l : links) flow.links.push_back({l, 1.0});
    TransferPlan plan;
    plan.phases.push_back(TransferPhase{latency, {flow}});
    return plan;
}

// Everything the executor reports, by (rank, op).
struct Recorder : SimObserver {
    struct Times {
        Time posted{-1}, started{-1}, finished{-1};
        int starts = 0, finishes = 0;
    };
    std::map<std::pair<std::uint32_t, std::uint32_t>, Times> ops;

    void compute_started(std::uint32_t r, std::uint32_t op, Time t) override { note(r, op).started = t, ++note(r, op).starts; }
    void compute_finished(std::uint32_t r, std::uint32_t op, Time t) override {
        note(r, op).finished = t, ++note(r, op).finishes;
    }
    void comm_posted(std::uint32_t r, std::uint32_t op, Time t) override { note(r, op).posted = t; }
    void comm_started(std::uint32_t r, std::uint32_t op, Time t) override { note(r, op).started = t, ++note(r, op).starts; }
    void comm_finished(std::uint32_t r, std::uint32_t op, Time t) override {
        note(r, op).finished = t, ++note(r, op).finishes;
    }
    Times& note(std::uint32_t r, std::uint32_t op) { return ops[{r, op}]; }
    const Times& at(std::uint32_t r, std::uint32_t op) const { return ops.at({r, op}); }
};

// Every number a caller sees, except the event count (and the flow count, which a folded run
// does not share with the full one).
inline void require_same_outcome(const SimResult& a, const SimResult& b, bool same_flows = true) {
    REQUIRE(a.ranks.size() == b.ranks.size());
    CHECK(a.makespan == b.makespan);
    CHECK(a.fingerprint == b.fingerprint);
    if (same_flows) CHECK(a.flows == b.flows);
    for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        INFO("rank " << r);
        CHECK(a.ranks[r].finish == b.ranks[r].finish);
        const RankBreakdown& x = a.ranks[r].breakdown;
        const RankBreakdown& y = b.ranks[r].breakdown;
        CHECK(x.compute == y.compute);
        CHECK(x.recompute == y.recompute);
        CHECK(x.comm_exposed == y.comm_exposed);
        CHECK(x.bubble == y.bubble);
    }
}

// Four ranks running op list `list`: tensor groups {0,1} and {2,3} in slot 0, data groups {0,2}
// and {1,3} in slot 1. Returns the groups in that order.
inline std::array<std::uint32_t, 4> tensor_data_grid(TestProgram& p, std::uint32_t list) {
    const std::array<std::uint32_t, 4> g{p.group({0, 1}, "tp"), p.group({2, 3}, "tp"), p.group({0, 2}, "dp"),
                                         p.group({1, 3}, "dp")};
    p.rank(list, {g[0], g[2]});
    p.rank(list, {g[0], g[3]});
    p.rank(list, {g[1], g[2]});
    p.rank(list, {g[1], g[3]});
    return g;
}

inline Time sum(const RankBreakdown& b) {
    Time exposed_total{0};
    for (const Time t : b.comm_exposed) exposed_total += t;
    return b.compute + b.recompute + exposed_total + b.bubble;
}

}  // namespace cuboid::sim::test
