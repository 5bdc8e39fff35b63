// The projections of multi-head latent attention (DeepSeek-V2 §2.1, DeepSeek-V3 §2.1.1) on one
// rank, as Megatron-Core's MLASelfAttention runs them under 1d tensor parallelism; the attention
// core (fused or not) and the output projection are the multi-head layer's, with query/key heads
// of nope + rope and value heads of v_dim (LayerDims::head_dim, v_dim).
//
// Forward, after LayerNorm 1:
//   down-projections: [rows, h] x [h, q_lora] and [rows, h] x [h, kv_lora + rope], whole weights
//     on every rank ("duplicated" linears), on the rank's own positions under sequence
//     parallelism (rows = b*s/t), on every row without it (rows = b*s);
//   latent RMSNorm of the query and key/value latents, on the same rows;
//   sequence parallelism: one all-gather of the normalised latents and the rotary key part
//     (b*s x (q_lora + kv_lora + rope), instead of the b*s x h hidden state of multi-head attention);
//   up-projections, column-parallel by heads: [b*s, q_lora] x [q_lora, heads/t*(nope+rope)] and
//     [b*s, kv_lora] x [kv_lora, heads/t*(nope+v)];
//   the rotary embedding (Transformer Engine's fused kernel) over Q and K as the layer's.
// Backward: the up-projections' input gradients, their reduction over the tensor group (a
// reduce-scatter of the latent gradient under sequence parallelism, an all-reduce without; it
// overlaps the up-projections' weight gradients as the multi-head layer's does), the latent
// re-gathered for those weight gradients, the RMSNorm's backward, the down-projections' input and
// weight gradients. The down-projections' weights are whole on every rank, so under sequence
// parallelism (each rank sees its own rows) their gradients are partial sums, all-reduced once
// per iteration with the LayerNorm scales (partial_grads.cpp); without it every rank's are equal.
//
// Not modelled: Transformer Engine's fp8 casts of the four projections' operands (the output
// projection's are), the query path without compression (DeepSeek-V2-Lite's q_lora_rank null).
#pragma once

#include <cstdint>

#include "strategies/layer_ops.hpp"

namespace cuboid {

// Parameters of one latent-attention block: split over t (the up-projections and the output
// projection) and whole on every rank (the down-projections and the two latent RMSNorm scales).
struct LatentAttentionParameters {
    double split = 0.0;
    double whole = 0.0;
};
LatentAttentionParameters mla_parameters(const LayerDims& d);

// Bytes the projections keep for the backward (LayerOp::Qkv's slot): LayerNorm 1's output (the
// down-projections' input), the latents before and after their RMSNorm and the rotary key part,
// all on latent_rows.
double mla_stored_bytes(const LayerDims& d);

// The forward (or recomputed) projections after LayerNorm 1, up to Q, K and V rotated; allocates
// mla_stored_bytes on the first down-projection.
void emit_mla_projections_forward(OpEmitter& e, const LayerContext& c, Phase ph);
// Selective recomputation of the up-projections (mla_up_proj), before the attention core's
// backward: under sequence parallelism the normalised latents gathered again, then the two
// up-projections, allocating LayerMemory::recomputed_qkv (the caller runs the rotary embedding).
void emit_mla_up_projections_recompute(OpEmitter& e, const LayerContext& c);
// Their backward after the attention core's (and the rotary embedding's); LayerNorm 1's backward
// may follow at once. Under defer_weight_grad the four weight gradients wait for
// emit_mla_weight_grads.
void emit_mla_projections_backward(OpEmitter& e, const LayerContext& c);
// The deferred weight gradients (zero-bubble W pass), releasing what the forward kept.
void emit_mla_weight_grads(OpEmitter& e, const LayerContext& c);

}  // namespace cuboid
