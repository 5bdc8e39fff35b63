#include <catch2/catch.hpp>

#include "sim/memory.hpp"

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
