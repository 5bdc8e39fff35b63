// Sizes of one transformer layer on one tensor-parallel rank: the GEMM shapes it runs and the
// tensor sizes its memory-bound kernels move. Shared by the FLOP counts (t = 1) and the program
// builder, so the two cannot disagree.
#pragma once

#include <cstdint>

#include "sim/program.hpp"
#include "strategies/scenario.hpp"
#include "strategies/tensor_modes/tensor_mesh.hpp"

namespace cuboid {

struct LayerDims {
    std::int64_t b = 1;          // sequences per micro-batch
    std::int64_t s = 0;          // sequence length
    std::int64_t h = 0;          // hidden size
    std::int64_t heads = 0;      // attention (query) heads
    std::int64_t kv_heads = 0;   // key/value heads (== heads without grouped-query attention)
    std::int64_t head_dim = 0;   // size of one query/key head (model.head_dim; h / heads by default)
    std::int64_t v_dim = 0;      // size of one value head and attention-output head (head_dim but under mla)
    // Multi-head latent attention (ModelSpec::mla, strategies/mla_layer.hpp): the latents' widths
    // and the rotary part of a query/key head (kv_heads == heads; head_dim = nope + rope).
    bool mla = false;
    std::int64_t q_lora = 0;
    std::int64_t kv_lora = 0;
    std::int64_t qk_rope = 0;
    std::int64_t ffn = 0;        // MLP hidden size
    std::int64_t vocab = 0;
    std::int64_t t = 1;          // tensor-parallel degree (1d)
    bool swiglu = false;
    bool sp = false;             // sequence parallel: LayerNorm/dropout regions split over t
                                 // (also set by set_mesh for 2d/3d: their activation is split over t)
    double act_bytes = 2.0;      // bytes per activation element (16-bit unless fp32/tf32)
    // The attention core: one fused kernel each way (FlashAttention / cuDNN), or Megatron 2021's
    // batched GEMMs with softmax and dropout kernels; dropout on the probabilities; causal mask.
    bool fused_attention = false;
    bool attn_dropout = true;
    bool hidden_dropout = true;  // the bias-dropout-adds keep a mask (ModelSpec::hidden_dropout)
    // What selective recomputation runs again (ParallelPlan::recompute_modules): the attention
    // core, latent attention's up-projections with the rotary embedding, the norms that are
    // modules of their own (separate_norm1/2), the experts' activation, the dense MLP, the
    // mixture-of-experts MLP, its shared experts.
    bool recompute_core_attention = true;
    bool recompute_mla_up = false;
    bool recompute_layernorm = false;
    bool recompute_moe_act = false;
    bool recompute_mlp = false;  // the dense MLP (a mixture-of-experts layer's MLP is not one)
    bool recompute_moe = false;  // a mixture-of-experts layer's MLP
    bool recompute_shared_experts = false;  // its shared experts' MLP
    bool causal = true;
    // Transformer Engine's passes around the GEMMs (ModelSpec::transformer_engine); fp8: the
    // linear layers' GEMMs run in fp8, so their operands are cast (and transposed) first.
    bool te_kernels = false;
    bool fp8 = false;
    Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // how the fp8 operands are scaled (te_kernels, fp8)
    // Keys each query attends to; 0: s. A sub-batch cut along the sequence (sub_batch_dims)
    // holds s/k queries that still attend to the whole sequence's keys.
    std::int64_t keys = 0;
    // Context parallelism (set_context): the c ranks of a context group each hold s/c positions of
    // every sequence (2 of its 2c chunks) and attend them to all `keys` = the whole sequence.
    std::int64_t cp = 1;
    ContextMode cp_mode = ContextMode::Ring;
    // Whether a norm is a module of its own, whose output the next GEMM reads as its input (the
    // layernorm module can then recompute it), rather than fused into that GEMM: Transformer
    // Engine's LayerNormLinear fuses the norm before QKV and before FC1 (Megatron-Core's
    // TransformerEngine layer spec: input_layernorm and pre_mlp_layernorm are IdentityOp there),
    // except before latent attention's down-projections and before a router, where the norm is
    // a TENorm of its own; without Transformer Engine both norms are modules.
    bool separate_norm1() const { return mla || !te_kernels; }
    bool separate_norm2() const { return moe || !te_kernels; }
    // Whether the mlp module (under selective recomputation) checkpoints this layer's MLP: a dense
    // one, whose norm is fused into FC1 (the checkpoint then starts at the norm's input).
    bool mlp_checkpointed() const { return recompute_mlp && !moe && !separate_norm2(); }
    // Whether the moe module checkpoints this layer's MLP: a mixture-of-experts one, from its input
    // (the router's norm's output, which the norm keeps as a module of its own).
    bool moe_checkpointed() const { return recompute_moe && moe; }
    // Whether the shared_experts module checkpoints this layer's shared experts (their gathered
    // input is the router's norm's output, kept as the MoE layer's input).
    bool shared_checkpointed() const { return recompute_shared_experts && moe && shared_ffn > 0; }
    void set_recompute_modules(const ParallelPlan::RecomputeModules& m) {
        recompute_core_attention = m.core_attn;
        recompute_mla_up = m.mla_up_proj;
        recompute_layernorm = m.layernorm;
        recompute_moe_act = m.moe_act;
        recompute_mlp = m.mlp;
        recompute_moe = m.moe;
        recompute_shared_experts = m.shared_experts;
    }
    void set_context(int c, ContextMode mode) {
        if (c <= 1) return;
        keys = attended();
        s /= c;
        cp = c;
        cp_mode = mode;
    }

