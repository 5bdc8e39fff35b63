// Multi-token prediction (model.mtp_layers, DeepSeek-V3 §2.2) against closed forms: its
// parameters against DeepSeek-V3's report, its FLOPs, the ops the last stage runs per micro-batch
// (the projection, a layer like the last, a second pass of the output head), the embedding copy
// and its gradient sum between the pipeline's ends, memory released, and the checks at their keys.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "hardware_models/errors.hpp"
#include "strategies/model_math.hpp"
#include "strategies/model_presets.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// The tiny model with Llama's layer (untied output matrix), on one tensor rank, p stages, d
// replicas, 4 micro-batches.
Scenario mtp_plan(int p, int d, int depth) {
    Scenario sc = test::tiny_scenario(1, p, d, 4, 4);
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.model.mtp_layers = depth;
    return sc;
}

std::map<std::string, int> op_counts(const sim::Program& p, std::size_t list) {
    std::map<std::string, int> n;
    for (const sim::Op& op : p.op_lists[list].ops) ++n[p.labels[op.label]];
    return n;
}

double label_bytes(const sim::Program& p, std::size_t list, const std::string& label) {
    double b = 0.0;
    for (const sim::Op& op : p.op_lists[list].ops)
        if (p.labels[op.label] == label) b += op.bytes.value;
    return b;
}


}  // namespace

TEST_CASE("mtp: DeepSeek-V3 with its prediction module has the 685B parameters its report states") {
    ModelSpec m;
    apply_preset("deepseek-v3", m);
    const double main_model = parameter_count(m);
    m.mtp_layers = 1;
    // DeepSeek-V3 Technical Report §1 / the model card: 685B, of which 671B main model and 14B the
    // prediction module; those 14B include the module's stored copies of the embedding and the
    // output head (2 x V x h = 1.85B), which it shares in training and cuboid counts once.
    const double vh = static_cast<double>(m.vocab) * m.hidden;
    CHECK(parameter_count(m) + 2.0 * vh == Approx(685e9).epsilon(0.005));
    // One module: a layer like the last (an expert layer), the 2h x h projection, three norms.
    const LayerParameters last = layer_parameters(m, m.layers - 1, 1);
    CHECK(parameter_count(m) - main_model == last.total() + 2.0 * m.hidden * m.hidden + 3.0 * m.hidden);
}

TEST_CASE("mtp: each module adds a projection, a layer and a pass of the head to the model's FLOPs") {
    Scenario sc = mtp_plan(1, 1, 0);
    const ModelSpec& m = sc.model;
    const double base = model_flops_per_iteration(m, 4);
    sc.model.mtp_layers = 2;
    const double tokens = 4.0 * m.seq_len, h = m.hidden;
    // A layer's forward and backward FLOPs: the model's minus those of one layer fewer.
    ModelSpec fewer = m;
    fewer.mtp_layers = 0;
    fewer.layers = m.layers - 1;
    const double one_layer = base - model_flops_per_iteration(fewer, 4);
    const double logits = 3.0 * 2.0 * tokens * h * m.vocab;
    CHECK(model_flops_per_iteration(sc.model, 4) ==
          Approx(base + 2.0 * (one_layer + logits + 3.0 * 2.0 * tokens * 2.0 * h * h)).epsilon(1e-12));
}

TEST_CASE("mtp: the last stage runs each module per micro-batch; the embedding's copy sums its gradient") {
    const Scenario sc = mtp_plan(2, 1, 1);
    const sim::Program with = build_program(sc, validate_plan(sc));
    Scenario none = sc;
    none.model.mtp_layers = 0;
    const sim::Program without = build_program(none, validate_plan(none));
    const std::size_t last = with.ranks[1].op_list, first = with.ranks[0].op_list;
    auto a = op_counts(with, last), b = op_counts(without, last);
    CHECK(a["F.mtp.proj"] == 4);
    CHECK(a["B.mtp.proj.dgrad"] == 4);
    CHECK(a["B.mtp.proj.wgrad"] == 4);
    CHECK(a["F.logits"] == 2 * b["F.logits"]);
    CHECK(a["B.logits.wgrad"] == 2 * b["B.logits.wgrad"]);
    CHECK(a["F.qkv"] == b["F.qkv"] + 4);  // the module's layer
    CHECK(op_counts(with, first)["F.mtp.proj"] == 0);
    // The embedding copy on the last stage (V x h) sums its gradient with the first stage's.
    const double vh = 128.0 * 64.0;
    CHECK(label_bytes(with, last, "emb.grad_allreduce") == 4.0 * vh);
    CHECK(label_bytes(with, first, "emb.grad_allreduce") == 4.0 * vh);
    CHECK(label_bytes(without, last, "emb.grad_allreduce") == 0.0);
    // What every op allocates is released.
    test::check_allocations_released(with);
    // The last stage holds the module and the copy.
    const Layout l = validate_plan(sc);
    CHECK(stage_parameters_per_rank(sc.model, l, 1) - stage_parameters_per_rank(none.model, l, 1) ==
          mtp_parameters(sc.model, 1).total() + vh);
}

TEST_CASE("mtp: a module costs time; an expert model's module carries routed experts") {
    const RunResult a = run_scenario(mtp_plan(2, 2, 0)), b = run_scenario(mtp_plan(2, 2, 1));
    CHECK(b.iteration_time_s > a.iteration_time_s);
    CHECK(b.peak_memory_bytes > a.peak_memory_bytes);
    Scenario moe = mtp_plan(2, 2, 1);
    moe.model.experts = 4;
    moe.model.experts_per_token = 2;
    moe.parallel.expert = 2;
    CHECK(mtp_parameters(moe.model, 1, 2).expert == 4.0 / 2 * 3 * 64 * 256);
    const RunResult c = run_scenario(moe);
    CHECK(c.iteration_time_s > 0.0);
}

TEST_CASE("mtp: checked at its keys") {
    CHECK(test::rejected_key(mtp_plan(2, 1, 1), [](Scenario&) {}).empty());
    CHECK(test::rejected_key(mtp_plan(1, 1, 1), [](Scenario& s) {
              s.parallel.tensor = 2;
              s.cluster.gpus_per_node = 2;
          }) == "parallel.tensor");
    CHECK(test::rejected_key(mtp_plan(1, 2, 1), [](Scenario& s) { s.parallel.zero_stage = 3; }) == "parallel.zero_stage");
    CHECK(test::rejected_key(mtp_plan(2, 1, 1), [](Scenario& s) { s.parallel.schedule = Schedule::ZeroBubbleH1; }) ==
          "parallel.schedule");
}
