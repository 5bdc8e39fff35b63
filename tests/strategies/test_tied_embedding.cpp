// The all-reduce of a tied word embedding's gradient between the first and the last pipeline
// stage (Megatron-LM's embedding group, finalize_model_grads): where it is, what it carries, and
// that programs with it still run to the end.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "sim/executor.hpp"
#include "strategies/group_slots.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

constexpr const char* kLabel = "emb.grad_allreduce";

// Indices of the ops labelled `label` in one op list.
std::vector<std::size_t> ops_labelled(const sim::Program& p, std::size_t list, const std::string& label) {
    std::vector<std::size_t> out;
    const auto& ops = p.op_lists[list].ops;
    for (std::size_t i = 0; i < ops.size(); ++i)
        if (p.labels[ops[i].label] == label) out.push_back(i);
    return out;
}

std::size_t last_labelled(const sim::Program& p, std::size_t list, const std::string& label) {
    const auto all = ops_labelled(p, list, label);
    REQUIRE_FALSE(all.empty());
    return all.back();
}

}  // namespace

TEST_CASE("tied embeddings: one all-reduce per iteration on exactly the first and last stage ranks") {
    for (int p : {2, 3, 4}) {
        Scenario sc = cuboid::test::tiny_scenario(2, p, 2, 4);
        const Layout l = validate_plan(sc);
        const sim::Program prog = build_program(sc, l);
        INFO("p " << p);
        for (std::uint32_t r = 0; r < prog.ranks.size(); ++r) {
            const int s = l.stage_of(r);
            const bool end = s == 0 || s == p - 1;
            const auto ops = ops_labelled(prog, prog.ranks[r].op_list, kLabel);
            CHECK(ops.size() == (end ? 1u : 0u));
            if (!end) continue;
            const sim::Op& op = prog.op_lists[prog.ranks[r].op_list].ops[ops.front()];
            CHECK(op.kind == sim::OpKind::AllReduce);
            CHECK(op.stream == stream::kDataComm);
            // Its group is {this rank, the same (tensor, data) position of the other end}.
            const auto& members = prog.groups[prog.ranks[r].groups[op.group_slot]].ranks;
            const std::uint32_t first = l.rank(l.tp_of(r), l.dp_of(r), 0), last = l.rank(l.tp_of(r), l.dp_of(r), p - 1);
            CHECK(members == std::vector<std::uint32_t>{first, last});
        }
    }
}

TEST_CASE("tied embeddings: the all-reduce carries the rank's word-embedding gradient") {
    // bf16: 4-byte (fp32) main gradients, the width the data-parallel reduction moves them at
    // (training_state.hpp). One rank holds V/t rows of h: 128/2 * 64 = 4096 parameters, 16384 bytes.
    Scenario sc = cuboid::test::tiny_scenario(2, 2, 2, 4);
    const Layout l = validate_plan(sc);
    const sim::Program prog = build_program(sc, l);
    const double params = 128.0 / 2 * 64;
    REQUIRE(tied_embedding_copy_per_rank(sc.model, 2, 2) == params);
    for (std::size_t list : {std::size_t{0}, std::size_t{1}}) {
        const sim::OpList& ol = prog.op_lists[list];
        CHECK(ol.ops[last_labelled(prog, list, kLabel)].bytes.value == params * 4.0);
        // After every data-parallel reduction of the stage and before the optimizer step.
        CHECK(last_labelled(prog, list, "dp.allreduce") < last_labelled(prog, list, kLabel));
        CHECK(last_labelled(prog, list, kLabel) < last_labelled(prog, list, "optimizer"));
    }
    // fp16 keeps 2-byte gradients, so the all-reduce halves.
    sc.training.precision = sim::Precision::Fp16;
    const sim::Program half = build_program(sc, l);
    CHECK(half.op_lists[0].ops[last_labelled(half, 0, kLabel)].bytes.value == params * 2.0);
}

