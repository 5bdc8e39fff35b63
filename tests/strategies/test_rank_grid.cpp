// The plan as an ordered list of named axes (strategies/rank_grid.hpp) and the communicator
// families derived from it (strategies/group_families.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "sim/program.hpp"
#include "strategies/group_families.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/labels.hpp"
#include "strategies/program_groups.hpp"
#include "strategies/program_symmetry.hpp"
#include "strategies/rank_grid.hpp"

using namespace cuboid;

namespace {

Layout layout(int t, int c, int d, int p) {
    Layout l;
    l.tensor = t;
    l.context = c;
    l.data = c * d;
    l.pipeline = p;
    l.chunk_layers.assign(static_cast<std::size_t>(p), 1);
    return l;
}

// The set of groups of a family, each as its sorted ranks.
std::set<std::vector<std::uint32_t>> as_sets(const RankGrid::Partition& part) {
    std::set<std::vector<std::uint32_t>> out;
    for (auto g : part.groups) {
        std::sort(g.begin(), g.end());
        out.insert(g);
    }
    return out;
}

}  // namespace

TEST_CASE("a rank grid numbers ranks with the first axis fastest") {
    const RankGrid g({{"a", 2}, {"b", 3}, {"c", 4}});
    REQUIRE(g.ranks() == 24);
    std::set<std::uint32_t> seen;
    for (int c = 0; c < 4; ++c)
        for (int b = 0; b < 3; ++b)
            for (int a = 0; a < 2; ++a) {
                const int coords[] = {a, b, c};
                const std::uint32_t r = g.rank(coords);
                CHECK(r == static_cast<std::uint32_t>(a + 2 * (b + 3 * c)));
                CHECK(g.coord(r, 0) == a);
                CHECK(g.coord(r, 1) == b);
                CHECK(g.coord(r, 2) == c);
                seen.insert(r);
            }
    CHECK(seen.size() == 24);
    // A shift moves one coordinate, modulo its axis, and keeps the others.
    const int at[] = {1, 2, 3};
    const std::uint32_t moved = g.shifted(g.rank(at), 1, 2);
    CHECK(g.coord(moved, 0) == 1);
    CHECK(g.coord(moved, 1) == 1);
    CHECK(g.coord(moved, 2) == 3);
    CHECK(g.shifted(g.rank(at), 1, -3) == g.rank(at));
}

TEST_CASE("a resplit view keeps every rank where it is") {
    const RankGrid g({{"a", 2}, {"b", 6}, {"c", 2}});
    const RankGrid v = g.resplit("a", "b", {{"x", 4}, {"y", 3}});
    REQUIRE(v.ranks() == g.ranks());
    for (std::uint32_t r = 0; r < 24; ++r) {
        // the block a + 2b = x + 4y, and c unchanged
        CHECK(g.coord(r, 0) + 2 * g.coord(r, 1) == v.coord(r, 0) + 4 * v.coord(r, 1));
        CHECK(g.coord(r, 2) == v.coord(r, 2));
    }
    CHECK_THROWS_AS(g.resplit("a", "b", {{"x", 5}}), std::logic_error);
    CHECK_THROWS_AS(g.resplit("b", "a", {{"x", 12}}), std::logic_error);
    CHECK_THROWS_AS(RankGrid({{"a", 2}, {"a", 3}}), std::logic_error);
    CHECK_THROWS_AS(RankGrid({{"a", 0}}), std::logic_error);
    CHECK_THROWS_AS(g.index("z"), std::logic_error);
}

TEST_CASE("a partition covers every rank once, its groups varying only along the named axes") {
    const RankGrid g({{"a", 2}, {"b", 3}, {"c", 4}});
    const std::string_view along[] = {"a", "c"};
    const auto part = g.partition(along);
    REQUIRE(part.groups.size() == 3);
    std::set<std::uint32_t> seen;
    for (std::size_t k = 0; k < part.groups.size(); ++k) {
        const auto& ranks = part.groups[k];
        REQUIRE(ranks.size() == 8);
        CHECK(std::is_sorted(ranks.begin(), ranks.end()));
        for (const std::uint32_t r : ranks) {
            CHECK(g.coord(r, 1) == g.coord(ranks.front(), 1));  // b fixed
            CHECK(part.group_of[r] == k);
            seen.insert(r);
        }
    }
    CHECK(seen.size() == 24);
    // Ring order: the first varying axis fastest.
    CHECK(part.groups[0] == std::vector<std::uint32_t>{0, 1, 6, 7, 12, 13, 18, 19});
}

