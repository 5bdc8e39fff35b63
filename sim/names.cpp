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

std::string_view category_name(OpCategory category) {
    switch (category) {
        case OpCategory::Compute: return "compute";
        case OpCategory::Recompute: return "recompute";
        case OpCategory::TensorComm: return "tensor_comm";
        case OpCategory::PipelineComm: return "pipeline_comm";
        case OpCategory::DataComm: return "data_comm";
    }
    return "unknown";
}

std::string_view stream_name(StreamId s) {
    switch (s) {
        case stream::kCompute: return "compute";
        case stream::kTensorComm: return "tensor-comm";
        case stream::kPipelineSend: return "pipeline-send";
        case stream::kPipelineRecv: return "pipeline-recv";
        case stream::kDataComm: return "data-comm";
        case stream::kHost: return "host";
        case stream::kParamGather: return "param-gather";
        case stream::kContextComm: return "context-comm";
        case stream::kPipelineSendBack: return "pipeline-send-back";
        default: return "stream";
    }
}

}  // namespace cuboid::sim
