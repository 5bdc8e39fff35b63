// Group slots of every rank's program: RankProgram::groups[slot] names the concrete group.
//
// Pipeline traffic uses one group per direction (activations flow to the next stage, gradients to
// the previous), so each rank only Sends or only Recvs on a given group: the k-th op of both
// members is then the same transfer whatever the order in which the two streams post them.
// Slots a rank does not use (no next stage, t == 1, ...) alias its tensor group and carry no op.
#pragma once

#include <cstdint>

namespace cuboid::slot {

inline constexpr std::uint16_t kTensor = 0;        // the rank's tensor-parallel group
inline constexpr std::uint16_t kData = 1;          // the rank's data-parallel group
inline constexpr std::uint16_t kActToNext = 2;     // {this, next stage}: Send activations
inline constexpr std::uint16_t kActFromPrev = 3;   // {prev stage, this}: Recv activations
inline constexpr std::uint16_t kGradFromNext = 4;  // {this, next stage}: Recv gradients
inline constexpr std::uint16_t kGradToPrev = 5;    // {prev stage, this}: Send gradients
// Axis groups of the tensor mesh (Layout::tensor_mesh): ranks of one tensor group that differ only
// in the coordinate of that axis (2d: rows and columns of the q x q mesh; 3d: the three directions
// of the q x q x q cube; atp: the d1 and d2 directions). With a one-axis mesh they alias kTensor.
inline constexpr std::uint16_t kTensorAxis0 = 6;
inline constexpr std::uint16_t kTensorAxis1 = 7;
inline constexpr std::uint16_t kTensorAxis2 = 8;
// {first stage, last stage} at the rank's (tensor, data) position: the all-reduce of the tied word
// embedding's gradient (GPT with p > 1, Megatron-LM's embedding group). Aliases kTensor elsewhere.
inline constexpr std::uint16_t kEmbedding = 9;
// ZeRO-3 hybrid sharding: the data-parallel ranks one copy of the state is sharded over
// (Layout::shard_size consecutive data indices), and the ranks holding the same shard in the other
// copies. Without hybrid sharding the shard group is the data group and the copy group aliases
// kTensor (no op).
inline constexpr std::uint16_t kShard = 10;
inline constexpr std::uint16_t kReplica = 11;
// ZeRO-3's parameter all-gathers: the shard group's ranks in a group of its own, since the
// gathers run on their own stream (a group carries one stream's ops). Aliases kTensor otherwise.
inline constexpr std::uint16_t kShardGather = 12;
// Context parallelism: the c ranks that split each sequence (consecutive data indices, in ring
// order). Aliases kTensor without context parallelism.
inline constexpr std::uint16_t kContext = 13;
// ZB-V's chunks on the way back up the stages (Layout::v_shape): activations from the next stage
// to this one and gradients from this one to the next, on groups of their own. Alias kTensor
// elsewhere.
inline constexpr std::uint16_t kActFromNext = 14;  // {this, next stage}: Recv activations
inline constexpr std::uint16_t kActToPrev = 15;    // {prev stage, this}: Send activations
inline constexpr std::uint16_t kGradToNext = 16;   // {this, next stage}: Send gradients
inline constexpr std::uint16_t kGradFromPrev = 17; // {prev stage, this}: Recv gradients

inline constexpr bool way_back(std::uint16_t s) {
    return s == kActFromNext || s == kActToPrev || s == kGradToNext || s == kGradFromPrev;
}
// Expert parallelism (Layout::expert): the stage's tensor x data ranks regrouped as
// expert_tensor x expert x expert-data, consecutive ranks first (Megatron-Core's expert groups):
// the expert group that the dispatch and combine all-to-alls run over, the expert-tensor group
// of the gathers and reduce-scatters around the expert GEMMs, and the expert-data group that
// reduces the expert gradients. Each aliases kTensor (no op) when the plan has no experts.
inline constexpr std::uint16_t kExpert = 18;
inline constexpr std::uint16_t kExpertTensor = 19;
inline constexpr std::uint16_t kExpertData = 20;
// ZeRO-3's all-gathers of the routed experts' shards: the expert shard group (the expert-data
// group, or under hybrid sharding its ranks inside one shard group) in a copy of its own, as
// kShardGather is of the shard group. Aliases kTensor otherwise.
inline constexpr std::uint16_t kExpertDataGather = 21;
// ZeRO-3 hybrid sharding of the routed experts (Layout::expert_shard_size): the expert-data ranks
// an expert's state is sharded over, and the ranks holding the same expert shard in the other
// copies. Without hybrid sharding the expert shard group is the expert-data group and the copy
// group aliases kTensor (no op).
inline constexpr std::uint16_t kExpertShard = 22;
inline constexpr std::uint16_t kExpertReplica = 23;
inline constexpr int kCount = 24;

inline constexpr std::uint16_t tensor_axis(int axis) {
    return static_cast<std::uint16_t>(kTensorAxis0 + axis);
}

}  // namespace cuboid::slot
