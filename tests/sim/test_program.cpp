#include <catch2/catch.hpp>

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
