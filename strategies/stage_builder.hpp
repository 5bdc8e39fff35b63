// One pipeline stage's OpList: its schedule of chunk forwards and backwards, the pipeline
// transfers between them, the data-parallel gradient reduction and the optimizer step.
#pragma once

#include "sim/program.hpp"
#include "strategies/layer_ops.hpp"
#include "strategies/layout.hpp"

namespace cuboid {

struct StagePlan {
    const Layout* layout = nullptr;
    int stage = 0;
    Schedule schedule = Schedule::OneFOneB;
    LayerContext layer;                 // one layer (all layers are alike)
    // Layers of this stage that keep only their input and are recomputed in the backward
    // (recompute full or stage-aware), counted from the stage's first layer over its chunks
    // (Megatron's `recompute_method: block`). 0 with none / selective.
    int checkpointed_layers = 0;
    // SCP's R pass re-runs the whole stage (Merak's code: checkpointing is switched off for that
    // call), so its Fc forward keeps only layer inputs; false: R re-runs only the checkpointed
    // layers and Fc keeps the others' activations (a paper-style reading, seed_algorithms §1.1).
    bool scp_whole_stage_recompute = true;
    std::size_t ops_per_layer = 64;     // ops (and at most as many deps) of one layer's F + B
    sim::Precision precision = sim::Precision::Bf16;
    // Pipeline messages: Megatron's scatter/gather optimisation (Narayanan et al. SC'21 §4.1)
    // sends 1/t of the b*s*h activation from each tensor rank and all-gathers it over NVLink on
    // the receiving side; with sequence parallelism the tensor is already split, no gather.
    double message_bytes = 0.0;
    bool gather_after_recv = false;
    // Data parallelism.
    bool dp_overlap = true;
    int zero_stage = 0;
    double layer_params = 0.0;          // per rank (an expert layer's: without its routed experts)
    // Mixture of experts (layer.dims.moe): the first dense_layers global layers run `dense_layer`
    // (the dense MLP) with dense_layer_params per rank; every other layer's routed experts hold
    // expert_params per rank, whose gradients reduce over the expert-data group
    // (slot::kExpertData) and whose optimizer state ZeRO shards over it.
    int dense_layers = 0;
    LayerContext dense_layer;
    double dense_layer_params = 0.0;
    double expert_params = 0.0;
    double embedding_params = 0.0;      // per rank, first chunk of stage 0
    double head_params = 0.0;           // per rank, last chunk of the last stage (with the MTP modules' dense part)
    // Multi-token prediction (ModelSpec::mtp_layers) after the head's first pass on the last
    // stage: each module's layer runs as global layer last_layer (the model's last); its routed
    // experts hold mtp_expert_params per rank.
    int mtp_layers = 0;
    int last_layer = 0;
    double mtp_expert_params = 0.0;
    // Tied word embedding (GPT, p > 1), per rank on the first and the last stage (0 elsewhere):
    // its gradient is all-reduced between the two (edge_ops.hpp) at grad_bytes_per_param, the
    // width the data-parallel reduction moves it at (Megatron all-reduces the same main_grad).
    double tied_embedding_params = 0.0;
    double grad_bytes_per_param = 4.0;
    double weight_bytes_per_param = 2.0;
    double optimizer_bytes_per_param = 30.0;  // HBM traffic of the Adam step (host memory's when offloaded)
    bool optimizer_offload = false;           // the step on the host (TrainingSpec::optimizer_offload)
    int activation_offload_layers = 0;        // layers 0..N-1 offload their activations (TrainingSpec)
    double bucket_params = 40e6;
    Bytes resident{0.0};
    std::vector<OpTag>* tags = nullptr;  // optional: one tag per op (layer, micro-batch, chunk)
};

void build_stage(sim::OpList& list, const StagePlan& plan);

// Megatron's gradient bucket size (DistributedDataParallelConfig.bucket_size default):
// max(40M, 1M * d) parameters, so that larger data-parallel groups get larger messages.
double gradient_bucket_params(int data);

}  // namespace cuboid
