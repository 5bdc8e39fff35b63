// The order of a sweep's rows and its Pareto front of iteration time against peak memory.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "strategies/cli/sweep_runner.hpp"

namespace cuboid::cli {

struct ParetoCandidate {
    double time_s = 0.0;
    double memory_bytes = 0.0;
    bool eligible = false;  // only points that ran and fit compete
};

// For each candidate, whether it is on the front: eligible, and no other eligible candidate is
// at least as fast and uses at most as much memory while being strictly better in one of the
// two (Pareto dominance). Equal candidates do not dominate each other.
std::vector<bool> pareto_front(std::span<const ParetoCandidate> candidates);

// Row order of the output contract: ok rows by iteration time, then oom rows by iteration time,
// then invalid rows, then error rows; ties keep the point order.
std::vector<std::size_t> sweep_order(const std::vector<PointOutcome>& outcomes);

// pareto_front over the outcomes (ok points only).
std::vector<bool> sweep_pareto(const std::vector<PointOutcome>& outcomes);

}  // namespace cuboid::cli
