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

constexpr int kSparseStreams = 5;

// Stream 0 takes about two ops in three; a communication op is an op of stream 1 with
// probability 1/2, of stream 2 or 3 with probability 1/4 and of stream 4 with probability 1/50.
// Each op depends on up to 2 of the 40 ops before it.
OpList training_like_list(std::mt19937& rng, std::uint32_t n) {
    OpList list;
    OpListBuilder b(list);
    std::uniform_int_distribution<int> percent(0, 99);
    std::uniform_int_distribution<int> dep_count(0, 2);
    const int comm_percent[kSparseStreams] = {0, 50, 25, 25, 2};
    for (std::uint32_t i = 0; i < n; ++i) {
        Op op;
        const int p = percent(rng);
        op.stream = static_cast<StreamId>(p < 66 ? 0 : 1 + (p - 66) % (kSparseStreams - 1));
        op.kind = percent(rng) < comm_percent[op.stream] ? OpKind::AllReduce : OpKind::Gemm;
        std::vector<std::uint32_t> deps;
        for (int d = dep_count(rng); d > 0 && i > 0; --d) {
            const std::uint32_t back = std::uniform_int_distribution<std::uint32_t>(1, i < 40 ? i : 40)(rng);
            deps.push_back(i - back);
        }
        b.add(op, deps);
    }
    return list;
}

// before[a] as a bit set over b: op a finishes before op b starts in every execution (the
// transitive closure of dependencies and stream order).
std::vector<std::vector<bool>> happens_before(const OpList& list) {
    const std::size_t n = list.ops.size();
    std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
    std::vector<std::size_t> last(256, n);  // the previous op of each stream (a StreamId is a byte)
    for (std::size_t b = 0; b < n; ++b) {
        const Op& o = list.ops[b];
        std::vector<std::size_t> direct(list.deps.begin() + o.first_dep, list.deps.begin() + o.first_dep + o.dep_count);
        if (last[o.stream] < n) direct.push_back(last[o.stream]);
        last[o.stream] = b;
        for (const std::size_t a : direct) {
            before[a][b] = true;
            for (std::size_t z = 0; z < a; ++z) {
                if (before[z][a]) before[z][b] = true;
            }
        }
    }
    return before;
}

// Checks ordered_streams' bits for communication op `o` against the definition: bit s is set
// exactly when every op of stream s is ordered with o (`before`: happens_before(list)). Counts
// the set and clear answers, so that callers can check both occur.
void check_bits_of(const OpList& list, const std::vector<StreamMask>& ordered,
                   const std::vector<std::vector<bool>>& before, std::size_t o, int streams, int& set_bits,
                   int& clear_bits) {
    for (int s = 0; s < streams; ++s) {
        if (s == list.ops[o].stream) continue;
        bool all = true;
        for (std::size_t a = 0; a < list.ops.size(); ++a) {
            if (list.ops[a].stream == s && !before[a][o] && !before[o][a]) all = false;
        }
        CHECK(((ordered[o] >> s) & 1U) == (all ? 1U : 0U));
        (all ? set_bits : clear_bits) += 1;
    }
}

}  // namespace

// On 4, 7 and 11 streams: the analysis keeps rows 4, 8 or 16 wide, the narrowest that holds the
// list's streams, and each width is checked.
TEST_CASE("ordered_streams sets a stream's bit exactly when all its ops are ordered with the op",
          "[sim][op_order]") {
    std::mt19937 rng(12345);
    const int kStreams = GENERATE(4, 7, 11);
    int set_bits = 0;
    int clear_bits = 0;
    for (int trial = 0; trial < 40; ++trial) {
        const OpList list = random_list(rng, 60, kStreams);
        const std::vector<StreamMask> ordered = ordered_streams(list);
        // The engine's index (compute chains merged, durations set) reads as the list does.
        const std::vector<Time> durations(list.ops.size(), Time(1000));
        CHECK(ordered_streams(OpListIndex(list, durations, true, CommClassRules{kMaxCommClasses, 0})) == ordered);
        const auto before = happens_before(list);
        REQUIRE(ordered.size() == list.ops.size());
        for (std::size_t o = 0; o < list.ops.size(); ++o) {
            if (!is_communication(list.ops[o].kind)) {
                CHECK(ordered[o] == 0);
                continue;
            }
            check_bits_of(list, ordered, before, o, kStreams, set_bits, clear_bits);
        }
    }
    // Both answers occur, so the comparison exercises each.
    CHECK(set_bits > 0);
    CHECK(clear_bits > 0);
}

