// What a rank keeps for the whole iteration: weights, gradients and Adam state of the parameters
// it holds, sharded over data-parallel replicas by ZeRO.
//
// Bytes per parameter follow Megatron-LM's mixed-precision Adam (its distributed-optimizer
// documentation, table of bytes per parameter): fp16 weights and grads with fp32 main weights,
// main grads and moments = 20; bf16 weights with fp32 grads, fp32 main weights and moments = 18;
// fp32 everything = 16. The often quoted 16 bytes (ZeRO paper, Rajbhandari et al. 2020: 2+2+12)
// is the fp16 case without Megatron's fp32 main-gradient copy.
#pragma once

#include <array>

#include "sim/program.hpp"
#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

// What a checkpoint holds for the whole model: the weights at their working precision and Adam's
// state (fp32 main weights under mixed precision, two fp32 moments); no gradients.
double checkpoint_bytes(const ModelSpec& m, sim::Precision p);

struct StateBytesPerParam {
    double weight = 2.0;     // the working copy the GEMMs read
    double grad = 4.0;       // the gradient buffer that is reduced across data parallelism
    double optimizer = 12.0; // fp32 main weights (mixed precision) + Adam moments (+ fp32 grad copy for fp16)
    double total() const { return weight + grad + optimizer; }
};

StateBytesPerParam state_bytes_per_param(sim::Precision p);
// The same with the scenario's gradient precision (TrainingSpec::grad_precision).
StateBytesPerParam state_bytes_per_param(const TrainingSpec& t);

// HBM bytes one Adam step moves per parameter of the local shard: read the gradient, read and
// write both moments and the fp32 main weight, write the working copy (mixed precision).
// bf16: 4 + 16 + 8 + 2 = 30.
double optimizer_step_bytes_per_param(sim::Precision p);
double optimizer_step_bytes_per_param(const TrainingSpec& t);

// Parameters one rank of `stage` holds: its layers split over t, the vocabulary-parallel word
// embedding (+ learned positions) on the first stage, the final norm and output matrix on the
// last (for a tied GPT embedding Megatron keeps a copy there when p > 1).
double stage_parameters_per_rank(const ModelSpec& m, const Layout& l, int stage);
// The same split by the group that reduces their gradients (model_math.hpp LayerParameters):
// the routed experts' (over the expert-data group, sharded by ZeRO over it) and the rest.
struct StageParameters {
    double dense = 0.0;
    double expert = 0.0;
    double total() const { return dense + expert; }
};
StageParameters stage_parameter_split(const ModelSpec& m, const Layout& l, int stage);
// Resident bytes of a stage's split parameters: the dense part sharded by ZeRO over `data`
// ranks, the experts' over the layout's expert-data group.
Bytes resident_state_bytes(const StageParameters& params, const Layout& l, const TrainingSpec& t, int zero_stage, int data);
// Parameters of one transformer layer on one device of the tensor mesh (Layout::tensor_mesh).
// Every mode splits the weight matrices over all t devices. Biases and norms:
//   two-axis mesh {dc, dr} (1d = {t, 1}; 2d = {q, q}; atp column-first): the first linears'
//     biases follow their output columns (/dc), the second linears' biases and the LayerNorms
//     follow the hidden split (/dr), replicated over the other axis (Optimus keeps a bias block
//     per mesh column; Megatron replicates the row-parallel biases and norms over t);
//   3d {q, q, q}: every bias and LayerNorm parameter is split q ways along the output dimension
//     and replicated over the q^2 devices of the input x weight plane (ColossalAI's Linear3D and
//     LayerNorm3D, seed_algorithms §2.1).
// For ATP row-first the roles of the two axes swap; the difference is a few bias vectors.
double layer_parameters_per_device(const ModelSpec& m, const std::array<int, 3>& mesh);
double embedding_parameters_per_rank(const ModelSpec& m, int t);
double head_parameters_per_rank(const ModelSpec& m, int t, int pipeline);
// Word-embedding parameters of one rank that the last stage holds as its copy of a tied embedding
// (GPT, p > 1; 0 otherwise): V*h/t with the vocabulary-parallel split of every tensor mode. It is
// also the size of that copy's gradient, all-reduced with the first stage's (stage_builder.hpp).
double tied_embedding_copy_per_rank(const ModelSpec& m, int t, int pipeline);

// Bytes per parameter one rank keeps after ZeRO: optimizer state (ZeRO >= 1), gradients (>= 2)
// and weights (3) divided over the d data-parallel replicas.
StateBytesPerParam sharded_state_bytes_per_param(sim::Precision p, int zero_stage, int data);
StateBytesPerParam sharded_state_bytes_per_param(const TrainingSpec& t, int zero_stage, int data);

// ZeRO-3 over more than one rank: the weights are gathered per unit (layer, embedding, head) and
// the gradients reduce-scattered per unit (stage_builder.cpp).
inline bool fully_sharded(int zero_stage, const Layout& l) { return zero_stage == 3 && l.shard_size() > 1; }
// ZeRO-3 of a mixture-of-experts model whose experts have more than one copy per stage: each
// expert layer's routed experts (the rank's experts/ep, each split etp ways) are sharded over the
// expert-data group, gathered over it per unit and reduce-scattered over it per unit, as the rest
// of the layer is over the shard group (Megatron-FSDP and torchtitan's FSDP2 shard the experts
// over the expert-data dimension). Under hybrid sharding over the expert-data ranks of one shard
// group (Layout::expert_shard_size, at least 2 by validate_plan), the copies all-reducing the
// shard after the last backward as the dense part's copies do.
inline bool experts_fully_sharded(int zero_stage, const Layout& l) {
    return zero_stage == 3 && l.experts && l.expert_data() > 1;
}

// Resident bytes: params * sharded_state_bytes_per_param(...).total().
Bytes resident_state_bytes(double params, sim::Precision p, int zero_stage, int data);
Bytes resident_state_bytes(double params, const TrainingSpec& t, int zero_stage, int data);

}  // namespace cuboid
