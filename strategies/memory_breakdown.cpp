#include "strategies/memory_breakdown.hpp"

namespace cuboid {

std::vector<StageMemory> stage_memory_breakdown(const Scenario& sc, const Layout& l, const sim::Program& program,
                                                std::span<const sim::OpListTotals> totals) {
    std::vector<StageMemory> out;
    for (std::size_t s = 0; s < totals.size() && s < program.op_lists.size(); ++s) {
        StageMemory m;
        m.resident = stage_resident_memory(sc, l, static_cast<int>(s));
        m.peak_bytes = totals[s].memory.peak.value;
        // The walk starts at the list's resident bytes: what it adds above them is the
        // allocations still live at the peak.
        m.activations_bytes = m.peak_bytes - program.op_lists[s].resident.value;
        out.push_back(m);
    }
    return out;
}

std::size_t peak_stage(std::span<const StageMemory> stages) {
    std::size_t best = 0;
    for (std::size_t s = 1; s < stages.size(); ++s)
        if (stages[s].peak_bytes > stages[best].peak_bytes) best = s;
    return best;
}

}  // namespace cuboid
