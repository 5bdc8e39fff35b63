// Peak memory walk of memory.hpp.
#include "sim/memory.hpp"

namespace cuboid::sim {

MemoryPeak peak_memory(const OpList& list) {
    // An op allocates when it starts and frees when it ends, so its own allocation is counted
    // before its own release: the peak sees the op's inputs still held while its outputs exist.
    MemoryPeak result{list.resident, 0};
    Bytes current = list.resident;
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) {
        const Op& op = list.ops[i];
        current += op.memory_alloc;
        if (current > result.peak) result = {current, i};
        current -= op.memory_free;
    }
    return result;
}

}  // namespace cuboid::sim