    // Mixture of experts (set_experts): this layer's MLP is a router over `experts` expert MLPs
    // of expert_ffn each, experts_per_token of them per token, plus shared_ffn of shared experts
    // (0: none) every token passes through. The layer's ranks regroup as etp x ep x expert-data:
    // each holds experts/ep experts split etp ways. moe false: the dense MLP (ffn).
    bool moe = false;
    std::int64_t experts = 0;
    std::int64_t top_k = 1;
    std::int64_t expert_ffn = 0;
    std::int64_t shared_ffn = 0;
    std::int64_t ep = 1;
    std::int64_t etp = 1;
    double imbalance = 1.0;      // the busiest expert's tokens over the mean
    void set_experts(const ModelSpec& m, int expert, int expert_tensor) {
        if (!m.moe()) return;
        moe = true;
        experts = m.experts;
        top_k = m.top_k();
        expert_ffn = m.expert_ffn_or_default();
        shared_ffn = static_cast<std::int64_t>(m.shared_experts) * expert_ffn;
        ep = expert;
        etp = expert_tensor;
        imbalance = m.moe_load_imbalance;
    }
    // The same layer with the dense MLP (a dense layer of a mixture-of-experts model).
    LayerDims dense() const {
        LayerDims d = *this;
        d.moe = false;
        return d;
    }
    // Tokens of one rank the router sees: the micro-batch's, split over t by sequence parallelism.
    std::int64_t routed_tokens() const { return tokens() / (sp ? t : 1); }
    std::int64_t local_experts() const { return experts / ep; }
    // Token rows one rank's expert GEMMs run after the dispatch (and, with etp > 1, the gather
    // over the expert-tensor group): top_k copies of every token of the ep x etp ranks spread over
    // their experts, so etp * top_k * routed_tokens balanced; times the imbalance, rounded up to
    // whole rows of every local expert.
    std::int64_t expert_rows_per_expert() const;
    std::int64_t expert_rows() const { return expert_rows_per_expert() * local_experts(); }
    std::int64_t expert_fc1_width() const { return (swiglu ? 2 * expert_ffn : expert_ffn) / etp; }  // per rank
    std::int64_t shared_fc1_width() const { return swiglu ? 2 * shared_ffn : shared_ffn; }       // all ranks

    static LayerDims make(const ModelSpec& m, int micro_batch, int tensor, bool sequence_parallel,
                          sim::Precision precision);
    // The tensor-parallel mode and mesh (1d by default). 2d and 3d keep every activation between
    // layers split over all t devices ([b*s/q, h/q] and [b*s/q^2, h/q]), which the embedding,
    // the head and the pipeline transfers see as the sequence-parallel layout: set_mesh sets sp.
    TensorMesh mesh = TensorMesh::one_d(1);
    void set_mesh(const TensorMesh& m) {
        mesh = m;
        if (m.mode == TensorMode::TwoD || m.mode == TensorMode::ThreeD) sp = t > 1;
    }

    std::int64_t tokens() const { return b * s; }
    std::int64_t attended() const { return keys > 0 ? keys : s; }
    std::int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }  // all ranks
    std::int64_t kv_width() const { return kv_heads * head_dim; }
    std::int64_t q_width() const { return heads * head_dim; }  // Q, all ranks (h by default)
    std::int64_t k_width() const { return kv_heads * head_dim; }
    std::int64_t v_width() const { return kv_heads * v_dim; }
    std::int64_t o_width() const { return heads * v_dim; }  // the attention output, all ranks (h by default)
    // Multi-head latent attention: the width the down-projections write (query latent, key/value
    // latent and the shared rotary key), and the key/value up-projection's output per head.
    std::int64_t latent_width() const { return q_lora + kv_lora + qk_rope; }
    std::int64_t kv_up_head() const { return head_dim - qk_rope + v_dim; }
    // Rows a down-projection runs on: the rank's own positions under sequence parallelism (its
    // weights are whole on every rank), every row of the micro-batch without.
    std::int64_t latent_rows() const { return tokens() / (sp ? t : 1); }
    std::int64_t fc1_width() const { return swiglu ? 2 * ffn : ffn; }             // all ranks
    // Vocabulary columns of one rank (Megatron pads the vocabulary to a multiple of t).
    std::int64_t vocab_per_rank() const { return (vocab + t - 1) / t; }
    // Divisor of tensors in the LayerNorm / dropout regions: t with sequence parallelism.
    double sp_div() const { return sp ? static_cast<double>(t) : 1.0; }
};

