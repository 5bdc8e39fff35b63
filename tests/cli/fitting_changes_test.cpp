// The changes an out-of-memory plan is offered: for each kind, a plan that fits only with that
// change is offered exactly it, and applying it really fits; a change that does not fit is never
// offered. The memory a plan may use is set per case through the headroom, between the changed
// plan's peak and the original's, so that the verdicts do not hang on one GPU's capacity.
#include <catch2/catch.hpp>

#include <algorithm>

#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/hardware.hpp"
#include "strategies/cli/catalog_bridge.hpp"
#include "strategies/cli/fitting_changes.hpp"
#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/layout.hpp"
#include "strategies/run.hpp"
#include "strategies/training_state.hpp"

using namespace cuboid;
using namespace cuboid::cli;

namespace {

using Sets = std::vector<std::string>;

struct Context {
    std::shared_ptr<const hw::Catalog> catalog = parse_builtin_catalog();
    NameResolvers names = builtin_name_resolvers(catalog);
};

const Context& context() {
    static const Context c;
    return c;
}

// A GPT of `layers` layers (hidden 1024, 16 heads, 1024 tokens, unfused attention, so that
// selective recomputation has the s x s tensors to drop) on one node of 40 GB A100s, with the
// plan given as YAML lines of `parallel:` and `training:`. Its gradients are bf16 unless
// `fp32_grads`, so that the kind each test is about is the only other change that fits.
Scenario plan(int gpus, int layers, const std::string& parallel, const std::string& training,
              const std::string& shape = "hidden: 1024, heads: 16, seq_len: 1024", bool fp32_grads = false) {
    const std::string text = "name: fit\n"
                             "model: {layers: " + std::to_string(layers) + ", " + shape +
                             ", vocab: 32000, attention: unfused}\n"
                             "cluster: {gpu: a100-sxm-40gb, nodes: 1, gpus_per_node: " + std::to_string(gpus) + "}\n"
                             "parallel: {" + parallel + "}\n"
                             "training: {" + training + (fp32_grads ? "" : ", grad_precision: bf16") + "}\n";
    return load_scenario_text(text, "fit.yaml", "", context().names);
}

std::shared_ptr<const hw::Hardware> hardware_of(const Scenario& s) {
    return hw::Hardware::build(s.cluster, *context().catalog);
}

RunResult run_with(const Scenario& s, const Sets& sets, double headroom) {
    Scenario changed = s;
    apply_overrides(changed, sets, context().names);
    RunOptions o;
    o.hardware = hardware_of(s);
    o.memory_headroom = headroom;
    return run_scenario(changed, o);
}

double peak_with(const Scenario& s, const Sets& sets) { return run_with(s, sets, 0.0).peak_memory_bytes; }

// The headroom with which a plan may use `usable` bytes of the scenario's GPU.
double headroom_for(const Scenario& s, double usable) {
    return 1.0 - usable / hardware_of(s).get()->gpu().memory_capacity.value;
}

std::vector<FittingChange> offered(const Scenario& s, double headroom) {
    FitContext c;
    c.names = &context().names;
    c.builtin = context().catalog.get();
    c.hardware = hardware_of(s);
    c.memory_headroom = headroom;
    return fitting_changes(s, c);
}

// The changes of one kind among those offered.
std::vector<FittingChange> offered_of_kind(const Scenario& s, double headroom, ChangeKind kind) {
    std::vector<FittingChange> out;
    for (const FittingChange& c : offered(s, headroom))
        if (c.kinds == std::vector<ChangeKind>{kind}) out.push_back(c);
    return out;
}

// The one change of `kind` offered when the plan may use the memory halfway between its peak
// with `below` applied and its peak with `above`; applying it fits.
FittingChange offered_between(const Scenario& s, ChangeKind kind, const Sets& below, const Sets& above) {
    const double low = peak_with(s, below), high = peak_with(s, above);
    REQUIRE(low < high);
    const double headroom = headroom_for(s, (low + high) / 2.0);
    const std::vector<FittingChange> changes = offered_of_kind(s, headroom, kind);
    REQUIRE(changes.size() == 1);
    CHECK(run_with(s, changes[0].sets, headroom).fits_in_memory);
    return changes[0];
}

// The plan does not fit between `fitting` (the changed plan's peak) and the original's peak;
// exactly `expected` is offered, and applying it fits.
// `others`: how many changes of other kinds also fit in that window (each checked the same way).
void check_only_change(const Scenario& s, ChangeKind kind, const Sets& expected, std::size_t others = 0) {
    const double original = peak_with(s, {});
    const double changed = peak_with(s, expected);
    REQUIRE(changed < original);
    const double headroom = headroom_for(s, (original + changed) / 2.0);
    REQUIRE_FALSE(run_with(s, {}, headroom).fits_in_memory);
    const auto changes = offered(s, headroom);
    REQUIRE(changes.size() == 1 + others);
    std::size_t of_kind = 0;
    for (const FittingChange& c : changes) {
        const RunResult applied = run_with(s, c.sets, headroom);
        CHECK(applied.fits_in_memory);
        CHECK(c.iteration_time_s == applied.iteration_time_s);
        if (c.kinds != std::vector<ChangeKind>{kind}) continue;
        ++of_kind;
        CHECK(c.sets == expected);
        CHECK(c.peak_memory_bytes == changed);
    }
    CHECK(of_kind == 1);
}

}  // namespace

