// Branch and bound over a search space: every candidate is checked for validity and memory and
// given a lower bound without simulation; the ones that fit are simulated in the order of their
// bound, and the search stops when the next bound is no better than the keep-th best time found
// (no unsimulated plan can then enter the top `keep`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "strategies/cli/search_evaluate.hpp"
#include "strategies/cli/search_space.hpp"
#include "strategies/cli/sweep_output.hpp"

namespace cuboid::cli {

struct SearchCounts {
    std::size_t candidates = 0;      // combinations of the space with consistent degrees
    std::size_t invalid = 0;         // rejected by the plan validation (or an internal error)
    std::size_t pruned_memory = 0;   // valid, but the peak memory exceeds the GPU's
    std::size_t pruned_bound = 0;    // fit, but their bound cannot beat the top plans
    std::size_t simulated = 0;
};

struct SearchResult {
    SweepResult plans;               // the simulated candidates, ranked (sweep machinery)
    std::vector<double> bound_s;     // the lower bound of each simulated plan, at its index
    SearchCounts counts;
    std::string first_invalid;       // the first validation message, for when nothing is valid
    std::string first_error;         // an internal error while checking, if any
    double check_wall_s = 0.0;       // validity, memory and bounds of every candidate
    double wall_s = 0.0;             // the whole search
};

struct SearchOptions {
    int threads = 1;
    bool fold = true;  // symmetry-folded simulation of the plans (RunOptions::fold)
    int keep = 1;                    // the number of top plans that must be exact
    bool exhaustive = false;         // simulate every plan that fits (no bound pruning)
    double memory_headroom = 0.0;    // a plan fits in (1 - headroom) of the GPU's memory
};

SearchResult run_search(const Scenario& base, const SearchSpace& space, const NameResolvers& names,
                        HardwareCache& hardware, const SearchOptions& options);

}  // namespace cuboid::cli