// Forward GEMMs of one layer on one rank, Megatron 1d tensor parallelism: QKV and FC1 split by
// columns, projection and FC2 by rows, attention heads split over t.
struct LayerGemms {
    sim::GemmShape qkv;   // [bs, h] x [h, qkv_width/t]
    sim::GemmShape qk;    // batch b*heads/t: [s, hd] x [hd, s]
    sim::GemmShape av;    // batch b*heads/t: [s, s] x [s, hd]
    sim::GemmShape proj;  // [bs, h/t] x [h/t, h]
    sim::GemmShape fc1;   // [bs, h] x [h, fc1_width/t]
    sim::GemmShape fc2;   // [bs, ffn/t] x [ffn/t, h]
    // Multi-head latent attention in place of qkv (which is then empty): the down-projections
    // on latent_rows, whole on every rank, and the up-projections split by heads over t.
    sim::GemmShape q_down;   // [rows, h] x [h, q_lora]
    sim::GemmShape kv_down;  // [rows, h] x [h, kv_lora + rope]
    sim::GemmShape q_up;     // [bs, q_lora] x [q_lora, heads/t * head_dim]
    sim::GemmShape kv_up;    // [bs, kv_lora] x [kv_lora, heads/t * (nope + v)]
};

LayerGemms layer_gemms(const LayerDims& d);

// The GEMMs of a mixture-of-experts MLP on one rank (LayerDims::moe): the router's gate, the
// grouped GEMMs of the rank's experts (batch = local experts, rows = expert_rows_per_expert) and
// the shared experts' column / row split MLP over t (as the dense MLP: fc1 [bs, h] x [h, w/t]).
struct MoeGemms {
    sim::GemmShape router;      // [routed tokens, h] x [h, experts]
    sim::GemmShape expert_fc1;  // per expert [rows, h] x [h, expert_fc1_width]
    sim::GemmShape expert_fc2;  // per expert [rows, expert_ffn/etp] x [expert_ffn/etp, h]
    sim::GemmShape shared_fc1;  // [bs, h] x [h, shared_fc1_width/t]
    sim::GemmShape shared_fc2;  // [bs, shared_ffn/t] x [shared_ffn/t, h]
};
MoeGemms moe_gemms(const LayerDims& d);

// Fused attention (FlashAttention 2/3, cuDNN): the kernel works on tiles of kAttentionBlock
// queries x kAttentionBlock keys and, under a causal mask, skips the tiles above the diagonal:
// of n x n tiles it computes n(n+1)/2, a fraction (n+1)/(2n) (1 without a causal mask).
inline constexpr std::int64_t kAttentionBlock = 128;
double attention_tile_fraction(const LayerDims& d);
// FLOPs of the fused kernel on one rank: forward 4*b*(heads/t)*s*keys*head_dim (QK^T and PV)
// times the tile fraction; backward 2.5x that (FlashAttention 2 §3.2: it recomputes QK^T, then
// forms dP = dO V^T, dV = P^T dO, dQ = dS K and dK = dS^T Q: five products to the forward's two).
double fused_attention_flops(const LayerDims& d, bool backward);
inline constexpr double kFusedAttentionBackwardRatio = 2.5;
// Bytes the fused kernel saves for its backward besides Q, K, V and its output: the fp32 row
// log-sum-exp of each query and head, b*(heads/t)*s*4.
double fused_attention_stats_bytes(const LayerDims& d);

// One of `k` equal sub-batches of a micro-batch (Merak's sub-pipelined tensor parallelism,
// seed_algorithms §1.3): whole sequences (b/k) when k divides b, as Merak's chunk along the batch;
// else s/k positions of every sequence, whose queries attend to all s keys. Either way every GEMM
// has 1/k of the rows (or of the attention batch) and the k sub-batches sum to the micro-batch's
// FLOPs. Needs k | b or k | s (validate_plan).
LayerDims sub_batch_dims(const LayerDims& d, int k);
sim::GemmShape logits_gemm(const LayerDims& d);  // [bs, h] x [h, V/t]

// 2*m*n*k per product: one multiply and one add per term.
inline double gemm_flops(const sim::GemmShape& g) {
    return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
           static_cast<double>(g.batch);
}

// FLOPs of the projections that make Q, K and V: QKV, or latent attention's four GEMMs (each
// empty for the other kind, adding exactly zero).
inline double attention_projection_flops(const LayerGemms& g) {
    return gemm_flops(g.qkv) + gemm_flops(g.q_down) + gemm_flops(g.kv_down) + gemm_flops(g.q_up) + gemm_flops(g.kv_up);
}

// Backward of a forward product [m,k]x[k,n]: input gradient [m,n]x[n,k] and weight gradient
// [k,m]x[m,n], each with the forward's FLOPs.
inline sim::GemmShape input_grad_shape(const sim::GemmShape& g) { return {g.m, g.k, g.n, g.batch}; }
inline sim::GemmShape weight_grad_shape(const sim::GemmShape& g) { return {g.k, g.n, g.m, g.batch}; }

}  // namespace cuboid
