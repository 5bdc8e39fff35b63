#include <catch2/catch.hpp>

#include "sim/executor.hpp"
#include "sim/fingerprint.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

namespace {

// A miniature 3D-parallel iteration: 2 pipeline stages x 2 data-parallel replicas x 2 tensor
// ranks (rank = 4 stage + 2 replica + tensor rank), 2 micro-batches with recomputation, tensor
// all-reduces between compute ops, and data-parallel all-reduces over one shared spine link.
// Slots: 0 tensor group, 1 data group, 2 activations pair, 3 gradients pair.
struct Mini3d {
    TestProgram p;
    std::vector<Link> links;
    TablePlanner planner;

    static constexpr int kMicroBatches = 2;
    // Stage durations in microseconds: forward a, b, c; recompute a, b; backward a, b; optimizer.
    static constexpr double kUs[2][8] = {{3, 4, 2, 3, 4, 6, 5, 7}, {4, 3, 3, 4, 3, 7, 6, 5}};

    Mini3d() {
        const Time us = microseconds(1.0);
        for (int s = 0; s < 2; ++s) build_stage(s);
        links.push_back({"spine", gigabytes_per_second(10.0)});
        for (std::uint32_t s = 0; s < 2; ++s) {
            for (std::uint32_t d = 0; d < 2; ++d) {
                const auto g = p.group({4 * s + 2 * d, 4 * s + 2 * d + 1}, "tp");
                links.push_back({"nvlink", gigabytes_per_second(100.0)});
                planner.plans[g] = one_flow_plan(us * 2, Bytes(1e6), {static_cast<LinkId>(links.size() - 1)});
            }
            for (std::uint32_t t = 0; t < 2; ++t) {
                const auto g = p.group({4 * s + t, 4 * s + 2 + t}, "dp");
                // Reduce-scatter then all-gather, both over the shared spine.
                TransferPlan plan = one_flow_plan(us * 5, Bytes(4e6), {0});
                plan.phases.push_back(plan.phases.front());
                planner.plans[g] = plan;
            }
        }
        for (std::uint32_t d = 0; d < 2; ++d) {
            for (std::uint32_t t = 0; t < 2; ++t) {
                links.push_back({"pp", gigabytes_per_second(25.0)});
                const auto link = static_cast<LinkId>(links.size() - 1);
                const auto act = p.group({2 * d + t, 4 + 2 * d + t}, "pp.act");
                const auto grad = p.group({2 * d + t, 4 + 2 * d + t}, "pp.grad");
                planner.plans[act] = one_flow_plan(us, Bytes(1e6), {link});
                planner.plans[grad] = one_flow_plan(us, Bytes(1e6), {link});
            }
        }
        for (std::uint32_t r = 0; r < 8; ++r) {
            const std::uint32_t s = r / 4, d = (r / 2) % 2, t = r % 2;
            p.rank(s, {4 * s + d, 4 * s + 2 + t, 8 + 4 * d + 2 * t, 8 + 4 * d + 2 * t + 1});
        }
    }

