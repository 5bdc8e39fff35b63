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
// The input of a multi-token prediction module (ModelSpec::mtp_layers; tensor 1): the shifted
// tokens' embedding rows looked up, both inputs (those rows and the previous depth's hidden
// state) RMS-normalised, their concatenation projected 2h -> h; it keeps the norms' inputs and
// the projection's input for the backward. The module's layer and the head follow as the model's.
void emit_mtp_input_forward(OpEmitter& e, const LayerContext& c);
// Its backward after the module's layer: the projection's input and weight gradients, the norms'
// backward (releasing what the forward kept) and the embedding rows' gradient scattered.
void emit_mtp_input_backward(OpEmitter& e, const LayerContext& c);

// A tied word embedding with p > 1 (GPT): Megatron-LM keeps a copy on the last stage, and after
// the backward and the data-parallel gradient reduction its finalize_model_grads
// (_allreduce_word_embedding_grads) all-reduces the word embedding's main gradient over the
// embedding group {first stage, last stage}, so that both stages apply the same update. One
// all-reduce of `bytes` on the data stream after every op of `after` (kNoOp entries ignored).
std::uint32_t emit_tied_embedding_grad_sync(OpEmitter& e, const Labels& labels, double bytes,
                                            const std::vector<std::uint32_t>& after);

}  // namespace cuboid
