#include "strategies/training_state.hpp"

#include "strategies/layer_shapes.hpp"
#include "strategies/model_math.hpp"

namespace cuboid {

StateBytesPerParam state_bytes_per_param(sim::Precision p) {
    switch (p) {
        case sim::Precision::Fp32:
        case sim::Precision::Tf32: return {4.0, 4.0, 8.0};
        case sim::Precision::Fp16: return {2.0, 2.0, 16.0};
        case sim::Precision::Bf16:
        case sim::Precision::Fp8: return {2.0, 4.0, 12.0};
    }
    return {2.0, 4.0, 12.0};
}

StateBytesPerParam state_bytes_per_param(const TrainingSpec& t) {
    StateBytesPerParam s = state_bytes_per_param(t.precision);
    if (t.grad_precision) s.grad = sim::bytes_per_element(*t.grad_precision);
    if (t.optimizer_offload) s.optimizer = 0.0;  // main weights and moments in host memory
    return s;
}

double checkpoint_bytes(const ModelSpec& m, sim::Precision p) {
    const bool mixed = !(p == sim::Precision::Fp32 || p == sim::Precision::Tf32);
    const double adam = 8.0 + (mixed ? 4.0 : 0.0);
    return parameter_count(m) * (state_bytes_per_param(p).weight + adam);
}

double optimizer_step_bytes_per_param(sim::Precision p) {
    TrainingSpec t;
    t.precision = p;
    return optimizer_step_bytes_per_param(t);
}

double optimizer_step_bytes_per_param(const TrainingSpec& t) {
    const sim::Precision p = t.precision;
    const StateBytesPerParam s = state_bytes_per_param(t);
    const bool mixed = !(p == sim::Precision::Fp32 || p == sim::Precision::Tf32);
    const double moments = 2.0 * 8.0;                // read + write m and v (fp32)
    const double main_weight = 2.0 * 4.0;            // read + write the fp32 weight
    return s.grad + moments + main_weight + (mixed ? s.weight : 0.0);
}

double embedding_parameters_per_rank(const ModelSpec& m, int t) {
    const double vh = static_cast<double>(m.vocab) * m.hidden;
    return vh / t + (embedding_parameter_count(m) - vh);  // word rows split, positions replicated
}

double tied_embedding_copy_per_rank(const ModelSpec& m, int t, int pipeline) {
    const double vh = static_cast<double>(m.vocab) * m.hidden;
    // GPT's output matrix is the input embedding; multi-token prediction looks the shifted tokens
    // up in it on the last stage.
    return (!m.swiglu || m.mtp_layers > 0) && pipeline > 1 ? vh / t : 0.0;
}

double head_parameters_per_rank(const ModelSpec& m, int t, int pipeline) {
    const double vh = static_cast<double>(m.vocab) * m.hidden;
    const double output_matrix = m.swiglu ? vh / t : tied_embedding_copy_per_rank(m, t, pipeline);  // untied, or the tied copy
    const double head = (head_parameter_count(m) - (m.swiglu ? vh : 0.0)) + output_matrix;
    if (m.mtp_layers <= 0) return head;
    // Multi-token prediction: its modules, and the embedding's copy its lookups read (GPT's tied
    // copy is the output matrix already).
    const double lookup_copy = m.swiglu ? tied_embedding_copy_per_rank(m, t, pipeline) : 0.0;
    return head + lookup_copy + mtp_parameters(m, t).dense;
}

double layer_parameters_per_device(const ModelSpec& m, const std::array<int, 3>& mesh) {
    if (m.mla()) return layer_parameter_count_per_rank(m, mesh[0]);  // latent attention: 1d only
    const LayerDims d = LayerDims::make(m, 1, 1, false, sim::Precision::Bf16);
    const double h = static_cast<double>(d.h);
    const double qkv = static_cast<double>(d.qkv_width()), fc1 = static_cast<double>(d.fc1_width());
    const double matrices = h * qkv + static_cast<double>(d.q_width()) * h + h * fc1 + static_cast<double>(d.ffn) * h;
    // GPT: biases of QKV and FC1 (first linears) and of the projection and FC2 (second), two
    // LayerNorms (scale and bias); Llama: no biases, two RMSNorm scales (as model_math.cpp).
    const double column_biases = m.swiglu ? 0.0 : qkv + fc1;
    const double second_biases = m.swiglu ? 0.0 : 2.0 * h;
    const double norms = m.swiglu ? 2.0 * h : 4.0 * h;
    const double t = static_cast<double>(mesh[0]) * mesh[1] * mesh[2];
    if (mesh[2] > 1) return matrices / t + (column_biases + second_biases + norms) / mesh[2];
    return matrices / t + column_biases / mesh[0] + (second_biases + norms) / mesh[1];
}

double stage_parameters_per_rank(const ModelSpec& m, const Layout& l, int stage) {
    if (m.moe()) return stage_parameter_split(m, l, stage).total();
    double params = l.layers_on_stage(stage) * layer_parameters_per_device(m, l.tensor_mesh);
    if (stage == 0) params += embedding_parameters_per_rank(m, l.tensor);
    if (stage == l.head_stage()) params += head_parameters_per_rank(m, l.tensor, l.tied_pipeline());
    return params;
}

StageParameters stage_parameter_split(const ModelSpec& m, const Layout& l, int stage) {
    StageParameters p;
    if (!m.moe()) {
        p.dense = stage_parameters_per_rank(m, l, stage);
        return p;
    }
    for (int chunk = 0; chunk < l.virtual_stages; ++chunk) {
        const int first = l.first_layer_of(stage, chunk);
        for (int i = 0; i < l.layers_of(stage, chunk); ++i) {
            const LayerParameters layer = layer_parameters(m, first + i, l.tensor, l.expert, l.expert_tensor);
            p.dense += layer.dense;
            p.expert += layer.expert;
        }
    }
    if (stage == 0) p.dense += embedding_parameters_per_rank(m, l.tensor);
    if (stage == l.head_stage()) {  // the last stage, or the first under ZB-V's V placement
        p.dense += head_parameters_per_rank(m, l.tensor, l.tied_pipeline());
        p.expert += mtp_parameters(m, l.tensor, l.expert, l.expert_tensor).expert;
    }
    return p;
}

Bytes resident_state_bytes(const StageParameters& params, const Layout& l, const TrainingSpec& t, int zero_stage, int data) {
    return resident_state_bytes(params.dense, t, zero_stage, data) +
           resident_state_bytes(params.expert, t, zero_stage, l.expert_shard_size());
}

StateBytesPerParam sharded_state_bytes_per_param(sim::Precision p, int zero_stage, int data) {
    TrainingSpec t;
    t.precision = p;
    return sharded_state_bytes_per_param(t, zero_stage, data);
}

StateBytesPerParam sharded_state_bytes_per_param(const TrainingSpec& t, int zero_stage, int data) {
    const StateBytesPerParam s = state_bytes_per_param(t);
    const double d = data;
    StateBytesPerParam out;
    out.optimizer = zero_stage >= 1 ? s.optimizer / d : s.optimizer;
    out.grad = zero_stage >= 2 ? s.grad / d : s.grad;
    out.weight = zero_stage >= 3 ? s.weight / d : s.weight;
    return out;
}

Bytes resident_state_bytes(double params, sim::Precision p, int zero_stage, int data) {
    TrainingSpec t;
    t.precision = p;
    return resident_state_bytes(params, t, zero_stage, data);
}

Bytes resident_state_bytes(double params, const TrainingSpec& t, int zero_stage, int data) {
    return Bytes(params * sharded_state_bytes_per_param(t, zero_stage, data).total());
}

}  // namespace cuboid
