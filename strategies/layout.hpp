// Where the parallel plan puts work: (tensor, data, pipeline) coordinates <-> rank = GPU index,
// and which layers each pipeline stage holds.
//
// The plan's axes are an ordered list (Layout::grid, strategies/rank_grid.hpp), in Megatron's
// order: tensor groups innermost (consecutive GPUs of one node, so tensor-parallel collectives
// stay on NVLink), then context, then data, then pipeline:
//     rank = tp + t * (cp + c * dp' + d' * pp)
// Every communicator but the pipeline's pairs is derived from that list or a resplit view of it
// (strategies/group_families.hpp).
// The layout's data axis counts the replicas of a stage's weights, data x context: index
// dp = cp + c * dp' (the context group's ranks are consecutive data indices, as ZeRO-3's shard
// groups are). Gradients are reduced and ZeRO shards over all of them (Megatron-Core's
// data-and-context group); only the batch and the sequence split tell the two apart.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "strategies/rank_grid.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

namespace hw {
class Catalog;
struct GpuSpec;
}

struct Layout {
    int tensor = 1;
    int pipeline = 1;
    int data = 1;      // replicas of the weights per stage: data-parallel x context-parallel degree
    int context = 1;   // context-parallel degree c: consecutive data indices that split each sequence
    ContextMode context_mode = ContextMode::Ring;
    // Mixture of experts: expert ep and expert_tensor etp degrees of the expert layers, which
    // regroup a stage's tensor x data ranks q = tp + tensor * dp as
    // q = etp_index + etp * (ep_index + ep * edp_index) (Megatron-Core's expert groups).
    bool experts = false;    // the model has expert layers (the groups exist even for ep = 1)
    int expert = 1;
    int expert_tensor = 1;
    int virtual_stages = 1;  // model chunks per stage (interleaved schedule, zb-v's 2), else 1
    // ZB-V's placement (Qi et al. 2024 §6): stage s holds model chunks s and 2p-1-s, so the model
    // runs down the stages and back up, and the first stage holds both the embedding and the head.
    bool v_shape = false;
    int micro_batches = 1;   // per pipeline per iteration: global_batch / (micro_batch * data)
    // Data-parallel ranks the training state is sharded over under ZeRO (consecutive data
    // indices); 0: all d of them. Smaller than d only under ZeRO-3 hybrid sharding.
    int data_shard = 0;
    // The tensor group as a mesh of up to three axes, axis 0 fastest (product = tensor):
    // 1d {t,1,1}; 2d {q,q,1}; 3d {q,q,q}; atp {d1,d2,1}. Tensor index i has coordinate
    // mesh_coord(i, a) on axis a; the ranks that differ only along axis a form that axis' group.
    std::array<int, 3> tensor_mesh{1, 1, 1};
    // ATP: which mesh axis splits the first linear's columns (TensorMesh::order), as chosen once
    // by validate_plan; ColumnFirst for the other modes.
    AtpOrder tensor_order = AtpOrder::ColumnFirst;
    // Layers of global chunk j in model order, j = chunk_id(stage, local_chunk): stage s holds
    // chunks s, s+p, s+2p, ... (interleaved), or s and 2p-1-s (v_shape). Megatron requires layers % (p*v) == 0; cuboid also accepts the rest
    // and spreads it one layer each over the first chunks.
    std::vector<int> chunk_layers;