TEST_CASE("fitting changes: sequence parallelism, when it alone fits", "[fit]") {
    // Tensor 2 on 2 GPUs: no larger pipeline, micro-batch 1, ZeRO 2, full recomputation already.
    const Scenario s = plan(2, 2, "tensor: 2, pipeline: 1, recompute: full, zero_stage: 2", "global_batch: 1");
    check_only_change(s, ChangeKind::SequenceParallel, {"parallel.sequence_parallel=true"});
}

TEST_CASE("fitting changes: the least recomputation that fits (selective before full)", "[fit]") {
    const Scenario s = plan(1, 2, "tensor: 1, pipeline: 1, recompute: none, zero_stage: 2", "global_batch: 1");
    // Between selective's peak and no recomputation's: selective is offered, not stage-aware or
    // full (offloading one of the two layers' activations fits too: the other change offered).
    check_only_change(s, ChangeKind::Recompute, {"parallel.recompute=selective"}, 1);
    // Below selective's peak but above full's: stage-aware (the fewest layers recomputed) fits.
    const FittingChange c =
        offered_between(s, ChangeKind::Recompute, {"parallel.recompute=full"}, {"parallel.recompute=selective"});
    CHECK(c.sets == Sets{"parallel.recompute=stage-aware"});
}

TEST_CASE("fitting changes: latent attention's up-projections recomputed before stage-aware", "[fit]") {
    // A small model with DeepSeek's latent attention (fused kernel) under selective
    // recomputation: between the peak with the up-projections recomputed too (Megatron-Core's
    // mla_up_proj: Q, K and V not kept) and the plan's own, that is the recomputation offered.
    const Scenario s = load_scenario_text(
        "name: fit-mla\n"
        "model: {layers: 2, hidden: 1024, heads: 16, seq_len: 2048, vocab: 32000, swiglu: true, attention: fused,\n"
        "        attention_kind: mla, q_lora_rank: 256, kv_lora_rank: 128, qk_nope_head_dim: 64,\n"
        "        qk_rope_head_dim: 32, v_head_dim: 64}\n"
        "cluster: {gpu: a100-sxm-40gb, nodes: 1, gpus_per_node: 1}\n"
        "parallel: {tensor: 1, pipeline: 1, recompute: selective, zero_stage: 2}\n"
        "training: {global_batch: 1, grad_precision: bf16}\n",
        "fit-mla.yaml", "", context().names);
    const Sets up{"parallel.recompute=selective", "parallel.recompute_modules=core_attn,mla_up_proj"};
    const FittingChange c = offered_between(s, ChangeKind::Recompute, up, {});
    CHECK(c.sets == up);
    CHECK(c.peak_memory_bytes == peak_with(s, up));
    // Without latent attention the step does not exist: stage-aware is the next recomputation.
    const Scenario dense = plan(1, 2, "tensor: 1, pipeline: 1, recompute: selective, zero_stage: 2", "global_batch: 1");
    const double dense_own = peak_with(dense, {});
    for (const FittingChange& c : offered_of_kind(dense, headroom_for(dense, dense_own - 1.0), ChangeKind::Recompute))
        CHECK(c.sets != up);
}

TEST_CASE("fitting changes: a mixture of experts drops its norm and activation outputs before stage-aware", "[fit]") {
    // Megatron-Core's layernorm and moe_act modules under selective recomputation (the router's
    // norm is a module of its own; the experts' activation): between the peak with them and the
    // plan's own, that is the recomputation offered.
    const Scenario s = load_scenario_text(
        "name: fit-moe\n"
        "model: {layers: 2, hidden: 1024, heads: 16, seq_len: 2048, vocab: 32000, swiglu: true, attention: fused,\n"
        "        experts: 8, experts_per_token: 2, expert_ffn_hidden: 1024}\n"
        "cluster: {gpu: a100-sxm-40gb, nodes: 1, gpus_per_node: 1}\n"
        "parallel: {tensor: 1, pipeline: 1, recompute: selective, zero_stage: 2}\n"
        "training: {global_batch: 1, grad_precision: bf16}\n",
        "fit-moe.yaml", "", context().names);
    const Sets fine{"parallel.recompute=selective", "parallel.recompute_modules=core_attn,layernorm,moe_act"};
    const FittingChange c = offered_between(s, ChangeKind::Recompute, fine, {});
    CHECK(c.sets == fine);
    CHECK(c.peak_memory_bytes == peak_with(s, fine));
}

