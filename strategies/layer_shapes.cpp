#include "strategies/layer_shapes.hpp"

#include <algorithm>
#include <cmath>

namespace cuboid {

LayerDims LayerDims::make(const ModelSpec& m, int micro_batch, int tensor, bool sequence_parallel,
                          sim::Precision precision) {
    LayerDims d;
    d.b = micro_batch;
    d.s = m.seq_len;
    d.h = m.hidden;
    d.heads = m.heads;
    d.kv_heads = m.kv_heads_or_default();
    d.head_dim = m.head_dim_or_default();
    d.v_dim = m.v_head_dim_or_default();
    if (m.mla()) {
        d.mla = true;
        d.q_lora = m.q_lora_rank;
        d.kv_lora = m.kv_lora_rank;
        d.qk_rope = m.qk_rope_head_dim;
    }
    d.ffn = m.ffn_or_default();
    d.vocab = m.vocab;
    d.t = tensor;
    d.mesh = TensorMesh::one_d(tensor);
    d.swiglu = m.swiglu;
    d.sp = sequence_parallel && tensor > 1;
    d.fused_attention = m.attention == AttentionKernel::Fused;
    d.attn_dropout = m.attention_dropout;
    d.hidden_dropout = m.hidden_dropout;
    d.causal = m.causal;
    d.te_kernels = m.transformer_engine;
    d.fp8 = precision == sim::Precision::Fp8;
    d.fp8_recipe = m.fp8_recipe;
    // Activations are stored in 16 bits under mixed precision (fp8 training keeps 16-bit
    // activations between kernels too); fp32 and tf32 keep 32-bit tensors.
    d.act_bytes = (precision == sim::Precision::Fp32 || precision == sim::Precision::Tf32) ? 4.0 : 2.0;
    return d;
}

std::int64_t LayerDims::expert_rows_per_expert() const {
    const double rows = static_cast<double>(routed_tokens() * top_k * etp) * imbalance;
    const auto local = static_cast<double>(std::max<std::int64_t>(1, local_experts()));
    return static_cast<std::int64_t>(std::ceil(rows / local - 1e-9));
}

MoeGemms moe_gemms(const LayerDims& d) {
    MoeGemms g;
    const std::int64_t rows = d.expert_rows_per_expert(), local = d.local_experts();
    g.router = {d.routed_tokens(), d.experts, d.h, 1};
    g.expert_fc1 = {rows, d.expert_fc1_width(), d.h, local};
    g.expert_fc2 = {rows, d.h, d.expert_ffn / d.etp, local};
    g.shared_fc1 = {d.tokens(), d.shared_fc1_width() / d.t, d.h, 1};
    g.shared_fc2 = {d.tokens(), d.h, d.shared_ffn / d.t, 1};
    return g;
}

LayerGemms layer_gemms(const LayerDims& d) {
    const std::int64_t bs = d.tokens();
    const std::int64_t attn_batch = d.b * d.heads / d.t;
    LayerGemms g;
    if (d.mla) {
        g.qkv = {bs, 0, d.h, 1};
        g.q_down = {d.latent_rows(), d.q_lora, d.h, 1};
        g.kv_down = {d.latent_rows(), d.kv_lora + d.qk_rope, d.h, 1};
        g.q_up = {bs, d.heads / d.t * d.head_dim, d.q_lora, 1};
        g.kv_up = {bs, d.heads / d.t * d.kv_up_head(), d.kv_lora, 1};
    } else {
        g.qkv = {bs, d.qkv_width() / d.t, d.h, 1};
    }
    g.qk = {d.s, d.attended(), d.head_dim, attn_batch};
    g.av = {d.s, d.v_dim, d.attended(), attn_batch};
    g.proj = {bs, d.h, d.o_width() / d.t, 1};
    g.fc1 = {bs, d.fc1_width() / d.t, d.h, 1};
    g.fc2 = {bs, d.h, d.ffn / d.t, 1};
    return g;
}

double attention_tile_fraction(const LayerDims& d) {
    if (!d.causal) return 1.0;
    const std::int64_t n = (d.attended() + kAttentionBlock - 1) / kAttentionBlock;
    return static_cast<double>(n + 1) / static_cast<double>(2 * n);
}

double fused_attention_flops(const LayerDims& d, bool backward) {
    const LayerGemms g = layer_gemms(d);
    const double forward = (gemm_flops(g.qk) + gemm_flops(g.av)) * attention_tile_fraction(d);
    return backward ? kFusedAttentionBackwardRatio * forward : forward;
}

double fused_attention_stats_bytes(const LayerDims& d) {
    constexpr double kFp32 = 4.0;
    return kFp32 * static_cast<double>(d.b * d.heads / d.t) * static_cast<double>(d.s);
}

LayerDims sub_batch_dims(const LayerDims& d, int k) {
    LayerDims sub = d;
    if (d.b % k == 0) {
        sub.b = d.b / k;
    } else {
        sub.keys = d.attended();
        sub.s = d.s / k;
    }
    return sub;
}

sim::GemmShape logits_gemm(const LayerDims& d) { return {d.tokens(), d.vocab_per_rank(), d.h, 1}; }

}  // namespace cuboid
