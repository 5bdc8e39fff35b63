#include "strategies/model_math.hpp"

#include "strategies/layer_shapes.hpp"

namespace cuboid {
namespace {

LayerDims whole_model_dims(const ModelSpec& m, double sequences) {
    LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    d.b = static_cast<std::int64_t>(sequences);
    return d;
}

}  // namespace

double layer_parameter_count(const ModelSpec& m) { return layer_parameter_count_per_rank(m, 1); }

double layer_parameter_count_per_rank(const ModelSpec& m, int t) {
    const LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    const double h = static_cast<double>(d.h);
    const double qkv = static_cast<double>(d.qkv_width());
    const double fc1 = static_cast<double>(d.fc1_width());
    const double ffn = static_cast<double>(d.ffn);
    const double matrices = h * qkv + h * h + h * fc1 + ffn * h;
    if (m.swiglu) return matrices / t + 2.0 * h;  // two RMSNorm scales, no biases
    const double split_biases = qkv + fc1;        // column-parallel biases are split
    const double replicated = 2.0 * h + 4.0 * h;  // row-parallel biases; two LayerNorms
    return (matrices + split_biases) / t + replicated;
}

double embedding_parameter_count(const ModelSpec& m) {
    const double h = m.hidden;
    const double positions = m.swiglu ? 0.0 : static_cast<double>(m.seq_len) * h;  // rotary: none
    return static_cast<double>(m.vocab) * h + positions;
}

double head_parameter_count(const ModelSpec& m) {
    const double h = m.hidden;
    if (m.swiglu) return h + static_cast<double>(m.vocab) * h;  // RMSNorm + untied output
    return 2.0 * h;                                             // LayerNorm; output tied
}

double parameter_count(const ModelSpec& m) {
    return m.layers * layer_parameter_count(m) + embedding_parameter_count(m) + head_parameter_count(m);
}

double layer_forward_flops(const ModelSpec& m, double sequences) {
    const LayerGemms g = layer_gemms(whole_model_dims(m, sequences));
    return gemm_flops(g.qkv) + gemm_flops(g.qk) + gemm_flops(g.av) + gemm_flops(g.proj) +
           gemm_flops(g.fc1) + gemm_flops(g.fc2);
}

double attention_core_forward_flops(const ModelSpec& m, double sequences) {
    const LayerGemms g = layer_gemms(whole_model_dims(m, sequences));
    return gemm_flops(g.qk) + gemm_flops(g.av);
}

double logits_forward_flops(const ModelSpec& m, double sequences) {
    return gemm_flops(logits_gemm(whole_model_dims(m, sequences)));
}

double model_flops_per_iteration(const ModelSpec& m, int global_batch) {
    // Backward runs two GEMMs (input and weight gradient) per forward GEMM, each with the
    // forward's FLOPs, so forward + backward = 3x forward.
    const double fwd = m.layers * layer_forward_flops(m, global_batch) + logits_forward_flops(m, global_batch);
    return 3.0 * fwd;
}

double megatron_model_flops(const ModelSpec& m, int global_batch) {
    const double B = global_batch, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

double recompute_flops_per_iteration(const ModelSpec& m, int global_batch, Recompute r) {
    switch (r) {
        case Recompute::Full: return m.layers * layer_forward_flops(m, global_batch);
        case Recompute::Selective: return m.layers * attention_core_forward_flops(m, global_batch);
        case Recompute::None:
        case Recompute::StageAware: return 0.0;
    }
    return 0.0;
}

}  // namespace cuboid