    void build_stage(int s) {
        const auto l = p.add_list();
        const auto* u = kUs[s];
        const auto dur = [&](int i) { return to_time(u[i] * 1e-6); };
        const auto tp = [&](const char* label, std::uint32_t dep) {
            return p.comm(l, OpKind::AllReduce, label, 0, Bytes(1e6), stream::kTensorComm, comm_class::kTensor, {dep});
        };
        for (int mb = 0; mb < kMicroBatches; ++mb) {
            std::uint32_t a = 0;
            if (s == 1) {
                const auto r = p.comm(l, OpKind::Recv, "recv.act", 2, Bytes(1e6), stream::kPipelineRecv,
                                      comm_class::kPipeline);
                a = p.compute(l, "fwd.a", dur(0), 0, OpCategory::Compute, {r});
            } else {
                a = p.compute(l, "fwd.a", dur(0));
            }
            const auto b = p.compute(l, "fwd.b", dur(1), 0, OpCategory::Compute, {a});
            const auto c = p.compute(l, "fwd.c", dur(2), 0, OpCategory::Compute, {tp("fwd.ar", b)});
            if (s == 0) {
                p.comm(l, OpKind::Send, "send.act", 2, Bytes(1e6), stream::kPipelineSend, comm_class::kPipeline, {c});
            }
        }
        std::uint32_t last = 0;
        for (int mb = 0; mb < kMicroBatches; ++mb) {
            std::uint32_t ra = 0;
            if (s == 0) {
                const auto r = p.comm(l, OpKind::Recv, "recv.grad", 3, Bytes(1e6), stream::kPipelineRecv,
                                      comm_class::kPipeline);
                ra = p.compute(l, "re.a", dur(3), 0, OpCategory::Recompute, {r});
            } else {
                ra = p.compute(l, "re.a", dur(3), 0, OpCategory::Recompute);
            }
            p.compute(l, "re.b", dur(4), 0, OpCategory::Recompute, {ra});
            const auto ba = p.compute(l, "bwd.a", dur(5));
            last = p.compute(l, "bwd.b", dur(6), 0, OpCategory::Compute, {tp("bwd.ar", ba)});
            if (s == 1) {
                p.comm(l, OpKind::Send, "send.grad", 3, Bytes(1e6), stream::kPipelineSend, comm_class::kPipeline,
                       {last});
            }
        }
        const auto dp = p.comm(l, OpKind::AllReduce, "dp.ar", 1, Bytes(8e6), stream::kDataComm, comm_class::kData,
                               {last});
        p.compute(l, "optimizer", dur(7), 0, OpCategory::Compute, {dp});
    }

    SimResult run(bool merge, Recorder* rec = nullptr) {
        std::vector<SimObserver*> observers;
        if (rec) observers.push_back(rec);
        SimOptions options;
        options.merge_compute_chains = merge;
        return simulate(p.program, p.costs, links, planner, observers, options);
    }
};

void check_same(const SimResult& a, const SimResult& b) { require_same_outcome(a, b); }

}  // namespace

TEST_CASE("the same program gives the same fingerprint and times", "[sim][determinism]") {
    Mini3d mini;
    const SimResult first = mini.run(true);
    const SimResult second = mini.run(true);
    check_same(first, second);
    CHECK(first.events == second.events);
    CHECK(first.fingerprint != 0);
}

TEST_CASE("a run hands on each op list's totals, in op-list order", "[sim][memory]") {
    Mini3d mini;
    mini.p.program.op_lists[0].resident = Bytes(123.0);
    mini.p.program.op_lists[1].resident = Bytes(456.0);
    const SimResult r = mini.run(true);
    REQUIRE(r.op_list_totals.size() == 2);
    CHECK(r.op_list_totals[0].memory.peak.value == 123.0);
    CHECK(r.op_list_totals[1].memory.peak.value == 456.0);
}

TEST_CASE("merging compute chains changes no result", "[sim][determinism]") {
    Mini3d mini;
    Recorder merged_ops, single_ops;
    const SimResult merged = mini.run(true, &merged_ops);
    const SimResult single = mini.run(false, &single_ops);
    check_same(merged, single);
    // Merging did happen: fewer events for the same ops.
    CHECK(merged.events < single.events);
    // Observers saw every op, once, at the same times.
    REQUIRE(merged_ops.ops.size() == single_ops.ops.size());
    for (const auto& [key, t] : single_ops.ops) {
        const auto& m = merged_ops.ops.at(key);
        CHECK(m.started == t.started);
        CHECK(m.finished == t.finished);
        CHECK(m.starts == 1);
        CHECK(m.finishes == 1);
    }
    // Observing does not change the run either.
    check_same(mini.run(true), merged);
}

