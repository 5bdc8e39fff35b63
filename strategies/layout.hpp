// Where the parallel plan puts work: (tensor, data, pipeline) coordinates <-> rank = GPU index,
// and which layers each pipeline stage holds.
//
// Megatron's order: tensor groups innermost (consecutive GPUs of one node, so tensor-parallel
// collectives stay on NVLink), then data, then pipeline:
//     rank = tp + t * (dp + d * pp)
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "strategies/scenario.hpp"

namespace cuboid {

namespace hw {
class Catalog;
}

struct Layout {
    int tensor = 1;
    int pipeline = 1;
    int data = 1;
    int virtual_stages = 1;  // model chunks per stage (interleaved schedule), else 1
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
    // Layers of global chunk j, j = local_chunk * pipeline + stage (stage s holds chunks
    // s, s+p, s+2p, ...). Megatron requires layers % (p*v) == 0; cuboid also accepts the rest
    // and spreads it one layer each over the first chunks.
    std::vector<int> chunk_layers;

    int gpus() const { return tensor * pipeline * data; }
    int shard_size() const { return data_shard > 0 ? data_shard : data; }
    bool hybrid_sharding() const { return shard_size() < data; }
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

    int chunk_id(int stage, int local_chunk) const { return local_chunk * pipeline + stage; }
    int layers_of(int stage, int local_chunk) const { return chunk_layers[chunk_id(stage, local_chunk)]; }
    int layers_on_stage(int stage) const;
    // Global index of the first layer of a chunk.
    int first_layer_of(int stage, int local_chunk) const;
    // The chunk that embeds tokens / computes the loss.
    bool holds_embedding(int stage, int local_chunk) const { return stage == 0 && local_chunk == 0; }
    bool holds_head(int stage, int local_chunk) const {
        return stage == pipeline - 1 && local_chunk == virtual_stages - 1;
    }
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

}  // namespace cuboid
