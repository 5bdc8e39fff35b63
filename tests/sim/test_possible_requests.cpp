// possible_requests (sim/symmetry.hpp): every request a rank's communication ops can make, each
// once, sorted. The list below has more distinct uses (87) than the first size of the table that
// drops repeats (64 slots, grown at half full), repeats in scattered order, and the two zeros.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/symmetry.hpp"

namespace {

using namespace cuboid;
using namespace cuboid::sim;

Op comm(OpKind kind, std::uint16_t slot, double bytes) {
    Op op;
    op.kind = kind;
    op.category = comm_category(0);
    op.group_slot = slot;
    op.bytes = Bytes(bytes);
    return op;
}

// Ranks 0 and 1 run one list: all-reduces on slot 0 (group 0 = {0, 1}) of 80 sizes, each three
// times, plus +0 and -0 bytes; sends and receives on slot 1 (group 1, the pair {0, 1}) of 3 sizes;
// compute ops between them.
Program two_rank_program() {
    std::vector<Op> ops;
    for (int rep = 0; rep < 3; ++rep) {
        for (int k = 1; k <= 80; ++k) ops.push_back(comm(OpKind::AllReduce, 0, 1024.0 * k));
    }
    ops.push_back(comm(OpKind::AllReduce, 0, 0.0));
    ops.push_back(comm(OpKind::AllReduce, 0, -0.0));
    for (int k = 1; k <= 3; ++k) {
        ops.push_back(comm(OpKind::Send, 1, 4096.0 * k));
        ops.push_back(comm(OpKind::Recv, 1, 4096.0 * k));
    }
    std::mt19937 rng(7);
    std::shuffle(ops.begin(), ops.end(), rng);
    Program p;
    p.comm_classes = {{"test", false}};
    OpList& list = p.op_lists.emplace_back();
    OpListBuilder b(list);
    for (const Op& op : ops) {
        b.add(Op{});  // a compute op between communication ops
        b.add(op);
    }
    p.groups = {Group{{0, 1}, 0}, Group{{0, 1}, 0}};
    p.ranks = {RankProgram{0, {0, 1}}, RankProgram{0, {0, 1}}};
    return p;
}

}  // namespace

TEST_CASE("possible_requests lists each request once, sorted, past the first table size", "[sim][symmetry]") {
    const Program p = two_rank_program();
    const std::vector<TransferRequest> requests = possible_requests(p);
    // All-reduces: one request per size (both ranks ask with source = the group's first rank),
    // and +0 equals -0: 80 + 1. Send/Recv b: each rank sends b once (source 0, source 1), and a
    // receive asks as the other rank's send: 2 per size, 3 sizes. 81 + 6 = 87.
    CHECK(requests.size() == 87);
    CHECK(std::adjacent_find(requests.begin(), requests.end(),
                             [](const TransferRequest& a, const TransferRequest& b) { return !(a < b); }) ==
          requests.end());
    // Every op of every rank asks for one of them.
    for (std::uint32_t r = 0; r < 2; ++r) {
        for (const Op& op : p.op_lists[0].ops) {
            if (!is_communication(op.kind)) continue;
            TransferRequest q{op.group_slot, op.kind, op.bytes, 0};
            if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
                q.kind = OpKind::Send;
                q.source = op.kind == OpKind::Send ? r : 1 - r;
            }
            CHECK(std::find(requests.begin(), requests.end(), q) != requests.end());
        }
    }
}

TEST_CASE("communication_uses: the distinct uses per op list, shared by both request analyses", "[sim][symmetry]") {
    Program p = two_rank_program();
    // One more all-reduce of a size seen before, on another stream: a use of its own (the
    // exclusive-transfer analysis needs the streams that post to a slot), the same request.
    Op other = comm(OpKind::AllReduce, 0, 1024.0);
    other.stream = 1;
    OpListBuilder(p.op_lists[0]).add(other);
    const CommUses uses = communication_uses(p);
    REQUIRE(uses.size() == 1);
    // 81 all-reduce sizes (zeros are one), 3 sends and 3 receives, and the one on its own stream.
    CHECK(uses[0].size() == 88);
    CHECK(std::is_sorted(uses[0].begin(), uses[0].end()));
    CHECK(std::adjacent_find(uses[0].begin(), uses[0].end()) == uses[0].end());
    CHECK(std::count_if(uses[0].begin(), uses[0].end(), [](const CommUse& u) { return u.stream != 0; }) == 1);
    // The same from the op lists' indexes, which simulate() reads instead of the ops.
    const ProgramCosts costs{{std::vector<Time>(p.op_lists[0].ops.size(), Time(0))}};
    CHECK(communication_uses(index_op_lists(p, costs, true)) == uses);
    // Requests from uses computed before equal those computed from the ops: the stream adds none.
    const auto from_uses = possible_requests(p, p.ranks, p.groups, uses);
    CHECK(from_uses == possible_requests(p));
    CHECK(from_uses.size() == 87);
    CHECK_THROWS_AS(possible_requests(p, p.ranks, p.groups, CommUses{}), std::logic_error);
}
