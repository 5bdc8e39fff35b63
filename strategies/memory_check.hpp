// Does a plan fit in GPU memory? Without simulating it: the plan is validated, its program built
// (with the stage-aware checkpointing that the memory budget decides) and each stage's memory
// walked (sim/memory.hpp). This is the very peak a simulation of the plan reports, so a verdict
// here is the run's verdict. `cuboid search` prunes candidates with it, and an out-of-memory
// `cuboid run` checks the changes it suggests with it.
#pragma once

#include "sim/program.hpp"
#include "sim/units.hpp"
#include "strategies/layout.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct MemoryCheck {
    sim::Program program;     // without host dispatch ops (they allocate nothing)
    double peak_bytes = 0.0;  // the largest stage peak
    bool fits = false;        // peak_bytes <= usable
};

// `layout`: validate_plan(scenario); `usable`: the memory a plan may use per GPU (usable_memory in
// run_figures.hpp).
MemoryCheck check_memory(const Scenario& scenario, const Layout& layout, Bytes usable);

}  // namespace cuboid
