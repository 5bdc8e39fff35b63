// The ends of the model: token embedding on the first chunk of stage 0, and final norm, logits
// and cross-entropy on the last chunk of the last stage, with their backward.
//
// Megatron's vocabulary-parallel embedding sums the t partial lookups (all-reduce, or
// reduce-scatter into the sequence-parallel region); the logits GEMM is column-parallel over the
// vocabulary and its cross-entropy all-reduces three per-token scalars (max, target logit, sum of
// exponentials). The fp32 softmax of the logits, 4*b*s*V/t bytes, is kept for the backward.
#pragma once

#include "strategies/layer_ops.hpp"

namespace cuboid {

void emit_embedding_forward(OpEmitter& e, const LayerContext& c);
void emit_embedding_backward(OpEmitter& e, const LayerContext& c);
void emit_head_forward(OpEmitter& e, const LayerContext& c);
void emit_head_backward(OpEmitter& e, const LayerContext& c);

}  // namespace cuboid