TEST_CASE("fitting changes: the least activation offloading that fits, where Megatron-Core allows it", "[fit]") {
    // Eight layers, no recomputation, no pipeline: the steps are 1, 2, ..., 7 layers (eighths of
    // all but the last, rounded up). Between the peaks with 3 and with 2 layers offloaded, 3 is
    // offered and fits.
    const Scenario s = plan(1, 8, "tensor: 1, pipeline: 1, recompute: none, zero_stage: 2", "global_batch: 1");
    const Sets three{"training.activation_offload_layers=3"};
    const FittingChange c =
        offered_between(s, ChangeKind::ActivationOffload, three, {"training.activation_offload_layers=2"});
    CHECK(c.sets == three);
    CHECK(c.peak_memory_bytes == peak_with(s, three));
    // With recomputation (Megatron-Core refuses offloading then) none is offered.
    const Scenario recomputed = plan(1, 8, "tensor: 1, pipeline: 1, recompute: full, zero_stage: 2", "global_batch: 1");
    CHECK(offered_of_kind(recomputed, headroom_for(recomputed, peak_with(recomputed, {}) - 1.0),
                          ChangeKind::ActivationOffload)
              .empty());
}

TEST_CASE("fitting changes: the largest smaller micro-batch that fits and is valid", "[fit]") {
    // Micro-batch 4 of a batch of 4: 3 does not divide it, 2 fits, 1 is a larger change.
    const Scenario s = plan(1, 2, "tensor: 1, pipeline: 1, recompute: full, zero_stage: 2",
                            "global_batch: 4, micro_batch: 4");
    check_only_change(s, ChangeKind::MicroBatch, {"training.micro_batch=2"});
}

TEST_CASE("fitting changes: the first higher ZeRO stage that fits", "[fit]") {
    // One layer: no deeper pipeline; data parallelism 2 for ZeRO to shard over.
    const Scenario s = plan(2, 1, "tensor: 1, pipeline: 1, recompute: full, zero_stage: 0", "global_batch: 2");
    check_only_change(s, ChangeKind::ZeroStage, {"parallel.zero_stage=1"});
}

TEST_CASE("fitting changes: a deeper pipeline over the same GPUs", "[fit]") {
    // Eight wide layers and short sequences, ZeRO 2 over data 4: the state a pipeline of 2 splits
    // (P/2 x (2 + 4/2 + 12/2) bytes against P x (2 + 4/4 + 12/4)) outweighs the activations of
    // the micro-batch more it keeps in flight.
    const std::string wide = "hidden: 4096, heads: 32, seq_len: 128";
    const Scenario s =
        plan(4, 8, "tensor: 1, pipeline: 1, recompute: full, zero_stage: 2", "global_batch: 4", wide);
    // ZeRO 3 (the weights sharded over 4 too) also fits: the other change offered.
    check_only_change(s, ChangeKind::Pipeline, {"parallel.pipeline=2"}, 1);
    // With the data-parallel degree given, it gives way in the same change.
    const Scenario given = plan(4, 8, "tensor: 1, pipeline: 1, data: 4, recompute: full, zero_stage: 2",
                                "global_batch: 4", wide);
    check_only_change(given, ChangeKind::Pipeline, {"parallel.pipeline=2", "parallel.data=2"}, 1);
    const auto both = offered(s, headroom_for(s, (peak_with(s, {}) + peak_with(s, {"parallel.pipeline=2"})) / 2.0));
    CHECK(std::any_of(both.begin(), both.end(), [](const FittingChange& c) {
        return c.kinds == std::vector<ChangeKind>{ChangeKind::ZeroStage} && c.sets == Sets{"parallel.zero_stage=3"};
    }));
}

