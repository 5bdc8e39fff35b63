#include "strategies/memory_check.hpp"

#include <algorithm>

#include "sim/memory.hpp"
#include "strategies/program_builder.hpp"

namespace cuboid {

MemoryCheck check_memory(const Scenario& s, const Layout& layout, Bytes usable) {
    MemoryCheck c;
    // The same checkpointing choice and program run_scenario builds.
    const std::vector<int> checkpointed = checkpointed_layers(s, layout, BuildOptions{usable});
    c.program = build_program_checkpointing(s, layout, checkpointed);
    for (const auto& list : c.program.op_lists) c.peak_bytes = std::max(c.peak_bytes, sim::peak_memory(list).peak.value);
    c.fits = c.peak_bytes <= usable.value;
    return c;
}

}  // namespace cuboid
