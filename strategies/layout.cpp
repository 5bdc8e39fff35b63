#include "strategies/layout.hpp"

#include <numeric>

namespace cuboid {

std::vector<int> balanced_split(int layers, int parts) {
    std::vector<int> out(static_cast<std::size_t>(parts), layers / parts);
    for (int i = 0; i < layers % parts; ++i) ++out[static_cast<std::size_t>(i)];
    return out;
}

RankGrid Layout::grid() const {
    return RankGrid({{axis::kTensor, tensor}, {axis::kContext, context}, {axis::kData, data / context},
                     {axis::kPipeline, pipeline}});
}

RankGrid Layout::shard_grid() const {
    return grid().resplit(axis::kContext, axis::kData, {{axis::kShard, shard_size()}, {axis::kReplica, data / shard_size()}});
}

RankGrid Layout::expert_grid() const {
    return grid().resplit(axis::kTensor, axis::kData,
                          {{axis::kExpertTensor, expert_tensor}, {axis::kExpert, expert}, {axis::kExpertData, expert_data()}});
}

RankGrid Layout::expert_shard_grid() const {
    const int shard = expert_shard_size();
    return expert_grid().resplit(axis::kExpertData, axis::kExpertData,
                                 {{axis::kExpertShard, shard}, {axis::kExpertReplica, expert_data() / shard}});
}

RankGrid Layout::mesh_grid() const {
    return grid().resplit(axis::kTensor, axis::kTensor,
                          {{axis::kMesh0, tensor_mesh[0]}, {axis::kMesh1, tensor_mesh[1]}, {axis::kMesh2, tensor_mesh[2]}});
}

int Layout::layers_on_stage(int stage) const {
    int n = 0;
    for (int c = 0; c < virtual_stages; ++c) n += layers_of(stage, c);
    return n;
}

int Layout::first_layer_of(int stage, int local_chunk) const {
    const int id = chunk_id(stage, local_chunk);
    return std::accumulate(chunk_layers.begin(), chunk_layers.begin() + id, 0);
}

}  // namespace cuboid
