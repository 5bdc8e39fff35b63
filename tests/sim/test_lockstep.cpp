// Lockstep runs (sim/engine_lockstep.cpp): a tensor group's exclusive collectives (of the tests'
// lockstep class) and the compute
// chains between them run as one event, with the step-by-step times to the picosecond, including
// compute that overlaps a collective and a stream outside the run that waits for an op inside it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/executor.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

SimResult run(const TestProgram& p, TablePlanner& planner, std::span<const Link> links, bool lockstep,
              std::span<SimObserver* const> observers = {}) {
    SimOptions options;
    options.lockstep_runs = lockstep;
    return simulate(p.program, p.costs, links, planner, observers, options);
}

// Tensor groups {0,1} and {2,3}, data groups {0,2} and {1,3}, each group on a link of its own
// (1 GB/s, one flow per instance, 1 us of latency). One op list:
//   a (1 us) -> AR1 -> b (2 us) -> AR2, while w (3 us, after b) overlaps AR2 -> c (0.5 us, after
//   AR2 and w) -> AR3 -> e (0.7 us); and on the data stream, a reduction after w.
struct Fixture {
    TestProgram p;
    TablePlanner planner;
    std::vector<Link> links;
    std::uint32_t w = 0;
    Bytes tensor_bytes;

    explicit Fixture(Bytes tp_bytes) : tensor_bytes(tp_bytes) {
        const Time us = microseconds(1.0);
        const auto l = p.add_list();
        const auto a = p.compute(l, "a", us);
        const auto ar1 = p.comm(l, OpKind::AllReduce, "ar1", 0, tp_bytes, stream::kTensorComm, comm_class::kTensor, {a});
        const auto b = p.compute(l, "b", us * 2.0, stream::kCompute, OpCategory::Compute, {ar1});
        const auto ar2 = p.comm(l, OpKind::AllReduce, "ar2", 0, tp_bytes, stream::kTensorComm, comm_class::kTensor, {b});
        w = p.compute(l, "w", us * 3.0, stream::kCompute, OpCategory::Recompute, {b});
        const auto c = p.compute(l, "c", us * 0.5, stream::kCompute, OpCategory::Compute, {ar2, w});
        p.comm(l, OpKind::AllReduce, "dp", 1, Bytes(1.0e3), stream::kDataComm, comm_class::kData, {w});
        const auto ar3 = p.comm(l, OpKind::AllReduce, "ar3", 0, tp_bytes, stream::kTensorComm, comm_class::kTensor, {c});
        p.compute(l, "e", us * 0.7, stream::kCompute, OpCategory::Compute, {ar3});
        const auto [t0, t1, d0, d1] = tensor_data_grid(p, l);
        for (const auto g : {t0, t1, d0, d1}) {
            links.push_back({"own" + std::to_string(g), gigabytes_per_second(1.0)});
            const Bytes bytes = g == t0 || g == t1 ? tp_bytes : Bytes(1.0e3);
            planner.plans[g] = one_flow_plan(us, bytes, {static_cast<LinkId>(g)});
        }
    }
};

}  // namespace