TEST_CASE("fitting changes: bf16 gradients, 2 bytes per parameter less", "[fit]") {
    // Full recomputation, ZeRO 2 over a single rank, micro-batch 1, no pipeline to deepen: only
    // the gradients' precision is left to change.
    const std::string wide = "hidden: 4096, heads: 32, seq_len: 128";
    const Scenario s = plan(1, 1, "tensor: 1, pipeline: 1, recompute: full, zero_stage: 2", "global_batch: 1", wide,
                            /*fp32_grads=*/true);
    check_only_change(s, ChangeKind::GradPrecision, {"training.grad_precision=bf16"});
    // The drop is the gradient buffer's half: 2 bytes for each of the rank's parameters.
    const double drop = peak_with(s, {}) - peak_with(s, {"training.grad_precision=bf16"});
    CHECK(drop == Approx(2.0 * stage_parameters_per_rank(s.model, validate_plan(s), 0)));
    // fp16 training keeps its own gradients: nothing to offer.
    Scenario fp16 = s;
    fp16.training.precision = sim::Precision::Fp16;
    CHECK(offered_of_kind(fp16, headroom_for(fp16, peak_with(fp16, {}) - 1.0), ChangeKind::GradPrecision).empty());
}

TEST_CASE("fitting changes: a change that does not fit is never offered", "[fit]") {
    // Every kind has steps: tensor 2 without sequence parallelism, no recomputation, micro-batch
    // 4, ZeRO 0 over data 2, pipeline 1 of 2 layers, fp32 gradients.
    const Scenario s = plan(4, 2, "tensor: 2, pipeline: 1, recompute: none, zero_stage: 0",
                            "global_batch: 8, micro_batch: 4", "hidden: 1024, heads: 16, seq_len: 1024",
                            /*fp32_grads=*/true);
    const double original = peak_with(s, {});
    // Usable memory at 60 % and 90 % of the plan's peak: whatever is offered fits when applied,
    // each offer carries the changed plan's own peak, and the tighter budget offers no more single
    // changes (pairs come only when none fits alone).
    std::size_t offered_at_90 = 0;
    for (const double fraction : {0.9, 0.6}) {
        INFO("usable = " << fraction << " x the plan's peak");
        const double usable = fraction * original;
        const double headroom = headroom_for(s, usable);
        const auto changes = offered(s, headroom);
        for (const FittingChange& c : changes) {
            INFO(change_kinds_name(c.kinds));
            CHECK(c.peak_memory_bytes <= usable);
            const RunResult applied = run_with(s, c.sets, headroom);
            CHECK(applied.fits_in_memory);
            CHECK(applied.peak_memory_bytes == c.peak_memory_bytes);
        }
        for (std::size_t i = 1; i < changes.size(); ++i)
            CHECK(changes[i - 1].iteration_time_s <= changes[i].iteration_time_s);  // fastest first
        const auto singles = static_cast<std::size_t>(std::count_if(
            changes.begin(), changes.end(), [](const FittingChange& c) { return c.kinds.size() == 1; }));
        CHECK((singles == changes.size() || singles == 0));
        if (fraction == 0.9) offered_at_90 = singles;
        else CHECK(singles <= offered_at_90);
        if (fraction == 0.9) CHECK_FALSE(changes.empty());
    }
    // Nothing fits in 1 % of the GPU, alone or in pairs: nothing is offered.
    CHECK(offered(s, 0.99).empty());
}

TEST_CASE("fitting changes: the least pair of changes when no single one fits", "[fit]") {
    // One layer on two GPUs (no deeper pipeline), micro-batch 1, no tensor parallelism: only
    // recomputation and ZeRO can help. The 4,096-token scores make selective recomputation save
    // more than full recomputation's extra, and ZeRO 1 over data 2 saves more than that extra, so
    // selective + ZeRO 1 goes below every single change.
    const Scenario s = plan(2, 1, "tensor: 1, pipeline: 1, recompute: none, zero_stage: 0", "global_batch: 2",
                            "hidden: 1024, heads: 16, seq_len: 4096");
    const Sets pair{"parallel.recompute=selective", "parallel.zero_stage=1"};
    const double paired = peak_with(s, pair);
    double single = peak_with(s, {});
    for (const Sets& one : std::vector<Sets>{{"parallel.recompute=selective"}, {"parallel.recompute=full"},
                                             {"parallel.zero_stage=1"}, {"parallel.zero_stage=2"},
                                             {"parallel.zero_stage=3"}})
        single = std::min(single, peak_with(s, one));
    REQUIRE(paired < single);
    const double headroom = headroom_for(s, (paired + single) / 2.0);
    const auto changes = offered(s, headroom);
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].kinds == std::vector<ChangeKind>{ChangeKind::Recompute, ChangeKind::ZeroStage});
    CHECK(change_kinds_name(changes[0].kinds) == "recompute+zero_stage");
    CHECK(changes[0].sets == pair);
    CHECK(changes[0].peak_memory_bytes == paired);
    const RunResult applied = run_with(s, pair, headroom);
    CHECK(applied.fits_in_memory);
    CHECK(changes[0].iteration_time_s == applied.iteration_time_s);
    // In 1 % of the GPU no pair fits either: nothing is offered.
    CHECK(offered(s, 0.99).empty());
}
