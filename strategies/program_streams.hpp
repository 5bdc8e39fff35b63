// The streams and communication classes of the programs that cuboid's strategies build: what
// each is for, and its name in traces, error messages and results. sim gives them no meaning but
// the compute stream's (stream 0) and the lockstep flag's (sim/program.hpp).
#pragma once

#include "sim/program.hpp"

namespace cuboid {

namespace stream {
inline constexpr sim::StreamId kCompute = sim::kComputeStream;
inline constexpr sim::StreamId kTensorComm = 1;
inline constexpr sim::StreamId kPipelineSend = 2;
inline constexpr sim::StreamId kPipelineRecv = 3;
inline constexpr sim::StreamId kDataComm = 4;
inline constexpr sim::StreamId kHost = 5;  // the CPU thread that issues the GPU ops (HostDispatch)
// Parameter all-gathers of fully sharded data parallelism, apart from the gradient reductions
// (FSDP and Megatron-FSDP issue them on streams of their own, so the next unit's gather
// prefetches while the previous unit's gradient is reduce-scattered).
inline constexpr sim::StreamId kParamGather = 6;
// Context parallelism's exchanges of keys and values (Transformer Engine runs them on a stream of
// its own, so the next block moves while the attention kernel works on this one).
inline constexpr sim::StreamId kContextComm = 7;
// Sends of the messages that flow back up the stages (zero bubble's V schedule): the runtime
// issues each direction's sends asynchronously, so they do not queue behind the other direction's.
inline constexpr sim::StreamId kPipelineSendBack = 8;
// Activation offloading (training.activation_offload_layers): the copies of a layer's stored
// activations to host memory after its forward, and back before its backward. Each direction has
// a stream of its own (the host link is full duplex; Transformer Engine copies asynchronously).
inline constexpr sim::StreamId kOffload = 9;
inline constexpr sim::StreamId kReload = 10;
inline constexpr int kCount = 11;
}  // namespace stream

// One class per parallel axis that communicates, in the order in which the breakdown charges the
// compute stream's idle time to them: the layer's own collectives first (tensor, context, expert:
// they sit between the compute of every layer, and the compute stream waits for each, so they
// are the lockstep classes), then the transfers between pipeline stages, and last the
// data-parallel reductions, the most overlappable.
namespace comm_class {
// Tensor-parallel collectives (1d/2d/3d/atp) and sequence-parallel gathers.
inline constexpr sim::OpCategory kTensor = sim::comm_category(0);
// Context parallelism's exchanges of keys and values (ring, all-gather or all-to-all).
inline constexpr sim::OpCategory kContext = sim::comm_category(1);
// Expert parallelism's token dispatch and combine, and the expert-tensor gathers around them.
inline constexpr sim::OpCategory kExpert = sim::comm_category(2);
inline constexpr sim::OpCategory kPipeline = sim::comm_category(3);  // activations and gradients between stages
// Activation offloading's copies to and from host memory (not collectives: copies on streams of
// their own, which the breakdown counts while they move data).
inline constexpr sim::OpCategory kOffload = sim::comm_category(4);
// Gradient reductions and parameter gathers across data-parallel (and context) replicas.
inline constexpr sim::OpCategory kData = sim::comm_category(5);
inline constexpr int kCount = 6;
}  // namespace comm_class

// Names the streams and classes above in `program` (sim::Program::stream_names, comm_classes).
void name_streams_and_classes(sim::Program& program);

}  // namespace cuboid