TEST_CASE("the layout's grid is Megatron's rank formula, context inside data") {
    const Layout l = layout(2, 2, 3, 2);  // t 2, c 2, d' 3, p 2: 24 ranks
    const RankGrid g = l.grid();
    REQUIRE(g.ranks() == l.gpus());
    for (std::uint32_t r = 0; r < 24; ++r) {
        const int dp = g.coord(r, g.index(axis::kContext)) + 2 * g.coord(r, g.index(axis::kData));
        CHECK(l.rank(g.coord(r, 0), dp, g.coord(r, g.index(axis::kPipeline))) == r);
        CHECK(l.context_of(l.dp_of(r)) == g.coord(r, g.index(axis::kContext)));
    }
}

TEST_CASE("the groups a program gets are its layout's families") {
    // t 2 x (c 2 x d' 2) x p 2, ZeRO-3 hybrid sharding over 2 of the 4 data indices, experts
    // ep 4 x etp 1 over a stage's 8 tensor x data ranks.
    Layout l = layout(2, 2, 2, 2);
    l.data_shard = 2;
    l.experts = true;
    l.expert = 4;
    sim::Program p;
    Labels labels;
    build_groups(p, l, labels, false, true);
    REQUIRE(p.ranks.size() == 16);
    const auto group = [&](std::uint32_t r, std::uint16_t slot) {
        auto ranks = p.groups[p.ranks[r].groups[slot]].ranks;
        std::sort(ranks.begin(), ranks.end());
        return ranks;
    };
    using R = std::vector<std::uint32_t>;
    // rank 5: tp 1, dp 2 (context 0 of data 1), stage 0
    CHECK(group(5, slot::kTensor) == R{4, 5});
    CHECK(group(5, slot::kData) == R{1, 3, 5, 7});
    CHECK(group(5, slot::kContext) == R{5, 7});
    CHECK(group(5, slot::kShard) == R{5, 7});
    CHECK(group(5, slot::kShardGather) == R{5, 7});
    CHECK(group(5, slot::kReplica) == R{1, 5});
    CHECK(group(5, slot::kExpert) == R{4, 5, 6, 7});  // q = 5: expert-data index 1
    CHECK(group(5, slot::kExpertData) == R{1, 5});
    CHECK(group(5, slot::kActToNext) == R{5, 13});
    // Slots of families the layout lacks alias the tensor group.
    CHECK(group(5, slot::kTensorAxis1) == R{4, 5});
    // Every family's groups are the partition of its grid along its axes.
    for (const GroupFamily& f : group_families(l, true)) {
        std::set<R> from_program;
        for (std::uint32_t r = 0; r < 16; ++r) from_program.insert(group(r, f.slot));
        CHECK(from_program == as_sets(f.grid.partition(f.varying)));
    }
}

TEST_CASE("a shift that splits a family's groups is never proposed", "[strategies][fold]") {
    // 4 replicas, state sharded over pairs of them: a shift by one replica maps the shard group
    // {0, 1} onto {1, 2}, which is no group; by two it maps shard groups onto shard groups.
    Layout l = layout(1, 1, 4, 1);
    const auto plain = symmetry_generators(l, TensorMode::OneD);
    CHECK(plain.size() == 2);  // data shifts by 1 and 2
    l.data_shard = 2;
    const auto sharded = symmetry_generators(l, TensorMode::OneD);
    REQUIRE(sharded.size() == 1);
    CHECK(sharded[0][0] == 2);
    // Experts over a stage's t 2 x d 2 ranks q = tp + 2 dp, ep 2: expert groups {0,1}, {2,3} (the
    // tensor groups), expert-data groups {0,2}, {1,3}. The data shift (q + 2) and the tensor swap
    // (0 <-> 1, 2 <-> 3) map both families onto themselves: both kept.
    Layout e = layout(2, 1, 2, 1);
    e.experts = true;
    e.expert = 2;
    CHECK(symmetry_generators(e, TensorMode::OneD).size() == 2);
    // ep 2, etp 1 over t 4 x d 1: expert groups {0,1}, {2,3}; a tensor shift by one maps {0,1} to
    // {1,2}: dropped; by two: kept; inside blocks of 2: kept.
    Layout f = layout(4, 1, 1, 1);
    f.experts = true;
    f.expert = 2;
    const auto gens = symmetry_generators(f, TensorMode::OneD);
    REQUIRE(gens.size() == 2);
    CHECK(gens[0][0] == 2);
    CHECK(gens[1][0] == 1);
    CHECK(gens[1][1] == 0);
}