// Long op lists shaped like a training step's: a busy compute stream, dependencies on recent ops,
// and communication ops that are rare on some streams (a data-parallel reduction every few
// hundred ops). The search for the first op of another stream that waits for a communication op
// then crosses long stretches of that stream, which the short random lists above never do.
TEST_CASE("ordered_streams on long lists with rare communication matches its definition", "[sim][op_order]") {
    std::mt19937 rng(2024);
    int set_bits = 0;
    int clear_bits = 0;
    int longest_gap = 0;  // compute ops between two communication ops of stream 4
    for (int trial = 0; trial < 3; ++trial) {
        const OpList list = training_like_list(rng, 1500);
        const std::vector<StreamMask> ordered = ordered_streams(list);
        const auto before = happens_before(list);
        REQUIRE(ordered.size() == list.ops.size());
        int gap = 0;
        for (std::size_t o = 0; o < list.ops.size(); ++o) {
            const Op& op = list.ops[o];
            if (op.stream == 0) ++gap;
            if (!is_communication(op.kind)) {
                CHECK(ordered[o] == 0);
                continue;
            }
            if (op.stream == 4) {
                longest_gap = std::max(longest_gap, gap);
                gap = 0;
            }
            check_bits_of(list, ordered, before, o, kSparseStreams, set_bits, clear_bits);
        }
    }
    CHECK(set_bits > 0);
    CHECK(clear_bits > 0);
    // Stream 4 posts a communication op about every 1 / (0.34 / 4 * 0.02) = 590 ops, i.e. about
    // 390 compute ops apart: far more than one doubling step, so the search gallops.
    CHECK(longest_gap > 100);
}

// ExclusiveTransfers copies the analysis of one op list to another when same_order_inputs holds,
// so it must hold only when the analyses agree: across changes ordered_streams does not read
// (labels, sizes, one communication kind for another) it holds and the results are equal; a
// changed dependency, stream or compute/communication kind makes it fail.
TEST_CASE("same_order_inputs holds exactly across changes ordered_streams does not read", "[sim][op_order]") {
    std::mt19937 rng(777);
    for (int trial = 0; trial < 20; ++trial) {
        const OpList list = training_like_list(rng, 400);
        OpList relabelled = list;
        for (Op& op : relabelled.ops) {
            op.label += 7;
            op.bytes = Bytes(op.bytes.value + 1.0);
            op.flops = Flops(op.flops.value * 2.0);
            if (op.kind == OpKind::AllReduce) op.kind = OpKind::AllGather;
        }
        REQUIRE(same_order_inputs(list, relabelled));
        CHECK(ordered_streams(list) == ordered_streams(relabelled));

        const std::size_t at = std::uniform_int_distribution<std::size_t>(1, list.ops.size() - 1)(rng);
        OpList other_stream = list;
        other_stream.ops[at].stream = static_cast<StreamId>((other_stream.ops[at].stream + 1) % kSparseStreams);
        CHECK_FALSE(same_order_inputs(list, other_stream));
        OpList other_kind = list;
        other_kind.ops[at].kind = is_communication(list.ops[at].kind) ? OpKind::Gemm : OpKind::AllReduce;
        CHECK_FALSE(same_order_inputs(list, other_kind));
        if (!list.deps.empty()) {
            OpList other_dep = list;
            other_dep.deps.front() += 1;
            CHECK_FALSE(same_order_inputs(list, other_dep));
        }
        OpList shorter = list;
        shorter.ops.pop_back();
        CHECK_FALSE(same_order_inputs(list, shorter));
    }
}
