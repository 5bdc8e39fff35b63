#include "strategies/names.hpp"

namespace cuboid {
namespace {

// Index of `word` in `names`; throws listing the allowed words when absent.
std::size_t find_name(const std::vector<NamedValue>& names, const std::string& word,
                      const InputLocation& where, const char* what) {
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i].name == word) return i;
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n.name;
    throw InputError(where, "unknown " + std::string(what) + " '" + word + "'; allowed: " + allowed);
}

}  // namespace

// Order of each list == order of the enum's values.
std::vector<NamedValue> schedule_names() {
    return {{"gpipe", "all forwards, then all backwards (Huang et al. 2019)"},
            {"1f1b", "one-forward-one-backward, PipeDream-Flush (Narayanan et al. 2021)"},
            {"interleaved", "1F1B over virtual stages (Megatron, Narayanan et al. SC'21)"},
            {"shifted-critical-path", "Merak's shifted critical path (Lai et al. 2023): pre-recompute in the bubbles; needs recompute full or stage-aware"},
            {"zb-h1", "zero bubble H1 (Qi et al. ICLR 2024): backward split into input- and weight-gradient passes, weight gradients deferred into the bubbles; 1F1B's activation memory"},
            {"zb-v", "zero bubble V (Qi et al. ICLR 2024): two model chunks per stage in a V (stage s holds chunks s and 2p-1-s), split backward; 1F1B's activation memory; needs virtual_stages 2"}};
}

std::vector<NamedValue> recompute_names() {
    return {{"none", "store every activation"},
            {"full", "store each layer's input, recompute the layer before its backward"},
            {"selective", "recompute the attention core only (Korthikanti et al. 2022)"},
            {"stage-aware", "per-stage checkpointed layers, the fewest that fit in GPU memory (Merak)"}};
}

std::vector<NamedValue> tensor_mode_names() {
    return {{"1d", "Megatron tensor parallelism (Shoeybi et al. 2019)"},
            {"2d", "Optimus / SUMMA on a q x q mesh, tensor = q^2 (Xu et al. 2021)"},
            {"3d", "3D tensor parallelism on a q x q x q cube, tensor = q^3 (Bian et al. 2021)"},
            {"atp", "adaptive tensor parallelism on a d1 x d2 mesh, see parallel.atp_mesh and atp_order (Cheng et al. 2023)"}};
}

std::vector<NamedValue> context_mode_names() {
    return {{"ring", "K/V blocks passed around the context group, overlapped with blockwise attention (Transformer Engine p2p; Liu et al. 2023, ring attention)"},
            {"all-gather", "K/V all-gathered before attention, dK/dV reduce-scattered (Llama 3, Dubey et al. 2024)"},
            {"all-to-all", "Q/K/V exchanged from sequence to head split and back (DeepSpeed-Ulysses, Jacobs et al. 2023)"}};
}

std::vector<NamedValue> fp8_recipe_names() {
    return {{"delayed", "per-tensor scale from the amax history (Transformer Engine DelayedScaling)"},
            {"current", "per-tensor scale from the tensor's own amax, one more pass per cast (Float8CurrentScaling)"},
            {"mxfp8", "a scale per 32 elements, both orientations cast from 16 bits (MXFP8BlockScaling; Blackwell, CDNA4)"}};
}

std::vector<NamedValue> atp_order_names() {
    return {{"auto", "chosen with the mesh from the cluster's communication matrix"},
            {"column-first", "mesh axis 0 (consecutive GPUs) splits the first linear's columns (heads, MLP)"},
            {"row-first", "mesh axis 0 (consecutive GPUs) splits the hidden size"}};
}

std::vector<NamedValue> precision_names() {
    return {{"fp32", "32-bit float"},
            {"tf32", "TensorFloat-32 GEMMs, fp32 storage"},
            {"fp16", "16-bit float, mixed precision"},
            {"bf16", "bfloat16, mixed precision"},
            {"fp8", "8-bit float GEMMs, 16-bit activations"}};
}

Schedule parse_schedule(const std::string& word, const InputLocation& where) {
    return static_cast<Schedule>(find_name(schedule_names(), word, where, "schedule"));
}

Recompute parse_recompute(const std::string& word, const InputLocation& where) {
    return static_cast<Recompute>(find_name(recompute_names(), word, where, "recompute policy"));
}

TensorMode parse_tensor_mode(const std::string& word, const InputLocation& where) {
    return static_cast<TensorMode>(find_name(tensor_mode_names(), word, where, "tensor mode"));
}

ContextMode parse_context_mode(const std::string& word, const InputLocation& where) {
    return static_cast<ContextMode>(find_name(context_mode_names(), word, where, "context mode"));
}

Fp8Recipe parse_fp8_recipe(const std::string& word, const InputLocation& where) {
    return static_cast<Fp8Recipe>(find_name(fp8_recipe_names(), word, where, "fp8 recipe"));
}

std::string fp8_recipe_name(Fp8Recipe r) { return fp8_recipe_names().at(static_cast<std::size_t>(r)).name; }

AtpOrder parse_atp_order(const std::string& word, const InputLocation& where) {
    return static_cast<AtpOrder>(find_name(atp_order_names(), word, where, "ATP order"));
}

sim::Precision parse_precision(const std::string& word, const InputLocation& where) {
    return static_cast<sim::Precision>(find_name(precision_names(), word, where, "precision"));
}

std::string precision_name(sim::Precision p) {
    return precision_names()[static_cast<std::size_t>(p)].name;
}

}  // namespace cuboid
