// Single-device forward and backward of the tiny GPT over a whole batch: plain Eigen, no
// parallelism, the ground truth every strategy's executed program must reproduce.
#pragma once

#include "validate/cpu/tiny_gpt.hpp"

namespace cuboid::cpu {

struct Reference {
    double loss = 0.0;  // mean next-token cross-entropy over every token of the batch
    GptParams grads;    // d loss / d parameter
};

Reference reference_step(const GptDims& d, const GptParams& params, const Batch& batch);
// Loss only (for finite-difference checks of the gradients).
double reference_loss(const GptDims& d, const GptParams& params, const Batch& batch);

}  // namespace cuboid::cpu