TEST_CASE("a lockstep run has the step-by-step times, breakdown and fingerprint", "[sim][lockstep]") {
    const Time us = microseconds(1.0);
    // AR2 (1 us + 1 KB at 1 GB/s = 2 us) is shorter than w (3 us), and longer (1 us + 4 us) for
    // 4 KB: both orders of the overlap.
    for (const double kb : {1.0, 4.0}) {
        INFO("tensor all-reduce of " << kb << " KB");
        Fixture f(Bytes(kb * 1.0e3));
        const SimResult stepwise = run(f.p, f.planner, f.links, false);
        const SimResult lockstep = run(f.p, f.planner, f.links, true);
        require_same_outcome(lockstep, stepwise);
        // Closed form of a rank's finish: a, AR1, b, then AR2 beside w, c, AR3, e. The data
        // reduction (after w) runs on a link of its own and holds nothing up.
        const Time ar = us + Time(static_cast<std::int64_t>(kb * 1.0e3 / 1.0e9 / 1e-12));
        const Time finish = us + ar + us * 2.0 + std::max(ar, us * 3.0) + us * 0.5 + ar + us * 0.7;
        for (const RankOutcome& r : lockstep.ranks) CHECK(r.finish == finish);
        // Breakdown: w is recomputation; the compute stream waits for AR1, AR3 and what of AR2
        // outlasts w.
        const RankBreakdown& b = lockstep.ranks[0].breakdown;
        CHECK(b.recompute == us * 3.0);
        CHECK(b.compute == us + us * 2.0 + us * 0.5 + us * 0.7);  // a, b, c, e
        CHECK(exposed(b, comm_class::kTensor) == ar * 2 + std::max(Time(0), ar - us * 3.0));
        CHECK(b.bubble == Time(0));
        // Events step by step, per tensor group: a, b, w, c, e end on each of 2 ranks (10) and
        // AR1..AR3 end (3); per data group, its one transfer (2 in all): 2 x 13 + 2 = 28. The run
        // from AR1 to AR3 replaces b, w, c, AR1, AR2 and AR3 (9 per group) by its end and one
        // checkpoint when w ends, which the data stream waits for: 2 x (13 - 9 + 2) + 2 = 14.
        CHECK(stepwise.events == 28);
        CHECK(lockstep.events == 14);
    }
}

// Which collectives may form runs is the program's word (CommClass::lockstep), not sim's: with the
// tensor class's flag off, the same program runs step by step, to the same outcome.
TEST_CASE("only the collectives of a lockstep class form runs", "[sim][lockstep]") {
    Fixture f(Bytes(1.0e3));
    const SimResult lockstep = run(f.p, f.planner, f.links, true);
    f.p.program.comm_classes[0].lockstep = false;
    const SimResult unflagged = run(f.p, f.planner, f.links, true);
    require_same_outcome(unflagged, lockstep);
    CHECK(lockstep.events == 14);
    CHECK(unflagged.events == 28);
}

// The progress a run reports (SimOptions::progress) counts the ops a run finishes at its
// checkpoint and at its end as the step-by-step engine counts them one by one: all of them by the
// last report.
TEST_CASE("the ops a lockstep run finishes count in the run's progress", "[sim][lockstep][progress]") {
    Fixture f(Bytes(1.0e3));
    SimOptions options;
    SimProgress last;
    int reports = 0;
    options.progress = [&](const SimProgress& p) {
        last = p;
        ++reports;
    };
    const SimResult lockstep = simulate(f.p.program, f.p.costs, f.links, f.planner, {}, options);
    CHECK(lockstep.events == 14);  // the run formed (see above)
    CHECK(reports == 1);           // too short for a report on the way: the end's only
    CHECK(last.ops_total == 4 * f.p.program.op_lists[0].ops.size());
    CHECK(last.ops_done == last.ops_total);
    CHECK(last.now == lockstep.makespan);
}

TEST_CASE("a stream outside the run starts when the op it waits for ends, not when the run ends",
          "[sim][lockstep]") {
    const Time us = microseconds(1.0);
    Fixture f(Bytes(1.0e3));
    Recorder rec;
    std::vector<SimObserver*> observers{&rec};
    // Observed, the engine runs step by step: the reference times of every op.
    const SimResult observed = run(f.p, f.planner, f.links, true, observers);
    const SimResult lockstep = run(f.p, f.planner, f.links, true);
    require_same_outcome(lockstep, observed);
    // The data reduction starts when w ends on both ranks of its group: a + AR1 + b + w.
    const Time ar = us * 2.0;
    CHECK(rec.at(0, f.w).finished == us + ar + us * 2.0 + us * 3.0);
    CHECK(lockstep.events < observed.events);
}

TEST_CASE("without shortcuts there is no lockstep run", "[sim][lockstep]") {
    // The two tensor groups share one link: their all-reduces take the network, step by step.
    Fixture f(Bytes(1.0e3));
    f.planner.plans[1] = f.planner.plans[0];
    const SimResult stepwise = run(f.p, f.planner, f.links, false);
    const SimResult lockstep = run(f.p, f.planner, f.links, true);
    require_same_outcome(lockstep, stepwise);
    CHECK(lockstep.events == stepwise.events);
}

