// The MLP of a mixture-of-experts layer on one rank, as Megatron-Core runs it with its alltoall
// token dispatcher (megatron/core/transformer/moe/token_dispatcher.py) and grouped GEMMs.
//
// Forward, after LayerNorm 2 (LayerDims::moe):
//   router: the gate GEMM [tokens, h] x [h, experts] on the rank's own tokens (b*s/t under
//     sequence parallelism, which Megatron requires with t > 1) and the top-k softmax;
//   permute: the token copies sorted by expert into the send buffer (tokens * top_k rows);
//   dispatch: an all-to-all over the expert group (ep > 1) sends each copy to the rank holding
//     its expert; with expert_tensor > 1 an all-gather over the expert-tensor group follows;
//   experts: the grouped GEMMs of the rank's experts/ep experts (FC1, activation, FC2), each
//     expert's weights split over expert_tensor ranks;
//   combine: the reduce-scatter over the expert-tensor group (etp > 1), the all-to-all back,
//     then the un-permutation that weights each copy by its router probability and sums them;
//   shared experts: a dense MLP of shared_experts * expert_ffn_hidden on every token, split over
//     the tensor group like the dense MLP (gather before, reduce-scatter after).
// The backward mirrors it: two all-to-alls again, the expert GEMMs' input and weight gradients,
// the router's. The all-to-alls block the next kernel (the dispatcher runs them in the compute
// path) on the tensor-communication stream, and count as tensor_comm in the breakdown.
//
// Load imbalance (LayerDims::imbalance, the busiest expert's tokens over the mean): every rank's
// expert GEMMs and all-to-alls carry the busiest rank's share, which the all-to-alls make every
// rank wait for.
#pragma once

#include <cstdint>

#include "strategies/layer_ops.hpp"

namespace cuboid {

// What one rank's mixture-of-experts MLP keeps for its backward (bytes), besides its input (the
// LayerNorm 2 output, kept as the dense MLP's FC1 input) and the router's probabilities:
struct MoeActivations {
    double dispatched = 0.0;  // the expert FC1 input: expert_rows x h
    double expert_inner = 0.0;  // the expert FC1 output and activation output
    double expert_act = 0.0;    // of which the activation output (expert FC2's input)
    double shared_fc1 = 0.0;  // the shared experts' FC1 output (activation input)
    double shared_act = 0.0;  // and activation output (FC2 input)
    double total() const { return dispatched + expert_inner + shared_fc1 + shared_act; }
};
MoeActivations moe_activations(const LayerDims& d);
// The router's saved probabilities, fp32 per token and expert.
double router_probability_bytes(const LayerDims& d);
// Bytes of one rank's dispatch (and combine) all-to-all buffer: the rank's token copies,
// routed_tokens * top_k * h activations, times the imbalance.
double moe_dispatch_bytes(const LayerDims& d);

// The forward (or recomputed) MoE MLP of `c` after the LayerNorm 2 kernel; the next compute op
// (bias-dropout-add) finds the combined output ready.
void emit_moe_forward(OpEmitter& e, const LayerContext& c, Phase ph);
// Its backward after the bias-dropout-add's; returns the shared experts' input-gradient
// reduction still in flight (kNoOp: none), which LayerNorm 2's backward waits for. Under a split
// backward (LayerContext::defer_weight_grad) it runs the input gradients only, and
// emit_moe_weight_grad the weight gradients later (shared FC2 and FC1, expert FC2 and FC1, router,
// in the backward's order), each releasing what it read.
std::uint32_t emit_moe_backward(OpEmitter& e, const LayerContext& c);
void emit_moe_weight_grad(OpEmitter& e, const LayerContext& c);

}  // namespace cuboid
