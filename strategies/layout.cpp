#include "strategies/layout.hpp"

#include <numeric>

namespace cuboid {

std::vector<int> balanced_split(int layers, int parts) {
    std::vector<int> out(static_cast<std::size_t>(parts), layers / parts);
    for (int i = 0; i < layers % parts; ++i) ++out[static_cast<std::size_t>(i)];
    return out;
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
