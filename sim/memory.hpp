// Peak memory of a rank from its program: resident state plus activations and buffers allocated
// by ops (at op start) and released (at op end), walked in issue order.
#pragma once

#include "sim/program.hpp"

namespace cuboid::sim {

struct MemoryPeak {
    Bytes peak{0.0};
    std::uint32_t at_op = 0;  // the op whose allocation reached the peak
};

MemoryPeak peak_memory(const OpList& list);

}  // namespace cuboid::sim
