// The few labels of a program, interned once per build. Labels name the kind of work ("F.qkv",
// "B.fc1.wgrad", "R.softmax", "pp.send_act"); the layer and micro-batch of an op follow from its
// place in the trace, which keeps the label table small for million-op programs.
#pragma once

#include <array>
#include <cstdint>

#include "sim/program.hpp"

namespace cuboid {

// Forward kernels of one transformer layer, in execution order; Attn, the fused attention kernel
// (FlashAttention / cuDNN), replaces Qk, Softmax, AttnDropout and Av when the model's attention is
// fused and runs between Qkv and Proj (it is last here so the unfused labels keep their indices).
enum class LayerOp : std::uint8_t {
    Ln1, Qkv, Qk, Softmax, AttnDropout, Av, Proj, Bda1, Ln2, Fc1, Act, Fc2, Bda2, Attn, Rope, Count
};
inline constexpr int kLayerOpCount = static_cast<int>(LayerOp::Count);

// Kernels of a mixture-of-experts MLP (strategies/moe_layer.hpp), in forward order: the router's
// gate GEMM and its top-k softmax, the permutation of the token copies by expert, the experts'
// grouped GEMMs around their activation, the weighted un-permutation, the shared experts' MLP.
enum class MoeOp : std::uint8_t {
    Router, RouterTopk, Permute, ExpertFc1, ExpertAct, ExpertFc2, Unpermute, SharedFc1, SharedAct, SharedFc2, Count
};
inline constexpr int kMoeOpCount = static_cast<int>(MoeOp::Count);

// Kernels of multi-head latent attention (strategies/mla_layer.hpp) before the attention core, in
// forward order: the query and key/value down-projections, the latents' RMSNorm, the up-projections.
enum class MlaOp : std::uint8_t { QDown, KvDown, LatentNorm, QUp, KvUp, Count };
inline constexpr int kMlaOpCount = static_cast<int>(MlaOp::Count);

struct Labels {
    std::array<std::uint32_t, kLayerOpCount> fwd{};  // "F.ln1", ...
    std::array<std::uint32_t, kLayerOpCount> rec{};  // "R.ln1", ...
    std::array<std::uint32_t, kLayerOpCount> bwd{};  // "B.ln1", ... (input-gradient GEMM for GEMMs)
    std::array<std::uint32_t, kLayerOpCount> wgrad{};  // "B.qkv.wgrad", ... (GEMMs only)
    // tensor-parallel collectives: [phase F/R/B][AllReduce, AllGather, ReduceScatter]
    std::array<std::array<std::uint32_t, 3>, 3> tp{};
    // tensor-parallel broadcasts (2d SUMMA steps): [phase F/R/B]
    std::array<std::uint32_t, 3> tp_broadcast{};
    // Tensor-parallel all-reduce of the LayerNorm and bias gradients that are partial sums over a
    // device's token rows (1d with sequence parallelism, 2d, 3d), once per iteration.
    std::uint32_t tp_grad_sync = 0;
    // All-reduce of the tied word embedding's gradient between the first and the last stage.
    std::uint32_t emb_grad_sync = 0, group_emb = 0;
    std::uint32_t embed_f = 0, embed_dropout_f = 0, embed_b = 0, embed_dropout_b = 0;
    std::uint32_t final_ln_f = 0, logits_f = 0, xent_f = 0, xent_tp = 0;
    std::uint32_t final_ln_b = 0, logits_dgrad = 0, logits_wgrad = 0, xent_b = 0;
    std::uint32_t send_act = 0, recv_act = 0, send_grad = 0, recv_grad = 0, pp_gather = 0;
    std::uint32_t dp_allreduce = 0, dp_reduce_scatter = 0, dp_all_gather = 0, optimizer = 0;
    std::uint32_t group_tp = 0, group_dp = 0, group_pp_act = 0, group_pp_grad = 0;
    // Transformer Engine's fp8 passes around a linear layer's GEMMs (indexed by the GEMM's
    // LayerOp): "F.x.cast" / "R.x.cast" the input cast (and transpose) before the forward GEMM,
    // "B.x.cast" the output gradient's cast and transpose before the input-gradient GEMM,
    // "B.x.transpose" the saved fp8 input's transpose before the weight-gradient GEMM.
    std::array<std::uint32_t, kLayerOpCount> cast_f{}, cast_r{}, cast_b{}, transpose_b{};
    // The passes of the optimizer step besides Adam: the gradient norm (clipping), the fp16
    // loss-scale unscale and check, and the zeroing of the gradient buffer for the next iteration.
    std::uint32_t grad_norm = 0, unscale = 0, zero_grad = 0;
    // ZeRO-3 / FSDP: the all-gather of one unit's (layer, embedding, head) weight shards before
    // its forward and before its backward, the reduce-scatter of its gradient after each
    // backward, and under hybrid sharding the all-reduce of the gradient shard between the
    // copies; the groups of the shards and of the copies.
    std::uint32_t fsdp_gather_f = 0, fsdp_gather_b = 0, fsdp_reduce_scatter = 0, fsdp_replica_allreduce = 0;
    std::uint32_t group_shard = 0, group_replica = 0;
    // Context parallelism (strategies/context_attention.hpp), per phase F/R/B: the ring's
    // exchange of K/V blocks (backward: K/V with dK/dV), its blockwise attention kernel and the
    // merge of its partial output; the all-gather of K/V and reduce-scatter of dK/dV; the
    // all-to-alls of Q/K/V (backward: dQ/dK/dV) and of the output (backward: its gradient).
    std::array<std::uint32_t, 3> cp_exchange{}, cp_attn_step{}, cp_merge{}, cp_gather{}, cp_scatter{}, cp_qkv_a2a{},
        cp_out_a2a{};
    std::uint32_t cp_dkv_exchange = 0;  // "B.cp.dkv_exchange": the ring's partial dK/dV, one rank on
    std::uint32_t group_cp = 0;
    // Mixture of experts: per phase F/R/B each kernel (B: the input-gradient GEMM), the
    // weight-gradient GEMMs, the dispatch and combine all-to-alls over the expert group and the
    // gather / reduce-scatter over the expert-tensor group; the expert gradients' reductions over
    // the expert-data group and the three groups.
    std::array<std::array<std::uint32_t, kMoeOpCount>, 3> moe{};
    std::array<std::uint32_t, kMoeOpCount> moe_wgrad{};
    std::array<std::uint32_t, 3> moe_dispatch{}, moe_combine{}, moe_etp_gather{}, moe_etp_scatter{};
    std::uint32_t edp_allreduce = 0, edp_reduce_scatter = 0, edp_all_gather = 0;
    std::uint32_t group_ep = 0, group_etp = 0, group_edp = 0;
    // Multi-head latent attention: per phase F/R/B each kernel (B: the input-gradient GEMM), the
    // weight-gradient GEMMs; the latents' sequence-parallel gather and gradient reduction use the
    // tensor-parallel collectives' labels.
    std::array<std::array<std::uint32_t, kMlaOpCount>, 3> mla{};
    std::array<std::uint32_t, kMlaOpCount> mla_wgrad{};
    // Multi-token prediction (edge_ops.hpp): the shifted tokens' embedding lookup, the two input
    // RMSNorms, the projection of their concatenation; forward and backward.
    std::uint32_t mtp_embed_f = 0, mtp_norm_f = 0, mtp_proj_f = 0;
    std::uint32_t mtp_embed_b = 0, mtp_norm_b = 0, mtp_proj_dgrad = 0, mtp_proj_wgrad = 0;
    // The optimizer step on the host: the gradient shard's copy out, Adam, the weights' copy back.
    std::uint32_t offload_d2h = 0, optimizer_host = 0, offload_h2d = 0;
    // ZeRO-3 of the routed experts (training_state.hpp experts_fully_sharded): the all-gather of
    // an expert layer's expert shards over the expert-data group before its forward and before
    // its backward, and the reduce-scatter of their gradient after each backward.
    std::uint32_t fsdp_expert_gather_f = 0, fsdp_expert_gather_b = 0, fsdp_expert_reduce_scatter = 0;
    // Activation offloading: a layer's stored activations copied to host memory after its
    // forward, and back before its backward.
    std::uint32_t act_offload = 0, act_reload = 0;
    // ZeRO-3 hybrid sharding of the routed experts: the all-reduce of an expert layer's gradient
    // shard between the copies after its last backward, and the two groups' names.
    std::uint32_t fsdp_expert_replica_allreduce = 0, group_expert_shard = 0, group_expert_replica = 0;
};

enum class Phase : std::uint8_t { Forward = 0, Recompute = 1, Backward = 2 };

// What a kernel of a phase counts as in the breakdown: recomputation, or compute (forward and
// backward alike).
inline sim::OpCategory category(Phase ph) {
    return ph == Phase::Recompute ? sim::OpCategory::Recompute : sim::OpCategory::Compute;
}

Labels intern_labels(sim::Program& program);

}  // namespace cuboid
