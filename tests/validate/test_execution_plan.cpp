// The execution plan keeps every dependency, issues each group's calls in the same order on every
// member, matches Send and Recv bytes, and reproduces the program's memory walk.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "sim/memory.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "tests/strategies/strategy_fixtures.hpp"
#include "validate/plan/execution_plan.hpp"
#include "validate/plan/plan_summary.hpp"

using namespace cuboid;
using namespace cuboid::validate;

namespace {

// Programs with every stream in use: tensor, pipeline and data parallelism, several schedules.
std::vector<sim::Program> programs() {
    std::vector<sim::Program> out;
    for (Schedule s : {Schedule::OneFOneB, Schedule::Interleaved, Schedule::GPipe}) {
        Scenario sc = test::tiny_scenario(2, 2, 2, 4);
        sc.parallel.schedule = s;
        if (s == Schedule::Interleaved) sc.parallel.virtual_stages = 2;
        sc.parallel.recompute = Recompute::Full;
        out.push_back(build_program(sc, validate_plan(sc)));
    }
    return out;
}

// Position of every op in its stream's order (the order a CUDA stream runs them).
std::vector<std::uint32_t> stream_positions(const sim::OpList& list) {
    std::map<sim::StreamId, std::uint32_t> next;
    std::vector<std::uint32_t> pos;
    for (const sim::Op& op : list.ops) pos.push_back(next[op.stream]++);
    return pos;
}

bool partner_kinds(sim::OpKind a, sim::OpKind b) {
    if (a == sim::OpKind::Send) return b == sim::OpKind::Recv;
    if (a == sim::OpKind::Recv) return b == sim::OpKind::Send;
    return a == b;
}

}  // namespace

TEST_CASE("every dependency is kept by stream order or by an earlier-recorded event") {
    for (const sim::Program& p : programs()) {
        const ExecutionPlan full = make_execution_plan(p);
        for (std::size_t l = 0; l < p.op_lists.size(); ++l) {
            const sim::OpList& list = p.op_lists[l];
            const ListPlan& plan = full.lists[l];
            const auto pos = stream_positions(list);
            // waits_on[i][s]: the latest op of stream s that op i (or an op before it on its
            // stream) waits for; a dependency d on stream s is met when pos(d) <= pos(that op).
            std::map<std::pair<sim::StreamId, sim::StreamId>, std::uint32_t> covered;
            for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
                const sim::Op& op = list.ops[i];
                for (std::uint32_t w : plan.ops[i].waits) {
                    REQUIRE(w < i);  // recorded before the wait is enqueued
                    REQUIRE(plan.ops[w].records_event);
                    auto& c = covered[{op.stream, list.ops[w].stream}];
                    c = std::max(c, pos[w] + 1);
                }
                for (std::uint32_t d = op.first_dep; d < op.first_dep + op.dep_count; ++d) {
                    const std::uint32_t dep = list.deps[d];
                    if (list.ops[dep].stream == op.stream) CHECK(pos[dep] < pos[i]);
                    else CHECK(covered[{op.stream, list.ops[dep].stream}] > pos[dep]);
                }
            }
        }
    }
}

TEST_CASE("every member issues a group's calls in the same order, Send bytes equal Recv bytes") {
    for (const sim::Program& p : programs()) {
        const ExecutionPlan plan = make_execution_plan(p);
        // per group: each member's sequence of calls (kind, bytes) in host issue order
        std::map<std::uint32_t, std::map<std::uint32_t, std::vector<const sim::Op*>>> calls;
        for (const RankPlan& r : plan.ranks) {
            const auto& ops = p.op_lists[r.list].ops;
            for (std::size_t c = 0; c < r.calls.size(); ++c) {
                const CommCall& call = r.calls[c];
                const std::uint32_t g = r.communicators[call.communicator];
                auto& seq = calls[g][r.rank];
                CHECK(call.instance == seq.size());
                seq.push_back(&ops[call.op]);
                if (call.peer >= 0) CHECK(p.groups[g].ranks[std::size_t(call.peer)] != r.rank);
            }
            CHECK(std::is_sorted(r.communicators.begin(), r.communicators.end()));
        }
        std::size_t pairs = 0;
        for (const auto& [g, members] : calls) {
            REQUIRE(members.size() == p.groups[g].ranks.size());  // every member calls on it
            const auto& first = members.begin()->second;
            for (const auto& [rank, seq] : members) {
                REQUIRE(seq.size() == first.size());
                if (&seq == &first) continue;  // compared with itself
                for (std::size_t k = 0; k < seq.size(); ++k) {
                    CHECK(partner_kinds(seq[k]->kind, first[k]->kind));
                    CHECK(seq[k]->bytes.value == first[k]->bytes.value);
                    if (seq[k]->kind == sim::OpKind::Send || first[k]->kind == sim::OpKind::Send) ++pairs;
                }
            }
        }
        CHECK(pairs > 0);  // the programs do have pipeline transfers
    }
}

