// Branch and bound over a search space: every candidate is checked for validity and memory and
// given a lower bound without simulation; the ones that fit are simulated in the order of their
// bound, and the search stops when the next bound is no better than the keep-th best time found
// (no unsimulated plan can then enter the top `keep`). Both phases run on `threads` workers that
// take the next candidate from a shared counter; a simulation worker takes the next plan in bound
// order only while its bound is below the keep-th best time of the plans finished so far, so the
// top `keep` are exact whatever the thread count (how many plans were simulated past them may
// vary by a few with the timing of the threads).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "strategies/cli/long_work_stop.hpp"

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
    std::size_t not_reached = 0;     // a stopped search: neither judged nor simulated
};

struct SearchResult {
    SweepResult plans;               // the simulated candidates, ranked (sweep machinery)
    std::vector<double> bound_s;     // the lower bound of each simulated plan, at its index
    std::vector<std::size_t> candidate;  // the candidate index of each simulated plan, at its index
    SearchCounts counts;
    std::string first_invalid;       // the first validation message, for when nothing is valid
    std::string first_error;         // an internal error while checking, if any
    double check_wall_s = 0.0;       // validity, memory and bounds of every candidate
    double wall_s = 0.0;             // the whole search
};

// What a progress line shows, at most every progress_interval_s and once at the end of each phase.
struct SearchProgress {
    std::size_t candidates = 0;
    std::size_t bounded = 0;     // checked for validity and memory, bound computed
    std::size_t feasible = 0;    // of those, valid and fitting (the plans the bound orders)
    std::size_t simulated = 0;   // finished simulations
    std::size_t pruned = 0;      // invalid, out of memory, or (once the simulations end) past the bound
    std::optional<double> best_s;       // the best iteration time so far
    double elapsed_s = 0.0;
    std::optional<double> left_s;       // an estimate, none before there is a rate to go by
    bool simulating = false;            // false: the bound phase
};

// "search: 640/640 bounded, 12 simulated, 580 pruned, best 2.110 s, 41 s elapsed, ~20 s left".
std::string search_progress_text(const SearchProgress& p);

struct SearchOptions {
    int threads = 1;
    bool fold = true;  // symmetry-folded simulation of the plans (RunOptions::fold)
    int keep = 1;                    // the number of top plans that must be exact
    bool exhaustive = false;         // simulate every plan that fits (no bound pruning)
    double memory_headroom = 0.0;    // a plan fits in (1 - headroom) of the GPU's memory
    // Non-null: polled by the thread that watches the workers; once it stops, no new candidate is
    // taken, the simulations in progress are abandoned, and the result is marked partial
    // (plans.stopped, plans.interrupted_by) with the plans finished so far.
    LongWorkStop* stop = nullptr;
    std::function<void(const SearchProgress&)> progress;  // empty: none
    // Non-null: after a stop, workers still in a simulation are left here rather than waited for
    // (a plan of 16k GPUs can take many seconds to reach its next cancellation point), so the
    // outputs are written at once. They read the scenario, names, hardware cache and stop given
    // to run_search: whoever holds this object declares it after those (destroying it joins them).
    AbandonedWorkers* abandoned = nullptr;
    double progress_interval_s = 0.25;
    // One MPI rank's share of the candidates (search_share.hpp): candidate i is checked and, if it
    // can enter this share's top `keep`, simulated here when i mod share_size == share_rank.
    int share_rank = 0;
    int share_size = 1;
};

SearchResult run_search(const Scenario& base, const SearchSpace& space, const NameResolvers& names,
                        HardwareCache& hardware, const SearchOptions& options);

}  // namespace cuboid::cli
