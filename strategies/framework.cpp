#include "strategies/framework.hpp"

namespace cuboid {

FrameworkDefaults framework_defaults(Framework f) {
    switch (f) {
        case Framework::Megatron2021: return {AttentionKernel::Unfused, true, true, 0, false, false, false};
        case Framework::MegatronCore: return {AttentionKernel::Fused, false, false, 1, true, true, true};
    }
    return {};
}

void apply_framework(Scenario& s) {
    const FrameworkDefaults d = framework_defaults(s.stack.framework);
    const StackChoices& c = s.stack;
    s.model.attention = c.attention.value_or(d.attention);
    s.model.attention_dropout = c.attention_dropout.value_or(d.attention_dropout);
    s.model.hidden_dropout = c.hidden_dropout.value_or(d.hidden_dropout);
    s.parallel.zero_stage = c.zero_stage.value_or(d.zero_stage);
    s.parallel.dp_overlap = c.dp_overlap.value_or(d.dp_overlap);
    s.parallel.tp_backward_overlap = c.tp_backward_overlap.value_or(d.tp_backward_overlap);
    s.model.transformer_engine = c.transformer_engine.value_or(d.transformer_engine);
}

std::string framework_name(Framework f) { return f == Framework::Megatron2021 ? "megatron-2021" : "megatron-core"; }

std::vector<std::string> framework_names() { return {"megatron-2021", "megatron-core"}; }

std::string attention_kernel_name(AttentionKernel a) { return a == AttentionKernel::Fused ? "fused" : "unfused"; }

}  // namespace cuboid
