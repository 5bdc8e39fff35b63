// One search candidate before any simulation: is the plan valid, does it fit in GPU memory (the
// program's own memory walk, sim/memory.hpp, the same figure a simulation reports), and what is
// the lower bound on its iteration time.
#pragma once

#include <string>

#include "strategies/cli/search_bound.hpp"
#include "strategies/cli/sweep_hardware_cache.hpp"
#include "strategies/cli/sweep_points.hpp"

namespace cuboid::cli {

// NotChecked: a candidate the search never reached (it was stopped before).
enum class CandidateStatus { Feasible, OutOfMemory, Invalid, Error, NotChecked };

struct CandidateCheck {
    CandidateStatus status = CandidateStatus::Error;
    std::string reason;               // Invalid and Error
    double peak_memory_bytes = 0.0;   // Feasible and OutOfMemory
    IterationBound bound;             // Feasible
};

// Builds the candidate's program (with the stage-aware checkpointing that memory decides),
// walks its memory and, when it fits in (1 - memory_headroom) of the GPU's memory, prices it for
// the bound. Never throws.
CandidateCheck check_candidate(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                               const NameResolvers& names, HardwareCache& hardware, double memory_headroom = 0.0);

}  // namespace cuboid::cli
