// The human-readable result of `cuboid sweep`: a ranked table of the points and a summary.
#pragma once

#include <optional>
#include <ostream>

#include "strategies/cli/sweep_output.hpp"

namespace cuboid::cli {

// Ranked rows (ok first, fastest first); `top` keeps the first N ok rows and leaves out the oom,
// invalid and error rows, which the summary line still counts.
void write_sweep_table(std::ostream& out, const SweepResult& r, std::optional<int> top);

// "48 points: 20 ok, 10 oom, 18 invalid" (error counted only when there is one).
std::string sweep_summary(const SweepResult& r);

}  // namespace cuboid::cli
