// Peak memory walk of memory.hpp.
#include "sim/memory.hpp"

namespace cuboid::sim {

OpListTotals op_list_totals(const OpList& list) {
    // An op allocates when it starts and frees when it ends, so its own allocation is counted
    // before its own release: the peak sees the op's inputs still held while its outputs exist.
    OpListTotals result{{list.resident, 0}, Flops(0.0)};
    Bytes current = list.resident;
    double gemm = 0.0;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const Op& op = list.ops[i];
        current += op.memory_alloc;
        if (current > result.memory.peak) result.memory = {current, i};
        current -= op.memory_free;
        if (is_gemm(op.kind)) gemm += op.flops.value;
    }
    result.gemm_flops = Flops(gemm);
    return result;
}

MemoryPeak peak_memory(const OpList& list) { return op_list_totals(list).memory; }

}  // namespace cuboid::sim