namespace {

// One plan per (group, request bytes): lets two groups agree on one collective and differ on the
// next.
class BytesPlanner : public TransferPlanner {
public:
    std::map<std::pair<std::uint32_t, double>, TransferPlan> plans;
    const TransferPlan& plan(const TransferRequest& request) override {
        return plans.at({request.group, request.bytes.value});
    }
};

// Tensor groups {0,1} and {2,3} of one op list: a (1 us), then per collective AR_i (a request of
// `requests_kb[i]` KB) and a chain x_i (1 us) after it. Every plan is one flow of `flow_kb(group,
// request)` KB on a link of its own at 1 GB/s (1 us a KB) after 1 us of latency. Both groups start
// the same run at the same moment: the second may reuse the first's (RunMemo) only when its
// collectives would last as long.
struct TwoGroups {
    TestProgram p;
    BytesPlanner planner;
    std::vector<Link> links;

    TwoGroups(const std::vector<double>& requests_kb, const std::function<double(int, double)>& flow_kb) {
        const Time us = microseconds(1.0);
        const auto l = p.add_list();
        auto last = p.compute(l, "a", us);
        for (std::size_t i = 0; i < requests_kb.size(); ++i) {
            const std::string n = std::to_string(i);
            const auto ar = p.comm(l, OpKind::AllReduce, "ar" + n, 0, Bytes(requests_kb[i] * 1.0e3),
                                   stream::kTensorComm, comm_class::kTensor, {last});
            last = p.compute(l, "x" + n, us, stream::kCompute, OpCategory::Compute, {ar});
        }
        const auto [t0, t1, d0, d1] = tensor_data_grid(p, l);
        for (int g = 0; g < 2; ++g) {
            for (const double kb : requests_kb) {
                links.push_back({"own" + std::to_string(links.size()), gigabytes_per_second(1.0)});
                planner.plans[{g == 0 ? t0 : t1, kb * 1.0e3}] =
                    one_flow_plan(us, Bytes(flow_kb(g, kb) * 1.0e3), {static_cast<LinkId>(links.size() - 1)});
            }
        }
    }
    SimResult run(bool lockstep) {
        SimOptions options;
        options.lockstep_runs = lockstep;
        return simulate(p.program, p.costs, links, planner, {}, options);
    }
};

}  // namespace

TEST_CASE("a run planned for one group is reused for another only when it plans the same way",
          "[sim][lockstep]") {
    const Time us = microseconds(1.0);
    struct Case {
        const char* what;
        std::vector<double> requests_kb;
        std::function<double(int, double)> flow_kb;
    };
    const std::vector<Case> cases{
        {"same plans (AR3 repeats AR2's request)", {1, 2, 2}, [](int, double kb) { return kb; }},
        {"the first collective lasts longer", {1, 2, 2}, [](int g, double kb) { return g == 1 && kb == 1 ? 2.0 : kb; }},
        {"a later collective lasts longer", {1, 2, 2}, [](int g, double kb) { return g == 1 && kb == 2 ? 4.0 : kb; }},
        // Group 0 moves 2 KB for both AR2 and AR3, group 1 4 KB for AR3: AR3 has AR2's outcome in
        // the memo but another request, so it is asked again.
        {"a later request differs", {1, 2, 3}, [](int g, double kb) { return kb == 3 ? (g == 0 ? 2.0 : 4.0) : kb; }},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        TwoGroups f(c.requests_kb, c.flow_kb);
        const SimResult stepwise = f.run(false);
        const SimResult lockstep = f.run(true);
        require_same_outcome(lockstep, stepwise);
        CHECK(lockstep.events < stepwise.events);
        // a, then per collective its latency, its flow (1 us a KB) and x_i.
        for (const int g : {0, 1}) {
            Time finish = us;
            for (const double kb : c.requests_kb) finish += us + us * c.flow_kb(g, kb) + us;
            CHECK(lockstep.ranks[2 * g].finish == finish);
            CHECK(lockstep.ranks[2 * g + 1].finish == finish);
        }
    }
}
