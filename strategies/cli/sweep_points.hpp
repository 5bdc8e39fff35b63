// The points of a sweep: the cartesian product of the scenario's `sweep:` axes, and the scenario
// of one point (the base with the point's values applied by the rules of --set).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "strategies/cli/scenario_keys.hpp"
#include "strategies/scenario.hpp"

namespace cuboid::cli {

using SweepAxes = std::vector<std::pair<std::string, std::vector<std::string>>>;

// One point: the value of each axis, in axis order, as written in the file.
using SweepPoint = std::vector<std::string>;

// Product of the list sizes (0 without axes; the largest std::size_t when it does not fit).
std::size_t sweep_point_count(const SweepAxes& axes);

// The most points one sweep may have: they are listed before the first one runs, and a million
// plans is already days of simulation.
inline constexpr std::size_t kMaxSweepPoints = 1'000'000;

// InputError at `sweep:` when its axes have more than kMaxSweepPoints points.
void check_sweep_size(const Scenario& base);

// The points in a fixed order: the first axis outermost, the last one varying fastest (as nested
// loops written in file order), so point i is the same for every run and every thread count.
std::vector<SweepPoint> sweep_points(const SweepAxes& axes);

// The base scenario with one point's values set through the key table (the checks of the file
// and of --set; relative paths from the scenario file's folder, as in the file). The result has
// no sweep axes.
Scenario point_scenario(const Scenario& base, const SweepAxes& axes, const SweepPoint& point,
                        const NameResolvers& names);

// InputError at the --set when it names a swept key: a point's value would silently replace it.
void reject_swept_overrides(const SweepAxes& axes, const std::vector<std::string>& overridden);

}  // namespace cuboid::cli