    int gpus() const { return tensor * pipeline * data; }
    // The plan's axes, innermost first: tensor, context, data (data_parallel()), pipeline.
    RankGrid grid() const;
    // The same ranks with context x data regrouped as the ZeRO shard group's consecutive
    // shard_size() indices x the copies (replica).
    RankGrid shard_grid() const;
    // The same ranks with a stage's tensor x context x data regrouped as expert_tensor x expert x
    // expert_data (Megatron-Core's expert groups, carved from the data axis).
    RankGrid expert_grid() const;
    // expert_grid() with its expert-data axis split into the expert shard (expert_shard_size()
    // consecutive indices) x its copies.
    RankGrid expert_shard_grid() const;
    // The same ranks with the tensor axis split into its mesh axes mesh0, mesh1, mesh2.
    RankGrid mesh_grid() const;
    // Ranks of the expert-data group: the replicas of each expert's weights in a stage.
    int expert_data() const { return tensor * data / (expert * expert_tensor); }
    // The expert-data ranks ZeRO shards each routed expert over: those inside one shard group's
    // tensor x shard_size() ranks (hybrid sharding: each copy of the dense state holds a whole
    // copy of the experts too, as Megatron-Core's FSDP with several optimizer instances does),
    // else the whole expert-data group. validate_plan checks that expert x expert_tensor divides
    // tensor x shard_size().
    int expert_shard_size() const { return tensor * shard_size() / (expert * expert_tensor); }
    int data_parallel() const { return data / context; }  // ranks that take different sequences
    int context_of(int dp) const { return dp % context; }  // position in the context group
    int shard_size() const { return data_shard > 0 ? data_shard : data; }
    bool hybrid_sharding() const { return shard_size() < data; }
    // grid()'s formula with the context and data coordinates merged into dp = cp + c * dp'.
    std::uint32_t rank(int tp, int dp, int pp) const {
        return static_cast<std::uint32_t>(tp + tensor * (dp + data * pp));
    }
    int mesh_coord(int tp_index, int axis) const {
        int stride = 1;
        for (int a = 0; a < axis; ++a) stride *= tensor_mesh[static_cast<std::size_t>(a)];
        return (tp_index / stride) % tensor_mesh[static_cast<std::size_t>(axis)];
    }
    // More than one mesh axis longer than 1: the layers use the axis groups, not one flat group.
    bool multi_axis_mesh() const {
        int axes = 0;
        for (int n : tensor_mesh) axes += n > 1 ? 1 : 0;
        return axes > 1;
    }
    int tp_of(std::uint32_t r) const { return static_cast<int>(r) % tensor; }
    int dp_of(std::uint32_t r) const { return (static_cast<int>(r) / tensor) % data; }
    int stage_of(std::uint32_t r) const { return static_cast<int>(r) / (tensor * data); }

    int chunk_id(int stage, int local_chunk) const {
        if (v_shape && local_chunk == 1) return 2 * pipeline - 1 - stage;
        return local_chunk * pipeline + stage;
    }
    // The stage holding global chunk j.
    int stage_of_chunk(int j) const { return v_shape && j >= pipeline ? 2 * pipeline - 1 - j : j % pipeline; }
    int layers_of(int stage, int local_chunk) const { return chunk_layers[chunk_id(stage, local_chunk)]; }
    int layers_on_stage(int stage) const;
    // Global index of the first layer of a chunk.
    int first_layer_of(int stage, int local_chunk) const;
    // The chunk that embeds tokens / computes the loss.
    bool holds_embedding(int stage, int local_chunk) const { return stage == 0 && local_chunk == 0; }
    bool holds_head(int stage, int local_chunk) const {
        return stage == head_stage() && local_chunk == virtual_stages - 1;
    }
    int head_stage() const { return v_shape ? 0 : pipeline - 1; }
    // The embedding and the head on different stages: a tied word embedding has a copy on each.
    bool ends_apart() const { return head_stage() != 0; }
    // The pipeline degree as the tied-embedding rules read it (training_state.hpp): 1 when one
    // stage holds both ends, as Megatron shares the parameter then.
    int tied_pipeline() const { return ends_apart() ? pipeline : 1; }
};

// `layers` split into `parts` parts that differ by at most one, larger parts first.
std::vector<int> balanced_split(int layers, int parts);

// Checks the plan against the model, batch and cluster and returns its layout. Throws
// InputError at the offending scenario key, saying why and what is allowed.
Layout validate_plan(const Scenario& scenario);
// The same with the built-in catalog (hw::Catalog::load_builtin()) already loaded by a caller
// that validates many plans (a sweep): the partitioner reads the GPU's datasheet figures there
// instead of parsing the catalog again for every plan.
Layout validate_plan(const Scenario& scenario, const hw::Catalog& builtin);

// The checks that need the cluster's GPU (its architecture): throws InputError at the offending key.
void check_gpu_features(const Scenario& scenario, const hw::GpuSpec& gpu);

}  // namespace cuboid
