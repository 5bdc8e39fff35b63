#include "strategies/names.hpp"

#include "strategies/context_attention.hpp"
#include "strategies/schedule_kinds.hpp"
#include "strategies/tensor_modes/tensor_mode_kinds.hpp"

namespace cuboid {
namespace {

// A descriptor table (word and line) from a table of kinds whose rows also hold behaviour.
template <class E, class Row>
std::vector<Descriptor<E>> descriptors_of(std::span<const Row> rows) {
    std::vector<Descriptor<E>> out;
    for (const Row& r : rows) out.push_back({r.value, r.name, r.description});
    return out;
}

constexpr Descriptor<Recompute> kRecompute[] = {
    {Recompute::None, "none", "store every activation"},
    {Recompute::Full, "full", "store each layer's input, recompute the layer before its backward"},
    {Recompute::Selective, "selective",
     "recompute parts of each layer: the attention core (Korthikanti et al. 2022) or the modules chosen"},
    {Recompute::StageAware, "stage-aware", "per-stage checkpointed layers, the fewest that fit in GPU memory (Merak)"},
};

constexpr Descriptor<RecomputeModule> kRecomputeModules[] = {
    {RecomputeModule::CoreAttn, "core_attn", "the attention core (Megatron-Core's default module)"},
    {RecomputeModule::MlaUpProj, "mla_up_proj",
     "latent attention's up-projections and rotary embedding: Q, K and V not kept (DeepSeek-V3 recipes)"},
    {RecomputeModule::Layernorm, "layernorm",
     "the norms that are modules of their own (not fused into the next GEMM): their outputs not kept"},
    {RecomputeModule::MoeAct, "moe_act", "the experts' activation: its output (expert FC2's input) not kept"},
    {RecomputeModule::Mlp, "mlp", "a dense layer's MLP: only its input kept, its forward run again before its backward"},
    {RecomputeModule::Moe, "moe",
     "a mixture-of-experts layer's MLP: only its input kept, its forward (router, all-to-alls, experts, shared "
     "experts) run again before its backward"},
    {RecomputeModule::SharedExperts, "shared_experts",
     "the shared experts' MLP: only its input kept, its forward run again before its backward"},
};

constexpr Descriptor<Fp8Recipe> kFp8Recipes[] = {
    {Fp8Recipe::Delayed, "delayed", "per-tensor scale from the amax history (Transformer Engine DelayedScaling)"},
    {Fp8Recipe::Current, "current",
     "per-tensor scale from the tensor's own amax, one more pass per cast (Float8CurrentScaling)"},
    {Fp8Recipe::Mxfp8, "mxfp8",
     "a scale per 32 elements, both orientations cast from 16 bits (MXFP8BlockScaling; Blackwell, CDNA4)"},
};

constexpr Descriptor<AtpOrder> kAtpOrders[] = {
    {AtpOrder::Auto, "auto", "chosen with the mesh from the cluster's communication matrix"},
    {AtpOrder::ColumnFirst, "column-first",
     "mesh axis 0 (consecutive GPUs) splits the first linear's columns (heads, MLP)"},
    {AtpOrder::RowFirst, "row-first", "mesh axis 0 (consecutive GPUs) splits the hidden size"},
};

constexpr Descriptor<sim::Precision> kPrecisions[] = {
    {sim::Precision::Fp32, "fp32", "32-bit float"},
    {sim::Precision::Tf32, "tf32", "TensorFloat-32 GEMMs, fp32 storage"},
    {sim::Precision::Fp16, "fp16", "16-bit float, mixed precision"},
    {sim::Precision::Bf16, "bf16", "bfloat16, mixed precision"},
    {sim::Precision::Fp8, "fp8", "8-bit float GEMMs, 16-bit activations"},
};

// The row of `word`; throws listing the allowed words when absent.
template <class E>
E parse_in(std::span<const Descriptor<E>> table, const std::string& word, const InputLocation& where,
           const char* what) {
    for (const auto& d : table)
        if (d.name == word) return d.value;
    std::string allowed;
    for (const auto& d : table) allowed += (allowed.empty() ? "" : ", ") + std::string(d.name);
    throw InputError(where, "unknown " + std::string(what) + " '" + word + "'; allowed: " + allowed);
}

template <class E>
std::string name_in(std::span<const Descriptor<E>> table, E value) {
    for (const auto& d : table)
        if (d.value == value) return d.name;
    return "?";
}

}  // namespace

// The schedules', context modes' and tensor modes' words and lines are their rows of the tables
// that also hold their behaviour (schedule_kinds.hpp, context_attention.hpp,
// tensor_modes/tensor_mode_kinds.hpp).
std::span<const Descriptor<Schedule>> schedule_table() {
    static const auto table = descriptors_of<Schedule>(schedule_kinds());
    return table;
}
std::span<const Descriptor<Recompute>> recompute_table() { return kRecompute; }
std::span<const Descriptor<TensorMode>> tensor_mode_table() {
    static const auto table = descriptors_of<TensorMode>(tensor_mode_kinds());
    return table;
}
std::span<const Descriptor<ContextMode>> context_mode_table() {
    static const auto table = descriptors_of<ContextMode>(context_mode_kinds());
    return table;
}
std::span<const Descriptor<RecomputeModule>> recompute_module_table() { return kRecomputeModules; }
std::span<const Descriptor<Fp8Recipe>> fp8_recipe_table() { return kFp8Recipes; }
std::span<const Descriptor<AtpOrder>> atp_order_table() { return kAtpOrders; }
std::span<const Descriptor<sim::Precision>> precision_table() { return kPrecisions; }

Schedule parse_schedule(const std::string& word, const InputLocation& where) {
    return parse_in(schedule_table(), word, where, "schedule");
}
Recompute parse_recompute(const std::string& word, const InputLocation& where) {
    return parse_in(recompute_table(), word, where, "recompute policy");
}
RecomputeModule parse_recompute_module(const std::string& word, const InputLocation& where) {
    return parse_in(recompute_module_table(), word, where, "module");
}
TensorMode parse_tensor_mode(const std::string& word, const InputLocation& where) {
    return parse_in(tensor_mode_table(), word, where, "tensor mode");
}
ContextMode parse_context_mode(const std::string& word, const InputLocation& where) {
    return parse_in(context_mode_table(), word, where, "context mode");
}
Fp8Recipe parse_fp8_recipe(const std::string& word, const InputLocation& where) {
    return parse_in(fp8_recipe_table(), word, where, "fp8 recipe");
}
AtpOrder parse_atp_order(const std::string& word, const InputLocation& where) {
    return parse_in(atp_order_table(), word, where, "ATP order");
}
sim::Precision parse_precision(const std::string& word, const InputLocation& where) {
    return parse_in(precision_table(), word, where, "precision");
}

std::string fp8_recipe_name(Fp8Recipe r) { return name_in(fp8_recipe_table(), r); }
std::string precision_name(sim::Precision p) { return name_in(precision_table(), p); }
std::string to_string(Schedule s) { return name_in(schedule_table(), s); }
std::string to_string(Recompute r) { return name_in(recompute_table(), r); }
std::vector<std::string> module_names(const ParallelPlan::RecomputeModules& m) {
    std::vector<std::string> names;
    for (const auto& d : recompute_module_table())
        if (m.chosen(d.value)) names.emplace_back(d.name);
    return names;
}
std::string to_string(TensorMode m) { return name_in(tensor_mode_table(), m); }
std::string to_string(ContextMode m) { return name_in(context_mode_table(), m); }

}  // namespace cuboid
