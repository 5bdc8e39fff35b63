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

// That walk an op at a time, for a pass over the ops that has other work (OpListIndex reads every
// op anyway, so the totals cost it a few additions instead of another pass). An op allocates when
// it starts and frees when it ends, so its own allocation is counted before its own release: the
// peak sees the op's inputs still held while its outputs exist.
class TotalsWalk {
public:
    explicit TotalsWalk(Bytes resident) : current_(resident), peak_{resident, 0} {}
    void add(const Op& op, std::uint32_t index) {
        current_ += op.memory_alloc;
        if (current_ > peak_.peak) peak_ = {current_, index};
        current_ -= op.memory_free;
        if (is_matmul(op.kind)) gemm_ += op.flops.value;
    }
    OpListTotals totals() const { return {peak_, Flops(gemm_)}; }

private:
    Bytes current_;
    MemoryPeak peak_;
    double gemm_ = 0.0;
};

}  // namespace cuboid::sim
