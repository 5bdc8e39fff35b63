// Framework presets: the defaults of a training software stack in one key,
// `training.framework`. A preset sets only the keys the scenario does not give itself.
//
//   key                           megatron-2021          megatron-core (default)
//   model.attention               unfused                fused (cuDNN / FlashAttention)
//   model.attention_dropout       true                   false
//   model.hidden_dropout          true                   false
//   parallel.zero_stage           0                      1 (the distributed optimizer)
//   parallel.dp_overlap           false                  true (overlapped reduce-scatter / all-gather)
//   parallel.tp_backward_overlap  false                  true (asynchronous tensor-parallel all-reduce)
//   training.transformer_engine   false                  true (fp8 casts and transposes, fused RoPE)
//
// megatron-2021 is Megatron-LM as of Narayanan et al. (SC'21): gradients all-reduced after the
// backward, blocking tensor-parallel all-reduces, softmax and dropout as their own kernels over the
// s x s scores. megatron-core is Megatron-Core / NeMo 2024-25 with Transformer Engine.
#pragma once

#include <string>
#include <vector>

#include "strategies/scenario.hpp"

namespace cuboid {

struct FrameworkDefaults {
    AttentionKernel attention = AttentionKernel::Fused;
    bool attention_dropout = false;
    bool hidden_dropout = false;
    int zero_stage = 1;
    bool dp_overlap = true;
    bool tp_backward_overlap = true;
    bool transformer_engine = true;
};

FrameworkDefaults framework_defaults(Framework f);

// Writes the effective stack settings of `s` (model.attention, ..., parallel.tp_backward_overlap)
// from its choices and its framework's preset.
void apply_framework(Scenario& s);

// "megatron-2021" | "megatron-core".
std::string framework_name(Framework f);
std::vector<std::string> framework_names();
std::string attention_kernel_name(AttentionKernel a);

}  // namespace cuboid