TEST_CASE("tied embeddings: with ZeRO the all-reduce follows the reduce-scatter") {
    Scenario sc = cuboid::test::tiny_scenario(2, 2, 2, 4);
    sc.parallel.zero_stage = 1;
    const sim::Program prog = build_program(sc, validate_plan(sc));
    for (std::size_t list : {std::size_t{0}, std::size_t{1}}) {
        CHECK(last_labelled(prog, list, "dp.reducescatter") < last_labelled(prog, list, kLabel));
        CHECK(last_labelled(prog, list, kLabel) < last_labelled(prog, list, "optimizer"));
    }
}

TEST_CASE("tied embeddings: every tensor mode sizes the all-reduce as the copy's memory") {
    // The copy is V*h/t parameters per device in every mode (training_state.cpp: the
    // vocabulary-parallel split); 2d on a 2 x 2 mesh, 3d on a 2 x 2 x 2 cube, atp 2 x 2.
    struct ModeCase {
        TensorMode mode;
        int t;
    };
    for (const ModeCase& m : {ModeCase{TensorMode::TwoD, 4}, ModeCase{TensorMode::ThreeD, 8}, ModeCase{TensorMode::Atp, 4}}) {
        Scenario sc = cuboid::test::tiny_scenario(m.t, 2, 1, 4);
        sc.model.heads = 8;
        sc.training.micro_batch = 4;  // 3d: b divisible by q^2
        sc.training.global_batch = 16;
        sc.parallel.tensor_mode = m.mode;
        if (m.mode == TensorMode::Atp) sc.parallel.atp_mesh = {2, 2};
        const Layout l = validate_plan(sc);
        const sim::Program prog = build_program(sc, l);
        INFO("mode " << static_cast<int>(m.mode));
        const double params = 128.0 * 64 / m.t;
        const sim::OpList& last = prog.op_lists[1];
        CHECK(last.ops[last_labelled(prog, 1, kLabel)].bytes.value == params * 4.0);
        // It is the copy the last stage keeps resident: head = final LayerNorm (2h) + copy.
        CHECK(head_parameters_per_rank(sc.model, m.t, 2) - 2.0 * 64 == params);
    }
}

TEST_CASE("tied embeddings: no all-reduce with one stage or an untied (Llama) output layer") {
    Scenario one = cuboid::test::tiny_scenario(2, 1, 2, 4);
    const sim::Program p1 = build_program(one, validate_plan(one));
    CHECK(ops_labelled(p1, 0, kLabel).empty());
    // Slot kEmbedding aliases the tensor group where no embedding group exists.
    CHECK(p1.ranks[0].groups[slot::kEmbedding] == p1.ranks[0].groups[slot::kTensor]);
    Scenario llama = cuboid::test::tiny_scenario(2, 2, 2, 4);
    llama.model.swiglu = true;
    const sim::Program pl = build_program(llama, validate_plan(llama));
    for (std::size_t list = 0; list < pl.op_lists.size(); ++list) CHECK(ops_labelled(pl, list, kLabel).empty());
    CHECK(std::none_of(pl.groups.begin(), pl.groups.end(), [&](const sim::Group& g) { return pl.labels[g.label] == "emb"; }));
}

TEST_CASE("tied embeddings: no deadlock over schedules, ZeRO and dp_overlap") {
    for (Schedule sched : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved})
        for (int p : {2, 3, 4})
            for (int zero : {0, 1})
                for (bool overlap : {true, false}) {
                    Scenario sc = cuboid::test::tiny_scenario(2, p, 2, 2 * p, 12);
                    sc.parallel.schedule = sched;
                    sc.parallel.virtual_stages = sched == Schedule::Interleaved ? 2 : 1;
                    sc.parallel.zero_stage = zero;
                    sc.parallel.dp_overlap = overlap;
                    INFO(to_string(sched) << " p " << p << " zero " << zero << " overlap " << overlap);
                    const sim::Program prog = build_program(sc, validate_plan(sc));
                    const sim::ProgramCosts costs = cuboid::test::layer_gemm_costs(prog, Time(1000));
                    cuboid::test::FreePlanner planner;
                    sim::SimResult r;
                    REQUIRE_NOTHROW(r = sim::simulate(prog, costs, {}, planner));
                    CHECK(r.makespan.value > 0);
                }
}
