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

// What a run's figures read from every op of a list, in one walk: the memory peak and the FLOPs
// of its GEMMs. A list of a 1,024-GPU plan has tens of thousands of 64-byte ops, so a walk is a
// pass over megabytes, and two walks cost twice one.
struct OpListTotals {
    MemoryPeak memory;
    Flops gemm_flops{0.0};
};

OpListTotals op_list_totals(const OpList& list);

}  // namespace cuboid::sim