TEST_CASE("allocation pieces reproduce the program's memory walk") {
    for (const sim::Program& p : programs())
        for (std::size_t l = 0; l < p.op_lists.size(); ++l) {
            const ListPlan plan = make_execution_plan(p).lists[l];
            // peak_memory walks resident + alloc - free in issue order: the same as the pieces
            const double expected = sim::peak_memory(p.op_lists[l]).peak.value;
            CHECK(expected_peak_bytes(plan) == Approx(expected).epsilon(1e-9));
            // every byte allocated is freed once: pieces sum to the allocations
            double allocated = 0.0, pieces = 0.0;
            for (const sim::Op& op : p.op_lists[l].ops) allocated += op.memory_alloc.value;
            for (const Piece& piece : plan.pieces) {
                pieces += piece.bytes;
                if (piece.free_op != kIterationEnd) CHECK(piece.free_op >= piece.alloc_op);
            }
            CHECK(pieces == Approx(allocated).epsilon(1e-9));
        }
}

TEST_CASE("a free that cuts an allocation splits it into pieces") {
    sim::OpList list;
    sim::OpListBuilder b(list);
    sim::Op a;
    a.memory_alloc = Bytes(100.0);
    b.add(a);
    sim::Op f;
    f.memory_free = Bytes(30.0);
    b.add(f, {0});
    b.add(f, {1});
    sim::Program p;
    p.op_lists.push_back(list);
    p.ranks.push_back({0, {}});
    const ListPlan plan = make_execution_plan(p).lists[0];
    // 100 allocated by op 0; op 1 frees 30, op 2 another 30: pieces 40 (held), 30, 30
    REQUIRE(plan.pieces.size() == 3);
    CHECK(plan.ops[0].allocs.size() == 3);
    CHECK(plan.pieces[0].bytes == 40.0);
    CHECK(plan.pieces[0].free_op == kIterationEnd);
    CHECK(plan.ops[1].frees.size() == 1);
    CHECK(plan.ops[2].frees.size() == 1);
    CHECK(plan.peak_live_bytes == 100.0);
}

TEST_CASE("the dry-run summary names every op list and the expected memory") {
    const sim::Program p = programs().front();
    std::ostringstream out;
    write_plan_summary(out, p, make_execution_plan(p));
    const std::string s = out.str();
    CHECK(s.find("execution plan: 8 ranks") != std::string::npos);
    for (std::size_t l = 0; l < p.op_lists.size(); ++l)
        CHECK(s.find("op list " + std::to_string(l)) != std::string::npos);
    CHECK(s.find("send") != std::string::npos);
    CHECK(s.find("expected") != std::string::npos);
}

TEST_CASE("the optimizer step runs in place on the resident state when the state holds it") {
    // Adam moves 28 bytes per parameter and keeps 16 of state: an op moving 28 N bytes updates
    // N parameters and needs 16 N resident bytes.
    const double parameters = 1e6;
    auto plan_for = [&](double resident) {
        sim::OpList list;
        sim::OpListBuilder b(list);
        sim::Op gelu;
        gelu.kind = sim::OpKind::Activation;
        gelu.bytes = Bytes(4e6);
        b.add(gelu);
        sim::Op adam;
        adam.kind = sim::OpKind::Optimizer;
        adam.bytes = Bytes(calibrate::kernel_bytes::kAdam * parameters);
        b.add(adam, {0});
        list.resident = Bytes(resident);
        sim::Program p;
        p.op_lists.push_back(list);
        p.ranks.push_back({0, {}});
        return make_execution_plan(p).lists[0];
    };
    // The state fits (16 N bytes exactly): the working buffers hold only the activation.
    CHECK(plan_for(16.0 * parameters).memory_op_bytes == 4e6);
    // One byte short: the step needs working buffers of its own bytes.
    CHECK(plan_for(16.0 * parameters - 1.0).memory_op_bytes == calibrate::kernel_bytes::kAdam * parameters);
    CHECK(optimizer_in_place(28.0, 16.0));
    CHECK_FALSE(optimizer_in_place(28.0, 15.9));
}

// A pass of the optimizer step over the gradients (norm, zeroing, fp16 unscale) streams through the
// resident state in place: a working buffer of its size (the whole gradient) would not fit on the
// GPU for a model of a few billion parameters.
TEST_CASE("the optimizer step's gradient passes run on the resident state and size no working buffer") {
    Scenario sc = test::tiny_scenario(1, 1, 1, 4, 2);
    sc.training.precision = sim::Precision::Fp16;
    sc.model.hidden = 512;  // parameters well above the activations, so the passes are the largest memory ops
    sc.model.seq_len = 16;
    const sim::Program p = build_program(sc, validate_plan(sc));
    const ExecutionPlan plan = make_execution_plan(p);
    const sim::OpList& list = p.op_lists[0];
    int passes = 0;
    double largest_pass = 0.0;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const bool pass = p.labels[list.ops[i].label].starts_with("optimizer.");
        CHECK(plan.lists[0].ops[i].on_resident_state == pass);
        if (!pass) continue;
        ++passes;
        largest_pass = std::max(largest_pass, list.ops[i].bytes.value);
        CHECK(list.ops[i].bytes.value / 2.0 <= plan.lists[0].resident_bytes);
    }
    CHECK(passes == 3);  // unscale, gradient norm, zeroing
    CHECK(plan.lists[0].memory_op_bytes < largest_pass);
}
