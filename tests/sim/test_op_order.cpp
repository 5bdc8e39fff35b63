// ordered_streams (sim/op_order.hpp) against its definition, on op lists with random
// dependencies: for a communication op o, the bit of stream s is set exactly when every op of s
// finishes before o starts or starts after o finishes, for every execution of the list.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/op_order.hpp"

namespace {

using namespace cuboid;
using namespace cuboid::sim;

// An op list of `n` ops on `streams` streams, each op a communication op with probability 1/3,
// with up to 3 dependencies on random earlier ops.
OpList random_list(std::mt19937& rng, std::uint32_t n, int streams) {
    OpList list;
    OpListBuilder b(list);
    std::uniform_int_distribution<int> stream(0, streams - 1);
    std::uniform_int_distribution<int> kind(0, 2);
    std::uniform_int_distribution<int> dep_count(0, 3);
    for (std::uint32_t i = 0; i < n; ++i) {
        Op op;
        op.stream = static_cast<StreamId>(stream(rng));
        op.kind = kind(rng) == 0 ? OpKind::AllReduce : OpKind::Gemm;
        std::vector<std::uint32_t> deps;
        for (int d = dep_count(rng); d > 0 && i > 0; --d) {
            deps.push_back(std::uniform_int_distribution<std::uint32_t>(0, i - 1)(rng));
        }
        b.add(op, deps);
    }
    return list;
}

// before[a][b]: op a must finish before op b starts in every execution, i.e. a reaches b through
// dependencies and stream order (the transitive closure, by brute force).
std::vector<std::vector<bool>> happens_before(const OpList& list) {
    const std::size_t n = list.ops.size();
    std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
    for (std::size_t b = 0; b < n; ++b) {
        const Op& o = list.ops[b];
        std::vector<std::size_t> direct(list.deps.begin() + o.first_dep, list.deps.begin() + o.first_dep + o.dep_count);
        for (std::size_t a = b; a-- > 0;) {
            if (list.ops[a].stream == o.stream) {
                direct.push_back(a);  // the previous op of the same stream
                break;
            }
        }
        for (const std::size_t a : direct) {
            before[a][b] = true;
            for (std::size_t z = 0; z < n; ++z) {
                if (before[z][a]) before[z][b] = true;
            }
        }
    }
    return before;
}

}  // namespace

TEST_CASE("ordered_streams sets a stream's bit exactly when all its ops are ordered with the op",
          "[sim][op_order]") {
    std::mt19937 rng(12345);
    constexpr int kStreams = 4;
    int set_bits = 0;
    int clear_bits = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const OpList list = random_list(rng, 60, kStreams);
        const std::vector<std::uint8_t> ordered = ordered_streams(list);
        const auto before = happens_before(list);
        REQUIRE(ordered.size() == list.ops.size());
        for (std::size_t o = 0; o < list.ops.size(); ++o) {
            if (!is_communication(list.ops[o].kind)) {
                CHECK(ordered[o] == 0);
                continue;
            }
            for (int s = 0; s < kStreams; ++s) {
                if (s == list.ops[o].stream) continue;
                bool all = true;
                for (std::size_t a = 0; a < list.ops.size(); ++a) {
                    if (list.ops[a].stream == s && !before[a][o] && !before[o][a]) all = false;
                }
                CHECK(((ordered[o] >> s) & 1U) == (all ? 1U : 0U));
                (all ? set_bits : clear_bits) += 1;
            }
        }
    }
    // Both answers occur, so the comparison exercises each.
    CHECK(set_bits > 0);
    CHECK(clear_bits > 0);
}
