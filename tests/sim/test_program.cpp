#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <vector>

#include "sim/program.hpp"

using namespace cuboid::sim;

TEST_CASE("labels are interned once", "[sim][program]") {
    Program p;
    const auto a = p.intern("L0.fwd.qkv");
    const auto b = p.intern("L0.fwd.proj");
    CHECK(a != b);
    CHECK(p.intern("L0.fwd.qkv") == a);
    CHECK(p.labels.size() == 2);
    p.labels.push_back("by.hand");  // appended directly: found by the next intern
    CHECK(p.intern("by.hand") == 2);
    CHECK(p.labels.size() == 3);
}

TEST_CASE("the builder records each op's dependencies", "[sim][program]") {
    OpList list;
    OpListBuilder b(list);
    const auto x = b.add(Op{});
    const auto y = b.add(Op{}, {x});
    const auto z = b.add(Op{}, std::vector<std::uint32_t>{x, y});
    CHECK(z == 2);
    const Op& oz = list.ops[z];
    REQUIRE(oz.dep_count == 2);
    CHECK(list.deps[oz.first_dep] == x);
    CHECK(list.deps[oz.first_dep + 1] == y);
    CHECK(list.ops[x].dep_count == 0);
}

// An Op is one cache line: its GEMM shape has 32-bit dimensions and its dependency count 16 bits,
// so both are checked where ops are made, never wrapped.
TEST_CASE("a GEMM shape outside 32 bits and an op with too many dependencies are refused", "[sim][program]") {
    const GemmShape g{8192, 12288, 4096, 96};
    const PackedGemmShape packed = PackedGemmShape::of(g);
    CHECK(packed.unpacked().m == g.m);
    CHECK(packed.unpacked().n == g.n);
    CHECK(packed.unpacked().k == g.k);
    CHECK(packed.unpacked().batch == g.batch);
    const std::int64_t most = std::numeric_limits<std::int32_t>::max();
    CHECK(PackedGemmShape::of({most, 1, 1, 1}).m == most);
    CHECK_THROWS_AS(PackedGemmShape::of({most + 1, 1, 1, 1}), std::length_error);
    CHECK_THROWS_AS(PackedGemmShape::of({1, 1, most + 1, 1}), std::length_error);
    CHECK_THROWS_AS(PackedGemmShape::of({1, 1, 1, -1}), std::length_error);

    OpList list;
    OpListBuilder b(list);
    const auto first = b.add(Op{});
    const std::vector<std::uint32_t> deps(kMaxOpDependencies, first);
    const auto fine = b.add(Op{}, deps);
    CHECK(list.ops[fine].dep_count == kMaxOpDependencies);
    const std::vector<std::uint32_t> too_many(kMaxOpDependencies + 1, first);
    CHECK_THROWS_AS(b.add(Op{}, too_many), std::length_error);
    CHECK(list.ops.size() == 2);  // the refused op left the list as it was
    CHECK(list.deps.size() == kMaxOpDependencies);
}
