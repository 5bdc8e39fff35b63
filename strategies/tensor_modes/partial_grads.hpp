// LayerNorm and bias gradients that are partial sums over a device's token rows, and the
// tensor-parallel all-reduces that complete them once per iteration (after the last backward,
// before the optimizer; Megatron's finalize_model_grads does the 1d one after the data-parallel
// reduction, which is the same sum).
//
// A parameter whose forward acts on every token row but whose device sees only some of the rows
// gets, from its backward, the sum over those rows only:
//   1d + sequence parallelism: the LayerNorms (and the final one) and the row-parallel biases
//       (projection, FC2), each rank holding 1/t of the rows: all-reduce over the tensor group.
//   2d: every LayerNorm and bias block (hidden or column block j), rows split over axis 1: one
//       all-reduce over the axis-1 groups (slot 7).
//   3d: the LayerNorms (and the final one), projection and FC2 biases (hidden block a2) see the
//       rows split over axes 0 and 1: all-reduce over axis 0, then axis 1; the QKV and FC1 biases
//       (column block a0) see the rows split over axes 1 and 2: all-reduce over axis 1, then 2.
//   atp: every device holds all rows of its hidden block: nothing to reduce.
// Parameters per device, bucketed per stage (O(layers * h / q), well below 0.1 % of the weights).
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/layer_shapes.hpp"

namespace cuboid {

struct PartialGradReduction {
    std::uint16_t slot = 0;  // group slot (strategies/group_slots.hpp)
    double params = 0.0;     // parameters per device in the bucket
};

// The all-reduces, in issue order, of a stage holding `layers` layers, `moe_layers` of them with
// a mixture-of-experts MLP, and (`final_norm`) the final LayerNorm; empty when no gradient is
// partial.
std::vector<PartialGradReduction> partial_grad_reductions(const LayerDims& d, int layers, bool final_norm,
                                                          int moe_layers = 0);

}  // namespace cuboid
