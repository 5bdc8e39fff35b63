// Peak memory walk of memory.hpp.
#include "sim/memory.hpp"

namespace cuboid::sim {

OpListTotals op_list_totals(const OpList& list) {
    TotalsWalk walk(list.resident);
    for (std::uint32_t i = 0; i < list.ops.size(); ++i) walk.add(list.ops[i], i);
    return walk.totals();
}

MemoryPeak peak_memory(const OpList& list) { return op_list_totals(list).memory; }

}  // namespace cuboid::sim
