#include "sim/names.hpp"

namespace cuboid::sim {

std::string_view op_kind_name(OpKind kind) {
    switch (kind) {
        case OpKind::Gemm: return "gemm";
        case OpKind::BatchedGemm: return "batched_gemm";
        case OpKind::FusedAttention: return "fused_attention";
        case OpKind::FusedAttentionBackward: return "fused_attention_backward";
        case OpKind::LayerNorm: return "layer_norm";
        case OpKind::Softmax: return "softmax";
        case OpKind::Activation: return "activation";
        case OpKind::Dropout: return "dropout";
        case OpKind::Elementwise: return "elementwise";
        case OpKind::Embedding: return "embedding";
        case OpKind::CrossEntropy: return "cross_entropy";
        case OpKind::Optimizer: return "optimizer";
        case OpKind::HostDispatch: return "host_dispatch";
        case OpKind::AllReduce: return "all_reduce";
        case OpKind::AllGather: return "all_gather";
        case OpKind::ReduceScatter: return "reduce_scatter";
        case OpKind::Broadcast: return "broadcast";
        case OpKind::AllToAll: return "all_to_all";
        case OpKind::Send: return "send";
        case OpKind::Recv: return "recv";
        case OpKind::RingExchange: return "ring_exchange";
        case OpKind::DeviceToHost: return "device_to_host";
        case OpKind::HostOptimizer: return "host_optimizer";
        case OpKind::HostToDevice: return "host_to_device";
    }
    return "unknown";
}

std::string category_name(const Program& program, OpCategory category) {
    if (category == OpCategory::Compute) return "compute";
    if (category == OpCategory::Recompute) return "recompute";
    const auto c = static_cast<std::size_t>(comm_class_of(category));
    return c < program.comm_classes.size() ? program.comm_classes[c].name + "_comm" : "unknown";
}

std::string stream_name(const Program& program, StreamId s) {
    return s < program.stream_names.size() ? program.stream_names[s] : "stream " + std::to_string(s);
}

}  // namespace cuboid::sim
