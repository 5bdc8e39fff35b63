// OpListIndex: the packed stream slots give back what the op list holds, chains carry their time
// and recomputation part in each of the three encodings (none, all, mixed), and requirements
// are listed in stream order.
#include "sim/op_list_index.hpp"

#include "sim_test_support.hpp"

namespace cuboid::sim::test {
namespace {

constexpr OpCategory kRe = OpCategory::Recompute;
constexpr OpCategory kFw = OpCategory::Compute;

TEST_CASE("op list index: chains sum their time and recomputation, whatever their mix") {
    TestProgram t;
    const auto l = t.add_list();
    // Chains of stream 0: a0 a1 a2 (mixed: it ends at a2, which x0 waits for); b0 c0 (mixed: c0
    // needs no more of stream 1 than b0, and it ends at c0, which x1 waits for); d0 d1 (all
    // recomputation). Durations are distinct primes, so each sum below names its ops.
    const auto a0 = t.compute(l, "a0", Time(3), 0, kRe);
    const auto a1 = t.compute(l, "a1", Time(5), 0, kRe);
    const auto a2 = t.compute(l, "a2", Time(7), 0, kFw);
    const auto x0 = t.comm(l, OpKind::AllReduce, "x0", 2, Bytes(1024.0), 1, comm_class::kTensor, {a2});
    const auto b0 = t.compute(l, "b0", Time(11), 0, kFw, {x0});
    const auto c0 = t.compute(l, "c0", Time(13), 0, kRe, {x0});
    const auto x1 = t.comm(l, OpKind::AllGather, "x1", 1, Bytes(2048.5), 1, comm_class::kTensor, {c0});
    const auto d0 = t.compute(l, "d0", Time(17), 0, kRe, {x1});
    const auto d1 = t.compute(l, "d1", Time(19), 0, kRe);
    (void)a0, (void)a1, (void)b0, (void)d1;

    const OpListIndex index(t.program.op_lists[l], t.costs.durations[l], true, CommClassRules::of(t.program));
    const auto& compute = index.streams[stream::kCompute];
    REQUIRE(compute.size() == 7);
    // Chain heads at positions 0 (a0..a2), 3 (b0, c0) and 5 (d0, d1).
    CHECK(compute[0].chain_last == 2);
    CHECK(compute[3].chain_last == 4);
    CHECK(compute[5].chain_last == 6);
    // Times: sums of the durations; recomputation: the sums over the recompute ops only.
    CHECK(compute[0].chain_time() == 3 + 5 + 7);
    CHECK(chain_recompute(compute, 0) == 3 + 5);
    CHECK(compute[3].chain_time() == 11 + 13);
    CHECK(chain_recompute(compute, 3) == 13);
    CHECK(compute[5].chain_time() == 17 + 19);
    CHECK(chain_recompute(compute, 5) == 17 + 19);
    // Every op keeps its own duration, which the digest walk reads (the mixed encoding borrows
    // the second op's other word, not its duration).
    CHECK(compute[1].duration() == 5);
    CHECK(compute[4].duration() == 13);

    const auto& comm = index.streams[1];
    REQUIRE(comm.size() == 2);
    CHECK(comm[0].op == x0);
    CHECK(comm[0].kind() == OpKind::AllReduce);
    CHECK(comm[0].bytes() == Bytes(1024.0));
    CHECK(comm[0].group_slot() == 2);
    CHECK(comm[1].op == x1);
    CHECK(comm[1].kind() == OpKind::AllGather);
    CHECK(comm[1].bytes() == Bytes(2048.5));
    CHECK(comm[1].group_slot() == 1);
    CHECK(index.compute_requirement(comm[1]) == 5);  // c0 is the 5th op of the compute stream
    (void)d0;
}

TEST_CASE("op list index: an op's requirements come in stream order, one per other stream") {
    TestProgram t;
    const auto l = t.add_list();
    const auto s2 = t.compute(l, "s2", Time(1), 2);
    const auto s1a = t.compute(l, "s1a", Time(1), 1);
    const auto s1b = t.compute(l, "s1b", Time(1), 1);
    // Depends on stream 2's first op and on both ops of stream 1, listed out of stream order.
    t.compute(l, "c", Time(1), 0, kFw, {s2, s1b, s1a});

    const OpListIndex index(t.program.op_lists[l], t.costs.durations[l], true, CommClassRules::of(t.program));
    const StreamSlot& c = index.streams[stream::kCompute][0];
    REQUIRE(c.req_count == 2);
    const Requirement first = index.requirements[c.req_begin];
    const Requirement second = index.requirements[c.req_begin + 1];
    // Stream 1 needs 2 ops (its second op is at position 1), stream 2 needs 1.
    CHECK(first.stream == 1);
    CHECK(first.count == 2);
    CHECK(second.stream == 2);
    CHECK(second.count == 1);
    // Each awaited op knows that stream 0 waits for it.
    CHECK(index.awaited_by[1][1] == 1U);
    CHECK(index.awaited_by[1][0] == 0U);
    CHECK(index.awaited_by[2][0] == 1U);
}

// Three lists of one shape: `a`, then `b` with other labels (GPipe's middle stages: the same ops of
// other layers), then `c` with other labels, one longer duration and more resident memory.
std::uint32_t add_stage(TestProgram& t, const std::string& layer, Time second, double resident) {
    const auto l = t.add_list();
    t.program.op_lists[l].resident = Bytes(resident);
    t.compute(l, layer + ".fwd", Time(3));
    const auto g = t.compute(l, layer + ".gemm", second);
    const auto x = t.comm(l, OpKind::AllReduce, layer + ".ar", 1, Bytes(512.0), 1, comm_class::kTensor, {g});
    t.compute(l, layer + ".bwd", Time(7), 0, OpCategory::Compute, {x});
    return l;
}

TEST_CASE("op list index: lists alike but for their labels share one index; any other difference does not") {
    TestProgram t;
    const auto a = add_stage(t, "L1", Time(5), 100.0);
    const auto b = add_stage(t, "L2", Time(5), 100.0);
    const auto c = add_stage(t, "L3", Time(11), 200.0);
    const auto indexes = index_op_lists(t.program, t.costs, true);
    REQUIRE(indexes.size() == 3);
    const auto slots = [&](std::uint32_t l) { return indexes[l].streams[stream::kCompute]; };
    // b indexes exactly as a does: every slot, requirement and total.
    REQUIRE(slots(b).size() == slots(a).size());
    for (std::size_t p = 0; p < slots(a).size(); ++p) {
        CHECK(slots(b)[p].op == slots(a)[p].op);
        CHECK(slots(b)[p].word0 == slots(a)[p].word0);
        CHECK(slots(b)[p].word1 == slots(a)[p].word1);
        CHECK(slots(b)[p].chain_last == slots(a)[p].chain_last);
    }
    CHECK(indexes[b].requirements.size() == indexes[a].requirements.size());
    CHECK(indexes[b].totals.memory.peak == Bytes(100.0));
    // c differs in a duration and its resident memory: its own chain time and peak, as if built alone.
    const OpListIndex alone(t.program.op_lists[c], t.costs.durations[c], true, CommClassRules::of(t.program));
    CHECK(slots(c)[0].chain_time() == 3 + 11);
    CHECK(slots(c)[0].chain_time() == alone.streams[stream::kCompute][0].chain_time());
    CHECK(slots(a)[0].chain_time() == 3 + 5);
    CHECK(indexes[c].totals.memory.peak == Bytes(200.0));
    // A list alike but for a missing duration is not copied: its indexing reports the mismatch.
    t.costs.durations[b].pop_back();
    CHECK_THROWS_WITH(index_op_lists(t.program, t.costs, true), Catch::Contains("durations do not match"));
}

}  // namespace
}  // namespace cuboid::sim::test
