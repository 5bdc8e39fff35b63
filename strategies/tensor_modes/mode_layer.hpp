// One transformer layer's program under the 2d, 3d and atp tensor modes (the counterpart of
// strategies/layer_ops.hpp for Megatron's 1d): the same kernels, on each device's share (see
// mode_shapes.hpp), with the linears of mode_linear.hpp and the LayerNorm statistic all-reduces.
//
// Layout at the layer's boundary and at the model's ends (what the CPU executor, validate/cpu,
// relies on): the [M, h] residual stream (M = b*s tokens in micro_batch_rows order) is cut into
// blocks of rows and hidden columns:
//   2d   device with mesh coordinates (a0, a1) holds rows block a1 of q, hidden block a0 of q;
//   3d   device (a0, a1, a2) holds rows block a1*q + a0 of q^2, hidden block a2 of q;
//   atp  device holds all M rows, hidden block (coordinate on the hidden axis) of dr.
// The embedding's reduce-scatter and the head's all-gather over the whole tensor group (2d/3d,
// the sequence-parallel path of edge_ops.cpp) move between these blocks and [M, h]: member p of
// the tensor group (tensor index p) contributes / receives block p. The final LayerNorm runs on
// the block with the same statistic all-reduce as the layers' LayerNorms; ATP gathers the hidden
// blocks over its hidden axis before the final LayerNorm and before the embedding backward.
// LayerNorm and bias gradients are partial over a device's rows: see partial_grads.hpp.
#pragma once

#include "strategies/layer_ops.hpp"

namespace cuboid {

// Called by emit_layer_forward / _backward / _recompute when c.dims.mesh.own_program().
void emit_mode_layer_forward(OpEmitter& e, const LayerContext& c);
void emit_mode_layer_backward(OpEmitter& e, const LayerContext& c);
void emit_mode_layer_recompute(OpEmitter& e, const LayerContext& c);

}  // namespace cuboid
