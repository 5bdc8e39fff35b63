#include <catch2/catch.hpp>

#include <vector>

#include "sim/memory.hpp"
#include "sim/op_list_index.hpp"

using namespace cuboid;
using namespace cuboid::sim;

TEST_CASE("peak memory walks allocations and frees in issue order", "[sim][memory]") {
    OpList list;
    list.resident = Bytes(10.0);
    OpListBuilder b(list);
    const auto op = [](double alloc, double release) {
        Op o;
        o.memory_alloc = Bytes(alloc);
        o.memory_free = Bytes(release);
        return o;
    };
    b.add(op(5, 0));
    b.add(op(3, 5));
    b.add(op(4, 3));
    // 10 resident; op 0: +5 -> 15; op 1: +3 -> 18 (its own 5-byte free comes after), then 13;
    // op 2: +4 -> 17, then 14. Peak 18 at op 1.
    const MemoryPeak peak = peak_memory(list);
    CHECK(peak.peak.value == 18.0);
    CHECK(peak.at_op == 1);
}

TEST_CASE("an op list without allocations peaks at its resident memory", "[sim][memory]") {
    OpList list;
    list.resident = Bytes(7.0);
    OpListBuilder(list).add(Op{});
    CHECK(peak_memory(list).peak.value == 7.0);
    CHECK(peak_memory(list).at_op == 0);
}

// The totals walk sums GEMM FLOPs beside the peak, and the op-list index, which reads every op
// anyway, takes the same totals in its own pass (simulate() hands them on in SimResult).
TEST_CASE("op list totals: the peak and the GEMM FLOPs, also from the index's pass", "[sim][memory]") {
    OpList list;
    list.resident = Bytes(10.0);
    OpListBuilder b(list);
    const auto op = [](OpKind kind, double flops, double alloc, double release) {
        Op o;
        o.kind = kind;
        o.flops = Flops(flops);
        o.memory_alloc = Bytes(alloc);
        o.memory_free = Bytes(release);
        return o;
    };
    b.add(op(OpKind::Gemm, 100.0, 5, 0));
    b.add(op(OpKind::BatchedGemm, 20.0, 3, 5));
    b.add(op(OpKind::Softmax, 7.0, 4, 3));  // not a GEMM: its FLOPs do not count
    Op all_reduce = op(OpKind::AllReduce, 0.0, 0, 0);
    all_reduce.stream = 1;
    b.add(all_reduce, {2});
    const OpListTotals totals = op_list_totals(list);
    CHECK(totals.memory.peak.value == 18.0);
    CHECK(totals.memory.at_op == 1);
    CHECK(totals.gemm_flops.value == 120.0);
    const std::vector<Time> durations(list.ops.size(), Time(5));
    const OpListIndex index(list, durations, true, CommClassRules{});
    CHECK(index.totals.memory.peak.value == totals.memory.peak.value);
    CHECK(index.totals.memory.at_op == totals.memory.at_op);
    CHECK(index.totals.gemm_flops.value == totals.gemm_flops.value);
}
