#include "strategies/model_math.hpp"

#include <algorithm>

#include "strategies/layer_shapes.hpp"
#include "strategies/mla_layer.hpp"

namespace cuboid {
namespace {

LayerDims whole_model_dims(const ModelSpec& m, double sequences) {
    LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    d.b = static_cast<std::int64_t>(sequences);
    return d;
}

}  // namespace

double layer_forward_flops(const ModelSpec& m, double sequences);
double layer_forward_flops(const ModelSpec& m, double sequences, int layer);

namespace {
// Forward FLOPs of all layers: layers x one layer for a dense model, each layer's own for a
// mixture of experts (its dense layers and its expert layers differ).
double layers_forward_flops(const ModelSpec& m, double sequences) {
    if (!m.moe()) return m.layers * layer_forward_flops(m, sequences);
    const int dense = std::min(m.dense_layers, m.layers);
    return dense * layer_forward_flops(m, sequences) + (m.layers - dense) * layer_forward_flops(m, sequences, m.layers - 1);
}
}  // namespace

double layer_parameter_count(const ModelSpec& m) { return layer_parameter_count_per_rank(m, 1); }

namespace {

// An MLP of inner size `ffn` (gated: three matrices): what a t-way split divides (matrices and
// column-parallel biases) and what it replicates (the row-parallel output bias).
struct MlpParameters {
    double split = 0.0, replicated = 0.0;
};
MlpParameters mlp_parameters(const ModelSpec& m, double ffn) {
    const double h = m.hidden;
    const double fc1 = m.swiglu ? 2.0 * ffn : ffn;
    if (m.swiglu) return {h * fc1 + ffn * h, 0.0};
    return {h * fc1 + ffn * h + fc1, h};
}

}  // namespace

LayerParameters layer_parameters(const ModelSpec& m, int layer, int t, int ep, int etp) {
    if (!m.moe_layer(layer)) return {layer_parameter_count_per_rank(m, t), 0.0};
    const LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    const double h = static_cast<double>(d.h), qkv = static_cast<double>(d.qkv_width());
    // Attention as in the dense layer: QKV and projection (+ biases), two norms.
    double split = h * qkv + static_cast<double>(d.q_width()) * h + (m.swiglu ? 0.0 : qkv);
    double replicated = (m.swiglu ? 2.0 * h : 4.0 * h + h) + h * m.experts;  // norms, proj bias; router
    if (d.mla) {  // latent attention's projections (model.swiglu: no biases)
        const LatentAttentionParameters a = mla_parameters(d);
        split = a.split;
        replicated += a.whole;
    }
    const double expert_ffn = m.expert_ffn_or_default();
    if (m.shared_experts > 0) {
        const MlpParameters shared = mlp_parameters(m, m.shared_experts * expert_ffn);
        split += shared.split;
        replicated += shared.replicated;
    }
    const MlpParameters one = mlp_parameters(m, expert_ffn);
    LayerParameters p;
    p.dense = split / t + replicated;
    p.expert = static_cast<double>(m.experts) / ep * (one.split + one.replicated) / etp;
    return p;
}

double layer_parameter_count_per_rank(const ModelSpec& m, int t) {
    const LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    const double h = static_cast<double>(d.h);
    const double qkv = static_cast<double>(d.qkv_width());
    const double fc1 = static_cast<double>(d.fc1_width());
    const double ffn = static_cast<double>(d.ffn);
    if (d.mla) {  // latent attention (model.swiglu: RMSNorm, no biases); its down-projections whole on every rank
        const LatentAttentionParameters a = mla_parameters(d);
        return (a.split + h * fc1 + ffn * h) / t + a.whole + 2.0 * h;
    }
    const double matrices = h * qkv + static_cast<double>(d.q_width()) * h + h * fc1 + ffn * h;
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

LayerParameters mtp_parameters(const ModelSpec& m, int t, int ep, int etp) {
    if (m.mtp_layers <= 0) return {};
    const LayerParameters layer = layer_parameters(m, m.layers - 1, t, ep, etp);
    const double h = m.hidden;
    const double own = 2.0 * h * h / t + 3.0 * h;  // projection; two input norms and a final norm
    return {m.mtp_layers * (layer.dense + own), m.mtp_layers * layer.expert};
}

double parameter_count(const ModelSpec& m) {
    double layers = 0.0;
    if (!m.moe()) layers = m.layers * layer_parameter_count(m);
    else
        for (int i = 0; i < m.layers; ++i) layers += layer_parameters(m, i, 1).total();
    const double total = layers + embedding_parameter_count(m) + head_parameter_count(m);
    return m.mtp_layers > 0 ? total + mtp_parameters(m, 1).total() : total;
}

double layer_forward_flops(const ModelSpec& m, double sequences) {
    const LayerGemms g = layer_gemms(whole_model_dims(m, sequences));
    return attention_projection_flops(g) + gemm_flops(g.qk) + gemm_flops(g.av) + gemm_flops(g.proj) +
           gemm_flops(g.fc1) + gemm_flops(g.fc2);
}

double layer_forward_flops(const ModelSpec& m, double sequences, int layer) {
    if (!m.moe_layer(layer)) return layer_forward_flops(m, sequences);
    const LayerGemms g = layer_gemms(whole_model_dims(m, sequences));
    const double tokens = sequences * m.seq_len, h = m.hidden;
    const double attention = attention_projection_flops(g) + gemm_flops(g.qk) + gemm_flops(g.av) + gemm_flops(g.proj);
    const double router = 2.0 * tokens * h * m.experts;
    const auto mlp = [&](double ffn) { return 2.0 * tokens * (h * (m.swiglu ? 2.0 * ffn : ffn) + ffn * h); };
    const double ffn = m.expert_ffn_or_default();
    return attention + router + m.top_k() * mlp(ffn) + (m.shared_experts > 0 ? mlp(m.shared_experts * ffn) : 0.0);
}

double attention_core_forward_flops(const ModelSpec& m, double sequences) {
    const LayerGemms g = layer_gemms(whole_model_dims(m, sequences));
    return gemm_flops(g.qk) + gemm_flops(g.av);
}

double logits_forward_flops(const ModelSpec& m, double sequences) {
    return gemm_flops(logits_gemm(whole_model_dims(m, sequences)));
}

namespace {
// Forward FLOPs of the multi-token prediction modules: each its projection (2h -> h), a layer like
// the last and a second pass of the output head.
double mtp_forward_flops(const ModelSpec& m, double sequences) {
    const double tokens = sequences * m.seq_len, h = m.hidden;
    const double module = 2.0 * tokens * 2.0 * h * h + layer_forward_flops(m, sequences, m.layers - 1) +
                          logits_forward_flops(m, sequences);
    return m.mtp_layers * module;
}
}  // namespace

double model_flops_per_iteration(const ModelSpec& m, int global_batch) {
    // Backward runs two GEMMs (input and weight gradient) per forward GEMM, each with the
    // forward's FLOPs, so forward + backward = 3x forward.
    const double model = 3.0 * (layers_forward_flops(m, global_batch) + logits_forward_flops(m, global_batch));
    return m.mtp_layers > 0 ? model + 3.0 * mtp_forward_flops(m, global_batch) : model;
}

double megatron_model_flops(const ModelSpec& m, int global_batch) {
    const double B = global_batch, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

double recompute_flops_per_iteration(const ModelSpec& m, int global_batch, Recompute r) {
    switch (r) {
        case Recompute::Full: return layers_forward_flops(m, global_batch);
        case Recompute::Selective: return m.layers * attention_core_forward_flops(m, global_batch);
        case Recompute::None:
        case Recompute::StageAware: return 0.0;
    }
    return 0.0;
}

}  // namespace cuboid