TEST_CASE("the breakdown adds up to each rank's finish time", "[sim][breakdown]") {
    Mini3d mini;
    const SimResult r = mini.run(true);
    for (std::uint32_t rank = 0; rank < 8; ++rank) {
        const RankBreakdown& b = r.ranks[rank].breakdown;
        const auto* u = Mini3d::kUs[rank / 4];
        // Busy time per category is the sum of the stage's op durations: per micro-batch the
        // forward (a+b+c) and backward (a+b) are compute, the recompute (a+b) is recompute, plus
        // one optimizer step.
        const double compute_us = Mini3d::kMicroBatches * (u[0] + u[1] + u[2] + u[5] + u[6]) + u[7];
        const double recompute_us = Mini3d::kMicroBatches * (u[3] + u[4]);
        CHECK(b.compute == to_time(compute_us * 1e-6));
        CHECK(b.recompute == to_time(recompute_us * 1e-6));
        CHECK(exposed(b, comm_class::kTensor) > Time(0));
        CHECK(exposed(b, comm_class::kData) > Time(0));  // the optimizer waits for the data all-reduce
        CHECK(sum(b) == r.ranks[rank].finish);
        CHECK(r.ranks[rank].finish <= r.makespan);
    }
}

TEST_CASE("a one-picosecond change moves the fingerprint", "[sim][determinism]") {
    Mini3d mini;
    const SimResult before = mini.run(true);
    mini.p.costs.durations[0][0] += Time(1);  // stage 0, first forward op
    const SimResult after = mini.run(true);
    CHECK(before.fingerprint != after.fingerprint);
}

TEST_CASE("the fingerprint is the sum of every completion's digest", "[sim][determinism]") {
    // fingerprint.hpp's definition, from the times an observer saw. The engine computes it
    // otherwise: a chain's digests at once, reused for another rank of the op list that ends the
    // same chain at the same moment (Engine::ChainMemo; the tensor ranks of Mini3d do, ranks of
    // one stage in the two replicas, which share the spine, need not), and a lockstep run's once
    // for all its members (without observers).
    Mini3d mini;
    Recorder rec;
    const SimResult observed = mini.run(true, &rec);
    std::uint64_t expected = 0;
    for (const auto& [key, t] : rec.ops) {
        REQUIRE(t.finishes == 1);
        expected += completion_digest(t.finished.value, key.first, key.second);
    }
    CHECK(observed.fingerprint == expected);
    CHECK(mini.run(true).fingerprint == expected);
    CHECK(mini.run(false).fingerprint == expected);
}

TEST_CASE("ranks of one op list that end a chain at different moments digest it apart", "[sim][determinism]") {
    // Ranks {0,1} and {2,3} run one op list, a (1 us) -> all-reduce -> chain b1 (1 us), b2 (2 us),
    // their all-reduces on links of 10 and 1 GB/s: the two groups end the chain at different
    // moments, one right after the other, and the fingerprint must tell them apart.
    TestProgram p;
    TablePlanner planner;
    std::vector<Link> links;
    const Time us = microseconds(1.0);
    const auto l = p.add_list();
    const auto a = p.compute(l, "a", us);
    const auto ar = p.comm(l, OpKind::AllReduce, "ar", 0, Bytes(1e4), stream::kTensorComm, comm_class::kTensor, {a});
    const auto b1 = p.compute(l, "b1", us, stream::kCompute, OpCategory::Compute, {ar});
    p.compute(l, "b2", us * 2.0, stream::kCompute, OpCategory::Compute, {b1});
    for (const double gbps : {10.0, 1.0}) {
        const auto base = static_cast<std::uint32_t>(2 * links.size());
        const auto g = p.group({base, base + 1}, "tp");
        p.rank(l, {g});
        p.rank(l, {g});
        links.push_back({"own" + std::to_string(g), gigabytes_per_second(gbps)});
        planner.plans[g] = one_flow_plan(us, Bytes(1e4), {static_cast<LinkId>(links.size() - 1)});
    }
    Recorder rec;
    std::vector<SimObserver*> observers{&rec};
    const SimResult observed = simulate(p.program, p.costs, links, planner, observers);
    REQUIRE(rec.at(0, b1).finished != rec.at(2, b1).finished);
    std::uint64_t expected = 0;
    for (const auto& [key, t] : rec.ops) expected += completion_digest(t.finished.value, key.first, key.second);
    CHECK(observed.fingerprint == expected);
    CHECK(simulate(p.program, p.costs, links, planner).fingerprint == expected);
}
