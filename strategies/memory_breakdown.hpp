// What a pipeline stage's peak memory per GPU is made of: the state it holds all iteration
// (weights, gradients, optimizer state, pipeline message buffers; program_builder.hpp) and the
// activations live when the peak is reached (everything the ops allocated and had not yet freed:
// saved layer activations, recomputed ones, logits and the loss's fp32 copy). The parts sum to
// the stage's peak of the program's memory walk (sim/memory.hpp), the figure that decides fit.
#pragma once

#include <span>
#include <vector>

#include "sim/memory.hpp"
#include "sim/program.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

struct StageMemory {
    ResidentMemory resident;
    double activations_bytes = 0.0;
    double peak_bytes = 0.0;  // the stage's peak (sim::OpListTotals), which the parts sum to
};

// One entry per pipeline stage, from the program's op lists (op list s is stage s) and their
// totals (sim::op_list_totals).
std::vector<StageMemory> stage_memory_breakdown(const Scenario& scenario, const Layout& layout,
                                                const sim::Program& program,
                                                std::span<const sim::OpListTotals> totals);

// The index of the stage with the largest peak (the lowest on ties); 0 for none.
std::size_t peak_stage(std::span<const StageMemory> stages);

}  // namespace cuboid
